"""Execute a planned job in-process, deterministically, in rounds (GUIDE §4).

A round: every source split, in split order, reads its share (all of it, or ``watermark_every``
records); then every split emits its periodic watermark; then each exchange stage, in
topological order, processes what reached it, subtask by subtask. After the last round each
split emits its final watermark (``MAX``), which fires every pending event-time timer.

**Positions.** Every element that crosses an exchange carries a position tag: for a source
element ``(round, phase, split, seq, sub)``; an element emitted while a stage processes an input
with tag ``t`` gets ``t + (phase, key_group)`` (phase 0: from a record, 1: from timers fired by
a watermark, 2: the forwarded watermark, 3: processing time). A stage sorts its input by tag
(stably) before processing it. Since a key group always processes its elements in tag order
whatever subtask hosts it, every key sees the same input, watermarks included, in the same order
at any parallelism, and so produces the same output; collected results are sorted by tag too.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from sparktide.local.planner import Plan, Stage, plan_job
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.graph import Edge, Node
from sparktide.runtime.keygroups import assign_to_key_group
from sparktide.runtime.mailbox import Mailbox
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.operators.simple import CollectSinkOperator
from sparktide.runtime.processing_time import (
    ManualProcessingTimeService,
    SystemProcessingTimeService,
)
from sparktide.runtime.valve import StatusWatermarkValve

__all__ = ["LocalExecutor"]

_by_tag = itemgetter(0)


class _Cursor:
    """The position of the element being processed; outputs are tagged from it."""

    __slots__ = ("backend", "phase", "tag")

    def __init__(self) -> None:
        self.tag: tuple = ()
        self.phase = 0
        self.backend: Any = None

    def out(self) -> tuple:
        backend = self.backend
        if backend is None:
            return self.tag
        kg = backend.current_key_group if self.phase else 0
        return (*self.tag, self.phase, kg or 0)

    def watermark_out(self) -> tuple:
        if self.backend is None:
            return self.tag
        return (*self.tag, 2, 0)


class _SourceTagger:
    """First output of a split's driver: stamps each element with its source position."""

    __slots__ = ("cursor", "downstream", "phase", "round", "seq", "split")

    def __init__(self, cursor: _Cursor, split: int, downstream: Any) -> None:
        self.cursor = cursor
        self.split = split
        self.downstream = downstream
        self.round = 0
        self.phase = 0
        self.seq = 0

    def collect(self, record: StreamRecord) -> None:
        self.seq += 1
        self.cursor.tag = (self.round, self.phase, self.split, self.seq, 0)
        self.downstream.collect(record)

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        self.downstream.collect_side(tag, record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.cursor.tag = (self.round, self.phase, self.split, self.seq, 1)
        self.downstream.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.cursor.tag = (self.round, self.phase, self.split, self.seq, 1)
        self.downstream.emit_watermark_status(status)


class _NodeOutput:
    """The output of one operator instance: main targets, side-output targets, coercion."""

    __slots__ = ("_coerce", "_main", "_side", "_where")

    def __init__(self, main: list[Any], side: dict[Any, list[Any]], output_type: Any) -> None:
        self._main = main
        self._side = side
        coerce = getattr(output_type, "coerce", None)
        pickled = type(output_type).__name__.startswith("Pickled")
        self._coerce = coerce if coerce is not None and not pickled else None
        self._where = "output value"

    def collect(self, record: StreamRecord) -> None:
        if self._coerce is not None:
            record.value = self._coerce(record.value, self._where)
        main = self._main
        if len(main) == 1:
            main[0].collect(record)
            return
        for i, target in enumerate(main):
            target.collect(record if i == 0 else StreamRecord(record.value, record.timestamp))

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        targets = self._side.get(tag)
        if not targets:
            return
        for i, target in enumerate(targets):
            target.collect(record if i == 0 else StreamRecord(record.value, record.timestamp))

    def emit_watermark(self, watermark: Watermark) -> None:
        for target in self._main:
            target.emit_watermark(watermark)
        for targets in self._side.values():
            for target in targets:
                target.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        for target in self._main:
            target.emit_watermark_status(status)
        for targets in self._side.values():
            for target in targets:
                target.emit_watermark_status(status)


class _ChainInput:
    """Feeds a chained operator's input ``index`` (1 or 2)."""

    __slots__ = ("collect", "emit_watermark", "emit_watermark_status")

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        """A side output nobody reads."""

    def __init__(self, op: Any, index: int) -> None:
        if index == 2:
            self.collect = op.process_element2
            self.emit_watermark = op.process_watermark2
            self.emit_watermark_status = op.process_watermark_status2
        elif hasattr(op, "process_element1"):
            self.collect = op.process_element1
            self.emit_watermark = op.process_watermark1
            self.emit_watermark_status = op.process_watermark_status1
        else:
            self.collect = op.process_element
            self.emit_watermark = op.process_watermark
            self.emit_watermark_status = op.process_watermark_status


class _StageInputs:
    """The buffers of an exchange stage: one list per subtask of (tag, channel, input, element,
    key, key_group) entries, and how many channels each input has."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.buffers: list[list[tuple]] = [[] for _ in range(stage.parallelism)]
        self.channels = {1: 0, 2: 0}
        self.channel_base: dict[tuple[int, int], int] = {}  # (edge id, upstream index) -> channel

    def channel(self, edge: Edge, upstream_index: int) -> int:
        key = (id(edge), upstream_index)
        ch = self.channel_base.get(key)
        if ch is None:
            ch = self.channels[edge.input_index]
            self.channels[edge.input_index] = ch + 1
            self.channel_base[key] = ch
        return ch


class _ExchangeWriter:
    """Sends an operator's output across an exchange to the subtasks of a stage."""

    __slots__ = (
        "_buffers",
        "_channel",
        "_cursor",
        "_index",
        "_key_selector",
        "_kg_cache",
        "_maxp",
        "_next",
        "_parallelism",
        "_partitioning",
    )

    def __init__(self, inputs: _StageInputs, edge: Edge, channel: int, cursor: _Cursor) -> None:
        self._buffers = inputs.buffers
        self._parallelism = inputs.stage.parallelism
        self._maxp = inputs.stage.max_parallelism
        self._partitioning = edge.partitioning
        self._key_selector = edge.key_selector
        self._index = edge.input_index
        self._channel = channel
        self._cursor = cursor
        self._kg_cache: dict[Any, int] = {}
        self._next = channel % self._parallelism

    def collect(self, record: StreamRecord) -> None:
        part = self._partitioning
        if part == "hash":
            key = self._key_selector(record.value)  # type: ignore[misc]
            try:
                kg = self._kg_cache[key]
            except KeyError:
                kg = assign_to_key_group(key, self._maxp)
                if len(self._kg_cache) > 65536:
                    self._kg_cache.clear()
                self._kg_cache[key] = kg
            except TypeError:
                kg = assign_to_key_group(key, self._maxp)
            c = self._cursor
            self._buffers[kg * self._parallelism // self._maxp].append(
                (
                    c.tag if c.backend is None else c.out(),
                    self._channel,
                    self._index,
                    record,
                    key,
                    kg,
                )
            )
            return
        if part == "global":
            target = 0
        else:
            target = self._next
            self._next = (target + 1) % self._parallelism
        self._buffers[target].append(
            (self._cursor.out(), self._channel, self._index, record, None, None)
        )

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        """A side output nobody reads (read side outputs are routed before the exchange)."""

    def emit_watermark(self, watermark: Watermark) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, watermark, None, None)
        for buf in self._buffers:
            buf.append(entry)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, status, None, None)
        for buf in self._buffers:
            buf.append(entry)


