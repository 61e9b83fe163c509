"""What the window operator calls: internal window functions (Flink's
``InternalWindowFunction`` family) and the contexts handed to user code (trigger context,
process-window context, per-window state, assigner and evictor contexts).

An internal function turns a window's *contents* into outputs: ``process(key, window, ctx,
contents)`` returns an iterable (or None). Contents are a single value for incremental windows
(reduce / aggregate) and a list for buffering windows (apply / process / evictors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from sparktide.core.functions import AggregateFunction, RuntimeContext
from sparktide.core.output_tag import OutputTag
from sparktide.core.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from sparktide.core.window.assigners import WindowAssigner
from sparktide.core.window.evictors import Evictor
from sparktide.core.window.functions import (
    KeyedStateStore,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
)
from sparktide.core.window.triggers import Trigger
from sparktide.core.window.windows import Window
from sparktide.runtime.elements import StreamRecord, check_timestamp
from sparktide.runtime.state.heap import InternalKvState
from sparktide.runtime.state.keyed_backend import KeyedStateBackend
from sparktide.runtime.timers.service import InternalTimerService

if TYPE_CHECKING:
    from sparktide.runtime.operators.base import AbstractStreamOperator

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

Results = Iterable[object] | None
"""What a window function returns: its outputs, or None."""


def _open(function: object, runtime_context: RuntimeContext) -> None:
    opener = getattr(function, "open", None)
    if callable(opener) and not isinstance(function, type):
        opener(runtime_context)


def _close(function: object) -> None:
    closer = getattr(function, "close", None)
    if callable(closer) and not isinstance(function, type):
        closer()


class InternalWindowFunction:
    """Base: ``process`` evaluates contents, ``clear`` runs when a window expires."""

    __slots__ = ("function",)

    def __init__(self, function: object) -> None:
        self.function = function

    def open(self, runtime_context: RuntimeContext) -> None:
        _open(self.function, runtime_context)

    def close(self) -> None:
        _close(self.function)

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        raise NotImplementedError

    def clear(self, window: Window, ctx: WindowProcessContext) -> None:
        pass


class PassThroughFunction(InternalWindowFunction):
    """Emits the pre-aggregated value itself (reduce / aggregate without window function)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None)

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        return (contents,)


class ApplyFunction(InternalWindowFunction):
    """A ``WindowFunction`` (``apply(key, window, inputs)``) or ``AllWindowFunction``
    (``apply(window, inputs)``); ``single_value`` wraps pre-aggregated contents in a list."""

    __slots__ = ("_apply", "_keyed", "_single")

    def __init__(self, function: object, *, keyed: bool, single_value: bool) -> None:
        super().__init__(function)
        apply: object = getattr(function, "apply", None)
        self._apply = cast("Callable[..., Results]", apply if callable(apply) else function)
        self._keyed = keyed
        self._single = single_value

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        inputs = [contents] if self._single else contents
        if self._keyed:
            return self._apply(key, window, inputs)
        return self._apply(window, inputs)


class ProcessContextFunction(InternalWindowFunction):
    """A ``ProcessWindowFunction`` (``process(key, context, elements)``) or
    ``ProcessAllWindowFunction`` (``process(context, elements)``)."""

    __slots__ = ("_keyed", "_process", "_single")

    function: ProcessWindowFunction | ProcessAllWindowFunction

    def __init__(
        self,
        function: ProcessWindowFunction | ProcessAllWindowFunction,
        *,
        keyed: bool,
        single_value: bool,
    ) -> None:
        super().__init__(function)
        self._keyed = keyed
        self._single = single_value
        # keyed: process(key, context, elements); all-window: process(context, elements)
        self._process: Callable[..., Results] = function.process

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        elements = [contents] if self._single else contents
        if self._keyed:
            return self._process(key, ctx, elements)
        return self._process(ctx, elements)

    def clear(self, window: Window, ctx: WindowProcessContext) -> None:
        self.function.clear(ctx)


class ReduceThenFunction(InternalWindowFunction):
    """Reduces buffered contents (windows with an evictor), then runs ``inner`` on the single
    result. Nothing is emitted when the evictor left no element."""

    __slots__ = ("_inner", "_reduce")

    def __init__(
        self, reduce: Callable[[object, object], object] | None, inner: InternalWindowFunction
    ) -> None:
        super().__init__(reduce)
        self._reduce = reduce
        self._inner = inner

    def open(self, runtime_context: RuntimeContext) -> None:
        self._inner.open(runtime_context)

    def close(self) -> None:
        self._inner.close()

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        it = iter(cast("Iterable[object]", contents))
        acc = next(it, _NOTHING)
        if acc is _NOTHING:
            return None
        reduce = cast("Callable[[object, object], object]", self._reduce)
        for value in it:
            acc = reduce(acc, value)
        return self._inner.process(key, window, ctx, acc)

    def clear(self, window: Window, ctx: WindowProcessContext) -> None:
        self._inner.clear(window, ctx)


_NOTHING = object()


