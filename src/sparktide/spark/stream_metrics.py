r"""The metrics of one micro-batch of a streaming run, and how they are reported.

The driver of a streaming run (:mod:`sparktide.spark.streaming`) folds what the tasks of a batch
sent back (per source split its watermark and idleness, per stage subtask its state entries,
pending timers and watermark, per task its late records and fired timers) into one
:func:`batch_metrics` dict. The dict goes into the batch's commit file (so ``sparktide inspect``
shows it), into ``StreamingJobClient.recent_progress``, to the ``sparktide.streaming`` logger at
``INFO`` as one :func:`format_progress` line, and to the progress listeners of the client.

>>> m = batch_metrics(
...     version=3, spark_batch=3, processing_time=1000, duration_ms=12,
...     splits={0: {"watermark": 500, "idle": False, "records": 7},
...             1: {"watermark": 900, "idle": True, "records": 0}},
...     tasks={"late_records_dropped": 1, "late_records_side_output": 0, "timers_fired": 2},
...     subtasks=[{"stage": 0, "subtask": 0, "state_entries": 4, "event_timers": 2,
...                "next_event_timer": 600, "processing_timers": 0,
...                "next_processing_timer": None, "watermark": 500}])
>>> m["watermark"], m["split_watermarks"], m["timers_pending"]
(500, {'0': 500, '1': 'idle'}, {'event': 2, 'processing': 0})
>>> print(format_progress(m).replace(", ", ",\n"))
batch 3: 7 records in 12 ms,
watermark 500 (splits 0=500 1=idle),
timers fired 2,
pending 2 event + 0 processing (next event 600),
state entries 4,
late dropped 1
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import NotRequired, TypedDict

from sparktide.runtime.execution.driver import SubtaskMetrics
from sparktide.runtime.state.rocksdb_local import LocalRecoveryStats, OpenOutcome

__all__ = [
    "LOGGER",
    "BatchMetrics",
    "SplitSummary",
    "TaskTotals",
    "batch_metrics",
    "format_progress",
    "restore_metrics",
]


class SplitSummary(TypedDict):
    """A source split after a batch: its watermark, idleness and the records it read."""

    watermark: int
    idle: bool
    records: int


class TaskTotals(TypedDict, total=False):
    """The task metrics that add up over a batch's tasks."""

    late_records_dropped: int
    late_records_side_output: int
    timers_fired: int
    failed_records: int


class BatchMetrics(TaskTotals):
    """One batch's metrics (:func:`batch_metrics`)."""

    batch_id: int
    spark_batch: int | None
    processing_time: int
    duration_ms: int
    records: int
    watermark: int | None
    split_watermarks: dict[str, int | str]
    operator_watermarks: dict[str, int]
    timers_pending: dict[str, int]
    next_event_timer: int | None
    next_processing_timer: int | None
    state_entries: int
    state_restores: NotRequired[dict[str, dict[str, int | float]]]
    """Per :class:`~sparktide.runtime.state.rocksdb_local.OpenOutcome`: how many subtasks got
    their state that way in the batch and the seconds it took them (:func:`restore_metrics`)."""
    skipped_input_files: NotRequired[list[str]]
    """Input files missing at the batch, skipped because the configuration option
    ``sparktide.streaming.skip-missing-input-files`` is true
    (:mod:`sparktide.spark.batch_inputs`)."""
    skipped_records: NotRequired[int | None]
    """The records those files held when the batch first read them (``None``: not known)."""
    rocksdb_checkpoints: NotRequired[dict[str, int]]
    """What the batch's native RocksDB checkpoints uploaded, summed over its subtasks
    (:func:`~sparktide.spark.checkpoint_native.native_checkpoint_metrics`)."""


def restore_metrics(stats: LocalRecoveryStats) -> dict[str, dict[str, int | float]]:
    """The ``state_restores`` of a batch: per outcome its count and seconds.

    >>> stats = LocalRecoveryStats()
    >>> stats.record(OpenOutcome.RESTORED, 0.25)
    >>> restore_metrics(stats)["restored"], restore_metrics(stats)["reused_in_memory"]
    ({'count': 1, 'seconds': 0.25}, {'count': 0, 'seconds': 0.0})
    """
    return {
        o.value: {"count": stats.count(o), "seconds": round(stats.seconds.get(o, 0.0), 6)}
        for o in OpenOutcome
    }


#: per-batch progress lines of streaming runs (``INFO``)
LOGGER = logging.getLogger("sparktide.streaming")

