"""Timer service throughput: register, delete, advance-watermark-and-fire; bytes per timer.

Runs the real ``InternalTimerService`` (event time, keyed, void namespace) for 10^4, 10^5 and
10^6 timers over 10^3 keys with random timestamps, next to two references measured in the same
run on the same timestamps:

* ``heapq``: raw ``heapq.heappush``/``heappop`` of ``(ts, seq, obj)`` tuples (no dedup, no
  delete, no key context, no callback) - the floor for any Python timer queue;
* ``indexed heap``: a textbook binary heap whose entries know their index (O(log n) delete),
  with its sift loops in Python - the layout sparktide does *not* use, shown for the record.

Usage: ``python benchmarks/timers.py [--sizes 10000,100000,1000000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import sys
import time
import tracemalloc
from typing import Any

from sparktide.runtime.elements import MAX_TIMESTAMP
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.timers.service import InternalTimerService

MAXP = 128
N_KEYS = 1000


class _KeyContext:
    __slots__ = ("current_key", "current_key_group")

    def __init__(self) -> None:
        self.current_key: Any = None
        self.current_key_group = 0

    def set_current_key_and_group(self, key: Any, key_group: int) -> None:
        self.current_key = key
        self.current_key_group = key_group


class _Target:
    __slots__ = ("fired",)

    def __init__(self) -> None:
        self.fired = 0

    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self.fired += 1

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self.fired += 1


def _workload(n: int, seed: int) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    keys = [f"key-{i}" for i in range(N_KEYS)]
    kgs = {k: assign_to_key_group(k, MAXP) for k in keys}
    out = []
    for _ in range(n):
        k = keys[rng.randrange(N_KEYS)]
        out.append((rng.randrange(0, 10**9), k, kgs[k]))
    return out


def _service() -> tuple[InternalTimerService, _KeyContext, _Target]:
    ctx, target = _KeyContext(), _Target()
    svc = InternalTimerService("bench", ctx, None, target, KeyGroupRange(0, MAXP - 1))
    return svc, ctx, target


def bench_sparktide(work: list[tuple[int, str, int]]) -> dict[str, float]:
    svc, ctx, target = _service()
    register = svc.register_event_time_timer
    t0 = time.perf_counter()
    for ts, key, kg in work:
        ctx.current_key = key
        ctx.current_key_group = kg
        register(None, ts)
    t_reg = time.perf_counter() - t0
    pending = svc.num_event_time_timers()
    t0 = time.perf_counter()
    svc.advance_watermark(MAX_TIMESTAMP)
    t_fire = time.perf_counter() - t0
    if target.fired != pending:
        raise RuntimeError(f"fired {target.fired} of {pending} timers")
    # delete: register again, then delete every timer in a shuffled order
    for ts, key, kg in work:
        ctx.current_key = key
        ctx.current_key_group = kg
        register(None, ts)
    shuffled = list(work)
    random.Random(7).shuffle(shuffled)
    delete = svc.delete_event_time_timer
    t0 = time.perf_counter()
    for ts, key, kg in shuffled:
        ctx.current_key = key
        ctx.current_key_group = kg
        delete(None, ts)
    t_del = time.perf_counter() - t0
    if svc.num_event_time_timers() != 0:
        raise RuntimeError("timers left after deleting all")
    return {"register": t_reg, "fire": t_fire, "delete": t_del, "pending": pending}


def bench_heapq(work: list[tuple[int, str, int]]) -> dict[str, float]:
    h: list[tuple[int, int, Any]] = []
    push, pop = heapq.heappush, heapq.heappop
    t0 = time.perf_counter()
    for seq, (ts, key, _kg) in enumerate(work):
        push(h, (ts, seq, key))
    t_push = time.perf_counter() - t0
    t0 = time.perf_counter()
    while h:
        pop(h)
    t_pop = time.perf_counter() - t0
    return {"register": t_push, "fire": t_pop}


class _IndexedHeap:
    """Binary heap of [prio, index, payload] lists; every move updates the index."""

    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a: list[list[Any]] = []

    def push(self, e: list[Any]) -> None:
        a = self.a
        a.append(e)
        self._sift_up(e, len(a) - 1)

    def _sift_up(self, e: list[Any], i: int) -> None:
        a = self.a
        p = e[0]
        while i:
            pi = (i - 1) >> 1
            pe = a[pi]
            if pe[0] <= p:
                break
            a[i] = pe
            pe[1] = i
            i = pi
        a[i] = e
        e[1] = i

    def pop(self) -> list[Any]:
        a = self.a
        last = a.pop()
        n = len(a)
        if not n:
            return last
        top = a[0]
        i, c = 0, 1
        while c < n:  # move the hole down to a leaf, then sift the last entry up
            ce = a[c]
            r = c + 1
            if r < n and a[r][0] < ce[0]:
                c, ce = r, a[r]
            a[i] = ce
            ce[1] = i
            i, c = c, 2 * c + 1
        self._sift_up(last, i)
        return top


def bench_indexed(work: list[tuple[int, str, int]]) -> dict[str, float]:
    h = _IndexedHeap()
    push, pop, a = h.push, h.pop, h.a
    t0 = time.perf_counter()
    for seq, (ts, key, _kg) in enumerate(work):
        push([(ts << 32) | seq, 0, key])
    t_push = time.perf_counter() - t0
    t0 = time.perf_counter()
    while a:
        pop()
    t_pop = time.perf_counter() - t0
    return {"register": t_push, "fire": t_pop}


def bytes_per_timer(work: list[tuple[int, str, int]]) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    svc, ctx, _ = _service()
    for ts, key, kg in work:
        ctx.current_key = key
        ctx.current_key_group = kg
        svc.register_event_time_timer(None, ts)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / max(1, svc.num_event_time_timers())


def best(fn: Any, work: list[tuple[int, str, int]], repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        gc.collect()
        runs.append(fn(work))
    return {k: min(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    print(
        f"Python {sys.version.split()[0]}; {N_KEYS} keys, random timestamps; best of {args.repeat}"
    )
    header = (
        f"{'timers':>9} | {'impl':<23} | {'register/s':>11} | {'delete/s':>11} | "
        f"{'fire/s':>11} | {'reg+fire/s':>11} | {'vs heapq':>8} | {'B/timer':>7}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        work = _workload(n, seed=n)
        st = best(bench_sparktide, work, args.repeat)
        hq = best(bench_heapq, work, args.repeat)
        ix = best(bench_indexed, work, max(1, args.repeat - 1))
        mem = bytes_per_timer(work[: min(n, 200_000)])
        pending = st["pending"]
        rows = [
            ("sparktide timer service", st, pending, f"{mem:7.0f}"),
            ("raw heapq (ts,seq,obj)", hq, n, ""),
            ("indexed heap (Python)", ix, n, ""),
        ]
        base_rf = hq["register"] + hq["fire"]
        for name, r, count, b in rows:
            rf = r["register"] + r["fire"]
            delete = f"{count / r['delete']:11,.0f}" if "delete" in r else f"{'-':>11}"
            print(
                f"{n:>9,} | {name:<23} | {count / r['register']:11,.0f} | {delete} | "
                f"{count / r['fire']:11,.0f} | {count / rf:11,.0f} | "
                f"{rf / base_rf * count / n:7.2f}x | {b:>7}"
            )
    print(
        "\nreg+fire/s: timers registered and then fired per second (both phases); "
        "'vs heapq': time per timer relative to raw heapq push+pop (lower is better). "
        "sparktide dedups timers, so 'pending' may be slightly below the number registered."
    )


if __name__ == "__main__":
    main()
