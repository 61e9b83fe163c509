"""User functions with PyFlink's names: ``KeyedProcessFunction``, ``ProcessFunction``, ...

A process function yields its outputs; ``yield tag, value`` (with an :class:`OutputTag`) sends
``value`` to a side output, as in PyFlink; ``ctx.output(tag, value)`` does the same.

>>> from sparktide.testing import for_keyed_process_function
>>> from sparktide.core.state import ValueStateDescriptor
>>> class Count(KeyedProcessFunction):
...     def open(self, runtime_context):
...         self.n = runtime_context.get_state(ValueStateDescriptor("n", None))
...     def process_element(self, value, ctx):
...         self.n.update((self.n.value() or 0) + 1)
...         yield ctx.get_current_key(), self.n.value()
>>> h = for_keyed_process_function(Count(), lambda v: v)
>>> for v in ["a", "b", "a"]: h.process_element(v, 1)
>>> h.extract_output_values()
[('a', 1), ('b', 1), ('a', 2)]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from sparktide.core.metrics import MetricGroup
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
        ValueState,
        ValueStateDescriptor,
    )
    from sparktide.core.timerservice import TimeDomain, TimerService

__all__ = [
    "AggregateFunction",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "JoinFunction",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
]

IN = TypeVar("IN")
OUT = TypeVar("OUT")
ACC = TypeVar("ACC")


class KeyedStateStore(ABC):
    """Access to keyed state, scoped to the current key (PyFlink's ``KeyedStateStore``).

    A :class:`RuntimeContext` is one; a window function's ``window_state()`` and
    ``global_state()`` are others.
    """

    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState: ...

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState: ...

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState: ...

    @abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState: ...

    @abstractmethod
    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState: ...


class RuntimeContext(KeyedStateStore):
    """What a function sees of its subtask: identity, parallelism and keyed state."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    def get_attempt_number(self) -> int:
        return 0

    def get_task_name_with_subtasks(self) -> str:
        return (
            f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}"
            f"/{self.get_number_of_parallel_subtasks()})"
        )

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        return default_value

    def get_metrics_group(self) -> MetricGroup:
        """This subtask's user metrics (counters, gauges, meters, distributions), reported in
        the job's metrics (see :mod:`sparktide.core.metrics`)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no metrics group; metrics are reported by the operators "
            "of a running job"
        )


class Function(ABC):  # noqa: B024 - all methods are optional hooks
    """Base of user functions: ``open`` before the first element, ``close`` at the end."""

    def open(self, runtime_context: RuntimeContext) -> None:  # noqa: B027
        """Called once before the first element; acquire state here."""

    def close(self) -> None:  # noqa: B027
        """Called once after the last element."""


class ReduceFunction(Function, Generic[IN]):
    """Combines two values of the same type into one."""

    @abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN: ...


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    """Incremental aggregation through an accumulator."""

    @abstractmethod
    def create_accumulator(self) -> ACC: ...

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC: ...

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT: ...

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        raise NotImplementedError(
            f"{type(self).__name__}.merge is needed to merge accumulators (merging windows, "
            "merging state namespaces); implement merge(acc_a, acc_b)"
        )


class ProcessFunction(Function):
    """Processes each element of a (non-keyed) stream; timers need ``key_by``."""

    class Context(ABC):
        @abstractmethod
        def timestamp(self) -> int | None:
            """The timestamp of the current element, or None if it has none."""

        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""

    @abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None:
        """Yield zero or more outputs (``yield tag, value`` for side outputs)."""


class KeyedProcessFunction(Function):
    """Processes each element of a keyed stream, with keyed state and timers.

    Outputs of ``process_element`` carry the input's timestamp; outputs of an event-time
    ``on_timer`` carry the timer's timestamp; outputs of a processing-time ``on_timer`` carry
    none.
    """

    class Context(ABC):
        @abstractmethod
        def timestamp(self) -> int | None:
            """The timestamp of the current element or of the firing event-time timer."""

        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Yield zero or more outputs (``yield tag, value`` for side outputs)."""

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """Called when a timer registered by this key fires."""


class MapFunction(Function):
    """One output per input."""

    @abstractmethod
    def map(self, value: Any) -> Any: ...


class FlatMapFunction(Function):
    """Zero or more outputs per input (yield them)."""

    @abstractmethod
    def flat_map(self, value: Any) -> Iterable[Any] | None: ...


