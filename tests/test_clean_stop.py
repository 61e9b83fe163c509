"""A clean stop of a streaming query: SIGINT or SIGTERM on ``sparktide run`` or on a script
awaiting the query (classic and Spark Connect sessions), and ``client.stop()`` from code.

The job counts records per key (a keyed running count over a folder of JSON files, one file
per micro-batch) into a sink that writes each batch's rows to ``<out>/<batch>.json``. The sink
of batch 1 first leaves a mark and waits, so the signal comes while that batch is in flight:
the query must stop only after it commits. Each run then checks the exit code, the one line
saying what was committed, that nothing printed a traceback, that the sink holds exactly the
batches the checkpoint committed, and that a restart writes exactly the rest.

Run as a script (``sparktide run`` or ``python``), this file is the job: ``WORK SESSION``
(the folder holding ``in/``, ``ckpt/`` and ``out/``; ``classic`` or ``connect``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from sparktide.cli import main
from sparktide.common import Row, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.stopping import STOP_SIGNALS, replaceable, stop_signals
from sparktide.spark.streaming import ForeachBatchSink
from test_spark_connect import _connect_available, _spark_home_without_zip
from test_streaming import SCHEMA, _records, _write_files

FILES = 3  # batch 1 is in flight at the stop; a restart runs batch 2
PAUSE_S = 1.5  # how long batch 1's sink waits after its mark: the signal comes meanwhile
MARK = "batch-1-in-flight"
SERVER_LOG = "connect-server.log"  # in the work folder
COUNT = Types.ROW_NAMED(["key", "n"], [Types.STRING(), Types.LONG()])
RUN_TIMEOUT_S = 240
LINE = re.compile(
    r"sparktide: stopped by (SIG\w+)(, batch in flight abandoned)?; committed: batch (\d+) "
    r"\(Spark micro-batch (\d+)\) in checkpoint (\S+)"
)


class BatchFiles:
    """The sink: each batch's ``(key, n)`` rows, sorted, to ``<out>/<batch>.json`` (replaced
    whole, so a batch written again is written once); batch 1 marks that it runs, then waits
    before it reads its rows (a Spark job)."""

    def __init__(self, out: str) -> None:
        self.out = out

    def __call__(self, df: Any, batch_id: int) -> None:
        out = Path(self.out)
        out.mkdir(parents=True, exist_ok=True)
        if batch_id == 1 and not (out / MARK).exists():
            (out / MARK).touch()
            time.sleep(PAUSE_S)
        rows = sorted([r["key"], r["n"]] for r in df.collect())
        (out / f"{batch_id}.tmp").write_text(json.dumps(rows))
        os.replace(out / f"{batch_id}.tmp", out / f"{batch_id}.json")


def count_job(spark: Any, work: Path, trigger: str | None = None) -> Any:
    """Start the job over ``work/in`` (checkpoint ``work/ckpt``, sink ``work/out``); its
    client."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(work / "in"))
    (
        env.from_stream(frame, WatermarkStrategy.no_watermarks(), timestamp_column="ts")
        .map(lambda r: Row(key=r.key, n=1), output_type=COUNT)
        .key_by(lambda r: r.key)
        .reduce(lambda a, b: Row(key=a.key, n=a.n + b.n))
        .sink_to(ForeachBatchSink(BatchFiles(str(work / "out"))))
    )
    return env.execute_async(checkpoint_location=str(work / "ckpt"), trigger=trigger)


class Slow:
    """A map that marks that it ran and takes its time: a bounded job to interrupt."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def __call__(self, value: int) -> int:
        Path(self.mark).touch()
        time.sleep(0.05)
        return value


def slow_bounded_job(work: Path) -> None:
    """A bounded job of a minute or so, marking ``work/out/MARK`` once it runs."""
    (work / "out").mkdir(parents=True, exist_ok=True)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(1)
    numbers = env.from_collection(list(range(1_200)), type_info=Types.LONG())
    numbers.map(Slow(str(work / "out" / MARK)), output_type=Types.LONG()).execute_and_collect()


def expected_batches(batches: list[list[tuple[str, int, int]]]) -> dict[int, list[list[Any]]]:
    """What the sink gets per batch: each record's key with its running count."""
    seen: Counter[str] = Counter()
    out = {}
    for b, rows in enumerate(batches):
        emitted = []
        for key, _, _ in rows:
            seen[key] += 1
            emitted.append([key, seen[key]])
        out[b] = sorted(emitted)
    return out


def sink_batches(out: Path) -> dict[int, list[list[Any]]]:
    return {int(p.stem): json.loads(p.read_text()) for p in out.glob("*.json")}


