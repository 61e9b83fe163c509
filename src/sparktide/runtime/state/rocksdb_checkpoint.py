"""Incremental checkpoints of a RocksDB database: upload only the SST files that are new.

:meth:`RocksDBCheckpointStorage.snapshot` takes a native RocksDB checkpoint of an open
``rocksdict.Rdict`` (RocksDB flushes the memtables of every column family, then hard-links the
live files into a local staging directory), uploads the SST files the ``base`` checkpoint does
not already hold as *shared* files, uploads the small private files (``MANIFEST-*``,
``CURRENT``, ``OPTIONS-*``, the log, the binding's config) with every checkpoint, and writes a
:class:`~sparktide.runtime.state.rocksdb_checkpoint_manifest.RocksDBManifest` naming each file
with its size and digest. This is the scheme of Flink's incremental RocksDB snapshots: SST files
are immutable and their numbers never repeat inside one database's lineage, so a file the base
checkpoint uploaded under the same name and size is the same file.

Layout under the storage root (a local path or any ``pyarrow.fs`` URI)::

    shared/<file number>-<digest>.sst   SSTs, named by content (one copy however many reference it)
    private/<id>-<token>/<name>         a checkpoint's private files
    pending/<id>.json                   the manifest of a checkpoint taken, not yet completed
    completed/<id>.json                 the manifest of a completed checkpoint

Every file is written under a temporary name and moved into place, the manifest last, so a
process killed mid-checkpoint leaves the completed checkpoints intact (and some unreferenced
files :meth:`~RocksDBCheckpointStorage.collect_garbage` removes). Shared files are referenced
by count over the manifests present (completed and pending, as Flink's shared state registry
does): :meth:`~RocksDBCheckpointStorage.complete` keeps the last ``retain`` completed
checkpoints and releases older ones and the pending ones it subsumes,
:meth:`~RocksDBCheckpointStorage.discard` releases a pending one; a shared file is deleted when
no manifest references it any more.

:meth:`~RocksDBCheckpointStorage.restore` copies a checkpoint's files into a fresh local
directory (always copies, never hard links, even on the same file system: a local database
never shares an inode with a checkpoint's file, so nothing written to it can reach the
checkpoint), checks each file's size and digest (a missing or changed file raises
:class:`~sparktide.runtime.state.rocksdb_checkpoint_manifest.RocksDBCheckpointError` naming
it) and opens the database.

>>> import tempfile, rocksdict
>>> tmp = tempfile.mkdtemp()
>>> db = rocksdict.Rdict(f"{tmp}/db", rocksdict.Options(raw_mode=True))
>>> db[b"k"] = b"v"
>>> storage = RocksDBCheckpointStorage(f"{tmp}/ckpt")
>>> m1 = storage.snapshot(db, 1, f"{tmp}/stage-1")
>>> storage.complete(1).checkpoint_id
1
>>> db[b"k2"] = b"v2"
>>> m2 = storage.snapshot(db, 2, f"{tmp}/stage-2", base=m1)
>>> m2.uploaded_bytes < m2.total_bytes   # the first SST is shared, not uploaded again
True
>>> db.close()
>>> restored = storage.restore(2, f"{tmp}/restored")
>>> restored.db[b"k2"], restored.db[b"k"]
(b'v2', b'v')
>>> restored.db.close()
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.runtime.filesystems import open_filesystem
from sparktide.runtime.state.rocksdb_checkpoint_manifest import (
    FileKind,
    RocksDBCheckpointError,
    RocksDBManifest,
    StoredFile,
)
from sparktide.runtime.state.rocksdb_integrity import RocksDBCorruptionError

if TYPE_CHECKING:
    from rocksdict import Rdict

__all__ = [
    "DEFAULT_RETAIN",
    "CompletedCheckpoint",
    "RestoredDatabase",
    "RocksDBCheckpointStorage",
    "open_rdict",
]

DEFAULT_RETAIN = 2
"""Completed checkpoints kept by default (the newest, and one to fall back on)."""

_CHUNK = 1 << 20
_TMP = ".tmp-"


def open_rdict(path: str) -> Rdict:
    """Open the RocksDB database in ``path`` with every column family it has, within the
    process's memory budget (:func:`~sparktide.runtime.state.rocksdb_memory.open_bounded`)."""
    from sparktide.runtime.state.rocksdb_memory import open_bounded

    return open_bounded(path)


