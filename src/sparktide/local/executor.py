"""Execute a planned job in-process, deterministically, in rounds
(docs/semantics.md, "Rounds").

The rounds are :class:`~sparktide.runtime.execution.driver.RoundLoop`'s: every source split, in
split order, reads its share (all of it, or ``watermark_every`` records); then every split emits
its periodic watermark (``MAX`` after its last record, which fires every pending event-time
timer); then each exchange stage, in topological order, processes what reached it, subtask by
subtask, in position order (:mod:`sparktide.runtime.execution.protocol`). A round without a
limit is read in chunks (``ExecutionConfig.set_task_buffer``, default 65,536 records per split),
and the stages process what reached them after each chunk: a round's reads come in position
order, so nothing read later can precede it, and memory stays bounded by the chunk, not the
round. This module is the
transport: every task runs in this process and buffers move in memory. Since a key group always
processes its elements in position order whatever subtask hosts it, the output is the same at
any parallelism; collected results are returned in position order too.

Processing time is the wall clock (each subtask has a mailbox, drained between elements) or a
simulated clock that advances at every round boundary.
"""

from __future__ import annotations

from operator import itemgetter

from sparktide.common.config_options import CHUNKED_RECORDS
from sparktide.runtime.execution.driver import (
    READ_CHUNK,
    JobEnvironment,
    RoundLoop,
    SimulatedTime,
    SplitSession,
    Step,
    SubtaskSession,
    source_clock,
    subtask_clock,
)
from sparktide.runtime.execution.path import PathChoice, PathOptions, Request, choose_path
from sparktide.runtime.execution.planner import Plan, plan_job
from sparktide.runtime.execution.tasks import JobTasks
from sparktide.runtime.failures import add_context, user_traceback
from sparktide.runtime.gc_pacing import paced_collection
from sparktide.runtime.graph import JobGraph
from sparktide.runtime.operators.simple import flush_printed

__all__ = ["LocalExecutor"]

_by_position_and_channel = itemgetter(0, 1)  # ties: the outputs of two operators
_by_position = itemgetter(0)  # a stage with one input channel: the same order, no key tuples


class LocalExecutor:
    """Runs one job graph to completion in the calling thread."""

    def __init__(self, graph: JobGraph, env: JobEnvironment) -> None:
        self.config = env.get_config()
        self.plan: Plan = plan_job(
            graph, env.get_parallelism(), env.get_max_parallelism(), env.get_state_backend()
        )
        self.simulated = SimulatedTime.of(self.config.get_simulated_processing_time())
        self.rounds = 0

    def path(self) -> PathChoice:
        """The job's path here: per record, with each window operator's fast-path decision
        (:func:`~sparktide.runtime.execution.path.choose_path`)."""
        options = PathOptions.of(self.config.get_configuration())
        return choose_path(self.plan, options, Request.run())

    def _build(self) -> None:
        self.source_clock = source_clock(self.simulated)
        self.tasks = JobTasks(
            self.plan,
            self.config.get_global_job_parameters(),
            self.source_clock,
            ship_prints=True,
            fast_windows=self.path().fast_windows,
            chunks=bool(CHUNKED_RECORDS.read(self.config.get_configuration().to_dict())),
        )
        self.subtasks: dict[int, list[SubtaskSession]] = {}
        for stage in self.plan.stages:
            sessions = []
            for i in range(stage.parallelism):
                clock, mailbox = subtask_clock(self.simulated)
                task = self.tasks.build_subtask(stage, i, clock, mailbox)
                sessions.append(SubtaskSession(task, self.simulated))
            self.subtasks[stage.index] = sessions
        every = self.config.get_watermark_every()
        chunk = self.config.get_task_buffer() or READ_CHUNK
        self.splits = [
            SplitSession(self.tasks.build_split(g), every, chunk)
            for g in range(self.tasks.num_splits)
        ]

    def run(self) -> dict[str, int]:
        with paced_collection():
            return self._run()

    def _run(self) -> dict[str, int]:
        self._build()
        subtasks = [s for stage in self.plan.stages for s in self.subtasks[stage.index]]
        sessions: list[SplitSession | SubtaskSession] = [*subtasks, *self.splits]
        for session in sessions:
            session.open()
        try:
            self._run_rounds(subtasks)
            for session in sessions:
                session.finish()
            flush_printed(self.tasks.operators)
        except Exception as exc:
            context = self.tasks.describe(exc)
            if context is None:
                raise
            # the user's exception, with what was being processed, from the user's frames
            add_context(exc, context)
            raise exc.with_traceback(user_traceback(exc.__traceback__)) from exc.__cause__
        finally:
            for session in sessions:
                session.close()  # a subtask's clock too
            self.source_clock.shutdown()
        return {"rounds": self.rounds, **self.tasks.metrics()}

    def _run_rounds(self, subtasks: list[SubtaskSession]) -> None:
        loop = RoundLoop(self.splits, self.source_clock, self.simulated, subtasks)
        for step in loop.steps():
            # every entry the stages hold precedes what the splits read next (a round reads in
            # position order), so the stages take it now: memory stays bounded by the chunk
            self._run_stages()
            if step is Step.ROUND:
                flush_printed(self.tasks.operators)
        self.rounds = loop.rounds

    def _run_stages(self) -> None:
        buffers = self.tasks.buffers
        for stage in self.plan.stages:
            stage_buffers = buffers[stage.index]
            # entries of one channel at equal positions keep their order (a stable sort)
            one_channel = sum(self.tasks.channels.get(stage.index, {}).values()) == 1
            order = _by_position if one_channel else _by_position_and_channel
            for session in self.subtasks[stage.index]:
                index = session.task.index
                buffer = stage_buffers[index]
                if buffer or buffer.runs:
                    session.process_chunks(buffer.take_chunks(order))
