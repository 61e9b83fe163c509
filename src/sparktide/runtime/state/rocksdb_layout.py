"""The byte layout of keyed state and timers in an ordered key-value store (Flink's RocksDB
layout).

A state entry's store key is ``key group (2 bytes, big-endian) | key | namespace``: all entries of
one key group form one contiguous range of the store (restore, rescaling and cleanup work by
range), and inside it all entries of one key are contiguous too. Timestamps are 8 bytes
big-endian with the sign bit flipped, so the byte order of the store is the numeric order,
negative timestamps included.

Values become bytes through a :class:`Codec`:

* :meth:`Codec.key_bytes`: the bytes that *identify* a value inside a store key. Deterministic
  and faithful to Python equality: values the heap backend treats as one key (``1``, ``1.0`` and
  ``True``; ``0.0`` and ``-0.0``; a ``str`` subclass and its plain ``str``; a named tuple and its
  plain tuple) give the same bytes, values it treats as different keys give different bytes.
  Every encoding is self-delimiting (fixed width, or length-prefixed), so the bytes of one value
  are never a proper prefix of another's: ``key | namespace`` never aliases.
* :meth:`Codec.value_bytes` / :meth:`Codec.decode_value`: a round trip that gives back an equal
  value of the same type (``True`` stays ``True``), for the key a timer fires with and for state
  values.

:func:`key_codec` and :func:`value_codec` pick the codec from the declared type information
(``Types.LONG()``, ``Types.STRING()``, ``Types.TUPLE(...)``, ``Types.ROW(...)``, ...); undeclared
keys use the canonical encoding of the key types key groups support (``None``, ``bool``,
``int``, ``float``, ``str``, ``bytes`` and tuples of them), undeclared values a pickle.
:func:`namespace_codec` gives the fixed encodings of window namespaces.

>>> from sparktide.common.typeinfo import Types
>>> codec = key_codec(None)
>>> codec.key_bytes(1) == codec.key_bytes(1.0) == codec.key_bytes(True)
True
>>> codec.decode_value(codec.value_bytes(True))
True
>>> key_codec(Types.LONG()).key_bytes(-1).hex()
'7fffffffffffffff'
>>> state_key(3, key_codec(Types.STRING()).key_bytes("k"), b"").hex()
'0003000000016b'
>>> encode_timestamp(-1) < encode_timestamp(0) < encode_timestamp(2**40)
True
"""

from __future__ import annotations

import math
import numbers
import operator
import pickle
import reprlib
import struct
from abc import ABC, abstractmethod
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any

from sparktide.common.row_kind import RowKind
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo, PickledBytesTypeInfo
from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from sparktide.common.types import Row
from sparktide.core.window.windows import CountWindow, GlobalWindow, TimeWindow
from sparktide.runtime.keygroups import UPPER_BOUND_MAX_PARALLELISM, KeyGroupRange

__all__ = [
    "KEY_GROUP_PREFIX_BYTES",
    "TIMESTAMP_BYTES",
    "Codec",
    "NamespaceKind",
    "decode_timestamp",
    "encode_timestamp",
    "fixed_number_dtype",
    "key_codec",
    "key_group_bounds",
    "key_group_of",
    "key_group_prefix",
    "key_layout",
    "namespace_codec",
    "state_key",
    "value_codec",
]

KEY_GROUP_PREFIX_BYTES = 2
"""Bytes of the key-group prefix (max parallelism is at most 32768 = 2**15)."""

TIMESTAMP_BYTES = 8
"""Bytes of a timestamp (a Java long)."""

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_SIGN = 2**63
_LEN = struct.Struct(">I")
_DOUBLE = struct.Struct(">d")
_FLOAT = struct.Struct(">f")
_CANONICAL_NAN = _DOUBLE.pack(math.nan)
_PICKLE_PROTOCOL = 5

# --------------------------------------------------------------------------------------------
# key groups and timestamps
# --------------------------------------------------------------------------------------------


def key_group_prefix(key_group: int) -> bytes:
    """The 2-byte big-endian prefix of ``key_group`` (``0 <= key_group < 32768``).

    >>> key_group_prefix(258).hex()
    '0102'
    """
    if type(key_group) is not int or not 0 <= key_group < UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(
            f"key_group must be an int in [0, {UPPER_BOUND_MAX_PARALLELISM}), got "
            f"{reprlib.repr(key_group)}; key groups come from assign_to_key_group"
        )
    return key_group.to_bytes(2, "big")


