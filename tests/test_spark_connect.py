"""The same jobs on a classic SparkSession and on a Spark Connect session give the same output.

A Spark Connect session (``SparkSession.builder.remote(...)``) has no SparkContext: sparktide
runs on DataFrame operations only, ships itself as a session artifact, and runs a streaming
job's batches in ``foreachBatch`` on the server. The Connect driver runs in a subprocess (this
file run as a script): ``remote("local[2]")`` starts a local Connect server, which cannot share
a process with the classic session of the other tests. Its Python workers run a bare virtual
environment with sparktide's dependencies but without sparktide, so they can import sparktide
only from the artifact.

The jobs: keyed event-time windows with allowed lateness and a late side output, then a keyed
process function with event-time timers (bounded, from a collection); the same kind of job over
a DataFrame; and a streaming job over a file stream (``trigger="available_now"``) whose windows
are written with :class:`~sparktide.spark.streaming.ParquetBatchSink`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark.streaming import ParquetBatchSink
from sparktide.state_api.savepoint import write_savepoint
from test_spark_cluster import run_job
from test_streaming import SCHEMA, _records, _windows, _write_files
from test_user_session import _bare_venv

DRIVER_TIMEOUT_S = 400
EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


def frame_job(spark: Any) -> list[Any]:
    """Windows over a DataFrame source of three partitions (its splits)."""
    rows = [(f"k{i % 4}", (i * 37) % 900, i) for i in range(120)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(3, "key")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
    stream = env.from_dataframe(df, strategy, timestamp_column="ts", order_by="v")
    windows = (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(200)))
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )
    return sorted(tuple(r) for r in windows.execute_and_collect())


def _stream_windows(
    spark: Any, directory: Path, ckpt: Path, out: Path, trigger: str = "available_now", **kw: Any
) -> Any:
    """The windows of a file stream, one file per micro-batch, run to the end; its client."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500))
    stream = env.from_stream(frame, strategy, timestamp_column="ts")
    _windows(stream).sink_to(ParquetBatchSink(str(out)))
    client = env.execute_async(checkpoint_location=str(ckpt), trigger=trigger, **kw)
    client.await_termination()
    return client


def stream_job(spark: Any, directory: Path, ckpt: Path, out: Path) -> dict[str, Any]:
    """The windows of a file stream; what the sink wrote, by batch; then the job started from
    a savepoint of its checkpoint, which drops the rows of the files read before it."""
    client = _stream_windows(spark, directory, ckpt, out)
    written = spark.read.parquet(str(out)).collect()
    savepoint = ckpt.parent / "savepoint"
    write_savepoint(str(ckpt), str(savepoint))
    restored = _stream_windows(
        spark, directory, ckpt.parent / "restored", out, "once", from_savepoint=str(savepoint)
    )
    return {
        "rows": sorted([r["batch"], r["key"], r["ts"], r["v"]] for r in written),
        "committed": client.last_committed_batch(),
        "progress": [[p["batch_id"], p["records"], p["watermark"]] for p in client.recent_progress],
        "restored": [[p["batch_id"], p["records"]] for p in restored.recent_progress],
    }


def state_frames(spark: Any, ckpt: Path) -> dict[str, Any]:
    """The pending windows and timers of the stream job's window operator, read from its
    checkpoint as DataFrames (``SavepointReader.frames``)."""
    from sparktide.state_api import SavepointReader

    reader = SavepointReader.read(str(ckpt), trusted=True)
    frames = reader.frames(spark)
    [identity] = {o["identity"] for o in reader.operators().to_pylist() if o["keyed"]}
    state = frames.keyed_state(identity, "window-contents", key_type=Types.STRING(),
                               value_type=EVENT)  # fmt: skip
    timers = frames.timers(identity, key_type=Types.STRING())
    return {
        "identity": identity,
        "state": sorted((r.asDict(recursive=True) for r in state.collect()), key=repr),
        "timers": sorted((r.asDict() for r in timers.collect()), key=repr),
        "operators": frames.operators().count(),
    }


def run_all(spark: Any, data: Path, work: Path) -> dict[str, Any]:
    return {
        "bounded": sorted(map(list, run_job("spark"))),
        "frame": [list(r) for r in frame_job(spark)],
        "stream": stream_job(spark, data, work / "ckpt", work / "out"),
        "state": state_frames(spark, work / "ckpt"),
    }


