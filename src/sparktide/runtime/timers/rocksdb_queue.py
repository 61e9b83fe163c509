"""The key-grouped priority queue set of timers in RocksDB (Flink's RocksDB timer queue).

The same interface, entries and firing order as
:class:`~sparktide.runtime.timers.queue.KeyGroupedTimerQueue` (timestamp, then insertion order),
with the timers in an embedded RocksDB store instead of the Python heap:

* column family ``timers``: ``key group | timestamp | seq -> key | namespace``, so one key
  group's timers are one contiguous range, in firing order
  (:mod:`~sparktide.runtime.state.rocksdb_layout` gives the bytes);
* column family ``timer-index``: ``key group | key | namespace | timestamp -> seq``, for
  deduplication, removal by ``(timestamp, key, namespace)`` and the timers of a key;
* per key group an in-memory cache of its first ``cache_size`` timers, sorted. ``add`` writes
  through to the store and enters the cache when it belongs to its head; when a cache runs dry
  and the store holds more timers of its key group, the next ``cache_size`` are read back. A
  cache is empty only when its key group has no timers, so its first entry is the key group's
  head;
* the heads of the key groups in a binary heap (``heapq``) of heads. An entry of that heap is
  current while it is the first of its key group's cache; stale entries are dropped when they
  reach the top.

Writes collect in a write batch, written every 1024 index changes, before a scan, and before
a refill whose key group the batch changes (a poll moves its key group's floor past the polled
timer, so the deletes of polled timers never hold a refill back); lookups in the index see the
pending changes. ``add`` skips the index lookup when the cache proves the timer absent (its key
group's timers before the cache's last one are all in the cache). Key and namespace bytes and
decoded values are remembered (bounded), as keys have many timers and windows many keys.

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
import shutil
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator
from heapq import heapify, heappop, heappush, heapreplace
from pathlib import Path
from types import TracebackType
from typing import Generic, NoReturn, cast

from rocksdict import (
    ColumnFamily,
    Options,
    Rdict,
    WriteBatch,
    WriteOptions,
)

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_key_slot import KeyPrefixSlot
from sparktide.runtime.state.rocksdb_layout import (
    TIMESTAMP_BYTES,
    Codec,
    decode_timestamp,
    encode_timestamp,
    key_codec,
    key_group_bounds,
    key_group_prefix,
    namespace_codec,
)
from sparktide.runtime.state.rocksdb_memory import timer_options
from sparktide.runtime.timers.queue import K, N, TimerEntry

__all__ = ["DEFAULT_CACHE_SIZE", "RocksDBTimerQueue", "open_store"]

_META_PREFIX = b"timer-queue:"
"""The default column family's key (plus the timers column family's name) of a queue's count
and next sequence number, written by :meth:`RocksDBTimerQueue.sync`."""

DEFAULT_CACHE_SIZE = 128
"""Timers per key group held in memory (Flink's ``RocksDBPriorityQueueSetFactory`` default)."""

TIMERS_CF = "timers"
INDEX_CF = "timer-index"
_SEQ_BYTES = 8
_STALE_SLACK = 64
_FLUSH_EVERY = 1024  # index changes per write batch
_SIGN = 2**63
_NO_TIMER = -(2**63) - 1  # before every timestamp
_ITER_CHUNK = 4096  # timers read at a time when iterating
_MEMO_SIZE = 1 << 14  # keys whose bytes, values whose decoding, a queue remembers


class _BytesMemo(dict[object, bytes]):
    """The key bytes of values, remembered (at most ``_MEMO_SIZE``: then it starts over).

    >>> memo = _BytesMemo(lambda v: str(v).encode())
    >>> memo.bytes_of(7), memo
    (b'7', {7: b'7'})
    >>> memo.bytes_of([1])  # unhashable: encoded, not remembered
    b'[1]'
    """

    __slots__ = ("_encode",)

    def __init__(self, encode: Callable[[object], bytes]) -> None:
        super().__init__()
        self._encode = encode

    def bytes_of(self, value: object) -> bytes:
        """The key bytes of ``value``; an unhashable one goes to the codec, which names what is
        wrong with it."""
        try:
            found = self.get(value)
        except TypeError:
            return self._encode(value)
        if found is None:
            found = self._encode(value)
            if len(self) >= _MEMO_SIZE:
                self.clear()
            self[value] = found
        return found


class _Closed:
    """Stands in for the handles of a closed store: any use raises a clear error."""

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)  # introspection (copy, doctest) sees a plain object
        raise RuntimeError("the timer queue's store is closed; open a new queue")


