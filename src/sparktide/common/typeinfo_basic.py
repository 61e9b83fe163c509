"""Basic declared types: numbers, strings, booleans, ``BigDecimal``, ``Instant``, pickled values.

>>> from sparktide.common.typeinfo import Types
>>> Types.FLOAT().coerce(110.1), Types.FLOAT().format_for_print(110.1)
(110.0999984741211, '110.1')
>>> Types.BOOLEAN().format_for_print(True), Types.DOUBLE().format_for_print(1e-05)
('true', '1.0E-5')
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from enum import Enum
from functools import partial
from typing import Any

import pyarrow as pa

from sparktide.common.java_format import (
    java_double_to_string,
    java_float_to_string,
    java_string_hash,
)
from sparktide.common.typeinfo_base import (
    Coercer,
    TypeInformation,
    got,
    is_int,
    is_numpy_bool,
    is_real,
    set_slot,
    show,
)

__all__ = ["BasicType", "BasicTypeInfo", "InstantTypeInfo", "PickledBytesTypeInfo"]

_FLOAT32 = struct.Struct("f")
_DOUBLE_BITS = struct.Struct("<q")
_FLOAT_BITS = struct.Struct("<i")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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


# low, high, the wider type to suggest
_INT_RANGES = {
    BasicType.BYTE: (-(2**7), 2**7 - 1, "SHORT"),
    BasicType.SHORT: (-(2**15), 2**15 - 1, "INT"),
    BasicType.INT: (-(2**31), 2**31 - 1, "LONG"),
    BasicType.LONG: (-(2**63), 2**63 - 1, None),
    BasicType.BIG_INT: (-(2**63), 2**63 - 1, None),
}

_ARROW_BASIC: dict[BasicType, pa.DataType] = {
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


def _java_bool(value: Any) -> str:
    return "true" if value else "false"


def _java_int(value: Any) -> str:
    return str(int(value))


def _java_decimal(value: Any) -> str:
    # Java's BigDecimal.toString and Python's str(Decimal) follow the same rules; Java has no -0.
    return str(value.copy_abs() if value.is_zero() else value)


def _java_instant(value: Any) -> str:
    """``Instant.toString()``: ISO-8601 in UTC, the fraction in groups of three digits."""
    seconds, nanos = int(value.seconds), int(value.nanos)
    days, second_of_day = divmod(seconds, 86400)
    day = _dt.date.fromordinal(_dt.date(1970, 1, 1).toordinal() + days)
    clock = _dt.time(second_of_day // 3600, second_of_day // 60 % 60, second_of_day % 60)
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03d}"
    elif nanos % 1000 == 0:
        fraction = f".{nanos // 1000:06d}"
    else:
        fraction = f".{nanos:09d}"
    return f"{day.isoformat()}T{clock.isoformat()}{fraction}Z"


def _long_hash(value: int) -> int:
    """Java's ``Long.hashCode``."""
    bits = value & 0xFFFFFFFFFFFFFFFF
    folded = (bits ^ (bits >> 32)) & 0xFFFFFFFF
    return folded - (1 << 32) if folded >> 31 else folded


