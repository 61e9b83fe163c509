"""The RocksDB store of a timer queue: two column families, their key layout, reads in chunks.

A queue's timers live in two column families of one RocksDB database
(:mod:`~sparktide.runtime.state.rocksdb_layout` gives the bytes of key groups, keys,
namespaces and timestamps):

* ``timers``: ``key group | timestamp | seq -> key | namespace`` (values as
  :meth:`~sparktide.runtime.state.rocksdb_layout.Codec.value_bytes` gives them), so one key
  group's timers are one contiguous range, in firing order ``(timestamp, seq)``;
* ``timer-index``: ``key group | key | namespace | timestamp -> seq``, for deduplication,
  removal by ``(timestamp, key, namespace)`` and the timers of a key.

``seq`` is 8 bytes big-endian. The default column family holds, per queue, the count and the
next sequence number :meth:`TimerStore.write_meta` recorded (key ``timer-queue:`` + the timers
column family's name). A :class:`TimerStore` reads and writes these rows; it knows nothing of
caches or of writes not yet made (see
:mod:`~sparktide.runtime.timers.rocksdb_timer_writes`).

>>> import tempfile
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.rocksdb_layout import key_codec, namespace_codec
>>> store = TimerStore.open(
...     KeyGroupRange(0, 1), key_codec(None), namespace_codec(), directory=tempfile.mkdtemp())
>>> value = store.keys.value_bytes("a") + store.namespaces.value_bytes(None)
>>> store.timers.put(timer_key(store.prefixes[1], encode_timestamp(5), 0), value)
>>> store.read(1, store.prefixes[1], None)
[(5, 0, 'a', None, 1)]
>>> store.latest(1), store.latest(0) == NO_TIMER
(5, True)
>>> store.dispose()
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, NoReturn, cast

from rocksdict import ColumnFamily, Rdict, WriteBatch, WriteOptions

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_layout import (
    TIMESTAMP_BYTES,
    Codec,
    decode_timestamp,
    encode_timestamp,
    key_group_prefix,
)
from sparktide.runtime.state.rocksdb_memory import timer_options
from sparktide.runtime.timers.queue import K, N, TimerEntry

__all__ = [
    "INDEX_CF",
    "MEMO_SIZE",
    "NO_TIMER",
    "SEQ_BYTES",
    "TIMERS_CF",
    "BytesMemo",
    "TimerStore",
    "encode_timestamp",
    "open_store",
    "timer_key",
]

TIMERS_CF = "timers"
"""The default name of a queue's timers column family."""
INDEX_CF = "timer-index"
"""The default name of a queue's index column family."""
SEQ_BYTES = 8
"""Bytes of a sequence number in store keys and index values."""
NO_TIMER = -(2**63) - 1
"""Before every timestamp: the latest timestamp of a key group without timers."""
MEMO_SIZE = 1 << 14
"""Keys whose bytes, values whose decoding, a queue remembers (then it starts over)."""

_META_PREFIX = b"timer-queue:"
_SIGN = 2**63
_CLOSED_MESSAGE = "the timer queue's store is closed; open a new queue"


def timer_key(prefix: bytes, ts_bytes: bytes, seq: int) -> bytes:
    """The store key of a timer in the timers column family.

    >>> timer_key(b"\\x00\\x01", encode_timestamp(0), 2).hex()
    '000180000000000000000000000000000002'
    """
    return prefix + ts_bytes + seq.to_bytes(SEQ_BYTES, "big")


