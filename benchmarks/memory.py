"""Peak memory of one large batch without ``split_by``: Spark's Python workers, the local runtime.

The input: ``--records`` rows (default 5*10^6) ``key`` (long, ``--keys`` distinct values), ``ts``
(epoch ms, increasing, moved back by up to 2 s) and ``v``, written once as a Parquet folder
(``--data``, default a temporary folder). The job, per record: count per key in ValueState and
an event-time timer at the end of the record's minute that emits ``(key, minute end, count)``::

    env.from_stream(spark.readStream.parquet(folder), bounded out-of-orderness 2 s,
                    timestamp_column="ts")           # one split: no split_by
       .key_by(lambda r: r.key).process(CountPerMinute(), output_type=...)
       .sink_to(ForeachBatchSink(noop write))       # trigger "available_now": one micro-batch

on Spark (``local[2]``, parallelism 2: one source task reads the whole batch, two subtasks
count), and the same job as a bounded run of the local runtime reading the same Parquet files
(``FileSource``, one split, no ``watermark_every``: one round) in a child process.

Measured: the peak resident set (``VmHWM`` of ``/proc/<pid>/status``) of every Python worker
Spark starts (the processes of ``pyspark.daemon``, polled every 0.1 s while the job runs, each
read before it exits) and of the local runtime's process; the table shows the largest worker's
and the local process's peaks with the wall time. Each measured part starts its own processes,
so the peaks belong to this job alone. Run it against another tree with ``PYTHONPATH``::

    python benchmarks/memory.py                            # 5*10^6 rows, Spark and local
    python benchmarks/memory.py --records 1000000 --skip-local
    PYTHONPATH=/other/tree/src python benchmarks/memory.py --data /tmp/rows  # same input
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sparktide.datastream import KeyedProcessFunction

OUT_OF_ORDER_MS = 2_000
MINUTE_MS = 60_000
SPACING_MS = 10  # event time between consecutive rows


class CountPerMinute(KeyedProcessFunction):  # type: ignore[misc]
    """Per key: a count in ValueState; an event-time timer at the end of each record's minute
    emits ``(key, minute end, count so far)``."""

    def open(self, runtime_context: Any) -> None:
        from sparktide.common import Types
        from sparktide.datastream.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> None:
        self.count.update((self.count.value() or 0) + 1)
        end = ctx.timestamp() // MINUTE_MS * MINUTE_MS + MINUTE_MS - 1
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, self.count.value())


def _output_type() -> Any:
    from sparktide.common import Types

    return Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])


def _strategy() -> Any:
    from sparktide.common import Duration
    from sparktide.common.watermark_strategy import WatermarkStrategy

    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDER_MS))


def write_rows(folder: Path, records: int, keys: int) -> None:
    """The input as Parquet files of 10^6 rows (skipped when ``folder`` holds them already)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    marker = folder / f"_rows_{records}_{keys}"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    rng = np.random.default_rng(7)
    step = 1_000_000
    for i, start in enumerate(range(0, records, step)):
        ids = np.arange(start, min(start + step, records), dtype=np.int64)
        key = (ids * 2_654_435_761) % keys
        ts = 1_700_000_000_000 + ids * SPACING_MS - rng.integers(0, OUT_OF_ORDER_MS, len(ids))
        table = pa.table({"key": key, "ts": ts, "v": ids})
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
    marker.touch()


# ------------------------------------------------------------------ peaks of processes


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _pyspark_workers() -> list[int]:
    """Python processes started by Spark (the daemon and the workers it forks)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"pyspark.daemon" in cmdline or b"pyspark.worker" in cmdline:
            pids.append(int(entry))
    return pids


class WorkerPeaks:
    """Polls the peak RSS (``VmHWM``) of Spark's Python workers in a thread."""

    def __init__(self) -> None:
        self.peaks: dict[int, int] = {}  # pid -> kB
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            for pid in _pyspark_workers():
                kb = _status_kb(pid, "VmHWM")
                if kb is not None and kb > self.peaks.get(pid, 0):
                    self.peaks[pid] = kb
            self._stop.wait(0.1)

    def __enter__(self) -> WorkerPeaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------ the runs


