"""What the window operator calls: internal window functions (Flink's
``InternalWindowFunction`` family) and the contexts handed to user code (trigger context,
process-window context, per-window state, assigner and evictor contexts).

An internal function turns a window's *contents* into outputs: ``process(key, window, ctx,
contents)`` returns an iterable (or None). Contents are a single value for incremental windows
(reduce / aggregate) and a list for buffering windows (apply / process / evictors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sparktide.core.output_tag import OutputTag
from sparktide.core.window.assigners import WindowAssigner
from sparktide.core.window.evictors import Evictor
from sparktide.core.window.functions import (
    KeyedStateStore,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
)
from sparktide.core.window.triggers import Trigger
from sparktide.runtime.elements import StreamRecord, check_timestamp

__all__ = [
    "AggregateThenFunction",
    "ApplyFunction",
    "InternalWindowFunction",
    "PassThroughFunction",
    "ProcessContextFunction",
    "ReduceThenFunction",
    "WindowProcessContext",
    "WindowTriggerContext",
]


def _open(function: Any, runtime_context: Any) -> None:
    opener = getattr(function, "open", None)
    if callable(opener) and not isinstance(function, type):
        opener(runtime_context)


def _close(function: Any) -> None:
    closer = getattr(function, "close", None)
    if callable(closer) and not isinstance(function, type):
        closer()


class InternalWindowFunction:
    """Base: ``process`` evaluates contents, ``clear`` runs when a window expires."""

    __slots__ = ("function",)

    def __init__(self, function: Any) -> None:
        self.function = function

    def open(self, runtime_context: Any) -> None:
        _open(self.function, runtime_context)

    def close(self) -> None:
        _close(self.function)

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Iterable[Any] | None:
        raise NotImplementedError

    def clear(self, window: Any, ctx: Any) -> None:
        pass


class PassThroughFunction(InternalWindowFunction):
    """Emits the pre-aggregated value itself (reduce / aggregate without window function)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None)

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Iterable[Any]:
        return (contents,)


class ApplyFunction(InternalWindowFunction):
    """A ``WindowFunction`` (``apply(key, window, inputs)``) or ``AllWindowFunction``
    (``apply(window, inputs)``); ``single_value`` wraps pre-aggregated contents in a list."""

    __slots__ = ("_apply", "_keyed", "_single")

    def __init__(self, function: Any, *, keyed: bool, single_value: bool) -> None:
        super().__init__(function)
        apply = getattr(function, "apply", None)
        self._apply: Callable[..., Any] = apply if callable(apply) else function
        self._keyed = keyed
        self._single = single_value

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Any:
        inputs = [contents] if self._single else contents
        if self._keyed:
            return self._apply(key, window, inputs)
        return self._apply(window, inputs)


class ProcessContextFunction(InternalWindowFunction):
    """A ``ProcessWindowFunction`` (``process(key, context, elements)``) or
    ``ProcessAllWindowFunction`` (``process(context, elements)``)."""

    __slots__ = ("_keyed", "_single")

    def __init__(self, function: Any, *, keyed: bool, single_value: bool) -> None:
        super().__init__(function)
        self._keyed = keyed
        self._single = single_value

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Any:
        elements = [contents] if self._single else contents
        if self._keyed:
            return self.function.process(key, ctx, elements)
        return self.function.process(ctx, elements)

    def clear(self, window: Any, ctx: Any) -> None:
        self.function.clear(ctx)


class ReduceThenFunction(InternalWindowFunction):
    """Reduces buffered contents (windows with an evictor), then runs ``inner`` on the single
    result. Nothing is emitted when the evictor left no element."""

    __slots__ = ("_inner", "_reduce")

    def __init__(self, reduce: Callable[[Any, Any], Any], inner: InternalWindowFunction) -> None:
        super().__init__(reduce)
        self._reduce = reduce
        self._inner = inner

    def open(self, runtime_context: Any) -> None:
        self._inner.open(runtime_context)

    def close(self) -> None:
        self._inner.close()

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Any:
        it = iter(contents)
        acc = next(it, _NOTHING)
        if acc is _NOTHING:
            return None
        reduce = self._reduce
        for value in it:
            acc = reduce(acc, value)
        return self._inner.process(key, window, ctx, acc)

    def clear(self, window: Any, ctx: Any) -> None:
        self._inner.clear(window, ctx)


_NOTHING = object()


class AggregateThenFunction(ReduceThenFunction):
    """Aggregates buffered contents with an ``AggregateFunction``, then runs ``inner`` on the
    result (also for an empty window, as Flink does)."""

    __slots__ = ("_agg",)

    def __init__(self, agg: Any, inner: InternalWindowFunction) -> None:
        super().__init__(None, inner)  # type: ignore[arg-type]
        self._agg = agg

    def process(self, key: Any, window: Any, ctx: Any, contents: Any) -> Any:
        agg = self._agg
        acc = agg.create_accumulator()
        for value in contents:
            acc = agg.add(value, acc)
        return self._inner.process(key, window, ctx, agg.get_result(acc))


