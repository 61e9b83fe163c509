"""What one record costs as a :class:`~sparktide.common.types.Row`, next to a named tuple and a
plain tuple.

A NEXMark bid (7 fields) in each form: nanoseconds per operation for building it from a tuple of
its values (what a source or a codec does), building it with keywords (what a user function
does), reading a field as an attribute and by position, a ``lambda r: r.price * 0.9`` map over
a list, ``as_dict`` (``_asdict`` for the named tuple), hashing, and a pickle round trip of a list
of them. Best of ``--repeat``; the contenders run interleaved, operation by operation.
``--earlier FILE`` adds a column for the ``Row`` of an earlier version (its
``sparktide/common/types.py``, e.g. from ``git show REV:src/sparktide/common/types.py``).

Run: ``python benchmarks/rows.py [--earlier old_types.py]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import pickle
import sys
import timeit
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sparktide.common.types import Row, row_maker

NAMES = ("auction", "bidder", "price", "channel", "url", "dateTime", "extra")
VALUES = (1001, 2002, 4_250, "Google", "https://example.com/item/1001", 1_700_000_000_000, "")
Bid = namedtuple("Bid", NAMES)  # type: ignore[misc]


@dataclass(frozen=True)
class Contender:
    """One form of a record: how it is built from values and with keywords, and its forms of
    the operations that differ between contenders."""

    name: str
    make: str  # an expression of ``values`` (and ``names``)
    keywords: str | None
    attribute: str  # an expression of ``r``
    as_dict: str
    env: dict[str, Any]


def _earlier_module(path: Path) -> ModuleType:
    """The module at ``path``, importable by its name (so its rows pickle)."""
    spec = importlib.util.spec_from_file_location("earlier_types", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--earlier {path}: not a Python file; give a types.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_KEYWORDS = ", ".join(f"{n}=values[{i}]" for i, n in enumerate(NAMES))


def contenders(earlier: Path | None) -> list[Contender]:
    base = {"values": VALUES, "names": NAMES, "names_list": list(NAMES)}
    found = [
        Contender(
            "Row",
            "make(values)",
            f"Row({_KEYWORDS})",
            "r.price",
            "r.as_dict()",
            {**base, "Row": Row, "make": row_maker(NAMES)},
        ),
    ]
    if earlier is not None:
        old = _earlier_module(earlier).Row
        found.append(
            Contender(
                "earlier Row",
                "Row.of_values(values, names_list)",
                f"Row({_KEYWORDS})",
                "r.price",
                "r.as_dict()",
                {**base, "Row": old},
            )
        )
    found += [
        Contender(
            "namedtuple",
            "Bid._make(values)",
            f"Bid({_KEYWORDS})",
            "r.price",
            "r._asdict()",
            {**base, "Bid": Bid},
        ),
        Contender("tuple", "values", None, "r[2]", "dict(zip(names, r))", base),
    ]
    return found


def _ns(stmt: str, env: dict[str, Any], number: int, repeat: int, per: int = 1) -> float:
    timer = timeit.Timer(stmt, globals=env)
    return min(timer.repeat(repeat=repeat, number=number)) / number / per * 1e9


def measure(cs: list[Contender], number: int, repeat: int, rows: int) -> dict[str, list[str]]:
    """The table: per operation, one cell per contender (ns per operation)."""
    envs = []
    for c in cs:
        env = dict(c.env)
        env["r"] = eval(c.make, env)
        env["rs"] = [eval(c.make, env) for _ in range(rows)]
        env["f"] = eval(f"lambda r: {c.attribute} * 0.9")
        env["pickle"] = pickle
        envs.append(env)
    operations = {
        "build from values": lambda c: c.make,
        "build with keywords": lambda c: c.keywords,
        "attribute (r.price)": lambda c: c.attribute,
        "index (r[2])": lambda c: "r[2]",
        "as_dict": lambda c: c.as_dict,
        "hash": lambda c: "hash(r)",
    }
    table: dict[str, list[str]] = {}
    for op, stmt_of in operations.items():
        cells = []
        for c, env in zip(cs, envs, strict=True):
            stmt = stmt_of(c)
            cells.append("-" if stmt is None else f"{_ns(stmt, env, number, repeat):,.0f}")
        table[op] = cells
    per_row = {
        "map lambda r: r.price * 0.9": "list(map(f, rs))",
        "pickle round trip": "pickle.loads(pickle.dumps(rs, 5))",
    }
    for op, stmt in per_row.items():
        table[op] = [f"{_ns(stmt, env, max(1, number // rows), repeat, rows):,.0f}" for env in envs]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--earlier", type=Path, help="types.py of an earlier version")
    parser.add_argument("--number", type=int, default=200_000, help="operations per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings per cell (best kept)")
    parser.add_argument("--rows", type=int, default=10_000, help="rows in a list (map, pickle)")
    args = parser.parse_args()
    cs = contenders(args.earlier)
    table = measure(cs, args.number, args.repeat, args.rows)
    print(f"ns per operation, a {len(NAMES)}-field bid, best of {args.repeat}")
    print("| operation | " + " | ".join(c.name for c in cs) + " |")
    print("|---|" + "---:|" * len(cs))
    for op, cells in table.items():
        print(f"| {op} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
