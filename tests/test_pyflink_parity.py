"""PyFlink's shipped DataStream examples, ported by changing ``pyflink`` to ``sparktide`` only.

Each port under ``examples/pyflink/`` runs on the local runtime and must print the same multiset
of lines as PyFlink 2.3 did (``tests/data/pyflink/<example>.txt``, recorded by
``tools/pyflink_oracle/record.py``; see the README there for the normalization). When a Python
with apache-flink is at hand (``$SPARKTIDE_PYFLINK_PYTHON``, or ``.venv-flink`` made by
``tools/install_pyflink.sh``), the original examples are also re-run and compared live.

Each port also runs on the Spark runtime and must print the same multiset of lines there as on
the local runtime and as PyFlink. To start one JVM rather than ten, the scripts of a runtime run
in one Python process (``tools/pyflink_oracle/run_ports.py``: each as ``__main__``, in a scratch
directory, with its stdout captured and its own ``logging.basicConfig`` in effect); that
process's own stdout, where nothing may land, is checked to be empty. PyFlink's originals run
in one PyFlink process too, their stdout captured at the file descriptor (PyFlink's print sinks
print from its JVM).

An example whose ``sparktide`` imports do not all resolve yet is skipped with the missing names.
"""

from __future__ import annotations

import ast
import collections
import functools
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tool_modules import load_tool

REPO = Path(__file__).resolve().parents[1]
PORTS = REPO / "examples" / "pyflink"


oracle = load_tool("pyflink_oracle/record.py")
_pyflink_python = functools.cache(oracle.pyflink_python)


def _api_available() -> bool:
    try:
        datastream = importlib.import_module("sparktide.datastream")
    except ImportError:
        return False
    return hasattr(datastream, "StreamExecutionEnvironment")


pytestmark = pytest.mark.skipif(
    not _api_available(),
    reason="sparktide.datastream.StreamExecutionEnvironment does not exist yet",
)


def _missing_imports(script: Path) -> list[str]:
    """The ``from sparktide... import name`` names of ``script`` that do not resolve."""
    missing = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("sparktide"):
            continue
        try:
            module = importlib.import_module(node.module)  # type: ignore[arg-type]
        except ImportError:
            missing.append(str(node.module))
            continue
        missing.extend(f"{node.module}.{a.name}" for a in node.names if not _has(module, a.name))
    return missing


def _has(module: ModuleType, name: str) -> bool:
    """Whether ``module`` provides ``name`` (a name it says it does not provide raises an
    ImportError, which ``hasattr`` does not catch)."""
    try:
        getattr(module, name)
    except (AttributeError, ImportError):
        return False
    return True


def _port(name: str) -> Path:
    script = PORTS / oracle.EXAMPLES[name]
    missing = _missing_imports(script)
    if missing:
        pytest.skip(f"{script.relative_to(REPO)} needs what sparktide does not have yet: {missing}")
    return script


