"""The round driver: how a split's chain and a stage subtask run, for every runner
(docs/semantics.md, "Rounds").

A job runs in **rounds**. In round ``r`` every source split reads its share (all of it, or
``watermark_every`` records), then emits its periodic watermark, or ``MAX`` after its last
record (:class:`SplitSession`); each exchange stage then processes, subtask by subtask, what
reached it, in position order (:class:`SubtaskSession`). With simulated processing time, every
clock moves to ``start + r * step`` at the start of round ``r`` (the barrier of round ``r``,
:func:`~sparktide.runtime.execution.protocol.barrier`), firing the processing-time timers due.
:class:`RoundLoop` is that loop; a streaming micro-batch is one round of it.

The sessions own the tasks' lifecycle (open, restore watermarks, process, finish, close,
metrics). Runners are transports: the local runtime (:mod:`sparktide.local.executor`) runs
every task in one process and moves buffers in memory; the Spark runner
(:mod:`sparktide.spark.spark_job`, :mod:`sparktide.spark.stream_job`) runs one session per Spark
task and moves buffers through shuffles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypedDict

from sparktide.common.configuration import Configuration
from sparktide.core.state_backend import StateBackend
from sparktide.runtime.execution.protocol import Entry, InputChunk, RoundPhase, round_of
from sparktide.runtime.execution.tasks import SplitTask, SubtaskTask
from sparktide.runtime.mailbox import Mailbox
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.operators.deferred import DeferredOutputOperator
from sparktide.runtime.processing_time import (
    ManualProcessingTimeService,
    ProcessingTimeService,
    SystemProcessingTimeService,
    wall_clock_ms,
)

__all__ = [
    "READ_CHUNK",
    "JobConfig",
    "JobEnvironment",
    "RoundLoop",
    "SimulatedTime",
    "SplitSession",
    "Step",
    "SubtaskMetrics",
    "SubtaskSession",
]

READ_CHUNK = 65536
"""Records a split reads at a time when its round has no limit."""


class JobConfig(Protocol):
    """What runners read from a job's ``ExecutionConfig``."""

    def get_watermark_every(self) -> int | None: ...

    def get_simulated_processing_time(self) -> tuple[int, int] | None: ...

    def get_global_job_parameters(self) -> dict[str, str]: ...

    def get_progress_listener(self) -> Callable[[int, int], None] | None: ...

    def get_auto_watermark_interval(self) -> int: ...

    def get_task_buffer(self) -> int | None: ...

    def get_configuration(self) -> Configuration: ...


class JobEnvironment(Protocol):
    """What runners read from the environment a job was built in."""

    def get_config(self) -> JobConfig: ...

    def get_parallelism(self) -> int: ...

    def get_max_parallelism(self) -> int | None: ...

    def get_state_backend(self) -> StateBackend: ...


@dataclass(frozen=True)
class SimulatedTime:
    """Simulated processing time: round ``r`` starts at ``start + r * step``."""

    start: int
    step: int

    @classmethod
    def of(cls, config: tuple[int, int] | None) -> SimulatedTime | None:
        """From ``ExecutionConfig.get_simulated_processing_time()`` (``None``: wall clock)."""
        return None if config is None else cls(*config)

    def at(self, round: int) -> int:
        return self.start + round * self.step

    def advance(self, clock: ProcessingTimeService, round: int) -> None:
        """Move a manual ``clock`` to the start of ``round`` (never backwards)."""
        now = self.at(round)
        if isinstance(clock, ManualProcessingTimeService) and (
            clock.get_current_processing_time() < now
        ):
            clock.set_current_time(now)


def source_clock(simulated: SimulatedTime | None) -> ManualProcessingTimeService:
    """The processing-time service of a source split's chain: the simulated clock, or one that
    reads the wall clock (a source's timers fire only when the round driver moves it)."""
    if simulated is not None:
        return ManualProcessingTimeService(simulated.start)
    return ManualProcessingTimeService(0, clock=wall_clock_ms)


def subtask_clock(simulated: SimulatedTime | None) -> tuple[ProcessingTimeService, Mailbox | None]:
    """The processing-time service of a stage subtask, with the mailbox its timers go through
    on the wall clock (``None`` when simulated: timers fire as the round driver moves it)."""
    if simulated is not None:
        return ManualProcessingTimeService(simulated.start), None
    mailbox = Mailbox()
    return SystemProcessingTimeService(mailbox), mailbox


def _open(operators: Sequence[AbstractStreamOperator]) -> None:
    for op in operators:
        op.open()


