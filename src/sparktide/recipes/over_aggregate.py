"""Processing-time ``RANGE BETWEEN <preceding> PRECEDING AND CURRENT ROW`` OVER aggregation.

The function of seed 001 (Flink's ``ProcTimeRangeBoundedPrecedingFunction``), written on the
public API. Each row is buffered under the processing time it arrived at; a processing-time
timer one millisecond later aggregates it together with every row of the preceding range, by
retracting the rows that fell out of the range from the accumulator and adding the new ones, and
emits ``(row, aggregate)`` for each row of that millisecond. A cleanup timer clears all state of
a key once it has been idle for the range (plus half of it as slack, so a cleanup timer is not
re-registered for every row).

>>> from sparktide.testing import for_keyed_process_function
>>> h = for_keyed_process_function(
...     ProcTimeRangeBoundedPrecedingFunction(SumAggregate(lambda r: r[1]), preceding=10),
...     lambda r: r[0], processing_time=0)
>>> h.process_element(("a", 1)); h.set_processing_time(5)
>>> h.process_element(("a", 2)); h.set_processing_time(20)
>>> h.process_element(("a", 4)); h.set_processing_time(21)
>>> h.extract_output_values()
[(('a', 1), 1), (('a', 2), 3), (('a', 4), 4)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from sparktide.common.time import SpanLike, to_millis
from sparktide.datastream.functions import KeyedProcessFunction, RuntimeContext
from sparktide.datastream.state import MapStateDescriptor, ValueStateDescriptor

__all__ = [
    "CountAggregate",
    "ProcTimeRangeBoundedPrecedingFunction",
    "RetractableAggregate",
    "SumAggregate",
]

ACC = TypeVar("ACC")


class RetractableAggregate(Generic[ACC]):
    """An aggregate that can also take a row back out (``retract``)."""

    def create_accumulator(self) -> ACC:
        raise NotImplementedError

    def add(self, row: Any, accumulator: ACC) -> ACC:
        raise NotImplementedError

    def retract(self, row: Any, accumulator: ACC) -> ACC:
        raise NotImplementedError

    def get_result(self, accumulator: ACC) -> Any:
        raise NotImplementedError


class SumAggregate(RetractableAggregate[Any]):
    """``SUM(field(row))``."""

    def __init__(self, field: Callable[[Any], Any]) -> None:
        self.field = field

    def create_accumulator(self) -> Any:
        return 0

    def add(self, row: Any, accumulator: Any) -> Any:
        return accumulator + self.field(row)

    def retract(self, row: Any, accumulator: Any) -> Any:
        return accumulator - self.field(row)

    def get_result(self, accumulator: Any) -> Any:
        return accumulator


class CountAggregate(RetractableAggregate[int]):
    """``COUNT(*)``."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, row: Any, accumulator: int) -> int:
        return accumulator + 1

    def retract(self, row: Any, accumulator: int) -> int:
        return accumulator - 1

    def get_result(self, accumulator: int) -> int:
        return accumulator


class ProcTimeRangeBoundedPrecedingFunction(KeyedProcessFunction):
    """OVER aggregation on processing time over the last ``preceding`` ms, with retraction."""

    def __init__(self, aggregate: RetractableAggregate[Any], preceding: SpanLike) -> None:
        for method in ("create_accumulator", "add", "retract", "get_result"):
            if not callable(getattr(aggregate, method, None)):
                raise TypeError(
                    f"aggregate must have a {method}() method (see RetractableAggregate), got "
                    f"{type(aggregate).__name__}"
                )
        self.aggregate = aggregate
        self.preceding = to_millis(preceding, "preceding")
        if self.preceding < 0:
            raise ValueError(f"preceding must be >= 0 ms, got {self.preceding}")

    def open(self, runtime_context: RuntimeContext) -> None:
        self.input_state = runtime_context.get_map_state(MapStateDescriptor("input", None, None))
        self.acc_state = runtime_context.get_state(ValueStateDescriptor("accumulator", None))
        self.cleanup_ts_state = runtime_context.get_state(ValueStateDescriptor("cleanup-ts", None))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        current_time = ctx.timer_service().current_processing_time()
        rows = self.input_state.get(current_time)
        if rows is None:
            rows = []
            # process this millisecond's rows once it has passed
            ctx.timer_service().register_processing_time_timer(current_time + 1)
            self._register_cleanup_timer(ctx, current_time)
        rows.append(value)
        self.input_state.put(current_time, rows)

    def _register_cleanup_timer(self, ctx: KeyedProcessFunction.Context, timestamp: int) -> None:
        min_cleanup = timestamp + self.preceding + 1
        max_cleanup = timestamp + self.preceding * 3 // 2 + 1
        current = self.cleanup_ts_state.value()
        if current is None or current < min_cleanup:
            # the old cleanup timer stays: it finds a later cleanup time and does nothing
            ctx.timer_service().register_processing_time_timer(max_cleanup)
            self.cleanup_ts_state.update(max_cleanup)

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        cleanup_ts = self.cleanup_ts_state.value()
        cleanup_due = cleanup_ts is not None and cleanup_ts <= timestamp
        current_rows = self.input_state.get(timestamp - 1)
        if current_rows is None:
            if cleanup_due:
                self._clear()
            return None
        current_time = timestamp - 1
        agg = self.aggregate
        acc = self.acc_state.value()
        if acc is None:
            acc = agg.create_accumulator()
        limit = current_time - self.preceding
        expired = [t for t in self.input_state if t < limit]
        for t in expired:
            expired_rows = self.input_state.get(t)
            if expired_rows is not None:  # always: t was just listed
                for row in expired_rows:
                    acc = agg.retract(row, acc)
            self.input_state.remove(t)
        for row in current_rows:
            acc = agg.add(row, acc)
        result = agg.get_result(acc)
        if cleanup_due:
            # only with preceding == 0 can the cleanup timer coincide with this row's timer;
            # the rows are emitted first (Flink's function would drop them)
            self._clear()
        else:
            self.acc_state.update(acc)
        return [(row, result) for row in current_rows]

    def _clear(self) -> None:
        self.input_state.clear()
        self.acc_state.clear()
        self.cleanup_ts_state.clear()
