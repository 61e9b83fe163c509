"""A stream's values as columns: which columns a declared type gives, and their Arrow types.

A named row gives one column per field, an unnamed row or a tuple ``f0, f1, ...``, any other
declared type one column ``value``; ``Types.PICKLED_BYTE_ARRAY()`` (or no declared type) one
``value`` column of pickled values. DataFrames of streams (``to_dataframe()``, Spark-written
sinks) and ``DataStream.map_batches`` use these columns.

>>> from sparktide.common.typeinfo import Types
>>> arrow_schema_of(Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.LONG()]))
word: string
n: int64
>>> [name for name, _ in stream_columns(Types.TUPLE([Types.STRING(), Types.INT()]))]
['f0', 'f1']
>>> arrow_schema_of(None)
value: binary
"""

from __future__ import annotations

import pyarrow as pa

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo

__all__ = ["arrow_schema_of", "stream_columns"]


def stream_columns(
    type_info: TypeInformation | None,
) -> list[tuple[str, TypeInformation | None]]:
    """The columns of a stream of ``type_info``: ``(name, type of the column's values)``."""
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        return list(zip(names, type_info.get_field_types(), strict=True))
    if isinstance(type_info, TupleTypeInfo):
        return [(f"f{i}", t) for i, t in enumerate(type_info.get_field_types())]
    return [("value", type_info)]


def arrow_schema_of(type_info: TypeInformation | None) -> pa.Schema:
    """The Arrow schema of a stream's columns (pickled values: one ``binary`` column)."""
    return pa.schema(
        [
            pa.field(name, pa.binary() if t is None else t.to_arrow_type(), nullable=True)
            for name, t in stream_columns(type_info)
        ]
    )
