"""``Types`` and ``TypeInformation``: PyFlink's declared types, with what they do to values.

PyFlink honours a declared type: a value that crosses an operator boundary is serialized with the
type's coder and comes back in the type's shape. :meth:`TypeInformation.coerce` returns that value
(or raises when PyFlink could not encode it, or would silently change its kind), so the local
runtime and the Spark runner give a program the values PyFlink gives it:

>>> Types.FLOAT().coerce(110.1)
110.0999984741211
>>> Types.TUPLE([Types.STRING(), Types.INT()]).coerce(['a', 1])
('a', 1)
>>> Types.ROW_NAMED(['id', 'name'], [Types.INT(), Types.STRING()]).coerce((1, 'a'))
Row(id=1, name='a')
>>> Types.TUPLE([Types.LONG(), Types.INT()]).coerce((1, 2**40))
Traceback (most recent call last):
...
ValueError: value[1]: Types.INT() holds an int in [-2147483648, 2147483647], got int \
1099511627776; declare Types.LONG() for this field or bring the value into range

What a round trip does, per type (``None`` is accepted only where PyFlink's coders carry it: in
``ROW`` fields, ``BASIC_ARRAY``/``OBJECT_ARRAY`` elements, ``MAP`` values, and anywhere under
``PICKLED_BYTE_ARRAY``):

- ``BYTE``/``SHORT``/``INT``/``LONG``/``BIG_INT``: an ``int`` in the 8/16/32/64/64-bit range;
- ``FLOAT``: rounded to 32 bits; ``DOUBLE``: ``float``; ints are accepted and become floats;
- ``STRING``: a ``str``; ``CHAR``: a one-character ``str``; ``BOOLEAN``: a ``bool``;
- ``BIG_DEC``: ``Decimal(str(value))`` of a Decimal, int or float;
- ``SQL_TIME``/``SQL_TIMESTAMP``: truncated to milliseconds; ``SQL_DATE``/``LOCAL_*``: unchanged;
- ``TUPLE``: a ``tuple``; ``ROW``/``ROW_NAMED``: a :class:`~sparktide.common.types.Row` named
  after the declared fields (``f0, f1, ...`` when unnamed), keeping the row kind;
- arrays and ``LIST``: a ``list`` (``PRIMITIVE_ARRAY(BYTE())``: ``bytes``); ``MAP``: a ``dict``.

Where PyFlink would truncate (``1.7`` as ``INT``), overflow (``1e300`` as ``FLOAT``) or drop
information (a ``datetime`` as ``SQL_DATE``, a zone-aware time), ``coerce`` raises instead.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from enum import Enum
from functools import partial
from typing import Any

import pyarrow as pa

from sparktide.common.types import Row

__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "InstantTypeInfo",
    "ListTypeInfo",
    "LocalTimeTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]

_FLOAT32 = struct.Struct("f")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _got(value: Any) -> str:
    return f"{type(value).__name__} {_show(value)}"


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_numpy_bool(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool")


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class TypeInformation:
    """A declared type (immutable, hashable): PyFlink's ``TypeInformation``.

    Build instances with :class:`Types`. Two declarations are equal when PyFlink's are (a
    ``RowTypeInfo`` compares its field types only):

    >>> Types.INT() == Types.INT(), Types.INT() == Types.LONG()
    (True, False)
    >>> Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()])
    TupleTypeInfo(Long, String, Float)
    """

    __slots__ = ()

    def _args(self) -> tuple[Any, ...]:
        return ()

    def _key(self) -> tuple[Any, ...]:
        return (type(self).__name__, *self._args())

    def _decl(self) -> str:
        """How the declaration is written with :class:`Types` (used in error messages)."""
        return repr(self)

    def coerce(self, value: Any, path: str = "value") -> Any:
        """The value PyFlink hands back after serializing ``value`` with this type.

        ``path`` names ``value`` in error messages (``value[2]``, ``value.name``, ...).
        """
        raise NotImplementedError(type(self).__name__ + ".coerce")

    def to_arrow_type(self) -> pa.DataType:
        """The Arrow type that holds values of this type."""
        raise NotImplementedError(type(self).__name__ + ".to_arrow_type")

    def _wrong(self, value: Any, path: str, wants: str, fix: str) -> TypeError:
        if value is None:
            return TypeError(
                f"{path}: {self._decl()} does not accept None (Flink cannot serialize a null "
                "here); replace the None, or declare the field inside a Types.ROW(...), whose "
                "fields may be None"
            )
        return TypeError(f"{path}: {self._decl()} holds {wants}, got {_got(value)}; {fix}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._args()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return repr(self)


def _check_type_info(value: Any, name: str) -> TypeInformation:
    if not isinstance(value, TypeInformation):
        raise TypeError(
            f"{name} must be a TypeInformation, got {_got(value)}; build it with Types, "
            "e.g. Types.INT()"
        )
    return value


class BasicType(Enum):
    """The basic types; the value is the name PyFlink's ``repr`` shows."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


