"""Record the public names of PyFlink's DataStream API into ``tests/data/pyflink_api.json``.

Run with a Python that has apache-flink installed::

    /path/to/flink-python tools/pyflink_names.py [--out tests/data/pyflink_api.json]

Two lists are recorded, and ``tests/test_pyflink_parity.py`` counts how many of them sparktide
has at the same paths (``pyflink.X`` -> ``sparktide.X``):

- names: per module, its ``__all__`` when it has one, else its public attributes defined by
  PyFlink (an attribute whose ``__module__`` is a ``pyflink`` module, not a module itself, and
  not ``get_gateway``, PyFlink's handle on its JVM); names imported from Python's standard
  library (``typing``, ``abc`` ...) are not PyFlink's and are left out;
- members: per class, every public name ``dir(cls)`` shows (methods, properties, nested classes
  and enum members, inherited ones included).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
from pathlib import Path

MODULES = (
    "pyflink.common",
    "pyflink.common.watermark_strategy",
    "pyflink.common.time",
    "pyflink.common.typeinfo",
    "pyflink.common.serialization",
    "pyflink.common.configuration",
    "pyflink.datastream",
    "pyflink.datastream.functions",
    "pyflink.datastream.state",
    "pyflink.datastream.window",
    "pyflink.datastream.timerservice",
    "pyflink.datastream.output_tag",
    "pyflink.datastream.data_stream",
    "pyflink.datastream.stream_execution_environment",
    "pyflink.datastream.connectors",
    "pyflink.datastream.connectors.file_system",
    "pyflink.datastream.formats.csv",
    "pyflink.datastream.formats.parquet",
    "pyflink.datastream.formats.json",
    "pyflink.datastream.checkpoint_config",
    "pyflink.datastream.execution_mode",
    "pyflink.datastream.slot_sharing_group",
)

# class name -> the module it is counted at (JoinedStreams and CoGroupedStreams, which the
# issue lists too, do not exist in PyFlink 2.3: they count zero members)
CLASSES = {
    "DataStream": "pyflink.datastream",
    "KeyedStream": "pyflink.datastream",
    "WindowedStream": "pyflink.datastream",
    "AllWindowedStream": "pyflink.datastream.data_stream",
    "ConnectedStreams": "pyflink.datastream",
    "StreamExecutionEnvironment": "pyflink.datastream",
    "RuntimeContext": "pyflink.datastream",
    "KeyedProcessFunction": "pyflink.datastream",
    "ProcessFunction": "pyflink.datastream",
    "TimerService": "pyflink.datastream",
    "WatermarkStrategy": "pyflink.common",
    "TimeWindow": "pyflink.datastream.window",
    "Trigger": "pyflink.datastream.window",
    "TriggerResult": "pyflink.datastream.window",
    "WindowAssigner": "pyflink.datastream.window",
    "ProcessWindowFunction": "pyflink.datastream",
    "ValueState": "pyflink.datastream.state",
    "ListState": "pyflink.datastream.state",
    "MapState": "pyflink.datastream.state",
    "StateTtlConfig": "pyflink.datastream.state",
    "ValueStateDescriptor": "pyflink.datastream.state",
}

_NOT_API = frozenset({"get_gateway"})


def module_names(module_name: str) -> list[str]:
    """The public names of ``module_name`` that PyFlink defines (see the module docstring)."""
    module = importlib.import_module(module_name)
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return sorted(set(declared))
    names = []
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or name in _NOT_API or isinstance(value, types.ModuleType):
            continue
        if (getattr(value, "__module__", None) or "").startswith("pyflink"):
            names.append(name)
    return sorted(names)


def class_members(module_name: str, class_name: str) -> list[str]:
    cls = getattr(importlib.import_module(module_name), class_name)
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def record() -> dict[str, object]:
    pyflink = importlib.import_module("pyflink.version")
    return {
        "pyflink_version": pyflink.__version__,
        "python": sys.version.split()[0],
        "modules": {m: module_names(m) for m in MODULES},
        "classes": {
            name: {"module": module, "members": class_members(module, name)}
            for name, module in CLASSES.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1] / "tests" / "data" / "pyflink_api.json"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    data = record()
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    modules = data["modules"]
    classes = data["classes"]
    assert isinstance(modules, dict) and isinstance(classes, dict)
    names = sum(len(v) for v in modules.values())
    members = sum(len(v["members"]) for v in classes.values())
    print(f"{names} names in {len(modules)} modules, {members} members of {len(classes)} classes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
