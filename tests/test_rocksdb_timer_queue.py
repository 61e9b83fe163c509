"""The RocksDB timer queue against the heap queue: the same results, entries and firing order on
random operation sequences (duplicates, equal timestamps, removal, restore, tiny caches)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.window.windows import GlobalWindow, TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.timers import rocksdb_queue
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# keys the heap treats as one (1, 1.0, True; 0 and -0.0; tuples of them) next to distinct ones
KEYS = [1, 1.0, True, 0, -0.0, 2, "a", "b", ("a", 1), ("a", 1.0), None, b"x", 2**70, 0.5]
NAMESPACES = [None, TimeWindow(0, 10), TimeWindow(-5, 3), GlobalWindow()]
TIMESTAMPS = st.one_of(st.integers(-3, 6), st.sampled_from([LONG_MIN, LONG_MAX, 10**12]))


def same(a, b) -> bool:
    """Equal entries whose keys and namespaces also have the same types."""
    if a is None or b is None:
        return a is b
    return a == b and type(a[2]) is type(b[2]) and type(a[3]) is type(b[3])


def same_list(a, b) -> bool:
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))


class Pair:
    """The heap queue and the RocksDB queue, driven together."""

    def __init__(
        self, tmp_path, max_parallelism: int, cache_size: int, flush_every: int = 1024
    ) -> None:
        self.maxp = max_parallelism
        self.range = KeyGroupRange(0, max_parallelism - 1)
        self.cache_size = cache_size
        self.flush_every = flush_every
        self.tmp_path = tmp_path
        self.opened = 0
        self.heap = KeyGroupedTimerQueue(self.range)
        self.rocks = self._open()

    def _open(self) -> RocksDBTimerQueue:
        self.opened += 1
        return RocksDBTimerQueue(
            self.range,
            self.tmp_path / f"db{self.opened}",
            self.cache_size,
            flush_every=self.flush_every,
        )

    def kg(self, key) -> int:
        return assign_to_key_group(key, self.maxp)

    def reopen(self) -> None:
        """Both queues restored from the heap's snapshot, into new queues."""
        snapshot = [e for kg in self.range for e in self.heap.entries_for_key_group(kg)]
        random.Random(len(snapshot)).shuffle(snapshot)
        self.rocks.dispose()
        self.heap = KeyGroupedTimerQueue(self.range)
        self.rocks = self._open()
        self.heap.add_restored(list(snapshot))
        self.rocks.add_restored(list(snapshot))

    def check(self) -> None:
        # (the heap queue's own _check is not called: after reset_key_timers it may hold a dead
        # copy of a timer next to the live one, equal in (timestamp, seq), which it flags)
        self.rocks.check_invariants()
        assert len(self.rocks) == len(self.heap)
        assert bool(self.rocks) == bool(self.heap)
        assert same(self.rocks.peek(), self.heap.peek())
        assert sorted(self.rocks) == sorted(self.heap)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), TIMESTAMPS, st.sampled_from(KEYS), st.sampled_from(NAMESPACES)),
        st.tuples(st.just("add"), TIMESTAMPS, st.integers(0, 300), st.sampled_from(NAMESPACES)),
        st.tuples(
            st.just("remove"), TIMESTAMPS, st.sampled_from(KEYS), st.sampled_from(NAMESPACES)
        ),
        st.tuples(st.just("poll")),
        st.tuples(st.just("poll_until"), TIMESTAMPS),
        st.tuples(st.just("key"), st.sampled_from(KEYS), st.sampled_from(NAMESPACES)),
        st.tuples(st.just("reset"), st.sampled_from(KEYS), TIMESTAMPS),
        st.tuples(st.just("restore")),
        st.tuples(st.just("restore_into"), st.lists(TIMESTAMPS, max_size=3)),
        st.tuples(st.just("clear")),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    ops,
    st.sampled_from([1, 4, 128]),
    st.sampled_from([1, 2, 3, 128]),
    st.sampled_from([1, 3, 1024]),
    st.integers(1, 4),
)
def test_same_results_and_firing_order_as_the_heap_queue(
    tmp_path_factory, ops, maxp, cache, flush_every, check_every
):
    # small write batches, and checks (which write the pending batch) only now and then
    pair = Pair(tmp_path_factory.mktemp("q"), maxp, cache, flush_every)
    heap = pair.heap
    try:
        for step, op in enumerate(ops):
            heap, rocks = pair.heap, pair.rocks
            name = op[0]
            if name == "add":
                _, ts, key, ns = op
                kg = pair.kg(key)
                assert rocks.add(ts, key, ns, kg) == heap.add(ts, key, ns, kg)
                assert rocks.contains(ts, key, ns, kg) and heap.contains(ts, key, ns, kg)
            elif name == "remove":
                _, ts, key, ns = op
                kg = pair.kg(key)
                assert rocks.contains(ts, key, ns, kg) == heap.contains(ts, key, ns, kg)
                assert rocks.remove(ts, key, ns, kg) == heap.remove(ts, key, ns, kg)
            elif name == "poll":
                assert same(rocks.poll(), heap.poll())
            elif name == "poll_until":
                assert same(rocks.poll_until(op[1]), heap.poll_until(op[1]))
            elif name == "key":
                _, key, ns = op
                kg = pair.kg(key)
                assert rocks.timers_for_namespace(key, ns, kg) == heap.timers_for_namespace(
                    key, ns, kg
                )
                assert same_list(rocks.entries_for_key_group(kg), heap.entries_for_key_group(kg))
                assert same_list(
                    rocks.key_timers(key, kg), sorted(heap.key_timers(key, kg), key=lambda e: e[1])
                )
            elif name == "reset":
                # save a key's timers, change them, put them back
                _, key, ts = op
                kg = pair.kg(key)
                saved_heap, saved_rocks = heap.key_timers(key, kg), rocks.key_timers(key, kg)
                for q in (heap, rocks):
                    q.add(ts, key, None, kg)
                    for e in q.key_timers(key, kg)[:1]:
                        q.remove(e[0], e[2], e[3], kg)
                heap.reset_key_timers(key, kg, saved_heap)
                rocks.reset_key_timers(key, kg, saved_rocks)
            elif name == "restore":
                pair.reopen()
            elif name == "restore_into":
                # timers of another snapshot whose sequence numbers collide: renumbered
                entries = [(ts, 0, i, None, pair.kg(i)) for i, ts in enumerate(op[1])]
                heap.add_restored(list(entries))
                rocks.add_restored(list(entries))
            elif name == "clear":
                heap.clear()
                rocks.clear()
            assert len(rocks) == len(heap)
            assert same(rocks.peek(), heap.peek())
            if step % check_every == 0:
                pair.check()
        # drain: the whole firing order
        fired_heap, fired_rocks = [], []
        while (e := pair.heap.poll()) is not None:
            fired_heap.append(e)
        while (e := pair.rocks.poll()) is not None:
            fired_rocks.append(e)
        assert same_list(fired_rocks, fired_heap)
        pair.check()
    finally:
        pair.rocks.dispose()


