"""The in-process runtime: runs a job graph deterministically in rounds (tests, small jobs)."""

from sparktide.local.executor import LocalExecutor

__all__ = ["LocalExecutor"]
