"""The key-grouped timer queue set against a naive model, with ``check_invariants()`` after
every step."""

from __future__ import annotations

import random

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue

RANGE = KeyGroupRange(10, 17)
timestamps = st.integers(min_value=-5, max_value=30)
keys = st.sampled_from(["a", "b", "c", 1, 2, (1, "x")])
namespaces = st.sampled_from([None, "w1", "w2"])
key_groups = st.integers(min_value=RANGE.start, max_value=RANGE.end)


class NaiveQueue:
    """A dict of timer -> insertion number; the head is the min of (timestamp, insertion)."""

    def __init__(self) -> None:
        self.timers: dict[tuple, tuple[int, int]] = {}  # (ts, key, ns, kg) -> (ts, seq)
        self.seq = 0

    def head(self):
        if not self.timers:
            return None
        return min(self.timers, key=lambda t: self.timers[t])

    def add(self, t) -> bool:
        if t in self.timers:
            return False
        self.timers[t] = (t[0], self.seq)
        self.seq += 1
        return self.head() == t

    def remove(self, t) -> bool:
        if t not in self.timers:
            return False
        was_head = self.head() == t
        del self.timers[t]
        return was_head

    def poll(self):
        h = self.head()
        if h is not None:
            del self.timers[h]
        return h


def as_timer(entry):
    return None if entry is None else (entry[0], entry[2], entry[3], entry[4])


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.q = KeyGroupedTimerQueue(RANGE)
        self.model = NaiveQueue()

    @rule(ts=timestamps, key=keys, ns=namespaces, kg=key_groups)
    def register(self, ts, key, ns, kg):
        assert self.q.add(ts, key, ns, kg) == self.model.add((ts, key, ns, kg))

    @rule(ts=timestamps, key=keys, ns=namespaces, kg=key_groups)
    def delete_any(self, ts, key, ns, kg):
        assert self.q.remove(ts, key, ns, kg) == self.model.remove((ts, key, ns, kg))

    @rule(data=st.data())
    def delete_existing(self, data):
        if self.model.timers:
            t = data.draw(st.sampled_from(sorted(self.model.timers, key=repr)))
            assert self.q.remove(*t) == self.model.remove(t)

    @rule()
    def poll(self):
        assert as_timer(self.q.poll()) == self.model.poll()

    @rule(limit=timestamps)
    def poll_until(self, limit):
        got = as_timer(self.q.poll_until(limit))
        h = self.model.head()
        if h is not None and h[0] <= limit:
            assert got == self.model.poll()
        else:
            assert got is None

    @invariant()
    def agrees_with_model(self):
        self.q.check_invariants()
        assert len(self.q) == len(self.model.timers)
        assert bool(self.q) == bool(self.model.timers)
        assert as_timer(self.q.peek()) == self.model.head()
        assert {as_timer(e) for e in self.q} == set(self.model.timers)
        for kg in RANGE:
            expected = sorted(
                (t for t in self.model.timers if t[3] == kg), key=lambda t: self.model.timers[t]
            )
            assert [as_timer(e) for e in self.q.entries_for_key_group(kg)] == expected


QueueMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
TestQueueAgainstModel = QueueMachine.TestCase


def test_ties_fire_in_insertion_order():
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 3))
    for i, key in enumerate(["z", "a", "m", "b"]):
        q.add(7, key, None, i % 4)
    assert [q.poll()[2] for _ in range(4)] == ["z", "a", "m", "b"]


def test_reregistering_after_delete_takes_a_new_position():
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 0))
    q.add(5, "a", None, 0)
    q.add(5, "b", None, 0)
    q.remove(5, "a", None, 0)
    q.add(5, "a", None, 0)
    q.check_invariants()
    assert [q.poll()[2] for _ in range(2)] == ["b", "a"]
    assert q.poll() is None


def test_mass_delete_compacts_the_heap():
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 0))
    for i in range(1000):
        q.add(i, i, None, 0)
    for i in range(1, 1000, 1):
        q.remove(i, i, None, 0)
        q.check_invariants() if i % 97 == 0 else None
    q.check_invariants()
    assert len(q) == 1
    assert q.heap_size() <= 2 * len(q) + 64
    assert q.poll()[0] == 0