def test_many_key_groups_and_a_tiny_cache_fire_in_the_heap_order(tmp_path):
    rng = random.Random(7)
    r = KeyGroupRange(10, 300)
    heap = KeyGroupedTimerQueue(r)
    with RocksDBTimerQueue(r, tmp_path / "db", cache_size=2) as rocks:
        live = []
        for i in range(3000):
            key = rng.randrange(5000)
            kg = assign_to_key_group(key, 1024)
            if kg not in r:
                continue
            ts = rng.randrange(-50, 200)
            assert rocks.add(ts, key, None, kg) == heap.add(ts, key, None, kg)
            live.append((ts, key, kg))
            if i % 5 == 0:
                ts, key, kg = live.pop(rng.randrange(len(live)))
                assert rocks.remove(ts, key, None, kg) == heap.remove(ts, key, None, kg)
            if i % 7 == 0:
                until = rng.randrange(-50, 50)
                while (e := heap.poll_until(until)) is not None:
                    assert rocks.poll_until(until) == e
                assert rocks.poll_until(until) is None
        rocks.check_invariants()
        assert len(rocks) == len(heap) > 300
        assert [rocks.poll() for _ in range(len(rocks))] == [heap.poll() for _ in range(len(heap))]


def test_timers_beyond_the_cache_stay_in_the_store(tmp_path):
    with RocksDBTimerQueue(KeyGroupRange(0, 0), tmp_path / "db", cache_size=4) as q:
        for ts in range(1000, 0, -1):
            q.add(ts, "k", None, 0)
        assert q.cached_count(0) == 4 and len(q) == 1000
        assert [q.poll()[0] for _ in range(10)] == list(range(1, 11))
        q.check_invariants()


def test_key_group_outside_range_names_both(tmp_path):
    with RocksDBTimerQueue(KeyGroupRange(0, 3), tmp_path / "db") as q:
        with pytest.raises(ValueError, match=r"key group 9, outside .* range \[0, 3\]"):
            q.add(1, "k", None, 9)
        with pytest.raises(ValueError, match="key group 9"):
            q.add_restored([(1, 0, "k", None, 9)])
        assert not q.contains(1, "k", None, 9) and q.entries_for_key_group(9) == []
        with pytest.raises(ValueError, match="cache_size must be an int >= 1"):
            RocksDBTimerQueue(KeyGroupRange(0, 3), tmp_path / "other", cache_size=0)


