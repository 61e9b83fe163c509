"""``TriggerTestHarness``: drive one :class:`~sparktide.core.window.triggers.Trigger` by hand
(Flink's ``TriggerTestHarness``).

The trigger runs for one key against the engine's own pieces: a keyed state backend (its
partitioned state) and a ``"window-timers"`` timer service, with the context the window operator
gives triggers. Elements go to a window with :meth:`TriggerTestHarness.process_element`, which
returns the :class:`~sparktide.core.window.triggers.TriggerResult`; advancing the watermark or
the processing time fires the due timers and returns one :class:`TriggerFiring` (window,
result) per timer, in firing order. A timer the trigger registers while firing, at or before the
new time, fires in the same advance, as in the window operator. Timers and state can be counted
in total or per window. The clock and the watermark start at ``MIN_TIMESTAMP``, as Flink's.

>>> from sparktide.core.window.triggers import CountTrigger, EventTimeTrigger
>>> from sparktide.core.window.windows import TimeWindow
>>> h = TriggerTestHarness(EventTimeTrigger.create())
>>> h.process_element("a", TimeWindow(0, 10), timestamp=3)
<TriggerResult.CONTINUE: (False, False)>
>>> h.num_event_time_timers(), h.num_event_time_timers(TimeWindow(10, 20))
(1, 0)
>>> h.advance_watermark(9)
[TriggerFiring(window=TimeWindow(start=0, end=10), result=<TriggerResult.FIRE: (True, False)>)]
>>> counting = TriggerTestHarness(CountTrigger.of(2))
>>> [counting.process_element(v, TimeWindow(0, 10)).name for v in "abc"]
['CONTINUE', 'FIRE', 'CONTINUE']
>>> counting.num_state_entries(TimeWindow(0, 10))
1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, NamedTuple, TypeVar

from sparktide.core.state_backend import StateBackend, default_state_backend
from sparktide.core.window.triggers import Trigger, TriggerResult
from sparktide.core.window.windows import Window
from sparktide.runtime.elements import MIN_TIMESTAMP, StreamRecord, check_timestamp
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.operators.window_functions import WindowTriggerContext
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.state.factory import SubtaskState, create_keyed_state
from sparktide.runtime.timers.service import InternalTimerService
from sparktide.testing.counts import ALL_NAMESPACES, count_state_entries, count_timers

__all__ = ["TriggerFiring", "TriggerTestHarness"]

W = TypeVar("W", bound=Window)

KEY = 1
"""The one key the harness runs the trigger for (Flink's harness uses ``1`` too)."""

_MAX_PARALLELISM = 128


def _namespace(window: Window | None) -> object:
    return ALL_NAMESPACES if window is None else window


class TriggerFiring(NamedTuple):
    """One fired timer: the window it belonged to and what the trigger returned."""

    window: Window
    result: TriggerResult


class _Fire:
    """The timer service's target: calls the trigger and records what it returned."""

    __slots__ = ("_harness", "fired")

    def __init__(self, harness: TriggerTestHarness[Window]) -> None:
        self._harness = harness
        self.fired: list[TriggerFiring] = []

    def on_event_time(self, timestamp: int, key: object, namespace: Window) -> None:
        h = self._harness
        result = h.trigger.on_event_time(timestamp, namespace, h.context(namespace))
        self.fired.append(TriggerFiring(namespace, result))

    def on_processing_time(self, timestamp: int, key: object, namespace: Window) -> None:
        h = self._harness
        result = h.trigger.on_processing_time(timestamp, namespace, h.context(namespace))
        self.fired.append(TriggerFiring(namespace, result))


class TriggerTestHarness(Generic[W]):
    """Runs ``trigger`` for one key (see the module docstring).

    ``processing_time`` is where the clock starts (default ``MIN_TIMESTAMP``, as Flink's);
    ``state_backend`` picks the keyed state backend (default: the default backend, as for
    operators).
    """

    def __init__(
        self,
        trigger: Trigger,
        *,
        processing_time: int = MIN_TIMESTAMP,
        state_backend: StateBackend | None = None,
    ) -> None:
        if not isinstance(trigger, Trigger):
            raise TypeError(
                f"trigger must be a Trigger (subclass sparktide.datastream.window.Trigger), "
                f"got {type(trigger).__name__}"
            )
        self.trigger = trigger
        self.processing_time_service = ManualProcessingTimeService(
            check_timestamp(processing_time, "processing_time")
        )
        key_groups = KeyGroupRange(0, _MAX_PARALLELISM - 1)
        self._state = create_keyed_state(
            default_state_backend() if state_backend is None else state_backend,
            SubtaskState(
                "trigger-test-harness",
                0,
                _MAX_PARALLELISM,
                key_groups,
                self.processing_time_service.get_current_processing_time,
            ),
        )
        self.backend = self._state.backend
        self.backend.set_current_key(KEY)
        self._fire = _Fire(self)  # type: ignore[arg-type]
        self.timer_service: InternalTimerService[object, Window] = InternalTimerService(
            "window-timers",
            self.backend,
            self.processing_time_service,
            self._fire,
            key_groups,
            self._state.queue_factory,
        )
        self._context = WindowTriggerContext(self.backend, self.timer_service)

    def context(self, window: Window, merged: list[Window] | None = None) -> WindowTriggerContext:
        """The trigger context of ``window`` (the window operator's own context class)."""
        ctx = self._context
        ctx.window = window
        ctx.merged_windows = merged
        return ctx

    # ------------------------------------------------------------------ input

    def process_element(
        self, element: object, window: W, timestamp: int | None = None
    ) -> TriggerResult:
        """``trigger.on_element`` for ``element`` (a value with ``timestamp``, or a
        :class:`StreamRecord`) in ``window``; returns its result."""
        if isinstance(element, StreamRecord):
            value, timestamp = element.value, element.timestamp
        else:
            value = element
            if timestamp is not None:
                timestamp = check_timestamp(timestamp, "timestamp")
        return self.trigger.on_element(value, timestamp, window, self.context(window))

    def advance_watermark(self, time: int, window: W | None = None) -> list[TriggerFiring]:
        """Advance the watermark to ``time``, firing the due event-time timers: the firings,
        in order. With ``window``, exactly one firing, for that window, is expected."""
        self.timer_service.advance_watermark(check_timestamp(time, "time"))
        return self._firings(window, "advance_watermark")

    def advance_processing_time(self, time: int, window: W | None = None) -> list[TriggerFiring]:
        """Move the clock to ``time``, firing the due processing-time timers: the firings, in
        order. With ``window``, exactly one firing, for that window, is expected."""
        self.processing_time_service.set_current_time(check_timestamp(time, "time"))
        return self._firings(window, "advance_processing_time")

    def _firings(self, window: Window | None, method: str) -> list[TriggerFiring]:
        fired, self._fire.fired = self._fire.fired, []
        if window is not None and (len(fired) != 1 or fired[0].window != window):
            raise AssertionError(
                f"{method}: expected exactly one firing, for {window!r}; fired: {fired!r}"
            )
        return fired

    def invoke_on_event_time(self, timestamp: int, window: W) -> TriggerResult:
        """Call ``trigger.on_event_time(timestamp, window)`` directly (no timer needed)."""
        return self.trigger.on_event_time(
            check_timestamp(timestamp, "timestamp"), window, self.context(window)
        )

    def merge_windows(self, target_window: W, merged_windows: Iterable[W]) -> None:
        """``trigger.on_merge(target_window)`` with ``merged_windows``, then ``clear`` on each
        merged window, as the window operator does."""
        merged: list[Window] = list(merged_windows)
        if not self.trigger.can_merge():
            raise TypeError(
                f"{self.trigger!r} cannot merge windows (can_merge() is False); merging "
                "assigners (sessions) need a trigger that can"
            )
        self.trigger.on_merge(target_window, self.context(target_window, merged))
        for window in merged:
            self.trigger.clear(window, self.context(window))

    def clear_trigger_state(self, window: W) -> None:
        """``trigger.clear(window)``: the trigger drops its state and timers of ``window``."""
        self.trigger.clear(window, self.context(window))

    # ------------------------------------------------------------------ inspection

    def get_current_watermark(self) -> int:
        return self.timer_service.current_watermark()

    def get_processing_time(self) -> int:
        return self.processing_time_service.get_current_processing_time()

    def num_event_time_timers(self, window: W | None = None) -> int:
        """Pending event-time timers, of ``window`` only if given."""
        return count_timers([self.timer_service.event_time_timers()], _namespace(window))

    def num_processing_time_timers(self, window: W | None = None) -> int:
        """Pending processing-time timers, of ``window`` only if given."""
        return count_timers([self.timer_service.processing_time_timers()], _namespace(window))

    def num_state_entries(self, window: W | None = None) -> int:
        """Partitioned state entries holding a value, of ``window`` only if given."""
        return count_state_entries(self.backend, _namespace(window))

    def close(self) -> None:
        """Release the state backend (a RocksDB one deletes its files)."""
        self._state.close()
