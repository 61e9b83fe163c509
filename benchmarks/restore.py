"""What a streaming subtask pays to restore its keyed state from the checkpoint files.

A subtask whose worker holds no warm state of it (a Python worker Spark started after the
warm-up, or one that ran other subtasks) reads its chain and restores its operator as
``StreamingJob.open_subtask`` does: the full snapshot decoded (``from_bytes``), its flat view
(``flatten``, where changelogs are applied), the snapshot rebuilt from it (``rebuild``), the entry
digests of the next changelog (``digests``), and the operator's state and timers restored with
every entry checked (``initialize_state``: each key's key group, each value's shape, no entry
twice; the timers ordered). The state: ``--keys`` keys of one subtask (all 128 key groups), a
``ValueState`` count and an event-time timer per key, the workload of
``benchmarks/streaming.py``'s keyed timers. The last line, for comparison, is what a worker
that kept the state (a snapshot of this process) pays: the same entries restored unchecked.

Best of ``--repeat`` per phase, in ms, and per key in µs.

Usage: ``python benchmarks/restore.py [--keys 500000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from common import load_average

from sparktide.common import Types
from sparktide.datastream import KeyedProcessFunction
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.gc_pacing import paced_collection
from sparktide.runtime.operators.process import KeyedProcessOperator
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.spark.changelog import digests, flatten, rebuild
from sparktide.testing.harness import KeyedOneInputStreamOperatorTestHarness


class CountWithTimer(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)
        return iter(())


def _harness() -> KeyedOneInputStreamOperatorTestHarness:
    return KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(CountWithTimer()), lambda r: r[0], max_parallelism=128
    )


def _state(keys: int) -> bytes:
    """The full snapshot of a subtask that saw one record of each key."""
    harness = _harness()
    harness.open()
    for i in range(keys):
        harness.process_element((f"user-{i}", i), i)
    return harness.operator.snapshot_state().to_bytes()


def _phases(blob: bytes) -> dict[str, float]:
    """Seconds per phase of one restore from the files, and of one from a kept snapshot."""
    out: dict[str, float] = {}

    def timed(name: str, action: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = action()
        out[name] = time.perf_counter() - start
        return result

    snap = timed("from_bytes", lambda: KeyedOperatorSnapshot.from_bytes(blob))
    flat = timed("flatten", lambda: flatten(snap, snap.key_group_range))
    restored = timed(
        "rebuild",
        lambda: rebuild(
            snap.operator, snap.max_parallelism, snap.key_group_range, snap.state_meta, flat
        ),
    )
    timed("digests", lambda: digests(flat))
    timed("initialize_state", lambda: _harness().initialize_state(restored))
    operator = _harness().operator
    backend, timers = operator.keyed_state_backend, operator.time_service_manager
    if backend is None or timers is None:
        raise RuntimeError("the operator of the benchmark has no keyed state")

    def kept() -> None:
        backend.restore_state(restored.state_meta, restored.state, trusted=True)
        timers.restore(restored.timers)

    timed("kept snapshot", kept)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    with paced_collection():  # as a Spark task runs
        blob = _state(args.keys)
        runs = [_phases(blob) for _ in range(args.repeat)]
    best = {name: min(run[name] for run in runs) for name in runs[0]}
    from_files = sum(v for name, v in best.items() if name != "kept snapshot")
    print(f"\nrestore of {args.keys:,} keys (+ as many timers), best of {args.repeat}\n")
    print(f"| {'phase':<24} | {'ms':>8} | {'µs/key':>7} |")
    print(f"|{'-' * 26}|{'-' * 9}:|{'-' * 8}:|")
    for name, seconds in [*best.items(), ("from the files, in all", from_files)]:
        print(f"| {name:<24} | {seconds * 1e3:>8,.0f} | {seconds / args.keys * 1e6:>7.2f} |")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
