"""The checkpoint store of a streaming job: keyed state, timers and split state per batch id.

A streaming run (:mod:`sparktide.spark.streaming`) keeps everything it needs to resume in one
directory, given as a local path or any URI :func:`pyarrow.fs.FileSystem.from_uri` understands::

    <root>/
      commits/<v>.json                 one per committed batch id v: the manifest of version v
      batches/<v>.json                 the processing time of batch v, recorded at its first attempt
      inputs/<v>.json                  the files and records the first attempt of batch v read,
                                       recorded before its sinks write
                                       (:mod:`sparktide.spark.batch_inputs`)
      splits/<v>.bin                   per source split: its watermark, idleness and sequence
                                       number (JSON) and its watermark generator's state
      state/<v>/stage-<s>/sub-<i>.bin  a full snapshot of a stage subtask: keyed state and timers
                                       of its key groups (the format of
                                       :mod:`sparktide.runtime.snapshot`), its valves and its
                                       operators' watermarks (JSON, by operator identity)
      state/<v>/stage-<s>/sub-<i>.log  a changelog of a stage subtask: per key group, the state
                                       entries and timers put or deleted since version v - 1
                                       (:mod:`sparktide.spark.changelog`), its valves and watermarks
      state/rocksdb/<op>/<i>/          the incremental RocksDB checkpoints of a RocksDB job's
                                       stage subtask (its SST files and manifests,
                                       :mod:`sparktide.runtime.state.rocksdb_checkpoint`)
      spark/                           Spark's own checkpointLocation (offsets and commits)
      writer.lock                      the lock of the query writing the directory
                                       (:mod:`sparktide.spark.checkpoint_lock`)
      batch.lock                       the lock of the run of a version (a Spark batch, or one
                                       without new data; :mod:`sparktide.spark.batch_lock`)

**Versions.** Batch ``v`` writes, per stage subtask, a full snapshot every ``snapshot_every``
batches (and after a change of the stage's parallelism), else a changelog. The state of a
subtask at version ``v`` is its *chain*: the newest full snapshot ``<= v`` plus the changelogs
after it, applied in order; the manifest names every subtask's chain (``"chains": {stage:
[{"snapshot": v0, "changelogs": [v1, ...], "backend": "hashmap"}, ...]}``, see
:meth:`CheckpointStore.plan_chain`), so a restart and ``sparktide inspect`` never guess.
:meth:`CheckpointStore.read_subtask` returns the materialized full state whatever the layout.
Version ``v`` only counts once ``commits/<v>.json`` exists; that file is written (to a
temporary name, then moved) after the batch's sinks have written, so the highest commit file
names the last committed batch. A replayed, uncommitted batch reads version ``v - 1`` and
overwrites the files of version ``v``. After a commit, the manifests of the last three batches
are kept, with every state file their chains name (so a replay of the next batch still finds
version ``v - 1``); the rest is deleted.

**State backends.** A heap job's files hold the backend-neutral form of keyed state and timers
(what ``snapshot_state()`` of the heap and of the RocksDB backend both give, timers with their
sequence numbers). A RocksDB job's store is ``native`` for its keyed stages
(:attr:`CheckpointStore.native_stages`; its other stages hold no keyed state and write heap
chains): each version of a keyed stage subtask is one *native chain*, a ``sub-<i>.bin``
holding its valves and watermarks and naming (header field ``"rocksdb"``,
:class:`~sparktide.spark.checkpoint_native.NativeReference`) the incremental RocksDB checkpoint
of that version, which holds its keyed state and timers (:meth:`CheckpointStore.write_native`;
the driver completes it once the batch is committed; without incremental checkpointing every
checkpoint uploads all its files). Whether a chain is native is decided once, by
:meth:`CheckpointStore.plan_chain`; workers write the chain it plans and the driver commits the
chains they report. Each chain records
the backend of the job that wrote it (:attr:`CheckpointStore.state_backend`), and a batch on
another backend starts a new chain; a native chain is read back in the neutral form for a heap
job, ``sparktide inspect`` and a rescaled stage (:meth:`CheckpointStore.load_chain`), so a job
restarted on either backend restores whichever wrote the checkpoint.

**Integrity.** Every file of this module starts with a magic string and a format version and
carries CRC32 checksums of its parts (a changelog: one part per key group); the snapshots inside
carry their own. A truncated or corrupt file raises :class:`CheckpointError` naming the file.
Each manifest binds every file it names to its slot (``"files"``: per path a BLAKE2b digest, the
size, the version, the operator identity of the stage's entry, the stage, the subtask and the
key-group range, :class:`FileRecord`; the file's own header repeats the slot), and a restore
refuses a file that is not the one recorded, naming it and what differs
(:meth:`CheckpointStore.read_bound`). Each commit records a fingerprint of the job graph
(sources, per stage its operators' names, uids and identities, max parallelism, keying); a
restore matches the job's stages to the checkpoint's by operator identity and refuses state it
cannot place (:mod:`sparktide.spark.restore_match`).

**Data, not code.** The metadata is typed (:mod:`sparktide.spark.checkpoint_meta`: the
:class:`~sparktide.spark.checkpoint_meta.CommitManifest` with its chains, file records and job
fingerprint, split states, operator watermarks), written as JSON and validated when read: a
missing or mistyped field is an error naming the file and the field. Manifests, batch times,
file headers, valves, operator watermarks and split positions are JSON, a changelog's structure
(which entries and timers, timer timestamps and sequence numbers) JSON and int64; only user
values are pickled (state contents and keys, timer keys and namespaces, a watermark generator's
state). A file or manifest of another format version (:data:`CHECKPOINT_FORMAT_VERSION`; 1
pickled valves, watermarks and split states, 2 a changelog's timer timestamps and sequence
numbers, 3 the built-in watermark generators' attributes) is refused with an error naming both
versions, never read; versions 4 (whose manifests name no backend: every chain was on the
heap), 5 (whose chains are never native) and 6 (whose RocksDB state files pickled their key
type) are migrated (:data:`~sparktide.spark.checkpoint_format.MIGRATED_FORMAT_VERSIONS`): their
files are read as they are, a version 4 chain as a heap chain, a pickled key type only where
the checkpoint is trusted. Restoring a checkpoint unpickles its user
values, so a checkpoint directory must be trusted like code.

**Rescaling.** Key groups are the unit: a subtask reads the chain of every old subtask whose
key-group range intersects its own and keeps only its key groups (of snapshots and changelogs
alike), so a restart with another parallelism redistributes the key groups; the first batch
after it writes full snapshots, which start the new subtasks' chains.

>>> import tempfile
>>> store = CheckpointStore(tempfile.mkdtemp(), JobFingerprint())
>>> store.committed_version() is None
True
>>> store.commit(0, BatchCommit(processing_time=5, parallelism={})).version
0
>>> store.committed_version(), store.commit_info(0).processing_time
(0, 5)
"""

