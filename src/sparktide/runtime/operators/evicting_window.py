"""``EvictingWindowOperator``: a window operator with an evictor (Flink's
``EvictingWindowOperator``).

The window keeps every element with its timestamp (a list state of ``(value, timestamp)``
pairs, no incremental aggregation). When the trigger fires, the elements become
:class:`~sparktide.core.window.evictors.TimestampedValue` s, the evictor's ``evict_before`` may
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

from typing import cast

from sparktide.core.output_tag import OutputTag
from sparktide.core.state import ListState, ListStateDescriptor
from sparktide.core.window.assigners import WindowAssigner
from sparktide.core.window.evictors import Evictor, TimestampedValue
from sparktide.core.window.triggers import Trigger
from sparktide.core.window.windows import Window
from sparktide.runtime.operators.process import emit_results
from sparktide.runtime.operators.window import WINDOW_CONTENTS, WindowOperator
from sparktide.runtime.operators.window_functions import EvictorContext, InternalWindowFunction

__all__ = ["EvictingWindowOperator"]

_Element = tuple[object, "int | None"]
"""A buffered element: ``(value, timestamp)``."""


class EvictingWindowOperator(WindowOperator):
    """A :class:`WindowOperator` whose windows buffer all elements and pass through
    ``evictor`` before and after the (iterable) window ``function``; only the emit step
    differs from the window operator."""

    _evicting = True

    def __init__(
        self,
        assigner: WindowAssigner[object, Window],
        function: InternalWindowFunction,
        trigger: Trigger[object, Window],
        evictor: Evictor[object, Window],
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
        # the contents of a list state descriptor are the backend's list state
        self._buffer = cast("ListState[_Element]", self.contents)

    def _emit_window_contents(self, window: Window, contents: object) -> None:
        elements = [TimestampedValue(v, t) for v, t in cast("list[_Element]", contents)]
        evictor, ev_ctx = self.evictor, self._evictor_ctx
        evictor.evict_before(elements, len(elements), window, ev_ctx)
        ctx = self._process_ctx
        ctx.current_window = window
        values = [e.value for e in elements]
        results = self.function.process(self._backend.current_key, window, ctx, values)
        if results is not None:
            emit_results(self, results, window.max_timestamp())
        evictor.evict_after(elements, len(elements), window, ev_ctx)
        self._buffer.update([(e.value, e.timestamp) for e in elements])
