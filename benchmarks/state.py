"""Keyed state throughput: ValueState value+update, ListState add, MapState put/get.

Runs the real ``HeapKeyedStateBackend`` state objects (void namespace, 1000 keys already
stored, the current key set once) without TTL, with TTL and Flink's default cleanup (incremental,
5 entries per access), and with TTL and no background cleanup, next to a raw ``dict`` keyed by the
key measured in the same run: the floor for any Python keyed state.

Usage: ``python benchmarks/state.py [--ops 300000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import sys
import timeit
from typing import Any

from sparktide.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state import HeapKeyedStateBackend

MAXP = 128
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


def _state(kind: str, variant: str) -> Any:
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=KeyGroupRange(0, MAXP - 1), time_provider=_Clock()
    )
    descriptor: Any = {
        "value": ValueStateDescriptor("s", None),
        "list": ListStateDescriptor("s", None),
        "map": MapStateDescriptor("s", None, None),
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


def _time(stmt: str, env: dict[str, Any], ops: int, repeat: int) -> float:
    """Best nanoseconds per statement."""
    return min(timeit.repeat(stmt, globals=env, number=ops, repeat=repeat)) / ops * 1e9


def run(ops: int, repeat: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for name, (kind, stmt) in OPERATIONS.items():
        row = {"raw dict": _time(RAW[name], {"d": _raw(kind), "k": KEY}, ops, repeat)}
        for variant in VARIANTS[1:]:
            row[variant] = _time(stmt, {"s": _state(kind, variant)}, ops, repeat)
        results[name] = row
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=KeyGroupRange(0, MAXP - 1), time_provider=_Clock()
    )
    backend.set_current_key(KEY)
    results["set_current_key (cached)"] = {
        "state": _time("b.set_current_key(k)", {"b": backend, "k": KEY}, ops, repeat)
    }
    return results


def _fmt(ns: float | None) -> str:
    if ns is None:
        return "-"
    return f"{ns:6.0f} ns {1e3 / ns:6.2f} M/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300_000, help="operations per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="measurements, the best is kept")
    args = parser.parse_args(argv)
    results = run(args.ops, args.repeat)
    print(f"Python {sys.version.split()[0]}, {args.ops} ops x best of {args.repeat}")
    width = max(len(n) for n in results)
    header = f"{'operation':<{width}} | " + " | ".join(f"{v:<23}" for v in VARIANTS)
    print(header)
    print("-" * len(header))
    for name, row in results.items():
        cells = " | ".join(f"{_fmt(row.get(v)):<23}" for v in VARIANTS)
        print(f"{name:<{width}} | {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
