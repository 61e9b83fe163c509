"""The PyFlink names sparktide does not provide, and what to use instead.

A PyFlink job moves to sparktide by changing ``pyflink`` to ``sparktide`` in its imports. A
name PyFlink has that sparktide does not (the Table API, the Java-only wrappers, a few
connector extras) raises :class:`NotProvidedError` when it is imported or read from its module,
with the message saying so and what to use instead: each such module's ``__getattr__`` is
:func:`module_getattr` of its path. :data:`GAPS` is the one list; the page
``docs/pyflink_compat.md`` shows it as :func:`gaps_markdown` renders it (a test checks they are
equal).

>>> from sparktide.table import StreamTableEnvironment  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.common.not_provided.NotProvidedError: sparktide.table.StreamTableEnvironment is not \
provided: PyFlink's Table API ... Instead: run the SQL in Spark ...
>>> NotProvidedError.__mro__[1] is ImportError
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["GAPS", "Gap", "NotProvidedError", "gaps_markdown", "module_getattr", "not_provided"]


class NotProvidedError(ImportError):
    """A PyFlink name sparktide does not provide (``from ... import`` fails with this)."""


@dataclass(frozen=True)
class Gap:
    """PyFlink names of one kind at one module path (``pyflink`` → ``sparktide``) that sparktide
    does not provide: ``what`` they are in PyFlink and what to use ``instead``."""

    module: str
    names: tuple[str, ...]
    what: str
    instead: str

    def message(self, name: str) -> str:
        return (
            f"{self.module}.{name} is not provided: {self.what}, which sparktide does not "
            f"have. Instead: {self.instead}"
        )


_TABLE = "sparktide.table"
_SQL_INSTEAD = (
    "run the SQL in Spark and move rows between it and the DataStream API: "
    "env.from_dataframe(spark.sql(...), ...) in, DataStream.to_dataframe() out (then "
    "df.createOrReplaceTempView(name) for spark.sql); sparktide.table has DataTypes (for "
    "the file formats), Row and RowKind"
)
_UDF_INSTEAD = (
    "a Spark SQL function (pyspark.sql.functions.udf / pandas_udf) over "
    "DataStream.to_dataframe(), or a DataStream function (MapFunction, FlatMapFunction, "
    "AggregateFunction of sparktide.datastream.functions)"
)
_JAVA = "a wrapper of a Java class of Flink's"

GAPS: tuple[Gap, ...] = (
    Gap(
        _TABLE,
        (
            "ChangelogMode",
            "CompiledPlan",
            "EnvironmentSettings",
            "ExplainDetail",
            "Expression",
            "FormatDescriptor",
            "GroupWindowedTable",
            "GroupedTable",
            "Module",
            "ModuleEntry",
            "OverWindowedTable",
            "PlanReference",
            "ResultKind",
            "Schema",
            "SqlDialect",
            "StatementSet",
            "StreamTableEnvironment",
            "Table",
            "TableConfig",
            "TableDescriptor",
            "TableEnvironment",
            "TablePipeline",
            "TableResult",
            "TableSchema",
            "UserDefinedType",
            "WindowGroupedTable",
        ),
        "PyFlink's Table API (pyflink.table)",
        _SQL_INSTEAD,
    ),
    Gap(
        _TABLE,
        (
            "AggregateFunction",
            "AsyncScalarFunction",
            "DataView",
            "FunctionContext",
            "ListView",
            "MapView",
            "ScalarFunction",
            "TableAggregateFunction",
            "TableFunction",
        ),
        "a user-defined function of PyFlink's Table API (pyflink.table)",
        _UDF_INSTEAD,
    ),
    Gap(
        "sparktide.common",
        ("AssignerWithPeriodicWatermarksWrapper",),
        "a wrapper of Flink's Java AssignerWithPeriodicWatermarks",
        "a WatermarkStrategy (for_bounded_out_of_orderness, for_generator, ...) with "
        "with_timestamp_assigner",
    ),
    Gap(
        "sparktide.common.watermark_strategy",
        ("AssignerWithPeriodicWatermarksWrapper",),
        "a wrapper of Flink's Java AssignerWithPeriodicWatermarks",
        "a WatermarkStrategy (for_bounded_out_of_orderness, for_generator, ...) with "
        "with_timestamp_assigner",
    ),
    Gap(
        "sparktide.datastream.connectors.base",
        ("JavaFunctionWrapper", "StreamTransformer", "SupportsPreprocessing"),
        _JAVA,
        "sparktide's sources and sinks are Python: subclass Source / Sink of "
        "sparktide.datastream.connectors, or read and write Spark DataFrames "
        "(env.from_dataframe, DataStream.to_dataframe)",
    ),
    Gap(
        "sparktide.datastream.connectors.file_system",
        ("FileCompactStrategy", "FileCompactor"),
        "the compaction of FileSink's small files",
        "roll larger part files (RollingPolicy.default_rolling_policy(part_size=...)), or "
        "compact the written folder with Spark (spark.read.parquet(path).coalesce(n).write)",
    ),
    Gap(
        "sparktide.datastream.connectors.file_system",
        ("FileEnumeratorProvider", "FileSplitAssignerProvider"),
        _JAVA,
        "FileSource's own file enumeration and split assignment, or "
        "env.from_dataframe(spark.read...) for Spark's file listing",
    ),
    Gap(
        "sparktide.datastream.connectors.file_system",
        ("StreamingFileSink",),
        "Flink's deprecated file sink",
        "FileSink (FileSink.for_row_format / for_bulk_format)",
    ),
    Gap(
        "sparktide.datastream.formats.parquet",
        ("AvroParquetReaders", "AvroParquetWriters"),
        "Parquet files of Avro records",
        "ParquetColumnarRowInputFormat and ParquetBulkWriters.for_row_type with a row type",
    ),
    Gap(
        "sparktide.datastream.window",
        ("CountWindowSerializer", "GlobalWindowSerializer", "TimeWindowSerializer"),
        "a serializer of Flink's window classes",
        "nothing: sparktide writes windows to checkpoints itself (declare state types with Types)",
    ),
)
"""Every PyFlink name sparktide does not provide, by module and kind."""


def not_provided(module: str, name: str) -> Gap | None:
    """The gap ``module.name`` belongs to (``None``: not a known gap).

    >>> not_provided("sparktide.table", "TableEnvironment").instead.startswith("run the SQL")
    True
    """
    for gap in GAPS:
        if gap.module == module and name in gap.names:
            return gap
    return None


def module_getattr(module: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``module``: :class:`NotProvidedError` for its gaps, the
    usual ``AttributeError`` for any other missing name."""
    gaps = {name: gap for gap in GAPS if gap.module == module for name in gap.names}

    def __getattr__(name: str) -> object:
        gap = gaps.get(name)
        if gap is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise NotProvidedError(gap.message(name), name=name, path=None)

    return __getattr__


def gaps_markdown() -> str:
    """:data:`GAPS` as the Markdown table of ``docs/pyflink_compat.md``."""
    lines = ["| module | names | what they are in PyFlink | use instead |", "|---|---|---|---|"]
    for gap in GAPS:
        names = ", ".join(f"`{n}`" for n in gap.names)
        lines.append(f"| `{gap.module}` | {names} | {gap.what} | {gap.instead} |")
    return "\n".join(lines)
