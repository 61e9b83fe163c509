"""Processing-time "deduplicate, keep last row" (``ProcTimeDeduplicateKeepLastRowFunction``).

For every key, the latest row wins and the output is a changelog: the first row of a key is an
INSERT; each later row retracts the previous one (UPDATE_BEFORE, when ``generate_update_before``)
and emits itself as UPDATE_AFTER. The last row of a key is kept in state; with a retention time
the state of an idle key is cleared by a processing-time cleanup timer (seed 001's example of the
TimerService): a key seen at time ``t`` is kept at least ``min_retention`` and at most
``max_retention`` after ``t``; the cleanup timer is only moved when the minimum would be
violated, so a busy key does not re-register a timer for every row.

>>> from sparktide.testing import for_keyed_process_function
>>> h = for_keyed_process_function(
...     ProcTimeDeduplicateKeepLastRowFunction(min_retention=100), lambda r: r[0])
>>> h.process_element(("k", 1)); h.process_element(("k", 2))
>>> [(str(kind), row) for kind, row in h.extract_output_values()]
[('+I', ('k', 1)), ('-U', ('k', 1)), ('+U', ('k', 2))]
>>> h.set_processing_time(1000); h.num_keyed_state_entries()
0
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparktide.common.row_kind import RowKind
from sparktide.common.time import SpanLike, to_millis
from sparktide.datastream.functions import KeyedProcessFunction, RuntimeContext
from sparktide.datastream.state import ValueStateDescriptor

__all__ = ["ProcTimeDeduplicateKeepLastRowFunction"]


class ProcTimeDeduplicateKeepLastRowFunction(KeyedProcessFunction):
    """Keep the last row per key; emit ``(RowKind, row)`` changelog pairs."""

    def __init__(
        self,
        *,
        generate_update_before: bool = True,
        generate_insert: bool = True,
        min_retention: SpanLike | None = None,
        max_retention: SpanLike | None = None,
    ) -> None:
        self.generate_update_before = bool(generate_update_before)
        self.generate_insert = bool(generate_insert)
        self.min_retention = (
            None if min_retention is None else to_millis(min_retention, "min_retention")
        )
        if max_retention is not None and self.min_retention is None:
            raise ValueError("max_retention needs min_retention; pass both or only min_retention")
        if self.min_retention is not None:
            if self.min_retention <= 0:
                raise ValueError(f"min_retention must be > 0 ms, got {self.min_retention}")
            self.max_retention = (
                self.min_retention * 3 // 2
                if max_retention is None
                else to_millis(max_retention, "max_retention")
            )
            if self.max_retention < self.min_retention:
                raise ValueError(
                    f"max_retention ({self.max_retention} ms) must be >= min_retention "
                    f"({self.min_retention} ms)"
                )

    def open(self, runtime_context: RuntimeContext) -> None:
        self.last_row = runtime_context.get_state(ValueStateDescriptor("last-row", None))
        self.cleanup_time = runtime_context.get_state(ValueStateDescriptor("cleanup-time", None))

    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        if self.min_retention is not None:
            self._register_cleanup_timer(ctx)
        if not (self.generate_update_before or self.generate_insert):
            self.last_row.update(value)
            return [(RowKind.UPDATE_AFTER, value)]
        previous = self.last_row.value()
        self.last_row.update(value)
        if previous is None:
            kind = RowKind.INSERT if self.generate_insert else RowKind.UPDATE_AFTER
            return [(kind, value)]
        if self.generate_update_before:
            return [(RowKind.UPDATE_BEFORE, previous), (RowKind.UPDATE_AFTER, value)]
        return [(RowKind.UPDATE_AFTER, value)]

    def _register_cleanup_timer(self, ctx: KeyedProcessFunction.Context) -> None:
        timers = ctx.timer_service()
        now = timers.current_processing_time()
        current = self.cleanup_time.value()
        if current is None or now + self.min_retention > current:  # type: ignore[operator]
            cleanup = now + self.max_retention
            timers.register_processing_time_timer(cleanup)
            if current is not None:
                timers.delete_processing_time_timer(current)
            self.cleanup_time.update(cleanup)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> None:
        if self.cleanup_time.value() == timestamp:
            self.last_row.clear()
            self.cleanup_time.clear()
