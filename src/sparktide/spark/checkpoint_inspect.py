"""What a streaming checkpoint holds, for people and tools (``sparktide inspect CHECKPOINT``).

:func:`describe_checkpoint` reads only metadata (the manifest, file headers, the JSON valves and
operator watermarks, split states) and, for a RocksDB checkpoint, the store keys of its
database (entries and timers counted, the key type read from its JSON description): it never
unpickles anything, on either backend, so it is safe on a checkpoint directory you do not
trust. :func:`describe_values` shows the keyed state values, which means
unpickling them (running code stored in the directory).

>>> import os, tempfile
>>> store = CheckpointStore(tempfile.mkdtemp())
>>> describe_checkpoint(store)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_inspect.NotACheckpointError: ... is not a sparktide checkpoint: ...
>>> os.mkdir(store.path("spark"))  # a query started on it
>>> describe_checkpoint(store)["committed_batch"] is None
True
>>> os.mkdir(store.path("spark", "offsets"))  # Spark's own folder is not one
>>> describe_checkpoint(CheckpointStore(store.path("spark")))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_inspect.NotACheckpointError: ... it is Spark's own checkpoint ...
"""

from __future__ import annotations

import posixpath
from typing import cast

from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.runtime.state.recorded_types import OperatorStateTypes
from sparktide.runtime.state.state_types import StateTypes, describe_declared
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore, unpack_parts
from sparktide.spark.checkpoint_format import CHECKPOINT_FORMAT_VERSION, JsonObject, JsonValue
from sparktide.spark.checkpoint_meta import CommitManifest, OperatorWatermarks, StageFingerprint
from sparktide.spark.checkpoint_native import check_manifest, native_reference, native_summary

__all__ = [
    "NotACheckpointError",
    "check_is_checkpoint",
    "describe_checkpoint",
    "describe_values",
]

# what a checkpoint directory holds once a streaming query has started on it
_ENTRIES = ("commits", "state", "splits", "batches", "inputs", "spark", "writer.lock")
# what Spark's own checkpoint of the query (``<checkpoint>/spark``) holds besides commits/
_SPARK_ENTRIES = ("offsets", "metadata", "sources")


class NotACheckpointError(CheckpointError):
    """The location is not a checkpoint directory of a streaming job."""


def check_is_checkpoint(store: CheckpointStore) -> None:
    """Raise :class:`NotACheckpointError` unless the location of ``store`` is a directory a
    streaming query has started on (it may have no committed batch yet)."""
    try:
        names = set(store.names())
    except NotADirectoryError:
        reason = "it is a file, not a directory"
    else:
        if names & set(_SPARK_ENTRIES) and not names & (set(_ENTRIES) - {"commits"}):
            parent = posixpath.dirname(store.location.rstrip("/")) or "."
            reason = (
                "it is Spark's own checkpoint of the query (offsets/, commits/), which a "
                f"sparktide checkpoint keeps in its spark/ folder (the checkpoint is {parent!r})"
            )
        elif names & set(_ENTRIES):
            return
        else:
            reason = (
                "the directory has none of commits/, state/, spark/"
                if names
                else "no such directory, or it is empty"
            )
    raise NotACheckpointError(
        f"{store.location!r} is not a sparktide checkpoint: {reason}; pass the "
        "checkpoint_location a streaming job was executed with"
    )


def _operator_names(stage_fp: StageFingerprint | None) -> dict[str, str]:
    """Operator identity -> a name for people (the name, made unique with the identity)."""
    ops = stage_fp.operators if stage_fp is not None else ()
    names = [op.name for op in ops]
    out = {}
    for op in ops:
        if op.identity is not None:
            unique = names.count(op.name) == 1
            out[op.identity] = op.name if unique else f"{op.name} [{op.identity}]"
    return out


def _subtask(
    store: CheckpointStore,
    info: CommitManifest,
    stage: int,
    subtask: int,
    names: dict[str, str],
) -> JsonObject:
    files = info.files
    chain = info.chain(stage, subtask)
    if chain is None:
        raise CheckpointError(
            f"the manifest of version {info.version} names no subtask {subtask} of stage {stage}"
        )
    paths = [store.subtask_path(chain.snapshot, stage, subtask)]
    paths.extend(store.changelog_path(v, stage, subtask) for v in chain.changelogs)
    newest = paths[-1]
    meta, parts = unpack_parts(store.read_bound(newest, files), newest)  # checksums, no pickle
    entry: JsonObject = {"subtask": subtask, "backend": chain.backend.value}
    key_groups = meta.get("key_groups")
    if isinstance(key_groups, list):
        entry["key_groups"] = list(key_groups)
        summary = meta.get("summary")
        if isinstance(summary, dict):
            entry.update(summary)
    records = [files.get(store.relative(p)) for p in paths]
    entry["size_bytes"] = sum(r.size for r in records if r is not None)
    ref = native_reference(chain, meta, parts, newest)
    if ref is not None:  # the state is in its RocksDB checkpoint: counted from its store keys
        storage = store.native_storage(str(meta.get("operator")), subtask)
        entry.update(native_summary(storage, ref, newest))
        manifest = check_manifest(storage, ref, newest)
        entry["size_bytes"] = cast(int, entry["size_bytes"]) + manifest.total_bytes
        entry["rocksdb_files"] = len(manifest.files)
    entry["files"] = len(paths)
    if meta.get("kind") == "changelog":
        entry["changed"] = dict(_changed(parts, newest))
    if "watermarks" in parts:
        marks = OperatorWatermarks.decode(parts["watermarks"], newest)
        shown: JsonObject = {names.get(ident, ident): w.watermark for ident, w in marks.items()}
        entry["watermarks"] = shown
    return entry