def _environment(runtime: str) -> dict[str, str]:
    env = {
        **os.environ,
        "SPARKTIDE_RUNTIME": runtime,
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    env.pop("SPARKTIDE_MASTER", None)
    env.pop("SPARKTIDE_PARALLELISM", None)
    return env


def _run(
    python: str, scripts: dict[str, Path], env: dict[str, str] | None = None, capture: str = "fd"
) -> dict[str, dict[str, str | None]]:
    runs = oracle.run_in_one_process(python, list(scripts.values()), env, capture)
    return {name: runs[str(script)] for name, script in scripts.items()}


def _runnable_ports() -> dict[str, Path]:
    return {
        name: PORTS / relative
        for name, relative in oracle.EXAMPLES.items()
        if not _missing_imports(PORTS / relative)
    }


@functools.cache
def _port_runs(runtime: str) -> dict[str, dict[str, str | None]]:
    """Every port whose imports resolve, run on ``runtime`` in one process (on Spark: one JVM
    rather than ten)."""
    return _run(sys.executable, _runnable_ports(), _environment(runtime), capture="python")


@functools.cache
def _pyflink_runs(python: str) -> dict[str, dict[str, str | None]]:
    """PyFlink's own examples, run in one PyFlink process (one gateway JVM); what the JVM
    prints is captured at the file descriptor."""
    shipped = oracle.shipped_examples_dir(python)
    return _run(python, {name: shipped / relative for name, relative in oracle.EXAMPLES.items()})


def _lines(runs: dict[str, dict[str, str | None]], name: str, what: str) -> list[str]:
    run = runs[name]
    if run["error"] is not None:
        raise AssertionError(f"{name} failed {what}:\n{run['error']}")
    return oracle.normalize(run["stdout"] or "")


def _sparktide_lines(name: str) -> list[str]:
    _port(name)  # skips a port whose imports do not resolve
    return _lines(_port_runs("local"), name, "on the local runtime")


def _spark_lines(name: str) -> list[str]:
    _port(name)
    return _lines(_port_runs("spark"), name, "on the Spark runtime")


def _explain(expected: list[str], actual: list[str]) -> str:
    want, got = collections.Counter(expected), collections.Counter(actual)
    return (
        f"missing lines: {sorted((want - got).elements())}\n"
        f"unexpected lines: {sorted((got - want).elements())}"
    )


EXAMPLE_NAMES = list(oracle.EXAMPLES)


def test_every_example_has_a_port_and_a_recording() -> None:
    for name, relative in oracle.EXAMPLES.items():
        assert (PORTS / relative).is_file(), f"missing port {relative}"
        assert (oracle.DATA_DIR / f"{name}.txt").is_file(), f"missing recording of {name}"


def test_normalize() -> None:
    stdout = "2> (2, 'x')\nPYFLINK_CYTHON_ENABLED: True\n\n1> (1, 'y')\n(a,5)\n10> +I[1,a]\n"
    assert oracle.normalize(stdout) == ["(1, 'y')", "(2, 'x')", "(a,5)", "+I[1,a]"]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_port_prints_what_pyflink_printed(name: str) -> None:
    actual = _sparktide_lines(name)
    expected = oracle.recorded(name)
    assert actual == expected, _explain(expected, actual)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_port_matches_live_pyflink(name: str) -> None:
    python = _pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    actual = _sparktide_lines(name)
    expected = _lines(_pyflink_runs(python), name, "on PyFlink")
    assert actual == expected, _explain(expected, actual)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_port_on_spark_prints_what_local_and_pyflink_print(name: str) -> None:
    pytest.importorskip("pyspark")
    on_spark = _spark_lines(name)
    local = _sparktide_lines(name)
    assert on_spark == local, "Spark vs local runtime:\n" + _explain(local, on_spark)
    recorded = oracle.recorded(name)
    assert on_spark == recorded, "Spark vs PyFlink:\n" + _explain(recorded, on_spark)


def test_the_ports_are_pyflinks_examples_without_table_api_connectors_or_async_io() -> None:
    python = _pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    shipped_dir = oracle.shipped_examples_dir(python)
    shipped = sorted(
        p.relative_to(shipped_dir).as_posix()
        for p in shipped_dir.rglob("*.py")
        if p.name != "__init__.py"
    )
    assert len(shipped) == 19, shipped
    # connectors/ talk to Kafka, Pulsar or Elasticsearch, asyncio/ does async I/O
    self_contained = [
        relative
        for relative in shipped
        if relative.split("/")[0] not in ("connectors", "asyncio")
        and "pyflink.table" not in (shipped_dir / relative).read_text(encoding="utf-8")
    ]
    assert sorted(self_contained) == sorted(oracle.EXAMPLES.values())


# ---------------------------------------------------------------------- the count of names

PYFLINK_API = REPO / "tests" / "data" / "pyflink_api.json"
"""PyFlink 2.3's public DataStream API names and class members, recorded by
``tools/pyflink_names.py`` (see its docstring for what counts as a name)."""

NAMES_REQUIRED = 200
MEMBERS_REQUIRED = 235


def _sparktide_path(pyflink_module: str) -> str:
    return "sparktide" + pyflink_module[len("pyflink") :]


def _missing_names(api: dict[str, list[str]]) -> list[str]:
    missing = []
    for pyflink_module, names in api.items():
        path = _sparktide_path(pyflink_module)
        try:
            module = importlib.import_module(path)
        except ImportError:
            missing.extend(f"{path}.{name}" for name in names)
            continue
        missing.extend(f"{path}.{name}" for name in names if not _has(module, name))
    return missing


def _missing_members(classes: dict[str, dict[str, object]]) -> list[str]:
    missing = []
    for name, info in classes.items():
        module = importlib.import_module(_sparktide_path(str(info["module"])))
        members = info["members"]
        assert isinstance(members, list)
        cls = getattr(module, name, None)
        missing.extend(f"{name}.{m}" for m in members if cls is None or not hasattr(cls, m))
    return missing


def test_the_recorded_api_is_pyflinks_count() -> None:
    recorded = json.loads(PYFLINK_API.read_text(encoding="utf-8"))
    assert recorded["pyflink_version"].startswith("2.3")
    assert sum(map(len, recorded["modules"].values())) == 221
    assert sum(len(c["members"]) for c in recorded["classes"].values()) == 241


def test_the_count_sees_what_is_missing() -> None:
    assert _missing_names({"pyflink.datastream": ["DataStream", "NoSuchName"]}) == [
        "sparktide.datastream.NoSuchName"
    ]
    assert _missing_names({"pyflink.no_such_module": ["X"]}) == ["sparktide.no_such_module.X"]
    classes = {"TimeWindow": {"module": "pyflink.datastream.window", "members": ["start", "nope"]}}
    assert _missing_members(classes) == ["TimeWindow.nope"]


def test_pyflinks_public_names_import_from_the_same_paths() -> None:
    recorded = json.loads(PYFLINK_API.read_text(encoding="utf-8"))
    total = sum(map(len, recorded["modules"].values()))
    missing = _missing_names(recorded["modules"])
    print(f"{total - len(missing)} of {total} names; missing: {missing}")
    assert total - len(missing) >= NAMES_REQUIRED, missing


def test_pyflinks_class_members_exist_on_the_same_classes() -> None:
    recorded = json.loads(PYFLINK_API.read_text(encoding="utf-8"))
    total = sum(len(c["members"]) for c in recorded["classes"].values())
    missing = _missing_members(recorded["classes"])
    print(f"{total - len(missing)} of {total} members; missing: {missing}")
    assert total - len(missing) >= MEMBERS_REQUIRED, missing
