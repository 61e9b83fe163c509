"""InternalTimerService and InternalTimeServiceManager semantics (docs/semantics.md: timers), on
both timer queues: heap and RocksDB."""

from __future__ import annotations

from typing import Any

import pytest

from sparktide.core.window.windows import GlobalWindow, TimeWindow
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.timers.manager import InternalTimeServiceManager
from sparktide.runtime.timers.queue_factory import (
    HeapTimerQueueFactory,
    RocksDBTimerQueueFactory,
    TimerQueueFactory,
)

MAXP = 128
FULL = KeyGroupRange(0, MAXP - 1)
# namespaces both queues store (windows: the RocksDB queue has layouts for them)
W, OTHER, AGAIN = TimeWindow(0, 10), TimeWindow(0, 20), GlobalWindow()


class Recorder:
    """A triggerable that records (domain, timestamp, key, namespace, key seen in the context)."""

    def __init__(self, backend: HeapKeyedStateBackend) -> None:
        self.backend = backend
        self.fired: list[tuple[str, int, Any, Any]] = []
        self.on_fire: Any = None

    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        assert self.backend.current_key == key, "key context not set before the callback"
        self.fired.append(("event", timestamp, key, namespace))
        if self.on_fire:
            self.on_fire(timestamp, key, namespace)

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        assert self.backend.current_key == key
        self.fired.append(("proc", timestamp, key, namespace))
        if self.on_fire:
            self.on_fire(timestamp, key, namespace)


class RecordingClock(ManualProcessingTimeService):
    """A manual clock that also records every physical registration."""

    def __init__(self) -> None:
        super().__init__(0)
        self.registrations: list[int] = []
        self.callback_args: list[int] = []

    def register_timer(self, timestamp, callback):  # type: ignore[no-untyped-def]
        self.registrations.append(timestamp)

        def spy(t: int) -> None:
            self.callback_args.append(t)
            callback(t)

        return super().register_timer(timestamp, spy)


@pytest.fixture(params=["heap", "rocksdb"])
def make_factory(request, tmp_path):
    """Makes timer queue factories of the parametrized kind (each in its own directory)."""
    made: list[TimerQueueFactory] = []

    def make() -> TimerQueueFactory:
        if request.param == "heap":
            factory: TimerQueueFactory = HeapTimerQueueFactory()
        else:  # a tiny cache: refills from the store happen in small tests too
            factory = RocksDBTimerQueueFactory(tmp_path / f"timers{len(made)}", cache_size=2)
        made.append(factory)
        return factory

    yield make
    for factory in made:
        factory.dispose()


@pytest.fixture
def env(make_factory):
    clock = RecordingClock()
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=FULL, time_provider=clock.get_current_processing_time
    )
    manager = InternalTimeServiceManager(backend, clock, FULL, make_factory())
    rec = Recorder(backend)
    svc = manager.get_internal_timer_service("user-timers", rec)
    return clock, backend, manager, rec, svc


def reg_event(backend, svc, key, ts, ns=None):
    backend.set_current_key(key)
    svc.register_event_time_timer(ns, ts)


def reg_proc(backend, svc, key, ts, ns=None):
    backend.set_current_key(key)
    svc.register_processing_time_timer(ns, ts)


def test_event_timers_fire_in_timestamp_then_insertion_order(env):
    _, backend, manager, rec, svc = env
    for key, ts in [("b", 20), ("a", 10), ("c", 20), ("a", 20), ("z", 5)]:
        reg_event(backend, svc, key, ts)
    manager.advance_watermark(19)
    assert [(t, k) for _, t, k, _ in rec.fired] == [(5, "z"), (10, "a")]
    manager.advance_watermark(20)
    assert [(t, k) for _, t, k, _ in rec.fired[2:]] == [(20, "b"), (20, "c"), (20, "a")]
    assert svc.current_watermark() == 20
    assert svc.num_event_time_timers() == 0


