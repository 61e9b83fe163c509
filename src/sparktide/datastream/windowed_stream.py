"""``WindowedStream`` (``key_by(...).window(...)``) and ``AllWindowedStream``
(``window_all(...)``) with PyFlink's names, plus Flink's evictors.

A windowed stream is only a description: calling ``reduce``, ``aggregate``, ``apply``,
``process``, the built-in ``count()``/``agg(...)`` or ``sum``/``min``/``max``/``min_by``/
``max_by`` adds one window operator to the job graph. The built-ins also record what they
compute (``node.window_aggregate``) when the key is a field (``key_by("user")``), the windows
are tumbling or sliding in event time, the trigger is the default and there is no evictor: a
runner may then run them on columns, with the same output. Every parallel instance gets its
own copy of the assigner, trigger, evictor and functions. ``window_all`` windows a non-keyed
stream: all elements go to one key on one subtask.

>>> from sparktide.common import WatermarkStrategy
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.datastream.window import TumblingEventTimeWindows
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> ds = env.from_collection([("a", 1, 3), ("a", 2, 7), ("b", 5, 12), ("a", 4, 11)])
>>> ds = ds.assign_timestamps_and_watermarks(
...     WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
...         lambda v, ts: v[2]))
>>> windowed = WindowedStream(ds.key_by(lambda v: v[0]), TumblingEventTimeWindows.of(10))
>>> sorted(windowed.sum(1).execute_and_collect())
[('a', 3, 3), ('a', 4, 11), ('b', 5, 12)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.common.time import to_millis
from sparktide.core.window.aggregates import Agg, NamedAggregate, check_field, named_aggregates
from sparktide.datastream import data_stream as streams  # it imports this module
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.window.evictors import CountEvictor
from sparktide.datastream.window.global_windows import GlobalWindows
from sparktide.datastream.window.triggers import CountTrigger, PurgingTrigger
from sparktide.runtime.columnar.spec import FieldAggregate, OutputForm
from sparktide.runtime.graph import copy_function
from sparktide.runtime.operators.window_aggregates import (
    aggregate_spec,
    build_window_aggregate,
    field_type,
    general_operator,
    named_row_type,
)
from sparktide.runtime.operators.window_builder import (
    WindowOperatorBuilder,
    check_aggregate_function,
    check_reduce_function,
)

if TYPE_CHECKING:
    from sparktide.datastream.data_stream import DataStream, KeyedStream

__all__ = ["AllWindowedStream", "WindowedStream", "count_window", "count_window_all"]


class _NullKeySelector:
    """The key of ``window_all``: every element has key 0 (Flink's ``NullByteKeySelector``)."""

    def get_key(self, value: Any) -> int:
        return 0


class WindowedStream:
    """A keyed stream split into windows by a window assigner (``KeyedStream.window``).

    ``trigger``, ``evictor``, ``allowed_lateness`` and ``side_output_late_data`` configure the
    windows and return the stream, so calls chain; the function call ends the chain.

    >>> from sparktide.datastream import StreamExecutionEnvironment
    >>> from sparktide.datastream.window import CountTrigger, GlobalWindows
    >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    >>> keyed = env.from_collection([("a", 1), ("b", 2), ("a", 3)]).key_by(lambda v: v[0])
    >>> ws = WindowedStream(keyed, GlobalWindows.create()).trigger(CountTrigger.of(2))
    >>> list(ws.sum(1).execute_and_collect())
    [('a', 4)]
    """

    _keyed = True
    _kind = "Window"

    def __init__(self, keyed_stream: KeyedStream, window_assigner: Any) -> None:
        if not isinstance(keyed_stream, streams.KeyedStream):
            raise TypeError(
                f"keyed_stream must be a KeyedStream, got {type(keyed_stream).__name__}; "
                "key_by(...) first, or use window_all(...) on a non-keyed stream"
            )
        self._keyed_stream = keyed_stream
        self._builder = WindowOperatorBuilder(
            window_assigner, keyed=self._keyed, env=keyed_stream.get_execution_environment()
        )

    # ------------------------------------------------------------------ configuration

    def get_execution_environment(self) -> Any:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> Any:
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Any) -> Any:
        """Use ``trigger`` instead of the assigner's default trigger."""
        self._builder.set_trigger(trigger)
        return self

    def evictor(self, evictor: Any) -> Any:
        """Evict elements before/after the window function; the window then buffers all
        elements (no incremental aggregation)."""
        self._builder.set_evictor(evictor)
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        """Keep event-time windows (and fire them again for late elements) until the watermark
        passes ``max_timestamp + time_ms``. ``time_ms``: int ms, Time, Duration or timedelta."""
        self._builder.set_allowed_lateness(to_millis(time_ms, "time_ms"))
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        """Send elements that arrive too late for any window to the side output ``output_tag``
        (read it with ``get_side_output`` on the result) instead of dropping them."""
        self._builder.set_late_data_output_tag(output_tag)
        return self

    # ------------------------------------------------------------------ functions

    def _result(self, method: str, args: tuple[Any, ...], output_type: Any) -> DataStream:
        builder = self._builder
        getattr(builder, method)(*args)  # validate now, build per instance later
        frozen = copy_function((builder, args))

        def factory() -> Any:
            b, a = copy_function(frozen)
            return getattr(b, method)(*a)

        coerce = True
        if output_type is None and method in ("reduce",) and args[1] is None:
            output_type, coerce = self.get_input_type(), False
        name = f"{self._kind}({type(builder.assigner).__name__})"
        node = self._keyed_stream._keyed(name, factory, output_type, coerce)
        return self._finish(
            streams.DataStream(self._keyed_stream.get_execution_environment(), node)
        )

    def _finish(self, stream: DataStream) -> DataStream:
        return stream

    def reduce(
        self, reduce_function: Any, window_function: Any = None, output_type: Any = None
    ) -> DataStream:
        """Reduce each window incrementally with ``reduce_function`` (a ReduceFunction or a
        callable ``(a, b) -> c``); a ``window_function`` gets the single reduced value."""
        check_reduce_function(reduce_function)
        return self._result("reduce", (reduce_function, window_function), output_type)

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: Any = None,
    ) -> DataStream:
        """Aggregate each window incrementally with an AggregateFunction; a
        ``window_function`` gets the single result."""
        check_aggregate_function(aggregate_function)
        return self._result("aggregate", (aggregate_function, window_function), output_type)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each window with a WindowFunction over all its elements."""
        return self._result("apply", (window_function,), output_type)

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each window with a ProcessWindowFunction over all its elements."""
        return self._result("process", (process_window_function,), output_type)

    def _builtin(
        self,
        form: OutputForm,
        field_aggregate: FieldAggregate | None,
        aggregates: tuple[NamedAggregate, ...],
        output_type: Any,
        coerce: bool,
    ) -> DataStream:
        """A built-in aggregate: the general operator (built in one place,
        :func:`build_window_aggregate`), and the spec when a runner may run it on columns."""
        keyed = self._keyed_stream
        spec = aggregate_spec(
            self._builder, keyed._key_selector, form, field_aggregate, aggregates, output_type
        )
        if spec is not None:

            def factory() -> Any:
                return general_operator(spec)
        else:
            frozen = copy_function(self._builder)

            def factory() -> Any:
                return build_window_aggregate(
                    copy_function(frozen), form, field_aggregate, aggregates
                )

        factory()  # validate now, build per instance later
        name = f"{self._kind}({type(self._builder.assigner).__name__})"
        node = keyed._keyed(name, factory, output_type, coerce)
        node.window_aggregate = spec
        return self._finish(streams.DataStream(keyed.get_execution_environment(), node))

    def _field_aggregate(self, kind: str, field: Any, parameter: str) -> DataStream:
        check_field(field, parameter)
        field_type(self.get_input_type(), field, f"{kind}({field!r})")
        aggregate = FieldAggregate(kind, field)
        return self._builtin(OutputForm.FLINK_RECORD, aggregate, (), self.get_input_type(), False)

    def count(self) -> DataStream:
        """Per key and window, ``Row(key, window_start, window_end, count)``: the number of
        records, typed ``Types.ROW_NAMED(["key", "window_start", "window_end", "count"],
        [key type, LONG, LONG, LONG])`` (window bounds in epoch ms, ``window_end`` exclusive
        as :attr:`TimeWindow.end`; None for windows without bounds, such as count windows).
        The key type is the key field's type (``key_by("field")`` on a Row or Tuple stream),
        ``key_by``'s ``key_type``, else ``PICKLED_BYTE_ARRAY``.

        >>> from sparktide.common import WatermarkStrategy
        >>> from sparktide.common.types import Row
        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> from sparktide.datastream.window import TumblingEventTimeWindows
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> ds = env.from_collection([Row(user="a", ts=3), Row(user="b", ts=5),
        ...                           Row(user="a", ts=12), Row(user="a", ts=14)])
        >>> ds = ds.assign_timestamps_and_watermarks(
        ...     WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        ...         lambda v, ts: v.ts))
        >>> counts = ds.key_by("user").window(TumblingEventTimeWindows.of(10)).count()
        >>> for row in sorted(counts.execute_and_collect(), key=lambda r: (r[1], r[0])):
        ...     print(row)
        Row(key='a', window_start=0, window_end=10, count=1)
        Row(key='b', window_start=0, window_end=10, count=1)
        Row(key='a', window_start=10, window_end=20, count=2)
        """
        return self.agg(count=Agg.count())

    def agg(self, **aggregates: Any) -> DataStream:
        """Several built-in aggregates at once, each named: per key and window,
        ``Row(key, window_start, window_end, <one field per aggregate>)``, typed ``ROW_NAMED``
        (count LONG, avg DOUBLE, sum/min/max the field's type, integer fields LONG).

        Aggregates come from :class:`~sparktide.datastream.window.Agg`: ``count()``,
        ``sum(field)``, ``min(field)``, ``max(field)``, ``avg(field)``. Nulls are ignored as in
        SQL: ``count`` counts records, the others skip ``None`` and give ``None`` when the
        window has no other value. Names must be identifiers other than ``key``,
        ``window_start`` and ``window_end``.

        >>> from sparktide.common import WatermarkStrategy
        >>> from sparktide.common.typeinfo import Types
        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> from sparktide.datastream.window import Agg, TumblingEventTimeWindows
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> ds = env.from_collection(
        ...     [("JFK", 3, 1000), ("JFK", None, 2000), ("LGA", 7, 3000), ("JFK", 5, 4000)],
        ...     type_info=Types.ROW_NAMED(["airport", "delay", "ts"],
        ...                               [Types.STRING(), Types.INT(), Types.LONG()]))
        >>> ds = ds.assign_timestamps_and_watermarks(
        ...     WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        ...         lambda v, ts: v.ts))
        >>> result = ds.key_by("airport").window(TumblingEventTimeWindows.of(60_000)).agg(
        ...     n=Agg.count(), total=Agg.sum("delay"), hi=Agg.max("delay"),
        ...     mean=Agg.avg("delay"))
        >>> result.get_type().get_field_types()
        [String, Long, Long, Long, Long, Long, Double]
        >>> for row in sorted(result.execute_and_collect(), key=lambda r: r.key):
        ...     print(row)
        Row(key='JFK', window_start=0, window_end=60000, n=3, total=8, hi=5, mean=4.0)
        Row(key='LGA', window_start=0, window_end=60000, n=1, total=7, hi=7, mean=7.0)
        """
        named = named_aggregates(aggregates)
        key_type = self._keyed_stream._key_type if self._keyed else None
        output_type = named_row_type(named, key_type, self.get_input_type())
        return self._builtin(OutputForm.NAMED_ROW, None, named, output_type, True)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        """Per window, the element with field ``position_to_sum`` summed."""
        return self._field_aggregate("sum", position_to_sum, "position_to_sum")

    def min(self, position_to_min: int | str = 0) -> DataStream:
        """Per window, the first element with field ``position_to_min`` replaced by the minimum."""
        return self._field_aggregate("min", position_to_min, "position_to_min")

    def max(self, position_to_max: int | str = 0) -> DataStream:
        """Per window, the first element with field ``position_to_max`` replaced by the maximum."""
        return self._field_aggregate("max", position_to_max, "position_to_max")

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        """Per window, the (first) element with the smallest field ``position_to_min_by``."""
        return self._field_aggregate("min_by", position_to_min_by, "position_to_min_by")

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        """Per window, the (first) element with the largest field ``position_to_max_by``."""
        return self._field_aggregate("max_by", position_to_max_by, "position_to_max_by")


