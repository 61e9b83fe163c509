"""Operator test harnesses: drive one operator subtask by hand, on a simulated clock.

>>> from sparktide.datastream import KeyedProcessFunction
>>> class Echo(KeyedProcessFunction):
...     def process_element(self, value, ctx):
...         ctx.timer_service().register_processing_time_timer(100)
...         yield value
...     def on_timer(self, timestamp, ctx):
...         yield f"timer {timestamp} for {ctx.get_current_key()}"
>>> h = for_keyed_process_function(Echo(), lambda v: v[0])
>>> h.process_element("a1", 5)
>>> h.num_processing_time_timers()
1
>>> h.set_processing_time(100)
>>> h.get_output()
[StreamRecord('a1', 5), StreamRecord('timer 100 for a', None)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.datastream.functions import KeyedProcessFunction, ProcessFunction
from sparktide.datastream.output_tag import OutputTag
from sparktide.runtime.elements import StreamRecord, Watermark, check_timestamp
from sparktide.runtime.operators.base import AbstractStreamOperator, OperatorSetup
from sparktide.runtime.operators.process import KeyedProcessOperator, ProcessOperator
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.timers.queue_factory import TimerQueue
from sparktide.testing.counts import ALL_NAMESPACES, count_state_entries, count_timers

__all__ = [
    "KeyedOneInputStreamOperatorTestHarness",
    "OneInputStreamOperatorTestHarness",
    "ProcessFunctionTestHarnesses",
    "for_keyed_process_function",
    "for_process_function",
]

Snapshots = Sequence["bytes | KeyedOperatorSnapshot"]


class OneInputStreamOperatorTestHarness:
    """Drives one operator subtask: elements, watermarks, processing time; collects output.

    The watermark starts at ``MIN_TIMESTAMP``, and so does the simulated clock unless
    ``processing_time`` is given, as in Flink's harness (``Long.MIN_VALUE``).
    """

    def __init__(
        self,
        operator: AbstractStreamOperator,
        *,
        key_selector: Callable[[Any], Any] | None = None,
        parallelism: int = 1,
        subtask_index: int = 0,
        max_parallelism: int | None = None,
        processing_time: int = MIN_TIMESTAMP,
        name: str = "test-operator",
    ) -> None:
        self.operator = operator
        self.processing_time_service = ManualProcessingTimeService(processing_time)
        self.output = CollectingOutput()
        self.setup_info = OperatorSetup(
            name=name,
            subtask_index=subtask_index,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
        )
        operator.setup(self.output, self.processing_time_service, self.setup_info, key_selector)
        self._opened = False

    # ------------------------------------------------------------------ lifecycle

    def initialize_state(self, snapshots: bytes | KeyedOperatorSnapshot | Snapshots) -> None:
        """Restore from one snapshot or several (rescaling); call before :meth:`open`."""
        if self._opened:
            raise RuntimeError("initialize_state must be called before open()")
        if isinstance(snapshots, (bytes, bytearray, KeyedOperatorSnapshot)):
            snapshots = [snapshots]
        self.operator.initialize_state(list(snapshots))

    def open(self) -> None:
        self.operator.open()
        self._opened = True

    def close(self) -> None:
        self.operator.close()

    # ------------------------------------------------------------------ input

    def process_element(self, value: Any, timestamp: int | None = None) -> None:
        """Process ``value`` (or a StreamRecord) with event ``timestamp`` (int ms or None)."""
        if isinstance(value, StreamRecord):
            record = value
        else:
            if timestamp is not None:
                timestamp = check_timestamp(timestamp, "timestamp")
            record = StreamRecord(value, timestamp)
        self.operator.process_element(record)

    def process_watermark(self, watermark: int | Watermark) -> None:
        if not isinstance(watermark, Watermark):
            watermark = Watermark(check_timestamp(watermark, "watermark"))
        self.operator.process_watermark(watermark)

    def set_processing_time(self, time: int) -> None:
        """Advance the simulated clock to ``time``, firing due processing-time timers."""
        self.processing_time_service.set_current_time(check_timestamp(time, "time"))

    def get_processing_time(self) -> int:
        return self.processing_time_service.get_current_processing_time()

    # ------------------------------------------------------------------ output

    def get_output(self) -> list[Any]:
        """Everything emitted on the main output, in order: StreamRecords and Watermarks."""
        return list(self.output.elements)

    def get_records(self) -> list[StreamRecord]:
        return [e for e in self.output.elements if isinstance(e, StreamRecord)]

    def extract_output_values(self) -> list[Any]:
        return [e.value for e in self.output.elements if isinstance(e, StreamRecord)]

    def get_side_output(self, tag: OutputTag) -> list[StreamRecord]:
        return list(self.output.side.get(tag, []))

    def clear_output(self) -> None:
        self.output.elements.clear()
        self.output.side.clear()

    # ------------------------------------------------------------------ inspection

    def get_current_watermark(self) -> int:
        """The operator's current watermark (``MIN_TIMESTAMP`` before the first one)."""
        return self.operator.current_watermark()

    def num_event_time_timers(self, namespace: object = ALL_NAMESPACES) -> int:
        """Pending event-time timers of every timer service, of ``namespace`` (a window; None
        for a process function's timers) only if given."""
        return count_timers(self._timer_queues(event_time=True), namespace)

    def num_processing_time_timers(self, namespace: object = ALL_NAMESPACES) -> int:
        """Pending processing-time timers of every timer service, of ``namespace`` only if
        given."""
        return count_timers(self._timer_queues(event_time=False), namespace)

    def _timer_queues(self, *, event_time: bool) -> list[TimerQueue[Any, Any]]:
        m = self.operator.time_service_manager
        if m is None:
            return []
        services = m.services().values()
        if event_time:
            return [s.event_time_timers() for s in services]
        return [s.processing_time_timers() for s in services]

    def num_keyed_state_entries(self, namespace: object = ALL_NAMESPACES) -> int:
        """Keyed state entries holding a value, of ``namespace`` (a window; None for a process
        function's state) only if given."""
        return count_state_entries(self.operator.keyed_state_backend, namespace)

    def snapshot(self) -> bytes:
        """The operator's keyed state and timers in the versioned snapshot format."""
        return self.operator.snapshot_state().to_bytes()


