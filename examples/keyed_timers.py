"""Example job: silent-sensor alerts with keyed state and event-time timers.

A fleet of sensors reports readings out of order. For every sensor a KeyedProcessFunction keeps
its reading count and maximum in keyed state and (re)arms an event-time timer ``timeout`` after
the latest reading; when the watermark passes that timer without a newer reading, the sensor is
reported silent. Watermarks follow ``for_bounded_out_of_orderness``: ``max_ts - delay - 1``,
emitted every 50 records.

The job runs on sparktide's engine driven in-process (one operator subtask on a simulated
clock); halfway through it takes a snapshot, restores it into three subtasks (rescaling 1 -> 3)
and finishes there, showing that every timer and state entry moves with its key.

Run: ``python examples/keyed_timers.py``
"""

from __future__ import annotations

import random
from collections import Counter

from sparktide.datastream import KeyedProcessFunction, OutputTag, RuntimeContext
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.testing import for_keyed_process_function

TIMEOUT_MS = 30_000
OUT_OF_ORDER_MS = 5_000
LATE = OutputTag("late-readings")


class SilentSensorAlert(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.stats = runtime_context.get_state(ValueStateDescriptor("stats", None))
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline", None))

    def process_element(self, value, ctx):
        _sensor, reading = value
        ts = ctx.timestamp()
        if ts <= ctx.timer_service().current_watermark():
            yield LATE, value
            return
        count, peak = self.stats.value() or (0, float("-inf"))
        self.stats.update((count + 1, max(peak, reading)))
        old = self.deadline.value()
        new = ts + TIMEOUT_MS
        if old is None or new > old:
            if old is not None:
                ctx.timer_service().delete_event_time_timer(old)
            ctx.timer_service().register_event_time_timer(new)
            self.deadline.update(new)

    def on_timer(self, timestamp, ctx):
        count, peak = self.stats.value()
        last = timestamp - TIMEOUT_MS
        key = ctx.get_current_key()
        yield f"sensor {key} silent after {last} ms ({count} readings, max {peak:.1f})"
        self.deadline.clear()


def readings(n: int, seed: int = 7):
    """Sensors report every ~2 s; some go quiet for a while; arrival is out of order."""
    rng = random.Random(seed)
    sensors = [f"s{i:02d}" for i in range(24)]
    quiet = {s: (rng.randrange(0, 400_000), rng.randrange(20_000, 90_000)) for s in sensors}
    events = []
    for i in range(n):
        s = sensors[i % len(sensors)]
        t = (i // len(sensors)) * 2_000 + rng.randrange(0, 1_500)
        start, length = quiet[s]
        if start <= t < start + length:
            continue
        events.append((t + rng.randrange(0, OUT_OF_ORDER_MS + 2_000), t, s, rng.gauss(20, 5)))
    events.sort()  # arrival order; a few arrive later than the allowed out-of-orderness
    return [(s, reading, t) for _, t, s, reading in events]


def run(harnesses, events, max_ts):
    for i, (sensor, reading, t) in enumerate(events):
        for h in harnesses:
            if sensor in h.owned:
                h.process_element((sensor, reading), t)
        max_ts = max(max_ts, t)
        if i % 50 == 49:
            for h in harnesses:
                h.process_watermark(max_ts - OUT_OF_ORDER_MS - 1)
    return max_ts


def main() -> None:
    from sparktide.runtime.keygroups import assign_to_key_group

    events = readings(12_000)
    half = len(events) // 2
    single = for_keyed_process_function(SilentSensorAlert(), lambda v: v[0], max_parallelism=128)
    single.owned = {s for s, _, _ in events}
    max_ts = run([single], events[:half], -(2**63))
    snapshot = single.snapshot()
    print(
        f"after {half} readings: {single.num_event_time_timers()} armed timers, "
        f"{single.num_keyed_state_entries()} state entries, snapshot {len(snapshot):,} bytes"
    )

    three = []
    for i in range(3):
        h = for_keyed_process_function(
            SilentSensorAlert(),
            lambda v: v[0],
            snapshot=snapshot,
            parallelism=3,
            subtask_index=i,
            max_parallelism=128,
        )
        rng = h.setup_info.key_group_range
        h.owned = {s for s, _, _ in events if assign_to_key_group(s, 128) in rng}
        three.append(h)
    run(three, events[half:], max_ts)
    for h in three:
        h.process_watermark(2**63 - 1)  # end of input fires every remaining timer

    alerts = [v for h in [single, *three] for v in h.extract_output_values()]
    late = [r for h in [single, *three] for r in h.get_side_output(LATE)]
    rows = [("p=1, first half", single)] + [(f"p=3, subtask {i}", h) for i, h in enumerate(three)]
    print(f"\n{'run':<18}{'sensors':>8}{'alerts':>8}{'late':>6}")
    for name, h in rows:
        print(
            f"{name:<18}{len(h.owned):>8}{len(h.extract_output_values()):>8}"
            f"{len(h.get_side_output(LATE)):>6}"
        )
    per_sensor = Counter(a.split()[1] for a in alerts)
    print(
        f"\n{len(alerts)} alerts for {len(per_sensor)} sensors, {len(late)} late readings; first 5:"
    )
    for a in alerts[:5]:
        print("  " + a)


if __name__ == "__main__":
    main()
