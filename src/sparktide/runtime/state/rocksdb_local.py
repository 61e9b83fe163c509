"""A worker-local RocksDB database per stage subtask that survives a batch landing elsewhere.

In streaming a subtask's database lives in a Python worker across micro-batches, but Spark may
run the next batch in another worker process. :meth:`LocalDatabases.open` gives the database of
a :class:`SubtaskSlot` at a checkpoint version, the cheapest way it can:

1. ``REUSED_IN_MEMORY``: this process holds the database open, clean at that version (its last
   checkpoint was that version and nothing was written since);
2. ``REUSED_ON_DISK``: a local copy at that version (the native checkpoint a process left in
   the slot's directory when it took that checkpoint, whose manifest is the one the storage
   holds for the version) exists, in this process's directory or in one another process holds
   or held, and verifies at open (:func:`_check_local_copy`: it is the copy of this very
   checkpoint, every file the manifest names is there with its size, and the small files
   RocksDB opens it by have their digest; SST contents are not hashed): it is hard-linked
   into a fresh working directory and opened (``paranoid_checks``: a copy RocksDB cannot
   open falls back to the checkpoint's files);
3. ``RESTORED``: the checkpoint's files are copied from the storage (a stale or missing local
   copy, a version mismatch, or every local directory held by another live process);
   ``RESTORED_OVER_DAMAGED_COPY`` when a local copy at that version was there but did not
   verify (a file truncated or deleted, a metadata file changed, a copy a read found
   damaged): it is not used (and deleted when it is this process's own);
4. ``CREATED``: no version yet (``version=None``): an empty database.

**Local copies never reach the checkpoint.** A local copy and a working directory share their
SST files by hard links (RocksDB's own native checkpoints do; RocksDB never writes an SST after
creating it), but never with the checkpoint storage: a restore *copies* the checkpoint's files
(:meth:`~sparktide.runtime.state.rocksdb_checkpoint.RocksDBCheckpointStorage.download`), and a
checkpoint uploads copies, so a stray write to a local database, its copy or its mode changes
nothing in the checkpoint (a full checkpoint, which uploads every file, refuses an SST whose
digest is not the one recorded for it).

**SST contents are checked as they are read.** Hashing them at open would read the whole state
whenever a batch lands in another process, and a database reused in memory would not be
checked at all. RocksDB checks the block checksum of every block it reads
(:mod:`~sparktide.runtime.state.rocksdb_memory`: checksums verified on every read, scans
included): a read that meets a damaged block raises, and the caller hands the failure to
:meth:`LocalDatabases.discard_damaged`, which closes and deletes the database and marks every
local copy of the slot on this machine damaged (they share SSTs by hard links), and gives
the error to fail the batch with; the next open restores from the checkpoint's files
(``RESTORED_OVER_DAMAGED_COPY``).

A slot's directories are ``<base>/<location digest>/<operator>/<subtask>[.<n>]``; each has a
``LOCK`` file holding the owner's pid, locked with ``flock`` while a process uses the directory
(the kernel drops the lock when the process dies, so a lock file whose pid is dead is stale and
taken over; two processes never open one directory). A process that finds the first directory
held by another live process uses ``.1``, ``.2``, .... Inside a directory, ``work-<token>`` is
the live database and ``v<version>`` the local copy of a checkpoint: a checkpoint keeps its own
copy and the one of its base (to replay a batch that is not committed), opening at a version
deletes the copies of other versions and older working directories.

:class:`LocalRecoveryStats` counts and times each outcome (a streaming job ships it as
metrics).

>>> import tempfile
>>> from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
>>> tmp = tempfile.mkdtemp()
>>> storage = RocksDBCheckpointStorage(f"{tmp}/ckpt")
>>> dbs = LocalDatabases(f"{tmp}/local")
>>> slot = SubtaskSlot(f"{tmp}/ckpt", "op", 0)
>>> local = dbs.open(slot, None, storage)
>>> local.db[b"k"] = b"v"
>>> _ = dbs.checkpoint(local, 1, storage)
>>> _ = storage.complete(1)
>>> dbs.open(slot, 1, storage).db[b"k"]
b'v'
>>> dbs.stats.count(OpenOutcome.REUSED_IN_MEMORY)
1
>>> dbs.close_all()
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from sparktide.runtime.state.rocksdb_checkpoint import (
    DEFAULT_RETAIN,
    RocksDBCheckpointStorage,
    open_rdict,
)
from sparktide.runtime.state.rocksdb_checkpoint_manifest import (
    FileKind,
    RocksDBManifest,
    digest_bytes,
    digest_file,
)
from sparktide.runtime.state.rocksdb_integrity import (
    RocksDBCorruptionError,
    corruption_of,
    is_corruption,
)

if TYPE_CHECKING:
    from rocksdict import Rdict

__all__ = [
    "LocalDatabase",
    "LocalDatabases",
    "LocalRecoveryStats",
    "OpenOutcome",
    "SubtaskSlot",
]

_LOCK = "LOCK"
_MARKER = ".sparktide-local.json"
_DAMAGED = ".sparktide-damaged"  # in a local copy: a read found it damaged, never reuse it
_MAX_DIRECTORIES = 64


class OpenOutcome(Enum):
    """How :meth:`LocalDatabases.open` obtained a database (and how a streaming subtask got
    its state: ``CAUGHT_UP_IN_MEMORY``, an older state kept in memory brought up to date by the
    changelogs written since, is the heap's)."""

    REUSED_IN_MEMORY = "reused_in_memory"
    CAUGHT_UP_IN_MEMORY = "caught_up_in_memory"
    REUSED_ON_DISK = "reused_on_disk"
    RESTORED = "restored"
    RESTORED_OVER_DAMAGED_COPY = "restored_over_damaged_copy"
    CREATED = "created"


@dataclass
class LocalRecoveryStats:
    """Per :class:`OpenOutcome`, how often it happened and the seconds it took; how often a
    directory was held by another live process, and how many stale locks were taken over.

    >>> stats = LocalRecoveryStats()
    >>> stats.record(OpenOutcome.RESTORED, 0.5)
    >>> stats.to_json()["restored"]
    {'count': 1, 'seconds': 0.5}
    """

    counts: dict[OpenOutcome, int] = field(default_factory=dict)
    seconds: dict[OpenOutcome, float] = field(default_factory=dict)
    lock_conflicts: int = 0
    stale_locks: int = 0

    def record(self, outcome: OpenOutcome, seconds: float) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        self.seconds[outcome] = self.seconds.get(outcome, 0.0) + seconds

    def count(self, outcome: OpenOutcome) -> int:
        return self.counts.get(outcome, 0)

    def to_json(self) -> dict[str, object]:
        """The stats as plain JSON (per outcome its count and seconds)."""
        out: dict[str, object] = {
            o.value: {"count": self.count(o), "seconds": round(self.seconds.get(o, 0.0), 6)}
            for o in OpenOutcome
        }
        out["lock_conflicts"] = self.lock_conflicts
        out["stale_locks"] = self.stale_locks
        return out


@dataclass(frozen=True)
class SubtaskSlot:
    """Which database: the checkpoint ``location`` of the job, the ``operator`` (its identity,
    or the stage) and the ``subtask`` index."""

    location: str
    operator: str
    subtask: int

    def __post_init__(self) -> None:
        if not isinstance(self.location, str) or not self.location:
            raise TypeError(f"location must be a non-empty str, got {self.location!r}")
        if not isinstance(self.operator, str) or not self.operator:
            raise TypeError(f"operator must be a non-empty str, got {self.operator!r}")
        if type(self.subtask) is not int or self.subtask < 0:
            raise ValueError(f"subtask must be an int >= 0, got {self.subtask!r}")

    def storage(self, retain: int = DEFAULT_RETAIN) -> RocksDBCheckpointStorage:
        """The checkpoint storage of the slot: ``<location>/rocksdb/<operator>/<subtask>``.

        >>> SubtaskSlot("mock:///ckpt", "stage 1", 0).storage().location
        'mock:///ckpt/rocksdb/stage_1-f02b6d55/0'
        """
        return RocksDBCheckpointStorage(
            "/".join(
                [self.location.rstrip("/"), "rocksdb", self._operator_dir(), str(self.subtask)]
            ),
            retain,
        )

    def _operator_dir(self) -> str:
        op = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.operator)[:64]
        return f"{op}-{hashlib.blake2b(self.operator.encode(), digest_size=4).hexdigest()}"

    def relative_dir(self) -> str:
        """The slot's directory below the base (no characters a path cannot hold)."""
        where = hashlib.blake2b(self.location.encode(), digest_size=8).hexdigest()
        return os.path.join(where, self._operator_dir(), str(self.subtask))