class BytesMemo(dict[object, bytes]):
    """The key bytes of values, remembered (at most ``MEMO_SIZE``: then it starts over).

    >>> memo = BytesMemo(lambda v: str(v).encode())
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
            if len(self) >= MEMO_SIZE:
                self.clear()
            self[value] = found
        return found


class _Closed:
    """Stands in for the handles of a closed store: any use raises a clear error."""

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)  # introspection (copy, doctest) sees a plain object
        raise RuntimeError(_CLOSED_MESSAGE)


CLOSED = _Closed()
"""The stand-in of every handle (column family, write batch) of a closed store."""


def open_store(directory: str | os.PathLike[str]) -> Rdict:
    """A fresh store in ``directory`` for queues to share (what the directory held is wiped:
    a working copy, timers come back by
    :meth:`~sparktide.runtime.timers.rocksdb_queue.RocksDBTimerQueue.add_restored`)."""
    return Rdict(str(_fresh_directory(directory)), timer_options())


def _fresh_directory(directory: str | os.PathLike[str]) -> Path:
    path = Path(directory)
    if path.exists():
        shutil.rmtree(path)  # a working copy: what it held comes back by add_restored
    path.mkdir(parents=True)
    return path


class TimerStore(Generic[K, N]):
    """The two column families of one queue (timers, index) for the key groups
    ``key_group_range``, with the codecs of keys and namespaces. Build it with :meth:`open`."""

    __slots__ = (
        "_decoded",
        "_directory",
        "_kg_start",
        "db",
        "index",
        "index_cf",
        "keys",
        "names",
        "namespaces",
        "prefixes",
        "resumed",
        "timers",
        "timers_cf",
        "write_options",
    )

    def __init__(
        self,
        key_group_range: KeyGroupRange,
        keys: Codec,
        namespaces: Codec,
        db: Rdict,
        names: tuple[str, str],
        directory: Path | None,
        resumed: bool,
    ) -> None:
        self._kg_start = key_group_range.start
        self.keys = keys
        self.namespaces = namespaces
        self.prefixes = [key_group_prefix(kg) for kg in key_group_range]
        self.db: Rdict | None = db
        self.names = names
        self._directory = directory  # a store of the queue's own (None: the owner closes it)
        self.resumed = resumed
        self.timers = db.get_column_family(names[0])
        self.index = db.get_column_family(names[1])
        self.timers_cf = db.get_column_family_handle(names[0])
        self.index_cf = db.get_column_family_handle(names[1])
        self._decoded: dict[bytes, tuple[K, N]] = {}
        self.write_options = WriteOptions()
        # a property at run time (rocksdict's stubs declare a method)
        setattr(self.write_options, "disable_wal", True)  # noqa: B010

    @classmethod
    def open(
        cls,
        key_group_range: KeyGroupRange,
        keys: Codec,
        namespaces: Codec,
        *,
        directory: str | os.PathLike[str] | None = None,
        db: Rdict | None = None,
        names: tuple[str, str] = (TIMERS_CF, INDEX_CF),
        resume: bool = False,
    ) -> TimerStore[K, N]:
        """A store of its own in ``directory`` (wiped first), or the column families ``names``
        of the shared store ``db``: continued if ``resume`` and both exist (:attr:`resumed`),
        else created empty."""
        if db is None:
            path = _fresh_directory(cast("str | os.PathLike[str]", directory))
            families = {names[0]: timer_options(), names[1]: timer_options(index=True)}
            own = Rdict(str(path), timer_options(), column_families=families)
            return cls(key_group_range, keys, namespaces, own, names, path, False)
        existing = set(Rdict.list_cf(db.path()))
        resumed = resume and names[0] in existing and names[1] in existing
        if not resumed:
            for name in names:
                if name in existing:  # a working copy: its timers come by add_restored
                    db.drop_column_family(name)
            db.create_column_family(names[0], timer_options())
            db.create_column_family(names[1], timer_options(index=True))
        return cls(key_group_range, keys, namespaces, db, names, None, resumed)

    # ------------------------------------------------------------------ rows

    def write(self, batch: WriteBatch) -> None:
        """Write ``batch`` (no write-ahead log: a checkpoint is what survives a failure)."""
        db = self.db
        if db is None:
            raise RuntimeError(_CLOSED_MESSAGE)
        db.write(batch, self.write_options)

    def index_row(self, index_key: bytes) -> bytes | None:
        """The seq bytes of an index row, or None."""
        found = self.index.get(index_key)
        return found if isinstance(found, bytes) else None

    def timer_of(self, index_key: bytes, seq_bytes: bytes, key_group: int) -> TimerEntry[K, N]:
        """The timer an index row names (its key, namespace and timestamp come from the timers
        column family)."""
        idx = key_group - self._kg_start
        ts_bytes = index_key[-TIMESTAMP_BYTES:]
        value = self.timers.get(self.prefixes[idx] + ts_bytes + seq_bytes)
        if not isinstance(value, bytes):
            raise RuntimeError(f"timer store corrupt: index row {index_key!r} has no timer")
        key, ns = self.decode(value)
        return (decode_timestamp(ts_bytes), int.from_bytes(seq_bytes, "big"), key, ns, key_group)

    def decode(self, value: bytes) -> tuple[K, N]:
        """The key and namespace of a stored timer's value (remembered: keys have many)."""
        parts = self._decoded.get(value)
        if parts is not None:
            return parts
        key, offset = self.keys.decode_value_from(value, 0)
        parts = (key, self.namespaces.decode_value(value, offset))
        if len(self._decoded) >= MEMO_SIZE:
            self._decoded.clear()
        self._decoded[value] = parts
        return parts

    # ------------------------------------------------------------------ reads

    def read(self, idx: int, start: bytes, limit: int | None) -> list[TimerEntry[K, N]]:
        """The first ``limit`` (None: all) timers of local key group ``idx`` from the store key
        ``start`` on, in firing order (chunks of a key group: ``start`` just past the last timer
        of the chunk before)."""
        if self.db is None:
            raise RuntimeError(_CLOSED_MESSAGE)
        kg = idx + self._kg_start
        prefix = self.prefixes[idx]
        found: list[TimerEntry[K, N]] = []
        decoded = self._decoded
        stop = -1 if limit is None else limit
        it = self.timers.iter()
        it.seek(start)
        while it.valid():
            k = it.key()
            if k[:2] != prefix:
                break
            v = it.value()
            parts = decoded.get(v)
            if parts is None:
                parts = self.decode(v)
            ts = int.from_bytes(k[2:10], "big") - _SIGN
            found.append((ts, int.from_bytes(k[10:], "big"), parts[0], parts[1], kg))
            if len(found) == stop:
                break
            it.next()
        else:
            check_scan(it)
        del it
        return found

    def latest(self, idx: int) -> int:
        """The timestamp of the last timer of local key group ``idx`` (one backward seek), or
        ``NO_TIMER``."""
        prefix = self.prefixes[idx]
        it = self.timers.iter()
        it.seek_for_prev(prefix + b"\xff" * (TIMESTAMP_BYTES + SEQ_BYTES))
        latest = NO_TIMER
        if it.valid():
            k = it.key()
            if k[:2] == prefix:
                latest = decode_timestamp(k, 2)
        else:
            check_scan(it)
        del it
        return latest

    def timer_rows(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The rows of the timers column family under ``prefix``."""
        return self._scan(self.timers, prefix)

    def index_rows(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The rows of the index column family under ``prefix``."""
        return self._scan(self.index, prefix)

    def _scan(self, cf: Rdict, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        it = cf.iter()
        it.seek(prefix)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                break
            yield k, it.value()
            it.next()
        else:
            check_scan(it)
        del it

    def int_property(self, name: str) -> tuple[int | None, int | None]:
        """A RocksDB integer property (``rocksdb.block-cache-capacity``, ...) of the timers and
        of the index column family."""
        return self.timers.property_int_value(name), self.index.property_int_value(name)

    # ------------------------------------------------------------------ what resuming needs

    def _meta_key(self) -> bytes:
        return _META_PREFIX + self.names[0].encode()

    def read_meta(self) -> tuple[int, int] | None:
        """The count and next sequence number :meth:`write_meta` recorded, or None."""
        raw = cast(Rdict, self.db).get(self._meta_key())
        if isinstance(raw, bytes) and len(raw) == 16:
            return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
        return None

    def write_meta(self, size: int, seq: int) -> None:
        """Record the queue's count and next sequence number (what a resumed queue reads)."""
        db = self.db
        if db is None:
            raise RuntimeError(_CLOSED_MESSAGE)
        meta = size.to_bytes(8, "big") + seq.to_bytes(8, "big")
        db.put(self._meta_key(), meta, self.write_options)

    def count(self) -> tuple[int, int]:
        """The number of index rows and the sequence number past all of them (a scan: for a
        queue resumed on column families never synced)."""
        size = seq = 0
        for _key, value in self.index_rows(b""):
            size += 1
            seq = max(seq, int.from_bytes(value, "big") + 1)
        return size, seq

    # ------------------------------------------------------------------ life cycle

    def close(self) -> None:
        """Let go of the column families; close a store of the queue's own (its files stay).
        Idempotent."""
        db, self.db = self.db, None
        # every handle keeps the database open: drop them before closing it
        self.timers = self.index = cast(Rdict, CLOSED)
        self.timers_cf = self.index_cf = cast(ColumnFamily, CLOSED)
        if db is not None and self._directory is not None:
            db.close()

    def dispose(self) -> None:
        """Close, and delete a store of the queue's own; on a shared store, drop the column
        families and the recorded count."""
        db = self.db
        self.close()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
        elif db is not None:
            for name in self.names:
                db.drop_column_family(name)
            db.delete(self._meta_key())
