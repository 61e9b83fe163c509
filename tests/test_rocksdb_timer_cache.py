"""The in-memory part of a RocksDB timer queue alone: the first timers of each key group and
the heap of their heads, against a model of the store (sorted lists)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.timers.queue import TimerEntry
from sparktide.runtime.timers.rocksdb_timer_cache import TimerCache

Entry = TimerEntry[object, None]


class Model:
    """A cache over a store modelled as one sorted list per key group."""

    def __init__(self, groups: int, size: int) -> None:
        self.cache: TimerCache[object, None] = TimerCache(start=10, groups=groups, size=size)
        self.stored: list[list[Entry]] = [[] for _ in range(groups)]
        self.seq = 0

    def add(self, idx: int, ts: int, key: object) -> Entry:
        entry: Entry = (ts, self.seq, key, None, idx + 10)
        self.seq += 1
        self.stored[idx] = sorted([*self.stored[idx], entry])
        self.cache.note_latest(idx, ts)
        assert self.cache.admit(idx, entry) == (entry == self.head())
        return entry

    def head(self) -> Entry | None:
        return min((s[0] for s in self.stored if s), default=None)

    def poll(self) -> Entry | None:
        head = self.cache.peek()
        if head is not None:
            self.stored[head[4] - 10].remove(head)
            if self.cache.pop(head):
                self.refill(head[4] - 10)
        return head

    def remove(self, idx: int, position: int) -> None:
        entry = self.stored[idx].pop(position)
        if self.cache.discard(idx, entry[0], entry[1]):
            self.refill(idx)

    def refill(self, idx: int) -> None:
        self.cache.fill(idx, self.stored[idx][: self.cache.size + 1])

    def check(self) -> None:
        for idx, stored in enumerate(self.stored):
            self.cache.check_invariants(idx, stored)
        self.cache.check_top()
        assert self.cache.peek() == self.head()


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3), st.integers(-5, 20), st.integers(0, 4)),
        st.tuples(st.just("poll")),
        st.tuples(st.just("remove"), st.integers(0, 3), st.integers(0, 50)),
    ),
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(OPS, st.integers(1, 4))
def test_the_cache_keeps_the_head_of_every_key_group(ops: list[tuple], size: int) -> None:
    model = Model(groups=4, size=size)
    for op in ops:
        if op[0] == "add":
            _, idx, ts, key = op
            model.add(idx, ts, key)
        elif op[0] == "poll":
            expected = model.head()
            assert model.poll() == expected
        elif model.stored[op[1]]:
            model.remove(op[1], op[2] % len(model.stored[op[1]]))
        model.check()
    while model.poll() is not None:
        model.check()
    assert all(not s for s in model.stored)


def test_the_cache_holds_the_first_timers_of_a_key_group() -> None:
    cache: TimerCache[object, None] = TimerCache(start=0, groups=1, size=2)
    for seq, (ts, key) in enumerate([(5, "a"), (3, "b"), (9, "c")]):
        cache.note_latest(0, ts)
        cache.admit(0, (ts, seq, key, None, 0))
    assert not cache.complete[0] and [e[0] for e in cache.entries[0]] == [3, 5]
    assert cache.holds(0, 3, "b", None) and cache.holds(0, 5, "a", None)
    assert not cache.holds(0, 3, "b", ("w",)) and not cache.holds(0, 4, "b", None)
    assert not cache.holds(0, 9, "c", None)  # past the last entry: only the store knows


def test_the_top_stays_right_through_many_stale_heads() -> None:
    cache: TimerCache[object, None] = TimerCache(start=0, groups=2, size=4)
    cache.admit(1, (100, 0, "x", None, 1))
    for seq in range(1, 500):  # each new head of key group 0 leaves the one before stale
        cache.note_latest(0, 1000 - seq)
        assert cache.admit(0, (1000 - seq, seq, "k", None, 0)) is (1000 - seq < 100)
        cache.discard(0, 1000 - seq, seq)
        cache.check_invariants(0, [])
    assert cache.peek() == (100, 0, "x", None, 1)
    assert cache.pop(cache.peek()) is False and cache.peek() is None
