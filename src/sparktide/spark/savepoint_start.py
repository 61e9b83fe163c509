"""A streaming job started from a savepoint: its new checkpoint directory and the files it skips.

``execute(..., checkpoint_location=new, from_savepoint=path)`` starts a job in a new checkpoint
directory (absent or empty; a directory holding anything else is refused,
:func:`check_new_checkpoint`) from the savepoint at ``path``, which holds committed version
``v`` of another checkpoint (see ``docs/savepoints.md``). Before the query starts,
:func:`start_from_savepoint` copies version ``v`` into the new directory:

1. ``restored_from.json``: a :class:`SavepointStart`, the record that this checkpoint started
   from the savepoint, with the savepoint's source positions;
2. every file the savepoint's commit manifest names (its state snapshots and split states),
   each checked against the manifest's record of it;
3. last, the commit manifest of ``v``, without the Spark micro-batches of the savepoint's
   origin (this checkpoint's Spark query starts at micro-batch 0): the pre-flight checks then
   accept a checkpoint with a commit and no Spark log yet, and Spark's first micro-batch runs
   version ``v + 1``, so sinks that write ``batch=<version>`` never overwrite what the job
   wrote before the savepoint.

Restoring version ``v`` is then a restart like any other: the job may have another
parallelism, another state backend, operators added (they start empty) or removed
(``allow_non_restored_state``), matched as :mod:`sparktide.spark.restore_match` says; whether
it can is checked against the savepoint before anything is copied. A crash during the copy
leaves ``restored_from.json`` without a commit: a start of that directory is refused
(:func:`check_start_completed`), and the fix is to start again in an empty directory.

**Files read before.** Spark's file source of the new query lists every file of its folder,
those the job read before the savepoint included. On every start of a checkpoint that began
from a savepoint (the first one and every restart), a file source's frame therefore drops the
rows of the files its savepoint position lists (:func:`without_files`: a filter on the file
source's ``_metadata.file_path``, on classic Spark and over Spark Connect alike). A Kafka
source is positioned by the reader's ``startingOffsets`` instead
(``SavepointManifest.kafka_starting_offsets``).

>>> from sparktide.state_api.savepoint_format import SourceKind, SourcePosition
>>> files = SourcePosition("in", None, SourceKind.FILES, ("file:///in/a.json",))
>>> start = SavepointStart("/sp", 4, (files,))
>>> SavepointStart.decode(start.encode(), "restored_from.json") == start
True
>>> start.files_of(0, "in", None)
('file:///in/a.json',)
>>> spellings(("file:///in/a%20b.json", "s3a://bucket/b.json"))
['file:///in/a%20b.json', 'file:/in/a%20b.json', 's3a://bucket/b.json']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sparktide.spark.batch_lock import BATCH_LOCK_FILE
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_lock import LOCK_FILE
from sparktide.spark.checkpoint_meta import JsonFields
from sparktide.state_api.savepoint_format import (
    SavepointError,
    SavepointManifest,
    SourceKind,
    SourcePosition,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.spark.checkpoint_format import JsonObject

__all__ = [
    "RESTORED_FROM_FILE",
    "SavepointStart",
    "check_new_checkpoint",
    "check_start_completed",
    "read_start",
    "spellings",
    "start_from_savepoint",
    "without_files",
]

RESTORED_FROM_FILE = "restored_from.json"
"""The record in a checkpoint directory that its job started from a savepoint."""

START_FORMAT_VERSION = 1
"""The version of the ``restored_from.json`` format."""

_LOCKS = frozenset({LOCK_FILE, BATCH_LOCK_FILE})  # left by a query that ran nothing


@dataclass(frozen=True)
class SavepointStart:
    """That a checkpoint started from the savepoint at ``savepoint``, which held version
    ``version``, and the positions of the savepoint's sources (the files each had read)."""

    savepoint: str
    version: int
    sources: tuple[SourcePosition, ...]

    def files_of(self, index: int, name: str, uid: str | None) -> tuple[str, ...]:
        """The files the savepoint lists for the job's source number ``index`` named ``name``
        with ``uid``: the savepoint's source with that uid, else the one at the same place with
        the same name (none: a source the savepoint's job did not have, or not a file
        source)."""
        found = [s for s in self.sources if uid is not None and s.uid == uid]
        if not found and index < len(self.sources) and self.sources[index].name == name:
            found = [self.sources[index]]
        return found[0].files if found and found[0].kind is SourceKind.FILES else ()

    def to_json(self) -> JsonObject:
        return {
            "format_version": START_FORMAT_VERSION,
            "savepoint": self.savepoint,
            "version": self.version,
            "sources": [s.to_json() for s in self.sources],
        }

    def encode(self) -> bytes:
        return (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, where: str) -> SavepointStart:
        """Read the bytes of a ``restored_from.json``; a missing or mistyped field raises
        :class:`CheckpointError` naming the file and the field."""
        try:
            raw = json.loads(data.decode("utf-8"))
        except ValueError:
            raise CheckpointError(
                f"{where}: not JSON; the checkpoint directory is damaged: start the job from "
                "its savepoint again, in an empty directory"
            ) from None
        fields = JsonFields(raw, where)
        if fields.raw.get("format_version") != START_FORMAT_VERSION:
            version = fields.raw.get("format_version")
            raise fields.fail("format_version", str(START_FORMAT_VERSION), version)
        return cls(
            fields.get_str("savepoint"),
            fields.get_int("version"),
            tuple(
                SourcePosition.from_json(s, where, f"sources[{i}]")
                for i, s in enumerate(fields.get_list("sources"))
            ),
        )