_INT_RANGES = {
    BasicType.BYTE: (-(2**7), 2**7 - 1, "SHORT"),
    BasicType.SHORT: (-(2**15), 2**15 - 1, "INT"),
    BasicType.INT: (-(2**31), 2**31 - 1, "LONG"),
    BasicType.LONG: (-(2**63), 2**63 - 1, None),
    BasicType.BIG_INT: (-(2**63), 2**63 - 1, None),
}

_ARROW_BASIC = {
    BasicType.STRING: pa.string(),
    BasicType.BYTE: pa.int8(),
    BasicType.BOOLEAN: pa.bool_(),
    BasicType.SHORT: pa.int16(),
    BasicType.INT: pa.int32(),
    BasicType.LONG: pa.int64(),
    BasicType.FLOAT: pa.float32(),
    BasicType.DOUBLE: pa.float64(),
    BasicType.CHAR: pa.string(),
    BasicType.BIG_INT: pa.int64(),
    BasicType.BIG_DEC: pa.decimal128(38, 18),
    BasicType.INSTANT: pa.timestamp("ns", tz="UTC"),
}


class BasicTypeInfo(TypeInformation):
    """Numbers, strings, booleans, ``BigInteger``, ``BigDecimal`` and ``Instant``.

    >>> Types.SHORT(), Types.SHORT().coerce(7), Types.SHORT().to_arrow_type()
    (Short, 7, DataType(int16))
    >>> Types.DOUBLE().coerce(3)
    3.0
    """

    __slots__ = ("_basic_type",)

    def __init__(self, basic_type: BasicType) -> None:
        if not isinstance(basic_type, BasicType):
            raise TypeError(
                f"basic_type must be a BasicType, got {_got(basic_type)}; use Types.INT() etc."
            )
        object.__setattr__(self, "_basic_type", basic_type)

    def _args(self) -> tuple[Any, ...]:
        return (self._basic_type,)

    def _key(self) -> tuple[Any, ...]:
        return ("BasicTypeInfo", self._basic_type)

    def _decl(self) -> str:
        return f"Types.{self._basic_type.name}()"

    def __repr__(self) -> str:
        return self._basic_type.value

    def to_arrow_type(self) -> pa.DataType:
        return _ARROW_BASIC[self._basic_type]

    def coerce(self, value: Any, path: str = "value") -> Any:
        kind = self._basic_type
        if kind in _INT_RANGES:
            return self._coerce_int(value, path)
        if kind is BasicType.STRING:
            if isinstance(value, str):
                return value
            raise self._wrong(value, path, "a str", "convert it with str(...)")
        if kind is BasicType.FLOAT or kind is BasicType.DOUBLE:
            return self._coerce_float(value, path)
        if kind is BasicType.BOOLEAN:
            if isinstance(value, bool) or _is_numpy_bool(value):
                return bool(value)
            raise self._wrong(value, path, "a bool", "convert it with bool(...)")
        if kind is BasicType.CHAR:
            if isinstance(value, str) and len(value) == 1:
                return value
            if isinstance(value, str):
                raise ValueError(
                    f"{path}: {self._decl()} holds a single character, got a str of length "
                    f"{len(value)} ({_show(value)}); declare Types.STRING() for text"
                )
            raise self._wrong(value, path, "a one-character str", "pass a str of length 1")
        if kind is BasicType.BIG_DEC:
            return self._coerce_decimal(value, path)
        return self._coerce_instant(value, path)

    def _coerce_int(self, value: Any, path: str) -> int:
        low, high, wider = _INT_RANGES[self._basic_type]
        if not _is_int(value):
            fix = (
                "round it explicitly with int(...) (PyFlink would truncate it silently)"
                if _is_real(value)
                else "pass an int"
            )
            raise self._wrong(value, path, "an int", fix)
        number = int(value)
        if not low <= number <= high:
            fix = (
                f"declare Types.{wider}() for this field or bring the value into range"
                if wider
                else "use Types.BIG_DEC() or Types.PICKLED_BYTE_ARRAY() for larger numbers"
            )
            raise ValueError(
                f"{path}: {self._decl()} holds an int in [{low}, {high}], got {_got(value)}; {fix}"
            )
        return number

    def _coerce_float(self, value: Any, path: str) -> float:
        if not _is_real(value):
            raise self._wrong(value, path, "a float (or int)", "convert it with float(...)")
        double = self._basic_type is BasicType.DOUBLE
        try:
            number = float(value)
        except OverflowError:
            number = None
        if number is not None and not double:
            rounded: float = _FLOAT32.unpack(_FLOAT32.pack(number))[0]
            number = rounded if math.isinf(rounded) == math.isinf(number) else None
        if number is None:
            bits, fix = (
                (64, "use Types.BIG_DEC() or Types.PICKLED_BYTE_ARRAY()")
                if double
                else (32, "declare Types.DOUBLE() for this field")
            )
            raise ValueError(
                f"{path}: {self._decl()} holds a {bits}-bit float, got {_got(value)}, which is "
                f"out of its range; {fix}"
            )
        return number

    def _coerce_decimal(self, value: Any, path: str) -> Decimal:
        if not (isinstance(value, Decimal) or _is_real(value)):
            raise self._wrong(value, path, "a Decimal (or int or float)", "pass a decimal.Decimal")
        result = value if isinstance(value, Decimal) else Decimal(str(value))
        if not result.is_finite():
            raise ValueError(
                f"{path}: {self._decl()} holds a finite decimal, got {_got(value)}; "
                "replace NaN/infinity before emitting it"
            )
        return result

    def _coerce_instant(self, value: Any, path: str) -> Any:
        seconds = getattr(value, "seconds", None)
        nanos = getattr(value, "nanos", None)
        if _is_int(seconds) and _is_int(nanos) and 0 <= nanos < 10**9:
            return value
        raise self._wrong(
            value,
            path,
            "an Instant (an object with int .seconds and .nanos in [0, 1e9))",
            "pass an Instant, e.g. Instant.of_epoch_milli(ms)",
        )