def key_group_of(store_key: bytes) -> int:
    """The key group a store key belongs to (its first two bytes).

    >>> key_group_of(b"\\x01\\x02rest")
    258
    """
    return int.from_bytes(store_key[:2], "big")


def key_group_bounds(key_groups: KeyGroupRange) -> tuple[bytes, bytes]:
    """``[begin, end)`` of the store keys of ``key_groups``: one contiguous range.

    >>> key_group_bounds(KeyGroupRange(0, 127))
    (b'\\x00\\x00', b'\\x00\\x80')
    """
    if len(key_groups) == 0:
        return b"\x00\x00", b"\x00\x00"
    return key_group_prefix(key_groups.start), (key_groups.end + 1).to_bytes(2, "big")


def encode_timestamp(timestamp: int) -> bytes:
    """8 bytes big-endian with the sign bit flipped: byte order equals numeric order.

    >>> encode_timestamp(-2**63).hex(), encode_timestamp(0).hex()
    ('0000000000000000', '8000000000000000')
    """
    if type(timestamp) is not int or not _LONG_MIN <= timestamp <= _LONG_MAX:
        integral = isinstance(timestamp, numbers.Integral) and not isinstance(timestamp, bool)
        if integral and type(timestamp) is not int:  # NumPy ints, IntEnum
            return encode_timestamp(operator.index(timestamp))
        raise ValueError(
            f"timestamp must be an int in [{_LONG_MIN}, {_LONG_MAX}] (milliseconds, a Java "
            f"long), got {reprlib.repr(timestamp)}"
        )
    return (timestamp + _SIGN).to_bytes(8, "big")


def decode_timestamp(data: bytes, offset: int = 0) -> int:
    """The timestamp stored at ``data[offset:offset + 8]``.

    >>> decode_timestamp(encode_timestamp(-5))
    -5
    """
    return int.from_bytes(data[offset : offset + 8], "big") - _SIGN


def state_key(key_group: int, key_bytes: bytes, namespace_bytes: bytes) -> bytes:
    """The store key of a state entry: ``key group | key | namespace``.

    >>> state_key(1, b"K", b"N")
    b'\\x00\\x01KN'
    """
    return key_group_prefix(key_group) + key_bytes + namespace_bytes


# --------------------------------------------------------------------------------------------
# codecs
# --------------------------------------------------------------------------------------------


class Codec(ABC):
    """Turns values of one kind into bytes and back (see the module's docstring)."""

    __slots__ = ()

    value_bytes_are_key_bytes = False
    """True when :meth:`value_bytes` equals :meth:`key_bytes` for every value (typed codecs)."""

    @abstractmethod
    def key_bytes(self, value: Any) -> bytes:
        """Deterministic, equality-faithful, self-delimiting bytes identifying ``value``."""

    @abstractmethod
    def value_bytes(self, value: Any) -> bytes:
        """Self-delimiting bytes :meth:`decode_value` turns back into an equal value."""

    @abstractmethod
    def decode_value(self, data: bytes, offset: int = 0) -> Any:
        """The value whose :meth:`value_bytes` start at ``data[offset]``."""

    @abstractmethod
    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        """The value at ``data[offset]`` and the offset after its bytes."""

    def decode_key_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        """The value whose :meth:`key_bytes` start at ``data[offset]`` (for undeclared keys the
        canonical value: ``1.0`` and ``True`` come back as ``1``) and the offset after them."""
        return self.decode_value_from(data, offset)


class _ExactCodec(Codec):
    """A codec whose key bytes are its value bytes (typed values: one shape per value)."""

    __slots__ = ()

    value_bytes_are_key_bytes = True

    def value_bytes(self, value: Any) -> bytes:
        return self.key_bytes(value)

    def decode_value(self, data: bytes, offset: int = 0) -> Any:
        return self.decode_value_from(data, offset)[0]


def _length_prefixed(raw: bytes) -> bytes:
    return _LEN.pack(len(raw)) + raw


def _read_length_prefixed(data: bytes, offset: int) -> tuple[bytes, int]:
    (n,) = _LEN.unpack_from(data, offset)
    start = offset + 4
    return data[start : start + n], start + n


