"""The fixed cost of a Python task on Spark: the JVM and its Python workers over TCP on loopback
(from Spark's own daemon, and from sparktide's, whose workers acknowledge at once: see
:mod:`sparktide.spark.worker_daemon`) or over Unix sockets
(``spark.python.unix.domain.socket.enabled``).

Each transport runs in a JVM of its own (the setting is read when the SparkContext starts): a
``local[2]`` session, nothing cached, one row per partition, so what is timed is the cost of the
jobs and tasks, not of data. Per job form, the median wall time of ``--runs`` runs after
``--warm-up`` runs (the JVM compiles Spark's code while the first jobs run):

* ``range(4)`` collected: a job without Python;
* one ``mapInArrow`` over 4 partitions, collected: 4 Python tasks on 2 cores;
* two ``mapInArrow`` stages with an exchange between them (``repartition(2)``), as a
  micro-batch's source task and keyed stage run, to Arrow.

Usage::

    python benchmarks/python_tasks.py
    python benchmarks/python_tasks.py --runs 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

FORMS = ("range(4) collected", "mapInArrow, 4 tasks", "mapInArrow -> exchange -> mapInArrow")
SETTING = "spark.python.unix.domain.socket.enabled"
TRANSPORTS = {"tcp": "TCP", "tcp-ack": "TCP, quick ACKs", "unix": "Unix sockets"}


def _identity(batches: Iterator[Any]) -> Iterator[Any]:
    yield from batches


def _median_ms(run: Callable[[], object], runs: int, warm_up: int) -> float:
    times = []
    for i in range(warm_up + runs):
        start = time.perf_counter()
        run()
        if i >= warm_up:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(transport: str, runs: int, warm_up: int) -> dict[str, float]:
    """The median ms of each of :data:`FORMS` in a new ``local[2]`` JVM over ``transport``
    (a key of :data:`TRANSPORTS`)."""
    from pyspark.sql import SparkSession

    from sparktide.spark import worker_daemon

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config(SETTING, str(transport == "unix").lower())
    )
    if transport == "tcp-ack":
        builder = builder.config(worker_daemon.DAEMON_MODULE_SETTING, worker_daemon.__name__)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(0, 4, 1, 4)
    forms: list[Callable[[], object]] = [
        df.collect,
        lambda: df.mapInArrow(_identity, df.schema).collect(),
        lambda: (
            df.mapInArrow(_identity, df.schema)
            .repartition(2)
            .mapInArrow(_identity, df.schema)
            .toArrow()
        ),
    ]
    out = {name: _median_ms(form, runs, warm_up) for name, form in zip(FORMS, forms, strict=True)}
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warm-up", type=int, default=10)
    parser.add_argument("--child", choices=tuple(TRANSPORTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.runs, args.warm_up)))
        return
    results = {}
    for transport in TRANSPORTS:
        command = [sys.executable, __file__, "--child", transport, "--runs", str(args.runs)]
        command += ["--warm-up", str(args.warm_up)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        results[transport] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.runs} runs per form (ms)\n")
    print(f"| job | {' | '.join(TRANSPORTS.values())} |")
    print(f"|---|{'---:|' * len(TRANSPORTS)}")
    for name in FORMS:
        print(f"| {name} | {' | '.join(f'{results[t][name]:.0f}' for t in TRANSPORTS)} |")


if __name__ == "__main__":
    main()
