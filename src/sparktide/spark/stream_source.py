"""The streaming source: a Spark Structured Streaming DataFrame read as named ``Row`` records.

``env.from_stream(streaming_df, ...)`` makes a :class:`StreamSource`; the driver of a streaming
run (:mod:`sparktide.spark.streaming`) splits each micro-batch with :meth:`StreamSource.prepare`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sparktide.common.arrow_rows import RecordChunks, batch_rows
from sparktide.core.source import Source, SourceSplit
from sparktide.runtime.graph import SourceNode
from sparktide.spark.frames import type_info_of_schema
from sparktide.spark.placement import spark_hash_long

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from sparktide.runtime.graph import Node

__all__ = ["StreamSource", "has_stream_source", "split_keys"]


_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")


def split_keys(num_splits: int) -> list[int]:
    """For each split ``s``, a ``bigint`` that Spark's hash partitioning into ``num_splits``
    partitions sends to partition ``s``; repartitioning by ``keys[v % num_splits]`` puts value
    ``v`` into split ``v % num_splits`` (hash partitioning by ``v`` itself would put Kafka
    partitions 0 and 1 into one split of 2).

    >>> keys = split_keys(4)
    >>> [spark_hash_long(k) % 4 for k in keys]
    [0, 1, 2, 3]
    """
    keys: list[int | None] = [None] * num_splits
    missing, candidate = num_splits, 0
    while missing:
        target = spark_hash_long(candidate) % num_splits
        if keys[target] is None:
            keys[target] = candidate
            missing -= 1
        candidate += 1
    return [k for k in keys if k is not None]


def _names(value: str | Sequence[str] | None, parameter: str, columns: list[str]) -> list[str]:
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    for name in names:
        if not isinstance(name, str) or name not in columns:
            raise ValueError(
                f"{parameter}: the streaming DataFrame has no column {name!r}; its columns are "
                f"{columns}"
            )
    return names


class StreamSource(Source):
    """The rows of a Structured Streaming DataFrame, as named ``Row`` records.

    The splits are fixed for the life of the checkpoint: with ``split_by`` the rows of each
    micro-batch are partitioned by those columns into ``num_splits`` splits (required, since
    a split's watermark generator must see the same rows in every batch); without it the whole
    batch is one split. One integral ``split_by`` column (Kafka's ``partition``) puts value
    ``v`` into split ``v % num_splits``, so with ``num_splits`` equal to the number of Kafka
    partitions each partition is its own split, as in Flink's Kafka source; other columns are
    hash-partitioned. ``order_by`` sorts each split's rows within a batch (Kafka: ``offset``).
    """

    def __init__(
        self,
        df: DataFrame,
        split_by: str | Sequence[str] | None = None,
        order_by: str | Sequence[str] | None = None,
        num_splits: int | None = None,
    ) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame) or not df.isStreaming:
            raise TypeError(
                "streaming_df must be a streaming pyspark.sql.DataFrame (from spark.readStream"
                f"...); got {type(df).__name__}. For a bounded DataFrame use from_dataframe()"
            )
        self.columns: list[str] = list(df.columns)
        self.split_by = _names(split_by, "split_by", self.columns)
        self.order_by = _names(order_by, "order_by", self.columns)
        if num_splits is not None and (type(num_splits) is not int or num_splits < 1):
            raise ValueError(f"num_splits must be an int >= 1, got {num_splits!r}")
        if self.split_by and num_splits is None:
            raise ValueError(
                "num_splits is required with split_by: the number of splits must stay the same "
                "for the life of the checkpoint; pass e.g. num_splits=4"
            )
        if not self.split_by and num_splits not in (None, 1):
            raise ValueError(
                "num_splits needs split_by: without it every micro-batch is one split; pass "
                "split_by=... (e.g. a Kafka 'partition' column) or leave num_splits unset"
            )
        self.num_splits = num_splits or 1
        # one integral split column (Kafka's ``partition``): value v goes to split v % n
        self.direct = len(self.split_by) == 1 and (
            type(df.schema[self.split_by[0]].dataType).__name__ in _INTEGRAL
        )
        self.type_info = type_info_of_schema(df.schema)
        self.df = df

    def get_splits(self) -> list[SourceSplit]:
        return [SourceSplit(str(i), i) for i in range(self.num_splits)]

    def read_split(self, split: SourceSplit) -> Iterable[object]:
        raise RuntimeError(
            "a streaming source runs on Spark only: use runtime='spark' (the default) and "
            "execute() or execute_async()"
        )

    def prepare(self, batch_df: DataFrame) -> DataFrame:
        """A micro-batch's DataFrame with one partition per split, sorted by ``order_by``."""
        if self.direct:
            from pyspark.sql import functions as F

            # bigint literals: Spark hashes an int and a bigint differently
            keys = F.array(*[F.lit(k).cast("bigint") for k in split_keys(self.num_splits)])
            split = (F.pmod(F.col(self.split_by[0]), F.lit(self.num_splits)) + 1).cast("int")
            df = batch_df.repartition(self.num_splits, F.element_at(keys, split))
        elif self.split_by:
            df = batch_df.repartition(self.num_splits, *self.split_by)
        else:
            df = batch_df.coalesce(1)
        return df.sortWithinPartitions(*self.order_by) if self.order_by else df

    def records(self, batches: Iterable[pa.RecordBatch]) -> RecordChunks:
        """The records of one split from its Arrow batches, a list per batch."""
        columns = self.columns
        return RecordChunks(batch_rows(batch, columns) for batch in batches)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["df"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"StreamSource(columns={self.columns}, split_by={self.split_by}, "
            f"num_splits={self.num_splits}, order_by={self.order_by})"
        )


def has_stream_source(nodes: Iterable[Node]) -> bool:
    return any(isinstance(n, SourceNode) and isinstance(n.source, StreamSource) for n in nodes)