def _double_bytes(value: float) -> bytes:
    """IEEE 754 big-endian; ``-0.0`` as ``0.0`` and every NaN as one NaN (equal keys, equal
    bytes)."""
    if value == 0.0:
        value = 0.0
    elif value != value:
        return _CANONICAL_NAN
    return _DOUBLE.pack(value)


class _IntCodec(_ExactCodec):
    """Fixed-width two's complement with the sign bit flipped (byte order == numeric order)."""

    __slots__ = ("_coerce", "_offset", "_width")

    def __init__(self, type_info: BasicTypeInfo, width: int) -> None:
        self._coerce = type_info.coercer()
        self._width = width
        self._offset = 1 << (8 * width - 1)

    def key_bytes(self, value: Any) -> bytes:
        return int(self._coerce(value) + self._offset).to_bytes(self._width, "big")

    value_bytes = key_bytes  # state values: one call, not two

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        end = offset + self._width
        return int.from_bytes(data[offset:end], "big") - self._offset, end

    def decode_value(self, data: bytes, offset: int = 0) -> Any:
        if offset == 0 and len(data) == self._width:  # a stored value: all of ``data``
            return int.from_bytes(data, "big") - self._offset
        return int.from_bytes(data[offset : offset + self._width], "big") - self._offset


class _FloatCodec(_ExactCodec):
    __slots__ = ("_coerce", "_double")

    def __init__(self, type_info: BasicTypeInfo, double: bool) -> None:
        self._coerce = type_info.coercer()
        self._double = double

    def key_bytes(self, value: Any) -> bytes:
        v = self._coerce(value)
        if self._double:
            return _double_bytes(v)
        return _FLOAT.pack(0.0 if v == 0.0 else v) if v == v else _FLOAT.pack(math.nan)

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        if self._double:
            return _DOUBLE.unpack_from(data, offset)[0], offset + 8
        return _FLOAT.unpack_from(data, offset)[0], offset + 4


class _BoolCodec(_ExactCodec):
    __slots__ = ("_coerce",)

    def __init__(self, type_info: BasicTypeInfo) -> None:
        self._coerce = type_info.coercer()

    def key_bytes(self, value: Any) -> bytes:
        return b"\x01" if self._coerce(value) else b"\x00"

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return data[offset] == 1, offset + 1


class _StringCodec(_ExactCodec):
    """4-byte length, then UTF-8 (lone surrogates pass through, as in Java strings)."""

    __slots__ = ("_coerce",)

    def __init__(self, type_info: BasicTypeInfo) -> None:
        self._coerce = type_info.coercer()

    def key_bytes(self, value: Any) -> bytes:
        s = self._coerce(value)
        return _length_prefixed(str.__str__(s).encode("utf-8", "surrogatepass"))

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        raw, end = _read_length_prefixed(data, offset)
        return raw.decode("utf-8", "surrogatepass"), end


class _TupleCodec(_ExactCodec):
    """The fields one after the other (each self-delimiting)."""

    __slots__ = ("_coerce", "_fields")

    def __init__(self, type_info: TupleTypeInfo, fields: list[Codec]) -> None:
        self._coerce = type_info.coercer()
        self._fields = fields

    def key_bytes(self, value: Any) -> bytes:
        return b"".join(
            f.key_bytes(v) for f, v in zip(self._fields, self._coerce(value), strict=True)
        )

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        values = []
        for f in self._fields:
            v, offset = f.decode_value_from(data, offset)
            values.append(v)
        return tuple(values), offset


class _RowCodec(_ExactCodec):
    """The row kind (1 byte), then per field a null flag (1 byte) and the field."""

    __slots__ = ("_coerce", "_fields", "_names")

    def __init__(self, type_info: RowTypeInfo, fields: list[Codec]) -> None:
        self._coerce = type_info.coercer()
        self._fields = fields
        self._names = type_info.get_field_names()

    def key_bytes(self, value: Any) -> bytes:
        row: Row = self._coerce(value)
        parts = [bytes((row.get_row_kind().value,))]
        for f, v in zip(self._fields, row.get_fields_by_names(self._names), strict=True):
            parts.append(b"\x00" if v is None else b"\x01" + f.key_bytes(v))
        return b"".join(parts)

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        kind = RowKind(data[offset])
        offset += 1
        values = []
        for f in self._fields:
            present = data[offset]
            offset += 1
            if present:
                v, offset = f.decode_value_from(data, offset)
            else:
                v = None
            values.append(v)
        return Row.of_values(values, self._names, kind), offset


