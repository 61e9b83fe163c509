"""What every operator test harness shares: the subtask's setup, its lifecycle, the simulated
clock, the collected output and the counts of timers and keyed state.

The one-input harness (:mod:`sparktide.testing.harness`) and the two-input one
(:mod:`sparktide.testing.two_input`) add their inputs on top. As in Flink's harness, the
watermark and the clock start at ``MIN_TIMESTAMP`` unless ``processing_time`` is given.

>>> from sparktide.runtime.operators.process import ProcessOperator
>>> from sparktide.datastream.functions import ProcessFunction
>>> class Echo(ProcessFunction):
...     def process_element(self, value, ctx):
...         yield value
>>> h = OperatorTestHarness(ProcessOperator(Echo()))
>>> h.get_processing_time() == MIN_TIMESTAMP, h.get_current_watermark() == MIN_TIMESTAMP
(True, True)
>>> h.set_processing_time(5); h.get_processing_time()
5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.core.output_tag import OutputTag
from sparktide.runtime.elements import StreamRecord, Watermark, check_timestamp
from sparktide.runtime.null_keys import refusing_none
from sparktide.runtime.operators.base import AbstractStreamOperator, OperatorSetup
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.timers.queue_factory import TimerQueue
from sparktide.testing.counts import ALL_NAMESPACES, count_state_entries, count_timers

__all__ = ["OperatorTestHarness", "Snapshots", "as_record", "as_watermark"]

Snapshots = Sequence["bytes | KeyedOperatorSnapshot"]


def as_record(value: Any, timestamp: int | None) -> StreamRecord:
    """``value`` as a StreamRecord with event ``timestamp`` (int ms or None), unless it is one."""
    if isinstance(value, StreamRecord):
        return value
    if timestamp is not None:
        timestamp = check_timestamp(timestamp, "timestamp")
    return StreamRecord(value, timestamp)


def as_watermark(watermark: int | Watermark) -> Watermark:
    """``watermark`` (int ms or a Watermark) as a Watermark."""
    if isinstance(watermark, Watermark):
        return watermark
    return Watermark(check_timestamp(watermark, "watermark"))


class OperatorTestHarness:
    """Sets up ``operator`` as one subtask (keyed by ``key_selector`` if given) on a simulated
    clock starting at ``processing_time``, and collects what it emits."""

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
        if key_selector is not None:  # a None key is refused, as a job refuses it
            key_selector = refusing_none(key_selector)
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

    # ------------------------------------------------------------------ clock

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
        """The operator's current watermark (``MIN_TIMESTAMP`` before the first one; with two
        inputs, the minimum of both)."""
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
