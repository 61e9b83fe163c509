"""Triggers: when a window is evaluated (FIRE) and/or emptied (PURGE) (Flink's ``Trigger``).

A trigger is a stateless description shared by every key and window: what it must remember
goes into partitioned state (``ctx.get_partitioned_state(descriptor)``, scoped to the key and
window) and its timers are registered through the context.

>>> TriggerResult.FIRE_AND_PURGE.is_fire(), TriggerResult.FIRE_AND_PURGE.is_purge()
(True, True)
>>> PurgingTrigger.of(CountTrigger.of(3))
PurgingTrigger(CountTrigger(3))
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, TypeVar

from sparktide.common.time import to_millis
from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.core.state import ReducingStateDescriptor, State, StateDescriptor

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "Trigger",
    "TriggerResult",
]

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(Enum):
    """What happens to a window after a trigger call.

    - ``CONTINUE``: nothing;
    - ``FIRE``: evaluate the window function, keep the contents;
    - ``PURGE``: drop the contents without evaluating;
    - ``FIRE_AND_PURGE``: evaluate, then drop the contents.

    A window without contents is never evaluated.

    >>> [r.name for r in TriggerResult if r.is_fire()]
    ['FIRE_AND_PURGE', 'FIRE']
    """

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


CONTINUE = TriggerResult.CONTINUE
FIRE = TriggerResult.FIRE
PURGE = TriggerResult.PURGE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE


class Trigger(ABC, Generic[T, W]):
    """Decides when a pane (the elements of one key in one window) is evaluated.

    ``on_element``, ``on_event_time`` and ``on_processing_time`` return a
    :class:`TriggerResult`. A trigger used with merging windows (sessions) returns True from
    :meth:`can_merge` and implements :meth:`on_merge`. :meth:`clear` removes the trigger's
    state and timers of a window when the window expires.

    >>> class FireOnRed(Trigger):
    ...     def on_element(self, element, timestamp, window, ctx):
    ...         return TriggerResult.FIRE if element == "red" else TriggerResult.CONTINUE
    ...     def on_processing_time(self, time, window, ctx):
    ...         return TriggerResult.CONTINUE
    ...     def on_event_time(self, time, window, ctx):
    ...         return TriggerResult.CONTINUE
    ...     def clear(self, window, ctx):
    ...         pass
    >>> FireOnRed().on_element("red", 1, None, None)
    <TriggerResult.FIRE: (True, False)>
    """

    class TriggerContext(ABC):
        """Timers, time and partitioned state of the current key and window."""

        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        def get_metric_group(self) -> Any:
            raise NotImplementedError(
                "metric groups are not available to triggers yet; count in partitioned state "
                "(ctx.get_partitioned_state) instead"
            )

        @abstractmethod
        def get_current_watermark(self) -> int: ...

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            """Call ``on_processing_time(time, ...)`` once the processing time reaches ``time``."""

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            """Call ``on_event_time(time, ...)`` once the watermark reaches ``time``."""

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            """The state of ``state_descriptor`` scoped to the current key and window."""

    class OnMergeContext(TriggerContext):
        """The context of :meth:`Trigger.on_merge`."""

        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
            """Merge the state of the merged windows into the new window (list, reducing and
            aggregating state)."""

    @abstractmethod
    def on_element(
        self, element: T, timestamp: int | None, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        """Called for every element added to a pane."""

    @abstractmethod
    def on_processing_time(
        self, time: int, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        """Called when a processing-time timer of this trigger fires (``time`` as registered)."""

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: Trigger.TriggerContext) -> TriggerResult:
        """Called when an event-time timer of this trigger fires (``time`` as registered)."""

    def can_merge(self) -> bool:
        """Whether :meth:`on_merge` is implemented (needed for merging window assigners)."""
        return False

    def on_merge(self, window: W, ctx: Trigger.OnMergeContext) -> None:
        """Called when windows merged into ``window``: merge state, re-register timers."""
        raise NotImplementedError(f"{type(self).__name__} does not support merging windows")

    @abstractmethod
    def clear(self, window: W, ctx: Trigger.TriggerContext) -> None:
        """Delete the state and timers this trigger holds for ``window``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _java_floor_to(timestamp: int, interval: int) -> int:
    """``timestamp - timestamp % interval`` with Java's remainder (sign of the dividend)."""
    rem = abs(timestamp) % interval
    return timestamp - (rem if timestamp >= 0 else -rem)