def fixed_number_dtype(codec: Codec) -> str | None:
    """The NumPy dtype of the bytes of ``codec`` where it lays out fixed-width numbers (a
    declared integer type: ``">u<width>"``, two's complement with the sign bit flipped; a
    declared floating-point type: ``">f<width>"``), ``None`` for any other codec.

    >>> from sparktide.common.typeinfo import Types
    >>> [fixed_number_dtype(key_codec(t)) for t in (Types.LONG(), Types.FLOAT(), None)]
    ['>u8', '>f4', None]
    """
    if isinstance(codec, _IntCodec):
        return f">u{codec._width}"
    if isinstance(codec, _FloatCodec):
        return ">f8" if codec._double else ">f4"
    return None


# The canonical encoding of undeclared keys: a type tag, then fixed-width or length-prefixed
# bytes. Integral floats and bools are encoded as the int they equal.
_TAG_NONE, _TAG_INT, _TAG_FLOAT, _TAG_STR, _TAG_BYTES, _TAG_TUPLE = b"NIFSBT"
_SUPPORTED = "None, bool, int, float, str, bytes or (nested) tuples of these"


def _unsupported_key(value: object) -> TypeError:
    name = type(value).__name__
    fix = (
        "convert it to a tuple, e.g. tuple(key)"
        if isinstance(value, list)
        else "key by a tuple of the fields that identify it, or declare the key's type "
        "information (e.g. Types.ROW(...)) so that it is serialized by type"
    )
    return TypeError(
        f"unsupported key type {name} ({reprlib.repr(value)}): keys without declared type "
        f"information must be {_SUPPORTED}; {fix}"
    )


def _plain(value: Any) -> Any:
    """The builtin value equal to a subclass instance or NumPy scalar of a supported type."""
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, tuple) and not isinstance(value, Row):
        return tuple(value)
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        item = value.item()
        if item is None or isinstance(item, (bool, int, float, str, bytes)):
            return item
    elif isinstance(value, numbers.Integral):
        return operator.index(value)
    raise _unsupported_key(value)


def _canonical(value: Any, out: list[bytes]) -> None:
    t = type(value)
    if t is str:
        out.append(b"S" + _length_prefixed(value.encode("utf-8", "surrogatepass")))
    elif t is int or t is bool:
        v = int(value)
        out.append(
            b"I" + _length_prefixed(v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True))
        )
    elif t is float:
        if value.is_integer():
            _canonical(int(value), out)
        else:
            out.append(b"F" + _double_bytes(value))
    elif t is tuple:
        out.append(b"T" + _LEN.pack(len(value)))
        for item in value:
            _canonical(item, out)
    elif t is bytes:
        out.append(b"B" + _length_prefixed(value))
    elif value is None:
        out.append(b"N")
    else:
        _canonical(_plain(value), out)


def _decode_canonical(data: bytes, offset: int) -> tuple[Any, int]:
    tag = data[offset]
    offset += 1
    if tag == _TAG_STR:
        raw, offset = _read_length_prefixed(data, offset)
        return raw.decode("utf-8", "surrogatepass"), offset
    if tag == _TAG_INT:
        raw, offset = _read_length_prefixed(data, offset)
        return int.from_bytes(raw, "big", signed=True), offset
    if tag == _TAG_FLOAT:
        return _DOUBLE.unpack_from(data, offset)[0], offset + 8
    if tag == _TAG_TUPLE:
        (n,) = _LEN.unpack_from(data, offset)
        offset += 4
        items = []
        for _ in range(n):
            item, offset = _decode_canonical(data, offset)
            items.append(item)
        return tuple(items), offset
    if tag == _TAG_BYTES:
        return _read_length_prefixed(data, offset)
    if tag == _TAG_NONE:
        return None, offset
    raise ValueError(f"corrupt key bytes: unknown type tag {tag} at offset {offset - 1}")


# The exact encoding (value bytes of undeclared keys): the canonical one for builtins of exactly
# these types, with bools and floats tagged as themselves; anything else (IntEnum, named tuples,
# NumPy scalars) pickled.
_EXACT_TRUE, _EXACT_FALSE, _EXACT_FLOAT, _EXACT_PICKLE = b"10fP"


