"""The user-facing :class:`TimerService` implementations handed to process functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sparktide.core.timerservice import TimerService
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP, check_timestamp
from sparktide.runtime.timers.service import InternalTimerService

if TYPE_CHECKING:
    from sparktide.runtime.processing_time import ProcessingTimeService

__all__ = ["NonKeyedTimerService", "SimpleTimerService"]


class SimpleTimerService(TimerService):
    """Timers of the current key in the void namespace, backed by an InternalTimerService."""

    __slots__ = ("_add_event", "_key_context", "_service")

    def __init__(self, service: InternalTimerService[object, None]) -> None:
        self._service = service
        # registering an event-time timer is the per-record case: straight to the queue
        self._add_event = service.event_time_timers().add
        self._key_context = service.key_context

    def current_processing_time(self) -> int:
        return self._service.current_processing_time()

    def current_watermark(self) -> int:
        return self._service.current_watermark()

    def register_processing_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int or not MIN_TIMESTAMP <= timestamp <= MAX_TIMESTAMP:
            timestamp = check_timestamp(timestamp, "timestamp")
        self._service.register_processing_time_timer(None, timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int or not MIN_TIMESTAMP <= timestamp <= MAX_TIMESTAMP:
            timestamp = check_timestamp(timestamp, "timestamp")
        # InternalTimerService.register_event_time_timer(None, timestamp), inlined
        ctx = self._key_context
        self._add_event(timestamp, ctx.current_key, None, ctx.current_key_group)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int or not MIN_TIMESTAMP <= timestamp <= MAX_TIMESTAMP:
            timestamp = check_timestamp(timestamp, "timestamp")
        self._service.delete_processing_time_timer(None, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int or not MIN_TIMESTAMP <= timestamp <= MAX_TIMESTAMP:
            timestamp = check_timestamp(timestamp, "timestamp")
        self._service.delete_event_time_timer(None, timestamp)


_NEEDS_KEY_BY = (
    "timers are only supported on keyed streams: apply key_by(...) before process(...) to use {}"
)


class NonKeyedTimerService(TimerService):
    """Time queries work; registering or deleting a timer raises (timers need ``key_by``)."""

    __slots__ = ("_pts", "_watermark")

    def __init__(
        self, processing_time_service: ProcessingTimeService, watermark: Callable[[], int]
    ) -> None:
        self._pts = processing_time_service
        self._watermark = watermark

    def current_processing_time(self) -> int:
        return self._pts.get_current_processing_time()

    def current_watermark(self) -> int:
        return self._watermark()

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(_NEEDS_KEY_BY.format("register_processing_time_timer"))

    def register_event_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(_NEEDS_KEY_BY.format("register_event_time_timer"))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(_NEEDS_KEY_BY.format("delete_processing_time_timer"))

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(_NEEDS_KEY_BY.format("delete_event_time_timer"))