from __future__ import annotations

import contextlib
import json
import uuid
import zlib
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, cast

from sparktide.core.state_backend import (
    EmbeddedRocksDBStateBackend,
    StateBackend,
    StateBackendKind,
)
from sparktide.runtime.filesystems import open_filesystem, write_failure
from sparktide.runtime.keygroups import KeyGroupRange, compute_key_group_range_for_operator_index
from sparktide.runtime.live_state import LiveKeyedState, SnapshotOrLive
from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.runtime.state.backend import StateMeta
from sparktide.runtime.state.recorded_types import check_recorded_key_types
from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.spark.changelog import (
    Digests,
    Flat,
    apply_changes,
    apply_live_changes,
    decode_changes,
    diff,
    digests,
    encode_changes,
    flatten,
    rebuild,
    update_digests,
)
from sparktide.spark.checkpoint_format import (
    CHECKPOINT_FORMAT_VERSION,
    CORRUPT_FIX,
    CheckpointError,
    JsonObject,
    JsonValue,
    file_digest,
    format_version_error,
    header_meta,
    pack_parts,
    unpack_parts,
)
from sparktide.spark.checkpoint_meta import (
    BatchCommit,
    BatchInputs,
    Chain,
    CommitManifest,
    FileRecord,
    JobFingerprint,
    SplitState,
    encode_json,
)
from sparktide.spark.checkpoint_native import (
    NativeReference,
    native_reference,
    native_storage,
    neutral_snapshot,
)
from sparktide.spark.restore_match import check_restorable, stage_mapping

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

    from sparktide.common.typeinfo_base import TypeInformation

__all__ = [
    "CHECKPOINT_FORMAT_VERSION",
    "DEFAULT_SNAPSHOT_EVERY",
    "CheckpointError",
    "CheckpointStore",
    "FileRecord",
    "LoadedSubtask",
    "check_snapshot_every",
    "checkpoint_interval",
    "format_version_error",
    "pack_parts",
    "unpack_parts",
]

DEFAULT_SNAPSHOT_EVERY = 10

# the folders of one file per version, deleted with the commit of their version
_VERSIONED_FOLDERS = (
    ("splits", ".bin"),
    ("commits", ".json"),
    ("batches", ".json"),
    ("inputs", ".json"),
)


def _differences(record: FileRecord, data: bytes) -> str:
    """What differs between the file ``data`` and the ``record`` of its slot."""
    out = []
    if len(data) != record.size:
        out.append(f"it has {len(data)} bytes where the manifest records {record.size}")
    meta = header_meta(data) or {}
    for name, expected in record.slot().items():
        if name in meta and meta[name] != expected:
            out.append(
                f"its header says {name} {meta[name]!r} where the manifest expects {expected!r}"
            )
    if not out:
        out.append(f"its digest is not the {record.digest} the manifest records")
    return "; ".join(out)


# ---------------------------------------------------------------------------------------------
# the store


def _filesystem(location: str) -> tuple[FileSystem, str]:

    if not isinstance(location, str) or not location:
        raise TypeError(
            f"checkpoint_location must be a non-empty str (a path or a URI such as "
            f"'file:///tmp/ckpt' or 's3://bucket/ckpt'), got {location!r}"
        )
    return open_filesystem(location, "checkpoint_location")


