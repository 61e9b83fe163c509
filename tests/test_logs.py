"""Stdout belongs to the job: Spark's and py4j's logs go to stderr, at a configurable level."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparktide.spark import logs

SRC = Path(__file__).resolve().parents[1] / "src"
MARKER = "--- the job is done"

# A script as PyFlink's examples write them: INFO logging to stdout, then a job on Spark. After
# the job it raises the level to INFO, so Spark's and py4j's INFO lines exist -- on stderr.
SCRIPT = textwrap.dedent(
    f"""
    import logging, sys
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    from sparktide.common import Types
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark import logs
    from sparktide.spark.session import get_spark

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.from_collection([1, 2, 3], Types.INT()).key_by(lambda v: v % 2).map(
        lambda v: v * 10, Types.INT()
    ).print()
    env.execute()
    sys.stdout.flush()
    print({MARKER!r}, file=sys.stderr, flush=True)
    logs.set_log_level("info")
    get_spark().range(3).count()
    """
)


@pytest.fixture
def fresh_logging(monkeypatch):
    """The process's log setup and the py4j/pyspark loggers as they are in a new process."""
    monkeypatch.delenv(logs.LOG_LEVEL_VARIABLE, raising=False)
    monkeypatch.setattr(logs, "SETUP", logs.LogSetup())
    saved = {}
    for name in ("py4j", "pyspark"):
        logger = logging.getLogger(name)
        saved[name] = (list(logger.handlers), logger.propagate, logger.level)
        for handler in list(logger.handlers):
            if type(handler).__name__ != "NullHandler":
                logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    yield
    for name, (handlers, propagate, level) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


def test_spark_job_stdout_is_exactly_the_jobs_output(tmp_path) -> None:
    pytest.importorskip("pyspark")
    script = tmp_path / "job.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != logs.LOG_LEVEL_VARIABLE}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout == "10\n20\n30\n"
    start, _, after = done.stderr.partition(MARKER)
    start_lines = [line for line in start.splitlines() if line.strip()]
    assert len(start_lines) <= 2, start_lines
    # what INFO lets through after the job goes to stderr, not to stdout
    assert " INFO " in after
    assert "INFO py4j.clientserver: Closing down clientserver connection" in after


def test_py4j_records_stay_off_a_stdout_root_logger(fresh_logging, capsys) -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stdout)
    root.addHandler(handler)
    previous = root.level
    root.setLevel(logging.INFO)
    try:
        logs.keep_off_stdout()
        logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
        logging.getLogger("py4j.clientserver").error("the gateway is gone")
        logs.set_log_level("INFO")
        logging.getLogger("pyspark.sql").info("a pyspark note")
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
    out, err = capsys.readouterr()
    assert out == ""
    assert "Closing down" not in err  # INFO is below the default level ERROR
    assert "ERROR py4j.clientserver: the gateway is gone" in err
    assert "INFO pyspark.sql: a pyspark note" in err


def test_a_logger_the_user_configured_is_left_alone(fresh_logging) -> None:
    mine = logging.StreamHandler(sys.stderr)
    logging.getLogger("py4j").addHandler(mine)
    try:
        logs.keep_off_stdout()
        assert logging.getLogger("py4j").propagate
        assert logging.getLogger("py4j").handlers[-1] is mine
        assert not logging.getLogger("pyspark").propagate  # not configured: taken care of
    finally:
        logging.getLogger("py4j").removeHandler(mine)


def test_level_from_the_environment(fresh_logging, monkeypatch) -> None:
    assert logs.log_level() == "ERROR"
    monkeypatch.setenv(logs.LOG_LEVEL_VARIABLE, " warn ")
    assert logs.log_level() == "WARN"
    config = logs.driver_java_options().split("=", 1)[1]
    text = Path(config.removeprefix("file://")).read_text(encoding="utf-8")
    assert text == logs.log4j2_properties("WARN")
    assert "rootLogger.level = WARN" in text and "target = SYSTEM_ERR" in text
    monkeypatch.setenv(logs.LOG_LEVEL_VARIABLE, "loud")
    with pytest.raises(ValueError, match=r"SPARKTIDE_LOG_LEVEL must be one of OFF .* got 'loud'"):
        logs.log_level()
    logs.set_log_level("debug", spark=object())  # the argument wins over the variable
    assert logs.log_level() == "DEBUG"
    with pytest.raises(ValueError, match=r"level must be one of"):
        logs.set_log_level(3)
