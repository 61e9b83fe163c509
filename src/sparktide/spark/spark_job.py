"""The worker side of a run on Spark: what every Spark task of one job runs.

A :class:`SparkJob` is pickled into every task. A source task runs a
:class:`~sparktide.runtime.execution.driver.RoundLoop` over its split; a stage task a
:class:`~sparktide.runtime.execution.driver.SubtaskSession` over its merged input. What a task
produces leaves it as Arrow rows (:func:`arrow_row_schema`): exchange entries for the next
stages, and :class:`~sparktide.runtime.execution.protocol.Shipment` rows for the driver, in chunks
of up to ``CHUNK`` items, shipped once a task holds ``FLUSH`` items (bounded worker memory).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, TypeVar, cast

from sparktide.runtime.execution.arrow_values import ValueCodec
from sparktide.runtime.execution.driver import (
    RoundLoop,
    SimulatedTime,
    SplitSession,
    SubtaskSession,
    source_clock,
    subtask_clock,
)
from sparktide.runtime.execution.merge import ChunkMerge
from sparktide.runtime.execution.planner import SOURCE_STAGE, Plan
from sparktide.runtime.execution.protocol import (
    Position,
    Shipment,
    encode_position,
    pack_collected,
    pack_entries,
    unpack_chunk,
)
from sparktide.runtime.execution.tasks import JobTasks
from sparktide.runtime.gc_pacing import paced_iteration
from sparktide.runtime.graph import Edge
from sparktide.runtime.operators.simple import (
    CollectSinkOperator,
    PrintSinkOperator,
    RecordCollector,
)
from sparktide.runtime.processing_time import (
    ProcessingTimeService,
)
from sparktide.spark.failures import (
    failure_of_mark,
    failure_payload,
    upstream_failed,
)
from sparktide.spark.frame_rows import FrameRows, failure_text
from sparktide.spark.shipments import TaskCounts, TaskMetrics

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


__all__ = ["CHUNK", "FLUSH", "SPARK_SCHEMA", "SparkJob", "arrow_row_schema", "partition_split_task"]

CHUNK = 8192  # items per shipped row
FLUSH = 16384  # items a task holds before it ships them (a Python worker's working set)

_Shipped = TypeVar("_Shipped", bound="tuple[object, ...]")  # an entry, record or line


_by_position_and_channel = itemgetter(0, 1)  # a stage's input order


def _pickled(chunk: list[_Shipped]) -> bytes:
    return pickle.dumps(chunk, 5)


def _first_position(chunk: list[_Shipped]) -> Position:
    """The position of a shipped chunk's first item (every item starts with its position)."""
    return cast("Position", chunk[0][0])


def arrow_row_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("stage", pa.int32()),
            ("target", pa.int32()),
            ("pkey", pa.int64()),
            ("position", pa.binary()),
            ("payload", pa.binary()),
        ]
    )


SPARK_SCHEMA = "stage int, target int, pkey long, position binary, payload binary"


_ARROW_VALUES: bool | None = None
"""Whether exchanged values travel as typed Arrow columns: ``None`` where that was measured
faster than pickling (:func:`~sparktide.runtime.execution.arrow_values.arrow_pays`), ``True``
for every declared type that has columns, ``False`` never. Read when a job is built."""


def _declared_type(edge: Edge) -> object:
    """The declared type of what ``edge`` carries: its producer's, or its side output tag's."""
    if edge.tag is None:
        return edge.source.output_type
    return getattr(edge.tag, "type_info", None)


