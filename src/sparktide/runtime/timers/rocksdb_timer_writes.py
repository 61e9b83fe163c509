"""The writes of a timer queue not yet in its store, and reads that see them.

A queue's puts and deletes collect in one RocksDB write batch, written every ``flush_every``
index changes, before a scan, and before a refill whose key group the batch changes. Until
then:

* the *overlay* maps every index key the batch changes to its seq bytes (None: deleted), so
  lookups in the index see the pending changes without a write;
* per key group a *floor*: a store key at or below its first timer, where refills seek. A poll
  deletes its key group's first timer and moves the floor just past it, so refills skip the
  polled timers whose deletes are still pending: they never force a write;
* the *dirty* key groups: those whose timers the batch changes at or above their floor (adds and
  removals); a refill of one writes the batch first.

>>> import tempfile
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.rocksdb_layout import key_codec, namespace_codec
>>> from sparktide.runtime.timers.rocksdb_timer_store import TimerStore, timer_key
>>> store = TimerStore.open(
...     KeyGroupRange(0, 0), key_codec(None), namespace_codec(), directory=tempfile.mkdtemp())
>>> writes = PendingTimerWrites(store, flush_every=1024)
>>> value = store.keys.value_bytes("a") + store.namespaces.value_bytes(None)
>>> index_key = b"\\x00\\x00" + value + encode_timestamp(5)
>>> writes.put(0, timer_key(b"\\x00\\x00", encode_timestamp(5), 0), value, index_key, bytes(8))
>>> writes.index_row(index_key), store.index_row(index_key)  # pending: not in the store yet
(b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00', None)
>>> writes.read_head(0, 10)  # a refill of a dirty key group writes the batch first
[(5, 0, 'a', None, 0)]
>>> store.dispose()
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, cast

from rocksdict import ColumnFamily, WriteBatch

from sparktide.runtime.state.rocksdb_layout import encode_timestamp
from sparktide.runtime.timers.queue import K, N, TimerEntry
from sparktide.runtime.timers.rocksdb_timer_store import CLOSED, TimerStore, timer_key

__all__ = ["DEFAULT_FLUSH_EVERY", "PendingTimerWrites", "encode_timestamp"]

DEFAULT_FLUSH_EVERY = 1024
"""Index changes per write batch."""


class PendingTimerWrites(Generic[K, N]):
    """The write batch of a queue over ``store``, its overlay of index changes, the floors and
    the dirty key groups (see the module docstring)."""

    __slots__ = (
        "_batch",
        "_dirty",
        "_flush_every",
        "_index_cf",
        "_store",
        "_timers_cf",
        "floors",
        "overlay",
    )

    def __init__(self, store: TimerStore[K, N], flush_every: int = DEFAULT_FLUSH_EVERY) -> None:
        self._store = store
        self._flush_every = flush_every
        self._timers_cf = store.timers_cf
        self._index_cf = store.index_cf
        self._batch = WriteBatch(raw_mode=True)
        self.overlay: dict[bytes, bytes | None] = {}
        """The index keys the batch changes, to their seq bytes (None: deleted); the same dict
        for the writes' life."""
        self._dirty: set[int] = set()
        self.floors = list(store.prefixes)
        """Per local key group, a store key at or below its first timer."""

    # ------------------------------------------------------------------ writes

    def put(self, idx: int, timer_key: bytes, value: bytes, index_key: bytes, seq: bytes) -> None:
        """Store a timer of local key group ``idx``: its row and its index row."""
        batch = self._batch
        batch.put(timer_key, value, self._timers_cf)
        batch.put(index_key, seq, self._index_cf)
        if timer_key < self.floors[idx]:
            self.floors[idx] = timer_key
        self._dirty.add(idx)
        overlay = self.overlay
        overlay[index_key] = seq
        if len(overlay) >= self._flush_every:
            self.flush()

    def delete(self, idx: int, timer_key: bytes, index_key: bytes) -> None:
        """Delete a timer of local key group ``idx`` (its row and its index row)."""
        batch = self._batch
        batch.delete(timer_key, self._timers_cf)
        batch.delete(index_key, self._index_cf)
        self._dirty.add(idx)
        overlay = self.overlay
        overlay[index_key] = None
        if len(overlay) >= self._flush_every:
            self.flush()

    def delete_first(self, idx: int, timer_key: bytes, index_key: bytes) -> None:
        """Delete the first timer of local key group ``idx``: its floor moves past it (refills
        do not see the pending delete, and need not wait for it)."""
        batch = self._batch
        batch.delete(timer_key, self._timers_cf)
        batch.delete(index_key, self._index_cf)
        self.floors[idx] = timer_key + b"\x00"
        overlay = self.overlay
        overlay[index_key] = None
        if len(overlay) >= self._flush_every:
            self.flush()

    def delete_range(self, begin: bytes, end: bytes) -> None:
        """Delete every timer and index row in ``[begin, end)`` now; every floor goes back to
        its key group's start."""
        self._batch.delete_range(begin, end, self._timers_cf)
        self._batch.delete_range(begin, end, self._index_cf)
        self.flush()
        self.floors[:] = self._store.prefixes

    def flush(self) -> None:
        """Write the pending batch."""
        if self._batch.len():
            self._store.write(self._batch)
            self._batch = WriteBatch(raw_mode=True)
        self.overlay.clear()
        self._dirty.clear()

    def close(self) -> None:
        """Write the pending batch and drop the handles (any later write raises a clear
        error)."""
        self.flush()
        self._batch = cast(WriteBatch, CLOSED)
        self._timers_cf = self._index_cf = cast(ColumnFamily, CLOSED)

    # ------------------------------------------------------------------ reads

    def index_row(self, index_key: bytes) -> bytes | None:
        """The seq bytes of an index row, pending writes included."""
        overlay = self.overlay
        if index_key in overlay:
            return overlay[index_key]
        return self._store.index_row(index_key)

    def read_head(self, idx: int, limit: int) -> list[TimerEntry[K, N]]:
        """The first ``limit`` timers of local key group ``idx`` (a refill: the batch is written
        first only if it changes them)."""
        if idx in self._dirty:
            self.flush()
        return self._store.read(idx, self.floors[idx], limit)

    def read_all(self, idx: int) -> list[TimerEntry[K, N]]:
        """Every timer of local key group ``idx``, in firing order."""
        self.flush()
        return self._store.read(idx, self.floors[idx], None)

    def chunks(self, idx: int, chunk: int) -> Iterator[list[TimerEntry[K, N]]]:
        """The timers of local key group ``idx``, ``chunk`` at a time (a key group of 10^7
        timers is never one list), each chunk read after writing the batch."""
        start = self.floors[idx]
        while True:
            self.flush()
            found = self._store.read(idx, start, chunk)
            if found:
                yield found
            if len(found) < chunk:
                return
            last = found[-1]
            start = timer_key(self._store.prefixes[idx], encode_timestamp(last[0]), last[1])
            start += b"\x00"  # just past it

    def index_rows(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The index rows under ``prefix``, after writing the batch."""
        self.flush()
        return self._store.index_rows(prefix)

    def timer_rows(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The timer rows under ``prefix``, after writing the batch."""
        self.flush()
        return self._store.timer_rows(prefix)
