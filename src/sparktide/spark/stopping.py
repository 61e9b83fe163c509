"""A clean stop of a streaming query: on SIGINT or SIGTERM, or ``StreamingJobClient.stop()``.

While :meth:`~sparktide.spark.streaming.StreamingJobClient.await_termination` waits in the main
thread, SIGINT (Ctrl-C) and SIGTERM only *record* the signal (:class:`StopSignals`): the
handler runs between two bytecodes of the main thread, possibly in the middle of a py4j or
gRPC call, so it neither calls Spark nor raises. The wait itself is a loop of short waits that
checks the record between them; once a signal came, the query stops after the micro-batch in
flight commits, or at once, abandoning that batch, if a second signal comes meanwhile. A batch
is committed whole or not at all (the commit manifest is written last), so an abandoned batch
leaves nothing half-done and Spark replays it at the restart. ``await_termination`` then prints
one line saying what the checkpoint holds (:meth:`StopReport.describe`) and raises
:class:`QueryStopped`, a :class:`SystemExit` whose code is the shell's for the signal (130 for
SIGINT, 143 for SIGTERM): a script ends there, without a traceback, after its ``finally``
blocks ran.

Whose signal it is: ``await_termination`` takes over a signal only while its handler is one
that would end the program anyway (the default, Python's ``KeyboardInterrupt``, PySpark's
SparkContext handler, whose job-cancelling call inside a signal handler is what breaks a py4j
call in flight, or the :class:`Interrupter` ``sparktide run`` installs), and puts that handler
back when it returns. A handler of the program's own, or a signal set to be ignored, stays in
charge: sparktide does not take that signal (and says so at ``INFO`` on the
``sparktide.streaming`` logger whenever it starts waiting); such a handler can call
``client.stop()`` from another thread, or make the program leave
``await_termination(timeout)`` and call it there. Outside the main thread nothing is installed
(Python delivers signals to the main thread only).

>>> report = StopReport("/ckpt", version=3, last_spark_batch=3, signum=signal.SIGINT)
>>> print(report.describe())
sparktide: stopped by SIGINT; committed: batch 3 (Spark micro-batch 3) in checkpoint /ckpt
>>> QueryStopped(report).code
130
>>> print(StopReport("/ckpt", None, None, signal.SIGTERM, abandoned=True).describe())
sparktide: stopped by SIGTERM, batch in flight abandoned; committed: none in checkpoint /ckpt
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType

__all__ = [
    "Interrupter",
    "JobInterrupted",
    "QueryStopped",
    "QueryStopping",
    "StopReport",
    "StopSignals",
    "cancel_spark_jobs",
    "exit_code",
    "sigint_kept",
    "stop_signals",
]

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a streaming query cleanly."""

POLL_SECONDS = 0.2
"""How long one wait of ``await_termination`` (and of a stop waiting for the batch in flight)
lasts before it looks at the signals again: the delay before a signal is acted upon."""

_LOGGER = logging.getLogger("sparktide.streaming")

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def exit_code(signum: int) -> int:
    """The shell's exit code of a program ended by signal ``signum``: ``128 + signum``.

    >>> exit_code(signal.SIGINT), exit_code(signal.SIGTERM)
    (130, 143)
    """
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    """``SIGINT`` for 2, and so on."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True)
class StopReport:
    """What a stopped query's checkpoint holds: its last committed ``version`` (the batch id
    sinks were given; ``None``: none yet) and the last Spark micro-batch it includes, why it
    stopped (``signum``; ``None``: ``stop()`` or ``cancel()`` from code) and whether the batch
    in flight was abandoned rather than committed."""

    location: str
    version: int | None
    last_spark_batch: int | None
    signum: int | None = None
    abandoned: bool = False

    def describe(self) -> str:
        """The one line ``await_termination`` prints when a signal stopped the query."""
        cause = "stop()" if self.signum is None else signal_name(self.signum)
        if self.abandoned:
            cause += ", batch in flight abandoned"
        if self.version is None:
            held = "none"
        elif self.last_spark_batch is None:
            held = f"batch {self.version}"
        else:
            held = f"batch {self.version} (Spark micro-batch {self.last_spark_batch})"
        return f"sparktide: stopped by {cause}; committed: {held} in checkpoint {self.location}"


class QueryStopped(SystemExit):
    """Raised by ``await_termination`` after a signal stopped the query (the line saying what
    was committed is printed already): a :class:`SystemExit` with the shell's code for the
    signal, so a script ends quietly; ``report`` says what the checkpoint holds."""

    def __init__(self, report: StopReport) -> None:
        super().__init__(exit_code(report.signum or signal.SIGINT))
        self.report = report


class QueryStopping(RuntimeError):
    """A micro-batch Spark started after ``stop()`` was called: refused (not run, so neither
    sparktide nor Spark commits it), so that the query ends without it."""


class JobInterrupted(KeyboardInterrupt):
    """Raised in the main thread by :class:`Interrupter` (``sparktide run``'s handling of
    SIGINT and SIGTERM while a job runs): the job was interrupted by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


