"""A Spark DataFrame as a split-aware source: one split per partition.

The splits are the partitions of the *prepared* DataFrame: the DataFrame itself, or, with
``split_by``, the DataFrame hash-partitioned by those columns into ``num_splits`` partitions; with
``order_by`` each partition is sorted by those columns. Every split runs its own timestamp
assigner and watermark generator, as any source split does.

* On Spark the source stage runs ``mapInArrow`` over the prepared DataFrame: each partition is read
  where it lives, and nothing is collected to the driver.
* On the local runtime the prepared DataFrame is read once through Arrow and cut into the same
  splits, with the rows of each split in the same order, so both runtimes see the same input.

The DataFrame itself stays on the driver: pickling the source (to ship a job to Spark's workers)
keeps only what the workers need to turn Arrow batches into records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from sparktide.common.arrow_rows import RecordChunks, batch_rows
from sparktide.core.source import Source, SourceSplit
from sparktide.spark.frames import _column_advice, type_info_of_schema
from sparktide.spark.session import is_connect

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

__all__ = ["DataFrameSource", "check_timestamp_column"]

_SPLIT = "__sparktide_split"


def num_partitions(df: DataFrame) -> int:
    """The partition count of ``df``: its RDD's on a classic session; on Spark Connect (no RDD
    API) one row per partition from a ``mapInArrow`` over no rows, partition by partition."""
    if not is_connect(df.sparkSession):
        return int(df.rdd.getNumPartitions())
    from pyspark.sql import functions as F

    nothing = df.filter(F.spark_partition_id() < 0)  # not folded away: keeps the partitioning
    return int(nothing.mapInArrow(_one_row, "partition int").count())


def _one_row(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row for the partition (see :func:`num_partitions`)."""
    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"partition": pa.array([0], pa.int32())})


def _names(value: str | Sequence[str] | None, parameter: str, columns: list[str]) -> list[str]:
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"{parameter} must be a column name or a list of column names, got "
                f"{type(name).__name__} ({name!r})"
            )
        if name not in columns:
            raise ValueError(
                f"{parameter}: the DataFrame has no column {name!r}; its columns are {columns}"
            )
    return names


#: the Spark column types an event-time column may have (epoch milliseconds, instants; a
#: column of nulls only is refused row by row, as a null in any of them is)
_TIME_TYPES = frozenset(
    {
        "ByteType",
        "ShortType",
        "IntegerType",
        "LongType",
        "TimestampType",
        "TimestampNTZType",
        "NullType",
    }
)


def _sample(data_type: DataType) -> object:
    """A value of a column of ``data_type``, for the advice on how to convert it."""
    import datetime as dt
    import decimal

    name = type(data_type).__name__
    samples = {
        "StringType": "",
        "VarcharType": "",
        "CharType": "",
        "DateType": dt.date(1970, 1, 1),
        "FloatType": 0.0,
        "DoubleType": 0.0,
        "DecimalType": decimal.Decimal(0),
    }
    return samples.get(name)


def check_timestamp_column(schema: StructType, column: str, method: str) -> None:
    """Raise ``TypeError`` when ``column`` of ``schema`` cannot be an event-time column (an
    integer of epoch milliseconds or a timestamp), with the advice a record of it would get
    (:class:`~sparktide.spark.frames.ColumnTimestampAssigner`): at plan time, before any
    Spark job. ``method``: what the user called (``from_dataframe``, ``from_stream``).

    >>> from pyspark.sql.types import StringType, StructField, StructType
    >>> schema = StructType([StructField("ts", StringType())])
    >>> check_timestamp_column(schema, "ts", "from_dataframe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: from_dataframe: the timestamp column 'ts' must hold ... it is a string column; ...
    """
    data_type = schema[column].dataType
    if type(data_type).__name__ in _TIME_TYPES:
        return
    raise TypeError(
        f"{method}: the timestamp column {column!r} must hold integers (epoch milliseconds) or "
        f"timestamps, but it is a {data_type.simpleString()} column; "
        f"{_column_advice(_sample(data_type), column)}"
    )


class DataFrameSource(Source):
    """The rows of a Spark DataFrame as :class:`~sparktide.common.types.Row` records.

    ``split_by``: column(s) to hash-partition by (into ``num_splits`` splits, default the
    DataFrame's partition count); ``order_by``: column(s) that order the rows of each split.
    """

    def __init__(
        self,
        df: DataFrame,
        split_by: str | Sequence[str] | None = None,
        order_by: str | Sequence[str] | None = None,
        num_splits: int | None = None,
    ) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame):
            raise TypeError(
                f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}; build one with "
                "spark.createDataFrame(...) or spark.read..."
            )
        self.columns: list[str] = list(df.columns)
        if _SPLIT in self.columns:
            raise ValueError(f"df: the column name {_SPLIT!r} is reserved; rename that column")
        self.split_by = _names(split_by, "split_by", self.columns)
        self.order_by = _names(order_by, "order_by", self.columns)
        if num_splits is not None:
            if type(num_splits) is not int or num_splits < 1:
                raise ValueError(f"num_splits must be an int >= 1, got {num_splits!r}")
            if not self.split_by:
                raise ValueError(
                    "num_splits needs split_by: the splits are the DataFrame's own partitions "
                    "unless split_by names the columns to partition by; pass split_by=... or "
                    "repartition the DataFrame yourself"
                )
        self.type_info = type_info_of_schema(df.schema)
        self._df = df
        self._prepared: DataFrame | None = None
        self._num_splits = num_splits
        self._by_split: dict[int, pa.Table] | None = None
        self._split_count: int | None = None

    # ------------------------------------------------------------------ the prepared frame

    def prepared(self) -> DataFrame:
        """The DataFrame whose partitions are the splits (driver side only)."""
        if self._prepared is None:
            df = self._df
            if df is None:
                raise RuntimeError("the DataFrame of a DataFrameSource stays on the driver")
            if self.split_by:
                n = self._num_splits or num_partitions(df)
                df = df.repartition(n, *self.split_by)
            if self.order_by:
                df = df.sortWithinPartitions(*self.order_by)
            self._prepared = df
        return self._prepared

    def get_splits(self) -> list[SourceSplit]:
        if self._split_count is None:  # counted once (a Spark job on Spark Connect)
            self._split_count = num_partitions(self.prepared())
        return [SourceSplit(str(i), i) for i in range(self._split_count)]

    # ------------------------------------------------------------------ reading

    def records(self, batches: Iterable[pa.RecordBatch]) -> Iterable[object]:
        """The records of one split from its Arrow batches, in order: a list per batch
        (:class:`~sparktide.common.arrow_rows.RecordChunks`)."""
        columns = self.columns
        return RecordChunks(batch_rows(batch, columns) for batch in batches)

    def read_split(self, split: SourceSplit) -> Iterable[object]:
        """The rows of ``split`` (local runtime: the prepared frame is read once via Arrow)."""
        if self._by_split is None:
            import pyarrow.compute as pc
            from pyspark.sql import functions as F

            table = (
                self.prepared()
                .select(
                    F.spark_partition_id().alias(_SPLIT),
                    *[F.col(f"`{c}`") for c in self.columns],
                )
                .toArrow()
            )
            split_ids = table.column(_SPLIT)
            self._by_split = {
                i: table.filter(pc.equal(split_ids, i)).drop_columns([_SPLIT])
                for i in range(len(self.get_splits()))
            }
        return self.records(self._by_split[split.payload].to_batches())

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_df"] = state["_prepared"] = state["_by_split"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"DataFrameSource(columns={self.columns}, split_by={self.split_by}, "
            f"order_by={self.order_by})"
        )
