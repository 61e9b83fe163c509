"""Async I/O on the local runtime: what the operator costs, and what concurrency buys.

1. Overhead: ``--records`` records through ``map`` and through an async function that answers at
   once (ordered and unordered), µs per record.
2. Concurrency: ``--requests`` records whose service takes ``--latency-ms`` each, with
   capacity 1, 10 and 100: seconds for the job (capacity 1 is one request at a time).

Best of ``--repeat``, the variants interleaved. Run: ``python benchmarks/async_io.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from sparktide.common import Time, Types
from sparktide.datastream import AsyncDataStream, AsyncFunction, StreamExecutionEnvironment


class Instant(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


class Slow(AsyncFunction):
    def __init__(self, latency_ms: int) -> None:
        self.latency = latency_ms / 1000

    async def async_invoke(self, value):
        await asyncio.sleep(self.latency)
        return [value]


def _job(n: int, build: Callable[..., object]) -> float:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    ds = env.from_collection(list(range(n)), type_info=Types.LONG())
    out = build(ds)
    start = time.perf_counter()
    count = sum(1 for _ in out.execute_and_collect())  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - start
    assert count == n
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t = Time.seconds(60)
    overhead = {
        "map": lambda ds: ds.map(lambda v: v, output_type=Types.LONG()),
        "ordered_wait": lambda ds: AsyncDataStream.ordered_wait(ds, Instant(), t, 100),
        "unordered_wait": lambda ds: AsyncDataStream.unordered_wait(ds, Instant(), t, 100),
    }
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, build in overhead.items():
            best[name] = min(best.get(name, float("inf")), _job(args.records, build))
    print(f"overhead, {args.records} records (best of {args.repeat})")
    print(f"{'variant':<16}{'µs/record':>12}")
    for name, seconds in best.items():
        print(f"{name:<16}{seconds / args.records * 1e6:>12.1f}")

    capacities = (1, 10, 100)
    slow: dict[int, float] = {}
    for _ in range(args.repeat):
        for c in capacities:
            seconds = _job(
                args.requests,
                lambda ds, c=c: AsyncDataStream.ordered_wait(ds, Slow(args.latency_ms), t, c),
            )
            slow[c] = min(slow.get(c, float("inf")), seconds)
    print()
    print(f"concurrency, {args.requests} requests of {args.latency_ms} ms (best of {args.repeat})")
    print(f"{'capacity':<10}{'seconds':>10}{'speed-up':>10}")
    for c in capacities:
        print(f"{c:<10}{slow[c]:>10.2f}{slow[1] / slow[c]:>10.1f}")


if __name__ == "__main__":
    main()