def test_key_group_outside_range_names_both():
    q = KeyGroupedTimerQueue(KeyGroupRange(4, 7))
    with pytest.raises(ValueError, match=r"key group 9.*\[4, 7\]"):
        q.add(1, "k", None, 9)
    with pytest.raises(ValueError, match="key group 3"):
        q.remove(1, "k", None, 3)


def test_restored_entries_keep_their_order():
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 1))
    for key in ["c", "a", "b"]:
        q.add(3, key, None, 0)
    q.add(1, "x", "ns", 1)
    snap = q.entries_for_key_group(0) + q.entries_for_key_group(1)
    r = KeyGroupedTimerQueue(KeyGroupRange(0, 1))
    r.add_restored(snap)
    r.check_invariants()
    assert [(e[0], e[2]) for e in iter(r.poll, None)] == [(1, "x"), (3, "c"), (3, "a"), (3, "b")]


def test_restored_timers_keep_their_sequence_numbers():
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 1))
    for i, ts in enumerate([30, 10, 20, 10, 30, 20]):
        q.add(ts, f"k{i}", None, i % 2)
    q.remove(10, "k1", None, 1)
    q.poll()  # k3 at 10
    snap = q.entries_for_key_group(0) + q.entries_for_key_group(1)
    r = KeyGroupedTimerQueue(KeyGroupRange(0, 1))
    r.add_restored(snap)
    r.check_invariants()
    assert sorted(r) == sorted(snap)  # a snapshot after the restore is the one restored
    r.add(20, "new", None, 0)  # numbered after every restored timer: fires after them at 20
    r.check_invariants()
    assert max(e[1] for e in r) == max(e[1] for e in snap) + 1
    assert [e[2] for e in iter(r.poll, None)] == ["k2", "k5", "new", "k0", "k4"]


def test_restored_timers_whose_sequence_numbers_collide_are_renumbered_in_order():
    parts = []
    for kg, keys in ((0, ["a", "b", "c"]), (1, ["x", "y"])):  # two subtasks: seqs 0, 1, 2
        q = KeyGroupedTimerQueue(KeyGroupRange(kg, kg))
        for key in keys:
            q.add(5, key, None, kg)
        parts += q.entries_for_key_group(kg)
    r = KeyGroupedTimerQueue(KeyGroupRange(0, 1))
    r.add_restored(parts)
    r.check_invariants()
    assert sorted(e[1] for e in r) == [0, 1, 2, 3, 4]
    assert [e[2] for e in iter(r.poll, None)] == ["a", "x", "b", "y", "c"]  # (ts, seq, group)


@pytest.mark.parametrize("seed", range(4))
def test_a_rebuild_orders_like_a_sort_of_the_entries(seed: int) -> None:
    """A restore puts every timer in the run in ``(timestamp, seq)`` order, sorted by columns;
    timestamps beyond 64 bits or not ints take the sort of the tuples. Lists are taken as
    tuples, a timer there twice keeps its lowest sequence number, entries of a key group need
    not be adjacent (seed 1); firing order and numbering go on as after a restore."""
    rng = random.Random(seed)
    big = 1 << 70 if seed == 3 else 0
    seqs = rng.sample(range(10_000), 400)
    entries: list = []
    for seq in seqs:
        ts = rng.choice([big + rng.randrange(20), -rng.randrange(20), rng.randrange(10**12)])
        ts = ts + 0.5 if seed == 2 and rng.random() < 0.1 else ts
        key = rng.randrange(60)
        entry = (ts, seq, f"k{key}", rng.choice([None, "w"]), key % 4)
        entries.append(list(entry) if seed == 2 and rng.random() < 0.1 else entry)
    if seed == 1:
        entries.sort(key=lambda e: e[1])
    else:
        entries.sort(key=lambda e: e[4])
    firsts: dict = {}
    for e in entries:
        tkey = (e[0], e[2], e[3])
        firsts[tkey] = min(firsts.get(tkey, tuple(e)), tuple(e), key=lambda t: t[1])
    q = KeyGroupedTimerQueue(KeyGroupRange(0, 3))
    q.add_restored(entries)
    q.check_invariants()
    assert sorted(q) == sorted(firsts.values())
    q.add(25, "new", None, 1)
    q.check_invariants()
    fired = list(iter(q.poll, None))
    expected = [*firsts.values(), (25, max(seqs) + 1, "new", None, 1)]
    assert fired == sorted(expected, key=lambda e: e[:2])
