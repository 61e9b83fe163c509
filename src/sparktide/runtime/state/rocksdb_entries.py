"""The bytes of keyed state entries in the RocksDB backend: store keys and stored values.

A store key is ``key group | key | namespace`` (:mod:`~sparktide.runtime.state.rocksdb_layout`),
and for a map state ``| map key``. Namespaces carry a one-byte tag: ``0`` to ``3`` for ``None``,
``TimeWindow``, ``GlobalWindow`` and ``CountWindow`` (fixed widths), ``4`` for any other key-like
value (its canonical key bytes), so every namespace is self-delimiting and the entries of one
``(key, namespace)`` form one contiguous range.

Stored values follow the heap backend's raw values (:mod:`~sparktide.runtime.state.heap`), each
user value serialized by the state's type information where declared, else pickled; with TTL
every user value is preceded by its 8-byte last-access timestamp:

* value, reducing, aggregating: ``[ts] value``;
* list: one store entry per element (store key ``... | namespace | seq``, ``seq`` 8 bytes from
  the backend's sequence: the elements of a list in the order they were added), its value
  ``[ts] element``: ``add`` is one write whatever the list's length (one stored value per list
  made ``add`` read and rewrite the whole list: 12,000 adds/s at 10,000 elements);
* map: one store entry per map key (store key ``... | namespace | map key``), its value
  ``[ts] seq map_key 0`` or ``[ts] seq map_key 1 value``: ``seq`` (8 bytes) numbers the entries
  in the order they were first put, so a map iterates in insertion order as on the heap; the
  map key again with its exact type; ``0`` for a ``None`` value.

>>> from sparktide.common.typeinfo import Types
>>> codec = EntryCodec("list", True, Types.LONG(), None)
>>> codec.decode_single(codec.encode_element((5, 100)))
(5, 100)
>>> codec = EntryCodec("map", True, None, None)
>>> codec.decode_map_entry(codec.encode_map_value(1, "a", (None, 7)))
('a', (None, 7))
>>> NAMESPACES.decode_value(NAMESPACES.key_bytes("w1"))
'w1'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.core.window.windows import CountWindow, GlobalWindow, TimeWindow
from sparktide.runtime.state.rocksdb_layout import (
    Codec,
    NamespaceKind,
    decode_timestamp,
    encode_timestamp,
    key_codec,
    namespace_codec,
    value_codec,
)

__all__ = ["NAMESPACES", "EntryCodec", "StateNamespaceCodec", "successor", "typed_value_codec"]

_WINDOWS = namespace_codec(NamespaceKind.ANY)
_GENERIC = key_codec(None)
_OTHER = b"\x04"
_WINDOW_TYPES = (TimeWindow, GlobalWindow, CountWindow)


class StateNamespaceCodec(Codec):
    """Namespaces of keyed state: windows and ``None`` by their fixed layout, any other value
    a key may be (``str``, ``int``, tuples, ...) by its canonical key bytes behind tag ``4``.

    >>> c = StateNamespaceCodec()
    >>> c.key_bytes(None), c.key_bytes(1) == c.key_bytes(1.0)
    (b'\\x00', True)
    """

    __slots__ = ()

    def key_bytes(self, value: Any) -> bytes:
        if value is None or type(value) in _WINDOW_TYPES:
            return _WINDOWS.key_bytes(value)
        return _OTHER + _GENERIC.key_bytes(value)

    def value_bytes(self, value: Any) -> bytes:
        return self.key_bytes(value)

    def decode_value(self, data: bytes, offset: int = 0) -> Any:
        return self.decode_value_from(data, offset)[0]

    def decode_value_from(self, data: bytes, offset: int) -> tuple[Any, int]:
        if data[offset] == 4:
            return _GENERIC.decode_key_from(data, offset + 1)
        return _WINDOWS.decode_value_from(data, offset)


NAMESPACES = StateNamespaceCodec()
"""The namespace codec of every state."""


def typed_value_codec(type_info: object) -> Codec:
    """The codec of user values of ``type_info``: by type where it is a ``TypeInformation``
    with a layout, else a pickle (also for descriptors holding anything else as type info).

    >>> typed_value_codec("not type info") is typed_value_codec(None)
    True
    """
    return value_codec(type_info if isinstance(type_info, TypeInformation) else None)


def successor(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string starting with ``prefix`` (the end
    of a prefix range; ``prefix`` is never all ``0xff`` here as it starts with a key group).

    >>> successor(b"\\x00\\x01\\xff")
    b'\\x00\\x02'
    """
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes((stripped[-1] + 1,))


