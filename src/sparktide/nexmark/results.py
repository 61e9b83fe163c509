"""Query results made comparable: a DataStream query's rows and its Spark SQL reference's
rows become the same sorted list of tuples.

Output order is not compared (the SQL reference has none); q4's stream is a running average,
so only its last row per category (the most auctions) is its result; q12 has no reference, its
counts must add up to the bids.

>>> from sparktide.common.types import Row
>>> final_rows("q4", [Row(category=10, avg_price=5.0, auctions=1),
...                   Row(category=10, avg_price=6.0, auctions=2)])
[(10, 6.0, 2)]
>>> final_rows("q2", [Row(auction=2, price=5), Row(auction=1, price=7)])
[(1, 7), (2, 5)]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["final_rows"]


def final_rows(query: str, rows: Iterable[Any]) -> list[tuple[Any, ...]]:
    """The result of ``query`` in ``rows`` (Rows of the stream, or of a Spark DataFrame), as
    sorted tuples."""
    tuples = [tuple(row) for row in rows]
    if query == "q4":
        last: dict[Any, tuple[Any, ...]] = {}
        for row in tuples:
            if row[0] not in last or row[2] > last[row[0]][2]:
                last[row[0]] = row
        tuples = list(last.values())
    return sorted(tuples)
