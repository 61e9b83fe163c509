"""``StreamExecutionEnvironment``: where a job is built and executed (PyFlink's names).

Jobs run on Spark by default: the active SparkSession, or an embedded ``local[*]`` one
(:mod:`sparktide.spark.session`). The in-process runtime, which needs neither Java nor Spark, is
selected with ``runtime="local"`` (or ``SPARKTIDE_RUNTIME=local``).

>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> env.set_parallelism(2).get_parallelism()
2
>>> env.from_collection([3, 1, 2]).map(lambda v: v * 10).execute_and_collect(limit=3)
[30, 10, 20]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from sparktide.common import env_overrides
from sparktide.common.config_options import SKIP_MISSING_INPUT_FILES
from sparktide.common.execution_config import ExecutionConfig
from sparktide.common.job import BackgroundJobClient, JobExecutionResult
from sparktide.common.stream_trigger import StreamTrigger
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.state_backend import (
    StateBackend,
    default_state_backend,
    state_backend_from_config,
)
from sparktide.datastream.checkpoint_config import CheckpointConfig
from sparktide.datastream.data_stream import DataStream
from sparktide.datastream.environment_compat import EnvironmentCompat
from sparktide.datastream.environment_config import apply_configuration
from sparktide.datastream.execution_mode import RuntimeExecutionMode
from sparktide.datastream.python_dependencies import PythonDependencies
from sparktide.datastream.runners import DEFAULT_RUNTIME, runner_for
from sparktide.datastream.slot_sharing_group import SlotSharingGroup
from sparktide.datastream.source import CollectionSource
from sparktide.runtime.execution.runner import Runner, StreamRequest
from sparktide.runtime.graph import JobGraph, SinkNode, SourceNode
from sparktide.runtime.operators.simple import CollectSinkOperator, RecordCollector

__all__ = [
    "ExecutionConfig",
    "JobExecutionResult",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
]


class StreamExecutionEnvironment(EnvironmentCompat):
    """Builds a job graph from sources and transformations, and runs it."""

    def __init__(self, runtime: str = DEFAULT_RUNTIME) -> None:
        self._runner: Runner = runner_for(runtime)
        self._parallelism = 1
        self._max_parallelism: int | None = None
        self._config = ExecutionConfig()
        self._graph = JobGraph()
        self._mode = RuntimeExecutionMode.STREAMING
        self._state_backend: StateBackend = default_state_backend()
        self._checkpoint_config = CheckpointConfig()
        self._python = PythonDependencies()
        self._slot_sharing_groups: dict[str, SlotSharingGroup] = {}
        self._chaining = True
        self._changelog = False
        self._buffer_timeout = 100
        self._default_local_parallelism: int | None = None
        self._savepoint_directory: str | None = None
        self._skip_missing_input_files = SKIP_MISSING_INPUT_FILES.default_value() or False

    @staticmethod
    def get_execution_environment(
        configuration: Any = None, runtime: str | None = None
    ) -> StreamExecutionEnvironment:
        """A new environment; ``runtime`` (or ``SPARKTIDE_RUNTIME``) picks where jobs run:
        ``"spark"`` (the default; the active SparkSession or an embedded local one) or
        ``"local"`` (in-process, no Java needed). Without Java or pyspark, ``"spark"`` raises
        :class:`~sparktide.spark.session.SparkUnavailableError` saying what is missing.

        ``configuration`` (a :class:`~sparktide.common.Configuration` or a dict of Flink keys)
        is applied with :meth:`configure`: parallelism, runtime mode, auto-watermark interval,
        checkpointing, state backend and Python files take effect
        (:mod:`sparktide.datastream.environment_config`).

        ``SPARKTIDE_PARALLELISM`` (set by ``sparktide run --parallelism``) gives the starting
        parallelism, over the configuration's; ``set_parallelism`` in the job wins.

        >>> from sparktide.common import Configuration
        >>> config = Configuration().set_integer("parallelism.default", 3)
        >>> StreamExecutionEnvironment.get_execution_environment(config, "local").get_parallelism()
        3
        """
        chosen = runtime or env_overrides.runtime() or DEFAULT_RUNTIME
        env = StreamExecutionEnvironment(chosen)
        if configuration is not None:
            env.configure(configuration)
        parallelism = env_overrides.parallelism()
        if parallelism is not None:
            env.set_parallelism(parallelism)
        return env

    # ------------------------------------------------------------------ settings

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if type(parallelism) is not int or parallelism < 1:
            raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if type(max_parallelism) is not int or not 1 <= max_parallelism <= 32768:
            raise ValueError(
                f"max_parallelism must be an int in [1, 32768], got {max_parallelism!r}"
            )
        self._max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int | None:
        return self._max_parallelism

    def get_config(self) -> ExecutionConfig:
        return self._config

    def configure(self, configuration: Any) -> StreamExecutionEnvironment:
        """Take the options of ``configuration`` (a dict of Flink configuration keys, or an
        object with ``to_dict()`` such as :class:`~sparktide.common.Configuration`) that this
        environment knows; others are ignored, as in PyFlink. Known: ``state.backend.type``
        (``"hashmap"``/``"rocksdb"``), ``state.backend.rocksdb.localdir``,
        ``execution.checkpointing.incremental`` and the keys of
        :mod:`sparktide.datastream.environment_config` (parallelism, runtime mode,
        auto-watermark interval, checkpointing, Python files), and sparktide's
        ``sparktide.streaming.skip-missing-input-files``
        (:data:`~sparktide.common.config_options.SKIP_MISSING_INPUT_FILES`).

        >>> env = StreamExecutionEnvironment("local")
        >>> env.configure({"state.backend.type": "rocksdb"}).get_state_backend().kind.value
        'rocksdb'
        """
        to_dict = getattr(configuration, "to_dict", None)
        options = to_dict() if callable(to_dict) else configuration
        if not isinstance(options, Mapping):
            raise TypeError(
                f"configuration must be a dict of configuration keys to values or have "
                f"to_dict(), got {type(configuration).__name__}"
            )
        backend = state_backend_from_config(options)
        if backend is not None:
            self._state_backend = backend
        apply_configuration(self, options)
        if SKIP_MISSING_INPUT_FILES.key() in options:
            self._skip_missing_input_files = bool(SKIP_MISSING_INPUT_FILES.read(options))
        return self

    def set_state_backend(self, state_backend: StateBackend) -> StreamExecutionEnvironment:
        """Where keyed state and timers are kept: :class:`~sparktide.datastream.state_backend.
        HashMapStateBackend` (the default: Python objects in memory) or
        :class:`~sparktide.datastream.state_backend.EmbeddedRocksDBStateBackend` (an embedded
        RocksDB database per subtask, for state larger than memory). A job takes a copy of the
        backend when it is executed."""
        if not isinstance(state_backend, StateBackend):
            raise TypeError(
                f"state_backend must be a StateBackend, got {type(state_backend).__name__} "
                f"({state_backend!r}); pass HashMapStateBackend() or "
                "EmbeddedRocksDBStateBackend() from sparktide.datastream.state_backend"
            )
        self._state_backend = state_backend
        return self

    def get_state_backend(self) -> StateBackend:
        """The backend set with :meth:`set_state_backend` (default: HashMapStateBackend, or the
        one ``SPARKTIDE_STATE_BACKEND`` names: ``"hashmap"`` or ``"rocksdb"``)."""
        return self._state_backend

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        self._mode = execution_mode
        return self

    def get_runtime_mode(self) -> RuntimeExecutionMode:
        """The mode set with :meth:`set_runtime_mode` (or ``execution.runtime-mode``):
        ``STREAMING`` by default.

        >>> env = StreamExecutionEnvironment("local")
        >>> env.set_runtime_mode(RuntimeExecutionMode.BATCH).get_runtime_mode().name
        'BATCH'
        """
        return self._mode

    def _is_batch(self) -> bool:
        return self._mode is RuntimeExecutionMode.BATCH

    def get_runtime(self) -> str:
        """Where this environment's jobs run: ``"spark"`` or ``"local"``."""
        return self._runner.name

    def _periodic_mode(self) -> str:
        return "external"

    # ------------------------------------------------------------------ sources

    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> Any:
        """A bounded stream of the elements of ``collection`` (one split, in order)."""
        values = list(collection)
        coerce = getattr(type_info, "coerce", None)
        if coerce is not None:
            values = [coerce(v, f"collection[{i}]") for i, v in enumerate(values)]
        node = self._graph.add(
            SourceNode(
                "Collection Source",
                source=CollectionSource(values),
                output_type=type_info,
            )
        )
        return DataStream(self, node)

    def from_source(
        self, source: Any, watermark_strategy: Any, source_name: str, type_info: Any = None
    ) -> Any:
        """A stream read from a split-aware ``source``; each split runs its own
        ``watermark_strategy`` (timestamp assigner and watermark generator)."""
        build_stream = getattr(source, "build_stream", None)
        if callable(build_stream):  # a source Spark reads itself, e.g. a KafkaSource
            return build_stream(self, watermark_strategy, source_name, type_info)
        if not callable(getattr(source, "get_splits", None)):
            raise TypeError(
                f"source must be a Source (get_splits/read_split), got {type(source).__name__}"
            )
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(
                "watermark_strategy must be a WatermarkStrategy (e.g. "
                "WatermarkStrategy.no_watermarks()), got "
                f"{type(watermark_strategy).__name__}"
            )
        if type_info is None:  # a source that knows its records' type (e.g. a typed file format)
            type_info = getattr(source, "type_info", None)
        node = self._graph.add(
            SourceNode(
                source_name,
                source=source,
                watermark_strategy=watermark_strategy,
                output_type=type_info,
            )
        )
        return DataStream(self, node)

    def from_dataframe(
        self,
        df: Any,
        watermark_strategy: Any = None,
        timestamp_column: str | None = None,
        split_by: str | list[str] | None = None,
        order_by: str | list[str] | None = None,
        num_splits: int | None = None,
        source_name: str = "DataFrame Source",
    ) -> Any:
        """A stream of the rows of a Spark DataFrame, as named ``Row`` records typed from its
        schema (``Types.ROW_NAMED``).

        Each partition of ``df`` is a source split, with its own watermark generator; with
        ``split_by`` the rows are hash-partitioned by those columns into ``num_splits`` splits
        (default: as many as ``df`` has partitions). ``order_by`` sorts the rows of each split.
        ``timestamp_column`` (epoch milliseconds, or a timestamp column) gives the records
        their event time unless ``watermark_strategy`` has its own timestamp assigner; the
        default strategy is ``WatermarkStrategy.no_watermarks()``. On Spark the partitions are
        read where they live; the local runtime reads the DataFrame through Arrow.

        The splits are whatever partitions Spark gives ``df``, and Spark may merge them (a
        union of ``coalesce(1)`` frames can become one partition): a split whose rows mix
        several independent event-time sequences makes records late. Say what a split is with
        ``split_by`` (e.g. the column of the device, file or Kafka partition) and ``order_by``.
        """
        from sparktide.spark.dataframe_source import DataFrameSource

        source = DataFrameSource(df, split_by, order_by, num_splits)
        strategy = self._frame_strategy(
            df.schema, watermark_strategy, timestamp_column, "from_dataframe"
        )
        return self.from_source(source, strategy, source_name)

    def from_stream(
        self,
        streaming_df: Any,
        watermark_strategy: Any = None,
        timestamp_column: str | None = None,
        split_by: str | list[str] | None = None,
        order_by: str | list[str] | None = None,
        num_splits: int | None = None,
        source_name: str = "Stream Source",
    ) -> Any:
        """An unbounded stream of the rows of a Structured Streaming DataFrame (``spark.
        readStream...``), as named ``Row`` records; each micro-batch is one round.

        ``split_by`` hash-partitions every micro-batch into ``num_splits`` splits (required
        with ``split_by``, and fixed for the life of the checkpoint), each with its own
        watermark generator, kept across batches; without it a batch is one split.
        ``order_by``, ``timestamp_column`` and ``watermark_strategy`` work as in
        :meth:`from_dataframe` (an integer column of epoch milliseconds or a Spark timestamp
        column, e.g. the ``timestamp`` of the ``rate`` or Kafka source). One integral
        ``split_by`` column puts value ``v`` into split ``v % num_splits``. Run the job with
        ``execute(checkpoint_location=...)`` or ``execute_async(...)`` (see
        :mod:`sparktide.spark.streaming`); sinks: ``foreach_batch(fn)``,
        ``sink_to(ParquetBatchSink(path))``, ``sink_to(JsonBatchSink(path))``,
        ``sink_to(ConsoleBatchSink())``, ``print()``.

        Kafka (with the ``spark-sql-kafka`` connector on the classpath): one split per Kafka
        partition, read in offset order, each with its own watermark generator::

            frame = (spark.readStream.format("kafka")
                     .option("kafka.bootstrap.servers", "host:9092")
                     .option("subscribe", "events").load())
            stream = env.from_stream(
                frame,
                WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)),
                timestamp_column="timestamp",
                split_by="partition",
                order_by="offset",
                num_splits=8,  # the topic's partitions
            )

        A job may read several ``from_stream`` sources (e.g. to join two topics): one query
        reads their union, and each micro-batch is one round of all of them.

        A missing ``split_by``, ``order_by`` or ``timestamp_column`` column is a ``ValueError``
        naming the parameter, the column and the columns the DataFrame has.
        """
        from sparktide.spark.stream_source import StreamSource

        if not self._runner.reads_streams:
            raise ValueError(
                'from_stream needs runtime="spark": a Structured Streaming DataFrame is read '
                "by Spark micro-batches; use from_dataframe(...) for a bounded DataFrame"
            )
        source = StreamSource(streaming_df, split_by, order_by, num_splits)
        strategy = self._frame_strategy(
            streaming_df.schema, watermark_strategy, timestamp_column, "from_stream"
        )
        return self.from_source(source, strategy, source_name)

    def _frame_strategy(
        self,
        schema: Any,
        watermark_strategy: Any,
        timestamp_column: str | None,
        method: str,
    ) -> Any:
        from sparktide.spark.dataframe_source import check_timestamp_column
        from sparktide.spark.frames import ColumnTimestampAssigner

        columns = list(schema.names)

        strategy = (
            WatermarkStrategy.no_watermarks() if watermark_strategy is None else watermark_strategy
        )
        if not isinstance(strategy, WatermarkStrategy):
            raise TypeError(
                "watermark_strategy must be a WatermarkStrategy (e.g. WatermarkStrategy."
                f"for_bounded_out_of_orderness(...)), got {type(watermark_strategy).__name__}"
            )
        if timestamp_column is not None:
            if timestamp_column not in columns:
                raise ValueError(
                    f"timestamp_column: the DataFrame has no column {timestamp_column!r}; its "
                    f"columns are {columns}"
                )
            if strategy.timestamp_assigner is None:
                check_timestamp_column(schema, timestamp_column, method)  # at plan time
                index = columns.index(timestamp_column)
                strategy = strategy.with_timestamp_assigner(
                    ColumnTimestampAssigner(index, timestamp_column, method)
                )
        return strategy

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None
    ) -> Any:
        """A stream from a SourceFunction (``run(ctx)`` with collect, collect_with_timestamp,
        emit_watermark, mark_as_temporarily_idle)."""
        if not callable(getattr(source_func, "run", None)):
            raise TypeError(
                f"source_func must be a SourceFunction (with run(ctx)), got "
                f"{type(source_func).__name__}"
            )
        node = self._graph.add(SourceNode(source_name, source=source_func, output_type=type_info))
        return DataStream(self, node)

    # ------------------------------------------------------------------ execution

    def execute(
        self,
        job_name: str | None = None,
        *,
        checkpoint_location: str | None = None,
        trigger: StreamTrigger | str | None = None,
        snapshot_every: int | None = None,
        allow_non_restored_state: bool = False,
        from_savepoint: str | None = None,
    ) -> JobExecutionResult:
        """Run every sink defined since the last execution.

        A job reading :meth:`from_stream` runs until its query stops, its micro-batches
        started as ``trigger`` (a :class:`~sparktide.common.stream_trigger.StreamTrigger` or
        its string form) says: ``StreamTrigger.available_now()`` (``"available_now"``): every
        available micro-batch, then it ends; ``StreamTrigger.once()`` (``"once"``): one batch;
        ``StreamTrigger.processing_time(interval)`` (``"processing_time:10s"``): a batch at
        most every ``interval`` until stopped; ``StreamTrigger.continuous(poll)``
        (``"continuous:100ms"``): a batch as soon as data arrives, the sources polled every
        ``poll``, until stopped; ``None``: until stopped, a batch at most every checkpoint
        interval if checkpointing is enabled, else as soon as data arrives. It keeps its
        state in ``checkpoint_location``: a full snapshot every ``snapshot_every`` batches
        (default 10; 1: full snapshots only) and a changelog of what changed in the batches
        between.

        On a restart, each operator's state is restored by its ``uid(...)``, or else by its
        place in the job graph (kind, name, inputs, position among siblings). If the
        checkpoint holds state of an operator this job does not have (removed, or renamed or
        moved without a uid), the run stops with an error naming it;
        ``allow_non_restored_state=True`` (Flink's ``--allowNonRestoredState``) drops that
        state instead.

        ``from_savepoint``: start the job from the savepoint at that path (taken with
        ``client.stop_with_savepoint(path)`` or ``sparktide savepoint``) in a new, empty
        ``checkpoint_location``: possibly at another parallelism, on another state backend,
        with operators added (they start empty) or removed (with
        ``allow_non_restored_state=True``). Its first micro-batch is the savepoint's version
        + 1, and a file source does not read again the files the savepoint lists. Restart the
        job later from its checkpoint, without ``from_savepoint``. A directory that is not a
        complete savepoint raises ``NotASavepointError``.
        """
        name = job_name or "sparktide job"
        graph = self._graph
        if not graph.sinks():
            raise RuntimeError(
                "no sinks defined in the job: add one with print(), add_sink(...) or "
                "execute_and_collect() before execute()"
            )
        trigger = StreamTrigger.of(trigger)  # a bad one refused before anything starts
        start = time.perf_counter()
        self._apply_python()
        if self._is_streaming():
            client = self.execute_async(
                name,
                checkpoint_location=checkpoint_location,
                trigger=trigger,
                snapshot_every=snapshot_every,
                allow_non_restored_state=allow_non_restored_state,
                from_savepoint=from_savepoint,
            )
            client.await_termination()
            elapsed = int((time.perf_counter() - start) * 1000)
            return JobExecutionResult(name, elapsed, client.metrics())
        _check_bounded(
            checkpoint_location, trigger, snapshot_every, allow_non_restored_state, from_savepoint
        )
        try:
            metrics = self._runner.run(graph, self)  # directly: no extra frame in a traceback
        finally:
            graph.mark_executed()
        return JobExecutionResult(name, int((time.perf_counter() - start) * 1000), metrics)

    def _is_streaming(self) -> bool:
        return self._runner.is_streaming(self._graph)

    def execute_async(
        self,
        job_name: str | None = None,
        *,
        checkpoint_location: str | None = None,
        trigger: StreamTrigger | str | None = None,
        snapshot_every: int | None = None,
        allow_non_restored_state: bool = False,
        from_savepoint: str | None = None,
    ) -> Any:
        """Start the job and return its :class:`~sparktide.common.job.JobClient`; see
        :meth:`execute` for the arguments.

        A job reading :meth:`from_stream` gets a
        :class:`~sparktide.spark.streaming.StreamingJobClient` (``await_termination(timeout)``,
        ``stop()``, ``recent_progress``). A bounded job runs in the background (a thread of
        this process) and gets a :class:`~sparktide.common.job.BackgroundJobClient`:
        ``get_job_execution_result().result()`` waits for its
        :class:`~sparktide.common.job.JobExecutionResult` and re-raises what failed it, as
        PyFlink's; the streams built after this call belong to the next job.

        >>> from sparktide.datastream import SinkFunction, StreamExecutionEnvironment
        >>> seen = []
        >>> class Keep(SinkFunction):
        ...     def invoke(self, value, context):
        ...         seen.append(value)
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> _ = env.from_collection([1, 2, 3]).map(lambda x: x * 10).add_sink(Keep())
        >>> client = env.execute_async("tens")
        >>> client.get_job_execution_result().result(timeout=60).get_job_name(), sorted(seen)
        ('tens', [10, 20, 30])
        """
        if not self._is_streaming():
            return self._start_bounded(
                job_name,
                checkpoint_location,
                trigger,
                snapshot_every,
                allow_non_restored_state,
                from_savepoint,
            )
        graph = self._graph
        if not graph.sinks():
            raise RuntimeError(
                "no sinks defined in the job: add one with sink_to(ForeachBatchSink(fn)), "
                "sink_to(ParquetBatchSink(path)) or print() before execute_async()"
            )
        stream_trigger = StreamTrigger.of(trigger)  # a bad one refused before Spark starts
        self._apply_python()
        try:
            request = StreamRequest(
                job_name or "sparktide job",
                self._checkpoint_config.checkpoint_location(checkpoint_location),
                stream_trigger,
                snapshot_every,
                allow_non_restored_state,
                self._checkpoint_config.trigger_interval_ms(),
                self._skip_missing_input_files,
                from_savepoint,
            )
            return self._runner.start_stream(graph, self, request)
        finally:
            graph.mark_executed()

    def _start_bounded(
        self,
        job_name: str | None,
        checkpoint_location: str | None,
        trigger: StreamTrigger | str | None,
        snapshot_every: int | None,
        allow_non_restored_state: bool,
        from_savepoint: str | None,
    ) -> BackgroundJobClient:
        """``execute_async()`` of a bounded job: checked here, run in a background thread on a
        copy of the graph (its sinks are executed from now on)."""
        name = job_name or "sparktide job"
        graph = self._graph
        if not graph.sinks():
            raise RuntimeError(
                "no sinks defined in the job: add one with print() or add_sink(...) before "
                "execute_async()"
            )
        _check_bounded(
            checkpoint_location, trigger, snapshot_every, allow_non_restored_state, from_savepoint
        )
        start = time.perf_counter()
        self._apply_python()
        job = graph.copy()
        graph.mark_executed()

        def run() -> JobExecutionResult:
            metrics = self._run(job)
            return JobExecutionResult(name, int((time.perf_counter() - start) * 1000), metrics)

        return BackgroundJobClient(name, run)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None, stream: Any = None
    ) -> Any:
        """Run the job and return the elements of ``stream`` (default: the last stream built);
        an iterator, or a list of at most ``limit`` elements. Same as
        ``stream.execute_and_collect(...)``."""
        if stream is None:
            last = next(
                (n for n in reversed(self._graph.nodes) if not isinstance(n, SinkNode)), None
            )
            if last is None:
                raise RuntimeError(
                    "no stream to collect: build one (e.g. env.from_collection(...)) first"
                )
            stream = DataStream(self, last)
        elif not isinstance(stream, DataStream):
            raise TypeError(f"stream must be a DataStream, got {type(stream).__name__}")
        return stream.execute_and_collect(job_execution_name, limit)

    def _execute_and_collect(self, stream: Any, job_name: str | None) -> list[Any]:
        collected: list[tuple[Any, Any]] = []
        node = self._graph.add(SinkNode("Collect Sink", [stream._edge()], split_local=True))
        node_id = node.id
        node.operator_factory = lambda: CollectSinkOperator(RecordCollector(collected, node_id))
        node.collected = collected
        self.execute(job_name)
        return [record.value for _, record in sorted(collected, key=_first)]

    def _to_dataframe(self, stream: Any, ordered: bool) -> Any:
        """A Spark DataFrame of ``stream``'s elements (see ``DataStream.to_dataframe``)."""
        graph = JobGraph(nodes=[n for n in self._graph.nodes if not isinstance(n, SinkNode)])
        collected: list[tuple[Any, Any]] = []
        node = graph.add(
            SinkNode("DataFrame Sink", [stream._edge()], split_local=True, collected=collected)
        )
        node_id = node.id
        node.operator_factory = lambda: CollectSinkOperator(RecordCollector(collected, node_id))
        return self._runner.to_dataframe(graph, self, node, stream.get_type(), ordered)

    def _run(self, graph: JobGraph) -> dict[str, Any]:
        """Run ``graph``; its metrics, the user metrics (``get_metrics_group()``) included."""
        return self._runner.run(graph, self)


def _check_bounded(
    checkpoint_location: str | None,
    trigger: StreamTrigger | str | None,
    snapshot_every: int | None,
    allow_non_restored_state: bool,
    from_savepoint: str | None = None,
) -> None:
    """Refuse the options of streaming jobs on a bounded one."""
    if from_savepoint is not None:
        raise ValueError(
            f"from_savepoint={from_savepoint!r}: a savepoint holds the state of a streaming "
            "job, and this job has no streaming source (a bounded job starts with no state): "
            "read its input with env.from_stream(...) to start it from the savepoint, or drop "
            "from_savepoint"
        )
    if (
        checkpoint_location is not None
        or trigger is not None
        or snapshot_every is not None
        or allow_non_restored_state
    ):
        raise ValueError(
            "checkpoint_location, trigger, snapshot_every and allow_non_restored_state apply to "
            "jobs reading env.from_stream(...); this job has no streaming source: leave them unset"
        )


def _first(item: tuple[Any, Any]) -> Any:
    return item[0]
