"""What a streaming checkpoint holds, for people and tools (``sparktide inspect CHECKPOINT``).

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

from typing import Any

from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore

__all__ = ["NotACheckpointError", "check_is_checkpoint", "describe_checkpoint"]

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


def describe_checkpoint(store: CheckpointStore) -> dict[str, Any]:
    """A summary of the last committed version, for people and tools (``sparktide
    inspect``): its batch id, processing time, the sources' combined watermark and each
    split's (or ``"idle"``), the batch's metrics, and per stage subtask its key groups, state
    entries and pending timers per domain (count, earliest and latest)."""
    check_is_checkpoint(store)
    version = store.committed_version()
    out: dict[str, Any] = {"location": store.location, "committed_batch": version}
    if version is None:
        return out
    info = store.commit_info(version)
    out["processing_time"] = info.get("processing_time")
    metrics = dict(info.get("metrics", {}))
    out["watermark"] = metrics.pop("watermark", None)
    out["split_watermarks"] = metrics.pop("split_watermarks", {})
    out["metrics"] = metrics
    graph = (info.get("fingerprint") or {}).get("stages", [])
    stages = []
    for stage, parallelism in sorted(info["parallelism"].items(), key=lambda kv: int(kv[0])):
        subtasks = []
        for i in range(int(parallelism)):
            _, parts = store.read_subtask(version, int(stage), i)
            entry: dict[str, Any] = {"subtask": i}
            if "keyed" in parts:
                try:
                    snap = KeyedOperatorSnapshot.from_bytes(parts["keyed"])
                except SnapshotFormatError as exc:
                    path = store.subtask_path(version, int(stage), i)
                    raise CheckpointError(f"{path}: {exc}") from None
                entry["key_groups"] = [snap.key_group_range.start, snap.key_group_range.end]
                entry["state_entries"] = sum(
                    len(e) for per in snap.state.values() for e in per.values()
                )
                for d, domain in enumerate(("event", "processing")):
                    stamps = [
                        t[0]
                        for per in snap.timers.values()
                        for pair in per.values()
                        for t in pair[d]
                    ]
                    entry[f"{domain}_timers"] = len(stamps)
                    entry[f"next_{domain}_timer"] = min(stamps, default=None)
                    entry[f"last_{domain}_timer"] = max(stamps, default=None)
            subtasks.append(entry)
        stages.append(
            {
                "stage": int(stage),
                "operators": [name for name, _ in graph[int(stage)]["operators"]]
                if int(stage) < len(graph)
                else [],
                "parallelism": int(parallelism),
                "subtasks": subtasks,
            }
        )
    out["stages"] = stages
    return out
