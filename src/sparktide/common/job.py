"""A job once it runs: its id, status, client and result (PyFlink's ``JobID``, ``JobStatus``,
``JobClient``, ``CompletableFuture`` and ``JobExecutionResult``).

>>> result = JobExecutionResult("wordcount", 12, {"rounds": 1})
>>> result.get_job_name(), result.get_net_runtime(), result.get_accumulator_result("rounds")
('wordcount', 12, 1)
>>> len(str(result.get_job_id()))
32
>>> JobStatus.FINISHED.is_terminal_state(), JobStatus.RUNNING.is_terminal_state()
(True, False)
"""

from __future__ import annotations

import uuid
from concurrent.futures import Future
from enum import Enum
from typing import Any, Generic, TypeVar

__all__ = ["CompletableFuture", "JobClient", "JobExecutionResult", "JobID", "JobStatus"]

T = TypeVar("T")


class JobID:
    """A job's id: 16 random bytes, shown as 32 hex digits (as Flink's ``JobID``)."""

    __slots__ = ("_hex",)

    def __init__(self, j_job_id: object = None) -> None:
        self._hex = uuid.uuid4().hex if j_job_id is None else str(j_job_id)

    def to_hex_string(self) -> str:
        return self._hex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and other._hex == self._hex

    def __hash__(self) -> int:
        return hash(self._hex)

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"JobID({self._hex!r})"


class JobStatus(Enum):
    """The states of a job, as Flink's (only CREATED, RUNNING, FAILED, CANCELED and FINISHED
    occur here: Spark retries failed tasks itself)."""

    CREATED = 0
    RUNNING = 1
    FAILING = 2
    FAILED = 3
    CANCELLING = 4
    CANCELED = 5
    FINISHED = 6
    RESTARTING = 7
    SUSPENDED = 8
    RECONCILING = 9

    def is_globally_terminal_state(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED


class CompletableFuture(Future[T], Generic[T]):
    """A result to come (Flink's ``CompletableFuture``, here Python's ``concurrent.futures``
    future: ``done()``, ``result(timeout)``, ``exception()``, ``cancel()``).

    >>> CompletableFuture.completed(7).result()
    7
    """

    @staticmethod
    def completed(value: T) -> CompletableFuture[T]:
        future: CompletableFuture[T] = CompletableFuture()
        future.set_result(value)
        return future


class JobClient:
    """What ``execute_async`` hands back for a running job; runners implement it."""

    def get_job_id(self) -> JobID:
        raise NotImplementedError(f"{type(self).__name__}.get_job_id")

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        raise NotImplementedError(f"{type(self).__name__}.get_job_status")

    def cancel(self) -> CompletableFuture[None]:
        raise NotImplementedError(f"{type(self).__name__}.cancel")

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__}.get_accumulators")

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        raise NotImplementedError(f"{type(self).__name__}.get_job_execution_result")


class JobExecutionResult:
    """What ``execute()`` returns: the job id, its runtime and its metrics."""

    def __init__(self, job_name: str, net_runtime_ms: int, metrics: dict[str, Any]) -> None:
        self._job_id = JobID()
        self._job_name = job_name
        self._net_runtime = net_runtime_ms
        self.metrics = metrics

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_job_name(self) -> str:
        return self._job_name

    def get_net_runtime(self) -> int:
        return self._net_runtime

    def get_accumulator_result(self, name: str) -> Any:
        return self.metrics.get(name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self.metrics)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult({self._job_name!r}, {self._net_runtime} ms)"
