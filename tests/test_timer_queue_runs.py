"""The timer queue's sorted run (timers registered in time order skip the heap) against a naive
model, on operation sequences whose timestamps mostly ascend, so that timers keep moving between
the run, the heap and the firing loop of the timer service."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.service import InternalTimerService

RANGE = KeyGroupRange(3, 6)
KEYS = ["a", "b", "c", 7, (1, "x")]


class NaiveQueue:
    """A dict of timer -> (timestamp, insertion number); the head is the smallest."""

    def __init__(self) -> None:
        self.timers: dict[tuple[object, ...], tuple[int, int]] = {}
        self.seq = 0

    def head(self) -> tuple[object, ...] | None:
        return min(self.timers, key=self.timers.__getitem__) if self.timers else None

    def add(self, t: tuple[object, ...]) -> bool:
        if t in self.timers:
            return False
        self.timers[t] = (t[0], self.seq)  # type: ignore[assignment]
        self.seq += 1
        return self.head() == t

    def remove(self, t: tuple[object, ...]) -> bool:
        if t not in self.timers:
            return False
        was_head = self.head() == t
        del self.timers[t]
        return was_head

    def poll_until(self, limit: int) -> tuple[object, ...] | None:
        h = self.head()
        if h is None or h[0] > limit:  # type: ignore[operator]
            return None
        del self.timers[h]
        return h


def _timer(entry: tuple[object, ...] | None) -> tuple[object, ...] | None:
    return None if entry is None else (entry[0], entry[2], entry[3], entry[4])


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 400), disorder=st.floats(0, 1))
def test_mostly_ascending_timers_match_the_model(seed: int, steps: int, disorder: float) -> None:
    rng = random.Random(seed)
    q: KeyGroupedTimerQueue[object, object] = KeyGroupedTimerQueue(RANGE)
    model = NaiveQueue()
    clock = 0
    for step in range(steps):
        op = rng.random()
        if op < 0.55:
            clock += rng.randrange(3)
            ts = clock - rng.randrange(20) if rng.random() < disorder else clock
            t = (ts, rng.choice(KEYS), rng.choice([None, "w"]), rng.randint(3, 6))
            assert q.add(*t) == model.add(t)
        elif op < 0.75 and model.timers:
            t = rng.choice(sorted(model.timers, key=repr))
            assert q.remove(*t) == model.remove(t)  # type: ignore[arg-type]
        elif op < 0.8:
            t = (clock - rng.randrange(10), rng.choice(KEYS), None, rng.randint(3, 6))
            assert q.remove(*t) == model.remove(t)
        else:
            limit = clock - rng.randrange(15)
            assert _timer(q.poll_until(limit)) == model.poll_until(limit)
        if step % 16 == 0:
            q.check_invariants()
        assert _timer(q.peek()) == model.head()
        assert len(q) == len(model.timers)
    q.check_invariants()
    for kg in RANGE:
        expected = sorted((t for t in model.timers if t[3] == kg), key=model.timers.__getitem__)
        assert [_timer(e) for e in q.entries_for_key_group(kg)] == expected


class _Keys:
    current_key: object = None
    current_key_group: int = 3

    def set_current_key_and_group(self, key: object, key_group: int) -> None:
        self.current_key, self.current_key_group = key, key_group


class _Recorder:
    """Fires timers into a list; some firings register or delete other timers."""

    def __init__(self, keys: _Keys, rng: random.Random) -> None:
        self.keys, self.rng, self.fired = keys, rng, []
        self.service: InternalTimerService[object, object] | None = None

    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        self.fired.append((timestamp, key, namespace))
        assert self.service is not None
        r = self.rng.random()
        if r < 0.3:  # a timer at or before the watermark fires in the same advance
            self.service.register_event_time_timer(namespace, timestamp + self.rng.randrange(-2, 8))
        elif r < 0.45:
            self.service.delete_event_time_timer(namespace, timestamp + self.rng.randrange(6))

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        raise AssertionError("no processing-time timers here")


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), disorder=st.floats(0, 1))
def test_firing_loop_fires_what_polling_the_queue_gives(seed: int, disorder: float) -> None:
    """``advance_watermark`` (its own loop over the run and the heap) fires the timers in the
    order a plain ``poll_until`` loop over the same operations gives."""
    fired = []
    for inline in (True, False):
        rng = random.Random(seed)
        keys = _Keys()
        target = _Recorder(keys, random.Random(seed + 1))
        service: InternalTimerService[object, object] = InternalTimerService(
            "t", keys, ManualProcessingTimeService(), target, RANGE
        )
        target.service = service
        clock = 0
        for _ in range(300):
            clock += rng.randrange(4)
            keys.set_current_key_and_group(rng.choice(KEYS), rng.randint(3, 6))
            ts = clock - rng.randrange(30) if rng.random() < disorder else clock + 5
            service.register_event_time_timer(rng.choice([None, "w"]), ts)
            if rng.random() < 0.1:
                watermark = clock - rng.randrange(10)
                if inline:
                    service.advance_watermark(watermark)
                else:  # the reference: poll the queue one timer at a time
                    queue = service.event_time_timers()
                    while (e := queue.poll_until(watermark)) is not None:
                        keys.set_current_key_and_group(e[2], e[4])
                        target.on_event_time(e[0], e[2], e[3])
            service.event_time_timers().check_invariants()
        fired.append(target.fired)
    assert fired[0] == fired[1]
    assert fired[0]
