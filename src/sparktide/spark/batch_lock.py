"""One run of a version at a time: the lock a streaming query's micro-batches run under.

A micro-batch reads the last committed version ``v - 1`` and writes version ``v``. Two runs
that read the same ``v - 1`` would both write ``v``: so every run holds the query's
:class:`BatchLock` from before it reads the last commit until it has committed (or failed),
and a run that waited for the lock reads the last commit again, then writes the version after
it. The runs come from two places:

- Spark's micro-batches (the query's ``foreachBatch`` function), which wait for the lock;
- batches without new data (processing-time timers or idleness due between Spark's batches),
  which try the lock and, when a batch holds it, leave the check to the next poll.

On a classic session both run in the driver, and a thread lock serializes them. Over Spark
Connect, Spark's micro-batches run on the server (in the ``foreachBatch`` process, see
:mod:`sparktide.spark.connect_batches`) and batches without new data on the client: the lock
is also ``flock()`` on ``<checkpoint>/batch.lock``, a file both processes open, so that at
most one of them runs a version. The kernel releases it when its holder ends, however it ends.
Where there is no ``flock()`` (object stores, file systems without it),
:meth:`BatchLock.excludes_processes` is ``False`` and the client runs no batch itself.

>>> import tempfile
>>> from sparktide.spark.checkpoint import CheckpointStore
>>> lock = BatchLock(CheckpointStore(tempfile.mkdtemp()))
>>> other = BatchLock(lock.store)  # e.g. in another process
>>> lock.excludes_processes()
True
>>> with lock:
...     other.acquire(blocking=False), other.acquire(timeout=0.05)
(False, False)
>>> other.acquire(blocking=False)
True
>>> other.release()
"""

from __future__ import annotations

import os
import threading
import time

from sparktide.runtime.filesystems import write_failure
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_lock import NO_FLOCK

__all__ = ["BATCH_LOCK_FILE", "BatchLock"]

BATCH_LOCK_FILE = "batch.lock"
_RETRY_S = 0.01  # between tries of a lock held elsewhere, when waiting has a timeout


class BatchLock:
    """The lock of the versions of the checkpoint of ``store`` (see the module docstring):
    ``acquire(blocking)`` / ``release()``, or ``with lock:`` (waits)."""

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self._thread = threading.Lock()
        self._fd: int | None = None
        self._path = _lock_path(store)

    def excludes_processes(self) -> bool:
        """Whether the lock also excludes other processes (``flock()`` on the checkpoint's
        file system); probed without waiting for a holder."""
        path = self._path
        if path is None:
            return False
        import fcntl

        try:
            fd = _open(path)
        except CheckpointError:  # the batches will say why
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # held: the file system has flock()
            return True
        except OSError as exc:
            if exc.errno not in NO_FLOCK:
                raise
            return False
        finally:
            os.close(fd)  # releases what this descriptor holds
        return True

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock, as ``threading.Lock.acquire`` does (``blocking``: wait for its holder,
        at most ``timeout`` seconds when it is >= 0); whether it was taken."""
        wait = timeout if blocking else -1
        deadline = time.monotonic() + timeout if blocking and timeout >= 0 else None
        if not self._thread.acquire(blocking, wait):
            return False
        try:
            taken = self._lock_file(blocking, deadline)
        except BaseException:
            self._thread.release()
            raise
        if not taken:
            self._thread.release()
        return taken

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # releases the flock
        self._thread.release()

    def __enter__(self) -> BatchLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _lock_file(self, blocking: bool, deadline: float | None) -> bool:
        """``flock()`` the lock file (when there is one), held until :meth:`release`; waits for
        its holder when ``blocking``, until ``deadline`` (``time.monotonic()``) if given."""
        path = self._path
        if path is None:
            return True
        import fcntl

        fd = _open(path)
        wait = blocking and deadline is None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is None or time.monotonic() >= deadline:
                        os.close(fd)
                        return False
                    time.sleep(_RETRY_S)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in NO_FLOCK:
                raise
            return True  # no flock() there: the thread lock only (the client runs no batch)
        self._fd = fd
        return True


def _lock_path(store: CheckpointStore) -> str | None:
    """The lock file of a checkpoint on a local file system with ``fcntl`` (else ``None``)."""
    if not store.is_local:
        return None
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - not a POSIX system
        return None
    return os.path.join(store.root, BATCH_LOCK_FILE)


def _open(path: str) -> int:
    """A descriptor of the lock file (made if missing); a file that cannot be opened is a
    :class:`CheckpointError` naming it, why, and that no batch ran."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise CheckpointError(
            f"{path}: the checkpoint's batch lock could not be opened: "
            f"{write_failure(exc, path)}. No batch ran; once fixed, start the job again: it "
            "resumes from its last commit"
        ) from None
