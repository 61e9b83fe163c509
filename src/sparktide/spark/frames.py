"""Spark DataFrames in and out of streams: schemas, records from Arrow batches, Arrow batches
from records.

A DataFrame row becomes a :class:`~sparktide.common.types.Row` named by the DataFrame's columns,
typed by :func:`type_info_of_schema` (so ``print()`` and typed operators see PyFlink's types).
A stream becomes DataFrame columns by its type (:func:`arrow_schema_of`): a named row → one
column per field, an unnamed row or tuple → ``f0, f1, ...``, any other declared type → one
column ``value``; ``Types.PICKLED_BYTE_ARRAY()`` → one ``value`` column of pickled values. Where a
stream has no declared type, ``to_dataframe()`` and the sinks that write its columns infer the type
from the records (:mod:`sparktide.spark.frame_types`); the runner's own transport of untyped
records to sinks that convert them to a row type of their own is a pickled ``value`` column
(``type_info=None`` here).

>>> from sparktide.common import Types
>>> arrow_schema_of(Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.LONG()]))
word: string
n: int64
>>> arrow_schema_of(None)
value: binary
>>> batch = to_record_batch([("a", 1), ("b", 2)], Types.TUPLE([Types.STRING(), Types.INT()]))
>>> batch.to_pydict()
{'f0': ['a', 'b'], 'f1': [1, 2]}
>>> [tuple(r) for r in records_of_batch(batch)]
[('a', 1), ('b', 2)]
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import pickle
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparktide.common.arrow_columns import arrow_schema_of
from sparktide.common.arrow_columns import stream_columns as _columns_of
from sparktide.common.arrow_rows import rows_of_batch
from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import PickledBytesTypeInfo
from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from sparktide.common.types import Row

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "ColumnTimestampAssigner",
    "arrow_schema_of",
    "local_frame",
    "records_of_batch",
    "spark_schema_of",
    "to_record_batch",
    "type_info_of_schema",
]

_EPOCH = _dt.datetime(1970, 1, 1)
_MS = _dt.timedelta(milliseconds=1)


# ---------------------------------------------------------------------------------------------
# DataFrame → stream


def _type_info_of(data_type: DataType) -> TypeInformation:
    """The sparktide type of a Spark SQL data type (``PICKLED_BYTE_ARRAY`` for the rest)."""
    from pyspark.sql import types as T

    simple = {
        T.LongType: Types.LONG,
        T.IntegerType: Types.INT,
        T.ShortType: Types.SHORT,
        T.ByteType: Types.BYTE,
        T.BooleanType: Types.BOOLEAN,
        T.FloatType: Types.FLOAT,
        T.DoubleType: Types.DOUBLE,
        T.StringType: Types.STRING,
        T.DecimalType: Types.BIG_DEC,
        T.DateType: Types.LOCAL_DATE,
        T.TimestampType: Types.LOCAL_DATE_TIME,
        T.TimestampNTZType: Types.LOCAL_DATE_TIME,
    }
    for spark_type, make in simple.items():
        if isinstance(data_type, spark_type):
            return make()
    if isinstance(data_type, T.BinaryType):
        return Types.PRIMITIVE_ARRAY(Types.BYTE())
    if isinstance(data_type, T.ArrayType):
        return Types.LIST(_type_info_of(data_type.elementType))
    if isinstance(data_type, T.MapType):
        return Types.MAP(_type_info_of(data_type.keyType), _type_info_of(data_type.valueType))
    if isinstance(data_type, T.StructType):
        return type_info_of_schema(data_type)
    return Types.PICKLED_BYTE_ARRAY()


def type_info_of_schema(schema: StructType) -> RowTypeInfo:
    """``Types.ROW_NAMED`` for a Spark ``StructType`` (nested structs become nested rows)."""
    return Types.ROW_NAMED(
        [f.name for f in schema.fields], [_type_info_of(f.dataType) for f in schema.fields]
    )


def records_of_batch(batch: pa.RecordBatch, names: Sequence[str] | None = None) -> Iterator[Row]:
    """The rows of an Arrow batch as named :class:`Row` values (``names``: the columns to
    keep, in order; default all); see :func:`~sparktide.common.arrow_rows.rows_of_batch`."""
    return iter(rows_of_batch(batch, list(batch.schema.names) if names is None else names))


class ColumnTimestampAssigner:
    """Takes a record's event time from its field ``index``: epoch milliseconds for an integer
    column, and the UTC instant for a timestamp column. ``source`` is the method the user
    called (``from_dataframe`` or ``from_stream``); errors name it.

    >>> import datetime as dt
    >>> ColumnTimestampAssigner(0, "ts").extract_timestamp(Row(dt.datetime(1970, 1, 1, 0, 0, 1)), 0)
    1000
    >>> ColumnTimestampAssigner(0, "ts", "from_stream").extract_timestamp(Row(None), 0)
    Traceback (most recent call last):
    ...
    ValueError: from_stream: the timestamp column 'ts' holds null; ...
    """

    def __init__(self, index: int, column: str, source: str = "from_dataframe") -> None:
        self.index = index
        self.column = column
        self.source = source

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        ts = value[self.index]
        if type(ts) is int:
            return ts
        if isinstance(ts, _dt.datetime):
            return (ts - _EPOCH) // _MS
        if ts is None:
            raise ValueError(
                f"{self.source}: the timestamp column {self.column!r} holds null; filter those "
                f"rows out or fill them (e.g. df.na.drop(subset=[{self.column!r}]))"
            )
        raise TypeError(
            f"{self.source}: the timestamp column {self.column!r} must hold integers (epoch "
            f"milliseconds) or timestamps, got {type(ts).__name__} ({ts!r}); "
            f"{_column_advice(ts, self.column)}"
        )

    def column_timestamps(self, rows: list[Any]) -> list[int] | None:
        """The timestamps of a batch's ``rows`` (a :class:`~sparktide.common.arrow_rows.
        RowChunk` or ``BatchRows``) computed from the column, as :meth:`extract_timestamp`
        gives them one by one; ``None`` where only the rows one by one say it (a null, another
        column type: they raise its errors).

        >>> import pyarrow as pa
        >>> from sparktide.common.arrow_rows import rows_of_batch
        >>> batch = pa.record_batch({"ts": pa.array([1500, -1], pa.timestamp("us"))})
        >>> ColumnTimestampAssigner(0, "ts").column_timestamps(rows_of_batch(batch, ["ts"]))
        [1, -1]
        """
        arrays = getattr(rows, "arrays", None)
        if arrays is None:
            return None
        array = arrays[self.index]
        if array.null_count:
            return None
        t = array.type
        if pa.types.is_signed_integer(t):
            column: list[int] = rows.column(self.index)  # type: ignore[attr-defined]
            return column  # the ints the rows hold
        divisor = _MS_DIVISORS.get(t.unit) if pa.types.is_timestamp(t) else None
        if divisor is None:
            return None
        ticks = array.cast(pa.int64()).to_numpy()  # since the epoch, UTC
        return (ticks // divisor).tolist()  # type: ignore[no-any-return]  # floor, as per row

    def __repr__(self) -> str:
        return f"ColumnTimestampAssigner({self.index}, {self.column!r}, {self.source!r})"


_MS_DIVISORS: Mapping[str, int] = MappingProxyType({"ms": 1, "us": 1_000})
"""Ticks per millisecond of the timestamp units whose rows hold ``datetime`` values exactly."""


def _column_advice(value: object, column: str) -> str:
    """How to make a DataFrame column of ``value``'s type an event-time column."""
    c = repr(column)
    if isinstance(value, str):
        return (
            f"parse the strings into a timestamp column first, e.g. df.withColumn({c}, "
            f"F.to_timestamp({c})) (with a format argument if they are not ISO-8601)"
        )
    if isinstance(value, _dt.date):
        return f"make it a timestamp column, e.g. df.withColumn({c}, F.col({c}).cast('timestamp'))"
    if isinstance(value, (float, _decimal.Decimal)):
        return (
            f"make it integral milliseconds, e.g. df.withColumn({c}, F.col({c}).cast('long')) "
            "(times 1000 first if it holds seconds)"
        )
    return "make it a timestamp column (e.g. with F.to_timestamp) or a long of epoch milliseconds"


# ---------------------------------------------------------------------------------------------
# stream → DataFrame


def spark_schema_of(type_info: TypeInformation | None) -> StructType:
    """The Spark ``StructType`` of a stream's DataFrame."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema_of(type_info))


def local_frame(
    spark: SparkSession, rows: Sequence[tuple[Any, ...]], schema: pa.Schema
) -> DataFrame:
    """``rows`` (tuples of ``schema``'s fields) as a DataFrame that Spark holds as a local
    relation: its tasks run in the JVM alone. ``createDataFrame`` of a Python list on a classic
    session is a Python RDD instead, each of whose tasks runs a Python worker (tens of
    milliseconds a task on a small machine).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    arrays = [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)]
    table = pa.Table.from_arrays(arrays, schema=schema)
    return spark.createDataFrame(table, from_arrow_schema(schema))


def _field_error(
    name: str, t: TypeInformation, values: list[object], cause: Exception
) -> Exception:
    coerce = t.coercer()
    for value in values:
        if value is None:
            continue
        try:
            coerce(value, name)
        except (TypeError, ValueError) as exc:
            return TypeError(
                f"to_dataframe: field {name!r} is declared {t} but got a "
                f"{type(value).__name__} ({value!r}): {exc}; fix the function that produces it "
                "or declare the right output_type"
            )
    return TypeError(f"to_dataframe: field {name!r} ({t}) cannot be stored in Arrow: {cause}")


def to_record_batch(values: Sequence[Any], type_info: TypeInformation | None) -> pa.RecordBatch:
    """An Arrow batch of stream values in the columns of :func:`arrow_schema_of`.

    A value that does not fit its field raises ``TypeError`` naming the field and the value's
    type; nothing becomes null silently.
    """
    schema = arrow_schema_of(type_info)
    columns = _columns_of(type_info)
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        dumps = pickle.dumps
        arrays = [pa.array([dumps(v, 5) for v in values], pa.binary())]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    arrays = []
    for i, ((name, t), field) in enumerate(zip(columns, schema, strict=True)):
        if len(columns) == 1 and not isinstance(type_info, RowTypeInfo | TupleTypeInfo):
            raw = list(values)
        else:
            raw = [None if v is None else v[i] for v in values]
        try:
            arrays.append(pa.array(raw, field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
            raise _field_error(name, t, raw, exc) from None  # type: ignore[arg-type]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