def committed(ckpt: Path) -> tuple[int | None, int | None]:
    """The checkpoint's last committed version and the last Spark micro-batch it includes."""
    store = CheckpointStore(str(ckpt))
    version = store.committed_version()
    return version, None if version is None else store.commit_info(version).last_spark_batch


# ---------------------------------------------------------------------------------------------
# the handlers: installed only while awaited, in the main thread, for signals nobody else handles


def test_signals_are_recorded_while_awaited_and_the_handlers_restored_after():
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with stop_signals() as signals:
        signal.raise_signal(signal.SIGTERM)  # recorded, nothing raised
        assert signals.first == signal.SIGTERM and not signals.abandon()
        signal.raise_signal(signal.SIGINT)
        assert signals.received == [signal.SIGTERM, signal.SIGINT] and signals.abandon()
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before
    with pytest.raises(KeyboardInterrupt):  # the default again
        signal.raise_signal(signal.SIGINT)


def test_a_handler_of_the_program_stays_in_charge(caplog):
    calls: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    try:
        with caplog.at_level("INFO", "sparktide.streaming"), stop_signals() as signals:
            signal.raise_signal(signal.SIGTERM)
        assert calls == [signal.SIGTERM] and signals.received == []
        assert "SIGTERM is handled by the program itself" in caplog.text
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_pysparks_handler_is_taken_over_and_nothing_outside_the_main_thread(spark):
    assert replaceable(signal.getsignal(signal.SIGINT))  # the SparkContext's, in this process
    seen: list[object] = []

    def in_a_thread() -> None:
        with stop_signals():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [signal.getsignal(signal.SIGINT)]


def test_sparktide_run_ends_an_interrupted_job_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARKTIDE_RUNTIME", "")  # recorded: what the run sets is undone after
    monkeypatch.delenv("SPARKTIDE_RUNTIME")
    before = signal.getsignal(signal.SIGTERM)
    job = tmp_path / "job.py"
    job.write_text("import signal\nsignal.raise_signal(signal.SIGTERM)\nprint('not reached')\n")
    assert main(["run", "--runtime", "local", str(job)]) == 143
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "sparktide: stopped by SIGTERM; the job did not finish and committed nothing (its sinks "
        "may hold part of its output)"
    ]
    assert signal.getsignal(signal.SIGTERM) is before  # restored


# ---------------------------------------------------------------------------------------------
# a run in a subprocess, stopped by a signal


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKTIDE_", "SPARK_"))}
    import sparktide

    source = str(Path(sparktide.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([source, str(Path(__file__).parent)])
    env["SPARKTIDE_MASTER"] = "local[2]"
    env.update(extra)
    return env


def _start(how: str, session: str, work: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    args = [str(work), session]
    if how == "run":
        command = [sys.executable, "-m", "sparktide.cli", "run", __file__, "--", *args]
    else:
        command = [sys.executable, __file__, *args]
    return subprocess.Popen(
        command,
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell's foreground job
    )


def _signal_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], signum: int
) -> tuple[str, str]:
    """Send ``signum`` once ``ready()`` holds (SIGINT to the process group, as a terminal's
    Ctrl-C does; SIGTERM to the process, as ``kill PID`` does); the run's stdout and stderr."""
    try:
        wait_for(lambda: process.poll() is not None or ready(), RUN_TIMEOUT_S)
        assert process.poll() is None, "ended before the signal: " + "".join(process.communicate())
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        return process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


_JVM_LOG = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR) ")
_JAVA_TRACE = re.compile(
    r"\s+at |\s+\.\.\. \d+ more|Caused by: |([a-z]\w*\.)+[A-Z]\w*(Exception|Error)\b"
)


def _client_output(stderr: str) -> str:
    """``stderr`` without the log of the Spark JVM this process started (log4j lines and the
    Java stack traces under them): what the program itself printed."""
    kept, in_log = [], False
    for line in stderr.splitlines():
        if _JVM_LOG.match(line) or (in_log and _JAVA_TRACE.match(line)):
            in_log = True
            continue
        in_log = False
        kept.append(line)
    return "\n".join(kept)


def connect_with_server_log(log: Path) -> Any:
    """A Spark Connect session on a local server whose output (its log, and what its Python
    workers print) goes to ``log``: the server runs in a JVM started by this process, which
    would otherwise share this process's stderr, where only what the program prints belongs."""
    from pyspark.sql import SparkSession

    saved = os.dup(2)
    try:
        with open(log, "w") as file:
            os.dup2(file.fileno(), 2)  # inherited by the server's JVM and its workers
        return SparkSession.builder.remote("local[2]").getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _in_batch_1(work: Path) -> Callable[[], bool]:
    """Whether batch 0 is committed and batch 1 runs (its sink waits)."""
    return lambda: committed(work / "ckpt")[0] is not None and (work / "out" / MARK).exists()