class Interrupter:
    """``sparktide run``'s handler of SIGINT and SIGTERM while a job runs (``await_termination``
    takes the signals over from it while it waits). Between two calls into Spark it raises
    :class:`JobInterrupted`. Inside one (a py4j or gRPC call the main thread waits in, e.g.
    for a Spark job) raising would break the call and make py4j log its tracebacks, so it
    cancels the session's Spark jobs from another thread instead: the call returns with the
    cancellation, which ends the job. ``received`` holds the signals, in order."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if not _in_spark_call(frame):
            raise JobInterrupted(signum)
        threading.Thread(target=cancel_spark_jobs, name="sparktide-cancel", daemon=True).start()

    @contextlib.contextmanager
    def installed(self) -> Iterator[Interrupter]:
        """Handle SIGINT and SIGTERM while the block runs (where their handler is
        :func:`replaceable`), then put the previous handlers back."""
        with _handled_by(self.handle, log_kept=False):
            yield self


def _in_spark_call(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) is inside a py4j or gRPC
    call."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "grpc" or module.startswith(("py4j.", "grpc.")):
            return True
        frame = frame.f_back
    return False


def cancel_spark_jobs() -> None:
    """Cancel every Spark job of this process's SparkContext (a classic session), if there is
    one."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    context = SparkContext._active_spark_context
    if context is not None:
        with contextlib.suppress(Exception):  # stopped meanwhile: nothing to cancel
            context.cancelAllJobs()


@contextlib.contextmanager
def sigint_kept() -> Iterator[None]:
    """Keep ``sparktide run``'s SIGINT handler (an :class:`Interrupter`'s) across the start of
    a SparkContext, which installs PySpark's own: that one calls Spark from inside the handler,
    which breaks a py4j call in flight."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        yield
    finally:
        if isinstance(getattr(before, "__self__", None), Interrupter):
            signal.signal(signal.SIGINT, before)


def _from_pyspark(handler: _Handler) -> bool:
    """PySpark's SparkContext handler of SIGINT (cancels every job from inside the handler,
    then raises ``KeyboardInterrupt``)."""
    module = getattr(handler, "__module__", None) or ""
    return module.startswith("pyspark.") and getattr(handler, "__name__", "") == "signal_handler"


def replaceable(handler: _Handler) -> bool:
    """Whether ``await_termination`` may take a signal over from ``handler``: one that ends the
    program anyway (see the module's docstring)."""
    if handler is signal.SIG_DFL or handler is signal.default_int_handler:
        return True
    return isinstance(getattr(handler, "__self__", None), Interrupter) or _from_pyspark(handler)


class StopSignals:
    """The stop signals received while a query is awaited, in order. The handler only appends:
    it may run inside a py4j or gRPC call of the main thread."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)

    @property
    def first(self) -> int | None:
        """The signal that asked for the stop (``None``: none came)."""
        return self.received[0] if self.received else None

    def abandon(self) -> bool:
        """Whether a second signal came: the batch in flight is abandoned."""
        return len(self.received) > 1


@contextlib.contextmanager
def stop_signals() -> Iterator[StopSignals]:
    """Record SIGINT and SIGTERM in the returned :class:`StopSignals` while the block runs (in
    the main thread, for the signals whose handler is :func:`replaceable`), then put the
    previous handlers back."""
    signals = StopSignals()
    with _handled_by(signals.handle, log_kept=True):
        yield signals


@contextlib.contextmanager
def _handled_by(handler: Callable[[int, FrameType | None], None], log_kept: bool) -> Iterator[None]:
    """Install ``handler`` for the :data:`STOP_SIGNALS` whose handler is replaceable (in the
    main thread only) while the block runs."""
    saved: dict[signal.Signals, _Handler] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            current = signal.getsignal(signum)
            if replaceable(current):
                saved[signum] = current
                signal.signal(signum, handler)
            elif log_kept:
                _LOGGER.info(
                    "%s is handled by the program itself (%r): that stays in charge; a clean "
                    "stop of the query is client.stop()",
                    signal_name(signum),
                    current,
                )
    try:
        yield
    finally:
        for signum, previous in saved.items():
            signal.signal(signum, previous)