def _interval(interval: Any, owner: str) -> int:
    ms = to_millis(interval, "interval")
    if ms <= 0:
        raise ValueError(f"{owner}: interval must be positive (> 0 ms), got {ms} ms")
    return ms


class _EventTime:
    """The event-time domain of a trigger: the watermark and event-time timers."""

    __slots__ = ()

    @staticmethod
    def _current_time(ctx: Any) -> int:
        return ctx.get_current_watermark()  # type: ignore[no-any-return]

    @staticmethod
    def _register_timer(ctx: Any, time: int) -> None:
        ctx.register_event_time_timer(time)

    @staticmethod
    def _delete_timer(ctx: Any, time: int) -> None:
        ctx.delete_event_time_timer(time)


class _ProcessingTime:
    """The processing-time domain of a trigger: the task's clock and processing-time timers."""

    __slots__ = ()

    @staticmethod
    def _current_time(ctx: Any) -> int:
        return ctx.get_current_processing_time()  # type: ignore[no-any-return]

    @staticmethod
    def _register_timer(ctx: Any, time: int) -> None:
        ctx.register_processing_time_timer(time)

    @staticmethod
    def _delete_timer(ctx: Any, time: int) -> None:
        ctx.delete_processing_time_timer(time)


class _WindowEndTrigger(Trigger[Any, Any]):
    """Merging and cleanup of a trigger with one timer at the window's ``max_timestamp`` in
    its time domain (``_current_time``, ``_register_timer``, ``_delete_timer``)."""

    __slots__ = ()

    _current_time: Any
    _register_timer: Any
    _delete_timer: Any

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        max_ts = window.max_timestamp()
        if max_ts > self._current_time(ctx):
            self._register_timer(ctx, max_ts)

    def clear(self, window: Any, ctx: Any) -> None:
        self._delete_timer(ctx, window.max_timestamp())


class EventTimeTrigger(_EventTime, _WindowEndTrigger):
    """Fires once the watermark passes the window's end (``max_timestamp``); an element that
    arrives after that (allowed lateness) fires the window at once. The default trigger of
    event-time assigners.

    >>> EventTimeTrigger.create().can_merge()
    True
    """

    __slots__ = ()

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        max_ts = window.max_timestamp()
        if max_ts <= ctx.get_current_watermark():
            return FIRE
        ctx.register_event_time_timer(max_ts)
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE if time == window.max_timestamp() else CONTINUE


class ProcessingTimeTrigger(_ProcessingTime, _WindowEndTrigger):
    """Fires once the processing time reaches the window's ``max_timestamp``. The default
    trigger of processing-time assigners.

    >>> ProcessingTimeTrigger.create()
    ProcessingTimeTrigger()
    """

    __slots__ = ()

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE


class CountTrigger(Trigger[Any, Any]):
    """Fires when the pane has received ``window_size`` elements since the last firing (a
    reducing count in partitioned state, reset when it fires).

    >>> CountTrigger.of(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: CountTrigger: window_size must be a positive int (elements), got 0; ...
    """

    __slots__ = ("_descriptor", "_size")

    def __init__(self, window_size: int) -> None:
        if type(window_size) is not int or window_size <= 0:
            raise ValueError(
                f"CountTrigger: window_size must be a positive int (elements), got "
                f"{window_size!r}; pass e.g. CountTrigger.of(100)"
            )
        self._size = window_size
        self._descriptor = ReducingStateDescriptor("count", operator.add, None)

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        count = ctx.get_partitioned_state(self._descriptor)
        count.add(1)
        if count.get() >= self._size:
            count.clear()
            return FIRE
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self._descriptor)

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self._descriptor).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self._size})"