def _check_clean_stop(
    process: subprocess.Popen[str], out: tuple[str, str], signum: int, work: Path
) -> int:
    """The exit code, the one line, no traceback; batch 1 (in flight at the signal) committed
    and the sink holding exactly the committed batches; the version committed."""
    stdout, stderr = out
    assert process.returncode == 128 + signum, stderr[-5000:]
    client = _client_output(stderr)
    assert "Traceback" not in stdout + client and "Error" not in client, stderr[-5000:]
    lines = [line for line in stderr.splitlines() if line.startswith("sparktide: stopped")]
    assert len(lines) == 1, stderr[-5000:]
    match = LINE.fullmatch(lines[0])
    assert match, lines[0]
    name, abandoned, version, spark_batch, location = match.groups()
    assert name == signal.Signals(signum).name and abandoned is None
    assert location == str(work / "ckpt")
    assert committed(work / "ckpt") == (int(version), int(spark_batch))
    assert int(version) >= 1  # the batch in flight at the signal
    expected = expected_batches(_records(FILES))
    assert sink_batches(work / "out") == {b: expected[b] for b in range(int(version) + 1)}
    return int(version)


def _restart(spark: Any, work: Path, stopped_at: int) -> None:
    """A restart processes exactly the batches after ``stopped_at``, the last committed."""
    client = count_job(spark, work, "available_now")
    client.await_termination()
    assert [p["batch_id"] for p in client.recent_progress] == list(range(stopped_at + 1, FILES))
    assert sink_batches(work / "out") == expected_batches(_records(FILES))
    assert committed(work / "ckpt") == (FILES - 1, FILES - 1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_on_sparktide_run_stops_the_query_after_the_batch_in_flight(
    spark, tmp_path, signum
):
    _write_files(tmp_path / "in", _records(FILES))
    process = _start("run", "classic", tmp_path, _environment())
    out = _signal_when(process, _in_batch_1(tmp_path), signum)
    _restart(spark, tmp_path, _check_clean_stop(process, out, signum, tmp_path))


def test_a_signal_stops_a_query_on_spark_connect(spark, tmp_path):
    reason = _connect_available()
    if reason:
        pytest.skip(reason)
    _write_files(tmp_path / "in", _records(FILES))
    env = _environment(
        SPARK_TESTING="1",  # the local server on a free port
        SPARK_HOME=str(_spark_home_without_zip(tmp_path)),
        PYSPARK_PYTHON=sys.executable,
    )
    process = _start("script", "connect", tmp_path, env)
    out = _signal_when(process, _in_batch_1(tmp_path), signal.SIGTERM)
    # the checkpoint written on the Connect server restarts on a classic session
    _restart(spark, tmp_path, _check_clean_stop(process, out, signal.SIGTERM, tmp_path))


# ---------------------------------------------------------------------------------------------
# client.stop() from code


def test_stop_from_code_waits_for_the_batch_in_flight(spark, tmp_path):
    _write_files(tmp_path / "in", _records(FILES))
    work = tmp_path
    client = count_job(spark, work)
    try:
        assert wait_for(lambda: (work / "out" / MARK).exists(), RUN_TIMEOUT_S)
    finally:
        report = client.stop()
    assert report.version == committed(work / "ckpt")[0] == 1  # batch 1 was in flight
    assert report.last_spark_batch == 1 and report.signum is None and not report.abandoned
    assert client.stop() is report  # a second stop: nothing more to do
    assert not client.is_active
    assert client.await_termination(30)
    expected = expected_batches(_records(FILES))
    assert sink_batches(work / "out") == {0: expected[0], 1: expected[1]}
    _restart(spark, work, 1)


def test_a_signal_ends_a_bounded_job_on_sparktide_run_with_one_line(tmp_path):
    process = _start("run", "bounded", tmp_path, _environment())
    stdout, stderr = _signal_when(process, (tmp_path / "out" / MARK).exists, signal.SIGINT)
    assert process.returncode == 130, stderr[-5000:]
    assert "Traceback" not in stdout + stderr, stderr[-5000:]
    assert [line for line in stderr.splitlines() if line.startswith("sparktide:")] == [
        "sparktide: stopped by SIGINT; the job did not finish and committed nothing (its sinks "
        "may hold part of its output)"
    ]


if __name__ == "__main__":
    work, session = sys.argv[1:3]
    if session == "bounded":
        slow_bounded_job(Path(work))
        sys.exit(0)
    if session == "connect":
        spark = connect_with_server_log(Path(work) / SERVER_LOG)
    else:
        from sparktide.spark.session import get_spark

        spark = get_spark()
    count_job(spark, Path(work)).await_termination()
