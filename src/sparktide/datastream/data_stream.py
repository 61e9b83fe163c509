"""``DataStream``, ``KeyedStream``, ``ConnectedStreams`` with PyFlink's names and signatures.

Each call adds a node to the environment's job graph; nothing runs until ``env.execute()`` (or
``execute_and_collect()``).

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)])
>>> sorted(ds.key_by(lambda v: v[0]).sum(1).execute_and_collect())
[('a', 1), ('a', 4), ('b', 2)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, overload

from sparktide.common.config_options import MAP_BATCHES_SIZE
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import broadcast_stream as broadcasting
from sparktide.datastream import join as joins  # join and windowed_stream import this module
from sparktide.datastream import windowed_stream as windowing
from sparktide.datastream.aggregations import FieldAggregator
from sparktide.datastream.broadcast_stream import BroadcastConnectedStream, BroadcastStream
from sparktide.datastream.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessFunction,
)
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.stream_routing import AccumulateType, StreamRouting
from sparktide.runtime.columnar.spec import FieldKey
from sparktide.runtime.graph import Edge, Node, OperatorNode, SinkNode, copy_function
from sparktide.runtime.operators.batch_columns import BatchColumns
from sparktide.runtime.operators.co_process import (
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
    KeyedCoProcessOperator,
)
from sparktide.runtime.operators.map_batches import BatchFormat, MapBatchesOperator
from sparktide.runtime.operators.process import KeyedProcessOperator, ProcessOperator
from sparktide.runtime.operators.simple import (
    PrintSinkOperator,
    SinkFunctionOperator,
    StreamFilter,
    StreamFlatMap,
    StreamGroupedReduce,
    StreamMap,
    as_callable,
)
from sparktide.runtime.operators.timestamps import TimestampsAndWatermarksOperator
from sparktide.runtime.operators.window_aggregates import field_type

if TYPE_CHECKING:
    from sparktide.datastream.environment import StreamExecutionEnvironment
    from sparktide.datastream.join import CoGroupedStreams, IntervalJoin, JoinedStreams
    from sparktide.datastream.windowed_stream import AllWindowedStream, WindowedStream

__all__ = [
    "BroadcastConnectedStream",
    "BroadcastStream",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "KeyedStream",
]


def _key_selector(key_selector: Any) -> Callable[[Any], Any]:
    return as_callable(key_selector, "get_key", "key_selector")


def _keyed_stream(stream: DataStream, key_selector: Any, key_type: Any) -> KeyedStream:
    """``stream`` keyed by ``key_selector``: a field (int position or str name, read as a
    column by runners that can) or a function; a field's key type comes from the stream's
    Row/Tuple type unless ``key_type`` is given."""
    if isinstance(key_selector, (int, str)):  # bool too: FieldKey rejects it
        key_selector = FieldKey(key_selector)
    if isinstance(key_selector, FieldKey):
        where = f"key_by({key_selector.field!r})"
        of_field = field_type(stream.get_type(), key_selector.field, where)
        return KeyedStream(stream, key_selector, key_type if key_type is not None else of_field)
    return KeyedStream(stream, _key_selector(key_selector), key_type)


def _check_function(function: Any, cls: type, methods: tuple[str, ...], what: str) -> None:
    if isinstance(function, cls):
        return
    missing = [m for m in methods if not callable(getattr(function, m, None))]
    if missing:
        raise TypeError(
            f"{what} must be a {cls.__name__} (or have {', '.join(methods)}), got "
            f"{type(function).__name__}"
        )


class DataStream(StreamRouting):
    """A stream of elements produced by one transformation (or one of its side outputs)."""

    def __init__(
        self, env: StreamExecutionEnvironment, node: Node, tag: OutputTag | None = None
    ) -> None:
        self._env = env
        self._node = node
        self._tag = tag

    # ------------------------------------------------------------------ properties

    def get_name(self) -> str:
        return self._node.name

    def name(self, name: str) -> DataStream:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        self._node.name = name
        return self

    def uid(self, uid: str) -> DataStream:
        self._node.uid = uid
        return self

    def set_uid_hash(self, uid_hash: str) -> DataStream:
        return self

    def with_failed_records(self, output_tag: OutputTag) -> DataStream:
        """Send the records whose user function raised in this operator to ``output_tag``
        instead of failing the job; read them with ``get_side_output(output_tag)``.

        Each is a :class:`~sparktide.datastream.failed_records.FailedRecord` (the record's
        value and timestamp, the operator, the key, the exception's type and message), counted
        in the job's ``failed_records`` metric. The keyed state and timers of the record's key
        are rolled back to what they were before the record (a state update or timer made
        before the function raised is not visible afterwards), and what the call emitted
        before it raised is dropped. Without this (the default) the first error fails the
        job. Errors in timers (``on_timer``, window firings) still fail the job. Applies to
        the operator that made this stream, on both runtimes::

            failed = OutputTag("failed")
            parsed = stream.key_by(key).process(Parse()).with_failed_records(failed)
            parsed.get_side_output(failed).print()
        """
        if not isinstance(output_tag, OutputTag):
            raise TypeError(
                f"output_tag must be an OutputTag, got {type(output_tag).__name__}; create one "
                "with OutputTag('failed')"
            )
        node = self._node
        if not isinstance(node, OperatorNode) or node.is_virtual:
            raise ValueError(
                f"with_failed_records() applies to an operator that runs a user function "
                f"(map, process, ...); {node.name!r} is a {node.kind}"
            )
        node.failed_records = output_tag
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        if type(parallelism) is not int or parallelism < 1:
            raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
        self._node.parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self._node.parallelism or self._env.get_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        if type(max_parallelism) is not int or not 1 <= max_parallelism <= 32768:
            raise ValueError(
                f"max_parallelism must be an int in [1, 32768], got {max_parallelism!r}"
            )
        self._node.max_parallelism = max_parallelism
        return self

    def force_non_parallel(self) -> DataStream:
        self._node.parallelism = 1
        self._node.max_parallelism = 1
        return self

    def get_type(self) -> Any:
        """The type information of the stream's elements: its operator's output type, or for
        a side output its tag's (``None``, an untyped tag: pickled values, as in PyFlink)."""
        return self._node.output_type if self._tag is None else self._tag.type_info

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def get_transformation(self) -> Node:
        """The node of the job graph that produces this stream (Flink's
        ``DataStream.getTransformation()``): a :class:`~sparktide.runtime.graph.SourceNode` or
        an :class:`~sparktide.runtime.graph.OperatorNode`, with what runners read from it
        (e.g. an operator's ``window_aggregate``, a source's ``watermark_strategy``). A side
        output's node is the operator that emits it."""
        return self._node

    def slot_sharing_group(self, slot_sharing_group: Any) -> DataStream:
        return self

    def start_new_chain(self) -> DataStream:
        return self

    def disable_chaining(self) -> DataStream:
        return self

    # ------------------------------------------------------------------ building blocks

    def _edge(
        self,
        partitioning: str = "forward",
        key_selector: Any = None,
        index: int = 1,
        key_type: Any = None,
    ) -> Edge:
        return Edge(self._node, partitioning, key_selector, self._tag, index, key_type)

    def _one_input(
        self,
        name: str,
        factory: Callable[[], Any],
        output_type: Any = None,
        *,
        partitioning: str = "forward",
        key_selector: Any = None,
        key_type: Any = None,
        split_local: bool = False,
        coerce_output: bool = True,
    ) -> OperatorNode:
        return self._env._graph.add(
            OperatorNode(
                name,
                [self._edge(partitioning, key_selector, key_type=key_type)],
                operator_factory=factory,
                output_type=output_type,
                coerce_output=coerce_output,
                split_local=split_local,
            )
        )

    # ------------------------------------------------------------------ transformations

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply ``func`` (a MapFunction or a callable) to every element."""
        as_callable(func, "map", "func")
        node = self._one_input(
            "Map", lambda: StreamMap(copy_function(func)), output_type, split_local=True
        )
        return DataStream(self._env, node)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply ``func`` (a FlatMapFunction or a callable yielding values) to every element."""
        as_callable(func, "flat_map", "func")
        node = self._one_input(
            "FlatMap", lambda: StreamFlatMap(copy_function(func)), output_type, split_local=True
        )
        return DataStream(self._env, node)

    def map_batches(self, func: Any, output_type: Any, batch_format: str = "pyarrow") -> DataStream:
        """Apply ``func`` to batches of elements as columns: a vectorized ``map``.

        sparktide's own extension (PyFlink has no such method), for a step that can be
        written over columns with pyarrow.compute, numpy or pandas. ``func`` receives a
        ``pyarrow.RecordBatch`` (``batch_format="pandas"``: a ``pandas.DataFrame``) holding
        the stream's elements in columns of its declared type (a ``Types.ROW_NAMED`` row: one
        column per field; a ``Types.TUPLE``/unnamed row: ``f0, f1, ...``; a single value: one
        column ``value``), and returns a ``RecordBatch``, ``Table`` or ``DataFrame`` of
        ``output_type``'s columns with **one row per input row, in order**. Output row ``i``
        is a record of ``output_type`` that keeps input row ``i``'s timestamp: the stream that
        results is exactly the one ``map`` gives with the per-record function, watermarks,
        order and parallelism included. A column may come back as another Arrow type that
        casts to the declared one keeping its values (``int32`` for ``Types.LONG()``); another
        row count, a missing, extra or ill-typed column is an error naming the operator.

        A batch holds at most ``sparktide.execution.map-batches.size`` elements (the option's
        value when ``map_batches`` is called, default 4096) and ends at every watermark. The
        columns must be flat (numbers, booleans, text, bytes, decimals, dates, times). Not for
        per-key state: key the stream after it.

        >>> import pyarrow.compute as pc
        >>> from sparktide.common.typeinfo import Types
        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> bid = Types.ROW_NAMED(["auction", "price"], [Types.LONG(), Types.DOUBLE()])
        >>> bids = env.from_collection([(1, 10.0), (2, 25.0)], type_info=bid)
        >>> def to_euro(batch):
        ...     euros = pc.multiply(batch.column("price"), 0.908)
        ...     return batch.set_column(1, "price", euros)
        >>> list(bids.map_batches(to_euro, bid).execute_and_collect())
        [Row(auction=1, price=9.08), Row(auction=2, price=22.7)]
        """
        if not callable(func):
            raise TypeError(
                f"map_batches: func must be a callable taking a batch, got {type(func).__name__}"
            )
        fmt = BatchFormat.parse(batch_format)
        inputs = BatchColumns.of(self.get_type(), "map_batches: the stream's type")
        outputs = BatchColumns.of(output_type, "map_batches: output_type")
        options = self._env.get_config().get_configuration().to_dict()
        size = MAP_BATCHES_SIZE.read(options)
        if type(size) is not int or size < 1:
            raise ValueError(f"{MAP_BATCHES_SIZE.key()} must be an int >= 1, got {size!r}")
        node = self._one_input(
            "MapBatches",
            lambda: MapBatchesOperator(copy_function(func), inputs, outputs, fmt, size),
            output_type,
            split_local=True,
            coerce_output=False,  # its records are made from output_type's columns
        )
        return DataStream(self._env, node)

    def filter(self, func: Any) -> DataStream:
        """Keep the elements for which ``func`` (a FilterFunction or a callable) is true."""
        as_callable(func, "filter", "func")
        node = self._one_input(
            "Filter",
            lambda: StreamFilter(copy_function(func)),
            self.get_type(),
            split_local=True,
            coerce_output=False,
        )
        return DataStream(self._env, node)

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        """Partition by key: records with equal keys go to the same subtask, with shared state.

        ``key_selector`` is a KeySelector or a function of the record, or a field: an int
        position (tuple, list, Row) or a str Row field name. A field is declarative: runners
        that can read it as a column do (built-in window aggregates then run on arrays), and
        on a stream typed as a Row or Tuple its key type is the field's type.

        >>> from sparktide.common.typeinfo import Types
        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)],
        ...                          type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
        >>> sorted(ds.key_by(0).sum(1).execute_and_collect())
        [('a', 1), ('a', 4), ('b', 2)]
        >>> ds.key_by(2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: key_by(2): position 2 is out of range for the stream's type ...
        """
        return _keyed_stream(self, key_selector, key_type)

    def process(self, func: ProcessFunction, output_type: Any = None) -> DataStream:
        """Run a ProcessFunction on every element (timers need ``key_by`` first)."""
        if isinstance(func, KeyedProcessFunction):
            raise TypeError(
                "a KeyedProcessFunction needs a keyed stream: call key_by(...) before process(...)"
            )
        _check_function(func, ProcessFunction, ("process_element",), "func")
        node = self._one_input(
            "Process", lambda: ProcessOperator(copy_function(func)), output_type, split_local=True
        )
        return DataStream(self._env, node)

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> DataStream:
        """Assign event timestamps and generate watermarks with ``watermark_strategy``.

        Runs per source split when applied right after a source (each split has its own
        generator, as Flink does per source split).
        """
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(
                "watermark_strategy must be a WatermarkStrategy, got "
                f"{type(watermark_strategy).__name__}; e.g. "
                "WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))"
            )
        env = self._env

        def factory() -> Any:
            return TimestampsAndWatermarksOperator(
                watermark_strategy,
                auto_watermark_interval=env.get_config().get_auto_watermark_interval(),
                periodic=env._periodic_mode(),
            )

        node = self._one_input(
            "Timestamps/Watermarks",
            factory,
            self.get_type(),
            split_local=True,
            coerce_output=False,
        )
        return DataStream(self._env, node)

    def union(self, *streams: DataStream) -> DataStream:
        """Merge this stream with ``streams`` (same element type)."""
        for s in streams:
            if not isinstance(s, DataStream):
                raise TypeError(f"union takes DataStreams, got {type(s).__name__}")
            if s._env is not self._env:
                raise ValueError("union needs streams of the same StreamExecutionEnvironment")
        node = self._env._graph.add(
            OperatorNode(
                "Union",
                [self._edge()] + [s._edge() for s in streams],
                operator_factory=None,
                output_type=self.get_type(),
                split_local=True,
            )
        )
        return DataStream(self._env, node)

    @overload
    def connect(self, ds: BroadcastStream) -> BroadcastConnectedStream: ...

    @overload
    def connect(self, ds: DataStream) -> ConnectedStreams: ...

    def connect(
        self, ds: DataStream | BroadcastStream
    ) -> ConnectedStreams | BroadcastConnectedStream:
        """Connect with another stream for a two-input operation (shared state when keyed),
        or with a :class:`~sparktide.datastream.broadcast_stream.BroadcastStream` (made by
        :meth:`broadcast`) for a broadcast process function."""
        if isinstance(ds, broadcasting.BroadcastStream):
            return broadcasting.BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        if not isinstance(ds, DataStream):
            raise TypeError(
                f"connect takes a DataStream or a BroadcastStream, got {type(ds).__name__}"
            )
        return ConnectedStreams(self, ds)

    @overload
    def broadcast(self) -> DataStream: ...

    @overload
    def broadcast(
        self, broadcast_state_descriptor: Any, *other_broadcast_state_descriptors: Any
    ) -> BroadcastStream: ...

    def broadcast(
        self,
        broadcast_state_descriptor: Any = None,
        *other_broadcast_state_descriptors: Any,
    ) -> DataStream | BroadcastStream:
        """Send every element to every parallel instance of the next operator.

        With ``MapStateDescriptor``s, a :class:`~sparktide.datastream.broadcast_stream.
        BroadcastStream` whose broadcast states they describe, to ``connect`` a keyed or
        non-keyed stream to; without, a stream with broadcast partitioning."""
        node = self._env._graph.add(
            OperatorNode("Broadcast", [self._edge("broadcast")], output_type=self.get_type())
        )
        stream = DataStream(self._env, node)
        if broadcast_state_descriptor is None:
            if other_broadcast_state_descriptors:
                raise TypeError("broadcast(None, ...): pass MapStateDescriptors only")
            return stream
        descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
        return broadcasting.BroadcastStream(stream, descriptors)

    def join(self, other_stream: DataStream) -> JoinedStreams:
        """Window join with ``other_stream``: ``.where(key1).equal_to(key2).window(assigner)
        .apply(join_function)`` (see :mod:`sparktide.datastream.join`)."""
        return joins.JoinedStreams(self, other_stream)

    def co_group(self, other_stream: DataStream) -> CoGroupedStreams:
        """Window co-group with ``other_stream``: ``.where(key1).equal_to(key2)
        .window(assigner).apply(co_group_function)`` (see :mod:`sparktide.datastream.join`)."""
        return joins.CoGroupedStreams(self, other_stream)

    def interval_join(self, other_stream: DataStream) -> IntervalJoin:
        """Interval joins are for keyed streams (see ``KeyedStream.interval_join``)."""
        raise TypeError(
            "an interval join needs two keyed streams: key_by(...) both, then "
            "left.interval_join(right).between(lower, upper).process(ProcessJoinFunction)"
        )

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The stream of what this operator sent to ``output_tag``."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"output_tag must be an OutputTag, got {type(output_tag).__name__}")
        return DataStream(self._env, self._node, output_tag)

    def rebalance(self) -> DataStream:
        """Spread elements round-robin over the next operator's subtasks."""
        node = self._env._graph.add(
            OperatorNode(
                "Rebalance",
                [self._edge("rebalance")],
                output_type=self.get_type(),
            )
        )
        return DataStream(self._env, node)

    shuffle = rebalance
    rescale = rebalance

    def global_(self) -> DataStream:
        """Send every element to the first subtask of the next operator."""
        node = self._env._graph.add(
            OperatorNode("Global", [self._edge("global")], output_type=self.get_type())
        )
        return DataStream(self._env, node)

    def window_all(self, window_assigner: Any) -> AllWindowedStream:
        """Split the whole (non-keyed) stream into windows of ``window_assigner``; one subtask
        evaluates them (PyFlink's ``window_all``)."""
        return windowing.AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int = 0) -> AllWindowedStream:
        """Tumbling (``slide == 0``) or sliding count windows over the whole stream: Flink's
        ``GlobalWindows`` + ``PurgingTrigger(CountTrigger(size))``, or + ``CountEvictor(size)``
        + ``CountTrigger(slide)``."""
        return windowing.count_window_all(self, size, slide)

    # ------------------------------------------------------------------ sinks

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Print every element as PyFlink does (see ``PrintSinkOperator``), prefixed by
        ``"N> "`` when run in parallel."""
        type_info = self.get_type()
        node = self._env._graph.add(
            SinkNode(
                sink_identifier or "Print to Std. Out",
                [self._edge()],
                operator_factory=lambda: PrintSinkOperator(type_info, identifier=sink_identifier),
                split_local=True,
            )
        )
        return DataStreamSink(node)

    def sink_to(self, sink: Any) -> DataStreamSink:
        """Write every element to ``sink`` (e.g. ``FileSink.for_row_format(...).build()``)."""
        prepare_stream = getattr(sink, "prepare_stream", None)
        if callable(prepare_stream):  # e.g. a KafkaSink: records become the rows it writes
            stream, writer = prepare_stream(self)
            return stream.sink_to(writer)  # type: ignore[no-any-return]
        if not callable(getattr(sink, "create_operator", None)):
            raise TypeError(
                "sink must be a Sink such as FileSink.for_row_format(path, "
                f"Encoder.simple_string_encoder()).build(), got {type(sink).__name__}"
            )
        type_info = self.get_type()
        node = self._env._graph.add(
            SinkNode(
                "Sink: Writer",
                [self._edge()],
                operator_factory=lambda: sink.create_operator(type_info),
                output_type=type_info,
                # on Spark, a sink that Spark's writers serve gets the stream as a DataFrame
                frame_writer=getattr(sink, "write_dataframe", None),
                output_location=getattr(sink, "output_location", None),
                # a sink with nothing to do per subtask (ForeachBatchSink) runs where its input does
                split_local=getattr(sink, "split_local", False),
            )
        )
        return DataStreamSink(node)

    def foreach_batch(self, fn: Any, *, idempotent: bool = True) -> DataStreamSink:
        """On a stream read by ``env.from_stream(...)``: call ``fn(batch_df, batch_id)`` with
        each micro-batch's output as a Spark DataFrame; the same as ``sink_to(
        ForeachBatchSink(fn, idempotent=idempotent))`` (see
        :class:`~sparktide.spark.stream_sinks.ForeachBatchSink`: pass ``idempotent=False``
        when ``fn`` called twice with one batch id writes twice).

        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        >>> sink = env.from_collection([1, 2]).foreach_batch(lambda df, batch_id: None)
        """
        from sparktide.spark.stream_sinks import ForeachBatchSink

        return self.sink_to(ForeachBatchSink(fn, idempotent=idempotent))

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """Send every element to a SinkFunction (``invoke(value, context)``) or a callable."""
        as_callable(sink_func, "invoke", "sink_func")
        node = self._env._graph.add(
            SinkNode(
                "Sink",
                [self._edge()],
                operator_factory=lambda: SinkFunctionOperator(copy_function(sink_func)),
                split_local=True,
            )
        )
        return DataStreamSink(node)

    def to_dataframe(self, ordered: bool = True) -> Any:
        """This stream's elements as a Spark DataFrame, for any Spark reader or writer.

        Columns follow the stream's type (``output_type``/``Types``): one per field of a named
        row, ``f0, f1, ...`` for an unnamed row or tuple, one ``value`` column for any other
        type (pickled values for ``Types.PICKLED_BYTE_ARRAY()``). A value that does not fit its
        field is an error naming the field. When no type is declared, the records decide
        (:mod:`sparktide.spark.frame_types`: rows, tuples, scalars, lists and dicts), or a
        ``TypeError`` asks for ``output_type``. On Spark the DataFrame is lazy: the job runs
        (again) each time an action needs it, and only this stream's part of the job runs
        (``cache()`` it to reuse); without a declared type, the job runs once when
        ``to_dataframe()`` is called, to see the records, and the DataFrame reads what it
        kept. ``ordered`` sorts the rows by their position, so
        ``collect()`` gives what ``execute_and_collect`` gives; without it, each key's rows
        still come in order within their partition. Side outputs: ``get_side_output(tag)
        .to_dataframe()``.
        """
        if type(ordered) is not bool:
            raise TypeError(f"ordered must be a bool, got {type(ordered).__name__}")
        return self._env._to_dataframe(self, ordered)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> Any:
        """Run the job and return its results: an iterator, or a list of at most ``limit``."""
        results = self._env._execute_and_collect(self, job_execution_name)
        if limit is not None:
            if type(limit) is not int or limit < 0:
                raise ValueError(f"limit must be an int >= 0, got {limit!r}")
            return list(results)[:limit]
        return CloseableIterator(iter(results))


class DataStreamSink:
    """The end of a stream (returned by ``print()``, ``add_sink()``, ``sink_to()``)."""

    def __init__(self, node: SinkNode) -> None:
        self._node = node

    def name(self, name: str) -> DataStreamSink:
        self._node.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._node.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        self._node.parallelism = parallelism
        return self


class CloseableIterator:
    """Results of ``execute_and_collect``; usable as an iterator and a context manager."""

    def __init__(self, it: Iterator[Any]) -> None:
        self._it = it

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def close(self) -> None:
        self._it = iter(())

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KeyedStream(DataStream):
    """A stream partitioned by key; operations on it have keyed state and timers."""

    AccumulateType = AccumulateType

    def __init__(
        self, stream: DataStream, key_selector: Callable[[Any], Any], key_type: Any
    ) -> None:
        super().__init__(stream._env, stream._node, stream._tag)
        self._key_selector = key_selector
        self._key_type = key_type
        self._origin = stream

    def get_key_selector(self) -> Callable[[Any], Any]:
        """What gives each element its key (Flink's ``KeyedStream.getKeySelector()``): the
        ``KeySelector`` or function passed to ``key_by``, or the
        :class:`~sparktide.runtime.columnar.spec.FieldKey` of a field name or index."""
        return self._key_selector

    def get_key_type(self) -> Any:
        """The type information of the keys (Flink's ``KeyedStream.getKeyType()``): the
        ``key_type`` passed to ``key_by``, or the field's type when the key is a field of a
        typed stream; ``None`` when undeclared."""
        return self._key_type

    def _keyed(
        self, name: str, factory: Callable[[], Any], output_type: Any = None, coerce: bool = True
    ) -> OperatorNode:
        return self._origin._one_input(
            name,
            factory,
            output_type,
            partitioning="hash",
            key_selector=self._key_selector,
            key_type=self._key_type,
            coerce_output=coerce,
        )

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Run a KeyedProcessFunction (keyed state and timers) on every element."""
        if isinstance(func, ProcessFunction):
            raise TypeError(
                "a keyed stream takes a KeyedProcessFunction: subclass KeyedProcessFunction "
                "(ctx.get_current_key(), timers and keyed state come with it)"
            )
        _check_function(func, KeyedProcessFunction, ("process_element",), "func")
        node = self._keyed(
            "KeyedProcess", lambda: KeyedProcessOperator(copy_function(func)), output_type
        )
        return DataStream(self._env, node)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        m = as_callable(func, "map", "func")
        return self.process(_FunctionAdapter(func, lambda v: (m(v),)), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        return self.process(
            _FunctionAdapter(func, as_callable(func, "flat_map", "func")), output_type
        )

    def map_batches(self, func: Any, output_type: Any, batch_format: str = "pyarrow") -> DataStream:
        """Refused: a vectorized step has no keyed state; apply it before ``key_by``."""
        raise TypeError(
            "map_batches runs on a stream, not a keyed stream (it has no keyed state): call it "
            "before key_by(...), e.g. stream.map_batches(f, output_type).key_by(...)"
        )

    def filter(self, func: Any) -> DataStream:
        f = as_callable(func, "filter", "func")
        adapter = _FunctionAdapter(func, lambda v: (v,) if f(v) else None)
        node = self._keyed(
            "Filter",
            lambda: KeyedProcessOperator(copy_function(adapter)),
            self.get_type(),
            coerce=False,
        )
        return DataStream(self._env, node)

    def reduce(self, func: Any) -> DataStream:
        """Rolling reduce per key: emits the running result after every element."""
        as_callable(func, "reduce", "func")
        t = self.get_type()
        env = self._env

        def factory() -> StreamGroupedReduce:
            return StreamGroupedReduce(copy_function(func), t, batch=env._is_batch())

        node = self._keyed("Reduce", factory, t, coerce=False)
        return DataStream(self._env, node)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self.reduce(FieldAggregator(position_to_sum, "sum", in_place=True))

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self.reduce(FieldAggregator(position_to_min, "min", in_place=True))

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self.reduce(FieldAggregator(position_to_max, "max", in_place=True))

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self.reduce(FieldAggregator(position_to_min_by, "min_by", in_place=True))

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self.reduce(FieldAggregator(position_to_max_by, "max_by", in_place=True))

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        return _keyed_stream(self._origin, key_selector, key_type)

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        """A keyed stream is partitioned by its key; broadcast the stream it was keyed from."""
        raise TypeError(
            "cannot broadcast a KeyedStream: its partitioning is by key; call broadcast(...) "
            "on the stream before key_by(...)"
        )

    def window(self, window_assigner: Any) -> WindowedStream:
        """Split each key's elements into windows of ``window_assigner`` (a WindowAssigner such
        as ``TumblingEventTimeWindows.of(Time.seconds(5))``)."""
        return windowing.WindowedStream(self, window_assigner)

    def interval_join(self, other_stream: DataStream) -> IntervalJoin:
        """Join with the keyed ``other_stream`` on event time: ``.between(lower, upper)``
        pairs each record ``l`` with the records ``r`` of the same key and ``l.ts + lower <=
        r.ts <= l.ts + upper``; ``.process(ProcessJoinFunction)`` handles the pairs (see
        :mod:`sparktide.datastream.join`)."""
        return joins.IntervalJoin(self, other_stream)  # type: ignore[arg-type]

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Tumbling (``slide == 0``) or sliding count windows per key: Flink's
        ``GlobalWindows`` + ``PurgingTrigger(CountTrigger(size))``, or + ``CountEvictor(size)``
        + ``CountTrigger(slide)`` (every ``slide`` elements, the last ``size``)."""
        return windowing.count_window(self, size, slide)


class _FunctionAdapter(KeyedProcessFunction):
    """Runs a map/flat_map/filter function on a keyed stream (so it sees keyed state)."""

    def __init__(self, function: Any, body: Callable[[Any], Any]) -> None:
        self._function = function
        self._body = body

    def open(self, runtime_context: Any) -> None:
        opener = getattr(self._function, "open", None)
        if callable(opener):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self._function, "close", None)
        if callable(closer):
            closer()

    def process_element(self, value: Any, ctx: Any) -> Any:
        return self._body(value)


class ConnectedStreams:
    """Two streams connected for a two-input operation."""

    def __init__(self, first: DataStream, second: DataStream) -> None:
        self.stream1 = first
        self.stream2 = second

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: Any = None
    ) -> ConnectedStreams:
        return ConnectedStreams(
            self.stream1.key_by(key_selector1, key_type),
            self.stream2.key_by(key_selector2, key_type),
        )

    def _is_keyed(self) -> bool:
        k1 = isinstance(self.stream1, KeyedStream)
        k2 = isinstance(self.stream2, KeyedStream)
        if k1 != k2:
            raise ValueError(
                "connected streams must be both keyed or both non-keyed; key_by both (or call "
                "key_by(key1, key2) on the connected streams)"
            )
        return k1

    def _two_input(self, name: str, factory: Callable[[], Any], output_type: Any) -> DataStream:
        keyed = self._is_keyed()
        s1, s2 = self.stream1, self.stream2
        if keyed:
            e1 = s1._origin._edge("hash", s1._key_selector, 1, s1._key_type)  # type: ignore[attr-defined]
            e2 = s2._origin._edge("hash", s2._key_selector, 2, s2._key_type)  # type: ignore[attr-defined]
        else:
            e1, e2 = s1._edge("rebalance", None, 1), s2._edge("rebalance", None, 2)
        node = s1._env._graph.add(
            OperatorNode(name, [e1, e2], operator_factory=factory, output_type=output_type)
        )
        return DataStream(s1._env, node)

    def map(self, func: CoMapFunction, output_type: Any = None) -> DataStream:
        _check_function(func, CoMapFunction, ("map1", "map2"), "func")
        return self._two_input("CoMap", lambda: CoMapOperator(copy_function(func)), output_type)

    def flat_map(self, func: CoFlatMapFunction, output_type: Any = None) -> DataStream:
        _check_function(func, CoFlatMapFunction, ("flat_map1", "flat_map2"), "func")
        return self._two_input(
            "CoFlatMap", lambda: CoFlatMapOperator(copy_function(func)), output_type
        )

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Run a CoProcessFunction, or a KeyedCoProcessFunction on keyed inputs."""
        if isinstance(func, KeyedCoProcessFunction) or (
            not isinstance(func, CoProcessFunction) and self._is_keyed()
        ):
            if not self._is_keyed():
                raise TypeError(
                    "a KeyedCoProcessFunction needs keyed inputs: key_by both streams first"
                )
            _check_function(
                func, KeyedCoProcessFunction, ("process_element1", "process_element2"), "func"
            )
            return self._two_input(
                "KeyedCoProcess", lambda: KeyedCoProcessOperator(copy_function(func)), output_type
            )
        _check_function(func, CoProcessFunction, ("process_element1", "process_element2"), "func")
        if self._is_keyed():
            raise TypeError("keyed connected streams take a KeyedCoProcessFunction")
        return self._two_input(
            "CoProcess", lambda: CoProcessOperator(copy_function(func)), output_type
        )


def __getattr__(name: str) -> Any:
    """PyFlink keeps the windowed streams in this module; they live in windowed_stream."""
    if name in ("AllWindowedStream", "WindowedStream"):
        return getattr(windowing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
