"""KeyedProcessFunction throughput: a ValueState and one event-time timer per record.

The job (identical on both engines)::

    from_collection([(key, ts), ...])                       # records in timestamp order
      .assign_timestamps_and_watermarks(bounded out-of-orderness 1 s, ts from field 1)
      .key_by(key)
      .process(CountWithTimeout())      # count in ValueState; timer at ts + 1000 per record
      .filter(lambda v: False).print()   # consume the output

for 10^5 and 10^6 records over 10^3 and 10^5 keys, on sparktide's local runtime (periodic
watermarks every 10,000 records, as PyFlink's 200 ms auto-watermark interval gives every few
thousand records at its speed; ``--watermark-every 0`` makes it one round); and, when
apache-flink is installed (``SPARKTIDE_PYFLINK_PYTHON=/path/to/python``, or ``.venv-flink`` made
by ``tools/install_pyflink.sh``), on PyFlink in the same run (thread mode, parallelism 1), printing
the ratio. Times are the wall time of ``env.execute()`` (PyFlink's includes job submission).

Usage: ``python benchmarks/process_function.py [--records 100000,1000000] [--keys 1000,100000]
[--no-pyflink]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from common import pyflink_python

JOB = textwrap.dedent(
    """
    import json, sys, time
    from {pkg}.common import Duration, WatermarkStrategy
    from {pkg}.common.typeinfo import Types
    from {pkg}.datastream import StreamExecutionEnvironment
    from {pkg}.datastream.functions import KeyedProcessFunction
    from {pkg}.datastream.state import ValueStateDescriptor

    class CountWithTimeout(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            c = self.count.value()
            self.count.update(1 if c is None else c + 1)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), self.count.value()

    def run(n, keys, env):
        data = [("k%d" % (i % keys), i) for i in range(n)]
        strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
                    .with_timestamp_assigner(Assigner()))
        (env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda v: v[0], key_type=Types.STRING())
            .process(CountWithTimeout(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
            .filter(lambda v: False)
            .print())
        start = time.perf_counter()
        env.execute("process-function-benchmark")
        return time.perf_counter() - start
    """
)

ASSIGNER = textwrap.dedent(
    """
    from {pkg}.common.watermark_strategy import TimestampAssigner
    class Assigner(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]
    """
)

PYFLINK_MAIN = textwrap.dedent(
    """
    from pyflink.common import Configuration
    cfg = Configuration()
    cfg.set_string("python.execution-mode", "thread")
    cfg.set_string("python.executable", sys.executable)
    n, keys = int(sys.argv[1]), int(sys.argv[2])
    env = StreamExecutionEnvironment.get_execution_environment(cfg)
    env.set_parallelism(1)
    print(json.dumps({"seconds": run(n, keys, env)}))
    """
)


def _namespace(pkg: str) -> dict:
    ns: dict = {}
    exec(ASSIGNER.format(pkg=pkg) + JOB.format(pkg=pkg), ns)
    return ns


def run_sparktide(n: int, keys: int, every: int | None = 10_000) -> float:
    ns = _namespace("sparktide")
    from sparktide.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(every)
    return ns["run"](n, keys, env)


def run_pyflink(python: str, n: int, keys: int) -> float | None:
    script = ASSIGNER.format(pkg="pyflink") + JOB.format(pkg="pyflink") + PYFLINK_MAIN
    env = dict(os.environ)
    # thread mode runs the functions in the JVM through this interpreter: put it first on PATH
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [python, "-c", script, str(n), str(keys)],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)["seconds"]
    sys.stderr.write(proc.stderr[-2000:])
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", default="100000,1000000")
    ap.add_argument("--keys", default="1000,100000")
    ap.add_argument("--no-pyflink", action="store_true")
    ap.add_argument(
        "--watermark-every",
        type=int,
        default=10_000,
        help="sparktide: end a round (periodic watermark) every N records (0: one round)",
    )
    args = ap.parse_args(argv)
    python = None if args.no_pyflink else pyflink_python()
    print(f"Python {sys.version.split()[0]}; PyFlink: {python or 'not installed'}")
    header = (
        f"{'records':>9} | {'keys':>7} | {'sparktide rec/s':>15} | {'PyFlink rec/s':>13} | "
        f"{'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for n in (int(x) for x in args.records.split(",")):
        for keys in (int(x) for x in args.keys.split(",")):
            if keys > n:
                continue
            t0 = time.perf_counter()
            seconds = run_sparktide(n, keys, args.watermark_every or None)
            _ = time.perf_counter() - t0
            ours = n / seconds
            theirs = None
            if python:
                t = run_pyflink(python, n, keys)
                theirs = n / t if t else None
            ratio = f"{ours / theirs:5.1f}x" if theirs else "-"
            theirs_s = f"{theirs:13,.0f}" if theirs else f"{'-':>13}"
            print(f"{n:>9,} | {keys:>7,} | {ours:15,.0f} | {theirs_s} | {ratio:>6}", flush=True)


if __name__ == "__main__":
    main()