class CheckpointStore:
    """Versioned files of one streaming job under ``location`` (see the module docstring).

    ``fingerprint``: the job graph
    (:class:`~sparktide.spark.checkpoint_meta.JobFingerprint`); a commit written with another
    fingerprint raises :class:`CheckpointError` when this store reads it (``None``: read any
    job's checkpoint, e.g. to inspect it). ``snapshot_every``: a full snapshot of each subtask
    every that many batches, changelogs in between (``None``: 10; 1: full snapshots only).
    ``native_stages``: the stages of a RocksDB job whose keyed state is checkpointed natively
    (:func:`~sparktide.spark.checkpoint_native.native_stages`); :meth:`plan_chain` makes their
    chains native and only theirs, and workers write each subtask as its planned chain says.
    The store is picklable (it keeps the location, not the filesystem object), so workers open
    it too.
    """

    def __init__(
        self,
        location: str,
        fingerprint: JobFingerprint | None = None,
        snapshot_every: int | None = None,
        allow_non_restored_state: bool = False,
        state_backend: StateBackendKind = StateBackendKind.HASHMAP,
        native_stages: Collection[int] = frozenset(),
        key_types: Mapping[str, TypeInformation | None] | None = None,
    ) -> None:
        if not isinstance(state_backend, StateBackendKind):
            raise TypeError(
                "state_backend must be a StateBackendKind (StateBackendKind.HASHMAP or "
                f"StateBackendKind.ROCKSDB), got {state_backend!r}"
            )
        self.state_backend = state_backend
        self.native_stages = _check_native_stages(native_stages, state_backend)
        if not isinstance(allow_non_restored_state, bool):
            raise TypeError(
                "allow_non_restored_state must be a bool (True: drop the checkpointed state of "
                f"operators this job does not have), got {allow_non_restored_state!r}"
            )
        self.location = location
        self.fingerprint = fingerprint
        self.snapshot_every = check_snapshot_every(snapshot_every)
        self.allow_non_restored_state = allow_non_restored_state
        self.records: dict[str, FileRecord] = {}  # files this object wrote, by relative path
        self._fs, self.root = _filesystem(location)
        # per keyed operator identity, the key type this job declares: checked against the
        # checkpoint's record once, by the first committed_version() (the driver's)
        self._unchecked_key_types = dict(key_types or {})

    def __getstate__(
        self,
    ) -> tuple[str, JobFingerprint | None, int, bool, StateBackendKind, frozenset[int]]:
        return (
            self.location,
            self.fingerprint,
            self.snapshot_every,
            self.allow_non_restored_state,
            self.state_backend,
            self.native_stages,
        )

    def __setstate__(
        self, state: tuple[str, JobFingerprint | None, int, bool, StateBackendKind, frozenset[int]]
    ) -> None:
        self.location, self.fingerprint, self.snapshot_every = state[:3]
        self.allow_non_restored_state, self.state_backend = state[3], state[4]
        self.native_stages = state[5]
        self.records = {}
        self._fs, self.root = _filesystem(self.location)
        self._unchecked_key_types = {}

    @property
    def native(self) -> bool:
        """Whether some stage of the job checkpoints natively (:attr:`native_stages`)."""
        return bool(self.native_stages)

    # ------------------------------------------------------------------ paths and raw I/O

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def relative(self, path: str) -> str:
        """``path`` relative to the checkpoint root (how a manifest names files)."""
        return path[len(self.root.rstrip("/")) + 1 :]

    def read_bound(self, path: str, files: Mapping[str, FileRecord] | None) -> bytes:
        """The bytes of ``path``, checked against the record of manifest ``files`` (``None``:
        unchecked, an uncommitted version): its size, digest and slot (version, operator,
        subtask, key groups). A file in the wrong slot (another subtask's, another version's)
        or changed in any way raises :class:`CheckpointError` naming it and what differs."""
        data = self.read(path)
        if files is None:
            return data
        record = files.get(self.relative(path))
        if record is None:
            raise CheckpointError(
                f"{path}: the manifest records no such file; the checkpoint is inconsistent: "
                "restore the directory from a backup or start from an empty one"
            )
        if len(data) != record.size or file_digest(data) != record.digest:
            unpack_parts(data, path)  # a truncated or corrupt file says so first
            raise CheckpointError(
                f"{path}: this is not the file the manifest names for its slot: "
                f"{_differences(record, data)}; files were moved, copied or changed in the "
                "checkpoint directory: restore it from a backup or start from an empty one"
            )
        return data

    @property
    def spark_checkpoint_location(self) -> str:
        """Where Spark keeps the query's offsets and commits (``<location>/spark``)."""
        return self.location.rstrip("/") + "/spark"

    @property
    def is_local(self) -> bool:
        """Whether the checkpoint is on the local file system (``root`` is a local path)."""
        from pyarrow import fs

        return isinstance(self._fs, fs.LocalFileSystem)

    def names(self, *parts: str) -> list[str]:
        """The names in the folder ``<location>/<parts...>`` (none if it does not exist)."""
        return self._list(self.path(*parts))

    def _exists(self, path: str) -> bool:
        from pyarrow import fs

        return bool(self._fs.get_file_info(path).type != fs.FileType.NotFound)

    def read(self, path: str) -> bytes:
        try:
            with self._fs.open_input_stream(path) as f:
                data: bytes = f.read()
                return data
        except FileNotFoundError:
            raise CheckpointError(
                f"{path}: missing from the checkpoint; the directory is incomplete (files were "
                "deleted?): restore it or start from an empty one"
            ) from None

    def write_recorded(
        self, path: str, data: bytes, meta: JsonObject, atomic: bool = False
    ) -> FileRecord:
        """Write a :func:`pack_parts` file whose header meta is ``meta`` and keep its
        :class:`FileRecord` for the manifest (in :attr:`records`)."""
        self.write(path, data, atomic=atomic)
        record = FileRecord.of(data, meta, path)
        self.records[self.relative(path)] = record
        return record

    def write(self, path: str, data: bytes, atomic: bool = False) -> None:
        """Write ``data`` to ``path`` (``atomic``: to a temporary name, then moved there). A
        write that fails (a full disk, a folder made read-only) raises
        :class:`CheckpointError` naming the file, why and what to do, and leaves no
        temporary file; an atomic write leaves ``path`` as it was."""
        parent = path.rsplit("/", 1)[0]
        target = f"{path}.tmp-{uuid.uuid4().hex}" if atomic else path
        try:
            self._fs.create_dir(parent, recursive=True)
            self._write_bytes(target, data)
            if atomic:
                self._fs.move(target, path)
        except OSError as exc:
            if atomic:
                with contextlib.suppress(OSError):
                    self._fs.delete_file(target)
            raise CheckpointError(
                f"{path}: the checkpoint file could not be written: {write_failure(exc, path)}. "
                "The batch is not committed; once fixed, start the job again: it resumes from "
                "its last commit"
            ) from None

    def _write_bytes(self, path: str, data: bytes) -> None:
        with self._fs.open_output_stream(path) as f:
            f.write(data)

    def _list(self, directory: str) -> list[str]:
        from pyarrow import fs

        if not self._exists(directory):
            return []
        infos = self._fs.get_file_info(fs.FileSelector(directory, recursive=False))
        return [str(i.base_name) for i in infos]

    def _delete_dir(self, path: str) -> None:
        if self._exists(path):
            self._fs.delete_dir(path)

    # ------------------------------------------------------------------ commits

    def committed_version(self) -> int | None:
        """The last committed batch id (``None``: nothing committed yet); checks that this
        job can restore it (:func:`~sparktide.spark.restore_match.check_restorable`) and, the
        first time, that its keyed operators declare the key types the checkpoint recorded
        (:func:`~sparktide.runtime.state.recorded_types.check_recorded_key_types`)."""
        versions = self._commit_versions()
        if not versions:
            return None
        info = self.commit_info(versions[-1])
        stored = info.fingerprint
        if self.fingerprint is not None and stored != self.fingerprint:
            check_restorable(stored, self.fingerprint, self.allow_non_restored_state, self.location)
        check_recorded_key_types(info.state_types, self._unchecked_key_types)
        self._unchecked_key_types = {}
        return versions[-1]

    def previous_stage(self, previous: CommitManifest, stage: int) -> int | None:
        """The stage of manifest ``previous`` whose state stage ``stage`` of this job restores
        (matched by the identity of its entry operator; ``None``: none, it starts empty)."""
        stored = previous.fingerprint
        if self.fingerprint is None or stored is None or stored == self.fingerprint:
            return stage if stage in previous.parallelism else None
        return stage_mapping(stored, self.fingerprint).get(stage)

    def _commit_versions(self) -> list[int]:
        return sorted(int(n[:-5]) for n in self._list(self.path("commits")) if n[:-5].isdigit())

    def _has_commit(self, version: int) -> bool:
        return self._exists(self.path("commits", f"{version}.json"))

    def commit_info(self, version: int) -> CommitManifest:
        """The manifest of committed ``version``."""
        path = self.path("commits", f"{version}.json")
        raw = self.read(path)
        try:
            info = json.loads(raw.decode("utf-8"))
            body = info["body"]
            crc = info["crc32"]
        except (ValueError, KeyError, TypeError):
            raise CheckpointError(
                f"{path}: the commit file is corrupt (not a manifest); {CORRUPT_FIX}"
            ) from None
        encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
        if zlib.crc32(encoded) != crc:
            raise CheckpointError(
                f"{path}: the commit file is corrupt (checksum mismatch); {CORRUPT_FIX}"
            )
        return CommitManifest.from_json(body, path)

    def commit(self, version: int, batch: BatchCommit, retain: int = 2) -> CommitManifest:
        """Mark ``version`` committed (atomically), then delete what the last ``retain``
        committed versions (and the one before, for a replay) no longer need; returns the
        manifest written.

        The manifest names, per stage subtask, the files that make up its state (its chains,
        computed with :meth:`plan_chain` unless ``batch`` has them)."""
        chains = batch.chains
        if chains is None:
            previous = self.commit_info(version - 1) if self._has_commit(version - 1) else None
            chains = {
                s: tuple(self.plan_chain(previous, s, i, p, version) for i in range(p))
                for s, p in batch.parallelism.items()
            }
        files = self._file_records(version, chains, batch.files)
        manifest = CommitManifest(
            version=version,
            processing_time=batch.processing_time,
            parallelism=dict(batch.parallelism),
            chains=chains,
            files=files,
            fingerprint=self.fingerprint,
            spark_batch=batch.spark_batch,
            last_spark_batch=batch.last_spark_batch,
            metrics=batch.metrics,
            state_types=batch.state_types,
        )
        self.records = {p: r for p, r in self.records.items() if p in files}
        self.write_manifest(manifest)
        self._cleanup(version, version - retain)
        return manifest

    def write_manifest(self, manifest: CommitManifest) -> None:
        """Write ``commits/<v>.json`` of ``manifest`` (atomically, with its checksum): from
        then on its version counts as committed."""
        body = manifest.to_json()
        encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
        envelope: JsonObject = {"body": body, "crc32": zlib.crc32(encoded)}
        self.write(
            self.path("commits", f"{manifest.version}.json"),
            json.dumps(envelope, sort_keys=True).encode("utf-8"),
            atomic=True,
        )

    def _file_records(
        self,
        version: int,
        chains: Mapping[int, tuple[Chain, ...]],
        written: Mapping[str, FileRecord],
    ) -> dict[str, FileRecord]:
        """The record of every file manifest ``version`` names (its chains and split file):
        from ``written`` (by workers), this object's :attr:`records`, the previous manifest,
        or else read from the file."""
        known: dict[str, FileRecord] = {}
        if version > 0 and self._has_commit(version - 1):
            known.update(self.commit_info(version - 1).files)
        known.update(self.records)
        known.update(written)
        paths = [self.path("splits", f"{version}.bin")]
        for s, stage_chains in chains.items():
            for i, chain in enumerate(stage_chains):
                paths.append(self.subtask_path(chain.snapshot, s, i))
                paths.extend(self.changelog_path(v, s, i) for v in chain.changelogs)
        out: dict[str, FileRecord] = {}
        for path in paths:
            rel = self.relative(path)
            if rel not in known:
                if not self._exists(path):
                    continue  # e.g. no split file: nothing to bind
                data = self.read(path)
                known[rel] = FileRecord.of(data, header_meta(data) or {}, path)
            out[rel] = known[rel]
        return out

    def _cleanup(self, version: int, older_than: int) -> None:
        """Delete commits, splits and batch times older than ``older_than``, then every state
        version up to ``version`` that no remaining commit's chains name."""
        if older_than > 0:
            for folder, suffix in _VERSIONED_FOLDERS:
                for name in self._list(self.path(folder)):
                    stem = name[: -len(suffix)] if name.endswith(suffix) else ""
                    if stem.isdigit() and int(stem) < older_than:
                        self._fs.delete_file(self.path(folder, name))
        needed: set[int] = set()
        for v in self._commit_versions():
            try:
                info = self.commit_info(v)
            except CheckpointError:
                return  # cannot tell what an unreadable manifest needs: delete no state
            for chains in info.chains.values():
                for chain in chains:
                    needed.update(chain.versions())
        for name in self._list(self.path("state")):
            if name.isdigit() and int(name) <= version and int(name) not in needed:
                self._delete_dir(self.path("state", name))

    def plan_chain(
        self,
        previous: CommitManifest | None,
        stage: int,
        subtask: int,
        parallelism: int,
        version: int,
    ) -> Chain:
        """The files that make up the state of a stage subtask at ``version``, given the
        manifest of ``version - 1`` (``previous``).

        A stage of :attr:`native_stages`: a native chain (one file naming the subtask's RocksDB
        checkpoint of ``version``). Else a full snapshot when there is no previous version, the
        stage's parallelism changed (the key groups of the subtask moved), the job's state
        backend (:attr:`state_backend`) is not the chain's, the chain is native, or it already
        holds ``snapshot_every`` files; else the previous chain plus a changelog at
        ``version``. This is the one place that decides: a worker opens and writes its subtask
        as the chain planned here says (:meth:`write_version` refuses a native chain), and the
        driver commits the chains its workers report.

        >>> import tempfile
        >>> store = CheckpointStore(tempfile.mkdtemp(), snapshot_every=2)
        >>> store.plan_chain(None, 0, 0, 1, 0).versions()
        (0,)
        >>> info = CommitManifest(version=0, processing_time=0, parallelism={0: 1},
        ...     chains={0: (Chain(0),)}, files={}, fingerprint=None)
        >>> store.plan_chain(info, 0, 0, 1, 1).versions()
        (0, 1)
        >>> store.plan_chain(info, 0, 0, 2, 1).versions()  # rescaled: a full snapshot
        (1,)
        >>> store.state_backend = StateBackendKind.ROCKSDB  # switched: a full snapshot
        >>> store.plan_chain(info, 0, 0, 1, 1).versions()
        (1,)
        >>> store.native_stages = frozenset({0})  # native RocksDB checkpoints: one file each
        >>> store.plan_chain(info, 0, 0, 1, 1).native, store.plan_chain(info, 1, 0, 1, 1).native
        (True, False)
        >>> native = CommitManifest(version=0, processing_time=0, parallelism={0: 1},
        ...     chains={0: (Chain(0, (), StateBackendKind.ROCKSDB, native=True),)}, files={},
        ...     fingerprint=None)
        >>> store.native_stages = frozenset()  # e.g. the columnar path: a native chain ends
        >>> store.plan_chain(native, 0, 0, 1, 1).versions()
        (1,)
        """
        if stage in self.native_stages:
            return Chain(version, backend=self.state_backend, native=True)
        full = Chain(version, backend=self.state_backend)
        # a chain continues only in the same stage directory: a stage restored from another
        # index (the job's stages were built in another order) starts a new chain
        if previous is None or self.previous_stage(previous, stage) != stage:
            return full
        if previous.parallelism.get(stage, -1) != parallelism:
            return full
        chain = previous.chain(stage, subtask)
        if chain is None or len(chain.changelogs) + 1 >= self.snapshot_every:
            return full
        if chain.backend is not self.state_backend or chain.native:
            return full
        return Chain(chain.snapshot, (*chain.changelogs, version), chain.backend)

    # ------------------------------------------------------------------ batches

    def _batch_record(self, version: int) -> tuple[int, int | None] | None:
        """The processing time and Spark micro-batch recorded for batch ``version``."""
        path = self.path("batches", f"{version}.json")
        if not self._exists(path):
            return None
        try:
            record = json.loads(self.read(path).decode("utf-8"))
            spark_batch = record.get("spark_batch")
            return int(record["processing_time"]), None if spark_batch is None else int(spark_batch)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # a torn first attempt: recorded again

    def batch_processing_time(self, version: int, now: int, spark_batch: int | None = None) -> int:
        """The processing time of batch ``version``: recorded at its first attempt (``now``),
        so that a replay sees the same time. ``spark_batch``: Spark's micro-batch id behind
        the version (``None``: a batch without new data); a record of another attempt (an
        interrupted batch without data, now taken by a Spark batch) is recorded again."""
        record = self._batch_record(version)
        if record is not None and record[1] == spark_batch:
            return record[0]
        body = {"processing_time": now, "spark_batch": spark_batch}
        self.write(self.path("batches", f"{version}.json"), json.dumps(body).encode(), atomic=True)
        return now

    def pending_spark_batch(self, version: int) -> bool:
        """Whether a Spark micro-batch attempted ``version`` without committing it (Spark
        replays it: the version is its)."""
        record = self._batch_record(version)
        return record is not None and record[1] is not None

    def write_inputs(self, inputs: BatchInputs) -> None:
        """Record what the first attempt of batch ``inputs.version`` read (atomically)."""
        body = encode_json(inputs.to_json())
        self.write(self.path("inputs", f"{inputs.version}.json"), body, atomic=True)

    def read_inputs(self, version: int) -> BatchInputs | None:
        """What the first attempt of batch ``version`` read (``None``: nothing recorded)."""
        path = self.path("inputs", f"{version}.json")
        if not self._exists(path):
            return None
        try:
            raw = json.loads(self.read(path).decode("utf-8"))
        except ValueError:
            raise CheckpointError(
                f"{path}: not JSON; the checkpoint is corrupt: restore the directory from a "
                "backup or start from an empty one"
            ) from None
        return BatchInputs.from_json(raw, path)

    # ------------------------------------------------------------------ splits

    def write_splits(self, version: int, states: Mapping[int, SplitState]) -> None:
        """Write the state of every source split at ``version``."""
        parts = {str(g): state.to_bytes() for g, state in sorted(states.items())}
        meta: JsonObject = {"version": version, "kind": "splits"}
        self.write_recorded(
            self.path("splits", f"{version}.bin"), pack_parts(parts, meta), meta, atomic=True
        )

    def read_splits(
        self, version: int, files: Mapping[str, FileRecord] | None = None
    ) -> dict[int, SplitState]:
        """The split states of ``version``, checked against manifest ``files`` (see
        :meth:`read_bound`); nothing is unpickled."""
        path = self.path("splits", f"{version}.bin")
        _, parts = unpack_parts(self.read_bound(path, files), path)
        return {
            int(g): SplitState.from_bytes(data, f"{path} (split {g})") for g, data in parts.items()
        }

    # ------------------------------------------------------------------ subtask state

    def subtask_path(self, version: int, stage: int, subtask: int) -> str:
        """The full snapshot file of a stage subtask at ``version``."""
        return self.path("state", str(version), f"stage-{stage}", f"sub-{subtask}.bin")

    def changelog_path(self, version: int, stage: int, subtask: int) -> str:
        """The changelog file of a stage subtask at ``version``."""
        return self.path("state", str(version), f"stage-{stage}", f"sub-{subtask}.log")

    def write_subtask(
        self,
        version: int,
        stage: int,
        subtask: int,
        meta: JsonObject,
        parts: dict[str, bytes],
        changelog: bool = False,
    ) -> int:
        """Write a full snapshot (or, ``changelog``, a changelog) file; returns its size (its
        :class:`FileRecord` is kept in :attr:`records`)."""
        path = (self.changelog_path if changelog else self.subtask_path)(version, stage, subtask)
        meta = {
            "version": version,
            "stage": stage,
            "subtask": subtask,
            "operator": None,
            "key_groups": None,
            **meta,
            "kind": "changelog" if changelog else "snapshot",
        }
        return self.write_recorded(path, pack_parts(parts, meta), meta).size

    def chain(self, version: int, stage: int, subtask: int) -> Chain:
        """The chain of files of a stage subtask at committed ``version`` (as its manifest
        names it; an uncommitted version: its full snapshot file)."""
        if not self._has_commit(version):
            return Chain(version, backend=self.state_backend)
        chain = self.commit_info(version).chain(stage, subtask)
        if chain is None:
            raise CheckpointError(
                f"the manifest of version {version} names no subtask {subtask} of stage {stage}"
            )
        return chain

    def load_chain(
        self,
        chain: Chain,
        stage: int,
        subtask: int,
        key_groups: KeyGroupRange | None = None,
        files: Mapping[str, FileRecord] | None = None,
        neutral: bool = True,
    ) -> LoadedSubtask:
        """Read a chain: its full snapshot, then its changelogs applied in order (only the key
        groups in ``key_groups``). Every file is checked (against the manifest's records
        ``files`` too, see :meth:`read_bound`); a bad one raises :class:`CheckpointError`
        naming it. A native chain's RocksDB checkpoint is read into the backend-neutral form
        (``neutral=False``: only named, in :attr:`LoadedSubtask.native`); a native chain whose
        file holds no keyed state and names no RocksDB checkpoint is read as the heap file it
        is (:func:`~sparktide.spark.checkpoint_native.native_reference`)."""
        path = self.subtask_path(chain.snapshot, stage, subtask)
        file_meta, parts = unpack_parts(self.read_bound(path, files), path)
        loaded = LoadedSubtask(None, {}, {}, parts.get("valves"), parts.get("watermarks"))
        loaded.broadcast = parts.get("broadcast")
        ref = native_reference(chain, file_meta, parts, path)
        if ref is not None:
            operator = file_meta.get("operator")
            if not isinstance(operator, str):
                raise CheckpointError(f"{path}: a native RocksDB state file names no operator")
            loaded.native = (self.native_storage(operator, subtask), ref)
            if neutral:
                loaded.set_snapshot(
                    neutral_snapshot(loaded.native[0], ref, path, key_groups), key_groups
                )
            return loaded
        if "keyed" in parts:
            try:
                snap = KeyedOperatorSnapshot.from_bytes(parts["keyed"])
            except SnapshotFormatError as exc:
                raise CheckpointError(f"{path}: {exc}") from None
            loaded.set_snapshot(snap, key_groups)
        self._apply_changelogs(loaded, chain.changelogs, stage, subtask, key_groups, files)
        return loaded

    def catch_up(
        self,
        snapshot: SnapshotOrLive | None,
        changelogs: Collection[int],
        stage: int,
        subtask: int,
        files: Mapping[str, FileRecord],
        state_digests: Digests,
    ) -> LoadedSubtask:
        """The state of a stage subtask after ``changelogs`` (versions, in order) applied to
        ``snapshot``, the state it had at an older version of the same chain (kept in a
        worker's memory): what :meth:`load_chain` gives for the chain, reading only the
        changelogs written since. ``state_digests`` (of ``snapshot``) is brought up to date in
        place (:func:`~sparktide.spark.changelog.update_digests`). Valves and watermarks come
        from the last changelog; a broadcast state only where a changelog holds one (subtask
        0's)."""
        loaded = LoadedSubtask(None, {}, {}, None, None)
        if isinstance(snapshot, LiveKeyedState):
            loaded.hold_live(snapshot)
        elif snapshot is not None:
            loaded.set_snapshot(snapshot)
        self._apply_changelogs(loaded, changelogs, stage, subtask, None, files, state_digests)
        return loaded

    def _apply_changelogs(
        self,
        loaded: LoadedSubtask,
        changelogs: Collection[int],
        stage: int,
        subtask: int,
        key_groups: KeyGroupRange | None,
        files: Mapping[str, FileRecord] | None,
        state_digests: Digests | None = None,
    ) -> None:
        """Apply the changelogs of versions ``changelogs`` (in order) to ``loaded``: its keyed
        state (only ``key_groups``), and ``state_digests`` when given, its valves, watermarks
        and broadcast state."""
        for v in changelogs:
            path = self.changelog_path(v, stage, subtask)
            meta, parts = unpack_parts(self.read_bound(path, files), path)
            if meta.get("kind") != "changelog":
                raise CheckpointError(f"{path}: not a changelog file (kind {meta.get('kind')!r})")
            if loaded.header is not None:
                try:
                    changes = decode_changes(parts, path, key_groups)
                    live = loaded.live
                    if live is not None and not apply_live_changes(live, changes):
                        loaded.set_snapshot(live)  # it lacks a state or timer service
                    if loaded.live is None:
                        apply_changes(loaded.flat, changes)
                except ValueError as exc:
                    raise CheckpointError(str(exc)) from None
                if state_digests is not None:
                    update_digests(state_digests, changes)
                loaded.state_meta = _state_meta(meta, loaded.state_meta, path)
            loaded.valves = parts.get("valves", loaded.valves)
            loaded.watermarks = parts.get("watermarks", loaded.watermarks)
            loaded.broadcast = parts.get("broadcast", loaded.broadcast)

    def write_version(
        self,
        version: int,
        stage: int,
        subtask: int,
        plan: Chain,
        snapshot: SnapshotOrLive | None,
        previous: Digests,
        parts: dict[str, bytes],
        operator: str | None = None,
    ) -> tuple[int, Digests]:
        """Write version ``version`` of a stage subtask as ``plan`` (:meth:`plan_chain`) says:
        a full snapshot, or a changelog of ``snapshot`` (a snapshot or the subtask's live
        state) against the digests of the previous version (``previous``, which a changelog
        brings up to date in place). ``parts``: the other parts (valves, watermarks).
        ``operator``: the identity of the stage's entry operator (recorded in the file and the
        manifest). Returns the file's size and the digests of ``snapshot`` (for the next
        version). A native chain is not written here but by :meth:`write_native`."""
        if plan.native:
            raise ValueError(
                f"stage {stage} subtask {subtask}: version {version} is planned as a native "
                "chain, whose file must name the subtask's RocksDB checkpoint: write it with "
                "write_native"
            )
        changelog = plan.snapshot != version
        meta: JsonObject = {"stage": stage, "subtask": subtask, "operator": operator}
        if snapshot is not None:
            kgs = snapshot.key_group_range
            meta["key_groups"] = [kgs.start, kgs.end]
            meta["summary"] = summarize(snapshot)
        parts = dict(parts)
        new: Digests = {}
        if snapshot is not None:
            if changelog:
                state = snapshot if isinstance(snapshot, LiveKeyedState) else flatten(snapshot)
                changes, new = diff(previous, state), previous
                parts.update(encode_changes(changes))
                meta["state_meta"] = _json_state_meta(snapshot.state_meta)
                kgs = snapshot.key_group_range
                meta["key_group_range"] = [kgs.start, kgs.end]
            elif isinstance(snapshot, LiveKeyedState):
                raise ValueError(
                    f"stage {stage} subtask {subtask}: version {version} is planned as a full "
                    "snapshot, which is written from a snapshot, not from a live state"
                )
            else:
                parts["keyed"] = snapshot.to_bytes()
                if self.snapshot_every > 1:
                    new = digests(flatten(snapshot))
        return self.write_subtask(version, stage, subtask, meta, parts, changelog), new

    def write_native(
        self,
        version: int,
        stage: int,
        subtask: int,
        parts: dict[str, bytes],
        operator: str,
        reference: NativeReference,
    ) -> int:
        """Write version ``version`` of a stage subtask whose keyed state and timers are in
        the RocksDB checkpoint ``reference`` names (a native chain): the file holds ``parts``
        (valves, watermarks) and the reference; returns its size."""
        meta: JsonObject = {
            "stage": stage,
            "subtask": subtask,
            "operator": operator,
            "key_groups": list(reference.key_groups),
            "rocksdb": reference.to_json(),
        }
        return self.write_subtask(version, stage, subtask, meta, dict(parts))

    def native_storage(self, operator: str, subtask: int) -> RocksDBCheckpointStorage:
        """The RocksDB checkpoint storage of a stage subtask (by its entry operator's
        identity), see :func:`~sparktide.spark.checkpoint_native.native_storage`."""
        return native_storage(self.location, operator, subtask)

    def restore_range(
        self,
        previous: CommitManifest,
        stage: int,
        subtask: int,
        max_parallelism: int,
        key_groups: KeyGroupRange | None,
    ) -> LoadedSubtask:
        """The state of ``key_groups`` at the version of manifest ``previous``, read from
        every old subtask whose key-group range intersects them (key groups are the unit, so
        this works for any old parallelism); valves and watermarks come from old subtask
        ``subtask`` (old subtask 0 if there was none; they are the same in every subtask).
        ``stage`` is this job's stage: the state comes from the stage of ``previous`` it
        matches (:meth:`previous_stage`; none: empty state)."""
        out = LoadedSubtask(None, {}, {}, None, None)
        old_stage = self.previous_stage(previous, stage)
        if old_stage is None:
            return out
        stage = old_stage
        old_p = previous.parallelism[stage]
        chains = previous.chains[stage]
        source = subtask if subtask < old_p else 0
        for i in range(old_p):
            if i != source:
                if key_groups is None:
                    continue
                old = compute_key_group_range_for_operator_index(max_parallelism, old_p, i)
                if old.end < key_groups.start or old.start > key_groups.end:
                    continue
            loaded = self.load_chain(chains[i], stage, i, key_groups, previous.files)
            if i == source:
                out.valves, out.watermarks = loaded.valves, loaded.watermarks
            if key_groups is not None and loaded.header is not None:
                out.header = (loaded.header[0], loaded.header[1], key_groups)
                out.key_type = loaded.key_type if out.key_type is None else out.key_type
                out.state_meta.update(loaded.state_meta)
                out.flat.update(loaded.flat)
        return out

    def read_subtask(
        self, version: int, stage: int, subtask: int
    ) -> tuple[Chain, dict[str, bytes]]:
        """The full state of a stage subtask at ``version``, materialized from the files its
        manifest names: ``(chain, parts)`` with parts ``"keyed"`` (the bytes of a
        :class:`~sparktide.runtime.snapshot.KeyedOperatorSnapshot`; keyed stages only),
        ``"valves"`` and ``"watermarks"``."""
        chain = self.chain(version, stage, subtask)
        files = self.commit_info(version).files if self._has_commit(version) else None
        loaded = self.load_chain(chain, stage, subtask, files=files)
        parts: dict[str, bytes] = {}
        snap = loaded.snapshot()
        if snap is not None:
            parts["keyed"] = snap.to_bytes()
        if loaded.valves is not None:
            parts["valves"] = loaded.valves
        if loaded.watermarks is not None:
            parts["watermarks"] = loaded.watermarks
        if loaded.broadcast is not None:
            parts["broadcast"] = loaded.broadcast
        return chain, parts


