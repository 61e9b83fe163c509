"""``InternalTimeServiceManager``: the timer services of one operator subtask, by name.

The same name returns the same service; a watermark advances all of them (in creation order).
The services' queues come from a :class:`~sparktide.runtime.timers.queue_factory.TimerQueueFactory`
(heap queues unless one is given).
Timers snapshot and restore per key group; restored services wait for their operator to bind a
triggerable, then re-register their processing-time head.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> class Ctx:
...     current_key = "k"; current_key_group = 0
...     def set_current_key_and_group(self, key, kg): pass
>>> m = InternalTimeServiceManager(Ctx(), None, KeyGroupRange(0, 127))
>>> class Op:
...     def on_event_time(self, ts, key, ns): print("timer", ts)
...     def on_processing_time(self, ts, key, ns): pass
>>> s = m.get_internal_timer_service("user-timers", Op())
>>> s is m.get_internal_timer_service("user-timers", s.triggerable)
True
>>> s.register_event_time_timer(None, 5); m.advance_watermark(7)
timer 5
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.timers.queue import N, TimerEntry
from sparktide.runtime.timers.queue_factory import (
    HeapTimerQueueFactory,
    TimerQueue,
    TimerQueueFactory,
)
from sparktide.runtime.timers.service import InternalTimerService, KeyContext, Triggerable

if TYPE_CHECKING:
    from sparktide.runtime.processing_time import ProcessingTimeService

__all__ = ["InternalTimeServiceManager", "ServiceQueues", "ServiceTimers", "TimerSnapshot"]

# per key group -> per service name -> (event entries, processing entries); entries are
# (timestamp, seq, key, namespace, key_group) in (timestamp, seq) order.
ServiceTimers = tuple[list[TimerEntry[object, object]], list[TimerEntry[object, object]]]
"""The timers of one service: ``(event-time entries, processing-time entries)``."""

TimerSnapshot = dict[int, dict[str, ServiceTimers]]

ServiceQueues = tuple[TimerQueue[object, object], TimerQueue[object, object]]
"""The queues of one service: ``(event time, processing time)``."""


class InternalTimeServiceManager:
    """Creates and owns the :class:`InternalTimerService` instances of one operator subtask."""

    def __init__(
        self,
        key_context: KeyContext[object],
        processing_time_service: ProcessingTimeService,
        key_group_range: KeyGroupRange,
        queue_factory: TimerQueueFactory | None = None,
    ) -> None:
        self._key_context = key_context
        self._pts = processing_time_service
        self._range = key_group_range
        self._queue_factory: TimerQueueFactory = (
            HeapTimerQueueFactory() if queue_factory is None else queue_factory
        )
        # The namespace type of each service is its operator's (None, a window, ...): they are
        # kept as object here and typed again for the operator that asks for its service.
        self._services: dict[str, InternalTimerService[object, object]] = {}

    def get_internal_timer_service(
        self, name: str, triggerable: Triggerable[object, N]
    ) -> InternalTimerService[object, N]:
        """The service called ``name``, created on first use and bound to ``triggerable``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        service = cast("InternalTimerService[object, N] | None", self._services.get(name))
        if service is None:
            service = InternalTimerService(
                name, self._key_context, self._pts, triggerable, self._range, self._queue_factory
            )
            self._services[name] = cast("InternalTimerService[object, object]", service)
        elif service.triggerable is not triggerable:
            service.start(triggerable)
        return service

    @property
    def queue_factory(self) -> TimerQueueFactory:
        """Where the services' timer queues come from (the keyed state backend's choice)."""
        return self._queue_factory

    def dispose(self) -> None:
        """Release the timer queues (a RocksDB factory closes its store and deletes its files).
        The services must not be used afterwards."""
        self._queue_factory.dispose()

    def services(self) -> dict[str, InternalTimerService[object, object]]:
        return dict(self._services)

    def advance_watermark(self, time: int) -> None:
        """Advance every service to watermark ``time`` (firing their due event-time timers)."""
        for service in self._services.values():
            service.advance_watermark(time)

    def num_event_time_timers(self) -> int:
        return sum(s.num_event_time_timers() for s in self._services.values())

    def num_processing_time_timers(self) -> int:
        return sum(s.num_processing_time_timers() for s in self._services.values())

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> TimerSnapshot:
        """Every pending timer, per key group and service, in firing order."""
        out: TimerSnapshot = {}
        for kg in self._range:
            per_service = {}
            for name, service in self._services.items():
                event = service.event_time_timers().entries_for_key_group(kg)
                proc = service.processing_time_timers().entries_for_key_group(kg)
                if event or proc:
                    per_service[name] = (event, proc)
            if per_service:
                out[kg] = per_service
        return out

    def hand_over_queues(self) -> dict[str, ServiceQueues]:
        """Per service, its queues ``(event time, processing time)`` as they are (no copy), for
        the next manager of this subtask to :meth:`adopt_queues`; this manager must not be
        used any more but to read."""
        return {name: service.queues() for name, service in self._services.items()}

    def adopt_queues(self, queues: Mapping[str, ServiceQueues]) -> None:
        """Take the queues :meth:`hand_over_queues` gave, before any operator asks for its
        service: each service waits for its operator to bind a triggerable, as a restored one
        does."""
        if self._services:
            raise ValueError(f"cannot adopt timer queues: services {sorted(self._services)} exist")
        for name, (event, processing) in queues.items():
            service: InternalTimerService[object, object] = InternalTimerService(
                name, self._key_context, self._pts, None, self._range, self._queue_factory
            )
            service.adopt(event, processing)
            self._services[name] = service

    def restore(self, snapshot: TimerSnapshot) -> None:
        """Take the timers of the key groups in this subtask's range (others are ignored)."""
        gathered: dict[
            str, tuple[list[TimerEntry[object, object]], list[TimerEntry[object, object]]]
        ] = {}
        for kg, per_service in snapshot.items():
            if kg not in self._range:
                continue
            for name, (event, proc) in per_service.items():
                ev, pr = gathered.setdefault(name, ([], []))
                ev.extend(event)
                pr.extend(proc)
        for name, (event, proc) in gathered.items():
            service = self._services.get(name)
            if service is None:
                service = InternalTimerService(
                    name, self._key_context, self._pts, None, self._range, self._queue_factory
                )
                self._services[name] = service
            service.restore(event, proc)
