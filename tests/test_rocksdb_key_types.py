"""Keys of a declared key type in the RocksDB backend: serialized by type, round trips, store
keys contiguous per key group (and per key inside it), the declared type travels from
``key_by(..., key_type=...)`` to the subtask's backend and timers, a database remembers the
layout of its keys, and one key slot lets state and timers encode a key once. Timer queues:
iterated in chunks, and a queue resumed on its store still finds the timers it holds."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocksdict import Options, Rdict

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.timerservice import TimeDomain
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ListStateDescriptor, ValueStateDescriptor
from sparktide.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state import HeapKeyedStateBackend
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
from sparktide.runtime.state.rocksdb_layout import key_codec, key_group_of, key_layout, state_key
from sparktide.runtime.state.rocksdb_memory import open_bounded
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.queue_factory import RocksDBTimerQueueFactory

MAXP = 128
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# (declared type, keys of that type)
TYPED_KEYS: list[tuple[TypeInformation, st.SearchStrategy[Any]]] = [
    (Types.LONG(), st.integers(LONG_MIN, LONG_MAX)),
    (Types.INT(), st.integers(-(2**31), 2**31 - 1)),
    (Types.STRING(), st.text(max_size=12)),
    (Types.DOUBLE(), st.floats(allow_nan=False).map(lambda f: f + 0.0)),
    (Types.BOOLEAN(), st.booleans()),
    (
        Types.TUPLE([Types.STRING(), Types.LONG()]),
        st.tuples(st.text(max_size=6), st.integers(LONG_MIN, LONG_MAX)),
    ),
]
IDS = [key_layout(t) for t, _ in TYPED_KEYS]


@pytest.fixture
def root() -> Iterator[Path]:
    shm = Path("/dev/shm")
    path = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _rocksdb(directory: Path, key_type: Any) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend(
        max_parallelism=MAXP,
        key_group_range=KeyGroupRange(0, MAXP - 1),
        time_provider=lambda: 0,
        directory=directory,
        key_type=key_type,
    )


# ------------------------------------------------------------------ bytes


@pytest.mark.parametrize(("key_type", "keys"), TYPED_KEYS, ids=IDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_typed_key_bytes_round_trip_and_sort_contiguously_per_key_group(
    key_type: TypeInformation, keys: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    codec = key_codec(key_type)
    values = data.draw(st.lists(keys, min_size=1, max_size=30, unique=True))
    namespaces = [b"", b"\x01ns", b"\x02other"]
    rows = []
    for value in values:
        raw = codec.key_bytes(value)
        assert raw == codec.value_bytes(value)  # typed: one encoding for keys and values
        back, end = codec.decode_key_from(raw + b"tail", 0)
        assert (back, end) == (value, len(raw))
        assert type(back) is type(value)
        kg = assign_to_key_group(value, MAXP)
        rows.extend((state_key(kg, raw, ns), kg, raw) for ns in namespaces)
    rows.sort()
    # key groups ascend through the store: each one contiguous range
    groups = [kg for _, kg, _ in rows]
    assert groups == sorted(groups)
    assert all(key_group_of(sk) == kg for sk, kg, _ in rows)
    # inside a key group, the entries of one key are contiguous (no key's bytes prefix another's)
    seen: list[bytes] = []
    for _, _, raw in rows:
        if not seen or seen[-1] != raw:
            assert raw not in seen
            seen.append(raw)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(LONG_MIN, LONG_MAX), min_size=2, max_size=40, unique=True))
def test_long_keys_of_a_key_group_sort_as_numbers(values: list[int]) -> None:
    codec = key_codec(Types.LONG())
    rows = sorted(state_key(assign_to_key_group(v, MAXP), codec.key_bytes(v), b"") for v in values)
    decoded = [(key_group_of(sk), codec.decode_value(sk, 2)) for sk in rows]
    assert decoded == sorted(decoded)


def test_typed_keys_take_fewer_bytes_than_canonical_ones() -> None:
    long, canonical = key_codec(Types.LONG()), key_codec(None)
    assert len(long.key_bytes(2**40)) == 8 < len(canonical.key_bytes(2**40))
    assert key_layout(Types.LONG()) == "Long"
    assert key_layout(Types.PICKLED_BYTE_ARRAY()) == key_layout(None) == "canonical"


# ------------------------------------------------------------------ the backend


@pytest.mark.parametrize(("key_type", "keys"), TYPED_KEYS, ids=IDS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_state_of_typed_keys_matches_the_heap(
    key_type: TypeInformation, keys: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    values = data.draw(st.lists(keys, min_size=1, max_size=25))
    root = Path(tempfile.mkdtemp())
    rocks = _rocksdb(root / "db", key_type)
    heap = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=KeyGroupRange(0, MAXP - 1), time_provider=lambda: 0
    )
    try:
        for backend in (heap, rocks):
            count = backend.get_partitioned_state(ValueStateDescriptor("count", Types.LONG()))
            seen = backend.get_partitioned_state(ListStateDescriptor("seen", Types.LONG()))
            for i, value in enumerate(values):
                backend.set_current_key(value)
                count.update((count.value() or 0) + 1)
                seen.add(i)
        rocks.check_invariants()
        for value in values:
            for backend in (heap, rocks):
                backend.set_current_key(value)
            assert (
                rocks.get_partitioned_state(ValueStateDescriptor("count", Types.LONG())).value()
                == heap.get_partitioned_state(ValueStateDescriptor("count", Types.LONG())).value()
            )
        rocks_meta, rocks_groups = rocks.snapshot_state()
        heap_meta, heap_groups = heap.snapshot_state()
        assert rocks_meta == heap_meta
        assert rocks_groups.keys() == heap_groups.keys()
        for kg, by_name in heap_groups.items():
            for name, entries in by_name.items():
                got = rocks_groups[kg][name]
                assert sorted(map(repr, got)) == sorted(map(repr, entries))
                # keys come back with their declared type
                assert {type(k) for k, _, _ in got} == {type(k) for k, _, _ in entries}
        # restored into a heap, then back into a RocksDB backend of the same key type
        again = _rocksdb(root / "again", key_type)
        again.restore_state(rocks_meta, rocks_groups)
        assert again.snapshot_state() == (rocks_meta, rocks_groups)
        again.dispose()
    finally:
        rocks.dispose()
        shutil.rmtree(root, ignore_errors=True)


def test_a_key_that_does_not_fit_the_declared_type_is_named(root: Path) -> None:
    b = _rocksdb(root / "db", Types.LONG())
    with pytest.raises(TypeError, match=r"key 'abc' does not fit the declared key type Long"):
        b.set_current_key("abc")
    with pytest.raises(TypeError, match="does not fit the declared key type Long"):
        b.set_current_key_and_group(2**64, assign_to_key_group(2**64, MAXP))
    b.dispose()
    with pytest.raises(TypeError, match=r"key_type must be type information .*got str"):
        _rocksdb(root / "db2", "LONG")


def test_a_database_refuses_keys_of_another_layout(root: Path) -> None:
    path = str(root / "db")
    kw: dict[str, Any] = {
        "max_parallelism": MAXP,
        "key_group_range": KeyGroupRange(0, MAXP - 1),
        "time_provider": lambda: 0,
    }
    db = Rdict(path, Options(raw_mode=True))
    b = RocksDBKeyedStateBackend.attach(db, key_type=Types.LONG(), **kw)
    b.set_current_key(7)
    b.get_partitioned_state(ValueStateDescriptor("v", Types.LONG())).update(1)
    b.dispose()
    db.close()
    db = open_bounded(path)  # as a checkpoint's files or a worker's kept database are opened
    with pytest.raises(
        ValueError, match=r"key type was Types.LONG\(\) in the checkpoint and is undeclared"
    ):
        RocksDBKeyedStateBackend.attach(db, **kw)
    again = RocksDBKeyedStateBackend.attach(db, key_type=Types.LONG(), **kw)
    again.set_current_key(7)
    assert again.get_partitioned_state(ValueStateDescriptor("v", Types.LONG())).value() == 1
    again.dispose()
    db.close()


# ------------------------------------------------------------------ timers


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "add", "remove", "poll"]),
            st.integers(-5, 30),
            st.integers(LONG_MIN, LONG_MAX) | st.sampled_from([0, 1, -1, 2**40]),
        ),
        max_size=60,
    )
)
def test_a_typed_timer_queue_fires_as_the_heap_queue(ops: list[tuple[str, int, int]]) -> None:
    directory = tempfile.mkdtemp()
    factory = RocksDBTimerQueueFactory(directory, cache_size=2, key_type=Types.LONG())
    rocks = factory.create_timer_queue(
        "user-timers", TimeDomain.EVENT_TIME, KeyGroupRange(0, MAXP - 1)
    )
    heap: KeyGroupedTimerQueue[int, None] = KeyGroupedTimerQueue(KeyGroupRange(0, MAXP - 1))
    try:
        for op, ts, key in ops:
            kg = assign_to_key_group(key, MAXP)
            if op == "add":
                assert rocks.add(ts, key, None, kg) == heap.add(ts, key, None, kg)
            elif op == "remove":
                assert rocks.remove(ts, key, None, kg) == heap.remove(ts, key, None, kg)
            else:
                assert rocks.poll() == heap.poll()
        rocks.check_invariants()
        while heap:
            entry = rocks.poll()
            assert entry == heap.poll()
            assert entry is not None and type(entry[2]) is int
        assert rocks.poll() is None
    finally:
        factory.dispose()


def test_state_and_timers_share_one_key_slot_of_one_layout(root: Path) -> None:
    b = _rocksdb(root / "db", Types.LONG())
    with pytest.raises(ValueError, match="laid out as 'Long', not 'canonical'"):
        RocksDBTimerQueueFactory(root / "t0", slot=b.key_slot)
    factory = RocksDBTimerQueueFactory(root / "t1", key_type=Types.LONG(), slot=b.key_slot)
    queue = factory.create_timer_queue("s", TimeDomain.EVENT_TIME, KeyGroupRange(0, MAXP - 1))
    key = 10**12
    b.set_current_key(key)
    prefix = b.key_prefix
    assert b.key_slot.key is key and b.key_slot.prefix == prefix
    queue.add(5, key, None, b.current_key_group)
    # the timer's store keys start with the backend's prefix of the key
    assert queue.contains(5, key, None, b.current_key_group)
    fired = queue.poll()
    assert fired is not None and fired[2] == key
    other = 10**12 + 1
    b.set_current_key(other)
    b.set_current_key_and_group(fired[2], fired[4])  # the fired timer's key is current again
    assert b.key_prefix == prefix
    factory.dispose()
    b.dispose()


# ------------------------------------------------------------------ end to end


class _CountAndReport(KeyedProcessFunction):  # type: ignore[misc]
    """Counts per key; fires one timer per key; reports the layout of its backend's keys."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        backend = runtime_context._op.keyed_state_backend
        self.layout = getattr(backend, "_key_layout", "heap")

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(100)
        yield ("element", value[0], self.count.value(), self.layout)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        key = ctx.get_current_key()
        yield ("timer", key, type(key).__name__, self.count.value())


