"""Window functions with PyFlink's names: ``WindowFunction``, ``ProcessWindowFunction``,
``AllWindowFunction``, ``ProcessAllWindowFunction`` and the ``KeyedStateStore`` of their context.

They are ``typing.Generic`` so PyFlink's annotations work at class-definition time:

>>> from sparktide.datastream.window import TimeWindow
>>> class CountPerWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
...     def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
...                 elements):
...         w = context.window()
...         yield key, w.start, w.end, len(list(elements))
>>> class Ctx(ProcessWindowFunction.Context):
...     def window(self): return TimeWindow(0, 10)
...     def current_processing_time(self): return 0
...     def current_watermark(self): return 9
...     def window_state(self): return None
...     def global_state(self): return None
>>> list(CountPerWindow().process("a", Ctx(), ["x", "y"]))
[('a', 0, 10, 2)]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sparktide.core.functions import Function, KeyedStateStore

if TYPE_CHECKING:
    from sparktide.core.output_tag import OutputTag

__all__ = [
    "AllWindowFunction",
    "KeyedStateStore",
    "ProcessAllWindowFunction",
    "ProcessWindowFunction",
    "WindowFunction",
]

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluates a keyed window: ``apply(key, window, inputs)`` returns or yields the outputs.

    >>> class Total(WindowFunction):
    ...     def apply(self, key, window, inputs):
    ...         return [(key, sum(inputs))]
    >>> Total().apply("k", None, [1, 2])
    [('k', 3)]
    """

    @abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None:
        """The outputs for ``inputs``, the elements of ``window`` for ``key``."""


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluates a window of a non-keyed stream (``window_all``): ``apply(window, inputs)``.

    >>> class Size(AllWindowFunction):
    ...     def apply(self, window, inputs):
    ...         yield len(list(inputs))
    >>> list(Size().apply(None, "abc"))
    [3]
    """

    @abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None:
        """The outputs for the elements ``inputs`` of ``window``."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluates a keyed window with a context: ``process(key, context, elements)`` yields the
    outputs (``yield tag, value`` or ``context.output(tag, value)`` for side outputs).

    Per-window state (``context.window_state()``) must be removed in :meth:`clear`, which runs
    when the window expires.

    >>> class Span(ProcessWindowFunction):
    ...     def process(self, key, context, elements):
    ...         yield key, min(elements), max(elements)
    >>> list(Span().process("k", None, [3, 1, 2]))
    [('k', 1, 3)]
    """

    class Context(ABC, Generic[W2]):
        """The window being evaluated, time, state and side outputs."""

        @abstractmethod
        def window(self) -> W2:
            """The window being evaluated."""

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore:
            """State scoped to the current key and window (not with merging windows)."""

        @abstractmethod
        def global_state(self) -> KeyedStateStore:
            """State scoped to the current key, shared by all its windows."""

        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""
            raise NotImplementedError

    @abstractmethod
    def process(
        self, key: KEY, context: ProcessWindowFunction.Context[W], elements: Iterable[IN]
    ) -> Iterable[OUT] | None:
        """Yield the outputs for ``elements``, the contents of ``context.window()``."""

    def clear(self, context: ProcessWindowFunction.Context[W]) -> None:
        """Called when the window expires: delete per-window state here."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluates a window of a non-keyed stream with a context: ``process(context, elements)``.

    >>> class Size(ProcessAllWindowFunction):
    ...     def process(self, context, elements):
    ...         yield len(list(elements))
    >>> list(Size().process(None, [1, 2]))
    [2]
    """

    class Context(ABC, Generic[W2]):
        """The window being evaluated, time, state and side outputs."""

        @abstractmethod
        def window(self) -> W2: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore: ...

        @abstractmethod
        def global_state(self) -> KeyedStateStore: ...

        def current_processing_time(self) -> int:
            raise NotImplementedError

        def current_watermark(self) -> int:
            raise NotImplementedError

        def output(self, output_tag: OutputTag, value: Any) -> None:
            raise NotImplementedError

    @abstractmethod
    def process(
        self, context: ProcessAllWindowFunction.Context[W], elements: Iterable[IN]
    ) -> Iterable[OUT] | None:
        """Yield the outputs for ``elements``, the contents of ``context.window()``."""

    def clear(self, context: ProcessAllWindowFunction.Context[W]) -> None:
        """Called when the window expires: delete per-window state here."""