# ------------------------------------------------------------------------------------ contexts


class PerWindowStateStore(KeyedStateStore):
    """Keyed state scoped to the current key and one window."""

    __slots__ = ("_backend", "_window")

    def __init__(self, backend: Any, window: Any) -> None:
        self._backend = backend
        self._window = window

    def _state(self, descriptor: Any) -> Any:
        return self._backend.get_partitioned_state(descriptor, self._window)

    get_state = _state
    get_list_state = _state
    get_map_state = _state
    get_reducing_state = _state
    get_aggregating_state = _state


class WindowProcessContext(ProcessWindowFunction.Context, ProcessAllWindowFunction.Context):
    """The ``context`` of process window functions; also passed to ``clear``."""

    def __init__(self, operator: Any, merging: bool) -> None:
        self._op = operator
        self._merging = merging
        self.current_window: Any = None

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._op.processing_time_service.get_current_processing_time()  # type: ignore[no-any-return]

    def current_watermark(self) -> int:
        return self._op.current_watermark()  # type: ignore[no-any-return]

    def window_state(self) -> KeyedStateStore:
        if self._merging:
            raise RuntimeError(
                "Per-window state is not allowed when using merging windows (sessions): the "
                "windows change as they merge; keep the state in global_state() instead"
            )
        return PerWindowStateStore(self._op.keyed_state_backend, self.current_window)

    def global_state(self) -> KeyedStateStore:
        return self._op.runtime_context  # type: ignore[no-any-return]

    def output(self, output_tag: OutputTag, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            raise TypeError(
                f"output_tag must be an OutputTag, got {type(output_tag).__name__}; create one "
                "with OutputTag('name')"
            )
        record = StreamRecord(value, self.current_window.max_timestamp())
        self._op.output.collect_side(output_tag, record)


def _time(time: Any) -> int:
    return time if type(time) is int else check_timestamp(time, "time")


class WindowTriggerContext(Trigger.OnMergeContext):
    """The ``ctx`` of trigger calls: timers and state of the current key and ``window``."""

    __slots__ = ("_backend", "_states", "_timers", "merged_windows", "window")

    def __init__(self, backend: Any, timers: Any) -> None:
        self._backend = backend
        self._timers = timers
        self._states: dict[str, tuple[Any, Any]] = {}
        self.window: Any = None
        self.merged_windows: list[Any] | None = None

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()  # type: ignore[no-any-return]

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark()  # type: ignore[no-any-return]

    def register_processing_time_timer(self, time: int) -> None:
        if type(time) is not int:
            time = check_timestamp(time, "time")
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        if type(time) is not int:
            time = check_timestamp(time, "time")
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, _time(time))

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, _time(time))

    def _internal_state(self, descriptor: Any) -> Any:
        name = getattr(descriptor, "name", None)
        entry = self._states.get(name)  # type: ignore[arg-type]
        if entry is not None and entry[0] is descriptor:
            return entry[1]
        state = self._backend.get_internal_state(descriptor)
        self._states[name] = (descriptor, state)  # type: ignore[index]
        return state

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        state = self._internal_state(state_descriptor)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        merged = self.merged_windows
        if not merged:
            return
        state = self._internal_state(state_descriptor)
        merge = getattr(state, "merge_namespaces", None)
        if merge is None:
            raise TypeError(
                f"merge_partitioned_state needs a mergeable state (list, reducing or aggregating "
                f"state), got {state_descriptor!r}; keep mergeable trigger state in one of those"
            )
        merge(self.window, merged)


class AssignerContext(WindowAssigner.WindowAssignerContext):
    """The ``context`` of ``WindowAssigner.assign_windows``."""

    __slots__ = ("_op",)

    def __init__(self, operator: Any) -> None:
        self._op = operator

    def get_current_processing_time(self) -> int:
        return self._op.processing_time_service.get_current_processing_time()  # type: ignore[no-any-return]

    def get_runtime_context(self) -> Any:
        return self._op.runtime_context


class EvictorContext(Evictor.EvictorContext):
    """The ``evictor_context`` of evictors."""

    __slots__ = ("_op",)

    def __init__(self, operator: Any) -> None:
        self._op = operator

    def get_current_processing_time(self) -> int:
        return self._op.processing_time_service.get_current_processing_time()  # type: ignore[no-any-return]

    def get_current_watermark(self) -> int:
        return self._op.current_watermark()  # type: ignore[no-any-return]

    def get_metric_group(self) -> Any:
        raise NotImplementedError("metric groups are not available to evictors yet")
