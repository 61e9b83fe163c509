"""Timer services on heap queues and on RocksDB queues fire the same timers in the same order.

Random sequences of registrations, deletions, watermarks and clock moves, with callbacks that
register (possibly already due) and delete timers, snapshots restored into new services, and
records whose timer changes are rolled back, run on two managers in lock step: one with the
heap factory, one with the RocksDB factory (tiny caches, so refills happen).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.core.timerservice import TimeDomain
from sparktide.core.window.windows import GlobalWindow, TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.timers.manager import InternalTimeServiceManager
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.queue_factory import (
    HeapTimerQueueFactory,
    RocksDBTimerQueueFactory,
    TimerQueueFactory,
)
from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

MAXP = 16
FULL = KeyGroupRange(0, MAXP - 1)
KEYS = ["a", "b", "c", 1, 2, 7]
NAMESPACES = [None, TimeWindow(0, 10), GlobalWindow()]
CHAIN_LIMIT = 40  # callbacks register later timers only below this: every advance ends


@dataclass
class Side:
    """One manager, its clock, backend and the timers it fired."""

    factory: TimerQueueFactory
    clock: ManualProcessingTimeService = field(default_factory=ManualProcessingTimeService)
    fired: list[tuple[str, int, object, object]] = field(default_factory=list)
    reaction: int = 0
    manager: InternalTimeServiceManager = field(init=False)
    backend: HeapKeyedStateBackend = field(init=False)

    def __post_init__(self) -> None:
        self.backend = HeapKeyedStateBackend(
            max_parallelism=MAXP,
            key_group_range=FULL,
            time_provider=self.clock.get_current_processing_time,
        )
        self.manager = InternalTimeServiceManager(self.backend, self.clock, FULL, self.factory)
        self.service = self.manager.get_internal_timer_service("user-timers", self)

    # the triggerable: record, then react as a function of the timer (the same on both sides)
    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fired("event", timestamp, key, namespace)

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fired("proc", timestamp, key, namespace)

    def _fired(self, domain: str, ts: int, key: Any, ns: Any) -> None:
        assert self.backend.current_key == key, "key context not set before the callback"
        self.fired.append((domain, ts, key, ns))
        choice = (ts * 7 + self.reaction + len(str(key))) % 5
        svc = self.service
        if ts >= CHAIN_LIMIT:
            return
        if choice == 0:  # due at once if the watermark is past ts + 1
            svc.register_event_time_timer(ns, ts + 1)
        elif choice == 1:
            svc.register_event_time_timer(None, ts + 3)
            svc.register_processing_time_timer(ns, ts + 2)
        elif choice == 2:  # a pending timer of the same key, maybe
            svc.delete_event_time_timer(ns, ts + 1)
            svc.delete_processing_time_timer(ns, ts + 2)


@dataclass(frozen=True)
class Op:
    kind: str
    key: object = None
    time: int = 0
    namespace: object = None


OPS = st.one_of(
    st.builds(
        Op,
        kind=st.sampled_from(["reg_event", "del_event", "reg_proc", "del_proc"]),
        key=st.sampled_from(KEYS),
        time=st.integers(-3, 45),
        namespace=st.sampled_from(NAMESPACES),
    ),
    st.builds(Op, kind=st.just("advance"), time=st.integers(0, 12)),
    st.builds(Op, kind=st.just("clock"), time=st.integers(0, 12)),
    st.builds(Op, kind=st.just("restore")),
    st.builds(Op, kind=st.just("rollback"), key=st.sampled_from(KEYS)),
)


def apply(side: Side, op: Op, fresh: TimerQueueFactory) -> Side:
    """Apply ``op`` to ``side``; a restore returns the new side (``fresh`` is its factory)."""
    svc = side.service
    if op.kind in ("reg_event", "del_event", "reg_proc", "del_proc"):
        side.backend.set_current_key(op.key)
        {
            "reg_event": svc.register_event_time_timer,
            "del_event": svc.delete_event_time_timer,
            "reg_proc": svc.register_processing_time_timer,
            "del_proc": svc.delete_processing_time_timer,
        }[op.kind](op.namespace, op.time)
    elif op.kind == "advance":
        side.manager.advance_watermark(svc.current_watermark() + op.time)
    elif op.kind == "clock":
        side.clock.advance(op.time)
    elif op.kind == "restore":
        snapshot, watermark = side.manager.snapshot(), svc.current_watermark()
        # a new clock at the same time: the old service's registration dies with it
        clock = ManualProcessingTimeService(side.clock.get_current_processing_time())
        new = Side(fresh, clock=clock, fired=side.fired, reaction=side.reaction + 1)
        new.manager.restore(snapshot)
        new.service.restore_watermark(watermark)
        side.factory.dispose()
        return new
    elif op.kind == "rollback":  # a failed record: its timer changes are undone
        side.backend.set_current_key(op.key)
        kg = side.backend.current_key_group
        saved = svc.key_timers(op.key, kg)
        svc.register_event_time_timer(None, 44)
        svc.register_processing_time_timer(None, 44)
        for ts, _seq, _key, ns, _kg in saved[0][:1]:
            svc.delete_event_time_timer(ns, ts)
        svc.reset_key_timers(op.key, kg, saved)
    return side


def timers_of(side: Side) -> dict[int, Any]:
    return side.manager.snapshot()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, max_size=40), reaction=st.integers(0, 4))
def test_heap_and_rocksdb_services_fire_the_same_timers(ops: list[Op], reaction: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        made = 0

        def rocks() -> RocksDBTimerQueueFactory:
            nonlocal made
            made += 1
            return RocksDBTimerQueueFactory(f"{tmp}/timers{made}", cache_size=2)

        heap = Side(HeapTimerQueueFactory(), reaction=reaction)
        rocksdb = Side(rocks(), reaction=reaction)
        try:
            for op in ops:
                heap = apply(heap, op, HeapTimerQueueFactory())
                rocksdb = apply(rocksdb, op, rocks() if op.kind == "restore" else rocksdb.factory)
                assert rocksdb.fired == heap.fired
                assert timers_of(rocksdb) == timers_of(heap)
                for queue in (
                    rocksdb.service.event_time_timers(),
                    rocksdb.service.processing_time_timers(),
                ):
                    assert isinstance(queue, RocksDBTimerQueue)
                    queue.check_invariants()
            heap.manager.advance_watermark(2**63 - 1)
            rocksdb.manager.advance_watermark(2**63 - 1)
            heap.clock.advance(1000)
            rocksdb.clock.advance(1000)
            assert rocksdb.fired == heap.fired
            assert rocksdb.service.fired_event_time == heap.service.fired_event_time
            assert (
                rocksdb.manager.num_event_time_timers(),
                rocksdb.manager.num_processing_time_timers(),
            ) == (heap.manager.num_event_time_timers(), heap.manager.num_processing_time_timers())
        finally:
            rocksdb.factory.dispose()


def test_the_heap_factory_makes_heap_queues_and_checks_its_arguments() -> None:
    factory = HeapTimerQueueFactory()
    queue = factory.create_timer_queue("user-timers", TimeDomain.EVENT_TIME, FULL)
    assert isinstance(queue, KeyGroupedTimerQueue)
    with pytest.raises(TypeError, match="TimeDomain"):
        factory.create_timer_queue("user-timers", "event", FULL)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="service_name"):
        factory.create_timer_queue("", TimeDomain.EVENT_TIME, FULL)


def test_rocksdb_factory_shares_one_store_and_dispose_deletes_it(tmp_path) -> None:
    directory = tmp_path / "timers"
    factory = RocksDBTimerQueueFactory(directory, cache_size=1)
    queues = [
        factory.create_timer_queue(name, domain, FULL)
        for name in ("user-timers", "window-timers")
        for domain in TimeDomain
    ]
    for i, queue in enumerate(queues):  # the same timer in every queue: each has its own
        assert queue.add(10 + i, "k", None, 3)
        assert queue.add(5, "k", None, 4)
    assert [[e[0] for e in q] for q in queues] == [[10, 5], [11, 5], [12, 5], [13, 5]]
    assert list(directory.iterdir())  # one store, in the factory's directory
    with pytest.raises(ValueError, match="already exists"):
        factory.create_timer_queue("user-timers", TimeDomain.EVENT_TIME, FULL)
    factory.dispose()
    assert not directory.exists()
    with pytest.raises(RuntimeError, match="closed"):
        queues[0].add(1, "k", None, 3)
    factory.dispose()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        factory.create_timer_queue("late", TimeDomain.EVENT_TIME, FULL)
    assert not directory.exists()


def test_rocksdb_factory_refuses_bad_arguments(tmp_path) -> None:
    with pytest.raises(ValueError, match="cache_size"):
        RocksDBTimerQueueFactory(tmp_path, cache_size=0)
    with pytest.raises(TypeError, match="directory"):
        RocksDBTimerQueueFactory(3)  # type: ignore[arg-type]


def test_manager_dispose_releases_the_rocksdb_store(tmp_path) -> None:
    clock = ManualProcessingTimeService()
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=FULL, time_provider=clock.get_current_processing_time
    )
    manager = InternalTimeServiceManager(
        backend, clock, FULL, RocksDBTimerQueueFactory(tmp_path / "t")
    )
    assert isinstance(manager.queue_factory, RocksDBTimerQueueFactory)
    side = Side(HeapTimerQueueFactory())
    svc = manager.get_internal_timer_service("user-timers", side)
    backend.set_current_key("a")
    svc.register_event_time_timer(None, 5)
    assert (tmp_path / "t").exists()
    manager.dispose()
    assert not (tmp_path / "t").exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    timers=st.lists(
        st.tuples(
            st.sampled_from(KEYS),
            st.integers(-3, 30),
            st.sampled_from(NAMESPACES),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_a_snapshot_restores_into_either_queue(timers: list[tuple[Any, int, Any, bool]]) -> None:
    """Timer snapshots are the same plain entries for both queues: one taken on the heap
    restores onto RocksDB and back, and every copy fires the same timers in the same order."""
    with tempfile.TemporaryDirectory() as tmp:
        heap = Side(HeapTimerQueueFactory())
        for key, ts, ns, event in timers:
            heap.backend.set_current_key(key)
            if event:
                heap.service.register_event_time_timer(ns, ts)
            else:
                heap.service.register_processing_time_timer(ns, ts)
        snapshot = heap.manager.snapshot()
        on_rocksdb = Side(RocksDBTimerQueueFactory(f"{tmp}/a", cache_size=1))
        on_rocksdb.manager.restore(snapshot)
        back = Side(HeapTimerQueueFactory())
        back.manager.restore(on_rocksdb.manager.snapshot())
        assert on_rocksdb.manager.snapshot() == snapshot
        assert back.manager.snapshot() == snapshot
        try:
            for side in (heap, on_rocksdb, back):
                side.manager.advance_watermark(2**63 - 1)
                side.clock.advance(100)
            assert on_rocksdb.fired == heap.fired
            assert back.fired == heap.fired
        finally:
            on_rocksdb.factory.dispose()
