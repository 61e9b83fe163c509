"""Record values as typed Arrow columns between tasks, where their declared type allows it.

A stream whose type is declared (``output_type``, ``Types``) carries values of a known shape. A
chunk of such values travels as one Arrow record batch (IPC bytes) instead of a pickled list:
ints, floats, booleans, strings, dates and times in typed columns, tuples and rows as structs
(nested as declared). The batch gives back exactly the values the pickled list gives: the same
Python types, ``tuple`` vs :class:`~sparktide.common.types.Row`, a row's field names (or none)
and kind, ``None`` where a value held one.

The declaration only proposes the columns; the values decide. A chunk is encoded only when
every value has exactly the proposed shape (``type(v) is int`` for an ``int`` column, a ``tuple``
of the declared arity, rows with one set of field names and one kind, ints within int64, text
that is valid UTF-8); otherwise :meth:`ValueCodec.encode` returns ``None`` and the chunk keeps
its pickled form. A value that does not match its declared type therefore travels as it does
without a declaration, and behaves as it did.

>>> from sparktide.common.typeinfo import Types
>>> codec = ValueCodec.of(Types.TUPLE([Types.STRING(), Types.LONG()]))
>>> chunk = codec.encode([("a", 1), ("é", -2**63)])
>>> decode_values(chunk)
[('a', 1), ('é', -9223372036854775808)]
>>> codec.encode([("a", 2**63)]) is None  # beyond int64: the chunk is pickled
True
>>> codec.encode([("a", 1.0)]) is None  # not the declared type: pickled, unchanged
True
>>> ValueCodec.of(Types.PICKLED_BYTE_ARRAY()) is None
True
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from sparktide.common.row_kind import RowKind
from sparktide.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    LocalTimeTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from sparktide.common.types import Row, is_row_class, row_field_names, row_maker, row_values

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ArrowValues", "ValueCodec", "arrow_pays", "decode_values"]

_NONE = type(None)


class _Mismatch(Exception):
    """A value is not of the shape the codec proposes: the chunk stays pickled."""


# ------------------------------------------------------------------ decoding (shapes)


class _Shape:
    """How to turn one Arrow column back into Python values (pickled with the chunk)."""

    __slots__ = ()

    def decode(self, column: pa.Array) -> list[object]:
        raise NotImplementedError


class _Scalars(_Shape):
    """ints, floats, booleans, text, dates and times: numpy's ``tolist`` makes the Python
    objects (many times faster than Arrow's ``to_pylist`` for dates and times)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[object, ...]:
        return _Scalars, ()

    def decode(self, column: pa.Array) -> list[object]:
        if column.null_count == 0:
            values: list[object] = column.to_numpy(zero_copy_only=False).tolist()
        else:
            values = column.to_pylist()
        return values


class _Tuples(_Shape):
    """Tuples from a struct column: one tuple of the fields' values per row."""

    __slots__ = ("fields",)

    def __init__(self, fields: tuple[_Shape, ...]) -> None:
        self.fields = fields

    def __reduce__(self) -> tuple[object, ...]:
        return _Tuples, (self.fields,)

    def decode(self, column: pa.Array) -> list[object]:
        struct = column  # a StructArray without nulls
        values = [s.decode(struct.field(i)) for i, s in enumerate(self.fields)]
        return list(zip(*values, strict=True))


class _Rows(_Shape):
    """Rows from a struct column, with the chunk's field names (or none) and kind."""

    __slots__ = ("fields", "kind", "names")

    def __init__(self, fields: tuple[_Shape, ...], names: list[str] | None, kind: RowKind) -> None:
        self.fields = fields
        self.names = names
        self.kind = kind

    def __reduce__(self) -> tuple[object, ...]:
        return _Rows, (self.fields, self.names, self.kind)

    def decode(self, column: pa.Array) -> list[object]:
        columns = [s.decode(column.field(i)) for i, s in enumerate(self.fields)]
        return list(map(row_maker(self.names, self.kind), zip(*columns, strict=True)))


class ArrowValues:
    """A chunk of values as an Arrow record batch (IPC stream bytes) and the shape that reads
    it back; pickles as its bytes (no Python object per value)."""

    __slots__ = ("data", "shape")

    def __init__(self, shape: _Shape, data: bytes) -> None:
        self.shape = shape
        self.data = data

    def __reduce__(self) -> tuple[object, ...]:
        return ArrowValues, (self.shape, self.data)

    def __len__(self) -> int:
        return len(self._batch())

    def _batch(self) -> pa.RecordBatch:
        import pyarrow as pa

        with pa.ipc.open_stream(pa.py_buffer(self.data)) as reader:
            return reader.read_next_batch()

    def values(self) -> list[object]:
        """The values, as the pickled list would give them."""
        return self.shape.decode(self._batch().column(0))


def decode_values(values: ArrowValues | list[object]) -> list[object]:
    """The values of a chunk: an encoded one decoded, a pickled list as it is."""
    return values.values() if isinstance(values, ArrowValues) else values


# ------------------------------------------------------------------ encoding (codecs)


class _Column:
    """Encodes one column of values into an Arrow array, or raises :class:`_Mismatch`."""

    def encode(self, values: Sequence[object]) -> tuple[pa.Array, _Shape]:
        raise NotImplementedError


class _ScalarColumn(_Column):
    """Values of exactly one Python type (or ``None``) in one Arrow type."""

    def __init__(self, kind: type, arrow: Callable[[], pa.DataType], exact: bool = True) -> None:
        self.allowed = {kind, _NONE}
        self.arrow = arrow
        self.shape = _Scalars()
        self.exact = exact  # False: each value must also be naive and fold 0 (times)

    def encode(self, values: Sequence[object]) -> tuple[pa.Array, _Shape]:
        import pyarrow as pa

        if not set(map(type, values)) <= self.allowed:
            raise _Mismatch
        if not self.exact and not all(
            v is None or (v.tzinfo is None and not v.fold)  # type: ignore[attr-defined]
            for v in values
        ):
            raise _Mismatch
        try:
            return pa.array(values, self.arrow()), self.shape
        except (OverflowError, ValueError, TypeError, pa.ArrowException) as exc:
            raise _Mismatch from exc  # beyond int64, text that is not UTF-8


class _FieldsColumn(_Column):
    """Tuples or rows of a fixed arity as a struct whose fields are columns."""

    def __init__(self, fields: list[_Column], rows: bool) -> None:
        self.fields = fields
        self.rows = rows

    def encode(self, values: Sequence[object]) -> tuple[pa.Array, _Shape]:
        import pyarrow as pa

        arity = len(self.fields)
        names: tuple[str, ...] | None = None
        kind = RowKind.INSERT
        if self.rows:
            # what pickling a row keeps: its field names, values and kind
            classes = set(map(type, values))
            if not all(map(is_row_class, classes)) or len(set(map(row_field_names, classes))) != 1:
                raise _Mismatch
            first = cast(Row, values[0])
            names, kind = row_field_names(first), first.get_row_kind()
            kinds = list(map(Row.get_row_kind, cast("Sequence[Row]", values)))
            if kinds.count(kind) != len(kinds):  # (no hash of an enum member per row)
                raise _Mismatch
            rows: Sequence[tuple[object, ...]] = list(
                map(row_values, cast("Sequence[Row]", values))
            )
        else:
            if set(map(type, values)) != {tuple}:
                raise _Mismatch
            rows = values  # type: ignore[assignment]
        try:  # the fields' columns, in one pass
            columns = list(zip(*rows, strict=True))
        except ValueError as exc:  # tuples or rows of several arities
            raise _Mismatch from exc
        if len(columns) != arity:
            raise _Mismatch
        arrays: list[pa.Array] = []
        shapes: list[_Shape] = []
        for field, column in zip(self.fields, columns, strict=True):
            array, shape = field.encode(column)
            arrays.append(array)
            shapes.append(shape)
        struct = pa.StructArray.from_arrays(arrays, [f"f{i}" for i in range(arity)])
        if self.rows:
            return struct, _Rows(tuple(shapes), None if names is None else list(names), kind)
        return struct, _Tuples(tuple(shapes))


def _int64() -> pa.DataType:
    import pyarrow as pa

    return pa.int64()


def _float64() -> pa.DataType:
    import pyarrow as pa

    return pa.float64()


def _bool() -> pa.DataType:
    import pyarrow as pa

    return pa.bool_()


def _string() -> pa.DataType:
    import pyarrow as pa

    return pa.string()


def _date() -> pa.DataType:
    import pyarrow as pa

    return pa.date32()


def _timestamp() -> pa.DataType:
    import pyarrow as pa

    return pa.timestamp("us")


def _time() -> pa.DataType:
    import pyarrow as pa

    return pa.time64("us")


_TEMPORAL = (DateTypeInfo, TimeTypeInfo, TimestampTypeInfo, LocalTimeTypeInfo)

_BASIC: Mapping[BasicType, tuple[type, Callable[[], pa.DataType]]] = MappingProxyType(
    {
        BasicType.BYTE: (int, _int64),
        BasicType.SHORT: (int, _int64),
        BasicType.INT: (int, _int64),
        BasicType.LONG: (int, _int64),
        BasicType.BIG_INT: (int, _int64),
        BasicType.FLOAT: (float, _float64),
        BasicType.DOUBLE: (float, _float64),
        BasicType.BOOLEAN: (bool, _bool),
        BasicType.STRING: (str, _string),
        BasicType.CHAR: (str, _string),
    }
)


def _column_of(type_info: TypeInformation) -> _Column | None:
    """The column for values of ``type_info``, or None when it has none (pickled)."""
    if isinstance(type_info, BasicTypeInfo):
        basic = _BASIC.get(type_info.basic_type)
        return None if basic is None else _ScalarColumn(*basic)
    if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)):
        fields = [_column_of(t) for t in type_info.get_field_types()]
        if not fields or any(f is None for f in fields):
            return None
        return _FieldsColumn(fields, isinstance(type_info, RowTypeInfo))  # type: ignore[arg-type]
    if isinstance(type_info, _TEMPORAL):
        return _temporal_column(type_info.python_type)
    return None


