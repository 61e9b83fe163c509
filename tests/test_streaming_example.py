"""The streaming quickstart (``examples/streaming_quickstart.py``) run as the README runs it:
``sparktide run`` twice on one work folder (the second run resumes from the checkpoint and reads
only the files that arrived since), then ``sparktide inspect`` on its checkpoint. Both commands
run in this process, on the session's Spark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.dataset as ds

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "streaming_quickstart.py"


def test_the_stream_sinks_have_a_public_home_and_keep_their_old_paths() -> None:
    from sparktide.datastream import connectors
    from sparktide.datastream.connectors import file_system
    from sparktide.spark import stream_sinks, streaming

    for name in ("ParquetBatchSink", "JsonBatchSink", "ForeachBatchSink", "ConsoleBatchSink"):
        assert getattr(connectors, name) is getattr(stream_sinks, name), name
        assert getattr(streaming, name) is getattr(stream_sinks, name), name
        assert name in connectors.__all__
    assert file_system.ParquetBatchSink is stream_sinks.ParquetBatchSink
    assert file_system.JsonBatchSink is stream_sinks.JsonBatchSink


def _rows(folder: Path, batches: set[int] | None = None) -> list[tuple]:
    """The rows a ParquetBatchSink wrote (``batch=<id>/``), as tuples with the batch id first."""
    table = ds.dataset(str(folder), format="parquet", partitioning="hive").to_table()
    rows = [tuple(r.values()) for r in table.to_pylist()]
    batch_last = sorted((r[-1], *r[:-1]) for r in rows)
    return [r for r in batch_last if batches is None or r[0] in batches]


def _committed(out: str) -> list[tuple[int, int]]:
    return [(int(b), int(n)) for b, n in re.findall(r"committed batch (\d+): (\d+) records", out)]


def test_quickstart_runs_stops_resumes_and_inspects(spark, tmp_path, capsys, monkeypatch) -> None:
    from sparktide.cli import main

    for name in ("SPARKTIDE_RUNTIME", "SPARKTIDE_MASTER", "SPARKTIDE_PARALLELISM"):
        monkeypatch.setenv(name, "")  # `sparktide run` sets them: restored after the test
        monkeypatch.delenv(name)
    work = tmp_path / "quickstart"

    # first run: files 0-2, every one processed, then the query stops (available_now)
    assert main(["run", str(EXAMPLE), "--", str(work)]) == 0
    first = capsys.readouterr()
    assert "wrote 3 new file(s)" in first.out
    assert _committed(first.out) == [(0, 3), (1, 2), (2, 2)]
    assert re.findall(r"\[sparktide\] batch (\d+):", first.err) == ["0", "1", "2"]
    windows = [
        # batch, user, window start, end, clicks, events
        (1, "ann", 0, 10_000, 6, 2),
        (1, "bob", 0, 10_000, 1, 1),
        (2, "ann", 0, 10_000, 11, 3),  # fired again: ann's click at 8 s came within the lateness
        (2, "ann", 10_000, 20_000, 1, 1),
        (2, "bob", 10_000, 20_000, 3, 1),
    ]
    assert _rows(work / "windows") == windows
    assert "batch 2: Row(key='ann', window_start=0, window_end=10000, clicks=11" in first.out
    assert _rows(work / "late") == []

    # second run: two new files; it resumes after batch 2 and reads only them
    assert main(["run", str(EXAMPLE), "--", str(work), "--new-files", "2"]) == 0
    second = capsys.readouterr()
    assert "wrote 2 new file(s): clicks-0003.json, clicks-0004.json" in second.out
    assert _committed(second.out) == [(3, 2), (4, 1)]
    assert _rows(work / "windows") == [
        *windows,
        (3, "bob", 20_000, 30_000, 2, 1),  # left open by the first run, fired by the new files
        (4, "ann", 30_000, 40_000, 1, 1),
    ]
    assert _rows(work / "late") == [(3, "bob", 4_000, 9)]  # beyond the lateness
    assert "late:\n  batch 3: Row(user='bob', ts=4000, clicks=9)" in second.out

    # inspect: the last committed batch, its watermark, the window's pending timers
    assert main(["inspect", str(work / "checkpoint"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["committed_batch"] == 4
    assert summary["watermark"] == 42_000 - 1_000 - 1
    [stage] = summary["stages"]
    assert stage["operators"][0].startswith("Window")
    assert sum(sub["event_timers"] for sub in stage["subtasks"]) == 3
