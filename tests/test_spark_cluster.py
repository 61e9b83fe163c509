"""A keyed event-time job on a multi-process Spark master, with sparktide shipped as a zip.

The job (event-time windows with allowed lateness and a late side output, then keyed event-time
timers) runs at parallelism 2 on ``local-cluster[2,1,1024]``: a standalone master and two
workers in the driver's JVM, each launching an executor JVM of its own with 1 core, whose Python
workers are processes of their own too. Its output must equal the local runtime's.

The cluster's driver runs in a subprocess (this file run as a script), so the test neither
touches the SparkSession of this pytest process nor writes into pyspark's directory (a
``local-cluster`` worker keeps its files in ``$SPARK_HOME/work``: here a temporary SPARK_HOME
linked to pyspark's ``bin``, ``jars`` and ``python``).

How the test proves that the executors import sparktide from the zip that
:func:`~sparktide.spark.session.ship_package` ships, and from nowhere else:

* the Python workers run the driver's interpreter with ``-S`` (no ``site``: no ``.pth`` file,
  so no editable install, is processed), and their ``PYTHONPATH`` holds a copy of the driver's
  site-packages (symbolic links) without sparktide, its dist-info and ``.pth`` files, and
  without the repository's ``src``;
* before any sparktide job runs, a probe task on every executor finds no ``sparktide`` module;
* after the job (whose executor ships the package on its own), the probe finds ``sparktide``
  inside the shipped zip in each executor's SparkFiles directory, on two different executors.
"""

from __future__ import annotations

import os
import pickle
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktide.common import Duration, Time
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import TumblingEventTimeWindows

MASTER = "local-cluster[2,1,1024]"
EXECUTORS = 2
PARALLELISM = 2
WATERMARK_EVERY = 7
DRIVER_TIMEOUT_S = 240
SHORT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.level=ERROR"
LATE = OutputTag("late")


# ---------------------------------------------------------------------------------------------
# The job


def events(n: int = 240, keys: int = 5, seed: int = 11) -> list[tuple[str, int, int]]:
    """``(key, event time, value)`` records, out of order by up to 60 ms."""
    import random

    rng = random.Random(seed)
    return [(f"k{rng.randrange(keys)}", i * 10 + rng.randrange(0, 60), i) for i in range(n)]


class Describe(ProcessWindowFunction):
    """``(key, window start, window end, count, sum of values)`` per window firing."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        w = context.window()
        values = [e[2] for e in elements]
        yield key, w.start, w.end, len(values), sum(values)


class Alarm(KeyedProcessFunction):
    """Keeps a running sum per key and reports it 30 ms (event time) after every window."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", None))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        self.total.update((self.total.value() or 0) + value[4])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 30)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield "alarm", ctx.get_current_key(), timestamp, self.total.value()


def build_job(env: StreamExecutionEnvironment) -> Any:
    """Windows, late records and timer outputs of one keyed event-time pipeline, in one stream."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(lambda e, _ts: e[1])
    source = env.from_source(CollectionSource(events(), num_splits=3), strategy, "events")
    windows = (
        source.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(20)))
        .allowed_lateness(Time.milliseconds(5))
        .side_output_late_data(LATE)
        .process(Describe())
    )
    alarms = windows.key_by(lambda w: w[0]).process(Alarm())
    late = windows.get_side_output(LATE).map(lambda e: ("late", *e))
    return windows.map(lambda w: ("window", *w)).union(alarms, late)


def run_job(runtime: str) -> list[Any]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(PARALLELISM)
    env.get_config().set_watermark_every(WATERMARK_EVERY)
    return list(build_job(env).execute_and_collect())


# ---------------------------------------------------------------------------------------------
# The driver (run in a subprocess: python tests/test_spark_cluster.py OUT EXECUTOR_PYTHONPATH)


def probe(partition: Iterable[int]) -> Iterator[dict[str, Any]]:
    """Where a Python worker finds sparktide (pickled by value: it needs no sparktide)."""
    import importlib.util
    import os
    import sys
    import time

    from pyspark import SparkFiles

    list(partition)
    time.sleep(0.2)  # keep the core busy so that the tasks spread over both executors
    spec = importlib.util.find_spec("sparktide")
    yield {
        "files_dir": os.path.abspath(SparkFiles.getRootDirectory()),
        "origin": os.path.abspath(spec.origin) if spec and spec.origin else None,
        "sys_path": list(sys.path),
        "no_site": bool(sys.flags.no_site),
        "executable": sys.executable,
        "version": tuple(sys.version_info[:3]),
    }


def _probe_all(spark: Any) -> list[dict[str, Any]]:
    tasks = 4 * EXECUTORS
    return spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(probe).collect()


def _wait_for_executors(spark: Any, timeout_s: float = 90.0) -> int:
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout_s
    while True:
        count = len(tracker.getExecutorInfos()) - 1  # without the driver
        if count >= EXECUTORS or time.monotonic() > deadline:
            return count
        time.sleep(0.25)


def drive(out: str, executor_pythonpath: str) -> None:
    """Start the cluster, probe, run the job on it, probe again; pickle everything to ``out``."""
    from pyspark import SparkFiles
    from pyspark.sql import SparkSession

    from sparktide.spark.session import ship_package

    spark = (
        SparkSession.builder.master(MASTER)
        .appName("sparktide-cluster-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYTHONPATH", executor_pythonpath)
        # short-lived JVMs on a small machine: quick JIT, one GC thread
        .config("spark.driver.extraJavaOptions", SHORT_JVM)
        .config("spark.executor.extraJavaOptions", SHORT_JVM)
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        report: dict[str, Any] = {"executors": _wait_for_executors(spark)}
        report["before"] = _probe_all(spark)
        report["result"] = run_job("spark")  # SparkExecutor finds the active session
        report["after"] = _probe_all(spark)
        report["zip"] = str(ship_package(spark))  # the zip the context got (no second shipping)
        report["master"] = spark.sparkContext.master
        report["driver_files_dir"] = os.path.abspath(SparkFiles.getRootDirectory())
    finally:
        spark.stop()
    with open(out, "wb") as f:
        pickle.dump(report, f)


# ---------------------------------------------------------------------------------------------
# The test


def _skip_reason() -> str | None:
    if os.name != "posix":
        return "the local-cluster test needs a POSIX system (shell wrapper, symbolic links)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "Java was not found (no JAVA_HOME and no java on PATH): Spark needs Java 17"
    return None


def _spark_home(tmp: Path) -> Path:
    """A SPARK_HOME linked to pyspark's own, with a ``work`` directory of its own."""
    import pyspark

    real = Path(pyspark.__file__).resolve().parent
    missing = [d for d in ("bin", "jars", "python") if not (real / d).is_dir()]
    if missing:
        pytest.skip(f"pyspark at {real} has no {', '.join(missing)}: local-cluster cannot start")
    home = tmp / "spark-home"
    home.mkdir()
    for name in ("bin", "jars", "python", "sbin", "conf"):
        if (real / name).exists():
            (home / name).symlink_to(real / name)
    return home


