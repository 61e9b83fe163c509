"""The store-key prefix of the last key encoded, shared by a subtask's RocksDB state backend and
its timer queues.

A key's store-key prefix (``key group | key bytes``, see
:mod:`~sparktide.runtime.state.rocksdb_layout`) is needed by the state backend when the key
becomes current and by a timer queue when a timer of it is added or fires. Both happen for the
same key object one after the other: a record sets its key, then registers a timer; a timer
fires, then its key becomes current. A :class:`KeyPrefixSlot` remembers the last key object
encoded (by identity: no hashing, no equality) with its prefix, so each of these pairs encodes
the key once. Unlike a cache of many keys it costs the same at 10^7 distinct keys as at 10, and
holds one key.

Sharing a slot is only sound between users of one key layout (:func:`key_layout
<sparktide.runtime.state.rocksdb_layout.key_layout>`): :meth:`KeyPrefixSlot.check_layout` says so.

>>> slot = KeyPrefixSlot("canonical")
>>> key = ("user", 7)
>>> slot.prefix_of(key, 3, lambda k: b"<bytes>")
b'\\x00\\x03<bytes>'
>>> slot.prefix_of(key, 3, lambda k: b"never called")  # the same key object: remembered
b'\\x00\\x03<bytes>'
>>> slot.check_layout("Long")
Traceback (most recent call last):
...
ValueError: the key bytes of this store are laid out as 'canonical', not 'Long'; ...
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["KeyPrefixSlot"]

_NOTHING = object()


class KeyPrefixSlot:
    """The last key encoded (``key``, ``key_group``) and its store-key ``prefix``, for keys laid
    out as ``layout``. Users read the three attributes inline where it matters and set them
    after encoding a key themselves."""

    __slots__ = ("key", "key_group", "layout", "prefix")

    def __init__(self, layout: str) -> None:
        self.layout = layout
        self.key: object = _NOTHING
        self.key_group = -1
        self.prefix = b""

    def prefix_of(self, key: object, key_group: int, encode: Callable[[object], bytes]) -> bytes:
        """``key_group | encode(key)``, remembered for the object ``key``."""
        if key is self.key and key_group == self.key_group:
            return self.prefix
        prefix = key_group.to_bytes(2, "big") + encode(key)
        self.key = key
        self.key_group = key_group
        self.prefix = prefix
        return prefix

    def forget(self) -> None:
        """Remember nothing (the slot's key is released)."""
        self.key = _NOTHING
        self.key_group = -1
        self.prefix = b""

    def check_layout(self, layout: str) -> None:
        """A ValueError unless this slot's keys are laid out as ``layout``."""
        if layout != self.layout:
            raise ValueError(
                f"the key bytes of this store are laid out as {self.layout!r}, not {layout!r}; "
                "a timer factory shares the key slot of a state backend of the same key type "
                "only: create both with the same key_type"
            )

    def __repr__(self) -> str:
        return f"KeyPrefixSlot({self.layout!r})"
