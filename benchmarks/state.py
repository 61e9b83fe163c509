"""Keyed state and timer throughput per state backend (heap, RocksDB).

State: ValueState value+update, ListState add, MapState put/get on the real state objects of
each backend (``HeapKeyedStateBackend``, ``RocksDBKeyedStateBackend`` in a fresh temporary
directory; void namespace, 1000 keys already stored, the current key set once, values typed
``Types.LONG()``) without TTL, with TTL and Flink's default cleanup (incremental, 5 entries per
access), and with TTL and no background cleanup, next to a raw ``dict`` keyed by the key measured
in the same run: the floor for any Python keyed state. The last column is the RocksDB state's
ops/s over the heap state's.

Timers: ``--timers`` timers (random timestamps over 10^4 keys in 128 key groups) registered
through an event-time timer service whose queues come from each backend's factory, then fired
by one watermark (the workload of ``benchmarks/rocksdb_timers.py``): register/s, fire/s and
register+fire/s per queue, best of ``--repeat``, backends interleaved.

Usage: ``python benchmarks/state.py [--ops 300000] [--repeat 5] [--timers 200000]
[--backends heap,rocksdb] [--clock wall|cpu]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import timeit
from typing import Any

from sparktide.common import Types
from sparktide.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state import HeapKeyedStateBackend
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

MAXP = 128
BACKENDS = ("heap", "rocksdb")
N_KEYS = 1000
KEY = "user-42"
VARIANTS = ("raw dict", "state", "state+TTL", "state+TTL no bg cleanup")

# operation -> (setup of the state/dict for one key, statement timed per op)
OPERATIONS: dict[str, tuple[str, str]] = {
    "ValueState value+update": ("value", "s.update(s.value() + 1)"),
    "ListState add": ("list", "s.add(1)"),
    "MapState put": ("map", "s.put(7, 1)"),
    "MapState get": ("map", "s.get(7)"),
}
RAW: dict[str, str] = {
    "ValueState value+update": "d[k] = d.get(k) + 1",
    "ListState add": "d[k].append(1)",
    "MapState put": "d[k][7] = 1",
    "MapState get": "d[k].get(7)",
}


def _ttl(background: bool) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(3_600_000)
    if not background:
        builder.disable_cleanup_in_background()
    return builder.build()


class _Clock:
    """A processing-time clock that moves 1 ms every 1000 reads (TTL reads it per access)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n // 1000


class _Backends:
    """Makes keyed state backends and disposes of them (RocksDB: their directories too)."""

    def __init__(self) -> None:
        self.made: list[Any] = []
        self.directories: list[str] = []

    def new(self, backend: str) -> Any:
        common: dict[str, Any] = dict(
            max_parallelism=MAXP, key_group_range=KeyGroupRange(0, MAXP - 1), time_provider=_Clock()
        )
        made: Any
        if backend == "heap":
            made = HeapKeyedStateBackend(**common)
        else:
            directory = tempfile.mkdtemp(prefix="sparktide-bench-state-")
            self.directories.append(directory)
            made = RocksDBKeyedStateBackend(directory=directory, **common)
        self.made.append(made)
        return made

    def dispose(self) -> None:
        for made in self.made:
            made.dispose()
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)
        self.made.clear()
        self.directories.clear()


def _state(backends: _Backends, backend_name: str, kind: str, variant: str) -> Any:
    backend = backends.new(backend_name)
    descriptor: Any = {
        "value": ValueStateDescriptor("s", Types.LONG()),
        "list": ListStateDescriptor("s", Types.LONG()),
        "map": MapStateDescriptor("s", Types.LONG(), Types.LONG()),
    }[kind]
    if variant != "state":
        descriptor.enable_time_to_live(_ttl(background=variant == "state+TTL"))
    state = backend.get_partitioned_state(descriptor)
    for i in range(N_KEYS):
        backend.set_current_key(f"user-{i}")
        if kind == "value":
            state.update(0)
        elif kind == "list":
            state.add(0)
        else:
            state.put(7, 0)
    backend.set_current_key(KEY)
    return state


def _raw(kind: str) -> dict[Any, Any]:
    if kind == "value":
        return {f"user-{i}": 0 for i in range(N_KEYS)}
    if kind == "list":
        return {f"user-{i}": [0] for i in range(N_KEYS)}
    return {f"user-{i}": {7: 0} for i in range(N_KEYS)}


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]


def _time(stmt: str, env: dict[str, Any], ops: int, repeat: int) -> float:
    """Best nanoseconds per statement."""
    times = timeit.repeat(stmt, globals=env, number=ops, repeat=repeat, timer=clock)
    return min(times) / ops * 1e9


