"""The NEXMark queries in Spark SQL (DataFrame code): the reference results of the
DataStream queries and the native baseline they are timed against.

Each function takes the persons, auctions and bids DataFrames (NEXMark's columns, times as
epoch milliseconds) and returns a batch DataFrame whose columns are the DataStream query's
fields. They follow the SQL of the NEXMark suites (``nexmark-flink``), with its ties: q5 keeps
every auction with the top count of a window, q7 every bid with the top price. q7 takes the
bids of the window (Beam's reading; the Flink suite's ``BETWEEN end - 10 s AND end`` would also
take a bid at exactly ``end``, of the next window). q4 gives the final average per category;
q12 (processing-time windows) has no reference, only a baseline: ``current_timestamp()``
windows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparktide.nexmark.queries import (
    DOLLAR_TO_EURO,
    Q3_CATEGORY,
    Q3_STATES,
    SLIDE_MS,
    WINDOW_MS,
)

__all__ = ["SQL_QUERIES", "Frames"]


@dataclass(frozen=True)
class Frames:
    """The three event DataFrames."""

    persons: Any
    auctions: Any
    bids: Any


def _seconds(ms: int) -> str:
    return f"{ms // 1000} seconds"


def q0(f: Frames) -> Any:
    return f.bids.select("auction", "bidder", "price", "channel", "url", "dateTime", "extra")


def q1(f: Frames) -> Any:
    from pyspark.sql import functions as F

    return f.bids.select(
        "auction",
        "bidder",
        (F.lit(DOLLAR_TO_EURO) * F.col("price")).alias("price"),
        "dateTime",
        "extra",
    )


def q2(f: Frames) -> Any:
    from pyspark.sql import functions as F

    return f.bids.where(F.col("auction") % 123 == 0).select("auction", "price")


def q3(f: Frames) -> Any:
    from pyspark.sql import functions as F

    a = f.auctions.where(F.col("category") == Q3_CATEGORY).alias("A")
    p = f.persons.where(F.col("state").isin(*Q3_STATES)).alias("P")
    return a.join(p, F.col("A.seller") == F.col("P.id")).select(
        "P.name", "P.city", "P.state", "A.id"
    )


def q4(f: Frames) -> Any:
    from pyspark.sql import functions as F

    a, b = f.auctions.alias("A"), f.bids.alias("B")
    joined = a.join(
        b,
        (F.col("A.id") == F.col("B.auction"))
        & F.col("B.dateTime").between(F.col("A.dateTime"), F.col("A.expires")),
    )
    final = joined.groupBy("A.id", "A.category").agg(F.max("B.price").alias("final"))
    return final.groupBy("category").agg(
        F.avg("final").alias("avg_price"), F.count("*").alias("auctions")
    )


def _bounds(window: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return [
        F.unix_millis(window.start).alias("window_start"),
        F.unix_millis(window.end).alias("window_end"),
    ]


def q5(f: Frames) -> Any:
    from pyspark.sql import functions as F

    counts = (
        f.bids.groupBy(
            "auction",
            F.window(F.timestamp_millis("dateTime"), _seconds(WINDOW_MS), _seconds(SLIDE_MS)),
        )
        .count()
        .select("auction", F.col("count").alias("num"), *_bounds(F.col("window")))
    )
    top = counts.groupBy("window_start", "window_end").agg(F.max("num").alias("maxn"))
    return (
        counts.join(top, ["window_start", "window_end"])
        .where(F.col("num") >= F.col("maxn"))
        .select("auction", "num", "window_start", "window_end")
    )


def q7(f: Frames) -> Any:
    from pyspark.sql import functions as F

    bids = f.bids.withColumn("w", F.col("dateTime") - F.col("dateTime") % WINDOW_MS)
    top = bids.groupBy("w").agg(F.max("price").alias("maxprice"))
    return (
        bids.join(top, "w")
        .where(F.col("price") == F.col("maxprice"))
        .select("auction", "price", "bidder", "dateTime", "extra")
    )


def q8(f: Frames) -> Any:
    from pyspark.sql import functions as F

    def start(df: Any) -> Any:
        return (F.col("dateTime") - F.col("dateTime") % WINDOW_MS).alias("starttime")

    p = f.persons.groupBy("id", "name", start(f.persons)).count().drop("count")
    a = f.auctions.groupBy(F.col("seller").alias("id"), start(f.auctions)).count().drop("count")
    return p.join(a, ["id", "starttime"]).select("id", "name", "starttime")


def q11(f: Frames) -> Any:
    from pyspark.sql import functions as F

    return (
        f.bids.groupBy(
            F.col("bidder").alias("key"),
            F.session_window(F.timestamp_millis("dateTime"), _seconds(WINDOW_MS)),
        )
        .count()
        .select("key", *_bounds(F.col("session_window")), "count")
    )


def q12(f: Frames) -> Any:
    from pyspark.sql import functions as F

    return (
        f.bids.groupBy(
            F.col("bidder").alias("key"),
            F.window(F.current_timestamp(), _seconds(WINDOW_MS)),
        )
        .count()
        .select("key", *_bounds(F.col("window")), "count")
    )


SQL_QUERIES: dict[str, Callable[[Frames], Any]] = {
    "q0": q0,
    "q1": q1,
    "q1b": q1,
    "q2": q2,
    "q3": q3,
    "q4": q4,
    "q5": q5,
    "q7": q7,
    "q8": q8,
    "q11": q11,
    "q12": q12,
}
"""Every query's Spark SQL version by name."""