class KeyedOneInputStreamOperatorTestHarness(OneInputStreamOperatorTestHarness):
    """A harness for a keyed operator: ``key_selector`` picks each element's key."""

    def __init__(
        self,
        operator: AbstractStreamOperator,
        key_selector: Callable[[Any], Any],
        **kwargs: Any,
    ) -> None:
        if not callable(key_selector):
            raise TypeError(
                f"key_selector must be callable (value -> key), got {type(key_selector).__name__}"
            )
        super().__init__(operator, key_selector=key_selector, **kwargs)


def for_keyed_process_function(
    function: KeyedProcessFunction,
    key_selector: Callable[[Any], Any],
    key_type: Any = None,
    *,
    snapshot: bytes | KeyedOperatorSnapshot | Snapshots | None = None,
    **kwargs: Any,
) -> KeyedOneInputStreamOperatorTestHarness:
    """An opened harness running ``function`` keyed by ``key_selector``.

    ``snapshot`` (one or several, for rescaling) is restored before opening; ``parallelism``,
    ``subtask_index``, ``max_parallelism`` and ``processing_time`` pick the subtask and clock.
    """
    harness = KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(function), key_selector, **kwargs
    )
    if snapshot is not None:
        harness.initialize_state(snapshot)
    harness.open()
    return harness


def for_process_function(
    function: ProcessFunction, **kwargs: Any
) -> OneInputStreamOperatorTestHarness:
    """An opened harness running a non-keyed ``function``."""
    harness = OneInputStreamOperatorTestHarness(ProcessOperator(function), **kwargs)
    harness.open()
    return harness


class ProcessFunctionTestHarnesses:
    """Factory names as in Flink's ``ProcessFunctionTestHarnesses``."""

    for_keyed_process_function = staticmethod(for_keyed_process_function)
    for_process_function = staticmethod(for_process_function)
