"""Progress of a running job on Spark, from Spark's status tracker.

The runner puts its Spark jobs in a job group; :class:`SparkProgress` polls the tracker from a
daemon thread and calls ``listener(done, total)`` with the completed and total task counts of the
group's stages whenever they change (the tasks are the source splits and the stage subtasks).
Records are counted inside the workers, where the driver cannot see them live; tasks are what
Spark reports while the job runs.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["SparkProgress"]


class SparkProgress:
    """Context manager: while inside, Spark jobs of this thread report to ``listener``."""

    def __init__(
        self,
        spark_context: SparkContext,
        listener: Callable[[int, int], None],
        interval: float = 0.25,
    ) -> None:
        self._sc = spark_context
        self._listener = listener
        self._interval = interval
        self._group = f"sparktide-{uuid.uuid4().hex}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = (-1, -1)

    def counts(self) -> tuple[int, int]:
        """(completed tasks, total tasks) over the stages of the group's jobs so far."""
        tracker = self._sc.statusTracker()
        done = total = 0
        seen: set[int] = set()
        for job_id in tracker.getJobIdsForGroup(self._group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is None or stage_id in seen:
                    continue
                seen.add(stage_id)
                total += stage.numTasks
                done += stage.numCompletedTasks
        return done, total

    def _report(self) -> None:
        counts = self.counts()
        if counts != self._last and counts[1] > 0:
            self._last = counts
            self._listener(*counts)

    def _poll(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._report()
            except Exception:  # a progress display must never fail the job
                return

    def __enter__(self) -> SparkProgress:
        self._sc.setJobGroup(self._group, "sparktide job", interruptOnCancel=False)
        self._thread = threading.Thread(target=self._poll, name="sparktide-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        # None removes a property (pyspark's annotation says str)
        self._sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        self._sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
