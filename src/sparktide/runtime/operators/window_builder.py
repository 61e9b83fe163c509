"""``WindowOperatorBuilder``: turns an assigner, trigger, evictor, lateness and a function into a
window operator (Flink's ``WindowOperatorBuilder``). ``WindowedStream`` and
``AllWindowedStream`` use it per operator instance; tests use it with the operator harness.

>>> from sparktide.core.window.assigners import SlidingEventTimeWindows
>>> b = WindowOperatorBuilder(SlidingEventTimeWindows.of(10, 5))
>>> b.set_allowed_lateness(100)
>>> type(b.reduce(max)).__name__, b.trigger
('WindowOperator', EventTimeTrigger())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from sparktide.core.functions import AggregateFunction
from sparktide.core.output_tag import OutputTag
from sparktide.core.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
)
from sparktide.core.window.assigners import WindowAssigner, default_trigger
from sparktide.core.window.evictors import Evictor
from sparktide.core.window.functions import (
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from sparktide.core.window.triggers import Trigger
from sparktide.core.window.windows import Window
from sparktide.runtime.operators.evicting_window import EvictingWindowOperator
from sparktide.runtime.operators.simple import as_callable
from sparktide.runtime.operators.window import WINDOW_CONTENTS, WindowOperator
from sparktide.runtime.operators.window_functions import (
    AggregateThenFunction,
    ApplyFunction,
    InternalWindowFunction,
    PassThroughFunction,
    ProcessContextFunction,
    ReduceThenFunction,
)

__all__ = ["WindowOperatorBuilder", "check_aggregate_function", "check_reduce_function"]

_TRIGGER_METHODS = ("on_element", "on_event_time", "on_processing_time", "clear")
_AGG_METHODS = ("create_accumulator", "add", "get_result")


def check_reduce_function(reduce_function: object) -> Callable[[object, object], object]:
    """The reduce callable of a ReduceFunction or a plain callable (TypeError otherwise)."""
    return as_callable(reduce_function, "reduce", "reduce_function")


def check_aggregate_function(aggregate_function: object) -> AggregateFunction:
    """``aggregate_function`` if it has the methods of an AggregateFunction (TypeError
    otherwise)."""
    missing = [m for m in _AGG_METHODS if not callable(getattr(aggregate_function, m, None))]
    if missing:
        raise TypeError(
            f"aggregate_function must be an AggregateFunction (create_accumulator, add, "
            f"get_result; merge for session windows), got {type(aggregate_function).__name__} "
            f"missing {', '.join(missing)}"
        )
    return cast(AggregateFunction, aggregate_function)  # duck-typed: the methods are there


def window_function_adapter(
    function: object, *, keyed: bool, single_value: bool, where: str
) -> InternalWindowFunction:
    """The internal function running a user window function (None: pass the value through)."""
    if function is None:
        return PassThroughFunction()
    process_cls, apply_cls = (
        (ProcessWindowFunction, WindowFunction)
        if keyed
        else (ProcessAllWindowFunction, AllWindowFunction)
    )
    wrong = (
        (ProcessAllWindowFunction, AllWindowFunction)
        if keyed
        else (ProcessWindowFunction, WindowFunction)
    )
    expected = (
        "a ProcessWindowFunction (process(key, context, elements)) or a WindowFunction "
        "(apply(key, window, inputs))"
        if keyed
        else "a ProcessAllWindowFunction (process(context, elements)) or an AllWindowFunction "
        "(apply(window, inputs))"
    )
    for cls in wrong:
        if isinstance(function, cls):
            raise TypeError(
                f"{where} must be {expected}; {type(function).__name__} is a {cls.__name__}, "
                f"for {'non-keyed (window_all)' if keyed else 'keyed'} streams"
            )
    if isinstance(function, process_cls):
        return ProcessContextFunction(function, keyed=keyed, single_value=single_value)
    if isinstance(function, apply_cls):
        return ApplyFunction(function, keyed=keyed, single_value=single_value)
    if callable(getattr(function, "process", None)) and not isinstance(function, type):
        duck = cast("ProcessWindowFunction | ProcessAllWindowFunction", function)
        return ProcessContextFunction(duck, keyed=keyed, single_value=single_value)
    if callable(getattr(function, "apply", None)) or callable(function):
        return ApplyFunction(function, keyed=keyed, single_value=single_value)
    raise TypeError(f"{where} must be {expected}, got {type(function).__name__}")


class WindowOperatorBuilder:
    """Collects the window configuration and builds the operator for a function.

    ``keyed=False`` builds operators for ``window_all`` (functions are ``AllWindowFunction`` /
    ``ProcessAllWindowFunction``). Each build method returns a new operator; the builder's
    objects (assigner, trigger, evictor, functions) are used as given.
    """

    def __init__(
        self, assigner: WindowAssigner[object, Window], *, keyed: bool = True, env: object = None
    ) -> None:
        for method in ("assign_windows", "is_event_time"):
            if not callable(getattr(assigner, method, None)):
                raise TypeError(
                    f"window_assigner must be a WindowAssigner (assign_windows, "
                    f"get_default_trigger, is_event_time), got {type(assigner).__name__}; e.g. "
                    "TumblingEventTimeWindows.of(Time.seconds(5))"
                )
        self.assigner = assigner
        self.keyed = keyed
        self.merging = callable(getattr(assigner, "merge_windows", None))
        self.trigger: Trigger[object, Window]
        self.set_trigger(default_trigger(assigner, env))
        self.evictor: Evictor[object, Window] | None = None
        self.allowed_lateness = 0
        self.late_data_output_tag: OutputTag | None = None

    # ------------------------------------------------------------------ configuration

    def set_trigger(self, trigger: Trigger[object, Window]) -> None:
        missing = [m for m in _TRIGGER_METHODS if not callable(getattr(trigger, m, None))]
        if missing:
            raise TypeError(
                f"trigger must be a Trigger (on_element, on_event_time, on_processing_time, "
                f"clear), got {type(trigger).__name__} missing {', '.join(missing)}"
            )
        if self.merging:
            can_merge = getattr(trigger, "can_merge", None)
            if not (callable(can_merge) and can_merge()):
                raise TypeError(
                    f"A merging window assigner ({self.assigner!r}) cannot be used with a "
                    f"trigger that does not support merging: {trigger!r}.can_merge() is False; "
                    "implement can_merge() and on_merge() in the trigger"
                )
        self.trigger = trigger

    def set_evictor(self, evictor: Evictor[object, Window]) -> None:
        for method in ("evict_before", "evict_after"):
            if not callable(getattr(evictor, method, None)):
                raise TypeError(
                    f"evictor must be an Evictor (evict_before, evict_after), got "
                    f"{type(evictor).__name__}; e.g. CountEvictor.of(100)"
                )
        self.evictor = evictor

    def set_allowed_lateness(self, millis: int) -> None:
        if type(millis) is not int or millis < 0:
            raise ValueError(
                f"allowed_lateness must be >= 0 ms, got {millis!r}; lateness cannot be negative"
            )
        self.allowed_lateness = millis

    def set_late_data_output_tag(self, tag: OutputTag) -> None:
        if not isinstance(tag, OutputTag):
            raise TypeError(
                f"output_tag must be an OutputTag, got {type(tag).__name__}; create one with "
                "OutputTag('late-data')"
            )
        self.late_data_output_tag = tag

    # ------------------------------------------------------------------ building

    def _build(
        self, descriptor: StateDescriptor | None, function: InternalWindowFunction
    ) -> WindowOperator:
        if self.evictor is not None:
            return EvictingWindowOperator(
                self.assigner,
                function,
                self.trigger,
                self.evictor,
                self.allowed_lateness,
                self.late_data_output_tag,
            )
        return WindowOperator(
            self.assigner,
            descriptor,
            function,
            self.trigger,
            self.allowed_lateness,
            self.late_data_output_tag,
        )

    def _adapter(self, function: object, single_value: bool, where: str) -> InternalWindowFunction:
        return window_function_adapter(
            function, keyed=self.keyed, single_value=single_value, where=where
        )

    def reduce(self, reduce_function: object, window_function: object = None) -> WindowOperator:
        """Incremental reduce; ``window_function`` (optional) gets the single reduced value."""
        reduce = check_reduce_function(reduce_function)
        inner = self._adapter(window_function, True, "window_function")
        if self.evictor is not None:
            return self._build(None, ReduceThenFunction(reduce, inner))
        return self._build(ReducingStateDescriptor(WINDOW_CONTENTS, reduce, None), inner)

    def aggregate(
        self, aggregate_function: object, window_function: object = None
    ) -> WindowOperator:
        """Incremental aggregation; ``window_function`` (optional) gets the single result."""
        agg = check_aggregate_function(aggregate_function)
        inner = self._adapter(window_function, True, "window_function")
        if self.evictor is not None:
            return self._build(None, AggregateThenFunction(agg, inner))
        descriptor = AggregatingStateDescriptor(WINDOW_CONTENTS, aggregate_function, None)
        return self._build(descriptor, inner)

    def aggregate_with(
        self, aggregate_function: AggregateFunction, function: InternalWindowFunction
    ) -> WindowOperator:
        """Incremental aggregation whose single result goes to the internal ``function`` (the
        built-in aggregates, :mod:`sparktide.runtime.operators.window_aggregates`)."""
        if self.evictor is not None:
            return self._build(None, AggregateThenFunction(aggregate_function, function))
        descriptor = AggregatingStateDescriptor(WINDOW_CONTENTS, aggregate_function, None)
        return self._build(descriptor, function)

    def apply(self, window_function: object) -> WindowOperator:
        """A (All)WindowFunction over all elements of the window."""
        if window_function is None:
            raise TypeError("window_function must not be None")
        return self._build(
            ListStateDescriptor(WINDOW_CONTENTS, None),
            self._adapter(window_function, False, "window_function"),
        )

    def process(self, process_window_function: object) -> WindowOperator:
        """A Process(All)WindowFunction over all elements of the window."""
        if process_window_function is None:
            raise TypeError("process_window_function must not be None")
        return self._build(
            ListStateDescriptor(WINDOW_CONTENTS, None),
            self._adapter(process_window_function, False, "process_window_function"),
        )