class ContinuousEventTimeTrigger(_EventTime, Trigger[Any, Any]):
    """Fires every ``interval`` of event time while the window is open, and at its end.

    The first firing of a pane is at ``ts - ts % interval + interval`` for the timestamp ``ts``
    of its first element, then every ``interval`` (capped at ``max_timestamp``). The next
    firing time is kept in partitioned state (``"fire-time"``). When the watermark jumps over
    several intervals, each firing registers the next one, which is already due: the window
    fires once per interval within that single watermark advance (a "pane burst").

    A record without a timestamp counts as ``MIN_TIMESTAMP`` (Java's ``Long.MIN_VALUE``), as in
    Flink: its pane's first firing is one interval past ``MIN_TIMESTAMP`` floored with Java's
    remainder, so the first watermark fires it once per interval passed since then. A job that
    ends with the final watermark (``MAX_TIMESTAMP``) on such a pane of a global window would
    fire it for every interval of the whole time range, exactly as Flink does: give such records
    timestamps, or use a processing-time or count trigger.

    >>> ContinuousEventTimeTrigger.of(30_000)
    ContinuousEventTimeTrigger(interval=30000)
    """

    __slots__ = ("_descriptor", "_interval")

    def __init__(self, interval: Any) -> None:
        self._interval = _interval(interval, type(self).__name__)
        self._descriptor = ReducingStateDescriptor("fire-time", min, None)

    @classmethod
    def of(cls, interval: Any) -> Any:
        return cls(interval)

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        max_ts = window.max_timestamp()
        if max_ts <= ctx.get_current_watermark():
            return FIRE
        ctx.register_event_time_timer(max_ts)
        fire_time = ctx.get_partitioned_state(self._descriptor)
        if fire_time.get() is None:
            if timestamp is None:
                timestamp = MIN_TIMESTAMP
            self._register_next(_java_floor_to(timestamp, self._interval), window, ctx, fire_time)
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        if time == window.max_timestamp():
            return FIRE
        return self._on_timer(time, window, ctx)

    def _on_timer(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        """FIRE and register the next firing if ``time`` is the pane's next firing time."""
        fire_time = ctx.get_partitioned_state(self._descriptor)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return FIRE
        return CONTINUE

    def _register_next(self, time: int, window: Any, ctx: Any, fire_time: Any) -> None:
        next_fire = min(time + self._interval, window.max_timestamp())
        fire_time.add(next_fire)
        self._register_timer(ctx, next_fire)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self._descriptor)
        next_fire = ctx.get_partitioned_state(self._descriptor).get()
        if next_fire is not None:
            self._register_timer(ctx, next_fire)

    def clear(self, window: Any, ctx: Any) -> None:
        fire_time = ctx.get_partitioned_state(self._descriptor)
        ts = fire_time.get()
        if ts is not None:
            self._delete_timer(ctx, ts)
            fire_time.clear()

    def get_interval(self) -> int:
        return self._interval

    def __repr__(self) -> str:
        return f"{type(self).__name__}(interval={self._interval})"


class ContinuousProcessingTimeTrigger(_ProcessingTime, ContinuousEventTimeTrigger):
    """Fires every ``interval`` of processing time, aligned to multiples of ``interval``
    (the first firing after the first element at ``now - now % interval + interval``).

    >>> ContinuousProcessingTimeTrigger.of(1000)
    ContinuousProcessingTimeTrigger(interval=1000)
    """

    __slots__ = ()

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(self._descriptor)
        now = ctx.get_current_processing_time()
        if fire_time.get() is None:
            self._register_next(_java_floor_to(now, self._interval), window, ctx, fire_time)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return self._on_timer(time, window, ctx)


class PurgingTrigger(Trigger[Any, Any]):
    """Wraps a trigger and turns its FIRE into FIRE_AND_PURGE.

    >>> PurgingTrigger.of(EventTimeTrigger.create()).can_merge()
    True
    """

    __slots__ = ("nested_trigger",)

    def __init__(self, nested_trigger: Trigger) -> None:
        if not callable(getattr(nested_trigger, "on_element", None)):
            raise TypeError(
                f"nested_trigger must be a Trigger, got {type(nested_trigger).__name__}"
            )
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return FIRE_AND_PURGE if result is FIRE or result is FIRE_AND_PURGE else result

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def clear(self, window: Any, ctx: Any) -> None:
        self.nested_trigger.clear(window, ctx)

    def can_merge(self) -> bool:
        return bool(self.nested_trigger.can_merge())

    def on_merge(self, window: Any, ctx: Any) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class NeverTrigger(Trigger[Any, Any]):
    """Never fires: the default trigger of :class:`GlobalWindows`.

    >>> NeverTrigger().on_element(1, 2, None, None)
    <TriggerResult.CONTINUE: (False, False)>
    """

    __slots__ = ()

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_merge(self, window: Any, ctx: Any) -> None:
        pass

    def clear(self, window: Any, ctx: Any) -> None:
        pass