def _temporal_column(kind: type) -> _Column | None:
    """Dates, and naive times and timestamps (in microseconds: all Python keeps)."""
    if kind is _dt.date:
        return _ScalarColumn(_dt.date, _date)
    if kind is _dt.datetime:
        return _ScalarColumn(_dt.datetime, _timestamp, exact=False)
    if kind is _dt.time:
        return _ScalarColumn(_dt.time, _time, exact=False)
    return None


def arrow_pays(type_info: TypeInformation) -> bool:
    """Whether a chunk of ``type_info``'s values encodes and decodes faster as Arrow than as a
    pickled list: when a row or a date or time is in it (benchmarks/arrow_values.py: rows of
    four fields take 0.4x pickling's time, tuples with a timestamp 0.34x). Tuples and single
    values of numbers, booleans and text pickle as fast or faster (tuples of two longs: Arrow
    takes 1.55x pickling's time), so they stay pickled.

    >>> from sparktide.common.typeinfo import Types
    >>> arrow_pays(Types.TUPLE([Types.STRING(), Types.ROW([Types.LONG()])]))
    True
    >>> arrow_pays(Types.TUPLE([Types.STRING(), Types.LONG()])), arrow_pays(Types.LONG())
    (False, False)
    """
    if isinstance(type_info, (RowTypeInfo, *_TEMPORAL)):
        return True
    if isinstance(type_info, TupleTypeInfo):
        return any(arrow_pays(t) for t in type_info.get_field_types())
    return False


