"""Planning and running a job graph's tasks: shared by the local runtime and the Spark runner.

:mod:`.planner` cuts the graph into stages, :mod:`.protocol` defines positions and what travels
between tasks, :mod:`.wiring` and :mod:`.tasks` build the operator instances of a split or a
stage subtask, and :mod:`.driver` runs them in rounds.
"""

from sparktide.runtime.execution.driver import RoundLoop, SplitSession, SubtaskSession
from sparktide.runtime.execution.planner import Plan, Stage, plan_job
from sparktide.runtime.execution.tasks import JobTasks, SplitTask, SubtaskTask, splits_of

__all__ = [
    "JobTasks",
    "Plan",
    "RoundLoop",
    "SplitSession",
    "SplitTask",
    "Stage",
    "SubtaskSession",
    "SubtaskTask",
    "plan_job",
    "splits_of",
]
