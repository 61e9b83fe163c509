"""Assigners of global and count windows: ``GlobalWindows`` (Flink's, used by
``count_window``) and PyFlink's ``CountTumblingWindowAssigner`` / ``CountSlidingWindowAssigner``.

>>> GlobalWindows.create().get_default_trigger()
NeverTrigger()
>>> GlobalWindows.create_with_end_of_stream_trigger().get_default_trigger()
EndOfStreamTrigger()
>>> CountTumblingWindowAssigner.of(3).get_default_trigger()
CountTrigger(3)
"""

from __future__ import annotations

from typing import Any

from sparktide.core.state import ValueStateDescriptor
from sparktide.core.window.assigners import WindowAssigner
from sparktide.core.window.triggers import CountTrigger, NeverTrigger, Trigger, TriggerResult
from sparktide.core.window.windows import CountWindow, GlobalWindow

__all__ = [
    "CountSlidingWindowAssigner",
    "CountTumblingWindowAssigner",
    "EndOfStreamTrigger",
    "GlobalWindows",
]

_GLOBAL = (GlobalWindow.get(),)


class EndOfStreamTrigger(Trigger[Any, GlobalWindow]):
    """Fires the :class:`GlobalWindow` once, at the end of the input (Flink's
    ``GlobalWindows.EndOfStreamTrigger``): every element registers an event-time timer at the
    window's ``max_timestamp`` (MAX, a duplicate is a no-op), which only the final watermark of a
    bounded input reaches.

    >>> EndOfStreamTrigger().on_event_time(GlobalWindow.get().max_timestamp(), GlobalWindow.get(),
    ...                                    None)
    <TriggerResult.FIRE: (True, False)>
    """

    __slots__ = ()

    def on_element(
        self, element: Any, timestamp: int | None, window: GlobalWindow, ctx: Any
    ) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: GlobalWindow, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: GlobalWindow, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: GlobalWindow, ctx: Any) -> None:
        pass

    def __repr__(self) -> str:
        return "EndOfStreamTrigger()"


class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """Every element of a key goes into the one :class:`GlobalWindow`. The default trigger of
    :meth:`create` never fires: set one (e.g. ``CountTrigger``) with
    ``WindowedStream.trigger``. :meth:`create_with_end_of_stream_trigger` fires the window
    once, when a bounded input ends (a batch aggregate per key).

    >>> GlobalWindows.create().assign_windows("x", None, None)
    (GlobalWindow,)
    """

    __slots__ = ("_default_trigger",)

    EndOfStreamTrigger = EndOfStreamTrigger

    def __init__(self, default_trigger: Trigger | None = None) -> None:
        self._default_trigger = NeverTrigger() if default_trigger is None else default_trigger

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    @staticmethod
    def create_with_end_of_stream_trigger() -> GlobalWindows:
        """Global windows whose default trigger fires each key's window at the end of a bounded
        input (in a stream that never ends, never)."""
        return GlobalWindows(EndOfStreamTrigger())

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        return _GLOBAL

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return self._default_trigger

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        if isinstance(self._default_trigger, EndOfStreamTrigger):
            return "GlobalWindows.create_with_end_of_stream_trigger()"
        return "GlobalWindows()"


def _count(value: Any, name: str, owner: str) -> int:
    if type(value) is not int or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive int (elements), got {value!r}")
    return value


class CountTumblingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """PyFlink's tumbling count windows: element ``i`` of a key (counting from 0) goes into
    ``CountWindow(i // window_size)``; the default trigger fires when a window holds
    ``window_size`` elements.

    >>> CountTumblingWindowAssigner.of(2)
    CountTumblingWindowAssigner(2)
    """

    __slots__ = ("_descriptor", "_size")

    def __init__(self, window_size: int) -> None:
        self._size = _count(window_size, "window_size", type(self).__name__)
        self._descriptor = ValueStateDescriptor("tumble-count-assigner", None)

    @classmethod
    def of(cls, window_size: int) -> Any:
        return cls(window_size)

    def _next_count(self, context: Any) -> int:
        state = context.get_runtime_context().get_state(self._descriptor)
        count = state.value() or 0
        state.update(count + 1)
        return count

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        return [CountWindow(self._next_count(context) // self._size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return CountTrigger(self._size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size})"


class CountSlidingWindowAssigner(CountTumblingWindowAssigner):
    """PyFlink's sliding count windows: ``CountWindow(j)`` holds elements
    ``[j * window_slide, j * window_slide + window_size)`` of a key; each fires once full.

    >>> CountSlidingWindowAssigner.of(3, 2)
    CountSlidingWindowAssigner(3, 2)
    """

    __slots__ = ("_slide",)

    def __init__(self, window_size: int, window_slide: int) -> None:
        super().__init__(window_size)
        self._slide = _count(window_slide, "window_slide", type(self).__name__)
        self._descriptor = ValueStateDescriptor("slide-count-assigner", None)

    @classmethod
    def of(cls, window_size: int, window_slide: int) -> Any:  # type: ignore[override]
        return cls(window_size, window_slide)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        count = self._next_count(context)
        size, slide = self._size, self._slide
        last_id = count // slide
        windows = []
        while last_id >= 0 and last_id * slide <= count <= last_id * slide + size - 1:
            windows.append(CountWindow(last_id))
            last_id -= 1
        return windows

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size}, {self._slide})"
