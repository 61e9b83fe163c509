"""The Python work of the keyed-timer job's Spark tasks, values pickled or as Arrow columns.

Runs the tasks a Spark run of the keyed-timer job runs (:class:`~sparktide.spark.spark_job.
SparkJob`: the source split, then every subtask of the keyed stage on the split's shipped
chunks), in this process and without Spark, so the machine's noise from the JVM's shuffle and
other programs stays out: what changes between pickled and Arrow values is the Python work
around the exchange. ``--records`` records (default 2·10^5) over ``--keys`` keys, values
``TUPLE([LONG, LONG])`` or ``ROW_NAMED(["key", "one"], [LONG, LONG])``, Arrow values off and
on, interleaved, best of ``--repeat``. Run: ``python benchmarks/arrow_values_tasks.py``.
"""

from __future__ import annotations

import argparse
import time
from itertools import groupby
from operator import itemgetter
from typing import Any


def build(records: list[tuple[int, int]], shape: str, arrow: bool | None) -> Any:
    from sparktide.common import Duration, Types, WatermarkStrategy
    from sparktide.common.types import Row
    from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
    from sparktide.datastream.state import ValueStateDescriptor
    from sparktide.runtime.execution.planner import plan_job
    from sparktide.spark import spark_job
    from sparktide.spark.placement import placement_keys

    class Counter(KeyedProcessFunction):  # type: ignore[misc]  # benchmarks/spark.py's CountWithTimer
        def open(self, runtime_context: Any) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("c", Types.LONG()))

        def process_element(self, value: Any, ctx: Any) -> None:
            c = self.count.value()
            self.count.update(1 if c is None else c + 1)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield ctx.get_current_key(), timestamp, self.count.value()

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(2000)
    ).with_timestamp_assigner(lambda v, previous: v[1])
    source = env.from_collection(records).assign_timestamps_and_watermarks(strategy)
    if shape == "tuple":
        mapped = source.map(lambda r: (r[0], 1), output_type=Types.TUPLE([Types.LONG()] * 2))
    else:
        row = Types.ROW_NAMED(["key", "one"], [Types.LONG(), Types.LONG()])
        mapped = source.map(lambda r: Row.of_values([r[0], 1], ["key", "one"]), output_type=row)
    out = mapped.key_by(lambda v: v[0]).process(
        Counter(), output_type=Types.TUPLE([Types.LONG()] * 3)
    )
    out.print()
    plan = plan_job(env._graph, 2, None)
    spark_job._ARROW_VALUES = arrow
    return spark_job.SparkJob(plan, {}, 100_000, None, {2: placement_keys(2)})


def run(job: Any) -> int:
    """The source split, then the keyed stage's subtasks on its chunks: rows shipped."""
    shipped = [row for batch in job.run_split(0) for row in batch.to_pylist()]
    chunks = sorted((r["target"], r["position"], r["payload"]) for r in shipped if r["stage"] == 0)
    out = 0
    for target, group in groupby(chunks, key=itemgetter(0)):
        for batch in job.run_subtask(0, target, [(p, c) for _, p, c in group]):
            out += batch.num_rows
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.records
    records = [((i * 7919) % args.keys, 1_700_000_000_000 + i * 10) for i in range(n)]
    variants = [("tuple", False), ("tuple", True), ("row", False), ("row", None)]
    jobs = {v: build(records, *v) for v in variants}
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.repeat):
        for v in variants:
            start = time.process_time()
            run(jobs[v])
            best[v] = min(best[v], time.process_time() - start)
    print(
        f"keyed timers, the tasks' Python work in one process, {n:,} records, CPU time, "
        f"best of {args.repeat}"
    )
    print(f"{'values':8} | {'exchange':16} | {'seconds':>7} | {'µs/record':>9}")
    labels = {False: "pickled", True: "Arrow (forced)", None: "Arrow (default)"}
    for (shape, arrow), seconds in best.items():
        print(f"{shape:8} | {labels[arrow]:16} | {seconds:7.2f} | {seconds / n * 1e6:9.2f}")


if __name__ == "__main__":
    main()