@pytest.mark.parametrize(
    ("key_type", "layout"),
    [(Types.LONG(), "Long"), (None, "canonical"), (Types.PICKLED_BYTE_ARRAY(), "canonical")],
)
def test_key_by_key_type_reaches_the_rocksdb_backend(key_type: Any, layout: str) -> None:
    data = [(k % 7 * 10**10, k) for k in range(40)]
    out = {}
    for name, backend in (
        ("heap", HashMapStateBackend()),
        ("rocksdb", EmbeddedRocksDBStateBackend()),
    ):
        env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        env.set_parallelism(2)
        env.set_state_backend(backend)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            lambda v, _: v[1]
        )
        stream = env.from_collection(data).assign_timestamps_and_watermarks(strategy)
        keyed = stream.key_by(lambda v: v[0], key_type=key_type)
        out[name] = list(keyed.process(_CountAndReport()).execute_and_collect())
    layouts = {row[3] for row in out["rocksdb"] if row[0] == "element"}
    assert layouts == {layout}
    strip = [row[:3] for row in out["rocksdb"]]
    assert strip == [row[:3] for row in out["heap"]]
    timers = [row for row in out["rocksdb"] if row[0] == "timer"]
    assert len(timers) == 7 and {row[2] for row in timers} == {"int"}


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 40)), max_size=80),
    st.integers(1, 5),
)
def test_iterating_a_queue_reads_it_in_chunks_in_firing_order(
    timers: list[tuple[int, int]], chunk: int
) -> None:
    from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

    rocks: RocksDBTimerQueue[int, None] = RocksDBTimerQueue(
        KeyGroupRange(0, 7),
        tempfile.mkdtemp(),
        cache_size=2,
        keys=key_codec(Types.LONG()),
        iter_chunk=chunk,
    )
    heap: KeyGroupedTimerQueue[int, None] = KeyGroupedTimerQueue(KeyGroupRange(0, 7))
    try:
        for ts, key in timers:
            kg = assign_to_key_group(key, 8)
            rocks.add(ts, key, None, kg)
            heap.add(ts, key, None, kg)
        for _ in range(len(timers) // 3):
            assert rocks.poll() == heap.poll()
        expected = [e for kg in range(8) for e in heap.entries_for_key_group(kg)]
        assert list(rocks) == expected
    finally:
        rocks.dispose()


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 20)), min_size=1, max_size=60),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 20)), max_size=30),
)
def test_a_resumed_queue_still_finds_the_timers_it_holds(
    before: list[tuple[int, int]], after: list[tuple[int, int]]
) -> None:
    from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

    directory = tempfile.mkdtemp()
    db = Rdict(directory, Options(raw_mode=True))
    kgs = KeyGroupRange(0, 7)
    heap: KeyGroupedTimerQueue[int, None] = KeyGroupedTimerQueue(kgs)
    try:
        first: RocksDBTimerQueue[int, None] = RocksDBTimerQueue(kgs, cache_size=2, db=db)
        for ts, key in before:
            kg = assign_to_key_group(key, 8)
            assert first.add(ts, key, None, kg) == heap.add(ts, key, None, kg)
        first.sync()
        first.close()
        resumed: RocksDBTimerQueue[int, None] = RocksDBTimerQueue(
            kgs, cache_size=2, db=db, resume=True
        )
        for ts, key in before + after:  # the timers it holds are found: no duplicates
            kg = assign_to_key_group(key, 8)
            assert resumed.add(ts, key, None, kg) == heap.add(ts, key, None, kg)
        resumed.check_invariants()
        while heap:
            assert resumed.poll() == heap.poll()
        resumed.close()
    finally:
        db.close()
        shutil.rmtree(directory, ignore_errors=True)
