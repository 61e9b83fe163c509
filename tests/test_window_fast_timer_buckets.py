"""The timer queue's per-timestamp buckets (many timers at one timestamp, as window ends give)
against a naive model: registrations in and out of time order, deletions, polls, a key's
timers saved and reset, compaction; ``check_invariants()`` after every step."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue

RANGE = KeyGroupRange(0, 3)
KEYS = ["a", "b", "c", "d", "e", 1, 2]


def _head(model: dict[Any, tuple[int, int]]) -> Any:
    return min(model, key=lambda t: model[t]) if model else None


def _timer(entry: Any) -> Any:
    return None if entry is None else (entry[0], entry[2], entry[3], entry[4])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.integers(1, 40), steps=st.integers(50, 600))
def test_buckets_agree_with_a_naive_queue(seed: int, spread: int, steps: int) -> None:
    rng = random.Random(seed)
    q: KeyGroupedTimerQueue[Any, Any] = KeyGroupedTimerQueue(RANGE)
    model: dict[Any, tuple[int, int]] = {}  # (ts, key, ns, kg) -> (ts, seq)
    seq = 0
    saved: dict[Any, tuple[list[Any], dict[Any, tuple[int, int]]]] = {}
    clock = 0
    for _ in range(steps):
        r = rng.random()
        key = rng.choice(KEYS)
        kg = KEYS.index(key) % 4
        if r < 0.45:  # register: mostly near the clock (ties), sometimes out of order
            clock += rng.randrange(3)
            ts = clock + rng.randrange(spread) - (rng.randrange(20) if rng.random() < 0.3 else 0)
            t = (ts, key, rng.choice([None, "w1", "w2"]), kg)
            new = t not in model
            became_head = q.add(*t)
            if new:
                model[t] = (ts, seq)
                seq += 1
            assert became_head == (new and _head(model) == t)
        elif r < 0.65 and model:  # delete a pending timer (or a missing one)
            missing = (clock, key, None, kg)
            t = rng.choice(sorted(model, key=repr)) if rng.random() < 0.8 else missing
            was_head = _head(model) == t
            assert q.remove(*t) == (t in model and was_head)
            model.pop(t, None)
        elif r < 0.8:  # poll until a bound
            bound = clock + rng.randrange(-5, 10)
            got = _timer(q.poll_until(bound))
            h = _head(model)
            if h is not None and h[0] <= bound:
                assert got == h
                del model[h]
            else:
                assert got is None
        elif r < 0.9:  # save a key's timers
            entries = q.key_timers(key, kg)
            saved[key] = (entries, {t: v for t, v in model.items() if t[1] == key})
            assert sorted((e[0], e[1]) for e in entries) == sorted(saved[key][1].values())
        elif key in saved:  # put a key's timers back to what was saved
            entries, timers = saved.pop(key)
            q.reset_key_timers(key, kg, entries)
            for t in [t for t in model if t[1] == key]:
                del model[t]
            model.update(timers)
        q.check_invariants()
        assert len(q) == len(model)
        assert _timer(q.peek()) == _head(model)
    order = [_timer(e) for e in iter(q.poll, None)]
    assert order == sorted(model, key=lambda t: model[t])


def test_a_thousand_timers_at_one_timestamp_fire_in_insertion_order() -> None:
    q: KeyGroupedTimerQueue[Any, Any] = KeyGroupedTimerQueue(KeyGroupRange(0, 0))
    q.add(50, "first", None, 0)  # the run ends at 50: the ones at 10 go to a bucket
    for i in range(1000):
        q.add(10, i, None, 0)
    for i in range(0, 1000, 3):
        q.remove(10, i, None, 0)
    q.check_invariants()
    fired = [e[2] for e in iter(q.poll, None)]
    assert fired == [i for i in range(1000) if i % 3] + ["first"]
