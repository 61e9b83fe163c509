"""Event-time window throughput: tumbling reduce, sliding aggregate, session process.

Three jobs, identical on both engines::

    from_collection([(key, ts, value), ...], Types.TUPLE([STRING, LONG, LONG]))
      .assign_timestamps_and_watermarks(bounded out-of-orderness = 5% of the window size,
                                        ts from field 1)
      .key_by(key)
      .window(...)                          # one of:
          tumbling 1 s            .reduce(sum of field 2)
          sliding 1 s / 100 ms    .aggregate(Average())       (an AggregateFunction)
          session gap 500 ms      .process(CountMinMax())     (ProcessWindowFunction: count,
                                                               min and max timestamp)
      .filter(lambda v: False).print()      # consume the output

Input: ``--records`` records (default 10^6) over ``--keys`` keys (default 10^4), random keys,
timestamps increasing so that each key sees a record every 250 ms on average, each moved back
by up to 5% of the window size (so no record is late). Times are the wall time of
``env.execute()`` (PyFlink's includes job submission), printed as records/s per engine and
their ratio.

sparktide runs on its local runtime with a watermark every ``--watermark-every`` records
(default 2000; a bounded local job is otherwise one round whose windows all fire at the end of
the input); PyFlink (when apache-flink is installed: ``SPARKTIDE_PYFLINK_PYTHON=/path/to/python``
or ``.venv-flink`` made by ``tools/install_pyflink.sh``) runs in the same run, in thread mode at
parallelism 1 with its periodic watermarks (every 200 ms).

Usage::

    python benchmarks/windows.py                              # 10^6 records, 10^4 keys
    python benchmarks/windows.py --records 100000             # quicker
    python benchmarks/windows.py --records 100000 --keys 1000 --jobs tumbling,session
    python benchmarks/windows.py --no-pyflink                 # sparktide only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from common import pyflink_python

JOBS = ("tumbling", "sliding", "session")

# window size (ms) per job: the out-of-orderness (and watermark bound) is 5% of it
WINDOW_MS = {"tumbling": 1000, "sliding": 1000, "session": 500}

JOB = textwrap.dedent(
    """
    import random, time
    from {pkg}.common import Duration, Time, Types, WatermarkStrategy
    from {pkg}.common.watermark_strategy import TimestampAssigner
    from {pkg}.datastream import AggregateFunction, ProcessWindowFunction
    from {pkg}.datastream.window import (
        EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows)

    class Assigner(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    class Average(AggregateFunction):
        def create_accumulator(self):
            return (0, 0)

        def add(self, value, acc):
            return (acc[0] + value[2], acc[1] + 1)

        def get_result(self, acc):
            return acc[0] / acc[1]

        def merge(self, a, b):
            return (a[0] + b[0], a[1] + b[1])

    class CountMinMax(ProcessWindowFunction):
        def process(self, key, context, elements):
            n, lo, hi = 0, None, None
            for e in elements:
                n += 1
                ts = e[1]
                if lo is None or ts < lo:
                    lo = ts
                if hi is None or ts > hi:
                    hi = ts
            yield key, n, lo, hi

    def make_data(n, keys, window_ms):
        rnd = random.Random(42)
        ooo = window_ms // 20
        names = ["k%d" % i for i in range(keys)]
        return [(names[rnd.randrange(keys)], i * 250 // keys - rnd.randint(0, ooo), i % 100)
                for i in range(n)]

    def run(job, n, keys, window_ms, env):
        row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
        ooo = window_ms // 20
        strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(ooo))
                    .with_timestamp_assigner(Assigner()))
        keyed = (env.from_collection(make_data(n, keys, window_ms), type_info=row)
                 .assign_timestamps_and_watermarks(strategy)
                 .key_by(lambda v: v[0], key_type=Types.STRING()))
        ms = Time.milliseconds
        if job == "tumbling":
            out = (keyed.window(TumblingEventTimeWindows.of(ms(window_ms)))
                   .reduce(lambda a, b: (a[0], a[1], a[2] + b[2])))
        elif job == "sliding":
            out = (keyed.window(SlidingEventTimeWindows.of(ms(window_ms), ms(window_ms // 10)))
                   .aggregate(Average(),
                              accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]),
                              output_type=Types.DOUBLE()))
        else:
            out = (keyed.window(EventTimeSessionWindows.with_gap(ms(window_ms)))
                   .process(CountMinMax(), Types.TUPLE(
                       [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])))
        out.filter(lambda v: False).print()
        start = time.perf_counter()
        env.execute("window-benchmark-" + job)
        return time.perf_counter() - start
    """
)

PYFLINK_MAIN = textwrap.dedent(
    """
    import json, sys
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    cfg = Configuration()
    cfg.set_string("python.execution-mode", "thread")
    cfg.set_string("python.executable", sys.executable)
    job, n, keys, window_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    env = StreamExecutionEnvironment.get_execution_environment(cfg)
    env.set_parallelism(1)
    print(json.dumps({"seconds": run(job, n, keys, window_ms, env)}))
    """
)


def run_sparktide(job: str, n: int, keys: int, watermark_every: int | None) -> float:
    from sparktide.datastream import StreamExecutionEnvironment

    ns: dict = {}
    exec(JOB.format(pkg="sparktide"), ns)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(watermark_every)
    return ns["run"](job, n, keys, WINDOW_MS[job], env)  # type: ignore[no-any-return]


def run_pyflink(python: str, job: str, n: int, keys: int) -> float | None:
    script = JOB.format(pkg="pyflink") + PYFLINK_MAIN
    env = dict(os.environ)
    # thread mode runs the functions in the JVM through this interpreter: put it first on PATH
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    args = [python, "-c", script, job, str(n), str(keys), str(WINDOW_MS[job])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=7200, env=env)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)["seconds"]  # type: ignore[no-any-return]
    sys.stderr.write(proc.stderr[-2000:])
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--jobs", default=",".join(JOBS), help=f"a subset of {','.join(JOBS)}")
    ap.add_argument("--watermark-every", type=int, default=2000, help="sparktide rounds")
    ap.add_argument("--no-pyflink", action="store_true")
    args = ap.parse_args(argv)
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown:
        ap.error(f"unknown jobs {unknown}; choose from {', '.join(JOBS)}")
    if args.records < 1 or args.keys < 1:
        ap.error("--records and --keys must be >= 1")
    python = None if args.no_pyflink else pyflink_python()
    print(f"Python {sys.version.split()[0]}; PyFlink: {python or 'not installed'}")
    print(
        f"{args.records:,} records, {args.keys:,} keys; sparktide: local runtime, a watermark "
        f"every {args.watermark_every:,} records; PyFlink: thread mode, parallelism 1"
    )
    header = f"{'job':<32} | {'sparktide rec/s':>15} | {'PyFlink rec/s':>13} | {'ratio':>6}"
    print(header)
    print("-" * len(header))
    names = {
        "tumbling": "tumbling 1 s, reduce",
        "sliding": "sliding 1 s / 100 ms, aggregate",
        "session": "session 500 ms, process",
    }
    for job in jobs:
        ours = args.records / run_sparktide(job, args.records, args.keys, args.watermark_every)
        theirs = None
        if python:
            t = run_pyflink(python, job, args.records, args.keys)
            theirs = args.records / t if t else None
        ratio = f"{ours / theirs:5.1f}x" if theirs else "-"
        theirs_s = f"{theirs:13,.0f}" if theirs else f"{'-':>13}"
        print(f"{names[job]:<32} | {ours:15,.0f} | {theirs_s} | {ratio:>6}", flush=True)


if __name__ == "__main__":
    main()
