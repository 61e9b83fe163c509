"""The RocksDB timer store alone (column families, key layout, reads), and the layout of the
rows databases and native checkpoints hold: rows written before the queue was split into its
parts resume, and the queue writes the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rocksdict import Rdict

from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state.rocksdb_layout import encode_timestamp, key_codec, namespace_codec
from sparktide.runtime.state.rocksdb_memory import timer_options
from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue
from sparktide.runtime.timers.rocksdb_timer_store import (
    NO_TIMER,
    TimerStore,
    open_store,
    timer_key,
)

FAMILIES = ("s/timers", "s/index")

# The rows of one queue on a shared store (cache_size=1, max parallelism 128) after
# add(20, "a"), add(10, "b"), add(10, 7), add(20, "a", TimeWindow(0, 20)), add(-5, ("t", 1)),
# add(10, "a"), remove(10, "a"), sync(): key group | timestamp | seq -> key | namespace, and
# key group | key | namespace | timestamp -> seq, and the count and next seq.
TIMER_ROWS = [
    ("0016800000000000000a0000000000000001", "53000000016200"),
    ("00377ffffffffffffffb0000000000000004", "540000000253000000017449000000010100"),
    ("005180000000000000140000000000000000", "53000000016100"),
    ("005180000000000000140000000000000003", "5300000001610180000000000000008000000000000014"),
    ("0071800000000000000a0000000000000002", "49000000010700"),
]
INDEX_ROWS = [
    ("001653000000016200800000000000000a", "0000000000000001"),
    ("00375400000002530000000174490000000101007ffffffffffffffb", "0000000000000004"),
    ("0051530000000161008000000000000014", "0000000000000000"),
    ("005153000000016101800000000000000080000000000000148000000000000014", "0000000000000003"),
    ("007149000000010700800000000000000a", "0000000000000002"),
]
META = (b"timer-queue:s/timers", "00000000000000050000000000000006")
FIRING = [
    (-5, 4, ("t", 1), None, 55),
    (10, 1, "b", None, 22),
    (10, 2, 7, None, 113),
    (20, 0, "a", None, 81),
    (20, 3, "a", TimeWindow(0, 20), 81),
]


def kg(key: object) -> int:
    return assign_to_key_group(key, 128)


def test_rows_in_the_checkpointed_layout_resume_with_their_order_and_identity(
    tmp_path: Path,
) -> None:
    db = open_store(tmp_path / "store")
    for name, rows in zip(FAMILIES, (TIMER_ROWS, INDEX_ROWS), strict=True):
        cf = db.create_column_family(name, timer_options(index=name == FAMILIES[1]))
        for k, v in rows:
            cf.put(bytes.fromhex(k), bytes.fromhex(v))
        del cf
    db.put(META[0], bytes.fromhex(META[1]))
    q = RocksDBTimerQueue(
        KeyGroupRange(0, 127), db=db, column_families=FAMILIES, cache_size=1, resume=True
    )
    q.check_invariants()
    assert len(q) == 5
    assert not q.add(10, "b", None, kg("b"))  # found in the store: not a second timer
    assert q.contains(20, "a", TimeWindow(0, 20), kg("a"))
    assert q.add(10, "a", None, kg("a")) is False  # after 10 "b": not the head
    assert [q.poll() for _ in range(3)] == FIRING[:3]
    assert q.poll() == (10, 6, "a", None, 81)  # the recorded next seq
    assert [q.poll() for _ in range(2)] == FIRING[3:]
    q.close()
    db.close()


def test_the_queue_writes_rows_in_the_checkpointed_layout(tmp_path: Path) -> None:
    db = open_store(tmp_path / "store")
    q = RocksDBTimerQueue(KeyGroupRange(0, 127), db=db, column_families=FAMILIES, cache_size=1)
    for ts, key, ns in [
        (20, "a", None),
        (10, "b", None),
        (10, 7, None),
        (20, "a", TimeWindow(0, 20)),
        (-5, ("t", 1), None),
        (10, "a", None),
    ]:
        q.add(ts, key, ns, kg(key))
    q.remove(10, "a", None, kg("a"))
    q.sync()
    q.close()
    for name, rows in zip(FAMILIES, (TIMER_ROWS, INDEX_ROWS), strict=True):
        cf = db.get_column_family(name)
        assert [(k.hex(), v.hex()) for k, v in cf.items()] == rows
        del cf
    assert db.get(META[0]) == bytes.fromhex(META[1])
    db.close()


def _store(tmp_path: Path, **kw: Any) -> TimerStore[object, object]:
    return TimerStore.open(KeyGroupRange(4, 6), key_codec(None), namespace_codec(), **kw)


def _put(store: TimerStore[object, object], key_group: int, ts: int, seq: int, key: str) -> None:
    value = store.keys.value_bytes(key) + store.namespaces.value_bytes(None)
    store.timers.put(timer_key(store.prefixes[key_group - 4], encode_timestamp(ts), seq), value)


def test_a_store_reads_a_key_group_from_a_store_key_in_firing_order(tmp_path: Path) -> None:
    store = _store(tmp_path, directory=tmp_path / "own")
    for ts, seq, key in [(7, 3, "c"), (-2, 9, "a"), (7, 1, "b")]:
        _put(store, 5, ts, seq, key)
    _put(store, 6, 100, 0, "z")
    everything = store.read(1, store.prefixes[1], None)
    assert everything == [(-2, 9, "a", None, 5), (7, 1, "b", None, 5), (7, 3, "c", None, 5)]
    assert store.read(1, store.prefixes[1], 2) == everything[:2]
    past_first = timer_key(store.prefixes[1], encode_timestamp(-2), 9) + b"\x00"
    assert store.read(1, past_first, None) == everything[1:]
    assert (store.latest(0), store.latest(1), store.latest(2)) == (NO_TIMER, 7, 100)
    assert store.count() == (0, 0)  # no index rows
    store.dispose()
    assert not (tmp_path / "own").exists()


def test_a_store_on_a_shared_database_resumes_or_starts_over(tmp_path: Path) -> None:
    db = open_store(tmp_path / "shared")
    first = _store(tmp_path, db=db, names=FAMILIES)
    assert not first.resumed and first.read_meta() is None
    _put(first, 4, 1, 0, "a")
    first.write_meta(1, 1)
    first.close()
    again = _store(tmp_path, db=db, names=FAMILIES, resume=True)
    assert again.resumed and again.read_meta() == (1, 1)
    assert again.read(0, again.prefixes[0], None) == [(1, 0, "a", None, 4)]
    again.close()
    fresh = _store(tmp_path, db=db, names=FAMILIES)  # not resumed: a working copy, emptied
    assert not fresh.resumed and fresh.read(0, fresh.prefixes[0], None) == []
    fresh.dispose()  # drops its column families and what it recorded
    assert not set(FAMILIES) & set(Rdict.list_cf(db.path())) and db.get(META[0]) is None
    db.close()


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = _store(tmp_path, directory=tmp_path / "own")
    store.close()
    store.close()  # idempotent
    for use in (
        lambda: store.read(0, b"", None),
        lambda: store.index_row(b"x"),
        lambda: store.write_meta(0, 0),
    ):
        with pytest.raises(RuntimeError, match="store is closed"):
            use()
