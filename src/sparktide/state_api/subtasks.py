"""One stage subtask's keyed state and timers at a committed version, in the backend-neutral
form, loaded from its chain of files (a heap chain, or a native RocksDB checkpoint) by
:meth:`~sparktide.spark.checkpoint.CheckpointStore.load_chain`, or straight from its snapshot
file when the chain is that file alone. Unpickles the state's user values: only a trusted
reader calls these.

:func:`first_namespaces` looks at as little as it can to tell what the namespaces of a state
(or of the timers) are: in a heap snapshot, one key group's section of the state (each is a
pickle of its own); in a native RocksDB checkpoint, the store key of the state's first entry.

:meth:`StageSource.keyed` gives what reading one state of a subtask starts from: its keyed
snapshot, or, for a native RocksDB chain, the checkpoint not read yet (:class:`NativeState`:
only the state asked for is read, straight into rows, by
:mod:`~sparktide.state_api.native_columns`).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore, unpack_parts
from sparktide.spark.checkpoint_native import NativeReference, native_reference, neutral_snapshot
from sparktide.state_api.native_columns import native_state_batches
from sparktide.state_api.native_meta import native_first_namespace
from sparktide.state_api.rows import StateRowsSpec, state_batches, state_entries

if TYPE_CHECKING:
    import pyarrow as pa

    from sparktide.spark.checkpoint_meta import Chain, CommitManifest

__all__ = [
    "KeyedPart",
    "NativeState",
    "StageSource",
    "first_namespaces",
    "part_batches",
    "part_namespaces",
]


def _chain(manifest: CommitManifest, stage: int, subtask: int) -> Chain:
    chain = manifest.chain(stage, subtask)
    if chain is None:
        raise CheckpointError(
            f"the manifest of version {manifest.version} names no subtask {subtask} of stage "
            f"{stage}"
        )
    return chain


def _snapshot_part(
    store: CheckpointStore, manifest: CommitManifest, stage: int, subtask: int
) -> tuple[str, bytes] | None:
    """The path and the ``keyed`` part of the full snapshot file of a heap chain (``None``: a
    native chain, or a subtask without keyed state)."""
    chain = _chain(manifest, stage, subtask)
    if chain.native:
        return None
    path = store.subtask_path(chain.snapshot, stage, subtask)
    _, parts = unpack_parts(store.read_bound(path, manifest.files), path)
    keyed = parts.get("keyed")
    return None if keyed is None else (path, keyed)


def _decode(path: str, data: bytes) -> KeyedOperatorSnapshot:
    try:
        return KeyedOperatorSnapshot.from_bytes(data)
    except SnapshotFormatError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class StageSource:
    """A keyed stage of a committed checkpoint version, as plain data that a Spark task
    rebuilds its store from (the location, not a file system object)."""

    location: str
    version: int
    stage: int

    def open(self) -> tuple[CheckpointStore, CommitManifest]:
        store = CheckpointStore(self.location)
        return store, store.commit_info(self.version)

    def load(
        self, subtask: int, opened: tuple[CheckpointStore, CommitManifest] | None = None
    ) -> KeyedOperatorSnapshot | None:
        """The keyed snapshot of subtask ``subtask`` (``None``: the stage is not keyed);
        ``opened``: the store and manifest (:meth:`open`) when the caller has them."""
        store, manifest = opened or self.open()
        chain = _chain(manifest, self.stage, subtask)
        if not chain.native and not chain.changelogs:  # the snapshot file is the state
            found = _snapshot_part(store, manifest, self.stage, subtask)
            return None if found is None else _decode(*found)
        files = manifest.files
        loaded = store.load_chain(chain, self.stage, subtask, files=files, neutral=False)
        if loaded.native is not None:  # read out of its RocksDB checkpoint, without a flat view
            path = store.subtask_path(chain.snapshot, self.stage, subtask)
            return neutral_snapshot(*loaded.native, path)
        return loaded.snapshot()

    def keyed(
        self, subtask: int, opened: tuple[CheckpointStore, CommitManifest] | None = None
    ) -> KeyedPart | None:
        """What the keyed state of subtask ``subtask`` is read from: its native RocksDB
        checkpoint where its chain is one, else its keyed snapshot (:meth:`load`)."""
        store, manifest = opened or self.open()
        chain = _chain(manifest, self.stage, subtask)
        if chain.native:
            path = store.subtask_path(chain.snapshot, self.stage, subtask)
            meta, parts = unpack_parts(store.read_bound(path, manifest.files), path)
            ref = native_reference(chain, meta, parts, path)
            operator = meta.get("operator")
            if ref is not None and isinstance(operator, str):
                return NativeState(store, operator, subtask, ref, path)
        return self.load(subtask, (store, manifest))


@dataclass(frozen=True)
class NativeState:
    """A subtask's keyed state held by a native RocksDB checkpoint, not read yet."""

    store: CheckpointStore
    operator: str
    subtask: int
    ref: NativeReference
    path: str

    def first_namespaces(self, state: str) -> list[object]:
        """The namespace of the first entry of ``state`` (empty: it has none here)."""
        return native_first_namespace(
            self.store, self.operator, self.subtask, self.ref, state, self.path
        )

    def state_batches(self, spec: StateRowsSpec) -> Iterator[pa.RecordBatch]:
        """The rows of ``spec.state`` read out of the checkpoint."""
        storage = self.store.native_storage(self.operator, self.subtask)
        return native_state_batches(storage, self.ref, self.path, spec)