def partition_split_task(
    plan: Plan,
    first_split: int,
    node_id: int,
    run_split: Callable[[int, Iterable[object]], Iterator[pa.RecordBatch]],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function that runs split ``first_split + partition`` of the DataFrame
    source ``node_id`` on the partition's rows, with ``run_split(g, records)``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        node = next(n for n in plan.sources if n.id == node_id)
        yield from paced_iteration(run_split(first_split + partition, node.source.records(batches)))

    return run


class SparkJob:
    """What the workers need to run any task of one job (pickled into every task): the
    transport of :mod:`sparktide.runtime.execution.driver`'s sessions over Arrow rows."""

    def __init__(
        self,
        plan: Plan,
        job_parameters: dict[str, str],
        watermark_every: int | None,
        simulated: tuple[int, int] | None,
        placement: dict[int, list[int]],
        chunk: int = CHUNK,
        flush: int = FLUSH,
        fast_windows: frozenset[int] | None = None,
        chunks: bool = True,
        frame_rows: FrameRows | None = None,
    ) -> None:
        self.plan = plan
        # the collect sinks whose records the tasks write as typed frame columns
        self.frame_rows = frame_rows
        # the window nodes the path choice runs on the window fast path (None: each operator
        # applies the rule with the default options)
        self.fast_windows = fast_windows
        self.chunks = chunks  # split readers hand chunks on (sparktide.execution.chunks)
        self.job_parameters = job_parameters
        self.every = watermark_every
        self.simulated = SimulatedTime.of(simulated)
        self.placement = placement  # parallelism -> pkey per target subtask
        self.chunk = chunk  # items per shipped row
        self.flush = flush  # items a task holds before it ships them
        self.range_splits: list[int] = []  # global indexes of the splits run by spark.range
        # values as typed Arrow columns: None where measured faster, True/False always/never
        self.arrow_values = _ARROW_VALUES
        self._codecs: dict[int, dict[int, ValueCodec | None]] = {}  # per stage, per input
        self._sink_codecs: dict[int, ValueCodec | None] = {}  # per collect sink node id

    @property
    def schema(self) -> str | StructType:
        """The Spark schema of the tasks' rows (``mapInArrow``'s output)."""
        return SPARK_SCHEMA if self.frame_rows is None else self.frame_rows.spark_schema()

    # ------------------------------------------------------------------ helpers

    def _codec(self, edges: list[Edge]) -> ValueCodec | None:
        """The value codec of what ``edges`` carry: their declared type when they share one."""
        if self.arrow_values is False or not edges:
            return None
        declared = {_declared_type(e) for e in edges}
        if len(declared) != 1:
            return None
        return ValueCodec.of(declared.pop(), always=bool(self.arrow_values))

    def stage_codecs(self, stage_index: int) -> dict[int, ValueCodec | None]:
        """Per input (1, 2) of a stage: the codec of its values (:func:`pack_entries`)."""
        codecs = self._codecs.get(stage_index)
        if codecs is None:
            edges = self.plan.stages[stage_index].input_edges
            codecs = {i: self._codec([e for e in edges if e.input_index == i]) for i in (1, 2)}
            self._codecs[stage_index] = codecs
        return codecs

    def sink_codec(self, node_id: int) -> ValueCodec | None:
        """The codec of the records a collect sink receives (:func:`pack_collected`)."""
        if node_id not in self._sink_codecs:
            self._sink_codecs[node_id] = self._codec(self.plan.edges_in.get(node_id, []))
        return self._sink_codecs[node_id]

    def tasks(self, source_clock: ProcessingTimeService) -> JobTasks:
        """The task builder of one worker task (sinks and prints collect for the driver)."""
        return JobTasks(
            self.plan,
            self.job_parameters,
            source_clock,
            ship_prints=True,
            frame_sinks=True,
            fast_windows=self.fast_windows,
            chunks=self.chunks,
            value_sinks=frozenset() if self.frame_rows is None else self.frame_rows.unordered,
            column_sinks=frozenset() if self.frame_rows is None else self.frame_rows.ordered,
        )

    def rows(self, tasks: JobTasks, rounds: int, final: bool = True) -> pa.RecordBatch:
        """The task's output as Arrow rows: its exchange entries for each (stage, subtask), its
        collected records and printed lines, in chunks of at most ``CHUNK`` items, each chunk in
        position order (entries: :func:`pack_entries`, collected records:
        :func:`pack_collected`, printed lines: a pickled list of ``(position, line)``), and its
        metrics (a pickled :class:`~sparktide.spark.shipments.TaskMetrics`). The records of a
        sink in ``frame_rows`` are rows of typed columns instead (:mod:`.frame_rows`)."""
        columns: tuple[list[object], ...] = ([], [], [], [], [])

        def put(*row: object) -> None:
            for column, value in zip(columns, row, strict=True):
                column.append(value)

        def add(
            stage: int,
            target: int,
            pkey: int,
            items: list[_Shipped],
            pack: Callable[[list[_Shipped]], bytes] = _pickled,
        ) -> None:
            for i in range(0, len(items), self.chunk):
                chunk = items[i : i + self.chunk]
                put(stage, target, pkey, encode_position(_first_position(chunk)), pack(chunk))
            items.clear()

        for stage in self.plan.stages:
            keys = self.placement[stage.parallelism]
            codecs = self.stage_codecs(stage.index)
            for target, entries in enumerate(tasks.buffers[stage.index]):
                for first, payload in entries.packed_runs(self.chunk, codecs):  # by columns
                    put(stage.index, target, keys[target], encode_position(first), payload)
                # timers fire in time order, not key group order: one sort of an almost
                # ordered list (linear), so the task's chunks form one run in position order
                entries.sort(key=_by_position_and_channel)
                add(
                    stage.index, target, keys[target], entries, partial(pack_entries, codecs=codecs)
                )
        framed: list[pa.RecordBatch] = []
        for op in tasks.operators:
            if isinstance(op, CollectSinkOperator) and isinstance(op.sink, RecordCollector):
                node_id = op.sink.node_id
                if not self._framed(op.sink, framed):
                    pack = partial(pack_collected, codec=self.sink_codec(node_id))
                    add(Shipment.COLLECTED.value, node_id, 0, op.sink.out, pack)
            elif isinstance(op, PrintSinkOperator) and op.shipped:
                add(Shipment.PRINTED.value, 0, 0, op.shipped)
        if final:
            metrics = TaskMetrics(rounds, TaskCounts.of(tasks.metrics()), tasks.user_metrics())
            put(Shipment.METRICS.value, 0, 0, b"", pickle.dumps(metrics))
        return self._batch(columns, framed=framed)

    def _framed(self, sink: RecordCollector, framed: list[pa.RecordBatch]) -> bool:
        """Whether ``sink`` is a frame target's: then the typed rows of its records are added
        to ``framed`` and the sink emptied."""
        frame_rows, out = self.frame_rows, sink.out
        if frame_rows is None or sink.node_id not in frame_rows:
            return False
        framed.extend(frame_rows.collected(sink.node_id, out))
        sink.clear()
        return True

    def _batch(
        self,
        columns: Sequence[list[object]],
        errors: list[str | None] | None = None,
        framed: Sequence[pa.RecordBatch] = (),
    ) -> pa.RecordBatch:
        """One batch of the rows of ``columns`` (:func:`arrow_row_schema`'s), in the job's
        schema, followed by the typed rows ``framed``; ``errors``: the failure text per row."""
        import pyarrow as pa

        if self.frame_rows is None:
            types = (pa.int32(), pa.int32(), pa.int64(), pa.binary(), pa.binary())
            return pa.RecordBatch.from_arrays(
                [pa.array(c, t) for c, t in zip(columns, types, strict=True)],
                schema=arrow_row_schema(),
            )
        rows = self.frame_rows.rows(columns, errors or [None] * len(columns[0]))
        if not framed:
            return rows
        if not columns[0] and len(framed) == 1:
            return framed[0]
        return pa.Table.from_batches([rows, *framed]).combine_chunks().to_batches()[0]

    def driver_row(self, shipment: Shipment, target: int, payload: bytes) -> pa.RecordBatch:
        """One Arrow row for the driver carrying ``payload``."""
        return self._batch(([shipment.value], [target], [0], [b""], [payload]))

    # ------------------------------------------------------------------ failures

    def failed(
        self, tasks: JobTasks, exc: Exception, stage_index: int, batch: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of a task whose user function raised ``exc`` (see
        :mod:`sparktide.spark.failures`) in micro-batch ``batch`` (``None``: a bounded run);
        what the task holds is dropped. An exception raised outside the operators is raised as
        it is."""
        context = tasks.describe(exc, batch)
        if context is None:
            raise exc
        position = encode_position(tasks.cursor.position)
        yield self.failure_rows(stage_index, position, failure_payload(exc, context))

    def failure_rows(self, stage_index: int, position: bytes, payload: bytes) -> pa.RecordBatch:
        """The failure for the driver, and for every subtask of the stages after
        ``stage_index`` a mark that carries it (:func:`upstream_failed`): such a subtask
        processes nothing and passes the failure on, so every frame of the job holds it."""
        rows = [(Shipment.FAILED.value, 0, 0, position, payload)]
        mark = upstream_failed(position, payload)
        for stage in self.plan.stages:
            if stage.index > stage_index:
                keys = self.placement[stage.parallelism]
                rows.extend((stage.index, t, keys[t], b"", mark) for t in range(stage.parallelism))
        errors: list[str | None] = [None] * len(rows)
        if self.frame_rows is not None:  # what a frame of the job fails with
            errors[0] = failure_text(payload)
        return self._batch([list(c) for c in zip(*rows, strict=True)], errors)

    # ------------------------------------------------------------------ source stage

    def _buffered(self, tasks: JobTasks) -> int:
        """How many items the task holds for shipping."""
        n = sum(buffer.held() for per_stage in tasks.buffers.values() for buffer in per_stage)
        for op in tasks.operators:
            if isinstance(op, CollectSinkOperator) and isinstance(op.sink, RecordCollector):
                n += op.sink.held
            elif isinstance(op, PrintSinkOperator) and op.shipped:
                n += len(op.shipped)
        return n

    def flush_rows(self, tasks: JobTasks) -> Iterator[pa.RecordBatch]:
        """Ship what the task holds once it reaches ``flush`` items (bounded worker memory)."""
        if self._buffered(tasks) >= self.flush:
            yield self.rows(tasks, 0, final=False)

    def run_split(
        self, g: int, records: Iterable[object] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Source split ``g``: its rounds, shipping its output as it grows."""
        clock = source_clock(self.simulated)
        tasks = self.tasks(clock)
        try:
            session = SplitSession(tasks.build_split(g, records), self.every, self.flush)
            session.open()
            loop = RoundLoop([session], clock, self.simulated)
            for _ in loop.steps():
                yield from self.flush_rows(tasks)
            session.finish()
            session.close()
            yield self.rows(tasks, loop.rounds)
        except Exception as exc:
            yield from self.failed(tasks, exc, SOURCE_STAGE)

    def source_task(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Runs the splits listed in ``self.range_splits`` (one per ``spark.range`` row)."""
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from paced_iteration(self.run_split(self.range_splits[int(i)]))

    def frame_source_task(
        self, first_split: int, node_id: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """Runs split ``first_split + partition`` of a DataFrame source on its partition."""
        return partition_split_task(self.plan, first_split, node_id, self.run_split)

    # ------------------------------------------------------------------ exchange stages

    def run_subtask(
        self, stage_index: int, target: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        """Subtask ``target`` of a stage. ``rows``: its input chunks ``(first position,
        payload)`` sorted by first position; they are merged by position and processed as soon
        as no later chunk can precede them, and the output is shipped as it grows, so a worker
        holds about ``flush`` entries at a time, not the whole input and output."""
        tasks = self.tasks(source_clock(self.simulated))
        try:
            yield from self._run_subtask(tasks, stage_index, target, rows)
        except Exception as exc:
            yield from self.failed(tasks, exc, stage_index)

    def _run_subtask(
        self, tasks: JobTasks, stage_index: int, target: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        stage = self.plan.stages[stage_index]
        clock, mailbox = subtask_clock(self.simulated)
        session = SubtaskSession(tasks.build_subtask(stage, target, clock, mailbox), self.simulated)
        session.open()
        merge = ChunkMerge(self.flush)
        for _, payload in rows:
            failed = failure_of_mark(payload)
            if failed is not None:  # sorted first: nothing was processed yet
                clock.shutdown()
                yield self.failure_rows(stage_index, *failed)
                return
            ready = merge.add(unpack_chunk(payload))
            if ready:  # what no chunk from here on can precede
                session.process_chunks(ready)
                yield from self.flush_rows(tasks)
        session.process_chunks(merge.drain())
        session.finish()
        session.close()
        yield self.rows(tasks, session.rounds)

    def stage_task(
        self, stage_index: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            def rows() -> Iterator[tuple[int, bytes, bytes]]:
                for batch in batches:
                    targets = batch.column("target").to_pylist()
                    positions, payloads = batch.column("position"), batch.column("payload")
                    for i, target in enumerate(targets):  # one chunk's bytes at a time
                        yield target, positions[i].as_py(), payloads[i].as_py()

            for target, group in groupby(rows(), key=itemgetter(0)):
                subtask = self.run_subtask(stage_index, target, (row[1:] for row in group))
                yield from paced_iteration(subtask, release_at_end=True)

        return run
