"""A job on a SparkSession the user built, whose Python workers cannot import sparktide.

A script run with a virtual environment's interpreter but without activating it builds its own
session: PySpark starts the workers with ``PYSPARK_PYTHON``, else ``python3`` from ``PATH``,
which is another Python. The driver here runs in a subprocess (this file run as a script) and
builds two sessions in turn, each with ``PYSPARK_PYTHON`` naming a bare virtual environment:

* one without any package (no sparktide, pyarrow or pandas): the job stops before it runs with
  one short error naming the workers' Python and how to point Spark at another one;
* one whose ``.pth`` file adds the driver's site-packages as a plain directory (pyspark,
  pyarrow, pandas, numpy; the editable install of sparktide is a ``.pth`` file there, which is
  not processed): sparktide is shipped to the workers and the job gives the local runtime's
  output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import traceback
import venv
from pathlib import Path
from typing import Any

import pytest

from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment

DRIVER_TIMEOUT_S = 300
#: at most this many lines from ``Traceback`` to the message (the user's own frames included)
MAX_TRACEBACK_LINES = 30


def run_job(runtime: str) -> list[Any]:
    """A keyed running sum with event time (sparktide's code runs in the workers)."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda e, _ts: e[1]
    )
    records = [(f"k{i % 3}", i * 10, i) for i in range(30)]
    return list(
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda e: e[0])
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
        .execute_and_collect()
    )


# ---------------------------------------------------------------------------------------------
# The driver (run in a subprocess: python tests/test_user_session.py OUT BARE WITH_DEPENDENCIES)


def _session(worker_python: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = worker_python  # as an unactivated venv's PATH would give
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def drive(out: str, bare: str, with_dependencies: str) -> None:
    report: dict[str, Any] = {}
    spark = _session(bare)
    try:
        run_job("spark")
        report["bare"] = {"error": None}
    except Exception as exc:
        printed = "".join(traceback.format_exception(exc))
        report["bare"] = {"error": type(exc).__name__, "printed": printed}
    finally:
        spark.stop()
    spark = _session(with_dependencies)
    try:
        report["shipped"] = run_job("spark")
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(report))


# ---------------------------------------------------------------------------------------------
# The test


def _bare_venv(path: Path, site_packages: list[str]) -> Path:
    """A virtual environment without pip; ``site_packages`` added as plain directories."""
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if site_packages:
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        Path(purelib, "driver-site.pth").write_text("\n".join(site_packages) + "\n")
    return python


def test_user_session_whose_workers_lack_sparktide(tmp_path: Path) -> None:
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Java was not found (no JAVA_HOME and no java on PATH): Spark needs Java 17")
    bare = _bare_venv(tmp_path / "bare", [])
    site = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    with_dependencies = _bare_venv(tmp_path / "deps", list(dict.fromkeys(site)))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARKTIDE_", "PYSPARK_")) or k == "PYSPARK_SUBMIT_ARGS"  # JVM options
    }
    env.pop("PYTHONPATH", None)  # the driver imports sparktide as installed, the workers cannot
    check = subprocess.run(
        [str(with_dependencies), "-c", "import pyarrow, pandas, pyspark\nimport sparktide"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "No module named 'sparktide'" in check.stderr, check.stderr  # the premise
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, __file__, str(out), str(bare), str(with_dependencies)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
    )
    assert done.returncode == 0 and out.is_file(), done.stderr[-6000:]
    report = json.loads(out.read_text())

    # no sparktide, pyarrow or pandas in the workers: one short error before the job runs
    bare_run = report["bare"]
    assert bare_run["error"] == "WorkerPythonError", bare_run
    printed = bare_run["printed"]
    lines = printed.rstrip("\n").splitlines()
    assert len(lines) <= MAX_TRACEBACK_LINES, printed
    message = lines[-1]
    assert message.startswith("sparktide.spark.session.WorkerPythonError: Spark's Python workers")
    assert str(bare) in message  # the workers' Python, by the name it was given
    assert "cannot import sparktide, pyarrow, pandas, numpy (No module named 'sparktide')" in (
        message
    )
    assert f"PYSPARK_PYTHON={sys.executable}" in message and "spark.pyspark.python" in message
    assert "spark.archives" in message
    for noise in ("Py4J", "PythonException", "org.apache.spark", "During handling"):
        assert noise not in printed

    # pyarrow and pandas but no sparktide in the workers: sparktide is shipped, the job runs
    assert sorted(map(tuple, report["shipped"])) == sorted(run_job("local"))


if __name__ == "__main__":
    drive(*sys.argv[1:4])
