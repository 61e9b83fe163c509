"""The package's layers, bottom to top: contracts (``sparktide.common``, then ``sparktide.core``),
the runtime (``sparktide.runtime``), the runners (``sparktide.local``, ``sparktide.spark``), and
the builders (``sparktide.datastream``, ``sparktide.table``) with the CLI, demo and recipes on top.

A module may import from its own layer and the layers below it, never from a layer above. The
static checks read every import statement (absolute or relative, at module level, inside
functions or under ``if TYPE_CHECKING:``); the dynamic check imports the runtime and the runners
in a fresh interpreter and looks at what was loaded.
"""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "sparktide"

CONTRACTS = ("sparktide.common", "sparktide.core")

# The one import of common that points up: PyFlink keeps the bulk writer factories at
# pyflink.common.serialization, so serialization's module __getattr__ hands them out lazily from
# the file connectors (nothing is loaded until a program asks for one of those two names).
COMMON_EXCEPTIONS = {("sparktide.common.serialization", "sparktide.datastream.connectors")}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_under(*layers: str) -> list[Path]:
    return sorted(p for layer in layers for p in (PACKAGE / layer).rglob("*.py"))


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement of the file."""
    source = path.read_text(encoding="utf-8")
    return imports_in(source, module_name(path), path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement of ``source``, relative ones resolved
    against ``module``; ``from a import b`` also counts as importing ``a.b`` (it may be a
    module)."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def packages_except(*names: str) -> tuple[str, ...]:
    """Every top-level module and package of sparktide but ``names``."""
    found = tuple(
        f"sparktide.{p.stem}"
        for p in sorted(PACKAGE.iterdir())
        if ((p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py")
        and p.stem not in (*names, "__init__")
    )
    assert "sparktide.runtime" in found and "sparktide.datastream" in found
    return found


def violations(layers: tuple[str, ...], forbidden: tuple[str, ...], allowed=frozenset()):
    """One line per import statement of ``layers`` that reaches into ``forbidden``."""
    found: dict[tuple[str, int], str] = {}
    for path in modules_under(*layers):
        module = module_name(path)
        for line, target in imports_of(path):
            if within(target, forbidden) and not any(
                module == m and within(target, (t,)) for m, t in allowed
            ):
                found.setdefault((module, line), target)
    return [f"{module} (line {line}) imports {target}" for (module, line), target in found.items()]


@pytest.mark.parametrize(
    "source",
    [
        "from sparktide.datastream.state import ValueStateDescriptor",
        "import sparktide.datastream",
        "from sparktide import datastream",
        "from ...datastream import functions",
        "from ... import datastream",
        "def f():\n    from ...datastream.window import TimeWindow",
        "if TYPE_CHECKING:\n    from sparktide.datastream import DataStream",
    ],
)
def test_the_scan_sees_every_kind_of_import(source):
    found = [target for _, target in imports_in(source, "sparktide.runtime.operators.probe", False)]
    assert any(within(target, ("sparktide.datastream",)) for target in found), found


def test_the_scan_leaves_lower_imports_alone():
    source = "from sparktide.core.state import State\nfrom .base import x\nimport sparktide"
    found = [target for _, target in imports_in(source, "sparktide.runtime.operators.probe", False)]
    assert found == [
        "sparktide.core.state",
        "sparktide.core.state.State",
        "sparktide.runtime.operators.base",
        "sparktide.runtime.operators.base.x",
        "sparktide",
    ]
    assert not any(within(target, ("sparktide.datastream",)) for target in found)


def test_runtime_and_runners_import_no_datastream_module():
    found = violations(("runtime", "local", "spark"), ("sparktide.datastream",))
    assert not found, "the runtime and the runners must not import the DataStream API:\n" + (
        "\n".join(found)
    )


def test_core_imports_only_common():
    above = packages_except("common", "core")
    found = violations(("core",), above)
    assert not found, "sparktide.core may import only sparktide.common:\n" + "\n".join(found)


def test_common_imports_nothing_above_it():
    above = packages_except("common")
    found = violations(("common",), above, COMMON_EXCEPTIONS)
    assert not found, "sparktide.common must not import the layers above it:\n" + "\n".join(found)


_LOAD_EACH = """
import importlib, json, sys
report = {}
for name in %(names)r:
    before = {m for m in sys.modules if m.startswith(%(watched)r)}
    importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m.startswith(%(watched)r) and m not in before)
    if loaded:
        report[name] = loaded
