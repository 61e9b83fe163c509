"""Spark's offset log and sparktide's commits must tell one story, checked before a query starts.

A streaming checkpoint has two parts (see :mod:`sparktide.spark.checkpoint`): sparktide's
commits (state, timers and the last Spark micro-batch each version includes) and, under
``<location>/spark``, Spark's own checkpoint of the query: its *offset log* (``offsets/<n>``,
which input micro-batch ``n`` reads, written before the batch runs) and its *commit log*
(``commits/<n>``, written after the batch function returned). Spark plans the next micro-batch
from them; sparktide skips a micro-batch it already committed. If the two parts disagree,
micro-batches are planned afresh (for instance with another ``maxFilesPerTrigger``) under ids
sparktide believes committed, and their rows are skipped without any error.

With ``S`` the last Spark micro-batch sparktide committed, the states a crash can leave are:

- Spark's offset log ends at ``S`` (Spark's commit of ``S`` may be missing: the crash came
  between the two commits; Spark replays ``S`` and sparktide skips it), or
- it ends at ``S + 1``: the micro-batch in flight, which Spark replays with the same offsets.

Anything else is refused by :func:`check_spark_log` with a :class:`SparkLogMismatchError`:
Spark's log missing or empty while sparktide has committed micro-batches, Spark's log behind
``S`` or more than one micro-batch ahead of it, or Spark's commit log ahead of ``S``.

>>> import tempfile
>>> from sparktide.spark.checkpoint import CheckpointStore
>>> store = CheckpointStore(tempfile.mkdtemp())
>>> read_spark_log(store)
SparkLog(last_offset=None, last_commit=None)
>>> check_spark_log(store, committed=None, last_spark_batch=None)  # a new checkpoint
>>> check_spark_log(store, committed=4, last_spark_batch=4)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.offset_log.SparkLogMismatchError: Spark's offset log ... is missing or empty, ...
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktide.spark.checkpoint import CheckpointError, CheckpointStore

__all__ = ["SparkLog", "SparkLogMismatchError", "check_spark_log", "read_spark_log"]

_FIX = (
    "restore the whole checkpoint directory (sparktide's files and spark/) from one backup, "
    "or run the job on a new, empty checkpoint directory (it then reads its sources from the "
    "start)"
)


class SparkLogMismatchError(CheckpointError):
    """Spark's offset or commit log under ``<checkpoint>/spark`` does not match sparktide's
    commits: starting the query would skip or repeat input rows."""


@dataclass(frozen=True)
class SparkLog:
    """The newest micro-batch ids in Spark's offset log and commit log (``None``: empty or
    missing)."""

    last_offset: int | None
    last_commit: int | None


def _last_batch(store: CheckpointStore, folder: str) -> int | None:
    # Spark names its log entries by batch id; its checksum (".<n>.crc") and temporary files
    # are not entries
    ids = [int(name) for name in store.names("spark", folder) if name.isdigit()]
    return max(ids, default=None)


def read_spark_log(store: CheckpointStore) -> SparkLog:
    """The newest entries of Spark's offset and commit logs of the checkpoint ``store``, read
    through the store's file system."""
    return SparkLog(_last_batch(store, "offsets"), _last_batch(store, "commits"))


def check_spark_log(
    store: CheckpointStore, committed: int | None, last_spark_batch: int | None
) -> None:
    """Raise :class:`SparkLogMismatchError` unless Spark's logs of ``store`` agree with
    sparktide's last commit: version ``committed`` (``None``: nothing committed), which
    includes Spark's micro-batches up to ``last_spark_batch`` (``None``: none)."""
    log = read_spark_log(store)
    spark = store.spark_checkpoint_location
    offsets, commits = f"{spark}/offsets", f"{spark}/commits"
    s = last_spark_batch
    ours = (
        "sparktide has committed nothing"
        if committed is None
        else f"sparktide's last commit (batch {committed} of {store.location!r}) includes "
        + ("no Spark micro-batch" if s is None else f"Spark micro-batches up to {s}")
    )
    if s is not None and log.last_offset is None:
        raise SparkLogMismatchError(
            f"Spark's offset log {offsets!r} is missing or empty, but {ours}: started like "
            "this, Spark would read its sources from the beginning under micro-batch ids "
            f"sparktide skips as committed, and rows would be lost; {_FIX}"
        )
    if log.last_offset is not None:
        if s is not None and log.last_offset < s:
            raise SparkLogMismatchError(
                f"Spark's offset log {offsets!r} ends at micro-batch {log.last_offset}, "
                f"behind sparktide: {ours}. The two parts of the checkpoint are from different "
                "points in time (restored or copied separately?), and Spark would plan "
                "micro-batches again that sparktide skips as committed; " + _FIX
            )
        pending = 0 if s is None else s + 1
        if log.last_offset > pending:
            raise SparkLogMismatchError(
                f"Spark's offset log {offsets!r} holds micro-batch {log.last_offset}, but "
                f"{ours}: after a failure at most micro-batch {pending} may be logged and not "
                f"committed, so micro-batches {pending}..{log.last_offset} were never "
                f"processed by this checkpoint's state (sparktide's commits deleted or restored "
                "from an older backup?); " + _FIX
            )
    if log.last_commit is not None and (s is None or log.last_commit > s):
        raise SparkLogMismatchError(
            f"Spark's commit log {commits!r} marks micro-batch {log.last_commit} done, but "
            f"{ours}: Spark would not replay the micro-batches sparktide has not committed and "
            f"their rows would be lost; {_FIX}"
        )