def test_duplicate_timer_kept_once_and_delete_missing_is_noop(env):
    _, backend, manager, rec, svc = env
    reg_event(backend, svc, "a", 10)
    reg_event(backend, svc, "a", 10)
    reg_event(backend, svc, "a", 10, ns=W)
    assert svc.num_event_time_timers() == 2
    backend.set_current_key("a")
    svc.delete_event_time_timer(None, 99)
    svc.delete_event_time_timer(OTHER, 10)
    assert svc.num_event_time_timers() == 2
    manager.advance_watermark(MAX_TIMESTAMP)
    assert rec.fired == [("event", 10, "a", None), ("event", 10, "a", W)]


def test_timer_registered_in_callback_at_or_before_watermark_fires_in_same_advance(env):
    _, backend, manager, rec, svc = env
    reg_event(backend, svc, "k", 10)

    def chain(ts, key, ns):
        if ts < 40:
            svc.register_event_time_timer(ns, ts + 10)  # key context is the firing timer's key

    rec.on_fire = chain
    manager.advance_watermark(35)
    assert [t for _, t, _, _ in rec.fired] == [10, 20, 30]
    assert svc.num_event_time_timers() == 1  # the timer at 40 waits for a later watermark
    manager.advance_watermark(40)
    assert [t for _, t, _, _ in rec.fired] == [10, 20, 30, 40]


def test_deleting_a_pending_timer_inside_a_callback_prevents_it(env):
    _, backend, manager, rec, svc = env
    reg_event(backend, svc, "a", 10)
    reg_event(backend, svc, "b", 10)

    def delete_b(ts, key, ns):
        if key == "a":
            backend.set_current_key("b")
            svc.delete_event_time_timer(None, 10)

    rec.on_fire = delete_b
    manager.advance_watermark(10)
    assert [k for _, _, k, _ in rec.fired] == ["a"]


def test_watermark_starts_at_min_and_timers_at_min_fire(env):
    _, backend, manager, rec, svc = env
    assert svc.current_watermark() == MIN_TIMESTAMP
    reg_event(backend, svc, "a", MIN_TIMESTAMP)
    manager.advance_watermark(MIN_TIMESTAMP)
    assert rec.fired == [("event", MIN_TIMESTAMP, "a", None)]


def test_same_name_same_service_and_watermark_advances_all(env):
    _, backend, manager, rec, svc = env
    assert manager.get_internal_timer_service("user-timers", rec) is svc
    rec2 = Recorder(backend)
    other = manager.get_internal_timer_service("window-timers", rec2)
    assert other is not svc
    reg_event(backend, svc, "a", 5)
    reg_event(backend, other, "a", 6, ns=W)
    manager.advance_watermark(10)
    assert rec.fired == [("event", 5, "a", None)]
    assert rec2.fired == [("event", 6, "a", W)]
    with pytest.raises(ValueError, match="already bound"):
        manager.get_internal_timer_service("user-timers", rec2)


def test_only_the_head_processing_timer_is_registered(env):
    clock, backend, _, rec, svc = env
    reg_proc(backend, svc, "a", 100)
    reg_proc(backend, svc, "b", 200)  # later than the head: no new physical registration
    reg_proc(backend, svc, "c", 150)
    assert clock.registrations == [100]
    reg_proc(backend, svc, "d", 50)  # earlier: replaces the registration
    assert clock.registrations == [100, 50]
    assert clock.num_registered_timers() == 1
    clock.set_current_time(120)
    assert [(t, k) for _, t, k, _ in rec.fired] == [(50, "d"), (100, "a")]
    # the callback received 50 (the registered timestamp) and only fired timers <= 50, then
    # registered the new head 100, whose callback fired "a" and registered 150
    assert clock.registrations == [100, 50, 100, 150]
    clock.set_current_time(1000)
    assert [(t, k) for _, t, k, _ in rec.fired][2:] == [(150, "c"), (200, "b")]
    assert svc.num_processing_time_timers() == 0
    assert clock.num_registered_timers() == 0


def test_processing_callback_gets_the_registered_timestamp(env):
    clock, backend, _, rec, svc = env
    reg_proc(backend, svc, "a", 7)
    clock.set_current_time(1000)
    assert clock.callback_args == [7]
    assert rec.fired == [("proc", 7, "a", None)]


