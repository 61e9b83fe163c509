"""Timer queue throughput per backend: add then poll n timers, heap queue vs RocksDB queue.

Both queues get the same workload (n timers with random timestamps over 10^4 keys in 128 key
groups; every add is a new timer) and the table shows the best of ``--repeat`` runs, interleaved:
add ops/s, poll ops/s (draining the queue), and the combined add+poll ops/s. The RocksDB queue
runs with its default cache of 128 timers per key group, in a fresh temporary directory.

``--source N`` adds a line for ``NumberSequenceSource(1, N)`` on the local runtime (a filter that
drops every record): the growth of the process's peak RSS while the whole range streams
through, next to what the range would take as a Python list.

Usage: ``python benchmarks/rocksdb_timers.py [--sizes 100000,1000000] [--repeat 3]
[--cache 128] [--source 10000000]``
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import tempfile
import time
from typing import Any

from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

MAXP = 128
N_KEYS = 10_000


def workload(n: int, seed: int = 1) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    keys = [f"user-{i}" for i in range(N_KEYS)]
    groups = {k: assign_to_key_group(k, MAXP) for k in keys}
    out = []
    for i in range(n):
        k = keys[rng.randrange(N_KEYS)]
        out.append((rng.randrange(10**9) * 1000 + i % 1000, k, groups[k]))
    return out


def run_once(queue: Any, timers: list[tuple[int, str, int]]) -> tuple[float, float]:
    gc.collect()
    add = queue.add
    t0 = time.perf_counter()
    for ts, key, kg in timers:
        add(ts, key, None, kg)
    t1 = time.perf_counter()
    poll = queue.poll
    while poll() is not None:
        pass
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def bench_queues(sizes: list[int], repeat: int, cache: int) -> None:
    print(f"| timers | queue | add ops/s | poll ops/s | add+poll ops/s |  (best of {repeat})")
    print("|---:|---|---:|---:|---:|")
    for n in sizes:
        timers = workload(n)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(repeat):
            for name in ("heap", f"rocksdb (cache {cache})"):
                with tempfile.TemporaryDirectory() as d:
                    if name == "heap":
                        queue: Any = KeyGroupedTimerQueue(KeyGroupRange(0, MAXP - 1))
                    else:
                        queue = RocksDBTimerQueue(KeyGroupRange(0, MAXP - 1), d, cache)
                    add_s, poll_s = run_once(queue, timers)
                    if name != "heap":
                        queue.dispose()
                prev = best.get(name)
                if prev is None or add_s + poll_s < sum(prev):
                    best[name] = (add_s, poll_s)
        for name, (add_s, poll_s) in best.items():
            print(
                f"| {n:,} | {name} | {n / add_s:,.0f} | {n / poll_s:,.0f} | "
                f"{2 * n / (add_s + poll_s):,.0f} |"
            )
        sys.stdout.flush()


def bench_source(n: int) -> None:
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.connectors.number_seq import NumberSequenceSource

    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(1)
    numbers = env.from_source(NumberSequenceSource(1, n), WatermarkStrategy.no_watermarks(), "n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    out = list(numbers.filter(lambda v: False).execute_and_collect())
    elapsed = time.perf_counter() - t0
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    as_list = sys.getsizeof(list(range(1000))) / 1000 * n + 28 * n  # list slots + int objects
    print("| NumberSequenceSource | records/s | peak RSS before | growth | as a Python list |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| 1..{n:,} (local, p=1) | {n / elapsed:,.0f} | {before / 1024:,.0f} MiB | "
        f"{grown / 1024:,.1f} MiB | {as_list / 2**20:,.0f} MiB |"
    )
    assert out == []
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=int, default=128)
    parser.add_argument("--source", type=int, default=0, help="also stream 1..N through")
    args = parser.parse_args()
    if args.source:  # first: the peak RSS is the process's, the queues would raise it
        bench_source(args.source)
    bench_queues([int(s) for s in args.sizes.split(",")], args.repeat, args.cache)


if __name__ == "__main__":
    main()