print(json.dumps(report))
"""


def load_in_fresh_interpreter(layers: tuple[str, ...], watched: str) -> dict[str, list[str]]:
    """Import every module of ``layers`` in turn in a new interpreter: which modules whose name
    starts with ``watched`` each import loaded first."""
    names = [module_name(path) for path in modules_under(*layers)]
    code = _LOAD_EACH % {"names": names, "watched": watched}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_runtime_and_runners_loads_no_datastream_module():
    report = load_in_fresh_interpreter(("runtime", "local", "spark"), "sparktide.datastream")
    assert not report, "importing these modules loaded DataStream modules:\n" + "\n".join(
        f"{module} loaded {', '.join(loaded)}" for module, loaded in report.items()
    )


def test_importing_the_contracts_loads_nothing_above_them():
    report = load_in_fresh_interpreter(("common", "core"), "sparktide.")
    report = {
        module: above
        for module, loaded in report.items()
        if (above := [m for m in loaded if not within(m, CONTRACTS)])
    }
    assert not report, "importing the contracts loaded modules above them:\n" + "\n".join(
        f"{module} loaded {', '.join(loaded)}" for module, loaded in report.items()
    )


# ------------------------------------------------------------------ PyFlink's paths stay


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("sparktide.datastream.state", "sparktide.core.state", ["ValueStateDescriptor"]),
        ("sparktide.datastream.functions", "sparktide.core.functions", ["KeyedProcessFunction"]),
        ("sparktide.datastream.output_tag", "sparktide.core.output_tag", ["OutputTag"]),
        ("sparktide.datastream.timerservice", "sparktide.core.timerservice", ["TimeDomain"]),
        ("sparktide.datastream.window", "sparktide.core.window.assigners", ["WindowAssigner"]),
        ("sparktide.datastream.window", "sparktide.core.window.triggers", ["TriggerResult"]),
        ("sparktide.datastream.window", "sparktide.core.window.evictors", ["TimestampedValue"]),
        ("sparktide.datastream.window", "sparktide.core.window.windows", ["TimeWindow"]),
        ("sparktide.datastream.source", "sparktide.core.source", ["Source", "SourceSplit"]),
        ("sparktide.datastream.source", "sparktide.runtime.source_reader", ["SplitReader"]),
        ("sparktide.datastream", "sparktide.core.functions", ["ProcessFunction"]),
        ("sparktide.runtime.elements", "sparktide.common.watermark", ["Watermark"]),
        ("sparktide.runtime.elements", "sparktide.common.timestamps", ["MAX_TIMESTAMP"]),
    ],
)
def test_old_paths_give_the_same_objects(old, new, names):
    import importlib

    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(old_module, name) is getattr(new_module, name), (old, name)


def pickled_at(cls: type, module: str, value: object) -> bytes:
    """``value`` pickled as it was when ``cls`` was defined in ``module``."""
    current = cls.__module__
    cls.__module__ = module
    try:
        return pickle.dumps(value)
    finally:
        cls.__module__ = current


def test_pickles_naming_the_old_paths_still_load():
    from sparktide.common.time import Time
    from sparktide.common.watermark import Watermark
    from sparktide.core.state import StateTtlConfig, ValueStateDescriptor
    from sparktide.core.window.assigners import TumblingEventTimeWindows
    from sparktide.core.window.windows import TimeWindow

    descriptor = ValueStateDescriptor("count", None)
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(10)).build())
    data = pickled_at(ValueStateDescriptor, "sparktide.datastream.state", descriptor)
    assert b"sparktide.datastream.state" in data
    restored = pickle.loads(data)
    assert type(restored) is ValueStateDescriptor
    assert restored.name == "count"
    assert restored.ttl_config.get_ttl().to_milliseconds() == 10_000

    old_window = "sparktide.datastream.window.assigners"
    data = pickled_at(TumblingEventTimeWindows, old_window, TumblingEventTimeWindows.of(10))
    assert pickle.loads(data).assign_windows("x", 23, None) == (TimeWindow(20, 30),)

    data = pickled_at(TimeWindow, "sparktide.datastream.window.windows", TimeWindow(0, 10))
    assert pickle.loads(data) == TimeWindow(0, 10)

    data = pickled_at(Watermark, "sparktide.runtime.elements", Watermark(7))
    assert b"sparktide.runtime.elements" in data
    assert pickle.loads(data) == Watermark(7)
