"""A session on this machine whose workers will start ``python3`` from ``PATH`` while the driver
runs in a virtual environment (a script run as ``.venv/bin/python job.py`` without activating
it) is told so before any Spark job: an error naming the fix when that Python lacks
sparktide's dependencies, a warning when it has them."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

from sparktide.spark.session import WorkerPythonError, WorkerPythonWarning, check_local_workers


def _python3(folder: Path, *flags: str) -> str:
    """A folder whose ``python3`` runs the driver's interpreter with ``flags`` (``-I -S``:
    without site-packages or ``PYTHONPATH``, as a bare Python would)."""
    folder.mkdir()
    script = folder / "python3"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {" ".join(flags)} "$@"\n')
    script.chmod(0o755)
    return str(folder)


def test_workers_on_another_python_are_reported_before_any_job(
    spark, tmp_path, monkeypatch
) -> None:
    if sys.prefix == sys.base_prefix or os.name == "nt":
        pytest.skip("the driver must run in a virtual environment, with sh")
    context = spark.sparkContext
    monkeypatch.setattr(context, "pythonExec", "python3")  # PYSPARK_PYTHON was unset
    no_job = context.statusTracker().getJobIdsForGroup(None)

    # python3 on PATH without pyarrow, pandas, numpy: an error saying how to fix it
    monkeypatch.setenv("PATH", _python3(tmp_path / "bare", "-I", "-S"))
    with pytest.raises(WorkerPythonError) as caught:
        check_local_workers(spark)
    message = str(caught.value)
    assert message.startswith("Spark's Python workers run python3 (")
    assert "which cannot import pyarrow, pandas, numpy (No module named 'pyarrow')" in message
    assert f"virtual environment {sys.prefix} without it being activated" in message
    assert f"source {Path(sys.executable).parent}/activate" in message
    assert f"PYSPARK_PYTHON={sys.executable}) before the SparkSession is built" in message

    # no python3 on PATH at all
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(WorkerPythonError, match="would start 'python3' from PATH, which has none"):
        check_local_workers(spark)

    # another python3 that has them: it may work, a warning
    monkeypatch.setenv("PATH", _python3(tmp_path / "full"))
    with pytest.warns(WorkerPythonWarning, match="sparktide is shipped to them"):
        check_local_workers(spark)

    # the environment activated (its bin first on PATH), or PYSPARK_PYTHON set: nothing to say
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{tmp_path / 'bare'}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_local_workers(spark)
        monkeypatch.setenv("PATH", str(tmp_path / "bare"))
        monkeypatch.setattr(context, "pythonExec", sys.executable)
        check_local_workers(spark)
    assert context.statusTracker().getJobIdsForGroup(None) == no_job  # no Spark job ran


def test_a_session_built_under_spark_submit_shows_no_progress_bars(spark, monkeypatch) -> None:
    """In a driver spark-submit started, the session sparktide builds turns Spark's stage
    progress bars off (they would cut into the job's output) unless the launch settings name
    ``spark.ui.showConsoleProgress``."""
    from pyspark.sql import SparkSession

    from sparktide.common import env_overrides
    from sparktide.spark import session

    built: list[dict[str, str]] = []

    def get_or_create(builder: SparkSession.Builder) -> SparkSession:
        built.append(dict(builder._options))
        return spark

    monkeypatch.setattr(env_overrides, "pyspark_gateway_running", lambda: True)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    for launched in (False, True):
        monkeypatch.setattr(
            session, "_launch_conf_sets", lambda key, launched=launched: launched, raising=False
        )
        assert session.get_spark() is spark
    no_bars, as_launched = built
    assert no_bars["spark.ui.showConsoleProgress"] == "false"
    assert "spark.ui.showConsoleProgress" not in as_launched


def test_workers_import_pyspark_from_the_installed_package(spark) -> None:
    """The workers of a session sparktide built start from its daemon, which imports pyspark
    from the installed package (bytecode cached) rather than the Spark home's zipped copy."""

    def where(_):
        import pyspark

        with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:  # the daemon forked us
            daemon = cmdline.read().split(b"\0")
        yield pyspark.__file__, [p for p in sys.path if p.endswith(".zip")], daemon

    if not os.path.exists("/proc"):
        pytest.skip("reads the daemon's command line from /proc")
    [(module, zips, daemon)] = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    import pyspark

    assert Path(module).parent == Path(pyspark.__file__).parent, module
    assert not [z for z in zips if "pyspark" in Path(z).name or "py4j" in Path(z).name], zips
    assert b"sparktide.spark.worker_daemon" in daemon, daemon
