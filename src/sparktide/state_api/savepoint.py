"""Take a savepoint of a streaming checkpoint, and read a savepoint's manifest.

:func:`write_savepoint` copies one committed version ``v`` of a checkpoint into a new
directory laid out as a checkpoint that holds only ``v`` (see ``docs/savepoints.md``):

1. every stage subtask's state at ``v``, materialized from its chain (a heap chain's snapshot
   and changelogs, or a native RocksDB checkpoint read in the backend-neutral form) and written
   as one full heap snapshot, with its valves and operator watermarks
   (:meth:`~sparktide.spark.checkpoint.CheckpointStore.write_version`);
2. the split states of ``v``;
3. the commit manifest of ``v``: every chain a full snapshot on the heap backend, a file record
   for every file (:meth:`~sparktide.spark.checkpoint.CheckpointStore.commit`), the job's
   fingerprint and declared state types as the checkpoint recorded them;
4. last, ``savepoint.json`` (:class:`~sparktide.state_api.savepoint_format.SavepointManifest`)
   via a temporary name and a rename, naming the sources' positions at ``v``
   (:mod:`sparktide.state_api.source_positions`).

A crash at any point leaves no ``savepoint.json``: :func:`read_savepoint` refuses such a
directory (:class:`~sparktide.state_api.savepoint_format.NotASavepointError`). Versions of a
checkpoint do not change once committed, so a savepoint may be taken while the query runs;
retention may delete the version while it is copied, which is checked after copying.

>>> import tempfile
>>> read_savepoint(tempfile.mkdtemp())  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.state_api.savepoint_format.NotASavepointError: ... is not a savepoint: ...
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_meta import BatchCommit, Chain, CommitManifest
from sparktide.state_api.savepoint_format import (
    CHECKPOINT_ORIGIN,
    SAVEPOINT_FILE,
    NotASavepointError,
    SavepointError,
    SavepointManifest,
)
from sparktide.state_api.source_positions import source_positions

__all__ = [
    "SavepointSummary",
    "check_savepoint_target",
    "read_savepoint",
    "summarize_savepoint",
    "write_savepoint",
]


def read_savepoint(path: str) -> SavepointManifest:
    """The manifest of the savepoint at ``path`` (a local path or a ``pyarrow.fs`` URI),
    validated; a directory without ``savepoint.json`` (absent, or left incomplete by a crash
    while it was taken) raises :class:`NotASavepointError`."""
    store = CheckpointStore(path)
    where = store.path(SAVEPOINT_FILE)
    if SAVEPOINT_FILE not in store.names():
        raise NotASavepointError(
            f"{path!r} is not a savepoint: it has no {SAVEPOINT_FILE} (it is written last, so "
            "a savepoint whose taking was interrupted lacks it and is incomplete); take the "
            "savepoint again, into an empty directory"
        )
    return SavepointManifest.decode(store.read(where), where)


def write_savepoint(
    checkpoint_location: str, path: str, version: int | None = None
) -> SavepointManifest:
    """Write a savepoint of committed ``version`` (``None``: the last) of the streaming
    checkpoint at ``checkpoint_location`` into ``path`` (absent or an empty directory);
    returns its manifest. Either state backend's checkpoint is read; the savepoint is
    backend-neutral. Raises :class:`SavepointError` for a non-empty ``path``, a version that is
    not committed, or one deleted by retention while it was copied; a copy that fails is
    removed (a kill leaves it without ``savepoint.json``)."""
    if version is not None and type(version) is not int:
        raise TypeError(f"version must be an int or None (the last), got {version!r}")
    source = CheckpointStore(checkpoint_location)
    check_savepoint_target(path)
    target = CheckpointStore(path, snapshot_every=1)
    info = _committed(source, version)
    try:
        manifest = _copy_version(source, target, info)
    except Exception:
        _fail_if_deleted(source, target, info.version)  # a file deleted under the copy?
        _remove(target)
        raise
    _fail_if_deleted(source, target, info.version)
    target.write(target.path(SAVEPOINT_FILE), manifest.encode(), atomic=True)
    return manifest


def check_savepoint_target(path: str) -> None:
    """Raise :class:`SavepointError` unless ``path`` is absent or an empty directory (where a
    savepoint may be written)."""
    names = CheckpointStore(path).names()
    if names:
        raise SavepointError(
            f"the savepoint target {path!r} is not empty (it holds {', '.join(sorted(names)[:5])}"
            f"{', ...' if len(names) > 5 else ''}): a savepoint is written only into an absent "
            "or empty directory; pick another path, or delete that directory first (a "
            f"savepoint whose taking was interrupted has no {SAVEPOINT_FILE} and may be deleted)"
        )


def _committed(source: CheckpointStore, version: int | None) -> CommitManifest:
    """The manifest of ``version`` (``None``: the last committed) of the checkpoint."""
    versions = sorted(
        int(n[:-5]) for n in source.names("commits") if n.endswith(".json") and n[:-5].isdigit()
    )
    if not versions:
        raise SavepointError(
            f"{source.location!r} has no committed version (not a sparktide streaming "
            "checkpoint, or its job committed no batch yet): run the job until it commits a "
            "batch, then take the savepoint"
        )
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise SavepointError(
            f"version {chosen} of {source.location!r} is not committed or no longer kept; the "
            f"checkpoint holds versions {', '.join(map(str, versions))}: pick one of them"
        )
    return source.commit_info(chosen)


def _fail_if_deleted(source: CheckpointStore, target: CheckpointStore, version: int) -> None:
    """Remove the copy and raise :class:`SavepointError` if retention deleted ``version``
    while it was copied (some of its files may be missing from the copy, or be newer)."""
    if f"{version}.json" in source.names("commits"):
        return
    _remove(target)
    raise SavepointError(
        f"version {version} of {source.location!r} was deleted while copying (the running "
        "query's retention keeps only its last versions); take it again"
    )


def _remove(target: CheckpointStore) -> None:
    """Delete what a failed savepoint wrote (never a ``savepoint.json``: none was written)."""
    for name in target.names():
        with contextlib.suppress(OSError):
            target._delete_dir(target.path(name))


def _copy_version(
    source: CheckpointStore, target: CheckpointStore, info: CommitManifest
) -> SavepointManifest:
    """Write the state files, split states and commit manifest of ``info``'s version into
    ``target``; returns the savepoint manifest to write last."""
    v = info.version
    for stage, parallelism in sorted(info.parallelism.items()):
        for subtask in range(parallelism):
            _copy_subtask(source, target, info, stage, subtask)
    split_path = source.path("splits", f"{v}.bin")
    if source.relative(split_path) in info.files:
        target.write_splits(v, source.read_splits(v, info.files))
    full = {s: (Chain(v),) * p for s, p in info.parallelism.items()}
    batch = BatchCommit(
        processing_time=info.processing_time,
        parallelism=dict(info.parallelism),
        spark_batch=info.spark_batch,
        last_spark_batch=info.last_spark_batch,
        metrics=info.metrics,
        chains=full,
        state_types=info.state_types,
    )
    target.fingerprint = info.fingerprint
    target.commit(v, batch)
    return SavepointManifest(
        version=v,
        created_ms=int(time.time() * 1000),
        origin=CHECKPOINT_ORIGIN + source.location,
        spark_batch=info.last_spark_batch,
        sources=source_positions(source, info),
    )


def _copy_subtask(
    source: CheckpointStore,
    target: CheckpointStore,
    info: CommitManifest,
    stage: int,
    subtask: int,
) -> None:
    """Write the state of one stage subtask at ``info``'s version as a full heap snapshot."""
    v = info.version
    chain = info.chain(stage, subtask)
    if chain is None:
        raise CheckpointError(f"the manifest of version {v} names no subtask {subtask} of {stage}")
    record = info.files.get(source.relative(source.subtask_path(chain.snapshot, stage, subtask)))
    loaded = source.load_chain(chain, stage, subtask, files=info.files)
    parts = {
        name: data
        for name, data in (
            ("valves", loaded.valves),
            ("watermarks", loaded.watermarks),
            ("broadcast", loaded.broadcast),
        )
        if data is not None
    }
    operator = None if record is None else record.operator
    target.write_version(v, stage, subtask, Chain(v), loaded.snapshot(), {}, parts, operator)