_CLOSED = _Closed()


def _options(bloom: bool = False) -> Options:
    """Timer stores take their memory from the budget of the process's RocksDB databases
    (:mod:`~sparktide.runtime.state.rocksdb_memory`); ``bloom``: an index column family."""
    return timer_options(index=bloom)


def open_store(directory: str | os.PathLike[str]) -> Rdict:
    """A fresh store in ``directory`` for queues to share (what the directory held is wiped:
    a working copy, timers come back by :meth:`RocksDBTimerQueue.add_restored`)."""
    path = Path(directory)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return Rdict(str(path), _options())


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
    """

    __slots__ = (
        "_cache_size",
        "_caches",
        "_cf_names",
        "_complete",
        "_db",
        "_decoded",
        "_directory",
        "_dirty",
        "_exact",
        "_floors",
        "_heads",
        "_index",
        "_index_cf",
        "_key_memo",
        "_keys",
        "_kg_end",
        "_kg_start",
        "_latest",
        "_namespaces",
        "_ns_memo",
        "_overlay",
        "_pending",
        "_prefixes",
        "_seq",
        "_size",
        "_slot",
        "_timers",
        "_timers_cf",
        "_write_options",
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
    ) -> None:
        if not isinstance(key_group_range, KeyGroupRange):
            raise TypeError(
                f"key_group_range must be a KeyGroupRange, got {type(key_group_range).__name__}"
            )
        if type(cache_size) is not int or cache_size < 1:
            raise ValueError(
                f"cache_size must be an int >= 1 (timers per key group kept in memory), got "
                f"{cache_size!r}"
            )
        if (directory is None) == (db is None):
            raise ValueError(
                "give either directory (the queue opens a store of its own there) or db (an "
                "open store the queue shares, with column_families naming its two column "
                "families), not both nor neither"
            )
        timers_cf, index_cf = column_families
        if not timers_cf or not index_cf or timers_cf == index_cf:
            raise ValueError(
                f"column_families must be two distinct non-empty names (timers, index), got "
                f"{column_families!r}"
            )
        self._kg_start = key_group_range.start
        self._kg_end = key_group_range.end
        self._cache_size = cache_size
        self._keys = keys if keys is not None else key_codec(None)
        self._namespaces = namespaces if namespaces is not None else namespace_codec()
        n = len(key_group_range)
        self._prefixes = [key_group_prefix(kg) for kg in key_group_range]
        # per key group, a store key at or below its first timer: refills seek there, past the
        # tombstones of the timers polled before it
        self._floors = list(self._prefixes)
        self._caches: list[list[TimerEntry[K, N]]] = [[] for _ in range(n)]
        self._complete = [True] * n
        # per key group, a timestamp at or after its latest timer (removals leave it): an add
        # past it needs no lookup
        self._latest = [_NO_TIMER] * n
        self._heads: list[TimerEntry[K, N]] = []
        self._seq = 0
        self._size = 0
        self._cf_names = (timers_cf, index_cf)
        if db is None:
            path = Path(cast("str | os.PathLike[str]", directory))
            if path.exists():
                shutil.rmtree(path)  # a working copy: what it held comes back by add_restored
            path.mkdir(parents=True)
            self._directory: Path | None = path
            self._db: Rdict | None = Rdict(
                str(path),
                _options(),
                column_families={timers_cf: _options(), index_cf: _options(bloom=True)},
            )
            self._timers = self._db.get_column_family(timers_cf)
            self._index = self._db.get_column_family(index_cf)
        else:
            self._directory = None  # the store's owner closes it
            self._db = db
            existing = set(Rdict.list_cf(db.path()))
            if resume and timers_cf in existing and index_cf in existing:
                self._timers = db.get_column_family(timers_cf)
                self._index = db.get_column_family(index_cf)
            else:
                resume = False
                for name in column_families:
                    if name in existing:  # a working copy: its timers come by add_restored
                        db.drop_column_family(name)
                self._timers = db.create_column_family(timers_cf, _options())
                self._index = db.create_column_family(index_cf, _options(bloom=True))
        self._timers_cf = self._db.get_column_family_handle(timers_cf)
        self._index_cf = self._db.get_column_family_handle(index_cf)
        self._pending = WriteBatch(raw_mode=True)
        self._overlay: dict[bytes, bytes | None] = {}
        # local key groups whose timers the pending batch changes at or above their floor
        self._dirty: set[int] = set()
        self._slot = slot if slot is not None else KeyPrefixSlot("own")
        self._exact = self._keys.value_bytes_are_key_bytes
        # keys the slot does not hold (a queue of its own, a fired timer's key): remembered,
        # as keys have many timers
        self._key_memo = _BytesMemo(self._keys.key_bytes)
        self._ns_memo = _BytesMemo(self._namespaces.key_bytes)
        self._decoded: dict[bytes, tuple[K, N]] = {}
        self._write_options = WriteOptions()
        # a property at run time (rocksdict's stubs declare a method)
        setattr(self._write_options, "disable_wal", True)  # noqa: B010
        if resume:
            self._resume()

    def _meta_key(self) -> bytes:
        return _META_PREFIX + self._cf_names[0].encode()

    def _resume(self) -> None:
        """Continue the timers the column families hold: the count and next sequence number
        :meth:`sync` recorded (counted by a scan if it never ran), the first timers of every key
        group in its cache, the heap of heads."""
        db = cast(Rdict, self._db)
        raw = db.get(self._meta_key())
        if isinstance(raw, bytes) and len(raw) == 16:
            self._size = int.from_bytes(raw[:8], "big")
            self._seq = int.from_bytes(raw[8:], "big")
        else:  # never synced: count the timers, and start past every sequence number
            size = seq = 0
            for _key, value in self._scan(self._index, b""):
                size += 1
                seq = max(seq, int.from_bytes(value, "big") + 1)
            self._size, self._seq = size, seq
        size = self._cache_size
        for idx in range(len(self._caches)):
            found = self._read(idx, size + 1, flush=False)
            self._complete[idx] = len(found) <= size
            self._caches[idx] = found[:size]
            self._latest[idx] = self._latest_stored(idx)
        self._heads = [c[0] for c in self._caches if c]
        heapify(self._heads)

    def _latest_stored(self, idx: int) -> int:
        """The timestamp of the last timer the store holds for local key group ``idx`` (one
        backward seek), or ``_NO_TIMER``."""
        prefix = self._prefixes[idx]
        it = self._timers.iter()
        it.seek_for_prev(prefix + b"\xff" * (TIMESTAMP_BYTES + _SEQ_BYTES))
        latest = _NO_TIMER
        if it.valid():
            k = it.key()
            if k[:2] == prefix:
                latest = decode_timestamp(k, 2)
        else:
            check_scan(it)
        del it
        return latest

    def sync(self) -> None:
        """Write the pending changes and record the count and the next sequence number in the
        store (what a queue resumed on it reads back); before a checkpoint of the store."""
        self._flush()
        db = self._db
        if db is None:
            raise RuntimeError("the timer queue's store is closed; open a new queue")
        meta = self._size.to_bytes(8, "big") + self._seq.to_bytes(8, "big")
        db.put(self._meta_key(), meta, self._write_options)

    # ------------------------------------------------------------------ life cycle

    def close(self) -> None:
        """Close the store (its files stay in the directory); a queue on a shared store lets
        go of its column families (the store's owner closes the store). Idempotent."""
        db = self._db
        if db is None:
            return
        self._flush()
        self._db = None
        # every handle keeps the database open: drop them before closing it
        self._timers = self._index = cast(Rdict, _CLOSED)
        self._timers_cf = self._index_cf = cast(ColumnFamily, _CLOSED)
        if self._directory is not None:
            db.close()

    def dispose(self) -> None:
        """Close the store and delete its directory; on a shared store, drop the queue's
        column families."""
        db = self._db
        self.close()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
        elif db is not None:
            for name in self._cf_names:
                db.drop_column_family(name)
            db.delete(self._meta_key())

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
        if self._db is None:
            self._check_open()
        prefix = self._prefixes[idx]
        ns_bytes = self._ns_memo.get(namespace) if namespace is None else None
        if ns_bytes is None:
            ns_bytes = self._ns_memo.bytes_of(namespace)
        ts_bytes = encode_timestamp(timestamp)
        key_type = type(key)
        slot = self._slot  # the timer service adds timers of the current key: encoded already
        if key is slot.key and key_group == slot.key_group:
            key_prefix = slot.prefix
        else:
            key_prefix = slot.prefix_of(key, key_group, self._key_memo.bytes_of)
        index_key = key_prefix + ns_bytes + ts_bytes
        cache = self._caches[idx]
        latest = self._latest
        if timestamp > latest[idx]:
            # later than every timer the key group holds: new (timers mostly come in time order)
            latest[idx] = timestamp
        elif (key_type is str or key_type is int) and (
            self._complete[idx] or timestamp < cache[-1][0]
        ):
            # the cache holds every timer of the key group before its last one: a timer not in
            # it is not in the store either (== is the store's equality for str and int keys)
            i = bisect_left(cache, (timestamp,))
            n = len(cache)
            while i < n:
                e = cache[i]
                if e[0] != timestamp:
                    break
                if e[2] == key and e[3] == namespace:
                    return False
                i += 1
        else:
            overlay = self._overlay
            if index_key in overlay:
                if overlay[index_key] is not None:
                    return False
            elif self._index.get(index_key) is not None:
                return False
        seq = self._seq
        self._seq = seq + 1
        seq_bytes = seq.to_bytes(_SEQ_BYTES, "big")
        timer_key = prefix + ts_bytes + seq_bytes
        # the value bytes of str and int keys are their key bytes (every codec's contract)
        if self._exact or key_type is str or key_type is int:
            value = key_prefix[2:]
        else:
            value = self._keys.value_bytes(key)
        pending = self._pending
        pending.put(timer_key, value + ns_bytes, self._timers_cf)
        pending.put(index_key, seq_bytes, self._index_cf)
        if timer_key < self._floors[idx]:
            self._floors[idx] = timer_key
        self._dirty.add(idx)
        self._size += 1
        overlay = self._overlay
        overlay[index_key] = seq_bytes
        if len(overlay) >= _FLUSH_EVERY:
            self._flush()
        return self._admit(idx, (timestamp, seq, key, namespace, key_group))

    def remove(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Remove a timer if present; return True if it was the head. Absent timers: no-op."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        prefix = self._prefixes[idx]
        ts_bytes = encode_timestamp(timestamp)
        key_prefix = self._slot.prefix_of(key, key_group, self._key_memo.bytes_of)
        index_key = key_prefix + self._ns_memo.bytes_of(namespace) + ts_bytes
        seq_bytes = self._index_get(index_key)
        if seq_bytes is None:
            return False
        seq = int.from_bytes(seq_bytes, "big")
        head = self._peek()
        was_head = head is not None and head[1] == seq
        self._pending.delete(prefix + ts_bytes + seq_bytes, self._timers_cf)
        self._dirty.add(idx)
        self._delete_index(index_key)
        self._size -= 1
        cache = self._caches[idx]
        i = bisect_left(cache, (timestamp, seq))
        if i < len(cache) and cache[i][1] == seq:
            del cache[i]
            if i == 0:
                self._new_head(idx)
        return was_head

    def poll(self) -> TimerEntry[K, N] | None:
        """Remove and return the head entry ``(timestamp, seq, key, namespace, key_group)``."""
        head = self._peek()
        if head is not None:
            self._pop_head(head)
        return head

    def poll_until(self, timestamp: int) -> TimerEntry[K, N] | None:
        """Remove and return the head if its timestamp is ``<= timestamp``, else None."""
        head = self._peek()
        if head is None or head[0] > timestamp:
            return None
        self._pop_head(head)
        return head

    def fire_until(
        self,
        timestamp: int,
        set_key: Callable[[K, int], object],
        fire: Callable[[int, K, N], object],
    ) -> int:
        """Poll every timer ``<= timestamp`` and fire it (the heap queue's ``fire_until``)."""
        fired = 0
        entry = self.poll_until(timestamp)
        while entry is not None:
            set_key(entry[2], entry[4])
            fire(entry[0], entry[2], entry[3])
            fired += 1
            entry = self.poll_until(timestamp)
        return fired

    def clear(self) -> None:
        """Remove every timer (one range delete per column family)."""
        begin, end = key_group_bounds(self.key_group_range())
        self._check_open()
        self._pending.delete_range(begin, end, self._timers_cf)
        self._pending.delete_range(begin, end, self._index_cf)
        self._flush()
        for cache in self._caches:
            cache.clear()
        self._floors = list(self._prefixes)
        self._complete = [True] * len(self._caches)
        self._latest = [_NO_TIMER] * len(self._caches)
        self._heads.clear()
        self._size = 0

    # ------------------------------------------------------------------ queries

    def peek(self) -> TimerEntry[K, N] | None:
        """The head entry without removing it, or None when empty."""
        return self._peek()

    def contains(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return False
        index_key = (
            self._prefixes[idx] + self._index_suffix(key, namespace) + encode_timestamp(timestamp)
        )
        return self._index_get(index_key) is not None

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[TimerEntry[K, N]]:
        """Live entries, key group by key group, in firing order within a group: read from the
        store ``_ITER_CHUNK`` at a time (a queue of 10^7 timers is never one list)."""
        for kg in self.key_group_range():
            idx = kg - self._kg_start
            if self._complete[idx]:
                yield from list(self._caches[idx])
                continue
            start: bytes | None = None
            while True:
                chunk = self._read(idx, _ITER_CHUNK, start=start)
                yield from chunk
                if len(chunk) < _ITER_CHUNK:
                    break
                ts, seq = chunk[-1][0], chunk[-1][1]
                start = self._prefixes[idx] + encode_timestamp(ts) + seq.to_bytes(_SEQ_BYTES, "big")
                start += b"\x00"  # just past it

    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange.of(self._kg_start, self._kg_end)

    def entries_for_key_group(self, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key_group`` sorted by ``(timestamp, seq)`` (snapshot order)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        if self._complete[idx]:
            return list(self._caches[idx])
        return self._read(idx, None)

    def timers_for_namespace(self, key: K, namespace: object, key_group: int) -> list[int]:
        """Timestamps of the timers of ``(key, namespace)``, ascending (one prefix scan)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        try:
            prefix = self._prefixes[idx] + self._index_suffix(key, namespace)
        except TypeError:
            return []  # a namespace of another kind: no timer has it
        return [decode_timestamp(k, len(k) - 8) for k, _ in self._scan(self._index, prefix)]

    def key_timers(self, key: K, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key``, in insertion order (one prefix scan)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        prefix = self._prefixes[idx]
        found = []
        for index_key, seq_bytes in self._scan(self._index, prefix + self._keys.key_bytes(key)):
            ts_bytes = index_key[-8:]
            value = self._timers.get(prefix + ts_bytes + seq_bytes)  # flushed by _scan
            if not isinstance(value, bytes):
                raise RuntimeError(f"timer store corrupt: index row {index_key!r} has no timer")
            found.append(self._entry(decode_timestamp(ts_bytes), seq_bytes, value, key_group))
        found.sort(key=lambda e: e[1])
        return found

    def reset_key_timers(self, key: K, key_group: int, saved: Iterable[TimerEntry[K, N]]) -> None:
        """Make the timers of ``key`` exactly ``saved`` (entries :meth:`key_timers` returned
        earlier), with their original sequence numbers: their firing order is unchanged."""
        keep = {self._index_suffix(e[2], e[3]) + encode_timestamp(e[0]): e for e in saved}
        for e in self.key_timers(key, key_group):
            kept = keep.get(self._index_suffix(e[2], e[3]) + encode_timestamp(e[0]))
            if kept is None or kept[1] != e[1]:
                self.remove(e[0], e[2], e[3], key_group)
        idx = key_group - self._kg_start
        prefix = self._prefixes[idx]
        for suffix, e in keep.items():
            if self._index_get(prefix + suffix) is None:
                ts, seq, k, ns, _kg = e
                ns_bytes = self._ns_memo.bytes_of(ns)
                self._write(idx, prefix + suffix, prefix + encode_timestamp(ts), seq, k, ns_bytes)
                self._admit(idx, (ts, seq, k, ns, key_group))

    # ------------------------------------------------------------------ restore

    def add_restored(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add restored timers ``(timestamp, seq, key, namespace, key_group)``, with the
        sequence numbers :meth:`KeyGroupedTimerQueue.add_restored
        <sparktide.runtime.timers.queue.KeyGroupedTimerQueue.add_restored>` gives them: kept
        into an empty queue when distinct, else renumbered in ``(timestamp, seq, key_group)``
        order. One write batch for all of them."""
        seqs = {e[1] for e in entries}
        if self._size or len(seqs) != len(entries) or any(type(q) is not int for q in seqs):
            for ts, _old, key, ns, kg in sorted(entries, key=lambda e: (e[0], e[1], e[4])):
                self.add(ts, key, ns, kg)
            return
        start, end = self._kg_start, self._kg_end
        kept: dict[bytes, TimerEntry[K, N]] = {}
        for entry in entries:
            ts, seq, key, ns, kg = entry
            if kg < start or kg > end:
                self._raise_out_of_range(kg, key)
            index_key = self._prefixes[kg - start] + self._index_suffix(key, ns)
            index_key += encode_timestamp(ts)
            other = kept.get(index_key)
            if other is None or seq < other[1]:
                kept[index_key] = (ts, seq, key, ns, kg)
        self._check_open()
        batch = self._pending
        per_group: list[list[TimerEntry[K, N]]] = [[] for _ in self._caches]
        for index_key, (ts, seq, key, ns, kg) in kept.items():
            prefix = self._prefixes[kg - start]
            seq_bytes = seq.to_bytes(_SEQ_BYTES, "big")
            value = self._keys.value_bytes(key) + self._namespaces.value_bytes(ns)
            batch.put(prefix + encode_timestamp(ts) + seq_bytes, value, self._timers_cf)
            batch.put(index_key, seq_bytes, self._index_cf)
            per_group[kg - start].append((ts, seq, key, ns, kg))
        self._flush()
        size = self._cache_size
        for idx, group in enumerate(per_group):
            group.sort()
            self._caches[idx] = group[:size]
            self._floors[idx] = self._prefixes[idx]
            self._complete[idx] = len(group) <= size
            self._latest[idx] = group[-1][0] if group else _NO_TIMER
        self._heads = [c[0] for c in self._caches if c]
        heapify(self._heads)
        self._size = len(kept)
        self._seq = max(self._seq - 1, *seqs) + 1 if seqs else self._seq

    # ------------------------------------------------------------------ internals

    def _index_suffix(self, key: object, namespace: object) -> bytes:
        return self._key_memo.bytes_of(key) + self._ns_memo.bytes_of(namespace)

    def _check_open(self) -> None:
        if self._db is None:
            raise RuntimeError("the timer queue's store is closed; open a new queue")

    def _index_get(self, index_key: bytes) -> bytes | None:
        """The seq bytes of an index row, pending writes included."""
        overlay = self._overlay
        if index_key in overlay:
            return overlay[index_key]
        found = self._index.get(index_key)
        return found if isinstance(found, bytes) else None

    def _put_index(self, index_key: bytes, seq_bytes: bytes) -> None:
        self._pending.put(index_key, seq_bytes, self._index_cf)
        self._overlay[index_key] = seq_bytes
        if len(self._overlay) >= _FLUSH_EVERY:
            self._flush()

    def _delete_index(self, index_key: bytes) -> None:
        self._pending.delete(index_key, self._index_cf)
        self._overlay[index_key] = None
        if len(self._overlay) >= _FLUSH_EVERY:
            self._flush()

    def _flush(self) -> None:
        """Write the pending batch (before any read of the timers or a scan, and every
        ``_FLUSH_EVERY`` index changes)."""
        if self._pending.len():
            db = self._db
            if db is None:
                raise RuntimeError("the timer queue's store is closed; open a new queue")
            db.write(self._pending, self._write_options)
            self._pending = WriteBatch(raw_mode=True)
        self._overlay.clear()
        self._dirty.clear()

    def _write(
        self, idx: int, index_key: bytes, timer_prefix: bytes, seq: int, key: K, ns: bytes
    ) -> None:
        """Store one timer of local key group ``idx`` (its two rows go into the pending batch)."""
        seq_bytes = seq.to_bytes(_SEQ_BYTES, "big")
        self._check_open()
        timer_key = timer_prefix + seq_bytes
        self._pending.put(timer_key, self._keys.value_bytes(key) + ns, self._timers_cf)
        if timer_key < self._floors[idx]:
            self._floors[idx] = timer_key
        self._latest[idx] = max(self._latest[idx], decode_timestamp(timer_prefix, 2))
        self._dirty.add(idx)
        self._put_index(index_key, seq_bytes)
        self._size += 1

    def _admit(self, idx: int, entry: TimerEntry[K, N]) -> bool:
        """Put a stored timer into its key group's cache if it belongs to its head; return
        True if it became the queue's head."""
        cache = self._caches[idx]
        if self._complete[idx]:
            if len(cache) < self._cache_size:
                insort(cache, entry)
            else:
                self._complete[idx] = False
                if entry < cache[-1]:
                    insort(cache, entry)
                    cache.pop()
        elif entry < cache[-1]:  # an incomplete cache is never empty
            insort(cache, entry)
            if len(cache) > self._cache_size:
                cache.pop()
        if cache[0] is not entry:
            return False
        self._push_head(entry)
        return self._peek() is entry

    def _pop_head(self, head: TimerEntry[K, N]) -> None:
        """Remove ``head`` (the top of the heap of heads) from its cache and the store."""
        ts, seq, key, ns, kg = head
        idx = kg - self._kg_start
        prefix = self._prefixes[idx]
        ts_bytes = (ts + _SIGN).to_bytes(8, "big")  # encode_timestamp of a stored timestamp
        if self._db is None:
            self._check_open()
        timer_key = prefix + ts_bytes + seq.to_bytes(_SEQ_BYTES, "big")
        pending = self._pending
        pending.delete(timer_key, self._timers_cf)
        slot = self._slot  # the backend makes this key current next: encoded once for both
        if key is slot.key and kg == slot.key_group:
            key_prefix = slot.prefix
        else:
            key_prefix = slot.prefix_of(key, kg, self._key_memo.bytes_of)
        index_key = key_prefix + self._ns_memo.bytes_of(ns) + ts_bytes
        pending.delete(index_key, self._index_cf)
        # it was the first timer of its key group: the next one is above (refills do not see
        # its pending delete)
        self._floors[idx] = timer_key + b"\x00"
        self._size -= 1
        overlay = self._overlay
        overlay[index_key] = None
        if len(overlay) >= _FLUSH_EVERY:
            self._flush()
        cache = self._caches[idx]
        del cache[0]
        if cache:  # the key group's next timer replaces it at the top: one sift, no growth
            heapreplace(self._heads, cache[0])
        else:
            heappop(self._heads)
            self._new_head(idx)

    def _new_head(self, idx: int) -> None:
        """After the first entry of a cache left: refill it if it ran dry, push its new head."""
        cache = self._caches[idx]
        if not cache and not self._complete[idx]:
            if idx in self._dirty:  # the pending batch changes what the refill reads
                self._flush()
            cache[:] = self._read(idx, self._cache_size + 1, flush=False)
            self._complete[idx] = len(cache) <= self._cache_size
            del cache[self._cache_size :]
        if cache:
            self._push_head(cache[0])

    def _push_head(self, entry: TimerEntry[K, N]) -> None:
        heads = self._heads
        heappush(heads, entry)
        if len(heads) > 2 * len(self._caches) + _STALE_SLACK:
            heads[:] = [c[0] for c in self._caches if c]
            heapify(heads)

    def _peek(self) -> TimerEntry[K, N] | None:
        """The top of the heap of heads, after dropping stale entries."""
        heads, caches, start = self._heads, self._caches, self._kg_start
        while heads:
            top = heads[0]
            cache = caches[top[4] - start]
            if cache and cache[0] is top:
                return top
            heappop(heads)
        return None

    def _scan(
        self, cf: Rdict, prefix: bytes, start: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """The rows of ``cf`` whose keys start with ``prefix`` (from ``start`` on, if given),
        after writing the pending batch."""
        self._flush()
        it = cf.iter()
        it.seek(prefix if start is None else start)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                break
            yield k, it.value()
            it.next()
        else:
            check_scan(it)
        del it

    def _read(
        self, idx: int, limit: int | None, flush: bool = True, start: bytes | None = None
    ) -> list[TimerEntry[K, N]]:
        """The first ``limit`` (None: all) stored timers of local key group ``idx`` (from the
        store key ``start`` on, if given; without ``flush``: as the store holds them, the
        pending batch left out)."""
        if flush:
            self._flush()
        else:
            self._check_open()
        kg = idx + self._kg_start
        prefix = self._prefixes[idx]
        found: list[TimerEntry[K, N]] = []
        decoded = self._decoded
        stop = -1 if limit is None else limit
        it = self._timers.iter()
        it.seek(self._floors[idx] if start is None else start)
        while it.valid():
            k = it.key()
            if k[:2] != prefix:
                break
            v = it.value()
            parts = decoded.get(v)
            if parts is None:
                parts = self._decode(v)
            found.append(
                (
                    int.from_bytes(k[2:10], "big") - _SIGN,
                    int.from_bytes(k[10:], "big"),
                    parts[0],
                    parts[1],
                    kg,
                )
            )
            if len(found) == stop:
                break
            it.next()
        else:
            check_scan(it)
        del it
        return found

    def _decode(self, value: bytes) -> tuple[K, N]:
        """The key and namespace of a stored timer's value (remembered: keys have many)."""
        key, offset = self._keys.decode_value_from(value, 0)
        parts = (key, self._namespaces.decode_value(value, offset))
        decoded = self._decoded
        if len(decoded) >= _MEMO_SIZE:
            decoded.clear()
        decoded[value] = parts
        return parts

    def _entry(self, ts: int, seq_bytes: bytes, value: bytes, kg: int) -> TimerEntry[K, N]:
        key, offset = self._keys.decode_value_from(value, 0)
        ns = self._namespaces.decode_value(value, offset)
        return (ts, int.from_bytes(seq_bytes, "big"), key, ns, kg)

    def _raise_out_of_range(self, key_group: int, key: object) -> NoReturn:
        raise ValueError(
            f"timer for key {key!r} is in key group {key_group}, outside this queue's key-group "
            f"range [{self._kg_start}, {self._kg_end}]; timers must be registered by the subtask "
            "that owns the key (check the key selector and the max parallelism)"
        )

    def _check(self) -> None:
        """Assert every invariant against the store (for tests; O(n))."""
        total = 0
        heads = []
        for idx, cache in enumerate(self._caches):
            stored = self._read(idx, None)
            first = next(self._scan(self._timers, self._prefixes[idx]), None)
            if first is not None and first[0] < self._floors[idx]:
                raise AssertionError(f"timers of cache {idx} below its floor")
            total += len(stored)
            if len(cache) > self._cache_size:
                raise AssertionError(f"cache {idx} holds {len(cache)} > {self._cache_size}")
            if [e[:2] for e in cache] != [e[:2] for e in stored[: len(cache)]]:
                raise AssertionError(f"cache {idx} is not the head of its key group's timers")
            if stored and stored[-1][0] > self._latest[idx]:
                raise AssertionError(f"a timer of cache {idx} is after its latest bound")
            if self._complete[idx] and len(stored) != len(cache):
                raise AssertionError(f"complete flag of cache {idx} is wrong")
            if stored and not cache:
                raise AssertionError(f"cache {idx} is empty while its key group has timers")
            for ts, seq, key, ns, _kg in stored:
                index_key = self._prefixes[idx] + self._index_suffix(key, ns)
                index_key += encode_timestamp(ts)
                if self._index_get(index_key) != seq.to_bytes(_SEQ_BYTES, "big"):
                    raise AssertionError(f"index row missing for timer {(ts, seq, key, ns)}")
                if seq >= self._seq:
                    raise AssertionError("sequence counter went backwards")
            if cache:
                heads.append(cache[0])
        indexed = sum(1 for _ in self._scan(self._index, b""))
        if indexed != total:
            raise AssertionError(f"{indexed} index rows for {total} timers")
        if total != self._size:
            raise AssertionError(f"size {self._size} != {total} stored timers")
        live = {id(h) for h in heads}
        if live - {id(h) for h in self._heads}:
            raise AssertionError("a key group's head is missing from the heap of heads")
        if self._peek() is not (min(heads) if heads else None):
            raise AssertionError("the top of the heap of heads is not the earliest timer")
