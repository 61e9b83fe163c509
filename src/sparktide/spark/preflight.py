"""What a streaming job checks before Spark runs anything: the pre-flight checks.

Everything that the job graph and the checkpoint directory decide is checked here, before the
session is asked for anything (no worker check, no Spark job): a job that cannot run fails in
well under a second after ``execute()`` is called, not after a Spark job or two.
:func:`preflight` runs, in order:

1. every source reads a stream (``env.from_stream``), and every sink that writes typed columns
   declares a type (:func:`~sparktide.spark.stream_sinks.check_declared_types`);
2. the job can restore the checkpoint's last commit (:func:`check_restore`: its operators match
   the stored ones by identity, :func:`~sparktide.spark.restore_match.check_restorable`) -- the
   one place where a restore is checked against what the checkpoint holds; a checkpoint whose
   start from a savepoint was interrupted is refused. A job started from a savepoint
   (``from_savepoint``) is checked against the savepoint instead, and its checkpoint directory
   must be new (:func:`~sparktide.spark.savepoint_start.check_new_checkpoint`);
3. no other query writes the directory: its lock is taken
   (:mod:`sparktide.spark.checkpoint_lock`), and kept by the query that starts; under it, a job
   started from a savepoint copies the savepoint's version into the new directory
   (:func:`~sparktide.spark.savepoint_start.start_from_savepoint`);
4. Spark's offset and commit logs agree with the last commit
   (:func:`~sparktide.spark.offset_log.check_spark_log`; a checkpoint started from a savepoint
   has a commit and no Spark log until its first micro-batch, and that commit includes no
   Spark micro-batch).

>>> import tempfile
>>> from sparktide.spark.checkpoint import CheckpointStore
>>> store = CheckpointStore(tempfile.mkdtemp())
>>> check_restore(store) is None  # nothing committed yet
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.spark.checkpoint_lock import CheckpointLock
from sparktide.spark.offset_log import check_spark_log
from sparktide.spark.savepoint_start import (
    check_new_checkpoint,
    check_start_completed,
    start_from_savepoint,
)
from sparktide.spark.stream_sinks import check_declared_types
from sparktide.spark.stream_source import StreamSource

if TYPE_CHECKING:
    from sparktide.runtime.execution.planner import Plan
    from sparktide.spark.checkpoint import CheckpointStore

__all__ = ["check_restore", "check_stream_sources", "preflight"]


def check_stream_sources(plan: Plan) -> None:
    """Raise ``ValueError`` when a source of ``plan`` is not made by ``env.from_stream``."""
    bounded = [n.name for n in plan.sources if not isinstance(n.source, StreamSource)]
    if bounded:
        raise ValueError(
            "every source of a streaming job must be made by env.from_stream(...); this job "
            f"also reads the bounded source(s) {bounded}: read them as streams too (e.g. "
            "spark.readStream on their files) or run the job bounded with from_dataframe"
        )


def check_restore(store: CheckpointStore) -> int | None:
    """The version of the checkpoint's last commit (``None``: nothing committed), once the job
    of ``store`` (its fingerprint) can restore it: every checkpointed operator has a match in
    the job unless ``allow_non_restored_state``
    (:func:`~sparktide.spark.restore_match.check_restorable`)."""
    return store.committed_version()  # raises from check_restorable on a mismatch


def preflight(
    plan: Plan, store: CheckpointStore, savepoint: CheckpointStore | None = None
) -> CheckpointLock:
    """Run the pre-flight checks of a streaming job (see the module docstring) and return the
    checkpoint directory's lock, held: the caller hands it to the query it starts, or releases
    it when the start fails. ``savepoint``: the savepoint the job starts from, read as the
    job's checkpoint (``None``: the job restarts from what ``store`` holds)."""
    check_stream_sources(plan)
    check_declared_types(plan)  # a job refused creates no output folder
    if savepoint is None:
        check_restore(store)
        check_start_completed(store)
        manifest = None
    else:
        manifest = check_new_checkpoint(store, savepoint)
    lock = CheckpointLock.acquire(store)
    try:
        if savepoint is not None and manifest is not None:
            start_from_savepoint(store, savepoint.location, manifest)
        committed = store.committed_version()  # under the lock: no other writer now
        last_spark = None if committed is None else store.commit_info(committed).last_spark_batch
        check_spark_log(store, committed, last_spark)
    except BaseException:
        lock.release()
        raise
    return lock
