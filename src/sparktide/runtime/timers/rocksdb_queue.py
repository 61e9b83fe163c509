"""The key-grouped priority queue set of timers in RocksDB (Flink's RocksDB timer queue).

The same interface, entries and firing order as
:class:`~sparktide.runtime.timers.queue.KeyGroupedTimerQueue` (timestamp, then insertion order),
with the timers in an embedded RocksDB store instead of the Python heap. Three parts, each of
one concern, make a :class:`RocksDBTimerQueue`:

* the store (:mod:`~sparktide.runtime.timers.rocksdb_timer_store`): two column families, the
  timers by ``key group | timestamp | seq`` (firing order) and an index by ``key group | key |
  namespace | timestamp`` for deduplication, removal and the timers of a key;
* the pending writes (:mod:`~sparktide.runtime.timers.rocksdb_timer_writes`): one write batch,
  an overlay of the index changes it holds, and per key group a floor where refills seek (past
  the timers polled but not yet deleted from the store);
* the cache (:mod:`~sparktide.runtime.timers.rocksdb_timer_cache`): per key group its first
  ``cache_size`` timers, sorted, under a binary heap of the key groups' heads. ``add`` writes
  through to the store and enters the cache when it belongs to its head; a cache that runs
  dry is refilled from the store. ``add`` skips the index lookup when the cache proves the
  timer new (after its key group's latest timer, or before its cache's last one and not in it).

Two rows per timer: the firing order is ``(timestamp, insertion order)``, as on the heap, and
deduplication is by ``(timestamp, key, namespace)``, so one row cannot be both the order and
the identity (Flink's one-row layout, the element's bytes as the key, orders a timestamp's
timers by their key bytes).

Memory is bounded per process: every timer store shares the write buffers and the block cache
of the keyed-state databases (:mod:`~sparktide.runtime.state.rocksdb_memory`).
The store is a working copy without a write-ahead log: what survives a failure is what a
checkpoint holds, and timers come back through :meth:`RocksDBTimerQueue.add_restored`. Opening a
directory wipes the store it holds; queues may share one store (``db``), each in its own two
column families. A queue on a shared store with ``resume=True`` continues the timers its column
families hold (a database that outlives its queues, e.g. a streaming subtask's across
micro-batches): :meth:`RocksDBTimerQueue.sync` writes everything and records the count and the
next sequence number in the store's default column family, and a resumed queue reads them back
and refills the cache of every key group (no scan of the timers).

>>> import tempfile
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> q = RocksDBTimerQueue(KeyGroupRange(0, 127), tempfile.mkdtemp(), cache_size=1)
>>> q.add(20, "a", None, 5), q.add(10, "b", None, 7), q.add(20, "a", None, 5)
(True, True, False)
>>> q.peek()[:1], len(q)
((10,), 2)
>>> q.remove(10, "b", None, 7)
True
>>> [e[0] for e in q]
[20]
>>> q.dispose()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from types import TracebackType
from typing import Generic, NoReturn

from rocksdict import Rdict

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_key_slot import KeyPrefixSlot
from sparktide.runtime.state.rocksdb_layout import (
    Codec,
    decode_timestamp,
    encode_timestamp,
    key_codec,
    key_group_bounds,
    namespace_codec,
)
from sparktide.runtime.timers.queue import AssignedKey, K, N, TimerEntry
from sparktide.runtime.timers.rocksdb_timer_cache import TimerCache
from sparktide.runtime.timers.rocksdb_timer_store import (
    INDEX_CF,
    NO_TIMER,
    SEQ_BYTES,
    TIMERS_CF,
    BytesMemo,
    TimerStore,
    open_store,
    timer_key,
)
from sparktide.runtime.timers.rocksdb_timer_writes import DEFAULT_FLUSH_EVERY, PendingTimerWrites

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_FLUSH_EVERY",
    "DEFAULT_ITER_CHUNK",
    "RocksDBTimerQueue",
    "RocksDBTimerQueueConfig",
    "open_store",
]

DEFAULT_CACHE_SIZE = 128
"""Timers per key group held in memory (Flink's ``RocksDBPriorityQueueSetFactory`` default)."""

DEFAULT_ITER_CHUNK = 4096
"""Timers read at a time when iterating a queue."""

_CLOSED_MESSAGE = "the timer queue's store is closed; open a new queue"
_SIGN = 2**63
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _closed_get(index_key: bytes) -> NoReturn:
    raise RuntimeError(_CLOSED_MESSAGE)


def _positive(name: str, value: object, meaning: str) -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be an int >= 1 ({meaning}), got {value!r}")


@dataclass(frozen=True)
class RocksDBTimerQueueConfig:
    """How a :class:`RocksDBTimerQueue` is built: the key groups, the codecs of keys and
    namespaces, the column families (timers, index), and its sizes: ``cache_size`` timers per
    key group in memory, a write every ``flush_every`` index changes, ``iter_chunk`` timers
    read at a time when iterating.

    >>> RocksDBTimerQueueConfig(KeyGroupRange(0, 3), cache_size=0)
    Traceback (most recent call last):
    ...
    ValueError: cache_size must be an int >= 1 (timers per key group kept in memory), got 0
    """

    key_group_range: KeyGroupRange
    keys: Codec = field(default_factory=lambda: key_codec(None))
    namespaces: Codec = field(default_factory=namespace_codec)
    column_families: tuple[str, str] = (TIMERS_CF, INDEX_CF)
    cache_size: int = DEFAULT_CACHE_SIZE
    flush_every: int = DEFAULT_FLUSH_EVERY
    iter_chunk: int = DEFAULT_ITER_CHUNK

    def __post_init__(self) -> None:
        if not isinstance(self.key_group_range, KeyGroupRange):
            raise TypeError(
                "key_group_range must be a KeyGroupRange, got "
                f"{type(self.key_group_range).__name__}"
            )
        _positive("cache_size", self.cache_size, "timers per key group kept in memory")
        _positive("flush_every", self.flush_every, "index changes per write batch")
        _positive("iter_chunk", self.iter_chunk, "timers read at a time when iterating")
        timers_cf, index_cf = self.column_families
        if not timers_cf or not index_cf or timers_cf == index_cf:
            raise ValueError(
                f"column_families must be two distinct non-empty names (timers, index), got "
                f"{self.column_families!r}"
            )

    def open_store(
        self, directory: str | os.PathLike[str] | None, db: Rdict | None, resume: bool
    ) -> TimerStore[K, N]:
        """The queue's store: of its own in ``directory``, or in the shared ``db``."""
        if (directory is None) == (db is None):
            raise ValueError(
                "give either directory (the queue opens a store of its own there) or db (an "
                "open store the queue shares, with column_families naming its two column "
                "families), not both nor neither"
            )
        return TimerStore.open(
            self.key_group_range,
            self.keys,
            self.namespaces,
            directory=directory,
            db=db,
            names=self.column_families,
            resume=resume,
        )

    def cache(self) -> TimerCache[K, N]:
        """An empty cache of the queue's key groups."""
        r = self.key_group_range
        return TimerCache(r.start, len(r), self.cache_size)

    def writes(self, store: TimerStore[K, N]) -> PendingTimerWrites[K, N]:
        """The pending writes of the queue over ``store``."""
        return PendingTimerWrites(store, self.flush_every)


class RocksDBTimerQueue(Generic[K, N]):
    """A set of timers ordered by ``(timestamp, insertion order)``, deduplicated per key group,
    stored in RocksDB in ``directory`` with the first ``cache_size`` timers of each key group
    in memory.

    ``keys`` / ``namespaces``: the codecs of keys and namespaces (default: undeclared keys, and
    None or window namespaces).

    ``db``: instead of a ``directory``, an open store shared with other queues (one store per
    subtask, see :class:`~sparktide.runtime.timers.queue_factory.RocksDBTimerQueueFactory`);
    the queue keeps its timers in the two column families ``column_families`` (timers, index)
    and the store's owner closes it.

    ``slot``: the :class:`~sparktide.runtime.state.rocksdb_key_slot.KeyPrefixSlot` of the
    subtask's state backend (same key layout), so a key is encoded once for the backend and
    the queue (default: a slot of the queue's own).

    ``flush_every`` / ``iter_chunk``: see :class:`RocksDBTimerQueueConfig`.
    """

    __slots__ = (
        "_cache",
        "_complete",
        "_config",
        "_entries",
        "_exact",
        "_index_get",
        "_key_memo",
        "_kg_end",
        "_kg_start",
        "_latest",
        "_ns_memo",
        "_open",
        "_overlay",
        "_seq",
        "_size",
        "_slot",
        "_store",
        "_writes",
    )

    def __init__(
        self,
        key_group_range: KeyGroupRange,
        directory: str | os.PathLike[str] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        keys: Codec | None = None,
        namespaces: Codec | None = None,
        *,
        db: Rdict | None = None,
        column_families: tuple[str, str] = (TIMERS_CF, INDEX_CF),
        resume: bool = False,
        slot: KeyPrefixSlot | None = None,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        iter_chunk: int = DEFAULT_ITER_CHUNK,
    ) -> None:
        config = RocksDBTimerQueueConfig(
            key_group_range,
            keys if keys is not None else key_codec(None),
            namespaces if namespaces is not None else namespace_codec(),
            column_families,
            cache_size,
            flush_every,
            iter_chunk,
        )
        self._config = config
        self._kg_start = key_group_range.start
        self._kg_end = key_group_range.end
        self._store: TimerStore[K, N] = config.open_store(directory, db, resume)
        self._writes: PendingTimerWrites[K, N] = config.writes(self._store)
        self._cache: TimerCache[K, N] = config.cache()
        # the cache's lists, read on every add; the pending writes' overlay, on most
        self._latest = self._cache.latest
        self._complete = self._cache.complete
        self._entries = self._cache.entries
        self._overlay = self._writes.overlay
        # dropped on close: it holds the store open
        self._index_get: Callable[[bytes], object] = self._store.index.get
        self._slot = slot if slot is not None else KeyPrefixSlot("own")
        self._exact = config.keys.value_bytes_are_key_bytes
        # keys the slot does not hold (a queue of its own, a fired timer's key): remembered,
        # as keys have many timers
        self._key_memo = BytesMemo(config.keys.key_bytes)
        self._ns_memo = BytesMemo(config.namespaces.key_bytes)
        self._seq = self._size = 0
        self._open = True
        if self._store.resumed:
            self._resume()

    @property
    def config(self) -> RocksDBTimerQueueConfig:
        """What the queue was built from."""
        return self._config

    def _resume(self) -> None:
        """Continue the timers the column families hold: the count and next sequence number
        :meth:`sync` recorded (counted by a scan if it never ran), the first timers of every key
        group in its cache."""
        store = self._store
        meta = store.read_meta()
        self._size, self._seq = meta if meta is not None else store.count()
        limit = self._config.cache_size + 1
        groups = range(len(self._latest))
        self._cache.load(
            [self._writes.read_head(idx, limit) for idx in groups],
            [store.latest(idx) for idx in groups],
        )

    def sync(self) -> None:
        """Write the pending changes and record the count and the next sequence number in the
        store (what a queue resumed on it reads back); before a checkpoint of the store."""
        self._writes.flush()
        self._store.write_meta(self._size, self._seq)

    def flush(self) -> None:
        """Write the pending changes into the store (they are otherwise written in batches of
        ``flush_every`` index changes, and before reads that need them)."""
        self._check_open()
        self._writes.flush()

    def column_family_property(self, name: str) -> tuple[int | None, int | None]:
        """A RocksDB integer property (``rocksdb.block-cache-capacity``, ...) of the timers and
        of the index column family."""
        self._check_open()
        return self._store.int_property(name)

    # ------------------------------------------------------------------ life cycle

    def close(self) -> None:
        """Close the store (its files stay in the directory); a queue on a shared store lets
        go of its column families (the store's owner closes the store). Idempotent."""
        self._let_go()
        self._store.close()

    def dispose(self) -> None:
        """Close the store and delete its directory; on a shared store, drop the queue's
        column families."""
        self._let_go()
        self._store.dispose()

    def _let_go(self) -> None:
        """Write what is pending and drop every handle of the store the queue holds."""
        if self._open:
            self._writes.close()
            self._index_get = _closed_get
            self._open = False

    def __enter__(self) -> RocksDBTimerQueue[K, N]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.dispose()

    # ------------------------------------------------------------------ mutation

    def add(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Add a timer; return True if it became the new head (the earliest timer).

        Adding a timer that is already present changes nothing and returns False.
        """
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        if not self._open:
            self._check_open()
        ns_bytes = self._ns_memo.get(namespace) if namespace is None else None
        if ns_bytes is None:
            ns_bytes = self._ns_memo.bytes_of(namespace)
        if type(timestamp) is int and _LONG_MIN <= timestamp <= _LONG_MAX:
            ts_bytes = (timestamp + _SIGN).to_bytes(8, "big")  # encode_timestamp, inlined
        else:
            ts_bytes = encode_timestamp(timestamp)  # other integral types; the error
        key_type = type(key)
        slot = self._slot  # the timer service adds timers of the current key: encoded already
        if key is slot.key and key_group == slot.key_group:
            key_prefix = slot.prefix
        else:
            key_prefix = slot.prefix_of(key, key_group, self._key_memo.bytes_of)
        index_key = key_prefix + ns_bytes + ts_bytes
        latest = self._latest
        if timestamp > latest[idx]:
            # later than every timer the key group holds: new (timers mostly come in time order)
            latest[idx] = timestamp
        elif (key_type is str or key_type is int) and (
            self._complete[idx] or timestamp < self._entries[idx][-1][0]
        ):
            # the cache holds every timer of the key group before its last one: a timer not in
            # it is not in the store either (an incomplete cache is never empty)
            if self._cache.holds(idx, timestamp, key, namespace):
                return False
        else:
            overlay = self._overlay
            if index_key in overlay:
                if overlay[index_key] is not None:
                    return False
            elif self._index_get(index_key) is not None:
                return False
        seq = self._seq
        self._seq = seq + 1
        seq_bytes = seq.to_bytes(SEQ_BYTES, "big")
        # the value bytes of str and int keys are their key bytes (every codec's contract)
        if self._exact or key_type is str or key_type is int:
            value = key_prefix[2:]
        else:
            value = self._config.keys.value_bytes(key)
        stored_at = self._store.prefixes[idx] + ts_bytes + seq_bytes
        self._writes.put(idx, stored_at, value + ns_bytes, index_key, seq_bytes)
        self._size += 1
        return self._cache.admit(idx, (timestamp, seq, key, namespace, key_group))

    def remove(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Remove a timer if present; return True if it was the head. Absent timers: no-op."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        ts_bytes = encode_timestamp(timestamp)
        key_prefix = self._slot.prefix_of(key, key_group, self._key_memo.bytes_of)
        index_key = key_prefix + self._ns_memo.bytes_of(namespace) + ts_bytes
        seq_bytes = self._writes.index_row(index_key)
        if seq_bytes is None:
            return False
        seq = int.from_bytes(seq_bytes, "big")
        head = self._cache.peek()
        was_head = head is not None and head[1] == seq
        self._writes.delete(idx, self._store.prefixes[idx] + ts_bytes + seq_bytes, index_key)
        self._size -= 1
        if self._cache.discard(idx, timestamp, seq):
            self._refill(idx)
        return was_head

    def poll(self) -> TimerEntry[K, N] | None:
        """Remove and return the head entry ``(timestamp, seq, key, namespace, key_group)``."""
        head = self._cache.peek()
        if head is not None:
            self._pop_head(head)
        return head

    def poll_until(self, timestamp: int) -> TimerEntry[K, N] | None:
        """Remove and return the head if its timestamp is ``<= timestamp``, else None."""
        head = self._cache.peek()
        if head is None or head[0] > timestamp:
            return None
        self._pop_head(head)
        return head

    def fire_until(
        self,
        timestamp: int,
        set_key: Callable[[K, int], object],
        fire: Callable[[int, K, N], object],
        assign: AssignedKey | None = None,
        hooks: Sized = (),
    ) -> int:
        """Poll every timer ``<= timestamp`` and fire it (the heap queue's ``fire_until``;
        the key is always set with ``set_key``)."""
        fired = 0
        peek, pop_head = self._cache.peek, self._pop_head
        head = peek()
        while head is not None and head[0] <= timestamp:
            pop_head(head)
            set_key(head[2], head[4])
            fire(head[0], head[2], head[3])
            fired += 1
            head = peek()
        return fired

    def _pop_head(self, head: TimerEntry[K, N]) -> None:
        """Remove ``head`` (the cache's peek) from the cache and the store."""
        ts, seq, key, ns, kg = head
        if not self._open:
            self._check_open()
        slot = self._slot  # the backend makes this key current next: encoded once for both
        if key is slot.key and kg == slot.key_group:
            key_prefix = slot.prefix
        else:
            key_prefix = slot.prefix_of(key, kg, self._key_memo.bytes_of)
        ts_bytes = (ts + _SIGN).to_bytes(8, "big")  # encode_timestamp of a stored timestamp
        ns_memo = self._ns_memo
        ns_bytes = ns_memo.get(ns) if ns is None else None
        if ns_bytes is None:
            ns_bytes = ns_memo.bytes_of(ns)
        idx = kg - self._kg_start
        self._writes.delete_first(
            idx,
            self._store.prefixes[idx] + ts_bytes + seq.to_bytes(SEQ_BYTES, "big"),
            key_prefix + ns_bytes + ts_bytes,
        )
        self._size -= 1
        if self._cache.pop(head):
            self._refill(idx)

    def _refill(self, idx: int) -> None:
        self._cache.fill(idx, self._writes.read_head(idx, self._config.cache_size + 1))

    def clear(self) -> None:
        """Remove every timer (one range delete per column family)."""
        self._check_open()
        self._writes.delete_range(*key_group_bounds(self.key_group_range()))
        self._cache.clear()
        self._size = 0

    # ------------------------------------------------------------------ queries

    def peek(self) -> TimerEntry[K, N] | None:
        """The head entry without removing it, or None when empty."""
        return self._cache.peek()

    def contains(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return False
        index_key = self._index_prefix(idx, key, namespace) + encode_timestamp(timestamp)
        return self._writes.index_row(index_key) is not None

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[TimerEntry[K, N]]:
        """Live entries, key group by key group, in firing order within a group: read from the
        store ``iter_chunk`` at a time (a queue of 10^7 timers is never one list)."""
        cache, chunk = self._cache, self._config.iter_chunk
        for idx in range(len(cache.entries)):
            if cache.complete[idx]:
                yield from list(cache.entries[idx])
                continue
            for found in self._writes.chunks(idx, chunk):
                yield from found

    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange.of(self._kg_start, self._kg_end)

    def cached_count(self, key_group: int) -> int:
        """How many timers of ``key_group`` the queue holds in memory (at most ``cache_size``;
        the others are in the store only)."""
        return len(self._cache.entries[key_group - self._kg_start])

    def entries_for_key_group(self, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key_group`` sorted by ``(timestamp, seq)`` (snapshot order)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        if self._cache.complete[idx]:
            return list(self._cache.entries[idx])
        return self._writes.read_all(idx)

    def timers_for_namespace(self, key: K, namespace: object, key_group: int) -> list[int]:
        """Timestamps of the timers of ``(key, namespace)``, ascending (one prefix scan)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        try:
            prefix = self._index_prefix(idx, key, namespace)
        except TypeError:
            return []  # a namespace of another kind: no timer has it
        return [decode_timestamp(k, len(k) - 8) for k, _ in self._writes.index_rows(prefix)]

    def key_timers(self, key: K, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key``, in insertion order (one prefix scan)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        prefix = self._store.prefixes[idx] + self._config.keys.key_bytes(key)
        timer_of = self._store.timer_of
        found = [timer_of(k, seq, key_group) for k, seq in self._writes.index_rows(prefix)]
        found.sort(key=lambda e: e[1])
        return found

    def reset_key_timers(self, key: K, key_group: int, saved: Iterable[TimerEntry[K, N]]) -> None:
        """Make the timers of ``key`` exactly ``saved`` (entries :meth:`key_timers` returned
        earlier), with their original sequence numbers: their firing order is unchanged."""
        idx = key_group - self._kg_start
        keep = {self._index_prefix(idx, e[2], e[3]) + encode_timestamp(e[0]): e for e in saved}
        for e in self.key_timers(key, key_group):
            kept = keep.get(self._index_prefix(idx, e[2], e[3]) + encode_timestamp(e[0]))
            if kept is None or kept[1] != e[1]:
                self.remove(e[0], e[2], e[3], key_group)
        for index_key, (ts, seq, k, ns, _kg) in keep.items():
            if self._writes.index_row(index_key) is None:
                entry: TimerEntry[K, N] = (ts, seq, k, ns, key_group)
                self._store_timer(idx, index_key, entry)
                self._cache.admit(idx, entry)

    def _store_timer(self, idx: int, index_key: bytes, entry: TimerEntry[K, N]) -> None:
        """Store ``entry`` of local key group ``idx`` with its own sequence number."""
        self._check_open()
        ts, seq, key, ns, _kg = entry
        seq_bytes = seq.to_bytes(SEQ_BYTES, "big")
        value = self._config.keys.value_bytes(key) + self._ns_memo.bytes_of(ns)
        stored_at = timer_key(self._store.prefixes[idx], encode_timestamp(ts), seq)
        self._writes.put(idx, stored_at, value, index_key, seq_bytes)
        self._cache.note_latest(idx, ts)
        self._size += 1

    # ------------------------------------------------------------------ restore

    def add_restored(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add restored timers ``(timestamp, seq, key, namespace, key_group)``, with the
        sequence numbers :meth:`KeyGroupedTimerQueue.add_restored
        <sparktide.runtime.timers.queue.KeyGroupedTimerQueue.add_restored>` gives them: kept
        into an empty queue when distinct, else renumbered in ``(timestamp, seq, key_group)``
        order. Written in batches, without a lookup per timer."""
        seqs = {e[1] for e in entries}
        if self._size or len(seqs) != len(entries) or any(type(q) is not int for q in seqs):
            for ts, _old, key, ns, kg in sorted(entries, key=lambda e: (e[0], e[1], e[4])):
                self.add(ts, key, ns, kg)
            return
        kept = self._distinct(entries)
        self._check_open()
        groups: list[list[TimerEntry[K, N]]] = [[] for _ in self._latest]
        keys, namespaces = self._config.keys, self._config.namespaces
        prefixes = self._store.prefixes
        put = self._writes.put
        for index_key, entry in kept.items():
            ts, seq, key, ns, kg = entry
            idx = kg - self._kg_start
            value = keys.value_bytes(key) + namespaces.value_bytes(ns)
            seq_bytes = seq.to_bytes(SEQ_BYTES, "big")
            stored_at = timer_key(prefixes[idx], encode_timestamp(ts), seq)
            put(idx, stored_at, value, index_key, seq_bytes)
            groups[idx].append(entry)
        self._writes.flush()
        self._writes.floors[:] = prefixes
        for group in groups:
            group.sort()
        self._cache.load(groups, [g[-1][0] if g else NO_TIMER for g in groups])
        self._size = len(kept)
        self._seq = max(self._seq - 1, *seqs) + 1 if seqs else self._seq

    def _distinct(self, entries: list[TimerEntry[K, N]]) -> dict[bytes, TimerEntry[K, N]]:
        """``entries`` by index key, the earliest ``seq`` of equal timers kept."""
        kept: dict[bytes, TimerEntry[K, N]] = {}
        for entry in entries:
            ts, seq, key, ns, kg = entry
            if kg < self._kg_start or kg > self._kg_end:
                self._raise_out_of_range(kg, key)
            index_key = self._index_prefix(kg - self._kg_start, key, ns) + encode_timestamp(ts)
            other = kept.get(index_key)
            if other is None or seq < other[1]:
                kept[index_key] = (ts, seq, key, ns, kg)
        return kept

    # ------------------------------------------------------------------ internals

    def _index_prefix(self, idx: int, key: object, namespace: object) -> bytes:
        """``key group | key | namespace``: the index rows of a key's timers in a namespace."""
        return (
            self._store.prefixes[idx]
            + self._key_memo.bytes_of(key)
            + self._ns_memo.bytes_of(namespace)
        )

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError(_CLOSED_MESSAGE)

    def _raise_out_of_range(self, key_group: int, key: object) -> NoReturn:
        raise ValueError(
            f"timer for key {key!r} is in key group {key_group}, outside this queue's key-group "
            f"range [{self._kg_start}, {self._kg_end}]; timers must be registered by the subtask "
            "that owns the key (check the key selector and the max parallelism)"
        )

    def check_invariants(self) -> None:
        """Raise AssertionError unless the cache, the floors, the index and the count agree
        with the timers in the store (for tests; O(n))."""
        total = 0
        writes, prefixes = self._writes, self._store.prefixes
        for idx in range(len(prefixes)):
            stored = writes.read_all(idx)
            first = next(writes.timer_rows(prefixes[idx]), None)
            if first is not None and first[0] < writes.floors[idx]:
                raise AssertionError(f"timers of cache {idx} below its floor")
            self._cache.check_invariants(idx, stored)
            for ts, seq, key, ns, _kg in stored:
                index_key = self._index_prefix(idx, key, ns) + encode_timestamp(ts)
                if writes.index_row(index_key) != seq.to_bytes(SEQ_BYTES, "big"):
                    raise AssertionError(f"index row missing for timer {(ts, seq, key, ns)}")
                if seq >= self._seq:
                    raise AssertionError("sequence counter went backwards")
            total += len(stored)
        indexed = sum(1 for _ in writes.index_rows(b""))
        if indexed != total:
            raise AssertionError(f"{indexed} index rows for {total} timers")
        if total != self._size:
            raise AssertionError(f"size {self._size} != {total} stored timers")
        self._cache.check_top()