class FilterFunction(Function):
    """Keep the inputs for which ``filter`` is true."""

    @abstractmethod
    def filter(self, value: Any) -> bool: ...


class KeySelector(Function):
    """Extracts the key of an element."""

    @abstractmethod
    def get_key(self, value: Any) -> Any: ...


class SinkFunction(Function):
    """Receives every element of a stream (``DataStream.add_sink``)."""

    @abstractmethod
    def invoke(self, value: Any, context: Any) -> None: ...


class CoMapFunction(Function):
    """A map over two connected streams: ``map1`` for the first input, ``map2`` for the second."""

    @abstractmethod
    def map1(self, value: Any) -> Any: ...

    @abstractmethod
    def map2(self, value: Any) -> Any: ...


class CoFlatMapFunction(Function):
    """A flat map over two connected streams."""

    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None: ...

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None: ...


class CoProcessFunction(Function):
    """Processes two connected (non-keyed) streams; timers need ``key_by``."""

    class Context(ProcessFunction.Context, ABC):
        pass

    @abstractmethod
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any] | None:
        """Called for each element of the first input."""

    @abstractmethod
    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any] | None:
        """Called for each element of the second input."""


class KeyedCoProcessFunction(Function):
    """Processes two connected keyed streams with shared keyed state and timers.

    The combined watermark is the minimum of both inputs' watermarks.
    """

    class Context(KeyedProcessFunction.Context, ABC):
        pass

    class OnTimerContext(KeyedProcessFunction.OnTimerContext, ABC):
        pass

    @abstractmethod
    def process_element1(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_element2(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """Called when a timer registered by this key fires."""


class ProcessJoinFunction(Function):
    """Processes each pair an interval join emits (``KeyedStream.interval_join``).

    ``process_element(left, right, ctx)`` yields the outputs; they carry the pair's timestamp,
    the larger of the two records' timestamps. ``ctx`` gives both timestamps, the result's, and
    side outputs (``yield tag, value`` or ``ctx.output(tag, value)``).

    >>> class Gap(ProcessJoinFunction):
    ...     def process_element(self, left, right, ctx):
    ...         yield left, right, ctx.get_right_timestamp() - ctx.get_left_timestamp()
    >>> class Ctx(ProcessJoinFunction.Context):
    ...     def get_left_timestamp(self): return 10
    ...     def get_right_timestamp(self): return 13
    ...     def get_timestamp(self): return 13
    ...     def output(self, output_tag, value): pass
    >>> list(Gap().process_element("l", "r", Ctx()))
    [('l', 'r', 3)]
    """

    class Context(ABC):
        @abstractmethod
        def get_left_timestamp(self) -> int:
            """The timestamp of the pair's left record."""

        @abstractmethod
        def get_right_timestamp(self) -> int:
            """The timestamp of the pair's right record."""

        @abstractmethod
        def get_timestamp(self) -> int:
            """The pair's timestamp: the larger of the left and the right timestamp."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag`` (with the pair's timestamp)."""

    @abstractmethod
    def process_element(
        self, left: Any, right: Any, ctx: ProcessJoinFunction.Context
    ) -> Iterable[Any] | None:
        """Yield zero or more outputs for the joined pair (``yield tag, value`` for side
        outputs)."""


class JoinFunction(Function):
    """Joins two elements of a window join into one output (``DataStream.join``): called once
    per pair of a left and a right element with the same key in the same window.

    >>> class Pair(JoinFunction):
    ...     def join(self, first, second):
    ...         return first[0], first[1], second[1]
    >>> Pair().join(("a", 1), ("a", 2))
    ('a', 1, 2)
    """

    @abstractmethod
    def join(self, first: Any, second: Any) -> Any:
        """The output for one pair (one output per pair)."""


class CoGroupFunction(Function):
    """Evaluates one key's window of a co-group (``DataStream.co_group``): ``first`` and
    ``second`` are the window's elements of each input (either may be empty); return or yield
    the outputs.

    >>> class Count(CoGroupFunction):
    ...     def co_group(self, first, second):
    ...         yield len(list(first)), len(list(second))
    >>> list(Count().co_group([1, 2], []))
    [(2, 0)]
    """

    @abstractmethod
    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> Iterable[Any] | None:
        """The outputs for the elements ``first`` (left input) and ``second`` (right input)."""
