"""A job once it runs: its id, status, client and result (PyFlink's ``JobID``, ``JobStatus``,
``JobClient``, ``CompletableFuture`` and ``JobExecutionResult``).

``execute_async()`` returns a :class:`JobClient`: a bounded job's is a
:class:`BackgroundJobClient` (the job runs in a thread of this process), a streaming job's a
``StreamingJobClient`` (:mod:`sparktide.spark.streaming`).

>>> result = JobExecutionResult("wordcount", 12, {"rounds": 1})
>>> result.get_job_name(), result.get_net_runtime(), result.get_accumulator_result("rounds")
('wordcount', 12, 1)
>>> len(str(result.get_job_id()))
32
>>> JobStatus.FINISHED.is_terminal_state(), JobStatus.RUNNING.is_terminal_state()
(True, False)
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from enum import Enum
from typing import Any, Generic, TypeVar

__all__ = [
    "BackgroundJobClient",
    "CompletableFuture",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
]

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
    """What ``execute_async`` hands back for a started job (PyFlink's ``JobClient``):
    :class:`BackgroundJobClient` for a bounded job, ``StreamingJobClient`` for a streaming one.
    Both have ``get_job_id()``, ``get_job_name()``, ``get_job_status()`` and
    ``await_termination(timeout)`` (wait for the end, re-raise what failed the job)."""

    def get_job_id(self) -> JobID:
        raise NotImplementedError(f"{type(self).__name__}.get_job_id")

    def get_job_name(self) -> str:
        raise NotImplementedError(f"{type(self).__name__}.get_job_name")

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        raise NotImplementedError(f"{type(self).__name__}.get_job_status")

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the job to end (``True``) or ``timeout`` seconds to pass (``False``);
        re-raise what failed the job."""
        raise NotImplementedError(f"{type(self).__name__}.await_termination")

    def cancel(self) -> object:
        raise NotImplementedError(f"{type(self).__name__}.cancel")

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__}.get_accumulators")

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        raise NotImplementedError(f"{type(self).__name__}.get_job_execution_result")


class BackgroundJobClient(JobClient):
    """A bounded job running in a thread of this process (what ``execute_async()`` returns for a
    job without a streaming source): ``get_job_execution_result()`` is the future of its
    :class:`JobExecutionResult` (``.result(timeout)`` waits for it and re-raises what failed
    the job), as PyFlink's.

    >>> client = BackgroundJobClient("sum", lambda: JobExecutionResult("sum", 3, {"n": 2}))
    >>> client.get_job_execution_result().result(timeout=10).get_accumulator_result("n")
    2
    >>> client.get_job_status().result()
    <JobStatus.FINISHED: 6>
    """

    def __init__(self, job_name: str, run: Callable[[], JobExecutionResult]) -> None:
        self._job_id = JobID()
        self._job_name = job_name
        self._result: CompletableFuture[JobExecutionResult] = CompletableFuture()
        self._result.set_running_or_notify_cancel()
        # not a daemon: the interpreter lets the job finish (its sinks written) before it exits
        self._thread = threading.Thread(
            target=self._run, args=(run,), name=f"sparktide job {job_name!r}"
        )
        self._thread.start()

    def _run(self, run: Callable[[], JobExecutionResult]) -> None:
        try:
            result = run()
        except BaseException as exc:  # handed to whoever waits for the result
            self._result.set_exception(exc)
        else:
            self._result.set_result(result)

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_job_name(self) -> str:
        return self._job_name

    @property
    def is_active(self) -> bool:
        return not self._result.done()

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """RUNNING, then FINISHED or FAILED."""
        future = self._result
        if not future.done():
            status = JobStatus.RUNNING
        else:
            status = JobStatus.FAILED if future.exception() is not None else JobStatus.FINISHED
        return CompletableFuture.completed(status)

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        return self._result

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        """The job's metrics once it ends (a bounded job's are computed at its end)."""
        accumulators: CompletableFuture[dict[str, Any]] = CompletableFuture()

        def done(result: Future[JobExecutionResult]) -> None:
            failure = result.exception()
            if failure is not None:
                accumulators.set_exception(failure)
            else:
                accumulators.set_result(result.result().get_all_accumulator_results())

        self._result.add_done_callback(done)
        return accumulators

    def await_termination(self, timeout: float | None = None) -> bool:
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
            raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        self._result.result()  # re-raise what failed the job
        return True

    def cancel(self) -> CompletableFuture[None]:
        """Refused: a bounded job runs to its end once started."""
        raise RuntimeError(
            f"job {self._job_name!r} cannot be canceled: a bounded job started with "
            "execute_async() runs to its end; wait for it with get_job_execution_result()"
        )

    def __repr__(self) -> str:
        state = "running" if self.is_active else "ended"
        return f"BackgroundJobClient({self._job_name!r}, {state})"


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