@dataclass
class LocalDatabase:
    """An open database of a slot: ``db``, its working ``directory``, the slot ``root`` this
    process locked, the checkpoint ``base`` of its next incremental checkpoint and the
    ``clean_version`` its contents equal (``None`` once handed out for writing)."""

    slot: SubtaskSlot
    db: Rdict
    root: str
    directory: str
    base: RocksDBManifest | None
    clean_version: int | None
    outcome: OpenOutcome


class _DirectoryLock:
    """An ``flock`` on ``<root>/LOCK`` holding this process's pid."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.fd: int | None = None

    def try_acquire(self) -> tuple[bool, bool]:
        """``(acquired, took_over_stale)``."""
        os.makedirs(self.root, exist_ok=True)
        path = os.path.join(self.root, _LOCK)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False, False
            raise
        previous = os.read(fd, 64).decode(errors="replace").strip()
        stale = bool(previous) and previous != str(os.getpid())
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return True, stale

    def release(self) -> None:
        if self.fd is not None:
            os.lseek(self.fd, 0, os.SEEK_SET)
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class LocalDatabases:
    """The databases this process holds, under the local directory ``base`` (default: the
    system temporary directory's ``sparktide-rocksdb``), with the :class:`LocalRecoveryStats`
    of every open. ``open_db`` opens a database directory (default: every column family with
    the options recorded in it)."""

    def __init__(
        self, base: str | None = None, open_db: Callable[[str], Rdict] = open_rdict
    ) -> None:
        if base is None:
            import tempfile

            base = os.path.join(tempfile.gettempdir(), "sparktide-rocksdb")
        if not isinstance(base, str) or not base:
            raise TypeError(f"base must be a non-empty str (a local directory), got {base!r}")
        self.base = os.path.abspath(base)
        self.open_db = open_db
        self.stats = LocalRecoveryStats()
        self._held: dict[SubtaskSlot, LocalDatabase] = {}
        self._locks: dict[SubtaskSlot, _DirectoryLock] = {}

    # ------------------------------------------------------------------ open

    def open(
        self, slot: SubtaskSlot, version: int | None, storage: RocksDBCheckpointStorage
    ) -> LocalDatabase:
        """The database of ``slot`` at checkpoint ``version`` of ``storage`` (``None``: an
        empty one), ready for writing (see the module docstring for the order of attempts)."""
        start = time.perf_counter()
        held = self._held.get(slot)
        base = None if version is None else storage.manifest(version)
        if held is not None and base is not None and held.clean_version == version:
            # the checkpoint this process took (not one another attempt replaced it with)
            reusable = held.base == base
        else:
            reusable = False
        if held is not None and reusable:
            held.clean_version = None
            held.outcome = OpenOutcome.REUSED_IN_MEMORY
            self.stats.record(held.outcome, time.perf_counter() - start)
            return held
        if held is not None:
            held.db.close()
            del self._held[slot]
        root = self._lock(slot)
        work = os.path.join(root, f"work-{uuid.uuid4().hex[:12]}")
        if base is None:
            outcome = OpenOutcome.CREATED
            self._clean(root, keep=None)
            db = self.open_db(work)
        else:
            db, outcome = self._open_at(slot, root, base, storage, work)
        local = LocalDatabase(slot, db, root, work, base, None, outcome)
        self._held[slot] = local
        self.stats.record(outcome, time.perf_counter() - start)
        return local

    def _open_at(
        self,
        slot: SubtaskSlot,
        root: str,
        base: RocksDBManifest,
        storage: RocksDBCheckpointStorage,
        work: str,
    ) -> tuple[Rdict, OpenOutcome]:
        """The database of checkpoint ``base`` opened in ``work``: from a local copy that
        verifies, else from the checkpoint's files. A local copy RocksDB finds damaged as it
        opens it (``paranoid_checks``: e.g. a damaged SST footer or index) is marked damaged
        and the checkpoint's files are used instead (``RESTORED_OVER_DAMAGED_COPY``)."""
        outcome = self._from_local_copy(slot, root, base, work)
        if outcome is not OpenOutcome.REUSED_ON_DISK:
            storage.download(base, work)
        self._clean(root, keep=base.checkpoint_id, work=work)
        try:
            return self.open_db(work), outcome
        except Exception as exc:
            if outcome is not OpenOutcome.REUSED_ON_DISK or not is_corruption(exc):
                raise
        self._mark_damaged(slot, root)
        shutil.rmtree(os.path.join(root, f"v{base.checkpoint_id}"), ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        storage.download(base, work)
        return self.open_db(work), OpenOutcome.RESTORED_OVER_DAMAGED_COPY

    def _from_local_copy(
        self, slot: SubtaskSlot, root: str, base: RocksDBManifest, work: str
    ) -> OpenOutcome:
        """Link the first local copy of ``base`` that verifies into ``work``:
        ``REUSED_ON_DISK``; none: ``RESTORED``, or ``RESTORED_OVER_DAMAGED_COPY`` when one
        was there but damaged (this process's own is deleted: it is never tried again)."""
        outcome = OpenOutcome.RESTORED
        for copy in self._copies(slot, root, base.checkpoint_id):
            check = _check_local_copy(copy, base)
            if check is _CopyCheck.DAMAGED:
                outcome = OpenOutcome.RESTORED_OVER_DAMAGED_COPY
                if os.path.dirname(copy) == root:
                    shutil.rmtree(copy, ignore_errors=True)
                continue
            if check is _CopyCheck.VERIFIED:
                try:
                    _link_copy(copy, work)
                except OSError:  # its owner deleted it meanwhile: try the next one
                    shutil.rmtree(work, ignore_errors=True)
                    continue
                return OpenOutcome.REUSED_ON_DISK
        return outcome

    def _copies(self, slot: SubtaskSlot, root: str, checkpoint_id: int) -> list[str]:
        """Where a local copy of checkpoint ``checkpoint_id`` of ``slot`` may be: this
        process's directory first, then those of other processes (held or not: a copy never
        changes once its marker is written, and its files are hard-linked, so its owner may
        delete it while it is linked)."""
        return [os.path.join(r, f"v{checkpoint_id}") for r in self._roots(slot, root)]

    def _roots(self, slot: SubtaskSlot, root: str) -> list[str]:
        """The directories of ``slot`` on this machine: ``root`` (this process's) first."""
        first = os.path.join(self.base, slot.relative_dir())
        return [root] + [
            r
            for r in [first, *(f"{first}.{n}" for n in range(1, _MAX_DIRECTORIES))]
            if r != root and os.path.isdir(r)
        ]

    # ------------------------------------------------------------------ damage found by a read

    def discard_damaged(
        self, slot: SubtaskSlot, exc: BaseException, what: str
    ) -> RocksDBCorruptionError | None:
        """When ``exc`` is RocksDB reporting damaged files (:func:`is_corruption`: a block
        checksum mismatch met by a read or a scan) while the database of ``slot`` was used:
        close the database, delete its working directory and mark every local copy of the
        slot on this machine damaged (a copy and the working directories made from it share
        their SSTs by hard links, so the damaged file may be in any of them), so the next
        open (in this process or another) restores from the checkpoint's files
        (``RESTORED_OVER_DAMAGED_COPY``). Returns the error to fail the batch with, naming
        ``what`` (e.g. the subtask), the directory and RocksDB's message (which names the
        file); ``None`` for any other failure (nothing is done)."""
        found = corruption_of(exc)
        if found is None:
            return None
        held = self._held.pop(slot, None)
        lock = self._locks.get(slot)
        directory = held.directory if held is not None else (lock.root if lock else None)
        if held is not None:
            with contextlib.suppress(Exception):  # damaged: closing may fail too
                held.db.close()
            shutil.rmtree(held.directory, ignore_errors=True)
        own = lock.root if lock is not None else os.path.join(self.base, slot.relative_dir())
        marked = self._mark_damaged(slot, own)
        return RocksDBCorruptionError(
            f"{what}: RocksDB found damaged files in the worker-local database "
            f"{directory or own}: {found}. The database is closed and deleted and the local "
            f"copies of this subtask on this machine ({', '.join(marked) or 'none'}) are "
            "marked damaged, never used again: this attempt of the batch fails, and the next "
            f"one restores the state from the checkpoint's files under {slot.location}"
        )

    def _mark_damaged(self, slot: SubtaskSlot, root: str) -> list[str]:
        """Mark every local copy of ``slot`` on this machine damaged (:data:`_DAMAGED`: the
        next open skips it, and deletes it when it is its own); returns their directories."""
        marked = []
        for r in self._roots(slot, root):
            try:
                names = sorted(os.listdir(r))
            except OSError:  # its owner deleted it meanwhile
                continue
            for copy in (os.path.join(r, n) for n in names if n[:1] == "v" and n[1:].isdigit()):
                try:
                    with open(os.path.join(copy, _DAMAGED), "w"):
                        marked.append(copy)
                except OSError:  # not a directory, or deleted meanwhile
                    continue
        return marked

    def _lock(self, slot: SubtaskSlot) -> str:
        lock = self._locks.get(slot)
        if lock is not None:
            return lock.root
        first = os.path.join(self.base, slot.relative_dir())
        for n in range(_MAX_DIRECTORIES):
            root = first if n == 0 else f"{first}.{n}"
            lock = _DirectoryLock(root)
            acquired, stale = lock.try_acquire()
            if acquired:
                self.stats.stale_locks += int(stale)
                self._locks[slot] = lock
                return root
            self.stats.lock_conflicts += 1
        raise RuntimeError(
            f"every local directory of {slot} ({first} and {_MAX_DIRECTORIES - 1} more) is "
            "held by another live process; stop the processes that hold them or pass another "
            "base directory"
        )

    @staticmethod
    def _clean(root: str, keep: int | None, work: str | None = None) -> None:
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if name == _LOCK or path == work or (keep is not None and name == f"v{keep}"):
                continue
            is_copy = name.startswith("v") and name[1:].isdigit()
            if (is_copy or name.startswith("work-")) and os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)

    # ------------------------------------------------------------------ checkpoint, close

    def checkpoint(
        self,
        local: LocalDatabase,
        version: int,
        storage: RocksDBCheckpointStorage,
        full: bool = False,
    ) -> RocksDBManifest:
        """Take checkpoint ``version`` of ``local`` into ``storage`` (pending until the storage
        completes it; ``full``: every file uploaded, an SST of the last checkpoint checked
        against its recorded digest on the way), keeping the native checkpoint as the local
        copy at that version; the database is then clean at ``version`` (reused in memory by
        the next open at it)."""
        if self._held.get(local.slot) is not local:
            raise ValueError(
                f"{local.slot} is not held open by this process any more (another open "
                "replaced it); checkpoint the database the last open() returned"
            )
        copy = os.path.join(local.root, f"v{version}")
        if os.path.exists(copy):
            shutil.rmtree(copy)
        manifest = storage.snapshot(local.db, version, copy, base=local.base, full=full)
        with open(os.path.join(copy, _MARKER), "w") as stream:
            json.dump({"manifest": digest_bytes(manifest.encode())}, stream)
        keep = {f"v{version}"} | (set() if local.base is None else {f"v{local.base.checkpoint_id}"})
        for name in os.listdir(local.root):
            if name not in keep and name.startswith("v") and name[1:].isdigit():
                shutil.rmtree(os.path.join(local.root, name), ignore_errors=True)
        local.base = manifest
        local.clean_version = version
        return manifest

    def close(self, slot: SubtaskSlot) -> None:
        """Close the database of ``slot`` and release its directory (its local copies stay
        for whichever process opens the slot next)."""
        held = self._held.pop(slot, None)
        if held is not None:
            held.db.close()
            shutil.rmtree(held.directory, ignore_errors=True)
        lock = self._locks.pop(slot, None)
        if lock is not None:
            lock.release()

    def close_all(self) -> None:
        """Close every database this process holds."""
        for slot in list({*self._held, *self._locks}):
            self.close(slot)


class _CopyCheck(Enum):
    """What :func:`_check_local_copy` found."""

    ABSENT = "absent"  # no copy of that checkpoint (none, another version, an unfinished one)
    DAMAGED = "damaged"  # the copy of that checkpoint, but a file is not the manifest's
    VERIFIED = "verified"


def _check_local_copy(copy: str, manifest: RocksDBManifest) -> _CopyCheck:
    """Whether ``copy`` is the complete local copy of the checkpoint ``manifest`` describes,
    undamaged as far as can be known without reading its data: its marker (written after the
    upload) names this very manifest, no read found it damaged (:data:`_DAMAGED`), every file
    the manifest names is there with the manifest's size, and the small files RocksDB opens
    the database by (``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*``: every file but the SSTs) have
    the manifest's digest. SST contents are not hashed (that would read the whole state on
    every open): RocksDB checks their block checksums as it reads them."""
    try:
        with open(os.path.join(copy, _MARKER)) as stream:
            marker = json.load(stream)
    except (OSError, ValueError):
        return _CopyCheck.ABSENT
    if not isinstance(marker, dict) or marker.get("manifest") != digest_bytes(manifest.encode()):
        return _CopyCheck.ABSENT
    if os.path.exists(os.path.join(copy, _DAMAGED)):
        return _CopyCheck.DAMAGED
    for f in manifest.files:
        path = os.path.join(copy, f.local_name)
        try:
            if os.path.getsize(path) != f.size:
                return _CopyCheck.DAMAGED
            if f.kind is not FileKind.SHARED and digest_file(path) != (f.size, f.digest):
                return _CopyCheck.DAMAGED
        except OSError:  # a file missing; none at all: its owner deleted the copy meanwhile
            gone = not os.path.exists(os.path.join(copy, _MARKER))
            return _CopyCheck.ABSENT if gone else _CopyCheck.DAMAGED
    return _CopyCheck.VERIFIED


def _link_copy(copy: str, work: str) -> None:
    """A working database from the local copy ``copy``: SST files (immutable) hard-linked,
    the files RocksDB rewrites copied."""
    os.makedirs(work)
    for name in os.listdir(copy):
        if name == _MARKER:
            continue
        source, target = os.path.join(copy, name), os.path.join(work, name)
        if name.endswith(".sst"):
            try:
                os.link(source, target)
                continue
            except OSError:
                pass
        shutil.copyfile(source, target)