class InstantTypeInfo(BasicTypeInfo):
    """``Types.INSTANT()``: a point in time with nanosecond precision (PyFlink's ``Instant``)."""

    __slots__ = ()

    def __init__(self, basic_type: BasicType = BasicType.INSTANT) -> None:
        if basic_type is not BasicType.INSTANT:
            raise ValueError(
                f"InstantTypeInfo is for BasicType.INSTANT, got {basic_type!r}; "
                "use BasicTypeInfo for the other basic types"
            )
        super().__init__(basic_type)


for _basic in BasicType:  # PyFlink's constructors: BasicTypeInfo.STRING_TYPE_INFO(), ...
    _make = InstantTypeInfo if _basic is BasicType.INSTANT else BasicTypeInfo
    setattr(BasicTypeInfo, f"{_basic.name}_TYPE_INFO", staticmethod(partial(_make, _basic)))


class _TemporalTypeInfo(TypeInformation):
    """Shared by the date and time types; ``_spec()`` says which one."""

    __slots__ = ()
    # python type, truncate to milliseconds?, Types factory name, repr, arrow type
    _SPEC: tuple[type, bool, str, str, pa.DataType]

    def _spec(self) -> tuple[type, bool, str, str, pa.DataType]:
        return self._SPEC

    def _decl(self) -> str:
        return f"Types.{self._spec()[2]}()"

    def __repr__(self) -> str:
        return self._spec()[3]

    def to_arrow_type(self) -> pa.DataType:
        return self._spec()[4]

    def coerce(self, value: Any, path: str = "value") -> Any:
        wanted, millis = self._spec()[:2]
        name = f"datetime.{wanted.__name__}"
        if wanted is _dt.date and isinstance(value, _dt.datetime):
            fix = "pass value.date() (PyFlink would drop the time of day silently)"
            raise self._wrong(value, path, f"a {name}", fix)
        if not isinstance(value, wanted):
            raise self._wrong(value, path, f"a {name}", f"pass a {name}")
        if wanted is _dt.date:
            return value
        if value.tzinfo is not None:
            raise ValueError(
                f"{path}: {self._decl()} holds a zone-less value, got the zone-aware "
                f"{_got(value)} (PyFlink would drop the zone and keep the wall-clock time); "
                "convert it first, e.g. value.astimezone(timezone.utc).replace(tzinfo=None)"
            )
        return value.replace(microsecond=value.microsecond // 1000 * 1000) if millis else value


class DateTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_DATE()``: a ``datetime.date``.

    >>> import datetime
    >>> Types.SQL_DATE().coerce(datetime.date(2020, 1, 2))
    datetime.date(2020, 1, 2)
    """

    __slots__ = ()
    _SPEC = (_dt.date, False, "SQL_DATE", "DateTypeInfo", pa.date32())


class TimeTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_TIME()``: a zone-less ``datetime.time`` with millisecond precision.

    >>> import datetime
    >>> Types.SQL_TIME().coerce(datetime.time(1, 2, 3, 4567))
    datetime.time(1, 2, 3, 4000)
    """

    __slots__ = ()
    _SPEC = (_dt.time, True, "SQL_TIME", "TimeTypeInfo", pa.time32("ms"))


class TimestampTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_TIMESTAMP()``: a zone-less ``datetime.datetime``, millisecond precision.

    >>> import datetime
    >>> Types.SQL_TIMESTAMP().coerce(datetime.datetime(2020, 1, 2, 3, 4, 5, 6001))
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6000)
    """

    __slots__ = ()
    _SPEC = (_dt.datetime, True, "SQL_TIMESTAMP", "TimestampTypeInfo", pa.timestamp("ms"))


class SqlTimeTypeInfo:
    """PyFlink's factory of the ``java.sql`` time types.

    >>> SqlTimeTypeInfo.DATE(), SqlTimeTypeInfo.TIME(), SqlTimeTypeInfo.TIMESTAMP()
    (DateTypeInfo, TimeTypeInfo, TimestampTypeInfo)
    """

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


class LocalTimeTypeInfo(_TemporalTypeInfo):
    """``java.time`` local types: ``LOCAL_DATE``, ``LOCAL_TIME``, ``LOCAL_DATE_TIME`` (µs kept).

    >>> import datetime
    >>> Types.LOCAL_DATE_TIME(), Types.LOCAL_TIME().coerce(datetime.time(1, 2, 3, 4567))
    (LocalTimeTypeInfo<LOCAL_DATE_TIME>, datetime.time(1, 2, 3, 4567))
    """

    class TimeType(Enum):
        LOCAL_DATE = 0
        LOCAL_TIME = 1
        LOCAL_DATE_TIME = 2

    __slots__ = ("_time_type",)

    def __init__(self, time_type: LocalTimeTypeInfo.TimeType) -> None:
        if not isinstance(time_type, LocalTimeTypeInfo.TimeType):
            raise TypeError(
                f"time_type must be a LocalTimeTypeInfo.TimeType, got {_got(time_type)}; "
                "use Types.LOCAL_DATE(), Types.LOCAL_TIME() or Types.LOCAL_DATE_TIME()"
            )
        object.__setattr__(self, "_time_type", time_type)

    def _args(self) -> tuple[Any, ...]:
        return (self._time_type,)

    def _spec(self) -> tuple[type, bool, str, str, pa.DataType]:
        name = self._time_type.name
        python, arrow = {
            "LOCAL_DATE": (_dt.date, pa.date32()),
            "LOCAL_TIME": (_dt.time, pa.time64("us")),
            "LOCAL_DATE_TIME": (_dt.datetime, pa.timestamp("us")),
        }[name]
        return python, False, name, f"LocalTimeTypeInfo<{name}>", arrow


class PickledBytesTypeInfo(TypeInformation):
    """``Types.PICKLED_BYTE_ARRAY()``: any picklable Python value, handed back unchanged.

    >>> Types.PICKLED_BYTE_ARRAY().coerce({'any': [1, None]}), Types.PICKLED_BYTE_ARRAY()
    ({'any': [1, None]}, PickledByteArrayTypeInfo)
    """

    __slots__ = ()

    def _decl(self) -> str:
        return "Types.PICKLED_BYTE_ARRAY()"

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"

    def to_arrow_type(self) -> pa.DataType:
        return pa.binary()

    def coerce(self, value: Any, path: str = "value") -> Any:
        return value


class _FieldsTypeInfo(TypeInformation):
    """Shared by ``TupleTypeInfo`` and ``RowTypeInfo``: a fixed list of field types."""

    __slots__ = ("_field_types",)

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        if isinstance(field_types, (str, bytes)) or not isinstance(field_types, Sequence):
            raise TypeError(
                f"field_types must be a list of TypeInformation, got {_got(field_types)}; "
                "e.g. [Types.STRING(), Types.INT()]"
            )
        types = tuple(_check_type_info(t, f"field_types[{i}]") for i, t in enumerate(field_types))
        object.__setattr__(self, "_field_types", types)

    def get_field_types(self) -> list[TypeInformation]:
        """The field types, in field order."""
        return list(self._field_types)

    def get_arity(self) -> int:
        """The number of fields."""
        return len(self._field_types)

    def _check_arity(self, values: Sequence[Any], path: str, value: Any) -> None:
        if len(values) != len(self._field_types):
            raise ValueError(
                f"{path}: {self._decl()} has {len(self._field_types)} fields, got "
                f"{len(values)} values in {_got(value)}; emit exactly one value per declared "
                "field or change the declaration"
            )


class TupleTypeInfo(_FieldsTypeInfo):
    """``Types.TUPLE([...])``: a ``tuple`` whose fields have the declared types (never None).

    >>> Types.TUPLE([Types.STRING(), Types.FLOAT()]).coerce(('Alice', 110.1))
    ('Alice', 110.0999984741211)
    >>> Types.TUPLE([Types.STRING(), Types.FLOAT()]).coerce(('Alice', None))
    Traceback (most recent call last):
    ...
    TypeError: value[1]: Types.FLOAT() does not accept None (Flink cannot serialize a null \
here); replace the None, or declare the field inside a Types.ROW(...), whose fields may be \
None
    """

    __slots__ = ()

    def _args(self) -> tuple[Any, ...]:
        return (list(self._field_types),)

    def _key(self) -> tuple[Any, ...]:
        return ("TupleTypeInfo", self._field_types)

    def _decl(self) -> str:
        return "Types.TUPLE([{}])".format(", ".join(t._decl() for t in self._field_types))

    def __repr__(self) -> str:
        return "TupleTypeInfo({})".format(", ".join(str(t) for t in self._field_types))

    def to_arrow_type(self) -> pa.DataType:
        return pa.struct(
            [
                pa.field(f"f{i}", t.to_arrow_type(), nullable=False)
                for i, t in enumerate(self._field_types)
            ]
        )

    def coerce(self, value: Any, path: str = "value") -> tuple[Any, ...]:
        if isinstance(value, (tuple, list, Row)):
            values = list(value)
        else:
            raise self._wrong(value, path, "a tuple", "emit a tuple (or list) of the fields")
        self._check_arity(values, path, value)
        return tuple(
            t.coerce(v, f"{path}[{i}]")
            for i, (t, v) in enumerate(zip(self._field_types, values, strict=True))
        )


class RowTypeInfo(_FieldsTypeInfo):
    """``Types.ROW([...])`` / ``Types.ROW_NAMED(names, [...])``: a :class:`Row`.

    Fields may be ``None``. A named row is matched to the declaration by field name, a tuple,
    list or unnamed row by position, a dict by key; the result is named after the declaration
    (``f0``, ``f1``, ... when unnamed) and keeps the row kind.

    >>> info = Types.ROW_NAMED(['id', 'info'], [Types.INT(), Types.STRING()])
    >>> info, info.get_field_names(), info.get_field_types()
    (RowTypeInfo(id: Integer, info: String), ['id', 'info'], [Integer, String])
    >>> info.coerce(Row(info='a', id=1)), Types.ROW([Types.INT()]).coerce((7,))
    (Row(id=1, info='a'), Row(f0=7))
    """

    __slots__ = ("_field_names",)

    def __init__(
        self, field_types: Sequence[TypeInformation], field_names: Sequence[str] | None = None
    ) -> None:
        super().__init__(field_types)
        names: tuple[str, ...] | None = None
        if field_names is not None:
            if isinstance(field_names, (str, bytes)) or not isinstance(field_names, Sequence):
                raise TypeError(
                    f"field_names must be a list of str, got {_got(field_names)}; "
                    "e.g. ['id', 'name']"
                )
            names = tuple(field_names)
            for i, name in enumerate(names):
                if not isinstance(name, str):
                    raise TypeError(
                        f"field_names[{i}] must be a str, got {_got(name)}; name every field"
                    )
            if len(names) != len(self._field_types):
                raise ValueError(
                    f"field_names has {len(names)} names but field_types has "
                    f"{len(self._field_types)} types; give one name per type"
                )
            if len(set(names)) != len(names):
                dupes = sorted({n for n in names if names.count(n) > 1})
                raise ValueError(
                    f"field_names must be unique, {dupes} occur more than once; rename them"
                )
        object.__setattr__(self, "_field_names", names)

    def get_field_names(self) -> list[str]:
        """The field names (Flink's defaults ``f0``, ``f1``, ... when none were given)."""
        if self._field_names is None:
            return [f"f{i}" for i in range(len(self._field_types))]
        return list(self._field_names)

    def get_field_index(self, field_name: str) -> int:
        """The position of ``field_name``, or -1 if there is no such field."""
        names = self.get_field_names()
        return names.index(field_name) if field_name in names else -1

    def _args(self) -> tuple[Any, ...]:
        names = None if self._field_names is None else list(self._field_names)
        return (list(self._field_types), names)

    def _key(self) -> tuple[Any, ...]:
        return ("RowTypeInfo", self._field_types)

    def _decl(self) -> str:
        types = ", ".join(t._decl() for t in self._field_types)
        if self._field_names is None:
            return f"Types.ROW([{types}])"
        return f"Types.ROW_NAMED({list(self._field_names)!r}, [{types}])"

    def __repr__(self) -> str:
        if self._field_names:
            return "RowTypeInfo({})".format(
                ", ".join(
                    f"{n}: {t}" for n, t in zip(self._field_names, self._field_types, strict=True)
                )
            )
        return "RowTypeInfo({})".format(", ".join(str(t) for t in self._field_types))

    def to_arrow_type(self) -> pa.DataType:
        return pa.struct(
            [
                pa.field(n, t.to_arrow_type(), nullable=True)
                for n, t in zip(self.get_field_names(), self._field_types, strict=True)
            ]
        )

    def _by_name(self, present: Sequence[str], lookup: Any, path: str, value: Any) -> list[Any]:
        names = self.get_field_names()
        missing = [n for n in names if n not in present]
        extra = [n for n in present if n not in names]
        if missing or extra:
            raise ValueError(
                f"{path}: {self._decl()} has the fields {names}, got {_got(value)} "
                f"(missing {missing}, not declared {extra}); emit the declared fields, or a "
                "tuple / unnamed Row to match them by position"
            )
        return [lookup(n) for n in names]

    def coerce(self, value: Any, path: str = "value") -> Row:
        kind = None
        if isinstance(value, Row):
            kind = value.get_row_kind()
            try:
                by_name: dict[str, Any] | None = value.as_dict()
            except TypeError:  # a Row without field names: matched by position
                by_name = None
            if by_name is None or list(by_name) == self.get_field_names():
                values = list(value)
            else:
                values = self._by_name(list(by_name), by_name.__getitem__, path, value)
        elif isinstance(value, (tuple, list)):
            values = list(value)
        elif isinstance(value, Mapping):
            values = self._by_name(list(value), value.__getitem__, path, value)
        else:
            raise self._wrong(value, path, "a Row", "emit a Row (or a tuple, list or dict)")
        self._check_arity(values, path, value)
        names = self.get_field_names()
        sep = "." if self._field_names is not None else None
        out = []
        for i, (name, t, v) in enumerate(zip(names, self._field_types, values, strict=True)):
            if v is None:
                out.append(None)
            else:
                out.append(t.coerce(v, f"{path}{sep}{name}" if sep else f"{path}[{i}]"))
        row = Row(*out)
        row.set_field_names(names)
        if kind is not None:
            row.set_row_kind(kind)
        return row


_PRIMITIVE = (
    BasicType.BOOLEAN,
    BasicType.BYTE,
    BasicType.SHORT,
    BasicType.INT,
    BasicType.LONG,
    BasicType.FLOAT,
    BasicType.DOUBLE,
    BasicType.CHAR,
)


def _basic_element(element_type: Any, allowed: tuple[BasicType, ...], what: str) -> Any:
    _check_type_info(element_type, "element_type")
    if (
        type(element_type) is not BasicTypeInfo or element_type._basic_type not in allowed  # type: ignore[attr-defined]
    ):
        names = ", ".join(f"Types.{b.name}()" for b in allowed)
        raise ValueError(
            f"element_type of {what} must be one of {names}, got {element_type!r}; use "
            "Types.OBJECT_ARRAY(...) or Types.LIST(...) for other element types"
        )
    return element_type


class _ElementsTypeInfo(TypeInformation):
    """Shared by the array and list types: a sequence of one element type."""

    __slots__ = ("_element_type",)
    _nullable_elements = False
    _factory = ""
    _java = ""

    def __init__(self, element_type: TypeInformation) -> None:
        object.__setattr__(self, "_element_type", _check_type_info(element_type, "element_type"))

    @property
    def element_type(self) -> TypeInformation:
        """The type of the elements."""
        return self._element_type  # type: ignore[no-any-return]

    def _args(self) -> tuple[Any, ...]:
        return (self._element_type,)

    def _decl(self) -> str:
        return f"Types.{self._factory}({self._element_type._decl()})"

    def __repr__(self) -> str:
        return f"{self._java}<{self._element_type}>"

    def to_arrow_type(self) -> pa.DataType:
        element = self._element_type.to_arrow_type()
        return pa.list_(pa.field("item", element, nullable=self._nullable_elements))

    def coerce(self, value: Any, path: str = "value") -> Any:
        if not isinstance(value, (list, tuple)):
            raise self._wrong(value, path, "a list", "emit a list of the elements")
        element = self._element_type
        out = []
        for i, v in enumerate(value):
            if v is None and self._nullable_elements:
                out.append(None)
            else:
                out.append(element.coerce(v, f"{path}[{i}]"))
        return out


class PrimitiveArrayTypeInfo(_ElementsTypeInfo):
    """``Types.PRIMITIVE_ARRAY(t)``: a ``list`` of non-null primitives (``bytes`` for BYTE).

    >>> Types.PRIMITIVE_ARRAY(Types.INT()).coerce((1, 2))
    [1, 2]
    >>> Types.PRIMITIVE_ARRAY(Types.BYTE()).coerce(bytearray(b'ab'))
    b'ab'
    """

    __slots__ = ()
    _factory = "PRIMITIVE_ARRAY"
    _java = "PrimitiveArrayTypeInfo"

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(_basic_element(element_type, _PRIMITIVE, "PRIMITIVE_ARRAY"))

    def _is_bytes(self) -> bool:
        return self._element_type._basic_type is BasicType.BYTE  # type: ignore[no-any-return]

    def to_arrow_type(self) -> pa.DataType:
        return pa.binary() if self._is_bytes() else super().to_arrow_type()

    def coerce(self, value: Any, path: str = "value") -> Any:
        if self._is_bytes():
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            raise self._wrong(value, path, "bytes", "emit bytes (or a bytearray)")
        return super().coerce(value, path)


class BasicArrayTypeInfo(_ElementsTypeInfo):
    """``Types.BASIC_ARRAY(t)``: a ``list`` of boxed basic values; elements may be None.

    >>> Types.BASIC_ARRAY(Types.STRING()).coerce(['a', None])
    ['a', None]
    """

    __slots__ = ()
    _nullable_elements = True
    _factory = "BASIC_ARRAY"
    _java = "BasicArrayTypeInfo"

    def __init__(self, element_type: TypeInformation) -> None:
        allowed = (*_PRIMITIVE, BasicType.STRING)
        super().__init__(_basic_element(element_type, allowed, "BASIC_ARRAY"))


class ObjectArrayTypeInfo(_ElementsTypeInfo):
    """``Types.OBJECT_ARRAY(t)``: a ``list`` of values of any type; elements may be None.

    >>> Types.OBJECT_ARRAY(Types.TUPLE([Types.INT()])).coerce([(1,), None])
    [(1,), None]
    """

    __slots__ = ()
    _nullable_elements = True
    _factory = "OBJECT_ARRAY"
    _java = "ObjectArrayTypeInfo"


class ListTypeInfo(_ElementsTypeInfo):
    """``Types.LIST(t)``: a ``list`` of non-null values.

    >>> Types.LIST(Types.DOUBLE()), Types.LIST(Types.DOUBLE()).coerce([1, 2.5])
    (ListTypeInfo<Double>, [1.0, 2.5])
    """

    __slots__ = ()
    _factory = "LIST"
    _java = "ListTypeInfo"

    @property
    def elem_type(self) -> TypeInformation:
        """The type of the elements (PyFlink's attribute name)."""
        return self._element_type  # type: ignore[no-any-return]


class MapTypeInfo(TypeInformation):
    """``Types.MAP(k, v)``: a ``dict``; keys are never None, values may be.

    >>> Types.MAP(Types.STRING(), Types.FLOAT()).coerce({'a': 0.1, 'b': None})
    {'a': 0.10000000149011612, 'b': None}
    """

    __slots__ = ("_key_type_info", "_value_type_info")

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        object.__setattr__(self, "_key_type_info", _check_type_info(key_type_info, "key_type_info"))
        object.__setattr__(
            self, "_value_type_info", _check_type_info(value_type_info, "value_type_info")
        )

    @property
    def key_type_info(self) -> TypeInformation:
        """The type of the keys."""
        return self._key_type_info  # type: ignore[no-any-return]

    @property
    def value_type_info(self) -> TypeInformation:
        """The type of the values."""
        return self._value_type_info  # type: ignore[no-any-return]

    def _args(self) -> tuple[Any, ...]:
        return (self._key_type_info, self._value_type_info)

    def _decl(self) -> str:
        return f"Types.MAP({self._key_type_info._decl()}, {self._value_type_info._decl()})"

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info}, {self._value_type_info}>"

    def to_arrow_type(self) -> pa.DataType:
        return pa.map_(self._key_type_info.to_arrow_type(), self._value_type_info.to_arrow_type())

    def coerce(self, value: Any, path: str = "value") -> dict[Any, Any]:
        if not isinstance(value, Mapping):
            raise self._wrong(value, path, "a dict", "emit a dict")
        key_type, value_type = self._key_type_info, self._value_type_info
        out = {}
        for k, v in value.items():
            key = key_type.coerce(k, f"a key of {path}")
            out[key] = None if v is None else value_type.coerce(v, f"{path}[{_show(k)}]")
        return out


