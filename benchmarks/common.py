"""What the benchmark scripts share: finding PyFlink, the versions line of a Spark run, the
records/s and ratio cells of a result row, the timing of a contender's DataFrame, the CPU time
of Spark's processes (from ``/proc``), and the pieces of a Structured Streaming run over Parquet
files (one file per micro-batch, Spark's watermark aligned with Flink's). The scripts import it
as ``common`` (Python puts the script's directory on ``sys.path``).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def pyflink_python() -> str | None:
    """A Python that can import pyflink: ``SPARKTIDE_PYFLINK_PYTHON``, else ``.venv-flink``."""
    candidates = [os.environ.get("SPARKTIDE_PYFLINK_PYTHON")]
    candidates.append(str(Path(__file__).resolve().parents[1] / ".venv-flink" / "bin" / "python"))
    for c in candidates:
        if c and Path(c).exists():
            ok = subprocess.run([c, "-c", "import pyflink"], capture_output=True).returncode == 0
            if ok:
                return c
    return None


def spark_versions(spark: Any) -> str:
    """Python, PySpark, Java and sparktide versions of a run on ``spark``."""
    import pyspark

    import sparktide

    java = spark.sparkContext._jvm.System.getProperty("java.version")
    return (
        f"Python {platform.python_version()}, PySpark {pyspark.__version__}, Java {java}, "
        f"sparktide {sparktide.__version__}"
    )


def result_cells(
    records: int, seconds: float | str, native_rate: float | None
) -> tuple[str, str, str, str]:
    """``(records, seconds, records/s, ratio to native)`` cells; ``seconds`` as a string is a
    failed run (its cells say so)."""
    if isinstance(seconds, str):
        return f"{records:,}", "failed", "-", "-"
    rate = records / seconds
    ratio = f"{rate / native_rate:.3g}x" if native_rate else "-"
    return f"{records:,}", f"{seconds:.2f}", f"{rate:,.0f}", ratio


def timed(build: Callable[[], Any], repeat: int) -> float | str:
    """Best wall time of ``repeat`` runs, or why the run failed (the table goes on)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            build().write.format("noop").mode("overwrite").save()
        except Exception as exc:  # a failed contender is a result too
            return failure(exc, 160)
        best = min(best, time.perf_counter() - start)
    return best


def failure(exc: BaseException, width: int = 200) -> str:
    """Why a run failed, in one line: the exception's type and the first line of its message
    that names an error (Spark's messages carry a long JVM trace)."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    cause = next((x for x in lines if "Error" in x or "Exception" in x), None)
    return f"{type(exc).__name__}: {(cause or (lines[0] if lines else ''))[:width]}"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------------------------
# CPU time of the process tree, from /proc


@dataclass(frozen=True)
class CpuSeconds:
    """CPU seconds (user + system) of Spark's JVM, its Python workers and the driver."""

    jvm: float
    workers: float
    driver: float

    @property
    def total(self) -> float:
        return self.jvm + self.workers + self.driver

    def __sub__(self, other: CpuSeconds) -> CpuSeconds:
        return CpuSeconds(
            self.jvm - other.jvm, self.workers - other.workers, self.driver - other.driver
        )


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` used here (times in clock ticks)."""

    pid: int
    comm: str
    ppid: int
    own_ticks: int  # utime + stime
    reaped_ticks: int  # cutime + cstime: children that exited and were waited for


def read_stat(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat`` parsed, or None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()  # fields 3.. of proc(5): state, ppid, ...
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ProcStat(pid, comm, int(fields[1]), utime + stime, cutime + cstime)


def descendants(root: int) -> list[ProcStat]:
    """Every live process below ``root``."""
    stats = [s for s in map(read_stat, pids()) if s is not None]
    children: dict[int, list[ProcStat]] = {}
    for s in stats:
        children.setdefault(s.ppid, []).append(s)
    found: list[ProcStat] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def pids() -> list[int]:
    """The ids of the live processes."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def cpu_now() -> CpuSeconds:
    """CPU seconds so far of the JVM (the ``java`` process below this one), of every process
    below the JVM (the Python workers, with their reaped children) and of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    me = read_stat(os.getpid())
    jvms = [s for s in descendants(os.getpid()) if s.comm == "java"]
    if me is None or len(jvms) != 1:
        raise RuntimeError(f"expected one Spark JVM below this process, found {len(jvms)}")
    workers = descendants(jvms[0].pid)
    worker_ticks = sum(s.own_ticks + s.reaped_ticks for s in workers)
    return CpuSeconds(jvms[0].own_ticks / tick, worker_ticks / tick, me.own_ticks / tick)


SETTLE_SECONDS = 0.5  # between the end of a run and its CPU reading


@dataclass(frozen=True)
class CpuRun:
    """One timed run: wall seconds and CPU seconds."""

    seconds: float
    cpu: CpuSeconds


def cpu_timed(action: Callable[[], Any]) -> CpuRun:
    """One run of ``action``: its wall time, and the CPU time of Spark's processes and this one
    from before it to half a second after it (not timed: the workers finish their tasks' last
    steps)."""
    before, start = cpu_now(), time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    time.sleep(SETTLE_SECONDS)
    return CpuRun(seconds, cpu_now() - before)


# ---------------------------------------------------------------------------------------------
# Structured Streaming over Parquet files

SPARK_STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_batch_file(table: Any, directory: Path, index: int) -> Path:
    """``table`` as ``directory/part-<index>.parquet``, its modification time in index order
    (a file stream's order)."""
    import pyarrow.parquet as pq

    path = directory / f"part-{index:05d}.parquet"
    pq.write_table(table, path)
    os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    return path


def file_stream(spark: Any, directory: Path, schema: str, files_per_trigger: int | None = 1) -> Any:
    """A streaming DataFrame of the Parquet files of ``directory``: ``files_per_trigger``
    files per micro-batch (None: every file in the first)."""
    reader = spark.readStream.schema(schema)
    if files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    return reader.parquet(str(directory))


def spark_watermark(frame: Any, ts_column: str, bound_ms: int) -> Any:
    """``frame`` with an ``event_time`` column from the epoch milliseconds of ``ts_column`` and
    Spark's watermark on it, firing the event-time timers that Flink's bounded out-of-orderness
    watermark fires: Flink's is ``max ts - bound - 1`` and fires timers ``<= watermark``,
    Spark's is ``max ts`` minus the ``withWatermark`` delay, so Spark gets ``bound + 1`` ms."""
    from pyspark.sql import functions as F

    return frame.withColumn("event_time", F.timestamp_millis(ts_column)).withWatermark(
        "event_time", f"{bound_ms + 1} milliseconds"
    )