class LoadedSubtask:
    """The state of a stage subtask read from a chain of files: the flat view of its keyed
    state and timers (:mod:`sparktide.spark.changelog`), plus its pickled valves and operator
    watermarks, and a broadcast operator's broadcast state (written by subtask 0 only)."""

    def __init__(
        self,
        header: tuple[str, int, KeyGroupRange] | None,
        state_meta: dict[str, StateMeta],
        flat: Flat,
        valves: bytes | None,
        watermarks: bytes | None,
    ) -> None:
        self.header = header  # (operator, max_parallelism, key-group range); None: not keyed
        self.state_meta = state_meta
        self.flat = flat
        self.valves = valves
        self.watermarks = watermarks
        self.broadcast: bytes | None = None
        # the declared key type the full snapshot records (None: not recorded)
        self.key_type: dict[str, Any] | None = None
        # a native chain: its RocksDB checkpoint's storage and the state file's reference
        self.native: tuple[RocksDBCheckpointStorage, NativeReference] | None = None
        # a live state the changelogs are applied to in place (then ``flat`` is not used)
        self.live: LiveKeyedState | None = None

    def set_snapshot(self, snap: SnapshotOrLive, key_groups: KeyGroupRange | None = None) -> None:
        """Hold the keyed state of ``snap``, a snapshot or a live state whose values it then
        shares (only the key groups in ``key_groups``), the start its changelogs are applied
        to."""
        self._set_header(snap)
        self.flat = flatten(snap, key_groups)
        self.live = None

    def hold_live(self, live: LiveKeyedState) -> None:
        """Hold ``live`` itself as the start its changelogs are applied to, in place (where a
        changelog names a state or timer service it lacks, its flat view from then on)."""
        self._set_header(live)
        self.flat = {}
        self.live = live

    def _set_header(self, snap: SnapshotOrLive) -> None:
        self.header = (snap.operator, snap.max_parallelism, snap.key_group_range)
        self.state_meta = dict(snap.state_meta)
        self.key_type = snap.key_type

    def keyed_state(self) -> SnapshotOrLive | None:
        """The live state it holds, else :meth:`snapshot`."""
        return self.live if self.live is not None else self.snapshot()

    def snapshot(self, key_groups: KeyGroupRange | None = None) -> KeyedOperatorSnapshot | None:
        """The keyed snapshot (``None``: not a keyed subtask)."""
        if self.header is None:
            return None
        operator, maxp, kgs = self.header
        kgs = key_groups or kgs
        return rebuild(operator, maxp, kgs, self.state_meta, self.flat, self.key_type)


