"""What the tasks of a Spark run send to the driver, as typed values, and the one decoder.

A row for the driver carries a :class:`~sparktide.runtime.execution.protocol.Shipment` kind in
its ``stage`` column; :func:`decode_shipment` turns each kind into one value:

- ``FAILED``: a :class:`Failure` (a user function raised; its pickled ``RemoteFailure``),
- ``PRINTED``: :class:`PrintedLines` (``print()`` lines with their positions),
- ``METRICS``: the :class:`TaskMetrics` a task pickled (rounds, :class:`TaskCounts`, user
  metrics),
- ``SUBTASK_METRICS``: the :class:`SubtaskReport` a streaming stage subtask pickled (what it
  holds, the :class:`~sparktide.spark.checkpoint_meta.SubtaskWrite` for the manifest, how it
  got its state, the native RocksDB checkpoint it uploaded),
- ``SPLIT_STATE``: a :class:`SplitReport` (a streaming source split's
  :class:`~sparktide.spark.checkpoint_meta.SplitState`),
- ``COLLECTED``: :class:`CollectedRecords` (a collect sink's records).

Both streaming paths (per record and columnar) and the bounded runner give the driver these
values; :class:`BatchOutcome` gathers what they said (failures first, then lines, totals, the
subtasks' reports, the splits' states and collected records).

>>> counts = TaskCounts(late_records_dropped=1, timers_fired=2)
>>> (counts + TaskCounts(timers_fired=3)).as_dict()["timers_fired"]
5
>>> outcome = BatchOutcome.of([TaskMetrics(4, counts), TaskMetrics(2, counts)])
>>> outcome.rounds, outcome.counts.late_records_dropped
(4, 2)
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from sparktide.core.metrics import MetricsReport
from sparktide.runtime.execution.protocol import Collected, Position, Shipment, unpack_collected
from sparktide.runtime.state.rocksdb_local import LocalRecoveryStats, OpenOutcome
from sparktide.spark.checkpoint_meta import FileRecord, SplitState, SubtaskWrite
from sparktide.spark.checkpoint_native import NativeUpload
from sparktide.spark.failures import raise_first_failure

if TYPE_CHECKING:
    from sparktide.runtime.execution.driver import SubtaskMetrics
    from sparktide.spark.stream_metrics import TaskTotals

__all__ = [
    "BatchOutcome",
    "CollectedRecords",
    "Failure",
    "PrintedLines",
    "RestoreTiming",
    "Shipped",
    "SplitReport",
    "SubtaskReport",
    "TaskCounts",
    "TaskMetrics",
    "decode_rows",
    "decode_shipment",
]

_position = itemgetter(0)  # of a printed line


@dataclass(frozen=True, slots=True)
class TaskCounts:
    """The task metrics that add up over tasks (late records dropped or sent to a late-data
    side output, timers fired, records sent to a failed-records side output)."""

    late_records_dropped: int = 0
    late_records_side_output: int = 0
    timers_fired: int = 0
    failed_records: int = 0

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> TaskCounts:
        """From :meth:`JobTasks.metrics <sparktide.runtime.execution.tasks.JobTasks.metrics>`
        (or an engine's counts: names it does not count are 0)."""
        return cls(
            counts.get("late_records_dropped", 0),
            counts.get("late_records_side_output", 0),
            counts.get("timers_fired", 0),
            counts.get("failed_records", 0),
        )

    def __add__(self, other: TaskCounts) -> TaskCounts:
        return TaskCounts(
            self.late_records_dropped + other.late_records_dropped,
            self.late_records_side_output + other.late_records_side_output,
            self.timers_fired + other.timers_fired,
            self.failed_records + other.failed_records,
        )

    def as_dict(self) -> dict[str, int]:
        """The counts by name (a job's metrics)."""
        return {
            "late_records_dropped": self.late_records_dropped,
            "late_records_side_output": self.late_records_side_output,
            "timers_fired": self.timers_fired,
            "failed_records": self.failed_records,
        }

    def as_totals(self) -> TaskTotals:
        """The counts as a batch's metrics hold them."""
        from sparktide.spark.stream_metrics import TaskTotals

        return TaskTotals(
            late_records_dropped=self.late_records_dropped,
            late_records_side_output=self.late_records_side_output,
            timers_fired=self.timers_fired,
            failed_records=self.failed_records,
        )


@dataclass(frozen=True, slots=True)
class TaskMetrics:
    """What one task reports at its end: the rounds it saw, its counts and the user metrics of
    its operators (``get_metrics_group()``)."""

    rounds: int
    counts: TaskCounts
    user_metrics: MetricsReport | None = None


@dataclass(frozen=True, slots=True)
class RestoreTiming:
    """How a streaming stage subtask got its state in a batch, and the seconds it took."""

    outcome: OpenOutcome
    seconds: float


@dataclass(frozen=True, slots=True)
class SubtaskReport:
    """What a streaming stage subtask reports after a micro-batch: what it holds
    (:class:`~sparktide.runtime.execution.driver.SubtaskMetrics`), what it wrote (for the
    manifest), how it got its state (``None``: not restored in that process) and the native
    RocksDB checkpoint it took (``None``: not native)."""

    holds: SubtaskMetrics
    write: SubtaskWrite
    restore: RestoreTiming | None = None
    native: NativeUpload | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A user function raised: where (the sortable position) and the pickled failure."""

    position: bytes
    payload: bytes


@dataclass(frozen=True, slots=True)
class PrintedLines:
    """``print()`` lines with their positions."""

    lines: list[tuple[Position, str]]


@dataclass(frozen=True, slots=True)
class SplitReport:
    """A streaming source split's state after a micro-batch."""

    split: int
    state: SplitState


@dataclass(frozen=True, slots=True)
class CollectedRecords:
    """Records of collect sink ``node_id``, each with its position."""

    node_id: int
    records: list[Collected]


Shipped: TypeAlias = (
    Failure | PrintedLines | TaskMetrics | SubtaskReport | SplitReport | CollectedRecords
)
"""What one row for the driver says."""

_T = TypeVar("_T")


def _unpickled(payload: bytes, kind: type[_T], what: str) -> _T:
    value = pickle.loads(payload)
    if not isinstance(value, kind):
        raise TypeError(f"{what} must carry a {kind.__name__}, got {type(value).__name__}")
    return value


def decode_shipment(stage: int, target: int, position: bytes, payload: bytes) -> Shipped:
    """The value of one row for the driver (``stage``: its :class:`Shipment` kind)."""
    if stage == Shipment.FAILED:
        return Failure(position, payload)
    if stage == Shipment.PRINTED:
        return PrintedLines(pickle.loads(payload))
    if stage == Shipment.METRICS:
        return _unpickled(payload, TaskMetrics, "a task's metrics row")
    if stage == Shipment.SUBTASK_METRICS:
        return _unpickled(payload, SubtaskReport, f"the metrics row of subtask {target}")
    if stage == Shipment.SPLIT_STATE:
        where = f"the state of source split {target}"
        return SplitReport(target, SplitState.from_bytes(payload, where))
    if stage == Shipment.COLLECTED:
        return CollectedRecords(target, unpack_collected(payload))
    raise ValueError(f"a row for the driver of unknown kind {stage} (target {target})")


def decode_rows(rows: Iterable[Any]) -> list[Shipped]:
    """The values of Spark rows for the driver (columns ``stage``, ``target``, ``position``,
    ``payload``)."""
    return [decode_shipment(r["stage"], r["target"], r["position"], r["payload"]) for r in rows]


@dataclass
class BatchOutcome:
    """What the rows for the driver of one run or micro-batch said, gathered by kind."""

    failures: list[tuple[bytes, bytes]] = field(default_factory=list)
    printed: list[tuple[Position, str]] = field(default_factory=list)
    rounds: int = 0
    counts: TaskCounts = field(default_factory=TaskCounts)
    user_metrics: MetricsReport = field(default_factory=MetricsReport)
    subtasks: list[SubtaskReport] = field(default_factory=list)
    splits: dict[int, SplitState] = field(default_factory=dict)
    collected: list[CollectedRecords] = field(default_factory=list)

    @classmethod
    def of(cls, shipped: Iterable[Shipped]) -> BatchOutcome:
        out = cls()
        for item in shipped:
            out.add(item)
        return out

    def add(self, item: Shipped) -> None:
        """Gather ``item`` by its kind."""
        if isinstance(item, TaskMetrics):
            self.rounds = max(self.rounds, item.rounds)
            self.counts = self.counts + item.counts
            self.user_metrics.merge(item.user_metrics or MetricsReport())
        elif isinstance(item, SubtaskReport):
            self.subtasks.append(item)
        elif isinstance(item, SplitReport):
            self.splits[item.split] = item.state
        elif isinstance(item, PrintedLines):
            self.printed.extend(item.lines)
        elif isinstance(item, CollectedRecords):
            self.collected.append(item)
        else:
            self.failures.append((item.position, item.payload))

    def raise_failure(self) -> None:
        """Raise the user's error of the earliest failure, if a user function raised."""
        raise_first_failure(self.failures)

    def print_lines(self) -> None:
        """Print the ``print()`` lines on the driver, in position order."""
        self.printed.sort(key=_position)
        out = sys.stdout
        for _, line in self.printed:
            out.write(line + "\n")

    def job_metrics(self) -> dict[str, int]:
        """A bounded run's metrics: its rounds and the counts summed over its tasks."""
        return {"rounds": self.rounds, **self.counts.as_dict()}

    # ------------------------------------------------------------------ a micro-batch's

    def subtask_metrics(self) -> list[SubtaskMetrics]:
        """What each stage subtask holds, by stage and subtask."""
        reports = sorted(self.subtasks, key=_stage_and_subtask)
        return [r.holds for r in reports]

    def files(self) -> dict[str, FileRecord]:
        """The records of the state files the subtasks wrote, by path."""
        return {r.write.path: r.write.record for r in self.subtasks}

    def writes(self) -> list[SubtaskWrite]:
        return [r.write for r in self.subtasks]

    def restores(self) -> LocalRecoveryStats:
        """How the subtasks got their state, and the seconds it took."""
        stats = LocalRecoveryStats()
        for report in self.subtasks:
            if report.restore is not None:
                stats.record(report.restore.outcome, report.restore.seconds)
        return stats

    def natives(self) -> list[NativeUpload]:
        """The native RocksDB checkpoints the subtasks took."""
        return [r.native for r in self.subtasks if r.native is not None]


def _stage_and_subtask(report: SubtaskReport) -> tuple[int, int]:
    holds = report.holds
    return holds["stage"], holds["subtask"]