def test_open_wipes_the_directory_and_dispose_deletes_it(tmp_path):
    path = tmp_path / "db"
    q = RocksDBTimerQueue(KeyGroupRange(0, 3), path)
    q.add(5, "k", None, 1)
    q.close()
    q.close()  # idempotent
    for use in (q.clear, lambda: q.add(1, "k", None, 1), lambda: q.contains(5, "k", None, 1)):
        with pytest.raises(RuntimeError, match="closed"):
            use()
    again = RocksDBTimerQueue(KeyGroupRange(0, 3), path)
    assert len(again) == 0 and list(again) == [] and not again.contains(5, "k", None, 1)
    again.dispose()
    assert not path.exists()


def test_queues_sharing_a_store_keep_their_own_timers(tmp_path):
    db = rocksdb_queue.open_store(tmp_path / "store")
    full = KeyGroupRange(0, 127)
    a = RocksDBTimerQueue(full, db=db, column_families=("a/timers", "a/index"), cache_size=1)
    b = RocksDBTimerQueue(full, db=db, column_families=("b/timers", "b/index"), cache_size=1)
    for ts in (3, 1, 2):
        a.add(ts, "k", None, 9)
    b.add(7, "k", None, 9)
    assert [a.poll()[0] for _ in range(3)] == [1, 2, 3] and a.poll() is None
    assert b.peek()[0] == 7 and len(b) == 1
    a.dispose()  # drops its column families only
    assert b.poll()[0] == 7
    b.close()
    db.close()


def test_a_queue_needs_exactly_one_of_directory_and_store(tmp_path):
    full = KeyGroupRange(0, 127)
    with pytest.raises(ValueError, match="either directory"):
        RocksDBTimerQueue(full)
    db = rocksdb_queue.open_store(tmp_path / "store")
    with pytest.raises(ValueError, match="either directory"):
        RocksDBTimerQueue(full, tmp_path / "q", db=db)
    with pytest.raises(ValueError, match="column_families"):
        RocksDBTimerQueue(full, db=db, column_families=("same", "same"))
    db.close()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-20, 60), st.integers(0, 400), st.booleans()),
        min_size=1,
        max_size=200,
    ),
    st.integers(1, 4),
    st.booleans(),
)
def test_a_resumed_queue_continues_the_timers_its_store_holds(
    tmp_path_factory, steps, cache_size, synced
):
    """Rounds of adds, removes and polls; between rounds the queue is closed and a new one
    resumes the store (synced, or never synced: counted by a scan) and goes on as the heap
    queue does, firing order included."""
    full = KeyGroupRange(0, 31)
    db = rocksdb_queue.open_store(tmp_path_factory.mktemp("store"))
    families = ("t/timers", "t/index")
    heap: KeyGroupedTimerQueue = KeyGroupedTimerQueue(full)
    rocks = RocksDBTimerQueue(full, db=db, column_families=families, cache_size=cache_size)
    for i, (ts, key, remove) in enumerate(steps):
        kg = assign_to_key_group(key, 32)
        if remove:
            assert rocks.remove(ts, key, None, kg) == heap.remove(ts, key, None, kg)
        else:
            assert rocks.add(ts, key, None, kg) == heap.add(ts, key, None, kg)
        if i % 9 == 8:
            until = ts // 2
            while (e := heap.poll_until(until)) is not None:
                assert rocks.poll_until(until) == e
        if i % 13 == 12:  # the next batch: a new queue on the same store
            if synced:
                rocks.sync()
            rocks.close()
            rocks = RocksDBTimerQueue(
                full, db=db, column_families=families, cache_size=cache_size, resume=True
            )
            rocks.check_invariants()
            assert len(rocks) == len(heap)
    assert [rocks.poll() for _ in range(len(rocks))] == [heap.poll() for _ in range(len(heap))]
    rocks.close()
    db.close()


def test_a_factory_on_a_kept_database_resumes_its_services_queues(tmp_path):
    from sparktide.core.timerservice import TimeDomain
    from sparktide.runtime.timers.queue_factory import (
        RocksDBTimerQueueFactory,
        recorded_timer_services,
    )

    db = rocksdb_queue.open_store(tmp_path / "store")
    full = KeyGroupRange(0, 127)
    factory = RocksDBTimerQueueFactory(None, db=db)
    late = factory.create_timer_queue("late", TimeDomain.PROCESSING_TIME, full)
    user = factory.create_timer_queue("user", TimeDomain.EVENT_TIME, full)
    user.add(5, "k", None, 9)
    late.add(7, "j", None, 3)
    factory.sync()
    factory.dispose()  # the queues go, the database and its timers stay
    again = RocksDBTimerQueueFactory(None, db=db)
    # created in another order: each (service, domain) finds its own column families
    user = again.create_timer_queue("user", TimeDomain.EVENT_TIME, full)
    late = again.create_timer_queue("late", TimeDomain.PROCESSING_TIME, full)
    assert (user.poll()[:3], late.poll()[:3]) == ((5, 0, "k"), (7, 0, "j"))
    assert set(recorded_timer_services(db)) == {"late", "user"}
    again.dispose()
    db.close()