def summarize(snapshot: SnapshotOrLive) -> JsonObject:
    """What ``sparktide inspect`` shows of a subtask's keyed state without unpickling it
    (stored in the header of each state file): state entries, and per timer domain the count,
    earliest and latest timestamp of the pending timers; of a snapshot or of a live state.

    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> snap = KeyedOperatorSnapshot("op", 128, KeyGroupRange(0, 127), {},
    ...     {3: {"n": [("a", None, 1)]}}, {3: {"t": ([(10, 0, "a", None, 3)], [])}})
    >>> summarize(snap)["state_entries"], summarize(snap)["next_event_timer"]
    (1, 10)
    """
    if isinstance(snapshot, LiveKeyedState):
        return _summarize_live(snapshot)
    out: JsonObject = {
        "state_entries": sum(len(e) for per in snapshot.state.values() for e in per.values())
    }
    for d, domain in enumerate(("event", "processing")):
        count, first, last = 0, None, None  # type: int, int | None, int | None
        for per in snapshot.timers.values():
            for pair in per.values():
                entries = pair[d]
                if entries:
                    count += len(entries)
                    lo, hi = min(e[0] for e in entries), max(e[0] for e in entries)
                    first = lo if first is None else min(first, lo)
                    last = hi if last is None else max(last, hi)
        out[f"{domain}_timers"] = count
        out[f"next_{domain}_timer"] = first
        out[f"last_{domain}_timer"] = last
    return out


