"""``EvictingWindowOperator``: a window operator with an evictor (Flink's
``EvictingWindowOperator``).

The window keeps every element with its timestamp (a list state of ``(value, timestamp)``
pairs, no incremental aggregation). When the trigger fires, the elements become
:class:`~sparktide.datastream.window.TimestampedValue` s, the evictor's ``evict_before`` may
remove some, the window function sees the values of the rest, ``evict_after`` may remove more,
and what is left is written back as the window's contents. Reduce and aggregate functions run
over the remaining elements at firing time.

>>> from sparktide.core.window.evictors import CountEvictor
>>> from sparktide.core.window.global_windows import GlobalWindows
>>> from sparktide.core.window.triggers import CountTrigger
>>> from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
>>> from sparktide.testing import KeyedOneInputStreamOperatorTestHarness
>>> b = WindowOperatorBuilder(GlobalWindows.create())
>>> b.set_trigger(CountTrigger.of(2)); b.set_evictor(CountEvictor.of(3))
>>> h = KeyedOneInputStreamOperatorTestHarness(b.reduce(lambda x, y: x + y), lambda v: "k")
>>> h.open()
>>> for v in [1, 2, 3, 4, 5, 6]: h.process_element(v, None)
>>> h.extract_output_values()  # every 2 elements, the sum of the last 3
[3, 9, 15]
"""

from __future__ import annotations

from typing import Any

from sparktide.core.output_tag import OutputTag
from sparktide.core.state import ListStateDescriptor
from sparktide.core.window.evictors import TimestampedValue
from sparktide.runtime.operators.process import emit_results
from sparktide.runtime.operators.window import WINDOW_CONTENTS, WindowOperator
from sparktide.runtime.operators.window_functions import EvictorContext, InternalWindowFunction

__all__ = ["EvictingWindowOperator"]


class EvictingWindowOperator(WindowOperator):
    """A :class:`WindowOperator` whose windows buffer all elements and pass through
    ``evictor`` before and after the (iterable) window ``function``."""

    _evicting = True

    def __init__(
        self,
        assigner: Any,
        function: InternalWindowFunction,
        trigger: Any,
        evictor: Any,
        allowed_lateness: int = 0,
        late_data_output_tag: OutputTag | None = None,
    ) -> None:
        for method in ("evict_before", "evict_after"):
            if not callable(getattr(evictor, method, None)):
                raise TypeError(
                    f"evictor must be an Evictor (evict_before and evict_after), got "
                    f"{type(evictor).__name__}"
                )
        super().__init__(
            assigner,
            ListStateDescriptor(WINDOW_CONTENTS, None),
            function,
            trigger,
            allowed_lateness,
            late_data_output_tag,
        )
        self.evictor = evictor

    def open(self) -> None:
        super().open()
        self._pass_through = False
        self._evictor_ctx = EvictorContext(self)

    def _emit_window_contents(self, window: Any, contents: Any) -> None:
        elements = [TimestampedValue(v, t) for v, t in contents]
        evictor, ev_ctx = self.evictor, self._evictor_ctx
        evictor.evict_before(elements, len(elements), window, ev_ctx)
        ctx = self._process_ctx
        ctx.current_window = window
        key = self.keyed_state_backend.current_key  # type: ignore[union-attr]
        values = [e.value for e in elements]
        results = self.function.process(key, window, ctx, values)
        if results is not None:
            emit_results(self, results, window.max_timestamp())
        evictor.evict_after(elements, len(elements), window, ev_ctx)
        self.contents.update([(e.value, e.timestamp) for e in elements])  # type: ignore[attr-defined]