def _waiting(operators: Sequence[AbstractStreamOperator]) -> list[DeferredOutputOperator]:
    """The operators that may hold outputs back (async requests in flight, records waiting
    for their batch), upstream first."""
    return [op for op in operators if isinstance(op, DeferredOutputOperator)]


def _drain(operators: list[DeferredOutputOperator]) -> None:
    """Emit what the operators hold before the transport moves what the task emitted: their
    outputs take earlier positions, and no checkpoint may hold one."""
    for op in operators:
        op.drain()


def _before_clock(operators: list[DeferredOutputOperator]) -> None:
    """Let the operators emit what must precede the timers a moving clock fires."""
    for op in operators:
        op.before_clock_advance()


class SplitSession:
    """A source split's chain: reads its share of a round, then ends the round."""

    def __init__(self, task: SplitTask, every: int | None, chunk: int = READ_CHUNK) -> None:
        self.task = task
        self.every = every  # records per round (None: the whole split in one round)
        self.chunk = chunk  # records read at a time when the round has no limit
        self.round = 0
        self.exhausted = False  # the split's last record was read
        self._waiting = _waiting(task.operators)

    def open(self) -> None:
        _open(self.task.operators)

    def read_round(self, round: int) -> Iterator[None]:
        """Read the split's share of ``round``; yields after each ``chunk`` records while more
        may follow (the transport may ship what the task holds). Sets :attr:`exhausted`."""
        self.round = round
        self.task.tagger.start(round, RoundPhase.READ)
        driver = self.task.driver
        every, chunk = self.every, self.chunk
        waiting = self._waiting
        if every is None:
            while driver.read_up_to(chunk) == chunk:
                _drain(waiting)
                yield
            self.exhausted = True
        else:
            self.exhausted = driver.read_up_to(every) < every
        _drain(waiting)

    def end_round(self, end_of_input: bool) -> None:
        """The end of the round: the periodic watermarks, or the end of input (``MAX``)."""
        task = self.task
        if end_of_input:
            task.tagger.start(self.round, RoundPhase.END_OF_INPUT)
            task.driver.finish()
        else:
            task.tagger.start(self.round, RoundPhase.PERIODIC)
            task.emit_periodic()
        _drain(self._waiting)

    def finish(self) -> None:
        for op in self.task.operators:
            op.finish()

    def close(self) -> None:
        for op in self.task.operators:
            op.close()


class SavedWatermarks(Protocol):
    """An operator's watermark and its timer services' watermarks, as a checkpoint restores
    them (the Spark runner's ``OperatorWatermarks``)."""

    @property
    def watermark(self) -> int: ...

    @property
    def timer_services(self) -> Mapping[str, int]: ...


class SubtaskMetrics(TypedDict):
    """What a stage subtask holds after a micro-batch (:meth:`SubtaskSession.metrics`)."""

    stage: int
    subtask: int
    state_entries: int
    event_timers: int
    next_event_timer: int | None
    processing_timers: int
    next_processing_timer: int | None
    watermark: int | None