class AllWindowedStream(WindowedStream):
    """A non-keyed stream split into windows (``DataStream.window_all``): one operator
    instance (parallelism 1) sees every element, under a single constant key. Functions are
    ``AllWindowFunction`` / ``ProcessAllWindowFunction``.

    >>> from sparktide.datastream import StreamExecutionEnvironment
    >>> from sparktide.datastream.window import CountTrigger, GlobalWindows, PurgingTrigger
    >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    >>> ds = env.from_collection([1, 2, 3, 4, 5])
    >>> all_windows = AllWindowedStream(ds, GlobalWindows.create()).trigger(
    ...     PurgingTrigger.of(CountTrigger.of(2)))
    >>> list(all_windows.reduce(lambda a, b: a + b).execute_and_collect())
    [3, 7]
    """

    _keyed = False
    _kind = "AllWindow"

    def __init__(self, data_stream: DataStream, window_assigner: Any) -> None:
        if not isinstance(data_stream, streams.DataStream):
            raise TypeError(f"data_stream must be a DataStream, got {type(data_stream).__name__}")
        super().__init__(data_stream.key_by(_NullKeySelector()), window_assigner)

    def _finish(self, stream: DataStream) -> DataStream:
        return stream.force_non_parallel()


def _count_args(size: Any, slide: Any) -> None:
    if type(size) is not int or size <= 0:
        raise ValueError(f"size must be a positive int (elements per window), got {size!r}")
    if type(slide) is not int or slide < 0:
        raise ValueError(
            f"slide must be an int >= 0 (elements between firings; 0: tumbling), got {slide!r}"
        )


