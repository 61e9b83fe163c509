"""Two-input operators: co-map, co-flat-map, (keyed) co-process.

The operator's watermark is the minimum of both inputs' watermarks (an idle input does not hold
the other back); event-time timers fire when that combined watermark advances.
"""

from __future__ import annotations

from sparktide.core.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
)
from sparktide.core.timerservice import TimeDomain
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.operators.base import AbstractStreamOperator, KeySelector
from sparktide.runtime.operators.process import (
    USER_TIMERS,
    KeyedContext,
    NonKeyedContext,
    emit_results,
)
from sparktide.runtime.operators.simple import as_callable
from sparktide.runtime.timers.user import NonKeyedTimerService, SimpleTimerService
from sparktide.runtime.valve import TwoInputWatermarkCombiner

__all__ = [
    "AbstractTwoInputOperator",
    "CoFlatMapOperator",
    "CoMapOperator",
    "CoProcessOperator",
    "KeyedCoProcessOperator",
]


class _CombinedOutput:
    """Receives the combined watermark/status and hands it to the operator."""

    __slots__ = ("_op",)

    def __init__(self, op: AbstractTwoInputOperator) -> None:
        self._op = op

    def emit_watermark(self, watermark: Watermark) -> None:
        AbstractStreamOperator.process_watermark(self._op, watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self._op.output.emit_watermark_status(status)


class AbstractTwoInputOperator(AbstractStreamOperator):
    """Base of operators with two inputs; ``input_index`` is 1 or 2."""

    def __init__(self) -> None:
        super().__init__()
        self._combiner = TwoInputWatermarkCombiner()
        self._combined_output = _CombinedOutput(self)
        self.key_selector2: KeySelector | None = None

    def process_element1(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_element2(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_element(self, record: StreamRecord) -> None:
        raise TypeError(
            f"{type(self).__name__} has two inputs: use process_element1 / process_element2"
        )

    def process_watermark1(self, watermark: Watermark) -> None:
        self._combiner.input_watermark(watermark.timestamp, 0, self._combined_output)

    def process_watermark2(self, watermark: Watermark) -> None:
        self._combiner.input_watermark(watermark.timestamp, 1, self._combined_output)

    def process_watermark(self, watermark: Watermark) -> None:
        raise TypeError(
            f"{type(self).__name__} has two inputs: use process_watermark1 / process_watermark2"
        )

    def process_watermark_status1(self, status: WatermarkStatus) -> None:
        self._combiner.input_watermark_status(status, 0, self._combined_output)

    def process_watermark_status2(self, status: WatermarkStatus) -> None:
        self._combiner.input_watermark_status(status, 1, self._combined_output)


class CoMapOperator(AbstractTwoInputOperator):
    def __init__(self, function: CoMapFunction) -> None:
        super().__init__()
        self.function = function
        self._map1 = as_callable(getattr(function, "map1", None), "map1", "map1")
        self._map2 = as_callable(getattr(function, "map2", None), "map2", "map2")

    def open(self) -> None:
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element1(self, record: StreamRecord) -> None:
        record.value = self._map1(record.value)
        self.output.collect(record)

    def process_element2(self, record: StreamRecord) -> None:
        record.value = self._map2(record.value)
        self.output.collect(record)


class CoFlatMapOperator(AbstractTwoInputOperator):
    def __init__(self, function: CoFlatMapFunction) -> None:
        super().__init__()
        self.function = function

    def open(self) -> None:
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element1(self, record: StreamRecord) -> None:
        emit_results(self, self.function.flat_map1(record.value), record.timestamp)

    def process_element2(self, record: StreamRecord) -> None:
        emit_results(self, self.function.flat_map2(record.value), record.timestamp)


class CoProcessOperator(AbstractTwoInputOperator):
    """Runs a CoProcessFunction on two non-keyed inputs; registering timers raises."""

    _ctx: NonKeyedContext  # made by open()

    def __init__(self, function: CoProcessFunction) -> None:
        super().__init__()
        self.function = function

    def open(self) -> None:
        service = self.processing_time_service
        if service is None:
            raise RuntimeError("the operator has no processing-time service: setup() it first")
        timers = NonKeyedTimerService(service, self.current_watermark)
        self._ctx = NonKeyedContext(self, timers)
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element1(self, record: StreamRecord) -> None:
        self._ctx.ts = record.timestamp
        emit_results(
            self, self.function.process_element1(record.value, self._ctx), record.timestamp
        )

    def process_element2(self, record: StreamRecord) -> None:
        self._ctx.ts = record.timestamp
        emit_results(
            self, self.function.process_element2(record.value, self._ctx), record.timestamp
        )


class KeyedTwoInputOperator(AbstractTwoInputOperator):
    """A keyed two-input operator: each input's key selector sets the key context, then
    ``process_keyed_element1``/``2`` (which runners call directly with the key set) runs."""

    def process_element1(self, record: StreamRecord) -> None:
        self.keyed_state_backend.set_current_key(self.key_selector(record.value))  # type: ignore[union-attr,misc]
        self.process_keyed_element1(record)

    def process_element2(self, record: StreamRecord) -> None:
        self.keyed_state_backend.set_current_key(self.key_selector2(record.value))  # type: ignore[union-attr,misc]
        self.process_keyed_element2(record)

    def process_keyed_element1(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_keyed_element2(self, record: StreamRecord) -> None:
        raise NotImplementedError


class KeyedCoProcessOperator(KeyedTwoInputOperator):
    """Runs a KeyedCoProcessFunction: shared keyed state and timers for both inputs."""

    _ctx: KeyedContext  # made by open()

    def __init__(self, function: KeyedCoProcessFunction) -> None:
        super().__init__()
        self.function = function

    def open(self) -> None:
        if self.keyed_state_backend is None:
            raise RuntimeError(
                "KeyedCoProcessFunction needs keyed inputs: connect two keyed streams, or call "
                "key_by(key1, key2) on the connected streams"
            )
        service = self.get_internal_timer_service(USER_TIMERS, self)
        self._ctx = KeyedContext(self, SimpleTimerService(service))
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_keyed_element1(self, record: StreamRecord) -> None:
        ctx = self._ctx
        ctx.ts = record.timestamp
        ctx.domain = None
        emit_results(self, self.function.process_element1(record.value, ctx), record.timestamp)

    def process_keyed_element2(self, record: StreamRecord) -> None:
        ctx = self._ctx
        ctx.ts = record.timestamp
        ctx.domain = None
        emit_results(self, self.function.process_element2(record.value, ctx), record.timestamp)

    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ctx
        ctx.ts = timestamp
        ctx.domain = TimeDomain.EVENT_TIME
        emit_results(self, self.function.on_timer(timestamp, ctx), timestamp)

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ctx
        ctx.ts = None
        ctx.domain = TimeDomain.PROCESSING_TIME
        emit_results(self, self.function.on_timer(timestamp, ctx), None)