class SubtaskSession:
    """A stage subtask's operators over its merged input, in position order."""

    def __init__(self, task: SubtaskTask, simulated: SimulatedTime | None) -> None:
        self.task = task
        self.simulated = simulated
        self.last = -1  # the last round seen
        self._waiting = _waiting(list(task.operators.values()))

    @property
    def rounds(self) -> int:
        """How many rounds reached the subtask."""
        return self.last + 1

    def open(self) -> None:
        _open(list(self.task.operators.values()))

    def restore_watermarks(
        self, watermarks: Mapping[str, SavedWatermarks], identities: Mapping[int, str]
    ) -> None:
        """Put the (open) operators back at the watermarks they had reached, by operator
        identity; the restored valves forward only higher watermarks. Operators this job no
        longer has are skipped."""
        by_identity = {identities[node_id]: op for node_id, op in self.task.operators.items()}
        for identity, saved in watermarks.items():
            op = by_identity.get(identity)
            if op is None:
                continue
            op.restore_watermark(saved.watermark)
            services = saved.timer_services
            manager = op.time_service_manager
            if manager is not None:
                for name, service in manager.services().items():
                    if name in services:
                        service.restore_watermark(services[name])

    def begin_round(self, round: int) -> None:
        """Move a simulated clock over every round boundary up to ``round``'s."""
        simulated = self.simulated
        if simulated is None:
            return
        for r in range(self.last + 1, round + 1):
            _before_clock(self._waiting)
            self.task.advance_clock(simulated.at(r), r)
            _drain(self._waiting)
        self.last = max(self.last, round)

    def advance_clock(self, now: int, round: int) -> None:
        """Move the clock to ``now`` at the barrier of ``round`` (a micro-batch's time)."""
        _before_clock(self._waiting)
        self.task.advance_clock(now, round)
        _drain(self._waiting)
        self.last = max(self.last, round)

    def process(self, entries: list[Entry]) -> None:
        """Process ``entries`` (in position order), crossing every round boundary on the way."""
        if not entries:
            return
        task = self.task
        if self.simulated is None:
            task.process(entries)
            _drain(self._waiting)
            self.last = round_of(entries[-1][0])
            return
        i, n = 0, len(entries)
        while i < n:
            r = entries[i][0][0]
            j = i
            while j < n and entries[j][0][0] == r:
                j += 1
            self.begin_round(r)
            task.process(entries[i:j])
            i = j
        _drain(self._waiting)

    def process_chunks(self, chunks: Sequence[InputChunk]) -> None:
        """Process ``chunks`` (entries one chunk after another in position order, as a
        :class:`~sparktide.runtime.execution.merge.ChunkMerge` or an exchange buffer hands them
        out): the task iterates each chunk's columns; a chunk that spans rounds goes by
        :meth:`process`."""
        if not chunks:
            return
        task, simulated = self.task, self.simulated
        for chunk in chunks:
            if simulated is not None:
                r = chunk.first()[0][0]
                if chunk.last()[0][0] != r:
                    self.process(chunk.entries)
                    continue
                self.begin_round(r)
            task.process(chunk.columns())
        _drain(self._waiting)
        if simulated is None:
            self.last = round_of(chunks[-1].last()[0])

    def finish(self) -> None:
        for op in self.task.operators.values():
            op.finish()

    def close(self) -> None:
        for op in self.task.operators.values():
            op.close()
        self.task.clock.shutdown()

    def metrics(self) -> SubtaskMetrics:
        """State entries, pending timers per domain (count and earliest) and the lowest
        watermark of the subtask's operators."""
        task = self.task
        backend = task.entry.keyed_state_backend
        counts = {"event": 0, "processing": 0}
        earliest: dict[str, int | None] = {"event": None, "processing": None}
        watermarks = []
        for op in task.operators.values():
            watermarks.append(op.current_watermark())
            manager = op.time_service_manager
            if manager is None:
                continue
            for service in manager.services().values():
                for domain, queue in (
                    ("event", service.event_time_timers()),
                    ("processing", service.processing_time_timers()),
                ):
                    head = queue.peek()
                    counts[domain] += len(queue)
                    first = earliest[domain]
                    if head is not None and (first is None or head[0] < first):
                        earliest[domain] = head[0]
        return SubtaskMetrics(
            stage=task.stage.index,
            subtask=task.index,
            state_entries=0 if backend is None else backend.estimate_num_entries(),
            event_timers=counts["event"],
            next_event_timer=earliest["event"],
            processing_timers=counts["processing"],
            next_processing_timer=earliest["processing"],
            watermark=min(watermarks, default=None),
        )


class Step(Enum):
    """Where :meth:`RoundLoop.steps` pauses: the transport may ship what the tasks hold."""

    CHUNK = "chunk"  #: a split read ``chunk`` records of a round without limit
    ROUND = "round"  #: every split ended the round: the stages may process its entries


class RoundLoop:
    """The round loop over splits (and, in one process, the stage subtasks whose clocks move at
    every round start)."""

    def __init__(
        self,
        splits: Sequence[SplitSession],
        source_clock: ProcessingTimeService,
        simulated: SimulatedTime | None,
        subtasks: Sequence[SubtaskSession] = (),
    ) -> None:
        self.splits = splits
        self.source_clock = source_clock
        self.simulated = simulated
        self.subtasks = subtasks
        self.rounds = 0  # rounds run so far

    def steps(self) -> Iterator[Step]:
        """Run every round until every split has read its last record."""
        active = list(self.splits)
        r = 0
        while active:
            if self.simulated is not None:
                self.simulated.advance(self.source_clock, r)
                for subtask in self.subtasks:
                    subtask.begin_round(r)
            for split in active:
                for _ in split.read_round(r):
                    yield Step.CHUNK
            for split in active:
                split.end_round(split.exhausted)
            r += 1
            self.rounds = r
            yield Step.ROUND
            active = [split for split in active if not split.exhausted]
