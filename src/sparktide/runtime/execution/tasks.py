"""Build the operator instances of a planned job and run its tasks (shared by all runners).

* :class:`SplitTask`: one source split and its chain of split-local operators (the source stage
  runs once per split). Its driver reads the split's records, assigns timestamps, runs the
  split's watermark generator and writes to the exchange buffers of the next stages.
* :class:`SubtaskTask`: one parallel instance of an exchange stage. :meth:`SubtaskTask.process`
  takes the stage's buffered input, in position order, through the valves into the entry
  operator; what the stage emits goes to the buffers of the following stages.

The round driver (:mod:`sparktide.runtime.execution.driver`) runs them; a runner decides where
tasks run and how buffers move: the local runtime keeps everything in one process; the Spark
runner builds one task per Spark task and ships buffers through shuffles. Channel numbers are
computed from the plan alone, so every process agrees on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, cast

from sparktide.core.metrics import MetricsReport
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.execution.chunk_path import chunk_target, reader_owner, takes_columns
from sparktide.runtime.execution.exchange_buffer import ExchangeBuffer
from sparktide.runtime.execution.planner import Plan, Stage
from sparktide.runtime.execution.protocol import (
    NO_KEY,
    Cursor,
    Entry,
    Mark,
    Phase,
    SourceTagger,
    barrier,
)
from sparktide.runtime.execution.wiring import (
    ChainInput,
    ExchangeWriter,
    NodeOutput,
    ValveOutput,
)
from sparktide.runtime.failed_records import install as install_failed_records
from sparktide.runtime.failures import FailureContext, KeyByStep, describe_failure
from sparktide.runtime.graph import Edge, Node, OperatorNode, ProcessingNode, SinkNode, SourceNode
from sparktide.runtime.mailbox import Mailbox
from sparktide.runtime.operators.base import AbstractStreamOperator, OperatorSetup
from sparktide.runtime.operators.co_process import KeyedTwoInputOperator
from sparktide.runtime.operators.deferred import DeferredOutputOperator
from sparktide.runtime.operators.simple import (
    CollectSinkOperator,
    FrameCollector,
    PrintSinkOperator,
    RecordCollector,
    ValueCollector,
)
from sparktide.runtime.operators.timestamps import TimestampsAndWatermarksOperator
from sparktide.runtime.operators.window import WindowOperator
from sparktide.runtime.output import Output
from sparktide.runtime.processing_time import ManualProcessingTimeService, ProcessingTimeService
from sparktide.runtime.source_reader import SourceFunctionDriver, SplitReader
from sparktide.runtime.valve import StatusWatermarkValve

if TYPE_CHECKING:
    from collections.abc import Hashable

    from rocksdict import Rdict

__all__ = ["SUMMED_METRICS", "JobTasks", "SplitDriver", "SplitTask", "SubtaskTask", "splits_of"]

_RECORD = Phase.RECORD.value
_EVENT_TIMERS = Phase.EVENT_TIMERS.value
_PROCESSING_TIME = Phase.PROCESSING_TIME.value
_NO_MAIL: tuple[()] = ()  # a stage without a mailbox: never a pending mail


class SplitDriver(Protocol):
    """What reads a split (``SplitReader`` for a split, ``SourceFunctionDriver`` for a
    ``SourceFunction``)."""

    @property
    def records_read(self) -> int: ...

    def read_up_to(self, n: int) -> int: ...

    def emit_periodic(self) -> None: ...

    def finish(self) -> None: ...


SUMMED_METRICS = (
    "late_records_dropped",
    "late_records_side_output",
    "timers_fired",
    "failed_records",
)
"""The task metrics (:meth:`JobTasks.metrics`) that add up over tasks."""


def splits_of(node: SourceNode) -> list[object]:
    """The splits of a source node (:meth:`SourceNode.splits`: a SourceFunction is one
    split)."""
    return node.splits()


class SplitTask:
    """A source split: its driver (SplitReader or SourceFunctionDriver), tagger and the
    operators chained after it (``watermark_operators``: the timestamp/watermark ones)."""

    def __init__(self, index: int, driver: SplitDriver, tagger: SourceTagger) -> None:
        self.index = index
        self.driver = driver
        self.tagger = tagger
        self.operators: list[AbstractStreamOperator] = []
        self.watermark_operators: list[TimestampsAndWatermarksOperator] = []

    def emit_periodic(self) -> None:
        """End of a round: every watermark generator of the split emits periodically (the
        source's own, then those of ``assign_timestamps_and_watermarks`` in chain order)."""
        self.driver.emit_periodic()
        for op in self.watermark_operators:
            self.tagger.mark(Mark.CHAIN_WATERMARK)
            op.emit_periodic()


class SubtaskTask:
    """One parallel instance of an exchange stage."""

    def __init__(
        self,
        stage: Stage,
        index: int,
        cursor: Cursor,
        channels: dict[int, int],
        clock: ProcessingTimeService,
        mailbox: Mailbox | None,
    ) -> None:
        self.stage = stage
        self.index = index
        self.cursor = cursor
        self.operators: dict[int, AbstractStreamOperator] = {}
        self.entry: AbstractStreamOperator = cast(AbstractStreamOperator, None)  # set by build
        self.mailbox = mailbox
        self.clock = clock
        self.valve_outputs: dict[int, ValveOutput] = {}
        self.valves = {
            i: StatusWatermarkValve(max(1, channels.get(i, 0)))
            for i in ((1, 2) if stage.two_input else (1,))
        }

    def process(self, entries: Iterable[Entry]) -> None:
        """Process entries (:data:`~.protocol.Entry`), in order: a list of them, or a chunk's
        columns (:meth:`~.protocol.EntryChunk.columns`, no tuple kept per entry)."""
        cursor = self.cursor
        op = self.entry
        backend = op.keyed_state_backend
        cursor.enter_stage(backend)
        valves, vouts = self.valves, self.valve_outputs
        mailbox = self.mailbox
        pending = _NO_MAIL if mailbox is None else mailbox.pending()
        stage = self.stage
        keyed = stage.keyed
        process1, process2 = self._processors(op)
        if keyed:
            set_key: Callable[[Hashable, int], None] = backend.set_current_key_and_group  # type: ignore[union-attr]
            # the key is set by assignment while the backend has no hooks (key_hooks)
            hooks = backend.key_hooks()  # type: ignore[union-attr]
            kgs = backend.key_group_range  # type: ignore[union-attr]
            first, last = kgs.start, kgs.end
        record, event_timers = _RECORD, _EVENT_TIMERS
        for tag, channel, index, element, key, kg in entries:
            cursor.position = tag
            cursor.n = 0
            if type(element) is StreamRecord:
                cursor.phase = record
                cursor.channel = channel
                if keyed and kg is not None:  # a broadcast input's records carry no key
                    if hooks or not first <= kg <= last:
                        set_key(key, kg)
                    else:
                        backend.current_key = key  # type: ignore[union-attr]
                        backend.current_key_group = kg  # type: ignore[union-attr]
                (process1 if index == 1 else process2)(element)
            elif type(element) is Watermark:
                cursor.phase = event_timers
                valves[index].input_watermark(element.timestamp, channel, vouts[index])
            else:
                cursor.phase = event_timers
                valves[index].input_watermark_status(
                    cast(WatermarkStatus, element), channel, vouts[index]
                )
            if pending:
                cursor.phase = _PROCESSING_TIME
                while (mail := mailbox.try_take()) is not None:  # type: ignore[union-attr]
                    mail()

    def _processors(
        self, op: AbstractStreamOperator
    ) -> tuple[Callable[[StreamRecord], None], Callable[[StreamRecord], None]]:
        """What takes a record of input 1 and of input 2 (the key already set, keyed)."""
        stage = self.stage
        if stage.keyed:
            if stage.two_input:
                two = cast(KeyedTwoInputOperator, op)
                return two.process_keyed_element1, two.process_keyed_element2
            return op.process_keyed_element, op.process_keyed_element
        if stage.two_input:
            co = cast(KeyedTwoInputOperator, op)  # a non-keyed two-input operator
            return co.process_element1, co.process_element2
        return op.process_element, op.process_element

    def advance_clock(self, now: int, round: int) -> None:
        """Move a simulated clock to ``now``, firing due processing-time timers at the barrier
        of ``round`` (:func:`~.protocol.barrier`)."""
        cursor = self.cursor
        cursor.enter_stage(self.entry.keyed_state_backend)
        cursor.at(barrier(round), Phase.PROCESSING_TIME)
        clock = self.clock
        if isinstance(clock, ManualProcessingTimeService) and (
            clock.get_current_processing_time() < now
        ):
            clock.set_current_time(now)


class JobTasks:
    """Builds tasks of one planned job; ``buffers[stage][subtask]`` receive exchanged entries."""

    def __init__(
        self,
        plan: Plan,
        job_parameters: dict[str, str],
        source_clock: ProcessingTimeService | None,
        ship_prints: bool = False,
        frame_sinks: bool = False,
        fast_windows: frozenset[int] | None = None,
        chunks: bool = True,
        value_sinks: frozenset[int] = frozenset(),
        column_sinks: frozenset[int] = frozenset(),
    ) -> None:
        self.plan = plan
        # the collect sinks whose records the runner needs as values only (ValueCollector)
        self.value_sinks = value_sinks
        # the collect sinks whose records the runner writes as typed columns with their
        # positions, taking records held as columns too (FrameCollector)
        self.column_sinks = column_sinks
        # whether split readers hand chunks through the chained stateless operators
        # (:mod:`~sparktide.runtime.execution.chunk_path`)
        self.chunks = chunks
        # the window nodes that take the window fast path, as the job's path choice decided
        # (:attr:`~sparktide.runtime.execution.path.PathChoice.fast_windows`); None: each
        # window operator applies the rule with the default options
        self.fast_windows = fast_windows
        self.ship_prints = ship_prints  # print sinks keep their lines for the runner
        self.frame_sinks = frame_sinks  # sinks with a frame_writer collect for the runner
        self.job_parameters = job_parameters
        self.source_clock = source_clock
        self.cursor = Cursor()
        self.operators: list[AbstractStreamOperator] = []
        # id of each operator, split reader and keyed exchange writer -> its name
        self.names: dict[int, str | KeyByStep] = {}
        self.buffers: dict[int, list[ExchangeBuffer]] = {
            s.index: [ExchangeBuffer() for _ in range(s.parallelism)] for s in plan.stages
        }
        self.split_counts = [len(splits_of(n)) for n in plan.sources]
        self.reach = self._split_reach()
        self._base, self.channels = self._channel_layout()

    # ------------------------------------------------------------------ layout

    @property
    def num_splits(self) -> int:
        return sum(self.split_counts)

    def split_location(self, g: int) -> tuple[SourceNode, object]:
        """The source node and split of global split index ``g``."""
        for node, n in zip(self.plan.sources, self.split_counts, strict=True):
            if g < n:
                return node, splits_of(node)[g]
            g -= n
        raise IndexError(f"no split {g}")

    def _split_reach(self) -> dict[int, list[int]]:
        """For each source-stage node: the global indexes of the splits that reach it."""
        plan = self.plan
        reach: dict[int, list[int]] = {}
        g = 0
        for source, n in zip(plan.sources, self.split_counts, strict=True):
            reach[source.id] = list(range(g, g + n))
            g += n
        for node in plan.nodes:
            if node.id in plan.source_stage and isinstance(node, ProcessingNode):
                seen: list[int] = []
                for e in plan.edges_in[node.id]:
                    seen.extend(s for s in reach.get(e.source.id, []) if s not in seen)
                reach[node.id] = seen
        return reach

    def _channel_layout(self) -> tuple[dict[tuple[int, int], int], dict[int, dict[int, int]]]:
        base: dict[tuple[int, int], int] = {}
        counts: dict[int, dict[int, int]] = {}
        for stage in self.plan.stages:
            per_input = counts.setdefault(stage.index, {})
            for k, edge in enumerate(stage.input_edges):
                src = edge.source
                n = (
                    len(self.reach[src.id])
                    if src.id in self.plan.source_stage
                    else self.plan.stage_of[src.id].parallelism
                )
                base[(stage.index, k)] = per_input.get(edge.input_index, 0)
                per_input[edge.input_index] = per_input.get(edge.input_index, 0) + n
        return base, counts

    def _writer(self, consumer: Node, edge: Edge, upstream_index: int) -> ExchangeWriter:
        stage = self.plan.stage_of[consumer.id]
        k = next(i for i, e in enumerate(stage.input_edges) if e is edge)
        writer = ExchangeWriter(
            self.buffers[stage.index],
            stage.parallelism,
            stage.max_parallelism,
            edge,
            self._base[(stage.index, k)] + upstream_index,
            self.cursor,
        )
        if edge.key_selector is not None:  # its key selector's failures: the key_by's
            self.names[id(writer)] = KeyByStep(consumer.name)
        return writer

    # ------------------------------------------------------------------ operators

    def _make_operator(
        self,
        node: ProcessingNode,
        setup: OperatorSetup,
        clock: ProcessingTimeService | None,
        key_selector: Callable[[object], Hashable] | None,
        state_database: Rdict | None = None,
    ) -> AbstractStreamOperator:
        op: AbstractStreamOperator
        if node.id in self.value_sinks:
            op = CollectSinkOperator(ValueCollector([], node.id))
        elif node.id in self.column_sinks:
            op = CollectSinkOperator(FrameCollector([], node.id))
        elif self.frame_sinks and isinstance(node, SinkNode) and node.frame_writer is not None:
            op = CollectSinkOperator(RecordCollector([], node.id))
        else:
            op = node.operator_factory()  # type: ignore[misc]
        if self.fast_windows is not None and isinstance(op, WindowOperator):
            op.fast_path = node.id in self.fast_windows
        # output set later
        op.setup(None, clock, setup, key_selector, state_database)  # type: ignore[arg-type]
        failed_records = node.failed_records if isinstance(node, OperatorNode) else None
        if isinstance(op, DeferredOutputOperator):
            if failed_records is not None:
                raise ValueError(
                    f"with_failed_records() is not supported on the {op.kind} {node.name!r}: "
                    f"its failures surface after later records; {op.failure_advice}"
                )
            op.cursor = self.cursor  # its outputs take their records' positions
        if failed_records is not None:
            install_failed_records(op, failed_records, node.name)
        if isinstance(op, CollectSinkOperator):
            collector = op.sink
            if isinstance(collector, RecordCollector):
                collector.position = self.cursor.out
        elif self.ship_prints and isinstance(op, PrintSinkOperator):
            op.shipped = []
            op.position_of = self.cursor.out
        self.operators.append(op)
        self.names[id(op)] = node.name
        return op

    def _output_for(
        self, node: Node, target_for: Callable[[ProcessingNode, Edge], Output]
    ) -> Output:
        main: list[Output] = []
        side: dict[object, list[Output]] = {}
        for consumer, edge in self.plan.consumers[node.id]:
            target = target_for(consumer, edge)
            (main if edge.tag is None else side.setdefault(edge.tag, [])).append(target)
        typed = isinstance(node, ProcessingNode) and node.coerce_output
        out = NodeOutput(main, side, node.output_type if typed else None)
        return out if out.needed else main[0]

    def build_split(self, g: int, records: Iterable[object] | None = None) -> SplitTask:
        """The task of global split ``g`` (``records`` overrides ``source.read_split``)."""
        plan = self.plan
        source, split = self.split_location(g)
        instances: dict[int, AbstractStreamOperator] = {}
        setup = OperatorSetup(name=source.name, subtask_index=0, parallelism=1)

        def target(consumer: ProcessingNode, edge: Edge) -> Output:
            if consumer.id in plan.source_stage:
                op = instances.get(consumer.id)
                if op is None:
                    op = self._make_operator(consumer, setup, self.source_clock, None)
                    instances[consumer.id] = op
                    op.output = self._output_for(consumer, target)
                return ChainInput(op, edge.input_index)
            return self._writer(consumer, edge, self.reach[edge.source.id].index(g))

        built = len(self.operators)
        tagger = SourceTagger(self.cursor, g, None)
        tagger.downstream = self._output_for(source, target)
        chain = [op for _, op in sorted(instances.items())]
        driver: SplitDriver
        if hasattr(source.source, "run"):
            driver = SourceFunctionDriver(source.source, tagger, self.source_clock)
        else:
            driver = SplitReader(
                source.source.read_split(split) if records is None else records,
                source.watermark_strategy,
                self.source_clock,
                tagger,
                chunked=self.chunks,
            )
            if driver.chunked:
                owner = reader_owner(source.name)
                tagger.chunk_downstream = chunk_target(tagger.downstream, owner, tagger, self.names)
                if takes_columns(tagger.downstream):
                    driver.take_columns()
        self.names[id(driver)] = source.name
        task = SplitTask(g, driver, tagger)
        task.operators = self.operators[built:]  # in the order they were built
        task.watermark_operators = [
            op for op in chain if isinstance(op, TimestampsAndWatermarksOperator)
        ]
        return task

    def build_subtask(
        self,
        stage: Stage,
        index: int,
        clock: ProcessingTimeService,
        mailbox: Mailbox | None,
        state_database: Rdict | None = None,
    ) -> SubtaskTask:
        """Subtask ``index`` of ``stage``, with its processing-time ``clock`` and ``mailbox``;
        ``state_database``: the RocksDB database (its owner keeps it open across batches) in
        which the stage's keyed entry operator keeps its state and timers."""
        channels = self.channels.get(stage.index, {})
        task = SubtaskTask(stage, index, self.cursor, channels, clock, mailbox)
        setup = OperatorSetup(
            name=stage.entry.name,
            subtask_index=index,
            parallelism=stage.parallelism,
            max_parallelism=stage.max_parallelism,
            job_parameters=self.job_parameters,
            state_backend=self.plan.state_backend,
            key_type=stage.key_type,
            uid=stage.entry.uid,
        )
        ks1 = next((e.key_selector for e in stage.input_edges if e.input_index == 1), None)
        ks2 = next((e.key_selector for e in stage.input_edges if e.input_index == 2), None)
        for pos, node in enumerate(stage.nodes):
            keyed_entry = pos == 0 and stage.keyed
            if keyed_entry:
                op = self._make_operator(node, setup, clock, ks1, state_database)
            else:
                op = self._make_operator(node, setup, clock, None)
            if keyed_entry:
                op.key_selector2 = ks2  # type: ignore[attr-defined]  # two-input operators
            task.operators[node.id] = op
        task.entry = task.operators[stage.entry.id]

        def target(consumer: ProcessingNode, edge: Edge) -> Output:
            if consumer.id in task.operators:
                return ChainInput(task.operators[consumer.id], edge.input_index)
            return self._writer(consumer, edge, index)

        for node in stage.nodes:
            task.operators[node.id].output = self._output_for(node, target)
        task.valve_outputs = {i: ValveOutput(ChainInput(task.entry, i)) for i in task.valves}
        return task

    # ------------------------------------------------------------------ failures

    def describe(self, exc: BaseException, batch: int | None = None) -> FailureContext | None:
        """What this job's tasks were doing when ``exc`` was raised (see
        :func:`~sparktide.runtime.failures.describe_failure`)."""
        cursor = self.cursor

        def key_of() -> object:
            backend = cursor.backend
            return None if cursor.source_stage or backend is NO_KEY else backend.current_key

        return describe_failure(exc, self.names, key_of, batch=batch)

    # ------------------------------------------------------------------ metrics

    def user_metrics(self) -> MetricsReport:
        """The user metrics of the built operators (``get_metrics_group()``), combined."""
        groups = [op.user_metric_group for op in self.operators if op.user_metric_group]
        return MetricsReport.of(*groups)

    def metrics(self) -> dict[str, int]:
        """Late records dropped or sent to a late-data side output (by window and interval join
        operators), timers fired, and records sent to a failed-records side output, over built
        operators."""
        late = 0
        side = 0
        fired = 0
        failed = 0
        for op in self.operators:
            failed += getattr(op, "num_failed_records", 0)
            late += getattr(op, "num_late_records_dropped", 0)
            side += getattr(op, "num_late_records_side_output", 0)
            manager = op.time_service_manager
            if manager is not None:
                for service in manager.services().values():
                    fired += service.fired_event_time + service.fired_processing_time
        return {
            "late_records_dropped": late,
            "late_records_side_output": side,
            "timers_fired": fired,
            "failed_records": failed,
        }
