"""The in-process runtime: runs a job graph deterministically in rounds (tests, small jobs)."""

from sparktide.local.executor import LocalExecutor
from sparktide.local.planner import Plan, Stage, plan_job

__all__ = ["LocalExecutor", "Plan", "Stage", "plan_job"]