def read_start(store: CheckpointStore) -> SavepointStart | None:
    """The record that the checkpoint ``store`` started from a savepoint (``None``: it did
    not)."""
    if RESTORED_FROM_FILE not in store.names():
        return None
    path = store.path(RESTORED_FROM_FILE)
    return SavepointStart.decode(store.read(path), path)


def check_start_completed(store: CheckpointStore) -> None:
    """Refuse a checkpoint whose start from a savepoint was interrupted (its record is there,
    the commit copied last is not)."""
    start = read_start(store)
    if start is not None and store.committed_version() is None:
        raise CheckpointError(
            f"the checkpoint directory {store.location!r} was being started from the savepoint "
            f"{start.savepoint!r} when the copy was interrupted: it holds no committed version. "
            "Start the job from the savepoint again, in an empty checkpoint directory"
        )


def check_new_checkpoint(store: CheckpointStore, saved: CheckpointStore) -> SavepointManifest:
    """The manifest of the savepoint ``saved`` (read as the checkpoint of the job: its
    fingerprint, ``allow_non_restored_state`` and key types) once the checkpoint of ``store``
    is new (absent or empty) and the job can restore the savepoint: checked before anything
    is written."""
    from sparktide.state_api.savepoint import read_savepoint

    manifest = read_savepoint(saved.location)  # NotASavepointError: no savepoint.json
    held = sorted(set(store.names()) - _LOCKS)
    if held:
        raise SavepointError(
            f"the checkpoint directory {store.location!r} is not empty (it holds "
            f"{', '.join(held[:5])}{', ...' if len(held) > 5 else ''}): a job starts from a "
            "savepoint in a new checkpoint directory. Pick an empty (or absent) one, or drop "
            "from_savepoint to restart the job of this checkpoint"
        )
    if saved.committed_version() != manifest.version:  # the job's match is checked here
        raise SavepointError(
            f"the savepoint {saved.location!r} does not hold its version {manifest.version} "
            "as its last commit: it was changed after it was taken; take it again"
        )
    return manifest


def start_from_savepoint(
    store: CheckpointStore, savepoint: str, manifest: SavepointManifest
) -> None:
    """Copy version ``manifest.version`` of the savepoint at ``savepoint`` into the new
    checkpoint of ``store`` (see the module docstring: the record, the files, the commit
    last)."""
    start = SavepointStart(savepoint, manifest.version, manifest.sources)
    store.write(store.path(RESTORED_FROM_FILE), start.encode(), atomic=True)
    saved = CheckpointStore(savepoint)
    info = saved.commit_info(manifest.version)
    for relative in sorted(info.files):
        data = saved.read_bound(saved.path(relative), info.files)
        store.write(store.path(relative), data)
    store.write_manifest(replace(info, spark_batch=None, last_spark_batch=None))


def spellings(files: tuple[str, ...]) -> list[str]:
    """Each file of ``files`` as Spark's file source logs it (``file:///x``) and as its
    ``_metadata.file_path`` gives it (Hadoop's ``file:/x``); other schemes are the same in
    both."""
    out: list[str] = []
    for name in files:
        out.append(name)
        if name.startswith("file:///"):
            out.append("file:/" + name[len("file:///") :])
    return out


def without_files(df: DataFrame, files: tuple[str, ...]) -> DataFrame:
    """The streaming frame of a file source without the rows of ``files`` (read before the
    savepoint): a filter on its ``_metadata.file_path``, columns unchanged."""
    if not files:
        return df
    from pyspark.sql import functions as F

    return df.filter(~F.col("_metadata.file_path").isin(spellings(files)))