def run_spark(folder: Path, parallelism: int, budget: int | None) -> tuple[float, int, int]:
    """Seconds, largest worker peak (kB) and number of workers of the job on Spark."""
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark.session import get_spark
    from sparktide.spark.streaming import ForeachBatchSink

    spark = get_spark("local[2]")
    schema = spark.read.parquet(str(folder)).schema
    with tempfile.TemporaryDirectory() as checkpoint, WorkerPeaks() as peaks:
        started = time.perf_counter()
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.set_parallelism(parallelism)
        if budget is not None:
            env.get_config().set_task_buffer(budget)
        frame = spark.readStream.schema(schema).parquet(str(folder))
        stream = env.from_stream(frame, _strategy(), timestamp_column="ts")

        def noop(df: Any, batch_id: int) -> None:
            df.write.format("noop").mode("overwrite").save()

        out = stream.key_by(lambda r: r.key).process(CountPerMinute(), output_type=_output_type())
        out.sink_to(ForeachBatchSink(noop))
        env.execute(checkpoint_location=checkpoint, trigger="available_now")
        seconds = time.perf_counter() - started
    spark.stop()
    workers = {p: kb for p, kb in peaks.peaks.items()}
    return seconds, max(workers.values(), default=0), len(workers)


def _local_job(folder: str, parallelism: int, budget: int | None) -> None:
    """The bounded run on the local runtime (run in a child process)."""
    from sparktide.common import Types
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.connectors.file_system import FileSource
    from sparktide.datastream.formats.parquet import ParquetColumnarRowInputFormat

    row = Types.ROW_NAMED(["key", "ts", "v"], [Types.LONG(), Types.LONG(), Types.LONG()])
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    if budget is not None:
        env.get_config().set_task_buffer(budget)
    files = sorted(str(p) for p in Path(folder).glob("*.parquet"))
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row), *files).build()
    strategy = _strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_source(source, strategy, "rows")
    stream = stream.key_by(lambda r: r.key).process(CountPerMinute(), output_type=_output_type())
    stream.filter(lambda _: False).print()
    env.execute()


def run_local(folder: Path, parallelism: int, budget: int | None) -> tuple[float, int]:
    """Seconds and peak RSS (kB) of the local runtime's run, in a child process."""
    code = (
        "import sys, resource; sys.path.insert(0, sys.argv[1]); import memory; "
        "memory._local_job(sys.argv[2], int(sys.argv[3]), "
        "None if sys.argv[4] == '-' else int(sys.argv[4])); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(Path(__file__).parent),
            str(folder),
            str(parallelism),
            "-" if budget is None else str(budget),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, int(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--budget", type=int, default=None, help="ExecutionConfig.set_task_buffer")
    ap.add_argument("--data", default=None, help="folder of the Parquet input (kept)")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    args = ap.parse_args(argv)
    for name in ("records", "keys", "parallelism"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if args.budget is not None and args.budget < 1:
        ap.error("--budget must be >= 1")
    folder = Path(args.data or Path(tempfile.gettempdir()) / "sparktide-memory-rows")
    write_rows(folder, args.records, args.keys)
    import sparktide

    print(f"sparktide from {Path(sparktide.__file__).parent}; {args.records:,} rows, {args.keys:,}")
    print(f"keys, one split (no split_by), parallelism {args.parallelism}, budget {args.budget}")
    print(f"{'runtime':<28} | {'seconds':>8} | {'records/s':>10} | {'peak RSS':>10} | processes")
    print("-" * 78)
    if not args.skip_spark:
        seconds, kb, n = run_spark(folder, args.parallelism, args.budget)
        rate = args.records / seconds
        print(
            f"{'Spark, largest Python worker':<28} | {seconds:8.1f} | {rate:10,.0f} | "
            f"{kb / 1024:7,.0f} MB | {n} Python workers"
        )
    if not args.skip_local:
        seconds, kb = run_local(folder, args.parallelism, args.budget)
        rate = args.records / seconds
        print(f"{'local runtime':<28} | {seconds:8.1f} | {rate:10,.0f} | {kb / 1024:7,.0f} MB | 1")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