# ---------------------------------------------------------------------------------------------
# The Connect driver (run in a subprocess: python tests/test_spark_connect.py OUT DATA WORK)


def drive(out: str, data: str, work: str) -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
        report = run_all(spark, Path(data), Path(work))
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(report))


# ---------------------------------------------------------------------------------------------
# The test


def _connect_available() -> str | None:
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "Java was not found (no JAVA_HOME and no java on PATH): Spark needs Java 17"
    try:
        import grpc  # noqa: F401
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError as exc:
        return f"Spark Connect's client needs pyspark[connect] ({exc})"
    return None


def _spark_home_without_zip(tmp: Path) -> Path:
    """pyspark's own SPARK_HOME without ``python/lib/pyspark.zip``: the Python workers then
    import pyspark from site-packages, with its bytecode, instead of compiling the zip's sources
    at every start (the server waits 10 s at most for its ``foreachBatch`` worker to start, too
    short for that on a busy machine)."""
    import pyspark

    real = Path(pyspark.__file__).resolve().parent
    home = tmp / "spark-home"
    (home / "python").mkdir(parents=True)
    for name in ("bin", "jars", "sbin", "conf"):
        if (real / name).exists():
            (home / name).symlink_to(real / name)
    return home


def run_connect_driver(
    argv: list[str], tmp: Path, pythonpath: list[str]
) -> subprocess.CompletedProcess[str]:
    """Run ``python argv...`` in ``tmp`` as a driver of a local Spark Connect server (on a free
    port), with ``pythonpath`` for the driver; the server's Python workers run in a bare
    virtual environment with this one's packages (they get sparktide only as an artifact)."""
    site = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    workers = _bare_venv(tmp / "workers", list(dict.fromkeys(site)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKTIDE_", "SPARK_"))}
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env["PYSPARK_PYTHON"] = str(workers)
    env["SPARK_TESTING"] = "1"  # the local server on a free port, not on 15002
    env["SPARK_HOME"] = str(_spark_home_without_zip(tmp))
    return subprocess.run(
        [sys.executable, *argv],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
    )


def test_same_jobs_on_classic_and_connect_sessions(spark, tmp_path: Path) -> None:
    reason = _connect_available()
    if reason:
        pytest.skip(reason)
    data = tmp_path / "in"
    _write_files(data, _records(4))
    report_path = tmp_path / "connect.json"
    (tmp_path / "connect").mkdir()
    # the driver imports sparktide as installed, and the job's functions from this directory
    done = run_connect_driver(
        [__file__, str(report_path), str(data), str(tmp_path / "connect")],
        tmp_path,
        [str(Path(__file__).parent)],
    )
    assert done.returncode == 0 and report_path.is_file(), done.stderr[-8000:]
    connect = json.loads(report_path.read_text())
    (tmp_path / "classic").mkdir()
    classic = json.loads(json.dumps(run_all(spark, data, tmp_path / "classic")))

    local = sorted(map(list, run_job("local")))
    assert any(r[0] == "late" for r in local) and any(r[0] == "alarm" for r in local)
    assert connect["bounded"] == classic["bounded"] == local
    assert connect["frame"] == classic["frame"] and connect["frame"]
    assert connect["stream"] == classic["stream"]
    assert connect["stream"]["committed"] == 3
    assert [p[:2] for p in connect["stream"]["progress"]] == [[v, 30] for v in range(4)]
    assert {r[0] for r in connect["stream"]["rows"]} >= {1, 2, 3}  # windows fired over batches
    # started from the savepoint (version 3): the four files read before are dropped
    assert connect["stream"]["restored"] == [[4, 0]]
    # the state reader's DataFrames over Connect hold the rows read locally (pyarrow)
    from sparktide.state_api import SavepointReader

    reader = SavepointReader.read(str(tmp_path / "connect" / "ckpt"), trusted=True)
    identity = connect["state"]["identity"]
    types = {"key_type": Types.STRING(), "value_type": EVENT}
    local_state = reader.keyed_state(identity, "window-contents", **types).to_pylist()
    assert connect["state"]["state"] == sorted(local_state, key=repr) != []
    local_timers = reader.timers(identity, key_type=Types.STRING()).to_pylist()
    assert connect["state"]["timers"] == sorted(local_timers, key=repr) != []
    assert connect["state"] == classic["state"]
    assert connect["state"]["operators"] == reader.operators().num_rows


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    drive(*sys.argv[1:4])