def _exact(value: Any, out: list[bytes]) -> None:
    t = type(value)
    if t is str or t is int or t is bytes or value is None:
        _canonical(value, out)
    elif t is bool:
        out.append(b"1" if value else b"0")
    elif t is float:
        out.append(b"f" + _DOUBLE.pack(value))
    elif t is tuple:
        out.append(b"T" + _LEN.pack(len(value)))
        for item in value:
            _exact(item, out)
    else:
        out.append(b"P" + _length_prefixed(pickle.dumps(value, protocol=_PICKLE_PROTOCOL)))


def _decode_exact(data: bytes, offset: int) -> tuple[Any, int]:
    tag = data[offset]
    if tag == _EXACT_TRUE:
        return True, offset + 1
    if tag == _EXACT_FALSE:
        return False, offset + 1
    if tag == _EXACT_FLOAT:
        return _DOUBLE.unpack_from(data, offset + 1)[0], offset + 9
    if tag == _EXACT_PICKLE:
        raw, end = _read_length_prefixed(data, offset + 1)
        return pickle.loads(raw), end
    if tag == _TAG_TUPLE:
        (n,) = _LEN.unpack_from(data, offset + 1)
        offset += 5
        items = []
        for _ in range(n):
            item, offset = _decode_exact(data, offset)
            items.append(item)
        return tuple(items), offset
    return _decode_canonical(data, offset)


class _GenericKeyCodec(Codec):
    """Undeclared keys: canonical key bytes, exact (type-keeping) value bytes.

    >>> c = _GenericKeyCodec()
    >>> c.key_bytes(("a", 1.0)) == c.key_bytes(("a", 1)), c.decode_value(c.value_bytes(("a", 1.0)))
    (True, ('a', 1.0))
    """

    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if type(value) is str:  # the common keys, without the general dispatch
            raw = value.encode("utf-8", "surrogatepass")
            return b"S" + _LEN.pack(len(raw)) + raw
        if type(value) is int:
            n = (value.bit_length() + 8) // 8
            return b"I" + _LEN.pack(n) + value.to_bytes(n, "big", signed=True)
        out: list[bytes] = []
        _canonical(value, out)
        return b"".join(out)

    def value_bytes(self, value: Any) -> bytes:
        t = type(value)
        if t is str or t is int:  # exact and canonical bytes agree
            return self.key_bytes(value)
        out: list[bytes] = []
        _exact(value, out)
        return b"".join(out)

    def decode_value(self, data: bytes, offset: int = 0) -> Any:
        return _decode_exact(data, offset)[0]

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return _decode_exact(data, offset)

    def decode_key(self, data: bytes, offset: int = 0) -> Any:
        """The canonical value of key bytes (``1.0`` and ``True`` come back as ``1``)."""
        return _decode_canonical(data, offset)[0]

    def decode_key_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return _decode_canonical(data, offset)


class _PickleCodec(_ExactCodec):
    """Values without usable type information: a length-prefixed pickle (values only)."""

    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        return _length_prefixed(pickle.dumps(value, protocol=_PICKLE_PROTOCOL))

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        raw, end = _read_length_prefixed(data, offset)
        return pickle.loads(raw), end


_INT_WIDTHS: Mapping[BasicType, int] = MappingProxyType(
    {
        BasicType.BYTE: 1,
        BasicType.SHORT: 2,
        BasicType.INT: 4,
        BasicType.LONG: 8,
        BasicType.BIG_INT: 8,
    }
)


def _typed_codec(type_info: TypeInformation) -> Codec | None:
    """The codec of a declared type, or None where the type has no layout of its own."""
    if isinstance(type_info, BasicTypeInfo):
        kind = type_info.basic_type
        if kind in _INT_WIDTHS:
            return _IntCodec(type_info, _INT_WIDTHS[kind])
        if kind in (BasicType.DOUBLE, BasicType.FLOAT):
            return _FloatCodec(type_info, kind is BasicType.DOUBLE)
        if kind is BasicType.BOOLEAN:
            return _BoolCodec(type_info)
        if kind in (BasicType.STRING, BasicType.CHAR):
            return _StringCodec(type_info)
        return None
    if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)):
        fields = [_typed_codec(t) for t in type_info.get_field_types()]
        if any(f is None for f in fields):
            return None
        typed = [f for f in fields if f is not None]
        if isinstance(type_info, RowTypeInfo):
            return _RowCodec(type_info, typed)
        return _TupleCodec(type_info, typed)
    return None


