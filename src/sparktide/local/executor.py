"""Execute a planned job in-process, deterministically, in rounds (GUIDE §4).

A round: every source split, in split order, reads its share (all of it, or ``watermark_every``
records); then every split emits its periodic watermark; then each exchange stage, in
topological order, processes what reached it, subtask by subtask, in position order (see
:mod:`sparktide.runtime.execution.wiring`). After its last record a split emits ``MAX``, which
fires every pending event-time timer. Since a key group always processes its elements in
position order whatever subtask hosts it, the output is the same at any parallelism; collected
results are returned in position order too.

Processing time is the wall clock (each subtask has a mailbox, drained between elements) or a
simulated clock that advances at every round boundary.
"""

from __future__ import annotations

import time
from operator import itemgetter
from typing import Any

from sparktide.runtime.execution.planner import Plan, plan_job
from sparktide.runtime.execution.tasks import JobTasks, SubtaskTask
from sparktide.runtime.failures import add_context, user_traceback
from sparktide.runtime.mailbox import Mailbox
from sparktide.runtime.operators.simple import flush_printed
from sparktide.runtime.processing_time import (
    ManualProcessingTimeService,
    SystemProcessingTimeService,
)

__all__ = ["LocalExecutor"]

_by_tag = itemgetter(0, 1)  # position, then channel (ties: the outputs of two operators)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LocalExecutor:
    """Runs one job graph to completion in the calling thread."""

    def __init__(self, graph: Any, env: Any) -> None:
        self.config = env.get_config()
        self.plan: Plan = plan_job(graph, env.get_parallelism(), env.get_max_parallelism())
        self.simulated = self.config.get_simulated_processing_time()
        self.rounds = 0
        self._clocks: list[Any] = []

    def _new_clock(self) -> tuple[Any, Mailbox | None]:
        if self.simulated is not None:
            clock = ManualProcessingTimeService(self.simulated[0])
            self._clocks.append(clock)
            return clock, None
        mailbox = Mailbox()
        clock = SystemProcessingTimeService(mailbox)
        self._clocks.append(clock)
        return clock, mailbox

    def _build(self) -> None:
        if self.simulated is not None:
            source_clock, _ = self._new_clock()
        else:
            source_clock = ManualProcessingTimeService(0)
            source_clock.get_current_processing_time = _wall_clock_ms  # type: ignore[method-assign]
        self.tasks = JobTasks(
            self.plan, self.config.get_global_job_parameters(), source_clock, ship_prints=True
        )
        self.subtasks: dict[int, list[SubtaskTask]] = {}
        for stage in self.plan.stages:
            subtasks = []
            for i in range(stage.parallelism):
                clock, mailbox = self._new_clock()
                subtasks.append(self.tasks.build_subtask(stage, i, clock, mailbox))
            self.subtasks[stage.index] = subtasks
        self.splits = [self.tasks.build_split(g) for g in range(self.tasks.num_splits)]

    def run(self) -> dict[str, Any]:
        self._build()
        operators = self.tasks.operators
        for op in operators:
            op.open()
        try:
            self._run_rounds()
            for op in operators:
                op.finish()
            flush_printed(operators)
        except Exception as exc:
            context = self.tasks.describe(exc)
            if context is None:
                raise
            # the user's exception, with what was being processed, from the user's frames
            add_context(exc, context)
            raise exc.with_traceback(user_traceback(exc.__traceback__)) from exc.__cause__
        finally:
            for op in operators:
                op.close()
            for clock in self._clocks:
                clock.shutdown()
        return {"rounds": self.rounds, **self.tasks.metrics()}

    def _run_rounds(self) -> None:
        every = self.config.get_watermark_every()
        cursor = self.tasks.cursor
        active = list(range(len(self.splits)))
        r = 0
        while active:
            self._advance_clocks(r)
            still = []
            for i in active:
                task = self.splits[i]
                task.tagger.round, task.tagger.phase = r, 0
                cursor.backend = None
                if every is None:
                    while task.driver.read_up_to(65536) == 65536:
                        pass
                    done = True
                else:
                    done = task.driver.read_up_to(every) < every
                if not done:
                    still.append(i)
            for i in active:
                task = self.splits[i]
                cursor.backend = None
                if i in still:
                    task.tagger.phase = 1
                    task.emit_periodic()
                else:
                    task.tagger.phase = 2
                    task.driver.finish()
            self._run_stages()
            flush_printed(self.tasks.operators)
            active = still
            r += 1
        self.rounds = r

    def _advance_clocks(self, r: int) -> None:
        if self.simulated is None:
            return
        start, step = self.simulated
        now = start + r * step
        tag = (r, -1, 0, 0, 0)
        source_clock = self.tasks.source_clock
        if source_clock.get_current_processing_time() < now:
            source_clock.set_current_time(now)
        for stage in self.plan.stages:
            for task in self.subtasks[stage.index]:
                task.advance_clock(now, tag)

    def _run_stages(self) -> None:
        buffers = self.tasks.buffers
        for stage in self.plan.stages:
            stage_buffers = buffers[stage.index]
            for task in self.subtasks[stage.index]:
                entries = stage_buffers[task.index]
                if not entries:
                    continue
                stage_buffers[task.index] = []
                entries.sort(key=_by_tag)
                task.process(entries)
