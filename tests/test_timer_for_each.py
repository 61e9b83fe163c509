"""``InternalTimerService.for_each_event_time_timer`` / ``for_each_processing_time_timer``
(Flink's ``forEach*TimeTimer``): every timer once, with its key current, against a naive model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.timers.service import InternalTimerService


class Ignore:
    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        pass

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        pass


def service() -> tuple[InternalTimerService[object, object], HeapKeyedStateBackend]:
    key_groups = KeyGroupRange(0, 127)
    backend = HeapKeyedStateBackend(
        max_parallelism=128, key_group_range=key_groups, time_provider=lambda: 0
    )
    timers: InternalTimerService[object, object] = InternalTimerService(
        "user-timers", backend, ManualProcessingTimeService(0), Ignore(), key_groups
    )
    return timers, backend


TIMERS = st.lists(
    st.tuples(
        st.booleans(),  # event time?
        st.sampled_from(["a", "b", "c", 7, 42]),
        st.sampled_from([None, "w1", "w2"]),
        st.integers(1, 50),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(TIMERS)
def test_every_timer_once_with_its_key_current(
    timers: list[tuple[bool, object, object, int]],
) -> None:
    svc, backend = service()
    model: dict[bool, set[tuple[object, object, int]]] = {True: set(), False: set()}
    for event, key, namespace, ts in timers:
        backend.set_current_key(key)
        if event:
            svc.register_event_time_timer(namespace, ts)
        else:
            svc.register_processing_time_timer(namespace, ts)
        model[event].add((key, namespace, ts))
    for event in (True, False):
        seen: list[tuple[object, object, int]] = []

        def consumer(namespace: object, timestamp: int) -> None:
            seen.append((backend.current_key, namespace, timestamp))  # noqa: B023

        if event:
            svc.for_each_event_time_timer(consumer)
        else:
            svc.for_each_processing_time_timer(consumer)
        assert sorted(seen, key=repr) == sorted(model[event], key=repr)
        assert len(seen) == len(model[event])
        by_group: dict[int, list[int]] = {}
        for key, _ns, ts in seen:  # by (timestamp, insertion) within a key group
            backend.set_current_key(key)
            by_group.setdefault(backend.current_key_group, []).append(ts)
        assert all(ts == sorted(ts) for ts in by_group.values())


def test_the_consumer_may_delete_and_register_timers() -> None:
    svc, backend = service()
    for key in ("a", "b", "c"):
        backend.set_current_key(key)
        svc.register_event_time_timer("w", 10)
        svc.register_event_time_timer("w", 20)
    visited: list[tuple[object, int]] = []

    def move_later(namespace: object, timestamp: int) -> None:
        visited.append((backend.current_key, timestamp))
        svc.delete_event_time_timer(namespace, timestamp)
        svc.register_event_time_timer(namespace, timestamp + 100)

    svc.for_each_event_time_timer(move_later)
    assert sorted(visited, key=repr) == sorted(
        [(k, t) for k in "abc" for t in (10, 20)], key=repr
    )  # the timers present when the call started, once each
    for key in "abc":
        backend.set_current_key(key)
        assert svc.event_time_timers_of("w") == [110, 120]


def test_a_consumer_that_is_not_callable_is_named() -> None:
    svc, _ = service()
    with pytest.raises(TypeError, match=r"consumer must be a callable \(namespace, timestamp\)"):
        svc.for_each_processing_time_timer("print")  # type: ignore[arg-type]
