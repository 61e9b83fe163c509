"""Batch time and end-to-end latency as figures of the streaming reports
(:mod:`sparktide.nexmark.latency`): how a latency is attributed, and ``python -m sparktide.nexmark
--stream`` at a tiny size, whose latency table has sparktide's and Spark's floor's percentiles."""

from __future__ import annotations

import pytest

from sparktide.nexmark.latency import (
    Arrival,
    CommittedBatch,
    LatencyFigures,
    Percentiles,
    latencies_ms,
    percentile,
)


def test_percentiles_interpolate_as_numpy_does() -> None:
    np = pytest.importorskip("numpy")
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0]
    for q in (0.0, 0.5, 0.95, 0.99, 1.0):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)))
    assert Percentiles.of([]) is None
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_a_row_s_latency_runs_from_its_batch_s_newest_input_to_the_batch_s_commit() -> None:
    arrivals = [Arrival(rows=4, at=10.0), Arrival(rows=4, at=11.0), Arrival(rows=4, at=12.0)]
    batches = [
        CommittedBatch(records=4, rows=0, duration_ms=100, committed_at=10.2),  # no result
        CommittedBatch(records=8, rows=3, duration_ms=900, committed_at=12.5),  # ticks 1 and 2
        CommittedBatch(records=0, rows=1, duration_ms=50, committed_at=12.75),  # timers only
    ]
    assert latencies_ms(arrivals, batches) == [500.0] * 3 + [750.0]
    # a warm-up: rows of batches whose newest input is before the first measured tick go
    assert latencies_ms(arrivals, batches, first_tick=3) == []
    figures = LatencyFigures.of("run", arrivals, batches, first_tick=1)
    assert figures.batches == 1  # the batch with input after the warm-up
    assert figures.batch_ms == Percentiles(900.0, 900.0, 900.0)
    assert figures.latency_ms == Percentiles(500.0, 712.5, 742.5)


def _table(out: str, first_column: str) -> list[list[str]]:
    """The body rows of the Markdown table in ``out`` whose first column is ``first_column``."""
    lines = out.splitlines()
    [start] = [i for i, line in enumerate(lines) if _cells(line)[:1] == [first_column]]
    body = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        body.append(_cells(line))
    return body


def _cells(line: str) -> list[str]:
    if not line.startswith("|"):
        return []
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_nexmark_stream_reports_batch_time_and_latency_beside_spark_s_floor(spark, capsys) -> None:
    from sparktide.nexmark.runner import main

    argv = ["--events", "2000", "--stream", "--batches", "2", "--queries", "q2"]
    assert main([*argv, "--interval-ms", "200"]) == 0
    out = capsys.readouterr().out
    [head] = [_cells(line) for line in out.splitlines() if _cells(line)[:1] == ["query"]]
    assert head[3:] == [
        "bounded events/s", "stream / bounded", "batches", "p50 batch ms", "p95 batch ms",
        "p99 batch ms",
    ]  # fmt: skip
    [throughput] = _table(out, "query")
    assert throughput[0] == "q2" and throughput[5] == "2"
    stream, bounded = _number(throughput[1]), _number(throughput[3])
    ratio = float(throughput[4].removesuffix("x"))  # of the bounded run of the same session
    assert ratio == pytest.approx(stream / bounded, rel=0.01)
    p50, p95, p99 = map(_number, throughput[6:9])
    assert 0 < p50 <= p95 <= p99

    rows = _table(out, "run")
    assert [r[0] for r in rows] == ["q2", "Spark floor: groupBy(auction).count()"]
    for row in rows:
        assert int(row[1]) >= 1, row  # batches that read input
        batch = list(map(_number, row[2:5]))
        latency = list(map(_number, row[5:8]))
        assert 0 < batch[0] <= batch[1] <= batch[2], row
        assert 0 < latency[0] <= latency[1] <= latency[2], row
