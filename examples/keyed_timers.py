"""Example job: silent-sensor alerts with keyed state and event-time timers.

A fleet of sensors reports readings out of order, from four source splits (partitioned by sensor,
like the partitions of a message queue). Every split runs its
own bounded-out-of-orderness watermark generator (``max_ts - 5 s - 1``, emitted every 50 records
of the split); the keyed operator combines them with ``min``. For every sensor a
KeyedProcessFunction keeps its reading count and maximum in keyed state and re-arms an event-time
timer 30 s after its latest reading; when the watermark passes that timer without a newer
reading, the sensor is reported silent. Readings older than the watermark go to a side output.

The job runs on the local runtime at parallelism 1 and 3 and checks that both give the same
output: rounds and position-ordered exchanges make results independent of parallelism.

Run: ``python examples/keyed_timers.py``
"""

from __future__ import annotations

import random
from collections import Counter

from sparktide.common import Duration, WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import GeneratorSource
from sparktide.datastream.state import ValueStateDescriptor

TIMEOUT_MS = 30_000
OUT_OF_ORDER_MS = 5_000
LATE = OutputTag("late-readings")


class SilentSensorAlert(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.stats = runtime_context.get_state(ValueStateDescriptor("stats", None))
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline", None))

    def process_element(self, value, ctx):
        ts = ctx.timestamp()
        if ts <= ctx.timer_service().current_watermark():
            yield LATE, value
            return
        count, peak = self.stats.value() or (0, float("-inf"))
        self.stats.update((count + 1, max(peak, value[1])))
        old, new = self.deadline.value(), ts + TIMEOUT_MS
        if old is None or new > old:
            if old is not None:
                ctx.timer_service().delete_event_time_timer(old)
            ctx.timer_service().register_event_time_timer(new)
            self.deadline.update(new)

    def on_timer(self, timestamp, ctx):
        count, peak = self.stats.value()
        self.deadline.clear()
        yield ctx.get_current_key(), timestamp - TIMEOUT_MS, count, round(peak, 1)


def readings(n: int, seed: int = 7) -> list[tuple[str, float, int]]:
    """(sensor, reading, event time ms): every ~2 s per sensor, some sensors go quiet for a
    while, and arrival is out of order by up to 7 s (so a few arrive after the watermark)."""
    rng = random.Random(seed)
    sensors = [f"s{i:02d}" for i in range(24)]
    quiet = {s: (rng.randrange(0, 400_000), rng.randrange(20_000, 90_000)) for s in sensors}
    events = []
    for i in range(n):
        s = sensors[i % len(sensors)]
        t = (i // len(sensors)) * 2_000 + rng.randrange(0, 1_500)
        start, length = quiet[s]
        if not start <= t < start + length:
            arrival = t + rng.randrange(0, OUT_OF_ORDER_MS + 2_000)
            events.append((arrival, (s, round(rng.gauss(20, 5), 2), t)))
    events.sort()
    return [e for _, e in events]


def partitioned(data: list, splits: int = 4) -> GeneratorSource:
    """Split ``data`` by sensor, keeping arrival order within each split."""
    return GeneratorSource(
        lambda k: [r for r in data if int(r[0][1:]) % splits == k], num_splits=splits
    )


def run(parallelism: int, data: list) -> tuple[list, list]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(50)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OUT_OF_ORDER_MS)
    ).with_timestamp_assigner(lambda reading, _ts: reading[2])
    alerts = (
        env.from_source(partitioned(data), strategy, "sensors")
        .key_by(lambda reading: reading[0])
        .process(SilentSensorAlert())
    )
    late_env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    return list(alerts.execute_and_collect()), _late(late_env, parallelism, data, strategy)


def _late(env, parallelism, data, strategy) -> list:
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(50)
    stream = (
        env.from_source(partitioned(data), strategy, "sensors")
        .key_by(lambda reading: reading[0])
        .process(SilentSensorAlert())
    )
    return list(stream.get_side_output(LATE).execute_and_collect())


def main() -> None:
    data = readings(12_000)
    alerts1, late1 = run(1, data)
    alerts3, late3 = run(3, data)
    same = alerts1 == alerts3 and late1 == late3
    print(f"{len(data):,} readings from 4 splits, 24 sensors")
    print(f"\n{'parallelism':<12}{'alerts':>8}{'late':>6}")
    print(f"{1:<12}{len(alerts1):>8}{len(late1):>6}")
    print(f"{3:<12}{len(alerts3):>8}{len(late3):>6}")
    print(f"\nidentical output at parallelism 1 and 3: {same}")
    per_sensor = Counter(sensor for sensor, *_ in alerts1)
    print(f"sensors that went silent at least once: {len(per_sensor)}; first alerts:")
    for sensor, since, count, peak in alerts1[:5]:
        print(f"  {sensor} silent after {since} ms ({count} readings so far, max {peak})")
    if not same:
        raise SystemExit("outputs differ between parallelism 1 and 3")


if __name__ == "__main__":
    main()
