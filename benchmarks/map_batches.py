"""NEXMark q1 (currency conversion) per record and vectorized, on the local runtime or Spark.

The same bids (the NEXMark generator's, ``--events`` events, ``--splits`` splits) go through
q1 twice:

* ``map``: the query as :mod:`sparktide.nexmark.queries` writes it, a ``Row`` per bid with its
  price times 0.908;
* ``map_batches``: the same step over columns, ``pyarrow.compute.multiply`` on the price column
  of each batch (``sparktide.execution.map-batches.size`` bids at a time).

Both end in a sink that drops the records, so what is measured is reading the bids, the step
and the framework around it. The two forms alternate, best of ``--repeat``; records/s are bids
per second of wall time.

Usage::

    python benchmarks/map_batches.py                        # 200,000 events, best of 3
    python benchmarks/map_batches.py --events 1000000 --repeat 5 --size 8192
    python benchmarks/map_batches.py --runtime spark --splits 2 --parallelism 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.nexmark.config import GeneratorConfig
from sparktide.nexmark.generator import EventTables, generate
from sparktide.nexmark.queries import DOLLAR_TO_EURO, Q1_TYPE, Sources, q1

Q1_COLUMNS = Q1_TYPE.get_field_names()


def q1_batches(bids: pa.RecordBatch) -> pa.RecordBatch:
    """q1 over columns: the bids' price in euros, the other columns as they are."""
    euros = pc.multiply(bids.column("price"), DOLLAR_TO_EURO)
    columns = [euros if name == "price" else bids.column(name) for name in Q1_COLUMNS]
    return pa.RecordBatch.from_arrays(columns, names=Q1_COLUMNS)


class Drop:
    """A sink that drops every record."""

    def invoke(self, value: Any, context: Any) -> None:
        return None


def run(tables: EventTables, vectorized: bool, args: argparse.Namespace) -> float:
    """Seconds of one run of q1 over ``tables``' bids."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime=args.runtime)
    env.set_parallelism(args.parallelism)
    env.configure({"sparktide.execution.map-batches.size": str(args.size)})
    sources = Sources.of_tables(env, tables, splits=args.splits)
    stream = sources.bids().map_batches(q1_batches, Q1_TYPE) if vectorized else q1(sources)
    stream.add_sink(Drop())
    start = time.perf_counter()
    env.execute("q1")
    return time.perf_counter() - start


def best(runs: list[Callable[[], float]], repeat: int) -> list[float]:
    """Best seconds of each of ``runs``, alternating them ``repeat`` times."""
    times = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, one in enumerate(runs):
            times[i] = min(times[i], one())
    return times


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size", type=int, default=4096, help="map-batches.size")
    ap.add_argument("--runtime", choices=("local", "spark"), default="local")
    ap.add_argument("--splits", type=int, default=1)
    ap.add_argument("--parallelism", type=int, default=1)
    args = ap.parse_args(argv)

    tables = generate(GeneratorConfig(events=args.events))
    bids = tables.bids.num_rows
    per_record, vectorized = best(
        [lambda: run(tables, False, args), lambda: run(tables, True, args)],
        args.repeat,
    )
    print(
        f"NEXMark q1, {bids:,} bids, {args.runtime} runtime, {args.splits} split(s), "
        f"parallelism {args.parallelism}, best of {args.repeat}"
    )
    print("| form | seconds | bids/s | ratio |")
    print("|---|---|---|---|")
    for name, seconds in (("map", per_record), (f"map_batches ({args.size})", vectorized)):
        print(f"| {name} | {seconds:.2f} | {bids / seconds:,.0f} | {per_record / seconds:.2f}x |")


if __name__ == "__main__":
    main()