_GENERIC_KEYS = _GenericKeyCodec()
_PICKLED = _PickleCodec()


def _declared(type_info: object) -> TypeInformation | None:
    """``type_info`` when it declares a type (None for no type and for pickled values); an
    error naming the fix for anything that is not type information."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return None
    if not isinstance(type_info, TypeInformation):
        raise TypeError(
            f"type_info must be a TypeInformation (e.g. Types.LONG()) or None, got "
            f"{type(type_info).__name__}"
        )
    return type_info


def key_codec(type_info: TypeInformation | None) -> Codec:
    """The codec of keys of the declared ``type_info`` (None: undeclared).

    Basic types, tuples and rows of them are serialized by type; undeclared keys, and keys of
    ``PICKLED_BYTE_ARRAY`` or of types without a layout of their own, use the canonical
    encoding (keys must then be ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes`` or
    tuples of these, as for key groups).

    >>> from sparktide.common.typeinfo import Types
    >>> key_codec(Types.TUPLE([Types.STRING(), Types.INT()])).key_bytes(["a", 1]).hex()
    '000000016180000001'
    >>> key_codec(None).key_bytes([1])
    Traceback (most recent call last):
    ...
    TypeError: unsupported key type list ([1]): keys without declared type information must be \
None, bool, int, float, str, bytes or (nested) tuples of these; convert it to a tuple, e.g. \
tuple(key)
    """
    declared = _declared(type_info)
    return _GENERIC_KEYS if declared is None else _typed_codec(declared) or _GENERIC_KEYS


def key_layout(type_info: TypeInformation | None) -> str:
    """The name of the byte layout :func:`key_codec` gives keys of ``type_info``: the declared
    type where it has a layout of its own, else ``"canonical"``. A database records it, so
    that store keys written in one layout are never read in another.

    >>> from sparktide.common.typeinfo import Types
    >>> key_layout(Types.LONG()), key_layout(None), key_layout(Types.PICKLED_BYTE_ARRAY())
    ('Long', 'canonical', 'canonical')
    >>> key_layout(Types.TUPLE([Types.STRING(), Types.INT()]))
    'TupleTypeInfo(String, Integer)'
    """
    declared = _declared(type_info)
    if declared is None or _typed_codec(declared) is None:
        return "canonical"
    return repr(declared)


def value_codec(type_info: TypeInformation | None) -> Codec:
    """The codec of state values of the declared ``type_info``: by type where it has a layout,
    else a pickle.

    >>> from sparktide.common.typeinfo import Types
    >>> value_codec(Types.DOUBLE()).value_bytes(1).hex()
    '3ff0000000000000'
    >>> c = value_codec(None)
    >>> c.decode_value(c.value_bytes({"a": [1]}))
    {'a': [1]}
    """
    declared = _declared(type_info)
    return _PICKLED if declared is None else _typed_codec(declared) or _PICKLED


# --------------------------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------------------------


class NamespaceKind(Enum):
    """The namespace kinds with a fixed layout (see :func:`namespace_codec`)."""

    VOID = "void"
    """User timers and state: the namespace is ``None`` (no bytes)."""
    TIME_WINDOW = "time_window"
    """:class:`TimeWindow`: start and end, 8 bytes each (sign bit flipped)."""
    GLOBAL_WINDOW = "global_window"
    """:class:`GlobalWindow`: no bytes (there is one)."""
    COUNT_WINDOW = "count_window"
    """:class:`CountWindow`: its id, 8 bytes."""
    ANY = "any"
    """Any of these, behind a one-byte tag (a queue that does not know its namespaces)."""


def _wrong_namespace(value: object, wants: str) -> TypeError:
    return TypeError(
        f"namespace must be {wants}, got {type(value).__name__} ({reprlib.repr(value)}); "
        "the store has layouts for None, TimeWindow, GlobalWindow and CountWindow only (keep "
        "state with other namespaces on the heap backend)"
    )


class _VoidNamespace(_ExactCodec):
    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if value is not None:
            raise _wrong_namespace(value, "None")
        return b""

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return None, offset


class _TimeWindowNamespace(_ExactCodec):
    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if type(value) is not TimeWindow:
            raise _wrong_namespace(value, "a TimeWindow")
        return encode_timestamp(value[0]) + encode_timestamp(value[1])

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        start = decode_timestamp(data, offset)
        return TimeWindow(start, decode_timestamp(data, offset + 8)), offset + 16


class _GlobalWindowNamespace(_ExactCodec):
    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if not isinstance(value, GlobalWindow):
            raise _wrong_namespace(value, "the GlobalWindow")
        return b""

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return GlobalWindow(), offset


class _CountWindowNamespace(_ExactCodec):
    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if type(value) is not CountWindow:
            raise _wrong_namespace(value, "a CountWindow")
        return encode_timestamp(value[0])

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return CountWindow(decode_timestamp(data, offset)), offset + 8


class _StrNamespace(_ExactCodec):
    """A str namespace (an operator's own timers, e.g. the interval join's cleanup timers):
    length-prefixed UTF-8."""

    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if type(value) is not str:
            raise _wrong_namespace(value, "a str")
        return _length_prefixed(value.encode("utf-8", "surrogatepass"))

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        raw, offset = _read_length_prefixed(data, offset)
        return raw.decode("utf-8", "surrogatepass"), offset


class _AnyNamespace(_ExactCodec):
    """A tag byte (0 None, 1 TimeWindow, 2 GlobalWindow, 3 CountWindow, 4 str), then the
    bytes of the namespace.

    >>> c = _AnyNamespace()
    >>> [c.decode_value(c.key_bytes(ns)) for ns in (None, TimeWindow(0, 5), GlobalWindow())]
    [None, TimeWindow(start=0, end=5), GlobalWindow]
    >>> c.decode_value(c.key_bytes("CLEANUP_LEFT"))
    'CLEANUP_LEFT'
    """

    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if value is None:
            return b"\x00"
        t = type(value)
        if t is TimeWindow:
            return b"\x01" + encode_timestamp(value[0]) + encode_timestamp(value[1])
        if t is GlobalWindow:
            return b"\x02"
        if t is CountWindow:
            return b"\x03" + encode_timestamp(value[0])
        if t is str:
            return b"\x04" + _STR_NAMESPACE.key_bytes(value)
        raise _wrong_namespace(
            value, "None, a TimeWindow, the GlobalWindow, a CountWindow or a str"
        )

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        return _BY_TAG[data[offset]].decode_value_from(data, offset + 1)


_NAMESPACES: Mapping[NamespaceKind, Codec] = MappingProxyType(
    {
        NamespaceKind.VOID: _VoidNamespace(),
        NamespaceKind.TIME_WINDOW: _TimeWindowNamespace(),
        NamespaceKind.GLOBAL_WINDOW: _GlobalWindowNamespace(),
        NamespaceKind.COUNT_WINDOW: _CountWindowNamespace(),
        NamespaceKind.ANY: _AnyNamespace(),
    }
)
_STR_NAMESPACE = _StrNamespace()
_BY_TAG: tuple[Codec, ...] = (
    *(
        _NAMESPACES[k]
        for k in (
            NamespaceKind.VOID,
            NamespaceKind.TIME_WINDOW,
            NamespaceKind.GLOBAL_WINDOW,
            NamespaceKind.COUNT_WINDOW,
        )
    ),
    _STR_NAMESPACE,
)


def namespace_codec(kind: NamespaceKind = NamespaceKind.ANY) -> Codec:
    """The fixed-bytes codec of the namespaces of ``kind``.

    >>> namespace_codec(NamespaceKind.TIME_WINDOW).key_bytes(TimeWindow(-1, 1)).hex()
    '7fffffffffffffff8000000000000001'
    >>> namespace_codec(NamespaceKind.VOID).key_bytes(None)
    b''
    """
    if not isinstance(kind, NamespaceKind):
        raise TypeError(
            f"kind must be a NamespaceKind, got {type(kind).__name__} ({reprlib.repr(kind)}); "
            f"use one of {[k.name for k in NamespaceKind]}, e.g. NamespaceKind.TIME_WINDOW"
        )
    return _NAMESPACES[kind]