def _big_integer_hash(value: int) -> int:
    """Java's ``BigInteger.hashCode``: over the 32-bit words of the magnitude, times the sign."""
    h = 0
    magnitude = abs(value)
    for shift in range((magnitude.bit_length() + 31) // 32 * 32 - 32, -1, -32):
        h = (31 * h + ((magnitude >> shift) & 0xFFFFFFFF)) & 0xFFFFFFFF
    if value < 0:
        h = -h & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


def _double_hash(value: Any) -> int:
    """Java's ``Double.hashCode`` (NaNs have one canonical bit pattern)."""
    number = float(value)
    if math.isnan(number):
        return _long_hash(0x7FF8000000000000)
    return _long_hash(_DOUBLE_BITS.unpack(struct.pack("<d", number))[0])


def _float_hash(value: Any) -> int:
    """Java's ``Float.hashCode`` (NaNs have one canonical bit pattern)."""
    number = float(value)
    if math.isnan(number):
        return 0x7FC00000
    return int(_FLOAT_BITS.unpack(struct.pack("<f", number))[0])


def _decimal_hash(value: Any) -> int:
    """Java's ``BigDecimal.hashCode``: ``31 * unscaled.hashCode() + scale``."""
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    h = (31 * _big_integer_hash(unscaled) - int(exponent)) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


def _instant_hash(value: Any) -> int:
    h = (_long_hash(int(value.seconds)) + 51 * int(value.nanos)) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


_JAVA_STRING: dict[BasicType, Callable[[Any], str]] = {
    BasicType.STRING: str,
    BasicType.CHAR: str,
    BasicType.BOOLEAN: _java_bool,
    BasicType.BYTE: _java_int,
    BasicType.SHORT: _java_int,
    BasicType.INT: _java_int,
    BasicType.LONG: _java_int,
    BasicType.BIG_INT: _java_int,
    BasicType.FLOAT: java_float_to_string,
    BasicType.DOUBLE: java_double_to_string,
    BasicType.BIG_DEC: _java_decimal,
    BasicType.INSTANT: _java_instant,
}

_JAVA_HASH: dict[BasicType, Callable[[Any], int]] = {
    BasicType.STRING: java_string_hash,
    BasicType.CHAR: ord,
    BasicType.BOOLEAN: lambda value: 1231 if value else 1237,
    BasicType.BYTE: int,
    BasicType.SHORT: int,
    BasicType.INT: int,
    BasicType.LONG: lambda value: _long_hash(int(value)),
    BasicType.BIG_INT: lambda value: _big_integer_hash(int(value)),
    BasicType.FLOAT: _float_hash,
    BasicType.DOUBLE: _double_hash,
    BasicType.BIG_DEC: _decimal_hash,
    BasicType.INSTANT: _instant_hash,
}


# the basic types whose coercer returns a value of exactly this Python type unchanged
_EXACT_TYPES = {BasicType.STRING: "str", BasicType.DOUBLE: "float", BasicType.BOOLEAN: "bool"}


def _exact_type_coercer(expected: type, general: Coercer, name: str) -> Coercer:
    """A coercer that returns a value of exactly type ``expected`` as it is and hands anything
    else to ``general`` (which converts it or explains why it cannot)."""

    def coerce_exact(value: Any, path: str = "value") -> Any:
        if type(value) is expected:
            return value
        return general(value, path)

    coerce_exact.__name__ = coerce_exact.__qualname__ = name
    return coerce_exact


class BasicTypeInfo(TypeInformation):
    """Numbers, strings, booleans, ``BigInteger``, ``BigDecimal`` and ``Instant``.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.SHORT(), Types.SHORT().coerce(7), Types.SHORT().to_arrow_type()
    (Short, 7, DataType(int16))
    >>> Types.DOUBLE().coerce(3)
    3.0
    >>> Types.DOUBLE().format_for_print(1e7), Types.LONG().format_for_print(-5)
    ('1.0E7', '-5')
    """

    __slots__ = ("_basic_type", "_coercer", "_java")
    _basic_type: BasicType
    _coercer: Coercer
    _java: Callable[[Any], str]

    def __init__(self, basic_type: BasicType) -> None:
        if not isinstance(basic_type, BasicType):
            raise TypeError(
                f"basic_type must be a BasicType, got {got(basic_type)}; use Types.INT() etc."
            )
        set_slot(self, "_basic_type", basic_type)
        set_slot(self, "_java", _JAVA_STRING[basic_type])
        set_slot(self, "_coercer", self._build_coercer())

    @property
    def basic_type(self) -> BasicType:
        """Which basic type this is."""
        return self._basic_type

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

    def java_string(self, value: Any) -> str:
        return "null" if value is None else self._java(value)

    def java_hash_code(self, value: Any) -> int:
        """Java's ``hashCode()`` of the boxed value (it orders the keys of a printed map)."""
        return _JAVA_HASH[self._basic_type](value)

    # ------------------------------------------------------------------ coercion

    def coerce(self, value: Any, path: str = "value") -> Any:
        return self._coercer(value, path)

    def coercer(self) -> Coercer:
        return self._coercer

    def exact_test(self, name: str) -> str | None:
        """The test of a value the coercer returns as it is (see :meth:`_build_coercer`).

        >>> from sparktide.common.typeinfo import Types
        >>> Types.INT().exact_test("v")
        'type(v) is int and -2147483648 <= v <= 2147483647'
        >>> Types.FLOAT().exact_test("v") is None  # rounded to 32 bits: always converted
        True
        """
        kind = self._basic_type
        if kind in _INT_RANGES:
            low, high, _ = _INT_RANGES[kind]
            return f"type({name}) is int and {low} <= {name} <= {high}"
        exact = _EXACT_TYPES.get(kind)
        return None if exact is None else f"type({name}) is {exact}"

    def _build_coercer(self) -> Coercer:
        """A function that returns values already in the right shape after one exact type
        check, and hands everything else to the general (and explaining) method."""
        kind = self._basic_type
        if kind in _INT_RANGES:
            low, high, _ = _INT_RANGES[kind]
            general_int = self._coerce_int

            def coerce_int(value: Any, path: str = "value") -> Any:
                if type(value) is int and low <= value <= high:
                    return value
                return general_int(value, path)

            return coerce_int
        if kind is BasicType.STRING:
            return _exact_type_coercer(str, self._coerce_str, "coerce_str")
        if kind is BasicType.FLOAT:
            general_float = self._coerce_float
            pack, unpack, isinf = _FLOAT32.pack, _FLOAT32.unpack, math.isinf

            def coerce_float32(value: Any, path: str = "value") -> Any:
                if type(value) is float:
                    rounded = unpack(pack(value))[0]
                    if not isinf(rounded) or isinf(value):
                        return rounded
                return general_float(value, path)

            return coerce_float32
        if kind is BasicType.DOUBLE:
            return _exact_type_coercer(float, self._coerce_float, "coerce_double")
        if kind is BasicType.BOOLEAN:
            return _exact_type_coercer(bool, self._coerce_bool, "coerce_bool")
        if kind is BasicType.CHAR:
            return self._coerce_char
        if kind is BasicType.BIG_DEC:
            return self._coerce_decimal
        return self._coerce_instant

    def _coerce_int(self, value: Any, path: str) -> int:
        low, high, wider = _INT_RANGES[self._basic_type]
        if not is_int(value):
            fix = (
                "round it explicitly with int(...) (PyFlink would truncate it silently)"
                if is_real(value)
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
                f"{path}: {self._decl()} holds an int in [{low}, {high}], got {got(value)}; {fix}"
            )
        return number

    def _coerce_str(self, value: Any, path: str) -> str:
        if isinstance(value, str):
            return value
        raise self._wrong(value, path, "a str", "convert it with str(...)")

    def _coerce_bool(self, value: Any, path: str) -> bool:
        if isinstance(value, bool) or is_numpy_bool(value):
            return bool(value)
        raise self._wrong(value, path, "a bool", "convert it with bool(...)")

    def _coerce_char(self, value: Any, path: str = "value") -> str:
        if isinstance(value, str) and len(value) == 1:
            return value
        if isinstance(value, str):
            raise ValueError(
                f"{path}: {self._decl()} holds a single character, got a str of length "
                f"{len(value)} ({show(value)}); declare Types.STRING() for text"
            )
        raise self._wrong(value, path, "a one-character str", "pass a str of length 1")

    def _coerce_float(self, value: Any, path: str) -> float:
        if not is_real(value):
            raise self._wrong(value, path, "a float (or int)", "convert it with float(...)")
        double = self._basic_type is BasicType.DOUBLE
        try:
            number: float | None = float(value)
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
                f"{path}: {self._decl()} holds a {bits}-bit float, got {got(value)}, which is "
                f"out of its range; {fix}"
            )
        return number

    def _coerce_decimal(self, value: Any, path: str = "value") -> Decimal:
        if not (isinstance(value, Decimal) or is_real(value)):
            raise self._wrong(value, path, "a Decimal (or int or float)", "pass a decimal.Decimal")
        result = value if isinstance(value, Decimal) else Decimal(str(value))
        if not result.is_finite():
            raise ValueError(
                f"{path}: {self._decl()} holds a finite decimal, got {got(value)}; "
                "replace NaN/infinity before emitting it"
            )
        return result

    def _coerce_instant(self, value: Any, path: str = "value") -> Any:
        seconds = getattr(value, "seconds", None)
        nanos = getattr(value, "nanos", None)
        if is_int(seconds) and is_int(nanos) and 0 <= nanos < 10**9:  # type: ignore[operator]
            return value
        raise self._wrong(
            value,
            path,
            "an Instant (an object with int .seconds and .nanos in [0, 1e9))",
            "pass an Instant, e.g. Instant.of_epoch_milli(ms)",
        )


