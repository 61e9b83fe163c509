"""Values between Spark stages: pickled lists next to typed Arrow chunks.

For each shape, ``--records`` values (default 10^5) in one chunk: the microseconds per record
to encode and decode them as a pickled list (what a chunk of untyped values costs) and as an
Arrow chunk (:mod:`sparktide.runtime.execution.arrow_values`), best of ``--repeat``, encode and
decode interleaved. Run: ``python benchmarks/arrow_values.py``.
"""

from __future__ import annotations

import argparse
import datetime
import pickle
import random
import time
from collections.abc import Callable
from functools import partial

from sparktide.common import Types
from sparktide.common.types import Row
from sparktide.runtime.execution.arrow_values import ValueCodec, decode_values


def _shapes(n: int) -> list[tuple[str, object, list[object]]]:
    rnd = random.Random(1)
    keys = [f"key-{i}" for i in range(1000)]
    names = ["key", "count", "total", "flag"]
    start = datetime.datetime(2024, 1, 1)
    return [
        (
            "tuple (str, long, long)",
            Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]),
            [(rnd.choice(keys), rnd.randrange(2**40), i) for i in range(n)],
        ),
        (
            "Row of 4 (str, long, double, bool)",
            Types.ROW_NAMED(names, [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN()]),
            [
                Row.of_values([rnd.choice(keys), i, rnd.random(), i % 2 == 0], names)
                for i in range(n)
            ],
        ),
        ("long", Types.LONG(), [rnd.randrange(-(2**62), 2**62) for _ in range(n)]),
        ("str", Types.STRING(), [rnd.choice(keys) for _ in range(n)]),
        (
            "tuple (str, double)",
            Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
            [(rnd.choice(keys), rnd.random()) for _ in range(n)],
        ),
        (
            "tuple (long, SQL_TIMESTAMP)",
            Types.TUPLE([Types.LONG(), Types.SQL_TIMESTAMP()]),
            [(i, start + datetime.timedelta(milliseconds=i)) for i in range(n)],
        ),
        (
            "tuple (str, Row(long, long))",
            Types.TUPLE([Types.STRING(), Types.ROW([Types.LONG(), Types.LONG()])]),
            [(rnd.choice(keys), Row.of_values([i, 1], ["f0", "f1"])) for i in range(n)],
        ),
        (
            "tuple (long, long)",
            Types.TUPLE([Types.LONG(), Types.LONG()]),
            [(rnd.randrange(1000), 1) for _ in range(n)],
        ),
    ]


def _best(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n = args.records
    print(f"{n:,} values per chunk, best of {args.repeat}; µs per record")
    header = f"{'values':36} | {'pickle enc':>10} | {'dec':>6} | {'both':>6} | "
    header += f"{'arrow enc':>9} | {'dec':>6} | {'both':>6} | {'arrow/pickle':>12}"
    print(header)
    print("-" * len(header))
    for name, type_info, values in _shapes(n):
        codec = ValueCodec.of(type_info)
        assert codec is not None
        encoded = codec.encode(values)
        assert encoded is not None and decode_values(encoded) == values
        payload = pickle.dumps(values, 5)
        arrow_payload = pickle.dumps(encoded, 5)
        runs: list[Callable[[], object]] = [
            partial(pickle.dumps, values, 5),
            partial(pickle.loads, payload),
            lambda c=codec, v=values: pickle.dumps(c.encode(v), 5),
            lambda p=arrow_payload: decode_values(pickle.loads(p)),
        ]
        best = [float("inf")] * 4
        for _ in range(args.repeat):  # interleaved: the machine's noise hits both alike
            best = [min(b, _best(run, 1)) for b, run in zip(best, runs, strict=True)]
        pe, pd, ae, ad = best
        us = [t / n * 1e6 for t in (pe, pd, pe + pd, ae, ad, ae + ad)]
        print(
            f"{name:36} | {us[0]:10.3f} | {us[1]:6.3f} | {us[2]:6.3f} | "
            f"{us[3]:9.3f} | {us[4]:6.3f} | {us[5]:6.3f} | {us[5] / us[2]:11.2f}x"
        )


if __name__ == "__main__":
    main()