def count_window(keyed_stream: KeyedStream, size: int, slide: int = 0) -> WindowedStream:
    """``KeyedStream.count_window(size, slide)`` as Flink defines it: tumbling
    (``slide == 0``): ``GlobalWindows`` + ``PurgingTrigger(CountTrigger(size))``; sliding:
    ``GlobalWindows`` + ``CountEvictor(size)`` + ``CountTrigger(slide)`` (fires every ``slide``
    elements over the last ``size``)."""
    _count_args(size, slide)
    return _count(WindowedStream(keyed_stream, GlobalWindows.create()), size, slide)


def count_window_all(data_stream: DataStream, size: int, slide: int = 0) -> AllWindowedStream:
    """``DataStream.count_window_all(size, slide)``: :func:`count_window` on all elements."""
    _count_args(size, slide)
    return _count(AllWindowedStream(data_stream, GlobalWindows.create()), size, slide)  # type: ignore[return-value]


def _count(stream: WindowedStream, size: int, slide: int) -> WindowedStream:
    if slide == 0:
        return stream.trigger(PurgingTrigger.of(CountTrigger.of(size)))  # type: ignore[no-any-return]
    return stream.evictor(CountEvictor.of(size)).trigger(CountTrigger.of(slide))  # type: ignore[no-any-return]
