"""Several streaming DataFrames as one streaming query, and each one's rows of a micro-batch.

Structured Streaming runs ``foreachBatch`` over one streaming DataFrame. A job with several
``from_stream`` sources therefore reads their union: row ``i`` of source ``k`` becomes
``(__source=k, __s0=null, ..., __sk=struct(row), ...)``, so sources with different schemas share
one query (and one offset log: each micro-batch holds what every source got since the last one).
:func:`rows_of_source` takes source ``k``'s rows of a micro-batch back out, with its own columns.

>>> from sparktide.spark.stream_union import SOURCE_COLUMN, struct_column
>>> SOURCE_COLUMN, struct_column(1)
('__source', '__s1')
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SOURCE_COLUMN", "rows_of_source", "struct_column", "union_streams"]

SOURCE_COLUMN = "__source"


def struct_column(index: int) -> str:
    """The column holding the rows of source ``index``."""
    return f"__s{index}"


def union_streams(frames: list[DataFrame]) -> DataFrame:
    """One streaming DataFrame carrying the rows of every frame of ``frames``."""
    from pyspark.sql import functions as F

    parts = []
    for k, df in enumerate(frames):
        columns = [F.lit(k).alias(SOURCE_COLUMN)]
        for j, other in enumerate(frames):
            if j == k:
                value = F.struct(*[F.col(f"`{c}`") for c in df.columns])
            else:
                value = F.lit(None).cast(other.schema)
            columns.append(value.alias(struct_column(j)))
        parts.append(df.select(*columns))
    return reduce(lambda a, b: a.unionByName(b), parts)


def rows_of_source(batch_df: DataFrame, index: int) -> DataFrame:
    """Source ``index``'s rows of a micro-batch of :func:`union_streams`, with its columns."""
    from pyspark.sql import functions as F

    column = struct_column(index)
    return batch_df.filter(F.col(SOURCE_COLUMN) == index).select(f"{column}.*")