class EntryCodec:
    """Raw values (the heap backend's format) to stored bytes and back, for one state."""

    __slots__ = ("kind", "map_key", "ttl", "types", "value")

    def __init__(self, kind: str, ttl: bool, value_type: object, map_key_type: object) -> None:
        self.kind = kind
        self.ttl = ttl
        declared = map_key_type if isinstance(map_key_type, TypeInformation) else None
        value_declared = value_type if isinstance(value_type, TypeInformation) else None
        # the declared types the bytes follow (value, map key): equal types, equal bytes
        self.types: tuple[TypeInformation | None, TypeInformation | None] = (
            value_declared,
            declared,
        )
        self.value = typed_value_codec(value_declared)
        self.map_key = key_codec(declared)

    def same_bytes(self, other: EntryCodec) -> bool:
        """Whether ``other`` reads and writes the same bytes for the same raw values."""
        return (self.kind, self.ttl, self.types) == (other.kind, other.ttl, other.types)

    # single values (value, reducing, aggregating)

    def encode_single(self, raw: Any) -> bytes:
        if self.ttl:
            return encode_timestamp(raw[1]) + self.value.value_bytes(raw[0])
        return self.value.value_bytes(raw)

    def decode_single(self, data: bytes) -> Any:
        if self.ttl:
            return (self.value.decode_value(data, 8), decode_timestamp(data))
        return self.value.decode_value(data)

    # lists

    def encode_element(self, element: Any) -> bytes:
        """One list element (with TTL: an ``(element, ts)`` pair); read with
        :meth:`decode_single`."""
        return self.encode_single(element)

    # map entries

    def map_key_bytes(self, map_key: Any) -> bytes:
        return self.map_key.key_bytes(map_key)

    def encode_map_value(self, seq: int, map_key: Any, raw_value: Any) -> bytes:
        """The stored value of one map entry: ``seq`` orders the entries of a map as they were
        first put (``raw_value``: ``(value, ts)`` with TTL)."""
        head = seq.to_bytes(8, "big") + self.map_key.value_bytes(map_key)
        if self.ttl:
            value = raw_value[0]
            head = encode_timestamp(raw_value[1]) + head
        else:
            value = raw_value
        if value is None:
            return head + b"\x00"
        return head + b"\x01" + self.value.value_bytes(value)

    def decode_map_entry(self, data: bytes) -> tuple[Any, Any]:
        """``(map_key, raw_value)`` of a stored map entry."""
        pos = 16 if self.ttl else 8
        map_key, pos = self.map_key.decode_value_from(data, pos)
        value = self.value.decode_value(data, pos + 1) if data[pos] else None
        if self.ttl:
            return map_key, (value, decode_timestamp(data))
        return map_key, value

    def map_seq(self, data: bytes) -> int:
        """The insertion sequence number of a stored map entry."""
        pos = 8 if self.ttl else 0
        return int.from_bytes(data[pos : pos + 8], "big")

    def decode_map(self, values: Iterable[bytes]) -> list[tuple[Any, Any]]:
        """The ``(map_key, raw_value)`` entries of one map, in insertion order."""
        return [self.decode_map_entry(d) for d in sorted(values, key=self.map_seq)]