KeyedPart = KeyedOperatorSnapshot | NativeState
"""What one state of a subtask is read from (:meth:`StageSource.keyed`)."""


def part_batches(part: KeyedPart, spec: StateRowsSpec) -> Iterator[pa.RecordBatch]:
    """The rows of ``spec.state`` in ``part``."""
    if isinstance(part, NativeState):
        return part.state_batches(spec)
    return state_batches(spec, part)


def part_namespaces(part: KeyedPart, state: str) -> Iterator[object]:
    """The namespaces of the entries of ``state`` in ``part`` (of a native checkpoint: its
    first entry's)."""
    if isinstance(part, NativeState):
        yield from part.first_namespaces(state)
    else:
        yield from (e[2] for e in state_entries(part, state))


def first_namespaces(
    source: StageSource,
    opened: tuple[CheckpointStore, CommitManifest],
    subtask: int,
    state: str | None,
) -> Iterator[object]:
    """The namespaces of some entries of ``state`` (``None``: of the timers) of a subtask:
    those of one key group's section of its heap snapshot, or of the first entry of its
    native RocksDB checkpoint, else (timers of a native chain, or a snapshot without such a
    section) those of the whole subtask."""
    store, manifest = opened
    chain = _chain(manifest, source.stage, subtask)
    path = store.subtask_path(chain.snapshot, source.stage, subtask)
    meta, parts = unpack_parts(store.read_bound(path, manifest.files), path)
    ref = native_reference(chain, meta, parts, path)
    if ref is not None and state is not None:
        operator = str(meta.get("operator"))
        yield from native_first_namespace(store, operator, subtask, ref, state, path)
        return
    if ref is None and "keyed" in parts:
        found = _section_namespaces(path, parts["keyed"], state)
        if found is not None:
            yield from found
            return
    snap = source.load(subtask, opened)
    if snap is None:
        return
    if state is None:
        for per_service in snap.timers.values():
            for pair in per_service.values():
                yield from (e[3] for domain in pair for e in domain)
    else:
        for per_state in snap.state.values():
            yield from (e[1] for e in per_state.get(state, ()))


def _section_namespaces(path: str, data: bytes, state: str | None) -> list[object] | None:
    """The namespaces of the first section of ``state`` (``None``: of timers) in the heap
    snapshot ``data`` (``None``: it has none)."""
    try:
        header, area = KeyedOperatorSnapshot.read_header(data)
    except SnapshotFormatError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    for sec in header["sections"]:
        if not sec["count"]:
            continue
        if sec["type"] == "state" and sec.get("state") == state:
            off, length, _ = sec["blob"]
            return [e[1] for e in pickle.loads(area[off : off + length])]
        if sec["type"] == "timers" and state is None:
            off, length, _ = sec["keys"]
            return [e[1] for e in pickle.loads(area[off : off + length])]
    return None
