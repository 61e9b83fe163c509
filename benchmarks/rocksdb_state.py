"""Keyed state throughput per backend: the heap backend vs the RocksDB backend.

Per record: ``set_current_key`` then one state call, over ``--keys`` distinct keys; each case
runs two passes (the first creates the entries, the second finds them) and keeps the faster
one; the table shows the best of ``--repeat`` runs, heap and RocksDB interleaved. The RocksDB
databases live in ``/dev/shm`` where it exists (else a temporary directory).

A second table adds ``--list-total`` elements to list states of growing length per
``(key, window)``: adds/s, and the time of one ``get`` of a whole list.

Usage: ``python benchmarks/rocksdb_state.py [--keys 100000] [--repeat 2]
[--list-total 100000]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparktide.common.typeinfo import Types
from sparktide.core.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state import HeapKeyedStateBackend
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

MAXP = 128


def make(kind: str) -> Any:
    common: dict[str, Any] = {
        "max_parallelism": MAXP,
        "key_group_range": KeyGroupRange(0, MAXP - 1),
        "time_provider": lambda: 0,
    }
    if kind == "heap":
        return HeapKeyedStateBackend(**common)
    shm = Path("/dev/shm")
    root = tempfile.mkdtemp(dir=shm if shm.is_dir() else None)
    return RocksDBKeyedStateBackend(**common, directory=root)


def _value_op(state: Any) -> Callable[[], None]:
    def op() -> None:
        v = state.value()
        state.update(1 if v is None else v + 1)

    return op


def case_op(case: str, b: Any) -> Callable[[], None]:
    if case == "value get+update (LONG)":
        return _value_op(b.get_partitioned_state(ValueStateDescriptor("v", Types.LONG())))
    if case == "value get+update (pickled)":
        return _value_op(b.get_partitioned_state(ValueStateDescriptor("v", None)))
    if case == "value get+update (LONG, TTL)":
        d = ValueStateDescriptor("v", Types.LONG())
        d.enable_time_to_live(StateTtlConfig.new_builder(10**9).build())
        return _value_op(b.get_partitioned_state(d))
    if case == "list add (STRING)":
        lst = b.get_partitioned_state(ListStateDescriptor("l", Types.STRING()))
        return lambda: lst.add("x")
    if case == "map put (STRING->LONG)":
        m = b.get_partitioned_state(MapStateDescriptor("m", Types.STRING(), Types.LONG()))
        return lambda: m.put("a", 1)
    if case == "reducing add (LONG)":
        r = b.get_partitioned_state(ReducingStateDescriptor("r", lambda x, y: x + y, Types.LONG()))
        return lambda: r.add(1)
    raise ValueError(case)


CASES = (
    "value get+update (LONG)",
    "value get+update (pickled)",
    "value get+update (LONG, TTL)",
    "list add (STRING)",
    "map put (STRING->LONG)",
    "reducing add (LONG)",
)


def run(kind: str, case: str, keys: list[str]) -> float:
    b = make(kind)
    op = case_op(case, b)
    set_key = b.set_current_key
    best = 0.0
    for _ in range(2):
        t = time.perf_counter()
        for k in keys:
            set_key(k)
            op()
        best = max(best, len(keys) / (time.perf_counter() - t))
    b.dispose()
    return best


def list_growth(kind: str, per: int, total: int) -> tuple[float, float]:
    b = make(kind)
    s = b.get_internal_state(ListStateDescriptor("l", Types.STRING()))
    s.set_current_namespace(TimeWindow(0, 10))
    n_keys = max(1, total // per)
    t = time.perf_counter()
    for _ in range(per):
        for k in range(n_keys):
            b.set_current_key(k)
            s.add("event-payload")
    adds = per * n_keys / (time.perf_counter() - t)
    b.set_current_key(0)
    t = time.perf_counter()
    got = len(s.get())
    get_ms = (time.perf_counter() - t) * 1000
    assert got == per
    b.dispose()
    return adds, get_ms


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--list-total", type=int, default=100_000)
    args = p.parse_args()
    keys = [f"user-{i}" for i in range(args.keys)]
    print(
        f"{args.keys:,} keys; records/s (set_current_key + one state call), best of {args.repeat}\n"
    )
    print("| case | heap | rocksdb | heap / rocksdb |\n|---|---|---|---|")
    for case in CASES:
        best = {"heap": 0.0, "rocksdb": 0.0}
        for _ in range(args.repeat):
            for kind in best:
                best[kind] = max(best[kind], run(kind, case, keys))
        ratio = best["heap"] / best["rocksdb"]
        print(f"| {case} | {best['heap']:,.0f} | {best['rocksdb']:,.0f} | {ratio:.1f}x |")
    print(f"\nlist adds over {args.list_total:,} elements, by list length per (key, window)\n")
    print("| length | heap adds/s | rocksdb adds/s | rocksdb get of one list, ms |")
    print("|---|---|---|---|")
    for per in (10, 100, 1000, 10000):
        heap_adds, _ = list_growth("heap", per, args.list_total)
        adds, get_ms = list_growth("rocksdb", per, args.list_total)
        print(f"| {per:,} | {heap_adds:,.0f} | {adds:,.0f} | {get_ms:.2f} |")


if __name__ == "__main__":
    main()