class _ValveOutput:
    __slots__ = ("emit_watermark", "emit_watermark_status")

    def __init__(self, target: _ChainInput) -> None:
        self.emit_watermark = target.emit_watermark
        self.emit_watermark_status = target.emit_watermark_status


class _Subtask:
    """One subtask of an exchange stage: its operators, valves, clock and mailbox."""

    def __init__(self, stage: Stage, index: int) -> None:
        self.stage = stage
        self.index = index
        self.operators: dict[int, Any] = {}
        self.entry: Any = None
        self.mailbox: Mailbox | None = None
        self.clock: Any = None
        self.valves: dict[int, StatusWatermarkValve] = {}
        self.valve_outputs: dict[int, _ValveOutput] = {}


class LocalExecutor:
    """Runs one job graph to completion in the calling thread."""

    def __init__(self, graph: Any, env: Any) -> None:
        self.env = env
        self.config = env.get_config()
        self.plan: Plan = plan_job(graph, env.get_parallelism(), env.get_max_parallelism())
        self.cursor = _Cursor()
        self.simulated = self.config.get_simulated_processing_time()
        self.rounds = 0
        self._operators: list[Any] = []
        self._clocks: list[Any] = []

    # ------------------------------------------------------------------ clocks

    def _new_clock(self) -> tuple[Any, Mailbox | None]:
        if self.simulated is not None:
            clock = ManualProcessingTimeService(self.simulated[0])
            self._clocks.append(clock)
            return clock, None
        mailbox = Mailbox()
        clock = SystemProcessingTimeService(mailbox)
        self._clocks.append(clock)
        return clock, mailbox

    # ------------------------------------------------------------------ wiring

    def _make_operator(
        self, node: Node, setup: OperatorSetup, clock: Any, key_selector: Any
    ) -> Any:
        op = node.operator_factory()  # type: ignore[misc]
        op.setup(None, clock, setup, key_selector)
        if isinstance(op, CollectSinkOperator):
            op._sink.position = self.cursor.out  # type: ignore[attr-defined]
        self._operators.append(op)
        return op

    def _output_for(self, node: Node, targets_for: Any) -> _NodeOutput:
        main: list[Any] = []
        side: dict[Any, list[Any]] = {}
        for consumer, edge in self.plan.consumers[node.id]:
            target = targets_for(consumer, edge)
            (main if edge.tag is None else side.setdefault(edge.tag, [])).append(target)
        typed = node.kind != "source" and node.coerce_output
        out = _NodeOutput(main, side, node.output_type if typed else None)
        if len(main) == 1 and not side and out._coerce is None:
            return main[0]  # the only target: skip the fan-out layer
        return out

    def _build(self) -> None:
        plan = self.plan
        self.inputs = {s.index: _StageInputs(s) for s in plan.stages}
        # exchange stages
        self.subtasks: dict[int, list[_Subtask]] = {}
        for stage in plan.stages:
            subs = []
            for i in range(stage.parallelism):
                sub = _Subtask(stage, i)
                sub.clock, sub.mailbox = self._new_clock()
                subs.append(sub)
            self.subtasks[stage.index] = subs
        for stage in reversed(plan.stages):
            for sub in self.subtasks[stage.index]:
                self._build_subtask(stage, sub)
        # source stage: one chain per split
        self.splits: list[tuple[Any, _SourceTagger]] = []
        source_clock, _ = self._new_clock() if self.simulated is not None else (None, None)
        if source_clock is None:
            source_clock = ManualProcessingTimeService(0)
            source_clock.get_current_processing_time = _wall_clock_ms  # type: ignore[method-assign]
        self.source_clock = source_clock
        upstream_splits = self._split_channels()
        g = 0
        for node in plan.sources:
            for split in _splits_of(node):
                self._build_split(node, split, g, upstream_splits)
                g += 1

    def _split_channels(self) -> dict[int, list[int]]:
        """For each source-stage node: the global indexes of the splits that reach it."""
        plan = self.plan
        reach: dict[int, list[int]] = {}
        g = 0
        for node in plan.sources:
            n = len(_splits_of(node))
            reach[node.id] = list(range(g, g + n))
            g += n
        for node in plan.nodes:
            if node.id in plan.source_stage and node.kind != "source":
                seen: list[int] = []
                for e in plan.edges_in[node.id]:
                    seen.extend(s for s in reach.get(e.source.id, []) if s not in seen)
                reach[node.id] = seen
        return reach

    def _build_subtask(self, stage: Stage, sub: _Subtask) -> None:
        plan = self.plan
        setup = OperatorSetup(
            name=stage.entry.name,
            subtask_index=sub.index,
            parallelism=stage.parallelism,
            max_parallelism=stage.max_parallelism,
            job_parameters=self.config.get_global_job_parameters(),
        )
        ks1 = next((e.key_selector for e in stage.input_edges if e.input_index == 1), None)
        ks2 = next((e.key_selector for e in stage.input_edges if e.input_index == 2), None)
        for pos, node in enumerate(stage.nodes):
            op = self._make_operator(
                node, setup, sub.clock, ks1 if pos == 0 and stage.keyed else None
            )
            if pos == 0 and stage.keyed:
                op.key_selector2 = ks2
            sub.operators[node.id] = op
        sub.entry = sub.operators[stage.entry.id]
        for node in stage.nodes:

            def target(consumer: Node, edge: Edge, _sub: _Subtask = sub) -> Any:
                if consumer.id in _sub.operators:
                    return _ChainInput(_sub.operators[consumer.id], edge.input_index)
                inputs = self.inputs[plan.stage_of[consumer.id].index]
                return _ExchangeWriter(inputs, edge, inputs.channel(edge, sub.index), self.cursor)

            sub.operators[node.id].output = self._output_for(node, target)
        entry_in = {i: _ChainInput(sub.entry, i) for i in (1, 2) if i == 1 or stage.two_input}
        sub.valve_outputs = {i: _ValveOutput(t) for i, t in entry_in.items()}

    def _build_split(self, source: Node, split: Any, g: int, reach: dict[int, list[int]]) -> None:
        from sparktide.datastream.source import SourceFunctionDriver, SplitReader

        plan = self.plan
        instances: dict[int, Any] = {}
        setup = OperatorSetup(name=source.name, subtask_index=0, parallelism=1)

        def target(consumer: Node, edge: Edge) -> Any:
            if consumer.id in plan.source_stage:
                op = instances.get(consumer.id)
                if op is None:
                    op = self._make_operator(consumer, setup, self.source_clock, None)
                    instances[consumer.id] = op
                    op.output = self._output_for(consumer, target)
                return _ChainInput(op, edge.input_index)
            inputs = self.inputs[plan.stage_of[consumer.id].index]
            channel = inputs.channel(edge, reach[edge.source.id].index(g))
            return _ExchangeWriter(inputs, edge, channel, self.cursor)

        tagger = _SourceTagger(self.cursor, g, None)
        tagger.downstream = self._output_for(source, target)
        if hasattr(source.source, "run"):
            driver = SourceFunctionDriver(source.source, tagger, self.source_clock)
        else:
            driver = SplitReader(
                iter(source.source.read_split(split)),
                source.watermark_strategy,
                self.source_clock,
                tagger,
            )
        self.splits.append((driver, tagger))

    # ------------------------------------------------------------------ running

    def run(self) -> dict[str, Any]:
        self._build()
        for op in self._operators:
            op.open()
        try:
            self._run_rounds()
            for op in self._operators:
                op.finish()
        finally:
            for op in self._operators:
                op.close()
            for clock in self._clocks:
                clock.shutdown()
        return self._metrics()

    def _metrics(self) -> dict[str, Any]:
        """Job metrics: rounds, late records dropped by window operators, timers fired."""
        late = 0
        fired = 0
        for op in self._operators:
            late += getattr(op, "num_late_records_dropped", 0)
            manager = op.time_service_manager
            if manager is not None:
                for service in manager.services().values():
                    fired += service.fired_event_time + service.fired_processing_time
        return {"rounds": self.rounds, "late_records_dropped": late, "timers_fired": fired}

    def _run_rounds(self) -> None:
        every = self.config.get_watermark_every()
        active = list(range(len(self.splits)))
        r = 0
        while active:
            self._advance_clocks(r)
            still = []
            for i in active:
                driver, tagger = self.splits[i]
                tagger.round, tagger.phase = r, 0
                self.cursor.backend = None
                if every is None:
                    while driver.read_up_to(65536) == 65536:
                        pass
                    done = True
                else:
                    done = driver.read_up_to(every) < every
                if not done:
                    still.append(i)
            for i in active:
                driver, tagger = self.splits[i]
                tagger.phase = 1
                self.cursor.backend = None
                if i in still:
                    driver.emit_periodic()
                else:
                    tagger.phase = 2
                    driver.finish()
            self._run_stages()
            active = still
            r += 1
        self.rounds = r

    def _advance_clocks(self, r: int) -> None:
        if self.simulated is None:
            return
        start, step = self.simulated
        now = start + r * step
        self.cursor.tag = (r, -1, 0, 0, 0)
        self.cursor.phase = 3
        self.cursor.backend = None
        if self.source_clock.get_current_processing_time() < now:
            self.source_clock.set_current_time(now)
        for stage in self.plan.stages:
            for sub in self.subtasks[stage.index]:
                self.cursor.backend = sub.entry.keyed_state_backend or _NO_KEY
                if sub.clock.get_current_processing_time() < now:
                    sub.clock.set_current_time(now)

    def _run_stages(self) -> None:
        cursor = self.cursor
        for stage in self.plan.stages:
            inputs = self.inputs[stage.index]
            for sub in self.subtasks[stage.index]:
                entries = inputs.buffers[sub.index]
                if not entries:
                    continue
                inputs.buffers[sub.index] = []
                entries.sort(key=_by_tag)
                self._process(stage, sub, entries, inputs, cursor)

    def _process(
        self,
        stage: Stage,
        sub: _Subtask,
        entries: list[tuple],
        inputs: _StageInputs,
        cursor: _Cursor,
    ) -> None:
        op = sub.entry
        backend = op.keyed_state_backend
        cursor.backend = backend if backend is not None else _NO_KEY
        if not sub.valves:
            sub.valves = {
                i: StatusWatermarkValve(max(1, inputs.channels[i])) for i in sub.valve_outputs
            }
        valves, vouts = sub.valves, sub.valve_outputs
        mailbox = sub.mailbox
        two = stage.two_input
        keyed = stage.keyed
        if keyed:
            set_key = backend.set_current_key_and_group
            if two:
                process1, process2 = op.process_keyed_element1, op.process_keyed_element2
            else:
                process1 = process2 = op.process_keyed_element
        elif two:
            process1, process2 = op.process_element1, op.process_element2
        else:
            process1 = process2 = op.process_element
        for tag, channel, index, element, key, kg in entries:
            cursor.tag = tag
            if type(element) is StreamRecord:
                cursor.phase = 0
                if keyed:
                    set_key(key, kg)
                (process1 if index == 1 else process2)(element)
            elif type(element) is Watermark:
                cursor.phase = 1
                valves[index].input_watermark(element.timestamp, channel, vouts[index])
            else:
                cursor.phase = 1
                valves[index].input_watermark_status(element, channel, vouts[index])
            if mailbox is not None and mailbox.has_mail():
                cursor.phase = 3
                while (mail := mailbox.try_take()) is not None:
                    mail()


class _NoKey:
    """Stands in for a backend in non-keyed stages: outputs are tagged with key group 0."""

    current_key_group = 0


_NO_KEY = _NoKey()


def _wall_clock_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def _splits_of(node: Node) -> list[Any]:
    source = node.source
    if hasattr(source, "run"):
        return [None]
    cached = getattr(node, "_splits", None)
    if cached is None:
        cached = list(source.get_splits())
        node._splits = cached  # type: ignore[attr-defined]
    return cached
