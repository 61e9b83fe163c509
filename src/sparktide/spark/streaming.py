"""Run a job over a Spark Structured Streaming DataFrame: one round per micro-batch.

``env.from_stream(streaming_df, ...)`` makes a
:class:`~sparktide.spark.stream_source.StreamSource`; executing a job that reads one starts a
streaming query ``streaming_df.writeStream.foreachBatch(...)``. Each micro-batch becomes
*version* ``v`` of the job's state (the round number, and the batch id batch sinks are given):

1. The batch's processing time is read from the checkpoint, or recorded there at the batch's first
   attempt, so a replay sees the same time.
2. **Source stage.** The batch's rows are split (``split_by`` into ``num_splits`` splits, else one
   split) and each split runs its chain as one round: the split's watermark generator, watermark
   emitter and sequence number come from version ``v - 1`` of the checkpoint, the split reads
   all its rows and emits its periodic watermark (the end of the round). A split without rows
   in the batch runs too, so its idleness check (``with_idleness``) sees the batch's time. The
   input never ends, so no split emits ``MAX``.
3. **Exchange stages**, as in the bounded runner (:mod:`sparktide.spark.executor`), except that
   every subtask runs in every batch (a heartbeat row reaches each one): it restores the keyed
   state, timers, valves and operator watermarks of its key groups from version ``v - 1``,
   moves its processing-time clock from the previous batch's time to this batch's (firing due
   processing-time timers at the batch boundary), processes the batch's entries in position
   order and writes version ``v``.
   Before step 2 a Spark micro-batch's input files are checked, and before step 4 what it read
   is recorded at its first attempt or compared on a replay
   (:mod:`sparktide.spark.batch_inputs`): a replay reads what the first attempt read.
4. **Sinks.** Streaming sinks (:class:`ForeachBatchSink`, :class:`ParquetBatchSink`,
   :class:`JsonBatchSink`) get the batch's output as a DataFrame; ``print()`` lines are printed
   on the driver.
5. **Commit.** Then the split states and the commit file of version ``v`` are written, naming
   the last Spark micro-batch id it includes. A Spark batch replayed after a failure before the
   commit reprocesses from ``v - 1`` and overwrites; one replayed after the commit is skipped.
   With idempotent sinks the output is exactly once.
6. **Metrics** of the batch (:mod:`sparktide.spark.stream_metrics`) go into the commit file,
   ``StreamingJobClient.recent_progress``, the client's listeners and the
   ``sparktide.streaming`` logger (which ``sparktide run`` shows).

**Triggers.** A :class:`~sparktide.common.stream_trigger.StreamTrigger` says when micro-batches
start: ``processing_time(interval)``, ``continuous(poll)`` (a batch as soon as data arrives,
the sources polled every ``poll``), ``available_now()`` or ``once()``
(:mod:`sparktide.spark.query_trigger` maps each onto Spark's writer).

**Batches without new data.** Spark calls ``foreachBatch`` only when data arrived. A query
that runs until stopped (a ``processing_time`` or ``continuous`` trigger, or none) therefore
also checks, every auto-watermark interval, whether a processing-time timer is due or (with
``with_idleness``) a split that is not idle yet has had no batch for the idle timeout; if so it
runs a version with an empty batch (its ``spark_batch`` is ``None``), which fires those timers
or marks the split idle. A split without records is marked idle by the second such check, as
Flink's periodic check does. Batches without data wait while a Spark batch is being replayed,
and are not run with ``available_now`` or ``once`` (those runs end when the available data is
done). Over Spark Connect the client runs them, while Spark's batches run on the server: every
run of a version holds the checkpoint's :class:`~sparktide.spark.batch_lock.BatchLock` (a
file lock both processes take) from reading the last commit to writing its own, so one version
is never written by two runs.

On the driver steps 2 to 6 are the pipeline a bounded run goes through too (see
docs/architecture.md, "The driver pipeline"): the batch's frames are built on its path
(:mod:`sparktide.spark.stream_batch`: per record, or on columns by
:mod:`sparktide.spark.columnar_stream`), what they tell the driver is decoded into typed values
(:mod:`sparktide.spark.shipments`) and gathered in a
:class:`~sparktide.spark.shipments.BatchOutcome`, then the sinks are written and the batch is
committed.

The worker side of steps 2 and 3 is :mod:`sparktide.spark.stream_job`; the sinks are in
:mod:`sparktide.spark.stream_sinks`. Each batch writes a changelog, and every
``snapshot_every`` batches a full snapshot (see :mod:`sparktide.spark.checkpoint`); state of
operators that is not keyed state (attributes of user functions) is not checkpointed. On
``EmbeddedRocksDBStateBackend`` without incremental checkpointing (Flink's default for it),
every batch writes a full snapshot (:func:`checkpoint_interval`). The state files hold the
backend-neutral form of keyed state, so a query restarted on the other backend restores them.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from sparktide.common.config_options import STREAM_SINKS_ONE_PASS
from sparktide.common.job import CompletableFuture, JobClient, JobID, JobStatus
from sparktide.common.stream_trigger import StreamTrigger
from sparktide.core.metrics import MetricsReport
from sparktide.runtime.execution.driver import JobEnvironment
from sparktide.runtime.execution.path import Request
from sparktide.runtime.execution.planner import Plan
from sparktide.runtime.execution.tasks import SUMMED_METRICS, splits_of
from sparktide.runtime.failures import is_described
from sparktide.runtime.filesystems import check_sink_folders, check_writable
from sparktide.runtime.graph import JobGraph
from sparktide.runtime.operator_identity import operator_identities
from sparktide.runtime.processing_time import wall_clock_ms
from sparktide.runtime.state.recorded_types import OperatorStateTypes
from sparktide.spark.batch_inputs import InputCheck, SkippedInputs
from sparktide.spark.batch_lock import BatchLock
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore, checkpoint_interval
from sparktide.spark.checkpoint_format import JsonObject
from sparktide.spark.checkpoint_lock import CheckpointLock
from sparktide.spark.checkpoint_meta import (
    BatchCommit,
    CommitManifest,
    JobFingerprint,
    OperatorRef,
    SourceRef,
    SplitState,
    StageFingerprint,
    SubtaskWrite,
)
from sparktide.spark.checkpoint_native import (
    complete_native_checkpoints,
    discard_native_checkpoints,
    native_checkpoint_metrics,
    native_stages,
)
from sparktide.spark.columnar_sources import spark_path
from sparktide.spark.columnar_stream import columnar_stream
from sparktide.spark.connect_batches import connect_batch_function
from sparktide.spark.executor import SparkExecutor, plan_of, without_adaptive_execution
from sparktide.spark.failures import quiet_query_failure_log
from sparktide.spark.offset_log import read_spark_log
from sparktide.spark.preflight import preflight
from sparktide.spark.query_trigger import creation_settings, with_trigger
from sparktide.spark.savepoint_start import read_start, without_files
from sparktide.spark.session import is_connect
from sparktide.spark.session_conf import session_settings
from sparktide.spark.shipments import BatchOutcome
from sparktide.spark.stopping import (
    POLL_SECONDS,
    QueryStopped,
    QueryStopping,
    StopReport,
    StopSignals,
    stop_signals,
)
from sparktide.spark.stream_batch import BatchFrames, Heartbeats, PerRecordBatch
from sparktide.spark.stream_job import StreamingJob
from sparktide.spark.stream_metrics import (
    LOGGER,
    BatchMetrics,
    SplitSummary,
    batch_metrics,
    format_progress,
)
from sparktide.spark.stream_sinks import (
    ConsoleBatchSink,
    ForeachBatchSink,
    JsonBatchSink,
    ParquetBatchSink,
    StreamingExactlyOnceWarning,
    batch_sink_of,
    idempotence_warnings,
)
from sparktide.spark.stream_source import StreamSource, has_stream_source
from sparktide.spark.stream_union import rows_of_source, union_streams

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from sparktide.common.configuration import Configuration
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.spark.spark_job import SparkJob
    from sparktide.state_api.savepoint_format import SavepointManifest

__all__ = [
    "ConsoleBatchSink",
    "ForeachBatchSink",
    "JsonBatchSink",
    "ParquetBatchSink",
    "StreamSource",
    "StreamingJobClient",
    "has_stream_source",
    "start_stream",
]


class _Query(Protocol):
    """A running streaming query (classic or Spark Connect)."""

    @property
    def isActive(self) -> bool: ...

    def awaitTermination(self, timeout: float | None = None) -> bool | None: ...

    def stop(self) -> None: ...


# ---------------------------------------------------------------------------------------------
# the driver


def fingerprint(plan: Plan) -> JobFingerprint:
    """What a restore checks against the checkpoint (parallelism may change): the sources, and
    per stage its operators as ``[name, uid, identity]`` (state is matched by identity, see
    :mod:`sparktide.spark.restore_match`), its max parallelism and whether it is keyed; and
    the identities of the sinks that run where their input runs."""
    identities = operator_identities(plan.nodes)
    return JobFingerprint(
        tuple(SourceRef(n.name, n.uid, len(splits_of(n))) for n in plan.sources),
        tuple(
            StageFingerprint(
                tuple(OperatorRef(n.name, n.uid, identities[n.id]) for n in s.nodes),
                s.max_parallelism,
                s.keyed,
            )
            for s in plan.stages
        ),
        frozenset(identities[n.id] for n in plan.sinks if n.runs_with_input),
    )


def declared_key_types(plan: Plan) -> dict[str, TypeInformation | None]:
    """Per keyed stage's entry operator (by identity), the key type the job declares for it
    (what a restore checks against the checkpoint's record before the job starts)."""
    identities = operator_identities(plan.nodes)
    return {identities[s.entry.id]: s.key_type for s in plan.stages if s.keyed}


class StreamingJobClient(JobClient):
    """A running streaming job (what ``execute_async`` returns; PyFlink's ``JobClient``).

    ``await_termination(timeout)`` waits for the query to end (``True``) or the timeout to pass
    (``False``) and re-raises what failed the job; ``stop()`` stops it after the current batch;
    ``recent_progress`` holds the metrics of each micro-batch committed by this run (see
    :func:`~sparktide.spark.stream_metrics.batch_metrics`: combined and per-split watermarks,
    late records, timers fired and pending, state entries, duration); ``add_listener(fn)`` calls
    ``fn(metrics)`` after each committed batch.
    """

    def __init__(self, job_name: str, runner: _StreamRunner) -> None:
        self._job_id = JobID()
        self._job_name = job_name
        self._runner = runner

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """RUNNING while the query runs, then FINISHED (stopped or ended) or FAILED."""
        if self.is_active:
            return CompletableFuture.completed(JobStatus.RUNNING)
        failed = self._runner.error is not None
        return CompletableFuture.completed(JobStatus.FAILED if failed else JobStatus.FINISHED)

    def get_job_name(self) -> str:
        return self._job_name

    @property
    def recent_progress(self) -> list[BatchMetrics]:
        return list(self._runner.progress)

    @property
    def is_active(self) -> bool:
        return bool(self._runner.query.isActive)

    @property
    def spark_query(self) -> Any:
        """The Spark ``StreamingQuery`` that runs the job's micro-batches (classic or Connect):
        Spark's own view of them, e.g. ``recentProgress``, whose ``durationMs``
        ``triggerExecution`` is a whole micro-batch (Spark's planning and checkpoint logs as well
        as sparktide's work, which ``recent_progress``'s ``duration_ms`` times). Stop the job
        through the client (:meth:`stop`), which commits the batch in flight first."""
        return self._runner.query

    def add_listener(self, listener: Callable[[BatchMetrics], None]) -> None:
        """Call ``listener(metrics)`` on the driver after each committed micro-batch."""
        if not callable(listener):
            raise TypeError(
                f"listener must be a callable (metrics) -> None, got {type(listener).__name__}"
            )
        self._runner.listeners.append(listener)

    def last_committed_batch(self) -> int | None:
        return self._runner.store.committed_version()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the query to end (``True``) or ``timeout`` seconds to pass (``False``);
        re-raise what failed the job. While it waits in the main thread, SIGINT and SIGTERM
        stop the query after the micro-batch in flight commits (a second one abandons that
        batch), print one line saying what was committed and raise :class:`~sparktide.spark.
        stopping.QueryStopped` (exit code 130 or 143): see :mod:`sparktide.spark.stopping`."""
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
            raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
        with stop_signals() as signals:
            done = self._wait(timeout, signals)
        if done:
            self._runner.restore_log()
            self._runner.end()
        self._raise_failure()
        return done

    def _wait(self, timeout: float | None, signals: StopSignals) -> bool:
        """Wait in short steps (a signal only records itself, see :mod:`sparktide.spark.
        stopping`), stopping the query once a signal came."""
        query = self._runner.query
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            signum = signals.first
            if signum is not None:
                report = self._runner.stop(signals.abandon, signum)
                print(report.describe(), file=sys.stderr, flush=True)
                raise QueryStopped(report)
            left = POLL_SECONDS if deadline is None else deadline - time.monotonic()
            try:
                # at least 1 ms: Spark Connect refuses a timeout of 0
                if query.awaitTermination(max(0.001, min(POLL_SECONDS, left))):
                    return True
            except Exception:
                self._runner.end()  # the query failed, or a stop ended it
                if self._runner.stopping and self._runner.error is None:
                    return True
                self._raise_failure()
                raise
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _raise_failure(self) -> None:
        """Raise the error that failed a batch, if one did (a user function's without py4j's
        frames: its own are in its note)."""
        error = self._runner.error
        if error is None:
            return
        self._runner.restore_log()
        if is_described(error):
            raise error.with_traceback(None) from error.__cause__
        raise error from None

    def stop(self) -> StopReport:
        """Stop the query after the micro-batch in flight commits (no new one starts) and
        return what the checkpoint holds; a second call returns the same."""
        return self._runner.stop()

    def stop_with_savepoint(self, path: str) -> SavepointManifest:
        """Stop the query as :meth:`stop` does (the micro-batch in flight commits, no new one
        starts), then write a savepoint of the last committed version into ``path`` (absent or
        an empty directory, checked before the query is stopped) and return its manifest
        (:func:`~sparktide.state_api.savepoint.write_savepoint`; see ``docs/savepoints.md``)."""
        from sparktide.state_api.savepoint import check_savepoint_target, write_savepoint

        check_savepoint_target(path)
        report = self.stop()
        return write_savepoint(report.location, path, report.version)

    def cancel(self) -> StopReport:
        """Stop the query at once: a micro-batch in flight is abandoned, not committed (Spark
        replays it at the restart)."""
        return self._runner.stop(abandon=_always)

    def metrics(self) -> dict[str, object]:
        """Totals over the committed micro-batches of this run, the user metrics
        (``get_metrics_group()``) included: counters and meter counts summed over batches,
        gauges as of the last batch."""
        out: dict[str, int] = {"rounds": 0, **dict.fromkeys(SUMMED_METRICS, 0)}
        for p in self._runner.progress:
            out["rounds"] += 1
            for name in SUMMED_METRICS:
                out[name] += p[name]  # type: ignore[literal-required]  # the summed names
        return {**out, **self._runner.user_metrics.as_dict()}


class _StreamRunner:
    """Runs each micro-batch (the ``foreachBatch`` function) and commits it; between Spark's
    batches, runs batches without new data when processing-time timers or split idleness are
    due (:meth:`run_due_batch`)."""

    def __init__(
        self,
        executor: SparkExecutor,
        store: CheckpointStore,
        writer_lock: CheckpointLock | None = None,
        skip_missing_input_files: bool = False,
    ) -> None:
        self.executor = executor
        self.skip_missing_input_files = skip_missing_input_files
        plan = executor.plan
        self.nodes = list(plan.sources)
        self.first_splits = []
        first = 0
        for node in self.nodes:
            self.first_splits.append(first)
            first += len(splits_of(node))
        # the sinks' records in typed columns, written by the tasks that produce them
        self.base = executor.job(executor.written_frame_rows(ordered=True))
        self.one_pass = _one_pass(executor, self.base)
        self.heartbeats = Heartbeats()  # their frame, made once per session
        # the path choice: an eligible window aggregate runs its batches on columns
        self.columnar = columnar_stream(plan, executor.path(Request.stream()))  # None: per record
        self.store = store
        identities = operator_identities(plan.nodes)
        self.entry_identities = {s.index: identities[s.entry.id] for s in plan.stages}
        timeouts = [getattr(n.watermark_strategy, "idle_timeout", None) for n in self.nodes]
        self.idle_timeout: int | None = min((t for t in timeouts if t is not None), default=None)
        self.progress: list[BatchMetrics] = []
        self.user_metrics = MetricsReport()  # of the committed batches
        self.listeners: list[Callable[[BatchMetrics], None]] = []
        self.error: BaseException | None = None
        self.restore_log: Callable[[], None] = lambda: None
        self.stopping = False  # stop() was called: no batch starts, a failure is not an error
        self.stopped: StopReport | None = None  # what stop() reported
        self.query: _Query = None  # type: ignore[assignment]  # set by start()
        self.lock = BatchLock(self.store)  # one run of a version at a time (also over Connect)
        self._stop_idle = threading.Event()
        self._idle_thread: threading.Thread | None = None
        self._last_commit: CommitManifest | None = None  # what this run committed last
        self.writer_lock = writer_lock  # taken by the pre-flight checks
        self.watching = False  # Spark Connect: the client reports the server's commits
        self.watched: int | None = None  # the last commit reported
        self.watch_lock = threading.Lock()

    # ------------------------------------------------------------------ the query's lifetime

    def start(self, writer: DataStreamWriter) -> None:
        """Start the query of ``writer``, holding the checkpoint directory's lock the pre-flight
        checks took (:mod:`sparktide.spark.preflight`: they also checked that Spark's logs agree
        with the last commit); the lock is released when the query ends, or here when the
        start fails."""
        try:
            committed, info = self._last()
            self._check_replayed_inputs(committed, _last_spark_batch(committed, info))
            self.query = writer.start()  # type: ignore[assignment]  # its seconds: a float
        except BaseException:
            self.end()
            raise
        threading.Thread(
            target=self._end_with_query, name="sparktide-query-end", daemon=True
        ).start()

    def _check_replayed_inputs(self, committed: int | None, last_spark: int | None) -> None:
        """The micro-batch Spark replays first (logged in its offset log, not committed): its
        input files are checked before the query starts (the batch checks them again)."""
        pending = 0 if last_spark is None else last_spark + 1
        if read_spark_log(self.store).last_offset == pending:
            version = 0 if committed is None else committed + 1
            InputCheck.start(self.store, version, pending, self.skip_missing_input_files)

    def stop(
        self, abandon: Callable[[], bool] = lambda: False, signum: int | None = None
    ) -> StopReport:
        """Stop the query once no micro-batch is in flight (none starts after this is called),
        or at once when ``abandon()`` turns true while one runs (it is not committed: Spark
        replays it at the restart); what the checkpoint then holds. Idempotent: a second call
        returns the first one's report."""
        if self.stopped is not None:
            return self.stopped
        self.stopping = True
        # a batch refused now (or abandoned) ends the query with an error Spark would log
        restore = quiet_query_failure_log(self.executor.spark) if not self.watching else None
        try:
            waited = self._wait_for_batch_in_flight(abandon)
            self.query.stop()
            self.end()
        finally:
            if restore is not None:
                restore()
        committed, info = self._last()
        last_spark = _last_spark_batch(committed, info)
        self.stopped = StopReport(self.store.location, committed, last_spark, signum, not waited)
        return self.stopped

    def _wait_for_batch_in_flight(self, abandon: Callable[[], bool]) -> bool:
        """Wait until no micro-batch runs (``False``: ``abandon()`` turned true first). On a
        classic session the driver runs the batches under :attr:`lock`; on Spark Connect the
        server does, and a Spark micro-batch is in flight while Spark's offset log is ahead of
        the last commit."""
        while True:
            if self.watching:
                if not self._connect_batch_in_flight() or not self.query.isActive:
                    return True
                time.sleep(POLL_SECONDS)
            elif self.lock.acquire(timeout=POLL_SECONDS):
                try:
                    self.stop_idle_batches()  # no batch without data starts either
                finally:
                    self.lock.release()
                return True
            if abandon():
                return False

    def _connect_batch_in_flight(self) -> bool:
        logged = read_spark_log(self.store).last_offset
        committed, info = self._last()
        last_spark = _last_spark_batch(committed, info)
        return logged is not None and (last_spark is None or logged > last_spark)

    def end(self) -> None:
        """The query has ended: stop the batches without data, release the checkpoint's lock
        (idempotent)."""
        self.stop_idle_batches()
        if self.writer_lock is not None:
            self.writer_lock.release()

    def _end_with_query(self) -> None:
        """Call :meth:`end` when the query ends, also when nobody awaits it."""
        while self.writer_lock is not None and self.writer_lock.held:
            try:
                if self.query.awaitTermination(1.0):
                    break
            except Exception:  # the query failed (its error goes to await_termination)
                break
        self.end()

    def __getstate__(self) -> dict[str, object]:
        """What runs the batches where Spark Connect calls ``foreachBatch`` (on the server):
        without the client's query handle, threads, listeners and progress."""
        state = dict(self.__dict__)
        client_only = ("lock", "watch_lock", "writer_lock", "restore_log", "_stop_idle")
        for name in (*client_only, "_idle_thread", "query", "error"):
            state[name] = None
        state["listeners"], state["progress"] = [], []
        # a batch sink's function stays on the driver when the plan is shipped to the workers;
        # here it must travel with the runner
        sinks = ((n.id, batch_sink_of(n.frame_writer)) for n in self.executor.plan.sinks)
        state["sink_functions"] = {i: sink.fn for i, sink in sinks if sink is not None}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:  # the attributes: any value
        functions = state.pop("sink_functions", {})
        self.__dict__.update(state)
        for node in self.executor.plan.sinks:
            sink = batch_sink_of(node.frame_writer)
            if sink is not None and node.id in functions:
                sink.fn = functions[node.id]
        self.lock = BatchLock(self.store)
        self.watch_lock = threading.Lock()
        self._stop_idle = threading.Event()
        self.restore_log = lambda: None

    # ------------------------------------------------------------------ Spark's batches

    def on_batch(self, batch_df: DataFrame, batch_id: int) -> None:
        try:
            with self.lock:
                self._on_spark_batch(batch_df, int(batch_id))
        except BaseException as exc:
            # a batch stop() refuses or cancel() interrupts is not a failure (it is not committed:
            # the next run replays it)
            if not self.stopping:
                self.error = exc
                if is_described(exc):  # a user function's error: raised by await_termination
                    # (without py4j's frames), and not logged by Spark as well
                    self.restore_log = quiet_query_failure_log(self.executor.spark)
            raise

    def _last(self) -> tuple[int | None, CommitManifest | None]:
        committed = self.store.committed_version()
        return committed, None if committed is None else self.store.commit_info(committed)

    def _on_spark_batch(self, batch_df: DataFrame, spark_batch: int) -> None:
        if self.stopping:  # not run, so not committed by Spark either: replayed at the restart
            raise QueryStopping(f"the query is stopping: micro-batch {spark_batch} is not run")
        committed, info = self._last()
        last_spark = _last_spark_batch(committed, info)
        if last_spark is not None and spark_batch <= last_spark:
            return  # committed before a failure: Spark replays it, its output is written
        expected = 0 if last_spark is None else last_spark + 1
        if spark_batch != expected:
            raise CheckpointError(
                f"micro-batch {spark_batch} does not follow the last committed micro-batch "
                f"{last_spark} of the checkpoint at {self.store.location!r} (Spark's offsets "
                f"under {self.store.spark_checkpoint_location!r} do not match sparktide's "
                "state); use a new checkpoint directory"
            )
        if len(self.nodes) == 1:
            frames = [batch_df]
        else:
            frames = [rows_of_source(batch_df, k) for k in range(len(self.nodes))]
        self._run_version(frames, committed, info, spark_batch)

    # ------------------------------------------------------------------ batches without data

    def start_idle_batches(self, poll_ms: int) -> None:
        """Check every ``poll_ms`` whether a batch without new data is due, and run it."""
        self._start_loop(self._idle_loop, (poll_ms / 1000,), "sparktide-due-batches")

    def _start_loop(self, loop: Callable[..., None], args: tuple[object, ...], name: str) -> None:
        self._idle_thread = threading.Thread(target=loop, args=args, name=name, daemon=True)
        self._idle_thread.start()

    def stop_idle_batches(self) -> None:
        self._stop_idle.set()
        thread = self._idle_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if self.watching:
            self._report_new_commits()  # the commits of the last batches

    def _idle_loop(self, poll: float) -> None:
        while not self._stop_idle.wait(poll):
            if not self._run_due_batch_or_end():
                return

    def _run_due_batch_or_end(self) -> bool:
        """Run a batch without new data if one is due; ``False`` once the checks end: the
        query ended, or the batch failed (the query fails with its error, as it does with a
        failed Spark batch)."""
        if self.query is not None and not self.query.isActive:
            return False
        try:
            self.run_due_batch(wall_clock_ms())
        except BaseException as exc:
            if not self.stopping:
                self.error = exc
            self._stop_idle.set()
            self.query.stop()
            return False
        return True

    def due(self, info: CommitManifest | None, wall: int) -> bool:
        """Whether a batch without new data would do something at ``wall``: a processing-time
        timer is due, or idleness is configured, a split is not idle yet and ``idle_timeout``
        has passed since the last batch."""
        if info is None:
            return False
        head = info.metrics.get("next_processing_timer")
        if isinstance(head, int) and head <= wall:
            return True
        if self.idle_timeout is None:
            return False
        splits = info.metrics.get("split_watermarks")
        active = isinstance(splits, dict) and any(w != "idle" for w in splits.values())
        return active and wall - info.processing_time >= self.idle_timeout

    def run_due_batch(self, wall: int) -> bool:
        """Run a batch without new data if one is due (and no batch is running, here or on a
        Spark Connect server, or waiting to be replayed); returns whether it ran. It holds the
        :class:`~sparktide.spark.batch_lock.BatchLock` from reading the last commit to writing
        its own, so no other run writes its version."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            if self._last_commit is None:  # a restart: what the checkpoint holds
                self._last_commit = self._last()[1]
            if not self.due(self._last_commit, wall):  # checked without reading the store
                return False
            committed, info = self._last()
            if committed is None or not self.due(info, wall):
                return False
            if self.store.pending_spark_batch(committed + 1):
                return False
            if self.watching:  # the server's commits are reported first, then this one's
                self._report_new_commits()
            frames = [_empty_like(n.source.df) for n in self.nodes]
            self._run_version(frames, committed, info, None)
            if self.watching:  # reported by its run: not again from the checkpoint
                with self.watch_lock:
                    self.watched = committed + 1
            return True
        finally:
            self.lock.release()

    # ------------------------------------------------------------------ Spark Connect

    def start_watching_commits(
        self, poll_ms: int, reported: int | None, due_batches: bool = False
    ) -> None:
        """Spark Connect runs Spark's batches on the server: report each version committed
        there after ``reported`` (the last version committed before the query started) with
        its metrics, from the checkpoint, every ``poll_ms``; with ``due_batches``, run the
        batches without new data here (see :meth:`run_due_batch`), where the checkpoint's lock
        excludes the server's batches (:meth:`BatchLock.excludes_processes`)."""
        self.watched = reported
        self.watching = True
        run_due = due_batches and self.lock.excludes_processes()
        self._start_loop(self._watch_loop, (poll_ms / 1000, run_due), "sparktide-commits")

    def _watch_loop(self, poll: float, run_due: bool) -> None:
        while not self._stop_idle.wait(poll):
            try:
                self._report_new_commits()
            except Exception:  # the query itself reports what failed
                return
            if run_due and not self._run_due_batch_or_end():
                return

    def _report_new_commits(self) -> None:
        """Report the versions committed since the last one reported; the newest is what the
        next check for a due batch starts from."""
        with self.watch_lock:
            committed = self.store.committed_version()
            if committed is None:
                return
            first = 0 if self.watched is None else self.watched + 1
            for version in range(first, committed + 1):
                try:
                    info = self.store.commit_info(version)
                except CheckpointError:  # cleaned up already (more commits than retained)
                    continue
                self._report(cast(BatchMetrics, info.metrics))  # written from a BatchMetrics
                self.watched = version
                self._last_commit = info

    # ------------------------------------------------------------------ one version

    def _run_version(
        self,
        frames: list[DataFrame],
        committed: int | None,
        previous: CommitManifest | None,
        spark_batch: int | None,
    ) -> None:
        started = time.perf_counter()
        store = self.store
        version = 0 if committed is None else committed + 1
        # a replay reads what its first attempt read (checked before anything is written)
        input_check = (
            None
            if spark_batch is None
            else InputCheck.start(store, version, spark_batch, self.skip_missing_input_files)
        )
        wall = wall_clock_ms()
        previous_now = wall if previous is None else previous.processing_time
        # processing time never goes backwards, even on a restart on a machine whose clock is
        # behind; a replay sees the time recorded by the batch's first attempt
        now = store.batch_processing_time(version, max(wall, previous_now), spark_batch)
        previous_now = min(previous_now, now)
        split_states = (
            {}
            if committed is None or previous is None
            else store.read_splits(committed, previous.files)
        )
        job = StreamingJob(self.base, store, version, now, previous_now, previous, split_states)
        # each subtask must keep its own shuffle partition; the session's confs come back after
        with without_adaptive_execution(frames[0].sparkSession.conf):
            self._run_batch(frames, job, spark_batch, started, input_check)

    def _run_batch(
        self,
        frames: list[DataFrame],
        job: StreamingJob,
        spark_batch: int | None,
        started: float,
        input_check: InputCheck | None = None,
    ) -> None:
        """The driver pipeline of micro-batch ``job.version``: build its frames on its path,
        run them and decode what they tell the driver, check it, print, write the sinks, then
        commit (split states, metrics, manifest, native checkpoints) and report."""
        store = self.store
        batch = self._batch_frames(frames, job)
        committed = False
        try:
            outcome = BatchOutcome.of(batch.driver_values())
            _check_outcome(outcome)
            splits = {**job.split_states, **outcome.splits}
            summaries = {g: _split_summary(s, job.split_states.get(g)) for g, s in splits.items()}
            # before any sink writes: what the first attempt read is recorded, a replay checked
            skipped = (
                None if input_check is None else input_check.settle(store, _records_of(summaries))
            )
            outcome.print_lines()
            self._write_sinks(batch, job.version)
            store.write_splits(job.version, splits)
            metrics = self._batch_metrics(outcome, job, spark_batch, summaries, started, skipped)
            commit = self._commit_of(outcome, job, spark_batch, metrics)
            self._last_commit = store.commit(job.version, commit)
            committed = True
            complete_native_checkpoints(store, job.version, outcome.natives())
            self.user_metrics.merge(outcome.user_metrics)
            self._report(metrics)
        except BaseException:
            if store.native and not committed:  # its pending checkpoints go
                discard_native_checkpoints(store, job.version, self.executor.plan)
            raise
        finally:
            batch.unpersist()

    def _batch_frames(self, frames: list[DataFrame], job: StreamingJob) -> BatchFrames:
        """The batch's frames on its path: columnar when the job has that shape, else per
        record."""
        if self.columnar is not None:
            return self.columnar.batch(frames[0], job)
        return PerRecordBatch.build(
            self.executor,
            self.nodes,
            self.first_splits,
            frames,
            job,
            self.heartbeats,
            self.one_pass,
        )

    def _write_sinks(self, batch: BatchFrames, version: int) -> None:
        """Give each streaming sink the batch's frame of its records."""
        for node in self.executor.plan.sinks:
            if node.frame_writer is None:
                continue
            sink = batch_sink_of(node.frame_writer)
            if sink is None:
                node.frame_writer(batch.frame(node))
                continue
            records = batch.driver_records(node)
            if records is None or not sink.write_driver_records(records, version):
                sink.write_batch(batch.frame(node), version)

    def _batch_metrics(
        self,
        outcome: BatchOutcome,
        job: StreamingJob,
        spark_batch: int | None,
        splits: dict[int, SplitSummary],
        started: float,
        skipped: SkippedInputs | None,
    ) -> BatchMetrics:
        """The batch's metrics (:func:`batch_metrics`), with what its native checkpoints
        uploaded and the input files it skipped."""
        metrics = batch_metrics(
            version=job.version,
            spark_batch=spark_batch,
            processing_time=job.now,
            duration_ms=int((time.perf_counter() - started) * 1000),
            splits=splits,
            tasks=outcome.counts.as_totals(),
            subtasks=outcome.subtask_metrics(),
            restores=outcome.restores(),
        )
        natives = outcome.natives()
        if natives:
            metrics["rocksdb_checkpoints"] = native_checkpoint_metrics(natives)
        if skipped is not None:
            metrics["skipped_input_files"] = list(skipped.files)
            metrics["skipped_records"] = skipped.records
            LOGGER.warning(skipped.describe(job.version))
        return metrics

    def _commit_of(
        self,
        outcome: BatchOutcome,
        job: StreamingJob,
        spark_batch: int | None,
        metrics: BatchMetrics,
    ) -> BatchCommit:
        """What the batch commits: its time, parallelism, metrics, the files the subtasks
        wrote and the chains they wrote them as (every one must have reported)."""
        parallelism = {s.index: s.parallelism for s in self.executor.plan.stages}
        return BatchCommit(
            processing_time=job.now,
            spark_batch=spark_batch,
            last_spark_batch=_last_spark_batch_after(job.previous, spark_batch),
            parallelism=parallelism,
            metrics=cast(JsonObject, metrics),  # a BatchMetrics is a JSON object
            files=outcome.files(),
            chains=SubtaskWrite.chains(job.version, parallelism, outcome.writes()),
            state_types=self._state_types(outcome.writes()),
        )

    def _state_types(self, writes: list[SubtaskWrite]) -> dict[str, OperatorStateTypes]:
        """Per operator identity, the declared types of its keyed state the subtasks
        reported (a record in the checkpoint's metadata, for the next restore)."""
        entries = self.entry_identities
        return OperatorStateTypes.join(
            (entries[w.stage], w.state_types) for w in writes if w.state_types is not None
        )

    def _report(self, metrics: BatchMetrics) -> None:
        self.progress.append(metrics)
        if LOGGER.isEnabledFor(logging.INFO):
            LOGGER.info(format_progress(metrics))
        for listener in self.listeners:
            listener(metrics)


def _always() -> bool:
    return True


def _one_pass(executor: SparkExecutor, base: SparkJob) -> bool:
    """Whether the batches' sinks get their rows from each batch's one Spark job (else from
    persisted frames): the option, and sinks whose records the tasks write typed."""
    options = executor.config.get_configuration().to_dict()
    return bool(STREAM_SINKS_ONE_PASS.read(options)) and PerRecordBatch.one_pass_for(
        executor, base.frame_rows
    )


def _check_outcome(outcome: BatchOutcome) -> None:
    """A user function raised: the batch is not committed, the user's error is raised; records
    for a collect sink: a streaming job has none."""
    outcome.raise_failure()
    if outcome.collected:
        raise ValueError(
            "execute_and_collect() and to_dataframe() are not available on a streaming job; "
            "use sink_to(ForeachBatchSink(fn)) or sink_to(ParquetBatchSink(path))"
        )


def _empty_like(df: DataFrame) -> DataFrame:
    """An empty DataFrame with the columns of ``df`` (a batch without new data) over which
    every source split's task runs (and checks its idleness): an empty range, not an empty
    local relation, which is what ``createDataFrame([])`` is over Spark Connect and which
    Spark plans as no task at all."""
    from pyspark.sql import functions as F

    columns = [F.lit(None).cast(f.dataType).alias(f.name) for f in df.schema.fields]
    return df.sparkSession.range(0).select(*columns)


def _records_of(splits: dict[int, SplitSummary]) -> dict[int, int]:
    """The records each source split read in a batch."""
    return {g: s["records"] for g, s in splits.items()}


def _split_summary(state: SplitState, before: SplitState | None) -> SplitSummary:
    """A split's watermark, idleness and the records it read in this batch (none when it did
    not run and kept its state of the version before)."""
    return SplitSummary(
        watermark=state.watermark,
        idle=state.idle,
        records=state.records if state is not before else 0,
    )


def _last_spark_batch(committed: int | None, info: CommitManifest | None) -> int | None:
    """The last Spark micro-batch id whose rows are in committed version ``committed``."""
    if info is None:
        return None
    return info.last_spark_batch


def _last_spark_batch_after(previous: CommitManifest | None, spark_batch: int | None) -> int | None:
    if spark_batch is not None:
        return spark_batch
    if previous is None:
        return None
    return previous.last_spark_batch


def start_stream(
    graph: JobGraph,
    env: JobEnvironment,
    job_name: str,
    checkpoint_location: str | None,
    trigger: StreamTrigger | str | None,
    snapshot_every: int | None = None,
    allow_non_restored_state: bool = False,
    interval_ms: int | None = None,
    skip_missing_input_files: bool = False,
    from_savepoint: str | None = None,
) -> StreamingJobClient:
    """Start the streaming query of ``graph`` (see :meth:`StreamExecutionEnvironment.
    execute_async`). ``trigger``: when micro-batches start
    (:class:`~sparktide.common.stream_trigger.StreamTrigger` or its string form); ``None``: at
    most every ``interval_ms`` (the checkpoint interval) when it is set, else as soon as data
    arrives, until stopped. ``skip_missing_input_files``: replay a micro-batch whose input
    files are gone without them (see :mod:`sparktide.spark.batch_inputs`).
    ``from_savepoint``: start in the new checkpoint directory from that savepoint (see
    :mod:`sparktide.spark.savepoint_start`)."""
    resolved = StreamTrigger.resolve(trigger, interval_ms)
    location = _checked_start(checkpoint_location)
    if from_savepoint is not None and (not isinstance(from_savepoint, str) or not from_savepoint):
        raise TypeError(
            f"from_savepoint must be the path of a savepoint (a str), got {from_savepoint!r}"
        )
    config = env.get_config()
    plan = plan_of(graph, env)

    def store_at(where: str) -> CheckpointStore:
        return _checkpoint_store(
            plan, config.get_configuration(), where, snapshot_every, allow_non_restored_state
        )

    store = store_at(location)
    savepoint = None if from_savepoint is None else store_at(from_savepoint)
    lock = preflight(plan, store, savepoint)  # before the session runs anything
    try:
        executor = SparkExecutor(graph, env, plan)
        connect = is_connect(executor.spark)
        if not connect:
            check_sink_folders(graph.sinks())
        runner = _StreamRunner(executor, store, lock, skip_missing_input_files)
        for message in idempotence_warnings(plan):
            # the user's execute_async() / execute() call (past SparkRunner.start_stream)
            warnings.warn(message, StreamingExactlyOnceWarning, stacklevel=4)
        reported = store.committed_version()  # this run reports the versions after it
        with session_settings(executor.spark.conf, creation_settings(resolved)):
            runner.start(_stream_writer(runner, connect, resolved))
    except BaseException:  # the query did not start: the lock is given back
        lock.release()
        raise
    poll_ms = env.get_config().get_auto_watermark_interval()
    if connect:  # the server runs Spark's batches (see docs/spark.md)
        runner.start_watching_commits(poll_ms, reported, due_batches=resolved.runs_until_stopped)
    elif resolved.runs_until_stopped:
        runner.start_idle_batches(poll_ms)
    return StreamingJobClient(job_name, runner)


def _checkpoint_store(
    plan: Plan,
    configuration: Configuration,
    location: str,
    snapshot_every: int | None,
    allow_non_restored_state: bool,
) -> CheckpointStore:
    """The checkpoint of ``plan`` at ``location`` (its fingerprint, snapshot interval and the
    stages checkpointed natively), made from the plan alone: no session needed."""
    choice = spark_path(plan, configuration, Request.stream())
    return CheckpointStore(
        location,
        fingerprint(plan),
        checkpoint_interval(plan.state_backend, snapshot_every),
        allow_non_restored_state,
        plan.state_backend.kind,
        # the keyed state of a RocksDB job stays in worker-local databases, checkpointed
        # natively (the columnar path rebuilds its state every batch: neutral snapshots)
        native_stages(plan, per_record=not choice.path.columnar),
        key_types=declared_key_types(plan),
    )


def _checked_start(checkpoint_location: str | None) -> str:
    """The checkpoint location, once it is given and can be written (before Spark starts the
    query: the driver writes the checkpoint; over Spark Connect, sink paths are the
    server's)."""
    if checkpoint_location is None:
        raise ValueError(
            "checkpoint_location is required for a job reading env.from_stream(...): the "
            "directory (path or pyarrow.fs URI) where its state, timers and progress are kept; "
            "pass execute(..., checkpoint_location='/path/to/ckpt')"
        )
    check_writable(checkpoint_location, "checkpoint_location")
    return checkpoint_location


def _stream_writer(
    runner: _StreamRunner, connect: bool, trigger: StreamTrigger
) -> DataStreamWriter:
    """The query over the sources' streams: each micro-batch runs ``runner``'s batch, started
    as ``trigger`` says (:func:`~sparktide.spark.query_trigger.with_trigger`)."""
    frames = [n.source.df for n in runner.nodes]
    started = read_start(runner.store)
    if started is not None:  # the files read before the savepoint are not read again
        frames = [
            without_files(df, started.files_of(k, n.name, n.uid))
            for k, (df, n) in enumerate(zip(frames, runner.nodes, strict=True))
        ]
    stream = frames[0] if len(frames) == 1 else union_streams(frames)
    on_batch = connect_batch_function(runner) if connect else runner.on_batch
    writer = stream.writeStream.foreachBatch(on_batch).option(
        "checkpointLocation", runner.store.spark_checkpoint_location
    )
    writer = writer.queryName(f"sparktide-{uuid.uuid4().hex[:8]}")
    return with_trigger(writer, trigger)