class AggregateThenFunction(ReduceThenFunction):
    """Aggregates buffered contents with an ``AggregateFunction``, then runs ``inner`` on the
    result (also for an empty window, as Flink does)."""

    __slots__ = ("_agg",)

    def __init__(self, agg: AggregateFunction, inner: InternalWindowFunction) -> None:
        super().__init__(None, inner)
        self._agg = agg

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        agg = self._agg
        acc = agg.create_accumulator()
        for value in cast("Iterable[object]", contents):
            acc = agg.add(value, acc)
        return self._inner.process(key, window, ctx, agg.get_result(acc))


# ------------------------------------------------------------------------------------ contexts


class PerWindowStateStore(KeyedStateStore):
    """Keyed state scoped to the current key and one window (the backend makes the state of
    the descriptor's kind)."""

    __slots__ = ("_backend", "_window")

    def __init__(self, backend: KeyedStateBackend, window: Window) -> None:
        self._backend = backend
        self._window = window

    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState:
        return cast(ValueState, self._backend.get_partitioned_state(state_descriptor, self._window))

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        return cast(ListState, self._backend.get_partitioned_state(state_descriptor, self._window))

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        return cast(MapState, self._backend.get_partitioned_state(state_descriptor, self._window))

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        state = self._backend.get_partitioned_state(state_descriptor, self._window)
        return cast(ReducingState, state)

    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState:
        state = self._backend.get_partitioned_state(state_descriptor, self._window)
        return cast(AggregatingState, state)


class WindowProcessContext(
    ProcessWindowFunction.Context[Window], ProcessAllWindowFunction.Context[Window]
):
    """The ``context`` of process window functions; also passed to ``clear``. The operator
    sets ``current_window`` before each call."""

    current_window: Window

    def __init__(self, operator: AbstractStreamOperator, merging: bool) -> None:
        self._op = operator
        self._merging = merging

    def window(self) -> Window:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._op.current_processing_time()

    def current_watermark(self) -> int:
        return self._op.current_watermark()

    def window_state(self) -> KeyedStateStore:
        if self._merging:
            raise RuntimeError(
                "Per-window state is not allowed when using merging windows (sessions): the "
                "windows change as they merge; keep the state in global_state() instead"
            )
        backend = self._op.keyed_state_backend
        if backend is None:  # pragma: no cover - window operators are keyed
            raise RuntimeError("per-window state needs a keyed stream")
        return PerWindowStateStore(backend, self.current_window)

    def global_state(self) -> KeyedStateStore:
        return self._op.runtime_context

    def output(self, output_tag: OutputTag, value: object) -> None:
        if not isinstance(output_tag, OutputTag):
            raise TypeError(
                f"output_tag must be an OutputTag, got {type(output_tag).__name__}; create one "
                "with OutputTag('name')"
            )
        record = StreamRecord(value, self.current_window.max_timestamp())
        self._op.output.collect_side(output_tag, record)


def _time(time: object) -> int:
    return time if type(time) is int else check_timestamp(time, "time")


class WindowTriggerContext(Trigger.OnMergeContext):
    """The ``ctx`` of trigger calls: timers and state of the current key and ``window``."""

    __slots__ = ("_backend", "_states", "_timers", "merged_windows", "window")

    def __init__(self, backend: KeyedStateBackend, timers: InternalTimerService) -> None:
        self._backend = backend
        self._timers = timers
        self._states: dict[str | None, tuple[StateDescriptor, InternalKvState]] = {}
        self.window: Window | None = None
        self.merged_windows: list[Window] | None = None

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark()

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

    def _internal_state(self, descriptor: StateDescriptor) -> InternalKvState:
        name: str | None = getattr(descriptor, "name", None)
        entry = self._states.get(name)
        if entry is not None and entry[0] is descriptor:
            return entry[1]
        state = self._backend.get_internal_state(descriptor)
        self._states[name] = (descriptor, state)
        return state

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
        state = self._internal_state(state_descriptor)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
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
    """The ``context`` of ``WindowAssigner.assign_windows`` (a processing-time assigner reads
    the clock per record: the operator's clock is bound once, when it has one)."""

    __slots__ = ("_now", "_op")

    def __init__(self, operator: AbstractStreamOperator) -> None:
        self._op = operator
        service = operator.processing_time_service
        self._now: Callable[[], int] = (
            operator.current_processing_time
            if service is None
            else service.get_current_processing_time
        )

    def get_current_processing_time(self) -> int:
        return self._now()

    def get_runtime_context(self) -> RuntimeContext:
        return self._op.runtime_context


class EvictorContext(Evictor.EvictorContext):
    """The ``evictor_context`` of evictors."""

    __slots__ = ("_op",)

    def __init__(self, operator: AbstractStreamOperator) -> None:
        self._op = operator

    def get_current_processing_time(self) -> int:
        return self._op.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._op.current_watermark()

    def get_metric_group(self) -> object:
        raise NotImplementedError("metric groups are not available to evictors yet")