def test_deleted_processing_head_fires_nothing_and_moves_on(env):
    clock, backend, _, rec, svc = env
    reg_proc(backend, svc, "a", 10)
    reg_proc(backend, svc, "b", 20)
    backend.set_current_key("a")
    svc.delete_processing_time_timer(None, 10)
    clock.set_current_time(15)
    assert rec.fired == []
    clock.set_current_time(20)
    assert rec.fired == [("proc", 20, "b", None)]


def test_processing_timer_registered_in_callback_in_the_past_fires(env):
    clock, backend, _, rec, svc = env
    reg_proc(backend, svc, "a", 10)
    rec.on_fire = lambda ts, key, ns: (
        svc.register_processing_time_timer(AGAIN, 5) if ns is None else None
    )
    clock.set_current_time(10)
    assert ("proc", 5, "a", AGAIN) in rec.fired
    assert svc.num_processing_time_timers() == 0


def test_timer_of_foreign_key_group_is_refused():
    clock = ManualProcessingTimeService()
    rng = KeyGroupRange(0, 63)
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=rng, time_provider=clock.get_current_processing_time
    )
    key = next(k for k in map(str, range(1000)) if assign_to_key_group(k, MAXP) >= 64)
    with pytest.raises(ValueError, match="key group"):
        backend.set_current_key(key)


def test_snapshot_restore_reregisters_processing_head(env, make_factory):
    _clock, backend, manager, _rec, svc = env
    reg_proc(backend, svc, "a", 300)
    reg_proc(backend, svc, "b", 100)
    reg_event(backend, svc, "c", 7, ns=W)
    snap = manager.snapshot()

    clock2 = RecordingClock()
    backend2 = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=FULL, time_provider=clock2.get_current_processing_time
    )
    manager2 = InternalTimeServiceManager(backend2, clock2, FULL, make_factory())
    manager2.restore(snap)
    assert clock2.registrations == []  # no operator bound yet
    rec2 = Recorder(backend2)
    svc2 = manager2.get_internal_timer_service("user-timers", rec2)
    assert clock2.registrations == [100]
    assert (svc2.num_event_time_timers(), svc2.num_processing_time_timers()) == (1, 2)
    clock2.set_current_time(500)
    manager2.advance_watermark(10)
    assert rec2.fired == [
        ("proc", 100, "b", None),
        ("proc", 300, "a", None),
        ("event", 7, "c", W),
    ]


class CountingBackend(HeapKeyedStateBackend):
    """A heap backend that counts the calls of set_current_key_and_group."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key_calls = 0

    def set_current_key_and_group(self, key: object, key_group: int) -> None:
        self.key_calls += 1
        super().set_current_key_and_group(key, key_group)


def test_a_timer_key_is_assigned_until_the_backend_has_key_hooks() -> None:
    from sparktide.common.time import Time
    from sparktide.core.state import StateTtlConfig, ValueStateDescriptor

    clock = RecordingClock()
    backend = CountingBackend(
        max_parallelism=MAXP, key_group_range=FULL, time_provider=clock.get_current_processing_time
    )
    manager = InternalTimeServiceManager(backend, clock, FULL)
    rec = Recorder(backend)  # checks the key context at every callback
    svc = manager.get_internal_timer_service("user-timers", rec)
    for key, ts in [("a", 1), ("b", 2), ("c", 3), ("d", 4)]:
        reg_event(backend, svc, key, ts)

    def register_ttl_state(timestamp: int, key: Any, namespace: Any) -> None:
        if timestamp == 2:  # a state whose cleanup runs at every change of the key
            ttl = StateTtlConfig.new_builder(Time.seconds(1)).cleanup_incrementally(1, True)
            descriptor = ValueStateDescriptor("seen", None)
            descriptor.enable_time_to_live(ttl.build())
            backend.get_partitioned_state(descriptor)

    rec.on_fire = register_ttl_state
    assert len(backend.key_hooks()) == 0
    manager.advance_watermark(10)
    assert [f[2] for f in rec.fired] == ["a", "b", "c", "d"]
    assert len(backend.key_hooks()) == 1
    assert backend.key_calls == 2  # c and d: through the backend, which runs the hook
