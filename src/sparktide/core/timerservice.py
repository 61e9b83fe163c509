"""The user-facing timer service and time domains (PyFlink's ``pyflink.datastream.timerservice``).

A ``KeyedProcessFunction`` reaches it through ``ctx.timer_service()``:

>>> from sparktide.testing import for_keyed_process_function
>>> from sparktide.datastream import KeyedProcessFunction
>>> class Alarm(KeyedProcessFunction):
...     def process_element(self, value, ctx):
...         ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
...     def on_timer(self, timestamp, ctx):
...         yield f"{ctx.get_current_key()} alarm at {timestamp} ({ctx.time_domain().name})"
>>> h = for_keyed_process_function(Alarm(), lambda v: v)
>>> h.process_element("a", 5); h.process_watermark(20)
>>> h.extract_output_values()
['a alarm at 15 (EVENT_TIME)']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum

__all__ = ["TimeDomain", "TimerService"]


class TimeDomain(Enum):
    """Whether a timer fired on event time (watermarks) or processing time (the clock)."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService(ABC):
    """Query time and register timers for the current key. Timestamps are int milliseconds."""

    @abstractmethod
    def current_processing_time(self) -> int:
        """The current processing time of this subtask."""

    @abstractmethod
    def current_watermark(self) -> int:
        """The current event-time watermark of this subtask."""

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Call ``on_timer`` when processing time reaches ``timestamp`` (once per timestamp)."""

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Call ``on_timer`` when the watermark reaches ``timestamp`` (once per timestamp)."""

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Delete a processing-time timer of the current key; no-op if there is none."""

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Delete an event-time timer of the current key; no-op if there is none."""