class InstantTypeInfo(BasicTypeInfo):
    """``Types.INSTANT()``: a point in time with nanosecond precision (PyFlink's ``Instant``).

    Printed as Java's ``Instant.toString()``:

    >>> from types import SimpleNamespace
    >>> from sparktide.common.typeinfo import Types
    >>> Types.INSTANT().format_for_print(SimpleNamespace(seconds=1577934245, nanos=6000000))
    '2020-01-02T03:04:05.006Z'
    """

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


def _identity(value: Any, path: str = "value") -> Any:
    return value


class PickledBytesTypeInfo(TypeInformation):
    """``Types.PICKLED_BYTE_ARRAY()``: any picklable Python value, handed back unchanged.

    ``print()`` shows Python's ``str(value)``, as for a stream without a declared type:

    >>> from sparktide.common.typeinfo import Types
    >>> Types.PICKLED_BYTE_ARRAY().coerce({'any': [1, None]}), Types.PICKLED_BYTE_ARRAY()
    ({'any': [1, None]}, PickledByteArrayTypeInfo)
    >>> Types.PICKLED_BYTE_ARRAY().format_for_print(('Alice', 110.1))
    "('Alice', 110.1)"
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

    def coercer(self) -> Coercer:
        return _identity

    def format_for_print(self, value: Any) -> str:
        return str(value)
