"""The rows tasks send to a Spark run's driver: one decoder into typed values, gathered by kind."""

from __future__ import annotations

import pickle

import pytest

from sparktide.core.metrics import MetricsReport
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.protocol import Shipment, encode_position, pack_collected
from sparktide.runtime.state.rocksdb_local import OpenOutcome
from sparktide.spark.checkpoint_meta import Chain, SplitState, SubtaskWrite
from sparktide.spark.checkpoint_native import NativeUpload
from sparktide.spark.shipments import (
    BatchOutcome,
    CollectedRecords,
    Failure,
    PrintedLines,
    RestoreTiming,
    SplitReport,
    SubtaskReport,
    TaskCounts,
    TaskMetrics,
    decode_rows,
    decode_shipment,
)


def _holds(stage: int, subtask: int) -> dict:
    return {
        "stage": stage,
        "subtask": subtask,
        "state_entries": 3,
        "event_timers": 1,
        "next_event_timer": 10,
        "processing_timers": 0,
        "next_processing_timer": None,
        "watermark": 5,
    }


def _report(stage: int, subtask: int, restore=None, native=None) -> SubtaskReport:
    write = SubtaskWrite(stage, subtask, f"state/1/stage-{stage}/sub-{subtask}.bin", None, Chain(1))
    return SubtaskReport(_holds(stage, subtask), write, restore, native)  # type: ignore[arg-type]


def test_each_kind_of_row_decodes_to_its_typed_value() -> None:
    metrics = TaskMetrics(3, TaskCounts(timers_fired=2))
    report = _report(0, 1, RestoreTiming(OpenOutcome.RESTORED, 0.5))
    split = SplitState(watermark=9, idle=False, seq=3, records=3)
    records = [((0, 1), StreamRecord("a", 5))]
    rows = [
        {"stage": Shipment.METRICS, "target": 0, "position": b"", "payload": pickle.dumps(metrics)},
        {"stage": Shipment.SUBTASK_METRICS, "target": 1, "position": b"",
         "payload": pickle.dumps(report)},
        {"stage": Shipment.SPLIT_STATE, "target": 4, "position": b"", "payload": split.to_bytes()},
        {"stage": Shipment.PRINTED, "target": 0, "position": b"",
         "payload": pickle.dumps([((0, 2), "line")])},
        {"stage": Shipment.COLLECTED, "target": 7, "position": b"",
         "payload": pack_collected(records)},
        {"stage": Shipment.FAILED, "target": 0, "position": b"p", "payload": b"failure"},
    ]  # fmt: skip
    assert decode_rows(rows) == [
        metrics,
        report,
        SplitReport(4, split),
        PrintedLines([((0, 2), "line")]),
        CollectedRecords(7, records),
        Failure(b"p", b"failure"),
    ]


def test_a_row_of_another_kind_or_payload_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown kind 3"):
        decode_shipment(3, 0, b"", b"")
    with pytest.raises(TypeError, match="must carry a TaskMetrics, got dict"):
        decode_shipment(Shipment.METRICS, 0, b"", pickle.dumps({"rounds": 1}))


def test_an_outcome_sums_counts_keeps_the_most_rounds_and_merges_user_metrics() -> None:
    user = MetricsReport()
    user.sums["seen"] = 4
    outcome = BatchOutcome.of(
        [
            TaskMetrics(2, TaskCounts(late_records_dropped=1, timers_fired=3), user),
            TaskMetrics(5, TaskCounts(failed_records=2, timers_fired=1), user),
        ]
    )
    assert outcome.job_metrics() == {
        "rounds": 5,
        "late_records_dropped": 1,
        "late_records_side_output": 0,
        "timers_fired": 4,
        "failed_records": 2,
    }
    assert outcome.user_metrics.sums == {"seen": 8}


def test_an_outcome_gathers_the_subtasks_reports_for_the_commit() -> None:
    native = NativeUpload("op", 0, uploaded_bytes=5, total_bytes=50, private_bytes=2)
    later = _report(1, 0, RestoreTiming(OpenOutcome.RESTORED, 0.25), native)
    earlier = _report(0, 1, RestoreTiming(OpenOutcome.RESTORED, 0.5))
    outcome = BatchOutcome.of([later, earlier, _report(0, 0)])
    assert [(m["stage"], m["subtask"]) for m in outcome.subtask_metrics()] == [
        (0, 0),
        (0, 1),
        (1, 0),
    ]
    assert list(outcome.files()) == [r.write.path for r in (later, earlier, _report(0, 0))]
    assert outcome.natives() == [native]
    restores = outcome.restores()
    assert restores.count(OpenOutcome.RESTORED) == 2
    assert restores.seconds[OpenOutcome.RESTORED] == 0.75


def test_an_outcome_raises_the_earliest_failure_and_prints_in_position_order(capsys) -> None:
    from sparktide.runtime.failures import FailureContext
    from sparktide.spark.failures import failure_payload

    def failure(position: tuple[int, ...], message: str) -> Failure:
        context = FailureContext("map", 0)
        return Failure(encode_position(position), failure_payload(ValueError(message), context))

    printed = BatchOutcome.of([PrintedLines([((0, 3), "b")]), PrintedLines([((0, 1), "a")])])
    printed.print_lines()
    assert capsys.readouterr().out == "a\nb\n"
    failed = BatchOutcome.of([failure((0, 5), "later"), failure((0, 2), "first")])
    with pytest.raises(ValueError, match="first"):
        failed.raise_failure()