class Types:
    """PyFlink's factories of declared types.

    >>> Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    RowTypeInfo(id: Integer, info: String)
    >>> Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()]).to_arrow_type()
    StructType(struct<f0: int64 not null, f1: string not null, f2: float not null>)
    """

    @staticmethod
    def STRING() -> TypeInformation:
        """A ``str``."""
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BYTE() -> TypeInformation:
        """An 8-bit signed int."""
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        """A ``bool``."""
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def SHORT() -> TypeInformation:
        """A 16-bit signed int."""
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT() -> TypeInformation:
        """A 32-bit signed int."""
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG() -> TypeInformation:
        """A 64-bit signed int."""
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT() -> TypeInformation:
        """A 32-bit float: values are rounded to single precision."""
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        """A 64-bit float."""
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR() -> TypeInformation:
        """A one-character ``str``."""
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        """An int (64-bit in PyFlink's Python operators)."""
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        """A ``decimal.Decimal``."""
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT() -> TypeInformation:
        """A point in time (PyFlink's ``Instant``: ``seconds`` and ``nanos``)."""
        return InstantTypeInfo(BasicType.INSTANT)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        """A ``datetime.date``."""
        return DateTypeInfo()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        """A ``datetime.time`` with millisecond precision."""
        return TimeTypeInfo()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        """A ``datetime.datetime`` with millisecond precision."""
        return TimestampTypeInfo()

    @staticmethod
    def LOCAL_DATE() -> TypeInformation:
        """A ``datetime.date`` (Java's ``LocalDate``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)

    @staticmethod
    def LOCAL_TIME() -> TypeInformation:
        """A ``datetime.time`` (Java's ``LocalTime``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)

    @staticmethod
    def LOCAL_DATE_TIME() -> TypeInformation:
        """A ``datetime.datetime`` (Java's ``LocalDateTime``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """Any picklable Python value (what an undeclared type means)."""
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        """A :class:`Row` with fields of the given types, named ``f0``, ``f1``, ..."""
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(
        field_names: Sequence[str], field_types: Sequence[TypeInformation]
    ) -> RowTypeInfo:
        """A :class:`Row` with the given field names and types."""
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TupleTypeInfo:
        """A ``tuple`` with fields of the given types."""
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of primitives (``BOOLEAN`` ... ``CHAR``); ``BYTE`` gives ``bytes``."""
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of boxed basic values (primitives or ``STRING``), which may be None."""
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of values of any type, which may be None."""
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        """A dict."""
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        """A list of non-null values."""
        return ListTypeInfo(element_type_info)
