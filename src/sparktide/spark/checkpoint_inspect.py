"""What a streaming checkpoint holds, for people and tools (``sparktide inspect CHECKPOINT``).

:func:`describe_checkpoint` reads only metadata (the manifest, file headers, the JSON valves and
operator watermarks, split states): it never unpickles anything, so it is safe on a checkpoint
directory you do not trust. :func:`describe_values` shows the keyed state values, which means
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
"""

from __future__ import annotations

import json
from typing import Any

from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.spark.checkpoint import (
    CheckpointError,
    CheckpointStore,
    chains_of,
    unpack_parts,
)

__all__ = [
    "NotACheckpointError",
    "check_is_checkpoint",
    "describe_checkpoint",
    "describe_values",
]

# what a checkpoint directory holds once a streaming query has started on it
_ENTRIES = ("commits", "state", "splits", "batches", "spark", "writer.lock")


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
        if names & set(_ENTRIES):
            return
        reason = (
            "the directory has none of commits/, state/, spark/"
            if names
            else "no such directory, or it is empty"
        )
    raise NotACheckpointError(
        f"{store.location!r} is not a sparktide checkpoint: {reason}; pass the "
        "checkpoint_location a streaming job was executed with"
    )


def _operator_names(stage_fp: dict[str, Any]) -> dict[str, str]:
    """Operator identity -> a name for people (the name, made unique with the identity)."""
    ops = stage_fp.get("operators", [])
    names = [op[0] for op in ops]
    out = {}
    for op in ops:
        if len(op) > 2:
            out[op[2]] = op[0] if names.count(op[0]) == 1 else f"{op[0]} [{op[2]}]"
    return out


def _subtask(
    store: CheckpointStore,
    info: dict[str, Any],
    stage: int,
    subtask: int,
    names: dict[str, str],
) -> dict[str, Any]:
    files = info.get("files")
    chain = chains_of(info)[str(stage)][subtask]
    paths = [store.subtask_path(chain["snapshot"], stage, subtask)]
    paths.extend(store.changelog_path(v, stage, subtask) for v in chain["changelogs"])
    newest = paths[-1]
    meta, parts = unpack_parts(store.read_bound(newest, files), newest)  # checksums, no pickle
    entry: dict[str, Any] = {"subtask": subtask}
    if meta.get("key_groups") is not None:
        entry["key_groups"] = list(meta["key_groups"])
        entry.update(meta.get("summary", {}))
    records = files or {}
    entry["size_bytes"] = sum(records.get(store.relative(p), {}).get("size", 0) for p in paths)
    entry["files"] = len(paths)
    if meta.get("kind") == "changelog":
        entry["changed"] = _changed(parts, newest)
    if "watermarks" in parts:
        raw = json.loads(parts["watermarks"].decode("utf-8"))
        entry["watermarks"] = {names.get(ident, ident): wm[0] for ident, wm in raw.items()}
    return entry


def _changed(parts: dict[str, bytes], where: str) -> dict[str, int]:
    """What a changelog put and deleted, counted from the JSON meta of its key-group parts
    (:mod:`sparktide.spark.changelog`): state entries and timers."""
    out = {"state_puts": 0, "state_deletes": 0, "timer_puts": 0, "timer_deletes": 0}
    for name, data in parts.items():
        if name.startswith("kg-"):
            for section in unpack_parts(data, f"{where} ({name})")[0]["sections"]:
                kind = "state" if section["type"] == "state" else "timer"
                out[f"{kind}_puts"] += section["puts"]
                out[f"{kind}_deletes"] += section["deletes"]
    return out


def describe_checkpoint(store: CheckpointStore) -> dict[str, Any]:
    """A summary of the last committed version, for people and tools (``sparktide
    inspect``), read without unpickling anything: its batch id, processing time, the sources'
    combined watermark and each split's (or ``"idle"``) with its state, the batch's metrics,
    and per stage its operators and per subtask its key groups, state entries, pending timers
    per domain (count, earliest and latest), operator watermarks and the bytes of its files,
    and, when its newest file is a changelog, what that changelog put and deleted."""
    check_is_checkpoint(store)
    version = store.committed_version()
    out: dict[str, Any] = {"location": store.location, "committed_batch": version}
    if version is None:
        return out
    info = store.commit_info(version)
    out["format_version"] = info.get("format_version")
    out["processing_time"] = info.get("processing_time")
    metrics = dict(info.get("metrics", {}))
    out["watermark"] = metrics.pop("watermark", None)
    out["split_watermarks"] = metrics.pop("split_watermarks", {})
    out["metrics"] = metrics
    files = info.get("files")
    if store.relative(store.path("splits", f"{version}.bin")) in (files or {}):
        out["splits"] = {
            str(g): unpack_parts(data, f"split {g}")[0]
            for g, data in sorted(store.read_splits(version, files).items())
        }
    graph = (info.get("fingerprint") or {}).get("stages", [])
    stages = []
    for stage, parallelism in sorted(info["parallelism"].items(), key=lambda kv: int(kv[0])):
        fp = graph[int(stage)] if int(stage) < len(graph) else {}
        names = _operator_names(fp)
        subtasks = [_subtask(store, info, int(stage), i, names) for i in range(int(parallelism))]
        stages.append(
            {
                "stage": int(stage),
                "operators": [op[0] for op in fp.get("operators", [])],
                "uids": [op[1] for op in fp.get("operators", [])],
                "parallelism": int(parallelism),
                "subtasks": subtasks,
            }
        )
    out["stages"] = stages
    return out


def describe_values(store: CheckpointStore, limit: int = 20) -> list[dict[str, Any]]:
    """The keyed state values of the last committed version, at most ``limit`` entries per
    stage subtask, as ``repr`` strings. **This unpickles the values: it runs code stored in the
    checkpoint directory**, so use it only on a directory you trust."""
    version = store.committed_version()
    if version is None:
        return []
    info = store.commit_info(version)
    out = []
    for stage, parallelism in sorted(info["parallelism"].items(), key=lambda kv: int(kv[0])):
        for i in range(int(parallelism)):
            _, parts = store.read_subtask(version, int(stage), i)
            if "keyed" not in parts:
                continue
            try:
                snap = KeyedOperatorSnapshot.from_bytes(parts["keyed"])
            except SnapshotFormatError as exc:
                path = store.subtask_path(version, int(stage), i)
                raise CheckpointError(f"{path}: {exc}") from None
            entries = [
                {"key_group": kg, "state": name, "key": repr(key), "namespace": repr(ns),
                 "value": repr(value)}
                for kg in sorted(snap.state)
                for name, rows in sorted(snap.state[kg].items())
                for key, ns, value in rows
            ]  # fmt: skip
            out.append(
                {"stage": int(stage), "subtask": i, "entries": entries[:limit],
                 "more": max(0, len(entries) - limit)}
            )  # fmt: skip
    return out
