"""The pending writes of a RocksDB timer queue alone: the overlay lookups see, when the batch
is written, and the floors refills read from."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_layout import encode_timestamp, key_codec, namespace_codec
from sparktide.runtime.timers.rocksdb_timer_store import TimerStore, timer_key
from sparktide.runtime.timers.rocksdb_timer_writes import PendingTimerWrites

Store = TimerStore[object, object]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s: Store = TimerStore.open(
        KeyGroupRange(0, 1), key_codec(None), namespace_codec(), directory=tmp_path / "db"
    )
    yield s
    s.dispose()


def put(writes: PendingTimerWrites[object, object], store: Store, idx: int, ts: int, seq: int):
    """Put timer ``(ts, seq)`` of key ``k{seq}``; return its timer key and index key."""
    key = f"k{seq}"
    ts_bytes = encode_timestamp(ts)
    index_key = store.prefixes[idx] + store.keys.key_bytes(key) + b"\x00" + ts_bytes
    stored_at = timer_key(store.prefixes[idx], ts_bytes, seq)
    value = store.keys.value_bytes(key) + store.namespaces.value_bytes(None)
    writes.put(idx, stored_at, value, index_key, seq.to_bytes(8, "big"))
    return stored_at, index_key


def test_lookups_see_pending_changes_the_store_sees_them_once_written(store: Store) -> None:
    writes = PendingTimerWrites(store, flush_every=3)
    _, first = put(writes, store, 0, 5, 0)
    assert writes.index_row(first) == bytes(8) and store.index_row(first) is None
    stored_at, second = put(writes, store, 0, 6, 1)
    writes.delete(0, stored_at, second)
    assert writes.index_row(second) is None  # deleted while pending
    assert store.index_row(first) is None  # two index changes of three: not written yet
    put(writes, store, 1, 7, 2)  # the third: the batch is written
    assert store.index_row(first) == bytes(8) and store.index_row(second) is None
    assert [e[:2] for e in store.read(1, store.prefixes[1], None)] == [(7, 2)]


def test_a_refill_writes_the_batch_only_when_it_changes_the_key_group(store: Store) -> None:
    writes = PendingTimerWrites(store, flush_every=1024)
    for seq, ts in enumerate([3, 1, 2]):
        put(writes, store, 0, ts, seq)
    writes.flush()
    first = timer_key(store.prefixes[0], encode_timestamp(1), 1)
    index_key = store.prefixes[0] + store.keys.key_bytes("k1") + b"\x00" + encode_timestamp(1)
    writes.delete_first(0, first, index_key)
    put(writes, store, 1, 9, 3)  # another key group changes
    # the floor is past the polled timer: the refill skips it without writing its delete
    assert [e[:2] for e in writes.read_head(0, 10)] == [(2, 2), (3, 0)]
    assert store.index_row(index_key) is not None  # still pending
    put(writes, store, 0, 0, 4)  # below the floor: it moves down, and the refill writes first
    assert [e[:2] for e in writes.read_head(0, 10)] == [(0, 4), (2, 2), (3, 0)]
    assert store.index_row(index_key) is None


def test_chunks_read_every_timer_of_a_key_group_in_order(store: Store) -> None:
    writes = PendingTimerWrites(store, flush_every=1024)
    for seq in range(7):
        put(writes, store, 1, 10 - seq // 2, seq)
    chunks = list(writes.chunks(1, 3))
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert [e for c in chunks for e in c] == writes.read_all(1)
    assert [e[0] for e in writes.read_all(1)] == [7, 8, 8, 9, 9, 10, 10]
    writes.delete_range(store.prefixes[0], store.prefixes[1] + b"\xff")
    assert writes.read_all(1) == [] and writes.floors == store.prefixes


def test_writes_after_close_say_the_store_is_closed(store: Store) -> None:
    writes = PendingTimerWrites(store, flush_every=1024)
    _, index_key = put(writes, store, 0, 1, 0)
    writes.close()  # writes what is pending
    assert store.index_row(index_key) == bytes(8)
    with pytest.raises(RuntimeError, match="store is closed"):
        put(writes, store, 0, 2, 1)