@dataclass(frozen=True)
class RestoredDatabase:
    """A database opened from a checkpoint: the open ``db``, its ``directory``, and the
    ``manifest`` it was restored from (the base of its next incremental checkpoint)."""

    db: Rdict
    directory: str
    manifest: RocksDBManifest


@dataclass(frozen=True)
class CompletedCheckpoint:
    """What :meth:`RocksDBCheckpointStorage.complete` did: the checkpoint completed, the
    checkpoints it released and the shared files (and their bytes) no checkpoint needs any
    more, now deleted."""

    checkpoint_id: int
    released: tuple[int, ...]
    deleted_files: int
    deleted_bytes: int


def _is_shared(name: str) -> bool:
    return name.endswith(".sst")


def _check_id(checkpoint_id: object) -> int:
    if type(checkpoint_id) is not int or checkpoint_id < 0:
        raise ValueError(
            f"checkpoint_id must be an int >= 0 (the checkpoint's version), got {checkpoint_id!r}"
        )
    return checkpoint_id


class RocksDBCheckpointStorage:
    """The incremental checkpoints of one database (one stage subtask) under ``location``.

    ``location``: a local path or a ``pyarrow.fs`` URI. ``retain``: completed checkpoints kept
    (older ones are released when a newer one completes). Not thread-safe; one process at a time
    takes checkpoints of a location, and the process that completes them (the driver) may be
    another.
    """

    def __init__(self, location: str, retain: int = DEFAULT_RETAIN) -> None:
        if not isinstance(location, str) or not location:
            raise TypeError(
                "location must be a non-empty str (a path or a URI such as 'file:///tmp/ckpt' "
                f"or 's3://bucket/ckpt'), got {location!r}"
            )
        if type(retain) is not int or retain < 1:
            raise ValueError(
                f"retain must be an int >= 1 (completed checkpoints kept), got {retain!r}"
            )
        self.location = location
        self.retain = retain
        self._fs, self.root = open_filesystem(location, "location")
        self._manifests: dict[str, RocksDBManifest] = {}  # by manifest path, read once

    def __getstate__(self) -> tuple[str, int]:
        return self.location, self.retain

    def __setstate__(self, state: tuple[str, int]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    # ------------------------------------------------------------------ paths and raw I/O

    def _path(self, relative: str) -> str:
        return f"{self.root.rstrip('/')}/{relative}"

    @property
    def is_local(self) -> bool:
        """Whether the storage is on the local file system."""
        from pyarrow import fs

        return isinstance(self._fs, fs.LocalFileSystem)

    def _exists(self, relative: str) -> bool:
        from pyarrow import fs

        return bool(self._fs.get_file_info(self._path(relative)).type != fs.FileType.NotFound)

    def _list(self, relative: str) -> list[str]:
        from pyarrow import fs

        if not self._exists(relative):
            return []
        infos = self._fs.get_file_info(fs.FileSelector(self._path(relative)))
        return sorted(str(i.base_name) for i in infos)

    def _write_atomic(self, relative: str, data: bytes) -> None:
        path = self._path(relative)
        self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        tmp = f"{path}{_TMP}{uuid.uuid4().hex}"
        with self._fs.open_output_stream(tmp) as f:
            f.write(data)
        self._fs.move(tmp, path)

    def upload_file(self, local: str, relative_dir: str) -> tuple[str, int, str]:
        """Copy the local file into ``relative_dir`` under a temporary name, digesting it on
        the way; returns ``(temporary path, size, digest)``. Every file a checkpoint uploads
        goes through this method (a subclass may wrap it, e.g. to inject a failure)."""
        self._fs.create_dir(self._path(relative_dir), recursive=True)
        tmp = self._path(f"{relative_dir}/{os.path.basename(local)}{_TMP}{uuid.uuid4().hex}")
        h = hashlib.blake2b(digest_size=32)
        size = 0
        with open(local, "rb") as src, self._fs.open_output_stream(tmp) as dst:
            while chunk := src.read(_CHUNK):
                h.update(chunk)
                dst.write(chunk)
                size += len(chunk)
        return tmp, size, "blake2b:" + h.hexdigest()

    def _delete_file(self, relative: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(self._path(relative))

    def _delete_dir(self, relative: str) -> None:
        if self._exists(relative):
            self._fs.delete_dir(self._path(relative))

    # ------------------------------------------------------------------ manifests

    def _read_manifest(self, relative: str) -> RocksDBManifest:
        cached = self._manifests.get(relative)
        if cached is not None:
            return cached
        try:
            with self._fs.open_input_stream(self._path(relative)) as f:
                data: bytes = f.read()
        except FileNotFoundError:
            raise RocksDBCheckpointError(
                f"{self._path(relative)}: the manifest is missing from the checkpoint; files "
                "were deleted: restore the directory or start from an empty one"
            ) from None
        manifest = RocksDBManifest.decode(data, self._path(relative))
        if relative.startswith("completed/"):
            # a completed manifest never changes; a pending one may be replaced by a retry
            self._manifests[relative] = manifest
        return manifest

    def _ids(self, folder: str) -> list[int]:
        return sorted(
            int(n[:-5]) for n in self._list(folder) if n.endswith(".json") and n[:-5].isdigit()
        )

    def completed_ids(self) -> list[int]:
        """The ids of the completed checkpoints kept, oldest first."""
        return self._ids("completed")

    def pending_ids(self) -> list[int]:
        """The ids of the checkpoints taken and neither completed nor discarded."""
        return self._ids("pending")

    def manifest(self, checkpoint_id: int) -> RocksDBManifest:
        """The manifest of checkpoint ``checkpoint_id``, completed or pending (a driver that
        committed a version may not have completed it here before a crash)."""
        _check_id(checkpoint_id)
        for folder in ("completed", "pending"):
            relative = f"{folder}/{checkpoint_id}.json"
            if relative in self._manifests or self._exists(relative):
                return self._read_manifest(relative)
        raise RocksDBCheckpointError(
            f"{self.location}: there is no RocksDB checkpoint {checkpoint_id} (completed: "
            f"{self.completed_ids()}, pending: {self.pending_ids()}); restore from a "
            "checkpoint that exists, or start from an empty checkpoint directory"
        )

    def latest_completed(self) -> RocksDBManifest | None:
        """The manifest of the newest completed checkpoint (``None``: none yet)."""
        ids = self.completed_ids()
        return self._read_manifest(f"completed/{ids[-1]}.json") if ids else None

    def _all_manifests(self) -> list[tuple[str, RocksDBManifest]]:
        out = []
        for folder in ("completed", "pending"):
            for i in self._ids(folder):
                relative = f"{folder}/{i}.json"
                out.append((relative, self._read_manifest(relative)))
        return out

    def shared_references(self) -> Counter[str]:
        """Per shared file, how many manifests present (completed and pending) name it."""
        counts: Counter[str] = Counter()
        for _, manifest in self._all_manifests():
            counts.update(manifest.shared_paths())
        return counts

    # ------------------------------------------------------------------ taking checkpoints

    def snapshot(
        self,
        db: Rdict,
        checkpoint_id: int,
        staging_dir: str,
        base: RocksDBManifest | None = None,
        full: bool = False,
    ) -> RocksDBManifest:
        """Take checkpoint ``checkpoint_id`` of ``db`` (pending until :meth:`complete`).

        A native checkpoint is created in ``staging_dir`` (which must not exist; it stays: it
        is a local copy of the database at this checkpoint, removed by the caller). SST files
        that ``base`` (the checkpoint this database was restored from or last checkpointed to,
        in its own lineage) names under the same local name and size, and that a manifest
        present still references, are shared, not uploaded; every other file is uploaded.
        Taking the same id again replaces the pending checkpoint. ``full``: every file is
        uploaded, none shared with ``base``.

        An SST that ``base`` names with the same size but that is uploaded (``full``, or no
        longer referenced) must have ``base``'s digest: SSTs never change, so another digest
        means the local file was damaged since (a byte changed in a worker-local copy, which
        RocksDB's block checksums catch only when a read meets it): a
        :class:`~sparktide.runtime.state.rocksdb_integrity.RocksDBCorruptionError` naming it
        is raised, and nothing of it is stored.
        """
        from rocksdict import Checkpoint

        _check_id(checkpoint_id)
        if self._exists(f"completed/{checkpoint_id}.json"):
            raise ValueError(
                f"checkpoint {checkpoint_id} is completed already; a completed checkpoint never "
                "changes: take the next checkpoint under a newer id"
            )
        if os.path.exists(staging_dir):
            raise ValueError(
                f"staging_dir {staging_dir!r} already exists; the native checkpoint needs a "
                "fresh directory: pass a path that does not exist yet"
            )
        parent = os.path.dirname(os.path.abspath(staging_dir))
        os.makedirs(parent, exist_ok=True)
        Checkpoint(db).create_checkpoint(staging_dir)
        referenced = self.shared_references()
        lineage = {
            f.local_name: f
            for f in (base.files if base is not None else ())
            if f.kind is FileKind.SHARED
        }
        known = {} if full else {n: f for n, f in lineage.items() if f.path in referenced}
        token = uuid.uuid4().hex[:12]
        private_dir = f"private/{checkpoint_id}-{token}"
        files: list[StoredFile] = []
        uploaded = 0
        for name in sorted(os.listdir(staging_dir)):
            local = os.path.join(staging_dir, name)
            if not os.path.isfile(local):
                continue
            previous = known.get(name)
            if (
                _is_shared(name)
                and previous is not None
                and previous.size == os.path.getsize(local)
            ):
                files.append(previous)
                continue
            if _is_shared(name):
                stored = self._upload_shared(local, name, lineage.get(name))
            else:
                tmp, size, digest = self.upload_file(local, private_dir)
                path = f"{private_dir}/{name}"
                self._fs.move(tmp, self._path(path))
                stored = StoredFile(name, path, size, digest, FileKind.PRIVATE)
            uploaded += stored.size
            files.append(stored)
        manifest = RocksDBManifest(checkpoint_id, tuple(files), uploaded)
        relative = f"pending/{checkpoint_id}.json"
        replaced = self._read_manifest(relative) if self._exists(relative) else None
        self._write_atomic(relative, manifest.encode())
        if replaced is not None:
            self._release_files(replaced)
        return manifest

    def _upload_shared(self, local: str, name: str, recorded: StoredFile | None) -> StoredFile:
        """Upload SST ``local``; ``recorded``: what the base checkpoint records of it (a file
        of its size must have its digest, see :meth:`snapshot`)."""
        tmp, size, digest = self.upload_file(local, "shared")
        if recorded is not None and recorded.size == size and recorded.digest != digest:
            self._fs.delete_file(tmp)
            raise RocksDBCorruptionError(
                f"{local}: this SST's bytes are not the ones checkpoint storage "
                f"{self.location} recorded for it ({recorded.path}: same size, another "
                "digest); SST files never change, so the worker-local file is damaged: it is "
                "not uploaded"
            )
        stem = name[: -len(".sst")]
        path = f"shared/{stem}-{digest.split(':', 1)[1][:32]}.sst"
        if self._exists(path):
            # the same bytes are stored already (content-addressed name): keep that copy
            self._fs.delete_file(tmp)
        else:
            self._fs.move(tmp, self._path(path))
        return StoredFile(name, path, size, digest, FileKind.SHARED)

    # ------------------------------------------------------------------ completing, releasing

    def complete(self, checkpoint_id: int) -> CompletedCheckpoint:
        """Mark pending checkpoint ``checkpoint_id`` completed (again: a no-op besides the
        retention), then release the completed checkpoints beyond the last ``retain`` and the
        pending ones older than it, deleting the shared files no manifest references any
        more."""
        _check_id(checkpoint_id)
        pending = f"pending/{checkpoint_id}.json"
        done = f"completed/{checkpoint_id}.json"
        if not self._exists(done):
            if not self._exists(pending):
                raise ValueError(
                    f"{self.location}: checkpoint {checkpoint_id} was not taken (pending: "
                    f"{self.pending_ids()}); complete only a checkpoint snapshot() wrote"
                )
            manifest = self._read_manifest(pending)
            self._fs.create_dir(self._path("completed"), recursive=True)
            self._fs.move(self._path(pending), self._path(done))
            self._manifests[done] = manifest
        completed = self.completed_ids()
        released = [i for i in completed if i not in completed[-self.retain :]]
        released += [i for i in self.pending_ids() if i < checkpoint_id]
        to_release = [
            (folder, i)
            for i in sorted(set(released))
            for folder in ("completed", "pending")
            if self._exists(f"{folder}/{i}.json")
        ]
        deleted_files, deleted_bytes = self._release([f"{f}/{i}.json" for f, i in to_release])
        return CompletedCheckpoint(
            checkpoint_id, tuple(sorted(set(released))), deleted_files, deleted_bytes
        )

    def discard(self, checkpoint_id: int) -> None:
        """Release pending checkpoint ``checkpoint_id`` (a batch that was not committed): its
        private files and the shared files only it referenced are deleted. A completed
        checkpoint is never discarded (it raises)."""
        _check_id(checkpoint_id)
        if self._exists(f"completed/{checkpoint_id}.json"):
            raise ValueError(
                f"checkpoint {checkpoint_id} is completed; only a pending checkpoint can be "
                "discarded (completed ones are released by retention)"
            )
        if self._exists(f"pending/{checkpoint_id}.json"):
            self._release([f"pending/{checkpoint_id}.json"])

    def retract(self, checkpoint_id: int) -> None:
        """Release checkpoint ``checkpoint_id``, pending or completed: the checkpoint of a batch
        whose commit does not exist after all (its id is taken again). Its private files and
        the shared files only it referenced are deleted; no checkpoint: nothing happens."""
        _check_id(checkpoint_id)
        paths = [
            f"{folder}/{checkpoint_id}.json"
            for folder in ("completed", "pending")
            if self._exists(f"{folder}/{checkpoint_id}.json")
        ]
        if paths:
            self._release(paths)

    def _release(self, manifest_paths: Iterable[str]) -> tuple[int, int]:
        releasing = [(p, self._read_manifest(p)) for p in manifest_paths]
        for path, _ in releasing:
            self._delete_file(path)
            self._manifests.pop(path, None)
        deleted_files = deleted_bytes = 0
        for _, manifest in releasing:
            n, size = self._release_files(manifest)
            deleted_files += n
            deleted_bytes += size
        return deleted_files, deleted_bytes

    def _release_files(self, manifest: RocksDBManifest) -> tuple[int, int]:
        """Delete the private files of ``manifest`` (its manifest file already gone) and its
        shared files no manifest present references."""
        referenced = self.shared_references()
        n = size = 0
        for f in manifest.files:
            if f.kind is FileKind.SHARED and f.path not in referenced and self._exists(f.path):
                self._delete_file(f.path)
                n += 1
                size += f.size
        for folder in {p.rsplit("/", 1)[0] for p in manifest.private_paths()}:
            if not any(
                folder in {q.rsplit("/", 1)[0] for q in m.private_paths()}
                for _, m in self._all_manifests()
            ):
                self._delete_dir(folder)
        return n, size

    def collect_garbage(self) -> int:
        """Delete the files no manifest present names (left by a process killed mid-checkpoint);
        call it only while no checkpoint is being taken. Returns the number of entries
        deleted."""
        manifests = [m for _, m in self._all_manifests()]
        shared = {p for m in manifests for p in m.shared_paths()}
        private = {p.rsplit("/", 1)[0] for m in manifests for p in m.private_paths()}
        deleted = 0
        for name in self._list("shared"):
            if f"shared/{name}" not in shared:
                self._delete_file(f"shared/{name}")
                deleted += 1
        for name in self._list("private"):
            if f"private/{name}" not in private:
                self._delete_dir(f"private/{name}")
                deleted += 1
        for folder in ("pending", "completed"):
            for name in self._list(folder):
                if _TMP in name:
                    self._delete_file(f"{folder}/{name}")
                    deleted += 1
        return deleted

    # ------------------------------------------------------------------ restore

    def restore(
        self,
        checkpoint_id: int,
        directory: str,
        open_db: Callable[[str], Rdict] = open_rdict,
        verify: bool = True,
    ) -> RestoredDatabase:
        """Rebuild checkpoint ``checkpoint_id`` in the local ``directory`` (replaced if it
        exists) and open it with ``open_db``. Each file is copied (never hard-linked) and
        checked against the manifest's size and digest
        (``verify=False``: sizes only); a missing or changed file raises
        :class:`RocksDBCheckpointError` naming it."""
        manifest = self.manifest(checkpoint_id)
        self.download(manifest, directory, verify)
        return RestoredDatabase(open_db(directory), directory, manifest)

    def download(self, manifest: RocksDBManifest, directory: str, verify: bool = True) -> None:
        """Put the files of ``manifest`` into the local ``directory`` (see :meth:`restore`)."""
        directory = os.path.abspath(directory)
        tmp = f"{directory}{_TMP}{uuid.uuid4().hex[:12]}"
        os.makedirs(tmp)
        try:
            for f in manifest.files:
                self._fetch(f, os.path.join(tmp, f.local_name), verify)
            if os.path.exists(directory):
                shutil.rmtree(directory)
            os.rename(tmp, directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _fetch(self, f: StoredFile, local: str, verify: bool) -> None:
        """Copy stored file ``f`` to ``local``, digesting it on the way (one read), and check
        its size and digest against the manifest. Always a copy, never a hard link, even on the
        same file system: a link would share the inode, so a write to (or a ``chmod`` of) the
        local database's file would change the checkpoint's."""
        source = self._path(f.path)
        h = hashlib.blake2b(digest_size=32)
        size = 0
        try:
            with self._fs.open_input_stream(source) as src, open(local, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    if verify:
                        h.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
        except FileNotFoundError:
            raise RocksDBCheckpointError(
                f"{source}: missing from the RocksDB checkpoint (the manifest names it as "
                f"{f.local_name!r}); files were deleted from the checkpoint directory: restore "
                "it from a backup or start from an empty one"
            ) from None
        digest = "blake2b:" + h.hexdigest() if verify else f.digest
        if size != f.size or digest != f.digest:
            what = (
                f"it has {size} bytes where the manifest records {f.size}"
                if size != f.size
                else f"its digest is not the {f.digest} the manifest records"
            )
            raise RocksDBCheckpointError(
                f"{source}: this is not the file the manifest names as {f.local_name!r}: {what}; "
                "the checkpoint directory was changed: restore it from a backup or start from "
                "an empty one"
            )