_MIN_WATERMARK = -(2**63)


def _combined(splits: dict[int, SplitSummary]) -> int | None:
    """The sources' combined watermark as a valve computes it: the lowest watermark of the
    splits that are not idle (``None`` when every split is idle or none has one yet)."""
    active = [s["watermark"] for s in splits.values() if not s["idle"]]
    if not active or min(active) == _MIN_WATERMARK:
        return None
    return min(active)


def batch_metrics(
    *,
    version: int,
    spark_batch: int | None,
    processing_time: int,
    duration_ms: int,
    splits: dict[int, SplitSummary],
    tasks: TaskTotals,
    subtasks: Iterable[SubtaskMetrics],
    restores: LocalRecoveryStats | None = None,
) -> BatchMetrics:
    """One batch's metrics (JSON-able: keys are strings).

    ``batch_id``: the version the batch committed (what batch sinks are given);
    ``spark_batch``: Spark's micro-batch id, ``None`` for a batch without new data that the
    runner ran because timers or idleness were due; ``watermark``: the sources' combined
    watermark, ``split_watermarks``: per split its watermark or ``"idle"``;
    ``operator_watermarks``: per stage the lowest watermark of its subtasks;
    ``timers_pending`` per domain and the earliest pending (``next_event_timer``,
    ``next_processing_timer``); ``state_entries``: keyed state entries over all subtasks (on
    RocksDB, its estimate); ``state_restores`` (given ``restores``): how the subtasks got
    their state (:func:`restore_metrics`).
    """
    subtasks = list(subtasks)
    pending = {"event": 0, "processing": 0}
    earliest: dict[str, int | None] = {"event": None, "processing": None}
    stages: dict[str, int] = {}
    for sub in subtasks:
        counts = {"event": sub["event_timers"], "processing": sub["processing_timers"]}
        heads = {"event": sub["next_event_timer"], "processing": sub["next_processing_timer"]}
        for domain in pending:
            pending[domain] += counts[domain]
            head, first = heads[domain], earliest[domain]
            if head is not None and (first is None or head < first):
                earliest[domain] = head
        watermark = sub["watermark"]
        if watermark is not None:
            key = str(sub["stage"])
            stages[key] = min(stages.get(key, watermark), watermark)
    out: BatchMetrics = {
        "batch_id": version,
        "spark_batch": spark_batch,
        "processing_time": processing_time,
        "duration_ms": duration_ms,
        "records": sum(s["records"] for s in splits.values()),
        "watermark": _combined(splits),
        "split_watermarks": {
            str(g): "idle" if s["idle"] else s["watermark"] for g, s in sorted(splits.items())
        },
        "operator_watermarks": stages,
        "timers_pending": pending,
        "next_event_timer": earliest["event"],
        "next_processing_timer": earliest["processing"],
        "state_entries": sum(s["state_entries"] for s in subtasks),
    }
    for name, value in tasks.items():  # the totals over the batch's tasks
        out[name] = value  # type: ignore[literal-required]  # the keys of TaskTotals
    if restores is not None:
        out["state_restores"] = restore_metrics(restores)
    return out


def _watermark_text(value: int | str | None) -> str:
    if value is None:
        return "none"
    if value == _MIN_WATERMARK:
        return "min"
    return str(value)


def format_progress(m: BatchMetrics) -> str:
    """One line for people: what :func:`batch_metrics` says of a batch."""
    splits = " ".join(f"{g}={_watermark_text(w)}" for g, w in m["split_watermarks"].items())
    kind = "" if m["spark_batch"] is not None else " (no new data: timers or idleness due)"
    pending = m["timers_pending"]
    heads = (("event", m["next_event_timer"]), ("processing", m["next_processing_timer"]))
    nexts = [f"next {d} {head}" for d, head in heads if head is not None]
    line = (
        f"batch {m['batch_id']}{kind}: {m['records']} records in {m['duration_ms']} ms, "
        f"watermark {_watermark_text(m['watermark'])} (splits {splits}), "
        f"timers fired {m.get('timers_fired')}, pending {pending['event']} event + "
        f"{pending['processing']} processing"
        + (f" ({', '.join(nexts)})" if nexts else "")
        + f", state entries {m['state_entries']}"
    )
    if m.get("late_records_dropped"):
        line += f", late dropped {m['late_records_dropped']}"
    if m.get("late_records_side_output"):
        line += f", late to side output {m['late_records_side_output']}"
    return line
