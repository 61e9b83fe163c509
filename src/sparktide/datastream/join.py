"""Joins on event time, with Flink's names: the interval join of two keyed streams
(``KeyedStream.interval_join``) and the window join and co-group of two streams
(``DataStream.join`` / ``DataStream.co_group``).

Interval join: each left record ``l`` meets the right records ``r`` of the same key with
``l.ts + lower <= r.ts <= l.ts + upper``; each pair goes to a ``ProcessJoinFunction`` and its
outputs carry ``max(l.ts, r.ts)`` (see
:mod:`sparktide.runtime.operators.interval_join` for the buffering, lateness and cleanup).

>>> from sparktide.common import Duration, WatermarkStrategy
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.datastream.functions import ProcessJoinFunction
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> wm = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
...     lambda v, ts: v[1])
>>> orders = env.from_collection([("a", 10), ("b", 20), ("a", 30)])
>>> orders = orders.assign_timestamps_and_watermarks(wm)
>>> clicks = env.from_collection([("a", 8), ("a", 12), ("b", 25)])
>>> clicks = clicks.assign_timestamps_and_watermarks(wm)
>>> class Pair(ProcessJoinFunction):
...     def process_element(self, left, right, ctx):
...         yield left[0], left[1], right[1], ctx.get_timestamp()
>>> joined = (orders.key_by(lambda v: v[0])
...           .interval_join(clicks.key_by(lambda v: v[0]))
...           .between(Duration.of_millis(-2), Duration.of_millis(5))
...           .process(Pair()))
>>> sorted(joined.execute_and_collect())
[('a', 10, 8, 10), ('a', 10, 12, 12), ('b', 20, 25, 25)]

Window join and co-group: both streams are tagged, unioned, keyed by ``where`` (first stream) /
``equal_to`` (second stream) and windowed; each window of a key is split back by input and
handed to the function (as Flink's ``CoGroupedStreams``: it is the window operator, so
triggers, evictors and allowed lateness work as for any window).

>>> from sparktide.datastream.window import TumblingEventTimeWindows
>>> pairs = (orders.join(clicks).where(lambda v: v[0]).equal_to(lambda v: v[0])
...          .window(TumblingEventTimeWindows.of(20))
...          .apply(lambda left, right: (left[0], left[1], right[1])))
>>> sorted(pairs.execute_and_collect())
[('a', 10, 8), ('a', 10, 12), ('b', 20, 25)]
>>> counts = (orders.co_group(clicks).where(lambda v: v[0]).equal_to(lambda v: v[0])
...           .window(TumblingEventTimeWindows.of(20))
...           .apply(lambda lefts, rights: [(len(lefts), len(rights))]))
>>> sorted(counts.execute_and_collect())
[(1, 0), (1, 1), (1, 2)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from sparktide.common.time import to_millis
from sparktide.datastream import data_stream as streams  # it imports this module
from sparktide.datastream import windowed_stream as windowing
from sparktide.datastream.functions import (
    CoGroupFunction,
    FlatMapFunction,
    JoinFunction,
    KeySelector,
)
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.window.functions import WindowFunction
from sparktide.runtime.graph import copy_function
from sparktide.runtime.operators.interval_join import (
    IntervalJoinOperator,
    KeyTypeGuard,
    check_bounds,
)
from sparktide.runtime.operators.simple import as_callable

if TYPE_CHECKING:
    from sparktide.datastream.data_stream import DataStream, KeyedStream
    from sparktide.datastream.windowed_stream import WindowedStream

__all__ = [
    "CoGroupedStreams",
    "EqualTo",
    "IntervalJoin",
    "IntervalJoined",
    "JoinedStreams",
    "Where",
    "WithWindow",
]


def _check_key_types(first: Any, second: Any, what: str) -> None:
    if first is not None and second is not None and first != second:
        raise ValueError(
            f"{what}: the key types of the two inputs differ: first key = {first!r}, second "
            f"key = {second!r}; key both streams by the same type"
        )


# ---------------------------------------------------------------------------- interval join


class IntervalJoin:
    """``left.interval_join(right)`` of two keyed streams; ``between`` sets the bounds.

    >>> from sparktide.datastream import StreamExecutionEnvironment
    >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    >>> keyed = env.from_collection([1, 2]).key_by(lambda v: v)
    >>> keyed.interval_join(keyed).between(5, -5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: lower_bound (5 ms) must be <= upper_bound (-5 ms); ...
    """

    def __init__(self, left: KeyedStream, right: KeyedStream) -> None:
        for name, stream in (("left", left), ("right", right)):
            if not isinstance(stream, streams.KeyedStream):
                raise TypeError(
                    f"an interval join needs two keyed streams; the {name} stream is a "
                    f"{type(stream).__name__}: key_by(...) it first"
                )
        if left.get_execution_environment() is not right.get_execution_environment():
            raise ValueError(
                "an interval join needs streams of the same StreamExecutionEnvironment"
            )
        _check_key_types(left._key_type, right._key_type, "interval join")
        self._left = left
        self._right = right

    def in_event_time(self) -> IntervalJoin:
        """Join on event time (the only time an interval join supports; the default)."""
        return self

    def in_processing_time(self) -> IntervalJoin:
        raise ValueError(
            "time-bounded stream joins are only supported in event time: drop "
            "in_processing_time() and assign timestamps and watermarks to both streams"
        )

    def between(self, lower_bound: Any, upper_bound: Any) -> IntervalJoined:
        """Join ``l`` with the ``r`` where ``l.ts + lower_bound <= r.ts <= l.ts + upper_bound``
        (int ms, Duration, Time or timedelta; both may be negative)."""
        lower, upper = check_bounds(
            to_millis(lower_bound, "lower_bound"), to_millis(upper_bound, "upper_bound")
        )
        return IntervalJoined(self._left, self._right, lower, upper)


class IntervalJoined:
    """An interval join with its bounds; configure it, then ``process`` the pairs.

    Both bounds are inclusive unless made exclusive. Records below the watermark are late:
    dropped, or sent to the side outputs set here (read them with ``get_side_output`` on the
    result).
    """

    def __init__(self, left: KeyedStream, right: KeyedStream, lower: int, upper: int) -> None:
        self._left = left
        self._right = right
        self._lower = lower
        self._upper = upper
        self._lower_inclusive = True
        self._upper_inclusive = True
        self._left_late: OutputTag | None = None
        self._right_late: OutputTag | None = None

    def lower_bound_exclusive(self) -> IntervalJoined:
        """Exclude pairs with ``r.ts == l.ts + lower_bound``."""
        self._lower_inclusive = False
        return self

    def upper_bound_exclusive(self) -> IntervalJoined:
        """Exclude pairs with ``r.ts == l.ts + upper_bound``."""
        self._upper_inclusive = False
        return self

    def side_output_left_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        """Send late left records to the side output ``output_tag`` instead of dropping them."""
        self._left_late = _tag(output_tag)
        return self

    def side_output_right_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        """Send late right records to the side output ``output_tag`` instead of dropping them."""
        self._right_late = _tag(output_tag)
        return self

    def process(self, process_join_function: Any, output_type: Any = None) -> DataStream:
        """Run ``process_join_function`` (a ProcessJoinFunction) on every joined pair."""
        function = process_join_function
        if isinstance(function, type) or not callable(getattr(function, "process_element", None)):
            raise TypeError(
                "process_join_function must be a ProcessJoinFunction (process_element(left, "
                f"right, ctx)), got {type(function).__name__}"
            )
        args = (
            self._lower,
            self._upper,
            self._lower_inclusive,
            self._upper_inclusive,
            function,
            self._left_late,
            self._right_late,
        )
        IntervalJoinOperator(*args)  # validate now, build per instance later

        def factory() -> IntervalJoinOperator:
            return IntervalJoinOperator(*args[:4], copy_function(function), *args[5:])

        return streams.ConnectedStreams(self._left, self._right)._two_input(
            "IntervalJoin", factory, output_type
        )


def _tag(output_tag: Any) -> OutputTag:
    if not isinstance(output_tag, OutputTag):
        raise TypeError(
            f"output_tag must be an OutputTag, got {type(output_tag).__name__}; create one with "
            "OutputTag('late-left')"
        )
    return output_tag


# ---------------------------------------------------------------------------- window joins


class _Tag(FlatMapFunction):
    """Marks an element with its input: ``(1, value)`` or ``(2, value)`` (Flink's
    ``TaggedUnion``). A flat map, which emits new records: the input record, which other
    consumers of the stream may receive too, stays as it is."""

    def __init__(self, index: int) -> None:
        self.index = index

    def flat_map(self, value: Any) -> tuple[tuple[int, Any]]:
        return ((self.index, value),)


class _UnionKeySelector(KeySelector):
    """The key of a tagged element: ``where``'s selector for input 1, ``equal_to``'s for 2."""

    def __init__(self, key1: Callable[[Any], Any], key2: Callable[[Any], Any]) -> None:
        self.key1 = key1
        self.key2 = key2

    def get_key(self, value: tuple[int, Any]) -> Any:
        return self.key1(value[1]) if value[0] == 1 else self.key2(value[1])


class _JoinPairs:
    """A co-group that joins every pair (Flink's ``JoinCoGroupFunction``): first input outer,
    second input inner."""

    def __init__(self, join: Callable[[Any, Any], Any]) -> None:
        self.join = join

    def __call__(self, first: list[Any], second: list[Any]) -> list[Any]:
        join = self.join
        return [join(a, b) for a in first for b in second]


class _CoGroupWindowFunction(WindowFunction):
    """Splits a window's tagged elements by input and calls the co-group (Flink's
    ``CoGroupWindowFunction``); checks that both inputs are keyed by the same key type."""

    def __init__(self, function: Any, co_group: Callable[[Any, Any], Any], what: str) -> None:
        self.function = function
        self.co_group = co_group
        self.guard = KeyTypeGuard(what)

    def open(self, runtime_context: Any) -> None:
        opener = getattr(self.function, "open", None)
        if callable(opener) and not isinstance(self.function, type):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer) and not isinstance(self.function, type):
            closer()

    def apply(self, key: Any, window: Any, inputs: Iterable[tuple[int, Any]]) -> Any:
        first: list[Any] = []
        second: list[Any] = []
        for index, value in inputs:
            (first if index == 1 else second).append(value)
        guard = self.guard
        if not guard.checked:
            if first:
                guard.see(1, key)
            if second:
                guard.see(2, key)
        return self.co_group(first, second)


class _TwoInputs:
    """The two inputs of a window join or co-group (checked)."""

    def __init__(self, kind: str, input1: DataStream, input2: DataStream) -> None:
        for name, stream in (("first", input1), ("second", input2)):
            if not isinstance(stream, streams.DataStream):
                raise TypeError(
                    f"the {name} input of a {kind} must be a DataStream, got "
                    f"{type(stream).__name__}"
                )
        if input1.get_execution_environment() is not input2.get_execution_environment():
            raise ValueError(f"a {kind} needs streams of the same StreamExecutionEnvironment")
        self.kind = kind
        self.input1 = input1
        self.input2 = input2


class _Streams:
    """Base of :class:`JoinedStreams` and :class:`CoGroupedStreams`."""

    _kind = ""

    def __init__(self, input1: DataStream, input2: DataStream) -> None:
        self._inputs = _TwoInputs(self._kind, input1, input2)

    def where(self, key_selector: Any, key_type: Any = None) -> Where:
        """The key of the first input (a KeySelector or a callable)."""
        return Where(self._inputs, as_callable(key_selector, "get_key", "key_selector"), key_type)


class Where:
    """``where(key1)`` done; ``equal_to(key2)`` is next."""

    def __init__(self, inputs: _TwoInputs, key1: Callable[[Any], Any], key_type: Any) -> None:
        self._inputs = inputs
        self._key1 = key1
        self._key_type = key_type

    def equal_to(self, key_selector: Any, key_type: Any = None) -> EqualTo:
        """The key of the second input; keys equal to the first input's meet."""
        _check_key_types(self._key_type, key_type, self._inputs.kind)
        key2 = as_callable(key_selector, "get_key", "key_selector")
        return EqualTo(self._inputs, self._key1, key2, self._key_type or key_type)


class EqualTo:
    """Both keys set; ``window(assigner)`` is next."""

    def __init__(
        self,
        inputs: _TwoInputs,
        key1: Callable[[Any], Any],
        key2: Callable[[Any], Any],
        key_type: Any,
    ) -> None:
        self._inputs = inputs
        self._key1 = key1
        self._key2 = key2
        self._key_type = key_type

    def window(self, assigner: Any) -> WithWindow:
        """Window both inputs with ``assigner`` (e.g. ``TumblingEventTimeWindows.of(...)``)."""
        inputs = self._inputs
        tagged1 = streams.DataStream.flat_map(inputs.input1, _Tag(1))
        tagged2 = streams.DataStream.flat_map(inputs.input2, _Tag(2))
        keyed = tagged1.union(tagged2).key_by(
            _UnionKeySelector(self._key1, self._key2), self._key_type
        )
        return WithWindow(inputs.kind, windowing.WindowedStream(keyed, assigner))


class WithWindow:
    """A windowed join or co-group: ``trigger``, ``evictor`` and ``allowed_lateness`` configure
    the window operator (as on a WindowedStream), ``apply`` ends the chain."""

    def __init__(self, kind: str, windowed: WindowedStream) -> None:
        self._kind = kind
        self._windowed = windowed

    def trigger(self, trigger: Any) -> WithWindow:
        """Use ``trigger`` instead of the assigner's default trigger."""
        self._windowed.trigger(trigger)
        return self

    def evictor(self, evictor: Any) -> WithWindow:
        """Evict tagged elements (``(1, left)`` / ``(2, right)``) before/after the function."""
        self._windowed.evictor(evictor)
        return self

    def allowed_lateness(self, time_ms: Any) -> WithWindow:
        """Keep windows (and evaluate them again for late elements) until the watermark passes
        ``max_timestamp + time_ms``."""
        self._windowed.allowed_lateness(time_ms)
        return self

    def apply(self, function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each window of each key: a join calls a JoinFunction (or a callable
        ``(left, right) -> output``) per pair; a co-group calls a CoGroupFunction (or a
        callable ``(lefts, rights)`` returning or yielding the outputs) once."""
        if self._kind == "join":
            if isinstance(function, (CoGroupFunction, type)):
                raise TypeError(
                    "a join takes a JoinFunction (join(first, second)) or a callable "
                    f"(first, second) -> output, got {type(function).__name__}; use "
                    "co_group(...) for a CoGroupFunction"
                )
            co_group: Callable[[Any, Any], Any] = _JoinPairs(
                as_callable(function, "join", "function")
            )
        else:
            if isinstance(function, (JoinFunction, type)):
                raise TypeError(
                    "a co-group takes a CoGroupFunction (co_group(first, second)) or a "
                    f"callable (firsts, seconds) -> outputs, got {type(function).__name__}; use "
                    "join(...) for a JoinFunction"
                )
            co_group = as_callable(function, "co_group", "function")
        return self._windowed.apply(
            _CoGroupWindowFunction(function, co_group, f"window {self._kind}"), output_type
        )


class JoinedStreams(_Streams):
    """``first.join(second)``: a window join; ``where(key1).equal_to(key2).window(assigner)
    .apply(join_function)`` emits ``join(l, r)`` for every pair of a left and a right element
    with equal keys in the same window."""

    _kind = "join"


class CoGroupedStreams(_Streams):
    """``first.co_group(second)``: ``where(key1).equal_to(key2).window(assigner)
    .apply(co_group_function)`` calls the function once per key and window with the elements
    of each input (either may be empty)."""

    _kind = "co-group"


# Flink's nested names
JoinedStreams.Where = Where  # type: ignore[attr-defined]
JoinedStreams.EqualTo = EqualTo  # type: ignore[attr-defined]
JoinedStreams.WithWindow = WithWindow  # type: ignore[attr-defined]
CoGroupedStreams.Where = Where  # type: ignore[attr-defined]
CoGroupedStreams.EqualTo = EqualTo  # type: ignore[attr-defined]
CoGroupedStreams.WithWindow = WithWindow  # type: ignore[attr-defined]
