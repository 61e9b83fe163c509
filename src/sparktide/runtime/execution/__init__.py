"""Planning and running a job graph's tasks: shared by the local runtime and the Spark runner."""

from sparktide.runtime.execution.planner import Plan, Stage, plan_job
from sparktide.runtime.execution.tasks import JobTasks, SplitTask, SubtaskTask, splits_of

__all__ = ["JobTasks", "Plan", "SplitTask", "Stage", "SubtaskTask", "plan_job", "splits_of"]