Results = dict[str, dict[str, float]]
"""``"operation / backend"`` -> variant -> nanoseconds per operation."""


def run(ops: int, repeat: int, backends: list[str]) -> Results:
    results: Results = {}
    made = _Backends()
    try:
        for name, (kind, stmt) in OPERATIONS.items():
            for backend in backends:
                row: dict[str, float] = {}
                if backend == backends[0]:
                    row["raw dict"] = _time(RAW[name], {"d": _raw(kind), "k": KEY}, ops, repeat)
                for variant in VARIANTS[1:]:
                    state = _state(made, backend, kind, variant)
                    row[variant] = _time(stmt, {"s": state}, ops, repeat)
                results[f"{name} / {backend}"] = row
                made.dispose()
        for backend in backends:
            b = made.new(backend)
            b.set_current_key(KEY)
            results[f"set_current_key (cached) / {backend}"] = {
                "state": _time("b.set_current_key(k)", {"b": b, "k": KEY}, ops, repeat)
            }
            made.dispose()
    finally:
        made.dispose()
    return results


def _ratio(results: Results, name: str) -> str:
    """RocksDB ops/s over heap ops/s of the plain state (heap ns over RocksDB ns)."""
    base = name.rsplit(" / ", 1)[0]
    heap = results.get(f"{base} / heap", {}).get("state")
    rocksdb = results.get(f"{base} / rocksdb", {}).get("state")
    if heap is None or rocksdb is None or not name.endswith("/ rocksdb"):
        return ""
    return f"{heap / rocksdb:.3f}x"


def run_timers(n: int, repeat: int, backends: list[str]) -> dict[str, tuple[float, float]]:
    """Best (register seconds, fire seconds) of ``n`` timers per backend's queue factory."""
    import rocksdb_timers
    from rocksdb_timers import run_service_once, workload

    from sparktide.runtime.timers.queue_factory import (
        HeapTimerQueueFactory,
        RocksDBTimerQueueFactory,
        TimerQueueFactory,
    )

    rocksdb_timers.clock = clock
    timers = workload(n)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for backend in backends:
            with tempfile.TemporaryDirectory(prefix="sparktide-bench-timers-") as d:
                factory: TimerQueueFactory
                if backend == "heap":
                    factory = HeapTimerQueueFactory()
                else:
                    factory = RocksDBTimerQueueFactory(d)
                try:
                    measured = run_service_once(factory, timers)
                finally:
                    factory.dispose()
            prev = best.get(backend)
            if prev is None or sum(measured) < sum(prev):
                best[backend] = measured
    return best


def _fmt(ns: float | None) -> str:
    if ns is None:
        return "-"
    return f"{ns:6.0f} ns {1e3 / ns:6.2f} M/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300_000, help="operations per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="measurements, the best is kept")
    parser.add_argument("--timers", type=int, default=200_000, help="timers per timer run")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="heap, rocksdb or both")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="cpu: the process's CPU time (all threads, RocksDB's included), steadier on a "
        "shared machine",
    )
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            parser.error(f"--backends: unknown backend {b!r}; choose among {', '.join(BACKENDS)}")
    if not backends or args.ops < 1 or args.repeat < 1 or args.timers < 0:
        parser.error("--ops and --repeat must be >= 1, --timers >= 0, --backends not empty")
    results = run(args.ops, args.repeat, backends)
    print(
        f"Python {sys.version.split()[0]}, {args.ops} ops x best of {args.repeat}, "
        f"{args.clock} clock"
    )
    width = max(len(n) for n in results)
    header = (
        f"{'operation / backend':<{width}} | "
        + " | ".join(f"{v:<23}" for v in VARIANTS)
        + " | rocksdb/heap"
    )
    print(header)
    print("-" * len(header))
    for name, row in results.items():
        cells = " | ".join(f"{_fmt(row.get(v)):<23}" for v in VARIANTS)
        print(f"{name:<{width}} | {cells} | {_ratio(results, name)}")
    if args.timers:
        print()
        timers = run_timers(args.timers, args.repeat, backends)
        print(f"{args.timers:,} event-time timers through a timer service, best of {args.repeat}")
        print(
            f"{'queue':<8} | {'register/s':>11} | {'fire/s':>11} | {'register+fire/s':>15} | ratio"
        )
        print("-" * 64)
        heap = timers.get("heap")
        for backend, (reg, fire) in timers.items():
            n = args.timers
            ratio = f"{sum(heap) / (reg + fire):.3f}x" if heap and backend != "heap" else ""
            print(
                f"{backend:<8} | {n / reg:>11,.0f} | {n / fire:>11,.0f} | "
                f"{n / (reg + fire):>15,.0f} | {ratio}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