class ValueCodec:
    """Encodes chunks of values of one declared type as :class:`ArrowValues`."""

    def __init__(self, column: _Column) -> None:
        self._column = column

    @classmethod
    def of(cls, type_info: object, always: bool = True) -> ValueCodec | None:
        """The codec of ``type_info``, or None when its values travel pickled (no declared
        type, ``PICKLED_BYTE_ARRAY``, a type without columns here). ``always=False``: only
        where Arrow was measured faster than pickling (:func:`arrow_pays`).

        >>> from sparktide.common.typeinfo import Types
        >>> pair = Types.TUPLE([Types.LONG(), Types.LONG()])
        >>> ValueCodec.of(pair) is None, ValueCodec.of(pair, always=False) is None
        (False, True)
        """
        if not isinstance(type_info, TypeInformation):
            return None
        column = _column_of(type_info)
        if column is None or not (always or arrow_pays(type_info)):
            return None
        return cls(column)

    def encode(self, values: Sequence[object]) -> ArrowValues | None:
        """``values`` as an Arrow chunk, or None when one of them does not have exactly the
        declared shape (the chunk is then pickled as it is)."""
        import pyarrow as pa

        if not values:
            return None
        try:
            array, shape = self._column.encode(values)
        except _Mismatch:
            return None
        batch = pa.RecordBatch.from_arrays([array], ["v"])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        return ArrowValues(shape, sink.getvalue().to_pybytes())