def _site_packages() -> list[Path]:
    paths = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    return [p for p in dict.fromkeys(Path(x).resolve() for x in paths) if p.is_dir()]


def _site_without_sparktide(tmp: Path) -> Path:
    """Links to everything in the driver's site-packages but sparktide and ``.pth`` files."""
    target = tmp / "site-packages"
    target.mkdir()
    for directory in _site_packages():
        for entry in directory.iterdir():
            name = entry.name.lower()
            if (
                name.startswith(("sparktide", "__editable__"))
                or name.endswith(".pth")
                or (target / entry.name).exists()
            ):
                continue
            (target / entry.name).symlink_to(entry)
    return target


def _worker_python(tmp: Path) -> Path:
    """The driver's interpreter without ``site`` (PYSPARK_PYTHON is a path, not a command)."""
    wrapper = tmp / "python-no-site"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_keyed_event_time_job_on_local_cluster_equals_local(tmp_path: Path) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import sparktide

    src = Path(sparktide.__file__).resolve().parent.parent
    executor_pythonpath = str(_site_without_sparktide(tmp_path))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYSPARK_SUBMIT_ARGS") and not k.startswith("SPARKTIDE_")
    }
    env.update(
        # the driver imports sparktide from src; its JVM (and so the workers' JVMs) inherit this,
        # but spark.executorEnv.PYTHONPATH replaces it for the executors
        PYTHONPATH=str(src),
        SPARK_HOME=str(_spark_home(tmp_path)),
        PYSPARK_PYTHON=str(_worker_python(tmp_path)),
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    out = tmp_path / "report.pkl"
    try:
        done = subprocess.run(
            [sys.executable, __file__, str(out), executor_pythonpath],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=DRIVER_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the local-cluster driver did not finish in {DRIVER_TIMEOUT_S} s: {exc}")
    assert done.returncode == 0 and out.is_file(), (
        f"the local-cluster driver failed (exit code {done.returncode}):\n{done.stderr[-6000:]}"
    )
    with open(out, "rb") as f:
        report = pickle.load(f)

    assert report["master"] == MASTER
    assert report["executors"] == EXECUTORS, "the executors did not all register"

    # before any sparktide job: the workers cannot import sparktide at all
    for seen in report["before"]:
        assert seen["origin"] is None, f"sparktide importable without shipping: {seen['origin']}"
        assert seen["no_site"] and seen["executable"] == sys.executable
        assert seen["version"] == tuple(sys.version_info[:3])
        assert not any(Path(p).resolve() == src for p in seen["sys_path"] if p and Path(p).exists())

    # after the job: sparktide comes from the shipped zip, on both executors
    zip_name = Path(report["zip"]).name
    assert zip_name.startswith(f"sparktide-{sparktide.__version__}-") and zip_name.endswith(".zip")
    for seen in report["after"]:
        shipped = os.path.join(seen["files_dir"], zip_name)
        assert seen["origin"] == os.path.join(shipped, "sparktide", "__init__.py"), seen
        assert seen["files_dir"] != report["driver_files_dir"]
        assert not any(Path(p).resolve() == src for p in seen["sys_path"] if p and Path(p).exists())
    assert len({seen["files_dir"] for seen in report["after"]}) == EXECUTORS

    expected = run_job("local")
    kinds = {record[0] for record in expected}
    assert kinds == {"window", "alarm", "late"}, f"the job should produce every kind: {kinds}"
    assert report["result"] == expected


if __name__ == "__main__":
    drive(sys.argv[1], sys.argv[2])
