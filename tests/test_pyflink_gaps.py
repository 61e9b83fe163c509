"""Every PyFlink name sparktide does not provide fails plainly: importing it raises
NotProvidedError (an ImportError) saying so and what to use instead; the list is
``sparktide.common.not_provided.GAPS`` and docs/pyflink_compat.md shows exactly it."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from sparktide.common.not_provided import GAPS, NotProvidedError, gaps_markdown

REPO = Path(__file__).resolve().parents[1]
PYFLINK_API = REPO / "tests" / "data" / "pyflink_api.json"
PYFLINK_PYTHON = Path(
    os.environ.get("SPARKTIDE_PYFLINK_PYTHON") or REPO / ".venv-flink" / "bin" / "python"
)  # as tests/test_pyflink_parity.py finds PyFlink

PYFLINK_TABLE_NAMES = (
    "AggregateFunction", "AsyncScalarFunction", "ChangelogMode", "CompiledPlan", "DataTypes",
    "DataView", "EnvironmentSettings", "ExplainDetail", "Expression", "FormatDescriptor",
    "FunctionContext", "GroupWindowedTable", "GroupedTable", "ListView", "MapView", "Module",
    "ModuleEntry", "OverWindowedTable", "PlanReference", "ResultKind", "Row", "RowKind",
    "ScalarFunction", "Schema", "SqlDialect", "StatementSet", "StreamTableEnvironment", "Table",
    "TableAggregateFunction", "TableConfig", "TableDescriptor", "TableEnvironment",
    "TableFunction", "TablePipeline", "TableResult", "TableSchema", "UserDefinedType",
    "WindowGroupedTable",
)  # fmt: skip
"""``pyflink.table.__all__`` of PyFlink 2.3 (checked live below when PyFlink is at hand)."""


def _provides(module_path: str, name: str) -> bool:
    try:
        getattr(importlib.import_module(module_path), name)
    except (AttributeError, ImportError):
        return False
    return True


def _gap_names() -> set[tuple[str, str]]:
    return {(gap.module, name) for gap in GAPS for name in gap.names}


def test_the_table_api_says_it_is_not_provided_and_what_to_use() -> None:
    with pytest.raises(ImportError) as caught:
        from sparktide.table import StreamTableEnvironment  # noqa: F401
    assert isinstance(caught.value, NotProvidedError)
    message = str(caught.value)
    assert message.startswith("sparktide.table.StreamTableEnvironment is not provided: ")
    assert "env.from_dataframe(spark.sql(...)" in message
    assert "DataStream.to_dataframe()" in message
    from sparktide.table import DataTypes, Row, RowKind  # what sparktide.table has

    assert DataTypes.INT() is not None and Row(a=1).a == 1 and RowKind.INSERT is not None


@pytest.mark.parametrize("module_path,name", sorted(_gap_names()))
def test_every_gap_raises_its_message(module_path: str, name: str) -> None:
    module = importlib.import_module(module_path)
    with pytest.raises(NotProvidedError, match=rf"^{re.escape(module_path)}\.{name} is not") as e:
        exec(f"from {module_path} import {name}", {})
    assert "Instead: " in str(e.value) and e.value.name == name
    assert name not in getattr(module, "__all__", ())
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        module.NoSuchName  # noqa: B018  (any other missing name: the usual error)


def test_the_pyflink_names_sparktide_lacks_are_exactly_the_gaps() -> None:
    """Each recorded PyFlink name (its DataStream modules, ``pyflink.table``) is provided at
    the same path or is a gap, and every gap is a PyFlink name sparktide does not provide."""
    recorded = json.loads(PYFLINK_API.read_text(encoding="utf-8"))["modules"]
    recorded = {**recorded, "pyflink.table": list(PYFLINK_TABLE_NAMES)}
    lacking = {
        ("sparktide" + module[len("pyflink") :], name)
        for module, names in recorded.items()
        for name in names
        if not _provides("sparktide" + module[len("pyflink") :], name)
    }
    gaps = _gap_names()
    paths = {"sparktide" + module[len("pyflink") :] for module in recorded}
    unrecorded = {(m, n) for m, n in gaps if m not in paths}  # e.g. connectors.base
    assert lacking == gaps - unrecorded
    assert not any(_provides(m, n) for m, n in unrecorded)


def test_the_docs_list_the_gaps() -> None:
    page = (REPO / "docs" / "pyflink_compat.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- not-provided:start -->\n(.*?)\n<!-- not-provided:end -->", page, re.S)
    assert found is not None, "docs/pyflink_compat.md lost its not-provided markers"
    assert found.group(1) == gaps_markdown()


@pytest.mark.skipif(not PYFLINK_PYTHON.exists(), reason="no PyFlink at .venv-flink")
def test_the_recorded_table_names_are_pyflinks() -> None:
    out = subprocess.run(
        [str(PYFLINK_PYTHON), "-c", "import pyflink.table as t; print(' '.join(t.__all__))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert sorted(out.stdout.split()) == list(PYFLINK_TABLE_NAMES)