def _summarize_live(live: LiveKeyedState) -> JsonObject:
    """:func:`summarize` of a live state."""
    out: JsonObject = {"state_entries": live.state_entries()}
    for d, domain in enumerate(("event", "processing")):
        queues = [pair[d] for pair in live.timers.values() if pair[d]]
        heads = [q.peek() for q in queues]
        lasts = [q.last_timestamp() for q in queues]
        out[f"{domain}_timers"] = live.timer_count(d)
        out[f"next_{domain}_timer"] = min((h[0] for h in heads if h is not None), default=None)
        out[f"last_{domain}_timer"] = max((t for t in lasts if t is not None), default=None)
    return out


def _one_state_meta(m: Mapping[str, object]) -> StateMeta:
    """A state's kind, TTL setting and, where recorded, declared types (plain JSON)."""
    out = StateMeta(kind=str(m["kind"]), ttl=bool(m["ttl"]))
    types = m.get("types")
    if isinstance(types, dict):
        out["types"] = types
    return out


def _json_state_meta(state_meta: dict[str, StateMeta]) -> JsonObject:
    return {name: cast(JsonValue, _one_state_meta(m)) for name, m in state_meta.items()}


def _state_meta(
    meta: JsonObject, default: dict[str, StateMeta], where: str
) -> dict[str, StateMeta]:
    """The state kinds (and declared types) a changelog's header records (``default`` when it
    records none)."""
    raw = meta.get("state_meta")
    if raw is None:
        return dict(default)
    if not isinstance(raw, dict) or not all(
        isinstance(m, dict) and "kind" in m and "ttl" in m and isinstance(m.get("types", {}), dict)
        for m in raw.values()
    ):
        raise CheckpointError(
            f"{where}: field 'state_meta' must map state names to {{kind, ttl, types}}, got "
            f"{raw!r}; the checkpoint is corrupt: restore the directory from a backup or start "
            "from an empty one"
        )
    return {name: _one_state_meta(m) for name, m in raw.items() if isinstance(m, dict)}


