"""A user function's exception, from a Spark worker back to the driver.

A worker task that fails in a user function does not fail the Spark task: Spark would log the
worker's traceback, retry the task, and raise a ``PythonException`` wrapper with ~140 lines of
its own frames on the driver. Instead the task ships a :class:`RemoteFailure` (the exception,
pickled, with the user's frames formatted and what the task was processing) as a row for the
driver, and tells every later stage that its input is incomplete (:func:`upstream_failed`), so
no later operator or sink works on partial input; those stages pass the failure on, so every
frame of the job (e.g. the one ``to_dataframe()`` reads) carries it. The driver raises the
user's own exception (:meth:`RemoteFailure.exception`), with a note naming the operator, key,
record and batch and holding the user's frames. An exception that cannot be pickled (e.g. an
``__init__`` that does not accept its ``args``) arrives as a :class:`UserFunctionError` naming
its type.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.runtime.failures import FailureContext, add_context, format_user_frames

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "UPSTREAM_FAILED",
    "RemoteFailure",
    "UserFunctionError",
    "failure_of_mark",
    "failure_payload",
    "quiet_query_failure_log",
    "raise_first_failure",
    "upstream_failed",
]

#: how the payload a failed task sends to every subtask of the later stages starts
UPSTREAM_FAILED = b"sparktide:upstream-task-failed:"


def upstream_failed(position: bytes, payload: bytes) -> bytes:
    """The mark telling a subtask that its input is incomplete, carrying the failure (its
    position and :class:`RemoteFailure` payload) for the subtask to pass on."""
    return UPSTREAM_FAILED + pickle.dumps((position, payload))


def failure_of_mark(payload: bytes) -> tuple[bytes, bytes] | None:
    """``(position, payload)`` of an :func:`upstream_failed` mark; ``None`` for other rows."""
    if not payload.startswith(UPSTREAM_FAILED):
        return None
    position, failure = pickle.loads(payload[len(UPSTREAM_FAILED) :])
    return position, failure


class UserFunctionError(RuntimeError):
    """A user function raised an exception that could not be sent from the Spark worker to the
    driver; the message names its type and its text."""


def _qualified_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


@dataclass(frozen=True)
class RemoteFailure:
    """What the driver needs to raise a worker's exception again."""

    type_name: str
    message: str
    context: FailureContext
    frames: str  # the user's frames, formatted
    pickled: bytes | None  # the exception (without traceback, cause or context)
    pickle_error: str | None = None  # why it could not be pickled

    @classmethod
    def capture(cls, exc: BaseException, context: FailureContext) -> RemoteFailure:
        """Capture ``exc`` in the worker (its frames are formatted here, where they live)."""
        frames = format_user_frames(exc)
        pickled: bytes | None = None
        error: str | None = None
        try:
            from pyspark import cloudpickle  # by value: classes of the user's __main__ too

            data = cloudpickle.dumps(exc)
            pickle.loads(data)  # refuses e.g. an __init__ that does not take its args
            pickled = data
        except Exception as why:
            error = f"{type(why).__name__}: {why}"
        return cls(_qualified_name(type(exc)), str(exc), context, frames, pickled, error)

    def exception(self) -> BaseException:
        """The user's exception (or a :class:`UserFunctionError` naming it), with a note: what
        was being processed and the user's frames on the worker."""
        exc: BaseException | None = None
        error = self.pickle_error
        if self.pickled is not None:
            try:
                exc = pickle.loads(self.pickled)
            except Exception as why:
                error = f"{type(why).__name__}: {why}"
        if not isinstance(exc, BaseException):
            exc = UserFunctionError(
                f"{self.type_name}: {self.message} (this exception could not be sent from the "
                f"Spark worker to the driver: {error}; to catch it by its type, make it "
                "picklable: its __init__ must accept the arguments it passes to "
                "Exception.__init__)"
            )
        frames = self.frames.rstrip("\n")
        extra = f"the function's traceback, on a Spark worker:\n{frames}" if frames else None
        add_context(exc, self.context, extra)
        return exc


def failure_payload(exc: BaseException, context: FailureContext) -> bytes:
    """The pickled :class:`RemoteFailure` of ``exc``."""
    return pickle.dumps(RemoteFailure.capture(exc, context))


def raise_first_failure(payloads: list[tuple[bytes, bytes]]) -> None:
    """Raise the failure of the earliest position among ``(position, payload)`` rows (the one
    the local runtime would have raised first), if any."""
    if not payloads:
        return
    _, payload = min(payloads, key=lambda item: item[0])
    failure: RemoteFailure = pickle.loads(payload)
    raise failure.exception()


#: the loggers of Spark's micro-batch execution (by Spark version), which log a query's failure
_QUERY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
)


def quiet_query_failure_log(spark: SparkSession) -> Callable[[], None]:
    """Turn off the log line (with its ~90 lines of stack) Spark writes when a query ends with
    an error, while a query ends with a user function's error that the driver raises itself;
    returns a function that restores the levels (a no-op where there is no JVM to ask)."""
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:
            return lambda: None
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        manager = jvm.org.apache.logging.log4j.LogManager
        off = jvm.org.apache.logging.log4j.Level.OFF
        saved = {name: manager.getLogger(name).getLevel() for name in _QUERY_LOGGERS}
        for name in _QUERY_LOGGERS:
            configurator.setLevel(name, off)
    except Exception:  # Spark Connect or another logging backend: Spark logs it
        return lambda: None

    def restore() -> None:
        for name, level in saved.items():
            try:
                configurator.setLevel(name, level)
            except Exception:  # pragma: no cover - the session is gone
                return

    return restore