def _changed(parts: dict[str, bytes], where: str) -> dict[str, int]:
    """What a changelog put and deleted, counted from the JSON meta of its key-group parts
    (:mod:`sparktide.spark.changelog`): state entries and timers."""
    out = {"state_puts": 0, "state_deletes": 0, "timer_puts": 0, "timer_deletes": 0}
    for name, data in parts.items():
        if name.startswith("kg-"):
            sections = unpack_parts(data, f"{where} ({name})")[0].get("sections")
            for section in sections if isinstance(sections, list) else []:
                if not isinstance(section, dict):
                    continue
                kind = "state" if section.get("type") == "state" else "timer"
                for change in ("puts", "deletes"):
                    count = section.get(change)
                    out[f"{kind}_{change}"] += count if isinstance(count, int) else 0
    return out


def describe_checkpoint(store: CheckpointStore) -> JsonObject:
    """A summary of the last committed version, for people and tools (``sparktide
    inspect``), read without unpickling anything: its batch id, processing time, the sources'
    combined watermark and each split's (or ``"idle"``) with its state, the batch's metrics,
    and per stage its operators and per subtask the state backend of the job that wrote it,
    its key groups, state entries, pending timers
    per domain (count, earliest and latest), operator watermarks and the bytes of its files,
    and, when its newest file is a changelog, what that changelog put and deleted; per keyed
    operator the types of its state the manifest records (``state_types``: its key type, and
    per state its kind, TTL setting and declared types)."""
    check_is_checkpoint(store)
    version = store.committed_version()
    out: JsonObject = {"location": store.location, "committed_batch": version}
    if version is None:
        return out
    info = store.commit_info(version)
    out["format_version"] = CHECKPOINT_FORMAT_VERSION
    out["processing_time"] = info.processing_time
    metrics = dict(info.metrics)
    out["watermark"] = metrics.pop("watermark", None)
    out["split_watermarks"] = metrics.pop("split_watermarks", {})
    out["metrics"] = metrics
    if store.relative(store.path("splits", f"{version}.bin")) in info.files:
        splits: JsonObject = {
            str(g): {"watermark": s.watermark, "idle": s.idle, "seq": s.seq, "records": s.records}
            for g, s in sorted(store.read_splits(version, info.files).items())
        }
        out["splits"] = splits
    graph = info.fingerprint.stages if info.fingerprint is not None else ()
    stages: list[JsonValue] = []
    for stage, parallelism in sorted(info.parallelism.items()):
        fp = graph[stage] if stage < len(graph) else None
        names = _operator_names(fp)
        subtasks: list[JsonValue] = [
            _subtask(store, info, stage, i, names) for i in range(parallelism)
        ]
        ops = fp.operators if fp is not None else ()
        recorded = [
            _state_types(names.get(op.identity, op.name), info.state_types[op.identity], version)
            for op in ops
            if op.identity is not None and op.identity in info.state_types
        ]
        stages.append(
            {
                "stage": stage,
                "operators": [op.name for op in ops],
                "uids": [op.uid for op in ops],
                "parallelism": parallelism,
                "subtasks": subtasks,
                "state_types": cast(list[JsonValue], recorded),
            }
        )
    out["stages"] = stages
    return out


def _state_types(name: str, record: OperatorStateTypes, version: int) -> JsonObject:
    """What the commit manifest of ``version`` records of the keyed state of the operator
    ``name``: its key type and per state its kind, TTL setting and declared types, as a user
    declares them (``Types.LONG()``; ``None``: recorded without types, by an older sparktide)."""
    where = f"commits/{version}.json: {record.describe()}"
    states: JsonObject = {}
    for state, meta in sorted(record.states.items()):
        raw = meta.get("types")
        types = None if raw is None else StateTypes.from_json(raw, f"{where}: state {state!r}")
        shown: JsonObject = {"kind": meta["kind"], "ttl": meta["ttl"]}
        shown["value_type"] = None if types is None else describe_declared(types.value)
        if meta["kind"] == "map":
            shown["map_key_type"] = None if types is None else describe_declared(types.map_key)
        states[state] = shown
    key_type = describe_declared(record.declared_key_type())
    return {"operator": name, "uid": record.uid, "key_type": key_type, "states": states}


def describe_values(store: CheckpointStore, limit: int = 20) -> list[JsonValue]:
    """The keyed state values of the last committed version, at most ``limit`` entries per
    stage subtask, as ``repr`` strings. **This unpickles the values: it runs code stored in the
    checkpoint directory**, so use it only on a directory you trust."""
    version = store.committed_version()
    if version is None:
        return []
    info = store.commit_info(version)
    out: list[JsonValue] = []
    for stage, parallelism in sorted(info.parallelism.items()):
        for i in range(parallelism):
            _, parts = store.read_subtask(version, stage, i)
            if "keyed" not in parts:
                continue
            try:
                snap = KeyedOperatorSnapshot.from_bytes(parts["keyed"])
            except SnapshotFormatError as exc:
                path = store.subtask_path(version, stage, i)
                raise CheckpointError(f"{path}: {exc}") from None
            entries: list[JsonValue] = [
                {"key_group": kg, "state": name, "key": repr(key), "namespace": repr(ns),
                 "value": repr(value)}
                for kg in sorted(snap.state)
                for name, rows in sorted(snap.state[kg].items())
                for key, ns, value in rows
            ]  # fmt: skip
            out.append(
                {"stage": stage, "subtask": i, "entries": entries[:limit],
                 "more": max(0, len(entries) - limit)}
            )  # fmt: skip
    return out