@dataclass(frozen=True)
class SavepointSummary:
    """What ``sparktide savepoint`` prints of a savepoint: its manifest, its operators (uid or
    name, per stage entry) and its size in bytes."""

    manifest: SavepointManifest
    operators: tuple[str, ...]
    bytes: int

    def lines(self, path: str) -> list[str]:
        m = self.manifest
        out = [
            f"savepoint {path}: version {m.version} of {m.origin}"
            + ("" if m.spark_batch is None else f" (Spark micro-batch {m.spark_batch})"),
            f"operators: {', '.join(self.operators) or 'none'}",
            f"bytes: {self.bytes}",
        ]
        for s in m.sources:
            what = {"files": f"{len(s.files)} file(s) read", "kafka": f"offsets {s.offsets}"}
            out.append(f"source {s.name!r}: {what.get(s.kind.value, 'no position')}")
        return out


def summarize_savepoint(path: str) -> SavepointSummary:
    """The :class:`SavepointSummary` of the savepoint at ``path``."""
    manifest = read_savepoint(path)
    store = CheckpointStore(path)
    info = store.commit_info(manifest.version)
    operators: list[str] = []
    if info.fingerprint is not None:
        for stage in info.fingerprint.stages:
            operators.extend(op.uid or op.name for op in stage.operators)
    size = sum(r.size for r in info.files.values())
    return SavepointSummary(manifest, tuple(operators), size)