def _check_native_stages(stages: object, backend: StateBackendKind) -> frozenset[int]:
    """``native_stages`` validated: stage indexes, only on RocksDB.

    >>> sorted(_check_native_stages([2, 0], StateBackendKind.ROCKSDB))
    [0, 2]
    >>> _check_native_stages({0}, StateBackendKind.HASHMAP)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: native_stages must be a collection of stage indexes (ints >= 0), only with ...
    """
    out = frozenset(stages) if isinstance(stages, Collection) else None
    if (
        out is None
        or not all(type(i) is int and i >= 0 for i in out)
        or (out and backend is not StateBackendKind.ROCKSDB)
    ):
        raise ValueError(
            "native_stages must be a collection of stage indexes (ints >= 0), only with "
            "state_backend=StateBackendKind.ROCKSDB (the keyed stages checkpointed natively), "
            f"got {stages!r} with {backend!r}"
        )
    return out


def check_snapshot_every(snapshot_every: object) -> int:
    """``snapshot_every`` validated (``None``: the default, 10).

    >>> check_snapshot_every(None), check_snapshot_every(3)
    (10, 3)
    >>> check_snapshot_every(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: snapshot_every must be an int >= 1 (a full snapshot every that many batches, ...
    """
    if snapshot_every is None:
        return DEFAULT_SNAPSHOT_EVERY
    if type(snapshot_every) is not int or snapshot_every < 1:
        raise ValueError(
            "snapshot_every must be an int >= 1 (a full snapshot every that many batches, "
            "changelogs in between; 1: full snapshots only) or None for the default "
            f"{DEFAULT_SNAPSHOT_EVERY}, got {snapshot_every!r}"
        )
    return snapshot_every


def checkpoint_interval(backend: StateBackend, snapshot_every: object) -> int:
    """The ``snapshot_every`` of a job on state backend ``backend``: as given (validated, see
    :func:`check_snapshot_every`), but 1 (a full snapshot every batch) on an
    ``EmbeddedRocksDBStateBackend`` whose incremental checkpointing is off.

    >>> from sparktide.core.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
    >>> checkpoint_interval(HashMapStateBackend(), None)
    10
    >>> checkpoint_interval(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True), 4)
    4
    >>> checkpoint_interval(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=False), 4)
    1
    """
    every = check_snapshot_every(snapshot_every)
    if not isinstance(backend, EmbeddedRocksDBStateBackend):
        return every
    return every if backend.is_incremental_checkpoints_enabled() else 1
