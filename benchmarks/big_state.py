"""State larger than memory: 10^7 keys, each with a ValueState and one event-time timer.

The job, on the local runtime at parallelism 1 (rounds of ``--round`` records, default 10^5,
``set_watermark_every``), no output::

    env.from_source(NumberSequenceSource(0, keys - 1), monotonous timestamps = the number)
       .key_by(lambda n: n)
       .process(CountAndTimer())   # ValueState count += 1; event-time timer at n + keys
       .filter(lambda _: False)    # nothing leaves

Every number is its own key, so after the input every key has a value and a pending timer
(``n + keys`` is past the last record's timestamp: no timer fires before the end of input).
The final watermark then fires all of them in time order; each timer reads and clears its key's
value. So the peak holds ``keys`` values and ``keys`` timers at once.

Each run is a child process (``python big_state.py --child BACKEND KEYS ROUND``) that prints
its peak RSS (``ru_maxrss``), the seconds of the two phases (reading the input: state updates
and timer registrations; the end of input: every timer fired), its CPU seconds (all threads:
steadier than the wall clock on a shared machine) and, for RocksDB, what the
databases' memory properties say at the end of the input (memtables, block cache, table
readers) with the size of their directory. The parent prints one table row per run::

    python benchmarks/big_state.py                          # 10^5 and 10^6 keys, both backends
    python benchmarks/big_state.py --keys 10000000 --backends rocksdb
    python benchmarks/big_state.py --key-type long   # key_by(..., key_type=Types.LONG())
    PYTHONPATH=/other/tree/src python benchmarks/big_state.py --keys 100000

``--tracemalloc`` traces the Python allocations of each run (slower) and prints the files that
hold the most at the end of the input. ``--limit-mb M`` runs the child with an address-space
limit (``RLIMIT_AS``, M MB): a backend that needs more fails instead of swapping the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from sparktide.datastream import KeyedProcessFunction

BACKENDS = ("heap", "rocksdb")
_PROBE: dict[str, Any] = {}
"""What the child measures at the end of the input (the operator is a copy of the function
given: it reports through this module's globals)."""


def _end_of_input() -> None:
    """The first timer fires: every record was read."""
    _PROBE["input_seconds"] = time.perf_counter() - _PROBE["started"]
    _PROBE["rss_input_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if _PROBE["backend"] == "rocksdb":
        _PROBE["memory"] = {**_rocksdb_memory(), "disk": _du(_PROBE["directory"])}
    if tracemalloc.is_tracing():
        stats = tracemalloc.take_snapshot().statistics("filename")
        _PROBE["python"] = [
            (str(s.traceback[0].filename).split("/src/")[-1], s.size) for s in stats[:8]
        ]
        _PROBE["python_total"] = sum(s.size for s in stats)


class CountAndTimer(KeyedProcessFunction):  # type: ignore[misc]
    """Per key: a count in ValueState and one event-time timer at ``n + keys``, whose firing
    reads and clears the count."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def open(self, runtime_context: Any) -> None:
        from sparktide.common import Types
        from sparktide.datastream.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.fired = 0

    def process_element(self, value: Any, ctx: Any) -> None:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value + self.keys)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if self.fired == 0:
            _end_of_input()
        if self.count.value() is None:
            raise RuntimeError(f"timer {timestamp} found no count")
        self.count.clear()
        self.fired += 1
        return iter(())


# ------------------------------------------------------------------ the child


class _OpenedDatabases:
    """Stands in for ``rocksdict.Rdict`` in the modules that open databases: records every
    database opened (their memory properties are read at the end of the input)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.opened: list[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        db = self.real(*args, **kwargs)
        self.opened.append(db)
        return db

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


_DATABASES: _OpenedDatabases | None = None


def _track_databases() -> None:
    global _DATABASES
    import rocksdict

    from sparktide.runtime.state import rocksdb_backend
    from sparktide.runtime.timers import rocksdb_queue

    _DATABASES = _OpenedDatabases(rocksdict.Rdict)
    rocksdb_backend.Rdict = _DATABASES  # type: ignore[misc]
    rocksdb_queue.Rdict = _DATABASES  # type: ignore[misc]


_PROPERTIES = {
    "memtables": "rocksdb.cur-size-all-mem-tables",
    "table readers": "rocksdb.estimate-table-readers-mem",
    "block cache": "rocksdb.block-cache-usage",
}


def _rocksdb_memory() -> dict[str, int]:
    """Memory properties summed over the column families of every open database (a block
    cache shared by column families counts once: equal figures of one database are one)."""
    total = dict.fromkeys(_PROPERTIES, 0)
    if _DATABASES is None:
        return total
    for db in _DATABASES.opened:
        try:
            names = _DATABASES.real.list_cf(db.path())
        except Exception:  # closed
            continue
        caches: set[int] = set()
        for name in names:
            cf = db if name == "default" else db.get_column_family(name)
            for label, prop in _PROPERTIES.items():
                value = cf.property_int_value(prop) or 0
                if label == "block cache":
                    caches.add(value)
                else:
                    total[label] += value
        total["block cache"] += sum(caches)
    return total


def _du(path: str) -> int:
    size = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # a file removed meanwhile
                size += os.path.getsize(os.path.join(root, f))
    return size


def child(
    backend: str, keys: int, every: int, directory: str, key_type: str = "none"
) -> dict[str, Any]:
    """Run the job once in this process; what the parent prints."""
    from sparktide.common import Types
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.connectors.number_seq import NumberSequenceSource
    from sparktide.datastream.state_backend import (
        EmbeddedRocksDBStateBackend,
        HashMapStateBackend,
    )

    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(1)
    env.get_config().set_watermark_every(every)
    if backend == "rocksdb":
        _track_databases()
        rocksdb = EmbeddedRocksDBStateBackend()
        rocksdb.set_db_storage_paths(directory)
        env.set_state_backend(rocksdb)
    else:
        env.set_state_backend(HashMapStateBackend())
    function = CountAndTimer(keys)
    _PROBE.update(backend=backend, directory=directory, started=time.perf_counter())
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda n, _: n)
    numbers = env.from_source(NumberSequenceSource(0, keys - 1), strategy, "numbers")
    declared = Types.LONG() if key_type == "long" else None
    out = numbers.key_by(lambda n: n, key_type=declared).process(function)
    out.filter(lambda _: False).print()
    env.execute()
    total = time.perf_counter() - _PROBE["started"]
    return {
        "seconds": total,
        "input_seconds": _PROBE.get("input_seconds", total),
        "rss_input_kb": _PROBE.get("rss_input_kb", 0),
        "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "cpu_seconds": time.process_time(),  # all threads: RocksDB's flushes and compactions
        "memory": _PROBE.get("memory", {}),
        "python": _PROBE.get("python", []),
        "python_total": _PROBE.get("python_total", 0),
    }


# ------------------------------------------------------------------ the parent


def run(
    backend: str,
    keys: int,
    every: int,
    limit_mb: int | None,
    trace: bool = False,
    key_type: str = "none",
) -> dict[str, Any] | str:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sparktide-big-state-") as directory:
        cmd = [sys.executable, __file__, "--child", backend, str(keys), str(every), directory]
        cmd.append(key_type)
        if trace:
            cmd.append("--tracemalloc")

        def limit() -> None:
            if limit_mb is not None:
                cap = limit_mb << 20
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

        done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit)
    if done.returncode != 0:
        lines = [x for x in done.stderr.strip().splitlines() if x.strip()]
        return f"failed (exit {done.returncode}): {lines[-1][:120] if lines else ''}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _mb(kb: float) -> str:
    return f"{kb / 1024:,.0f} MB"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        backend, keys, every, directory = argv[1], int(argv[2]), int(argv[3]), argv[4]
        key_type = argv[5]
        if argv[6:] == ["--tracemalloc"]:
            tracemalloc.start()
        print(json.dumps(child(backend, keys, every, directory, key_type)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--keys", default="100000,1000000", help="comma-separated key counts")
    ap.add_argument("--round", type=int, default=100_000, help="records per round")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="heap, rocksdb or both")
    ap.add_argument("--limit-mb", type=int, default=None, help="address-space limit per run")
    ap.add_argument(
        "--key-type",
        choices=("none", "long"),
        default="none",
        help="the key type key_by declares (none: undeclared keys)",
    )
    ap.add_argument(
        "--tracemalloc",
        action="store_true",
        help="trace Python allocations (slower): the largest files at the end of the input",
    )
    args = ap.parse_args(argv)
    sizes = [int(k) for k in args.keys.split(",") if k]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"--backends: unknown backend {b!r}; choose among {', '.join(BACKENDS)}")
    if not sizes or min(sizes) < 1 or args.round < 1:
        ap.error("--keys and --round must be >= 1")
    import sparktide

    print(f"sparktide from {Path(sparktide.__file__).parent}; Python {sys.version.split()[0]}")
    print(f"local runtime, parallelism 1, rounds of {args.round:,} records; per key a ValueState")
    print("and an event-time timer; peak RSS of the run's process (ru_maxrss)")
    print(f"key_by's key_type: {args.key_type}")
    print()
    head = (
        f"| {'keys':>10} | {'backend':<7} | {'peak RSS':>9} | {'RSS input':>9} | "
        f"{'records/s':>9} | {'input s':>7} | {'timers s':>8} | {'CPU s':>6} | "
        "rocksdb at end of input"
    )
    print(head)
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for keys in sizes:
        for backend in backends:
            result = run(backend, keys, args.round, args.limit_mb, args.tracemalloc, args.key_type)
            if isinstance(result, str):
                print(f"| {keys:>10,} | {backend:<7} | {result} |")
                continue
            mem = result["memory"]
            notes = ", ".join(f"{k} {v / 2**20:,.0f} MB" for k, v in mem.items()) if mem else "-"
            fire = result["seconds"] - result["input_seconds"]
            print(
                f"| {keys:>10,} | {backend:<7} | {_mb(result['peak_kb']):>9} | "
                f"{_mb(result['rss_input_kb']):>9} | {keys / result['seconds']:>9,.0f} | "
                f"{result['input_seconds']:>7.1f} | {fire:>8.1f} | {result['cpu_seconds']:>6.1f} | "
                f"{notes}"
            )
            if result["python"]:
                top = ", ".join(f"{f} {size / 2**20:,.1f} MB" for f, size in result["python"])
                print(
                    f"|            | Python heap {result['python_total'] / 2**20:,.0f} MB: {top} |"
                )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
