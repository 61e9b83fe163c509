"""One writer per checkpoint directory: a lock a streaming query holds for its lifetime.

Two queries writing the same checkpoint directory overwrite each other's state and commits.
So a query takes the directory's lock before it starts, and a second query on the same
directory, from this process or another one, is refused with a
:class:`CheckpointLockedError` naming the holder (host, pid, start time).

**Local file systems.** The lock is ``<checkpoint>/writer.lock``, locked with
``flock(LOCK_EX | LOCK_NB)`` on a descriptor kept open while the query runs; the holder writes
its host, pid and start time into the file as JSON. The kernel releases the lock when its
process ends, however it ends (even ``SIGKILL``): the holder details left in the file are then
stale, and the next query takes the lock and replaces them. The file is never deleted (a
process that opened it just before the deletion could lock a file nobody else sees).

**Other file systems** (object stores and any other non-local ``pyarrow.fs`` file system, which
have no exclusive create to build a lock on), and local file systems without ``flock``: no
lock. Starting a query warns once with a :class:`CheckpointLockWarning`; running at most one
query per checkpoint directory is then up to the user.

>>> import tempfile
>>> from sparktide.spark.checkpoint import CheckpointStore
>>> store = CheckpointStore(tempfile.mkdtemp())
>>> lock = CheckpointLock.acquire(store, clock=lambda: 0)
>>> lock.held, lock.holder.started
(True, '1970-01-01T00:00:00.000Z')
>>> CheckpointLock.acquire(store)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_lock.CheckpointLockedError: the checkpoint directory ... is in use ...
>>> lock.release()
>>> CheckpointLock.acquire(store).release()
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import socket
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sparktide.runtime.processing_time import wall_clock_ms
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.stream_metrics import LOGGER

__all__ = [
    "LOCK_FILE",
    "NO_FLOCK",
    "CheckpointLock",
    "CheckpointLockWarning",
    "CheckpointLockedError",
    "LockHolder",
]

LOCK_FILE = "writer.lock"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})
"""The errors of ``flock()`` on a file system without it (some network file systems)."""


class CheckpointLockedError(CheckpointError):
    """Another query holds the checkpoint directory's lock."""


class CheckpointLockWarning(UserWarning):
    """The checkpoint directory cannot be locked: nothing stops a second query on it."""


def _iso(ms: int) -> str:
    moment = _EPOCH + _dt.timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LockHolder:
    """Who holds a checkpoint directory's lock: host, process id and when it took the lock
    (ISO-8601 UTC, and epoch milliseconds)."""

    host: str
    pid: int
    started: str
    started_ms: int

    @classmethod
    def this_process(cls, now_ms: int) -> LockHolder:
        return cls(socket.gethostname(), os.getpid(), _iso(now_ms), now_ms)

    @classmethod
    def parse(cls, data: bytes) -> LockHolder | None:
        """The holder written in a lock file (``None``: empty or not a holder record)."""
        try:
            record = json.loads(data.decode("utf-8"))
            return cls(
                str(record["host"]),
                int(record["pid"]),
                str(record["started"]),
                int(record["started_ms"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    def describe(self) -> str:
        this = " (this process)" if self.pid == os.getpid() and self._here() else ""
        return f"host {self.host}, pid {self.pid}{this}, started {self.started}"

    def _here(self) -> bool:
        return self.host == socket.gethostname()


class CheckpointLock:
    """The lock of one checkpoint directory, taken by :meth:`acquire` (see the module
    docstring); ``held``: whether a lock is held (``False`` on file systems without locks);
    :meth:`release` gives it up (idempotent, thread-safe)."""

    def __init__(self, location: str, path: str | None, fd: int | None, holder: LockHolder):
        self.location = location
        self.path = path
        self.holder = holder
        self._fd = fd
        self._guard = threading.Lock()

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def acquire(
        cls, store: CheckpointStore, clock: Callable[[], int] = wall_clock_ms
    ) -> CheckpointLock:
        """Take the lock of the checkpoint directory of ``store`` for this process; raise
        :class:`CheckpointLockedError` naming the holder if another query holds it. ``clock``:
        epoch milliseconds, the start time written for the holder."""
        holder = LockHolder.this_process(clock())
        if not store.is_local:
            _warn_unlocked(
                f"the checkpoint location {store.location!r} is not on a local file system, "
                "where sparktide locks it"
            )
            return cls(store.location, None, None, holder)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not a POSIX system
            _warn_unlocked("this platform has no flock()")
            return cls(store.location, None, None, holder)
        os.makedirs(store.root, exist_ok=True)
        path = os.path.join(store.root, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CheckpointLockedError(_locked_message(store.location, path)) from None
        except OSError as exc:
            os.close(fd)
            if exc.errno not in NO_FLOCK:
                raise
            _warn_unlocked(f"the file system of {store.location!r} does not support flock()")
            return cls(store.location, None, None, holder)
        try:
            _take_over(fd, path, holder)
        except OSError as exc:  # a full or read-only disk: the lock is not left held
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise CheckpointError(
                f"cannot write the checkpoint lock {path}: {exc.strerror or exc}; make the "
                f"checkpoint location {store.location!r} writable (free disk space, or choose "
                "another location) and start the query again"
            ) from exc
        return cls(store.location, path, fd, holder)

    def release(self) -> None:
        """Give up the lock (the holder details are cleared first, while it is held)."""
        with self._guard:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        import fcntl

        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> CheckpointLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _take_over(fd: int, path: str, holder: LockHolder) -> None:
    """Write this process's details into the lock file it holds (``fd``)."""
    previous = LockHolder.parse(_read_all(fd))
    if previous is not None:
        # its process ended without releasing (the kernel released the flock)
        LOGGER.info(
            "taking over the checkpoint lock %s left by %s, which no longer runs",
            path,
            previous.describe(),
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, holder.to_bytes(), 0)
    os.fsync(fd)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _locked_message(location: str, path: str) -> str:
    try:
        with open(path, "rb") as f:
            holder = LockHolder.parse(f.read())
    except OSError:
        holder = None
    who = (
        holder.describe()
        if holder is not None
        else "a query that is starting (its details are not written yet)"
    )
    return (
        f"the checkpoint directory {location!r} is in use by another streaming query ({who}; "
        f"lock file {path}): a checkpoint directory has one writer at a time. Stop that query "
        "first, or give this job a checkpoint directory of its own"
    )


def _warn_unlocked(reason: str) -> None:
    warnings.warn(
        f"{reason}: nothing stops a second query from writing the same checkpoint directory "
        "and corrupting it; run at most one query per checkpoint directory",
        CheckpointLockWarning,
        stacklevel=7,  # the caller of execute_async() (through the runner and start_stream)
    )
