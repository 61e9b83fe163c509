"""The NEXMark queries on PyFlink's DataStream API, for the runner's ``vs PyFlink`` column.

Run by a Python that has PyFlink (not sparktide): ``python pyflink_jobs.py QUERY BIDS_FOLDER
OUT_OF_ORDER_MS`` reads the bids' Parquet files with pyarrow, runs the query at parallelism 1
in thread mode with its results dropped, and prints ``{"seconds": ...}``: the wall time from
building the job to its end, after an untimed warm-up run on the first thousand bids. The
queries mirror :mod:`sparktide.nexmark.queries`, those PyFlink has the means for (q0, q1, q2,
q5, q7, q11, q12: PyFlink has no window join or co-group); q12's open processing-time windows
are dropped at the end of input, as Flink does.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

WINDOW_MS = 10_000
SLIDE_MS = 2_000
BID_FIELDS = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]


def _bids(folder: str) -> list[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    table = pq.read_table(folder)
    columns = [table.column(name).to_pylist() for name in BID_FIELDS]
    return list(zip(*columns, strict=True))


def build(query: str, env: Any, bids: list[tuple[Any, ...]], bound: int) -> Any:
    """The query's job on ``env``, its output dropped."""
    from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy  # type: ignore[import-not-found]
    from pyflink.common.watermark_strategy import TimestampAssigner  # type: ignore[import-not-found]
    from pyflink.datastream import AggregateFunction, ProcessWindowFunction  # type: ignore[import-not-found]
    from pyflink.datastream.functions import ProcessAllWindowFunction  # type: ignore[import-not-found]
    from pyflink.datastream.window import (  # type: ignore[import-not-found]
        EventTimeSessionWindows,
        SlidingEventTimeWindows,
        TumblingEventTimeWindows,
        TumblingProcessingTimeWindows,
    )

    # a fresh type each time: a type that has been turned into its Java twin holds a lock
    # and cannot be pickled with a window's state descriptor
    def long() -> Any:
        return Types.LONG()

    def text() -> Any:
        return Types.STRING()

    bid_type = Types.ROW_NAMED(BID_FIELDS, [long(), long(), long(), text(), text(), long(), text()])

    class Assigner(TimestampAssigner):  # type: ignore[misc]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[5])

    class Count(AggregateFunction):  # type: ignore[misc]
        def create_accumulator(self) -> int:
            return 0

        def add(self, value: Any, acc: int) -> int:
            return acc + 1

        def get_result(self, acc: int) -> int:
            return acc

        def merge(self, a: int, b: int) -> int:
            return a + b

    class WithWindow(ProcessWindowFunction):  # type: ignore[misc]
        def process(self, key: Any, context: Any, counts: Any) -> Any:
            window = context.window()
            for n in counts:
                yield Row(key, window.start, window.end, n)

    class TopCounts(ProcessWindowFunction):  # type: ignore[misc]
        def process(self, key: Any, context: Any, rows: Any) -> Any:
            rows = list(rows)
            top = max(r[3] for r in rows)
            for r in rows:
                if r[3] == top:
                    yield Row(r[0], top, r[1], r[2])

    class HighestBids(AggregateFunction):  # type: ignore[misc]
        def create_accumulator(self) -> Any:
            return (-1, [])

        def add(self, bid: Any, acc: Any) -> Any:
            if bid[2] > acc[0]:
                return (bid[2], [bid])
            if bid[2] == acc[0]:
                acc[1].append(bid)
            return acc

        def get_result(self, acc: Any) -> Any:
            return acc[1]

        def merge(self, a: Any, b: Any) -> Any:
            if a[0] != b[0]:
                return a if a[0] > b[0] else b
            return (a[0], a[1] + b[1])

    class EmitBids(ProcessAllWindowFunction):  # type: ignore[misc]
        def process(self, context: Any, elements: Any) -> Any:
            for found in elements:
                for bid in found:
                    yield Row(bid[0], bid[2], bid[1], bid[5], bid[6])

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(bound)
    ).with_timestamp_assigner(Assigner())
    stream = env.from_collection(bids, type_info=bid_type).assign_timestamps_and_watermarks(
        strategy
    )
    ms = Time.milliseconds

    def count_row() -> Any:
        return Types.ROW([long(), long(), long(), long()])

    if query == "q0":
        out = stream.map(lambda b: b, output_type=bid_type)
    elif query == "q1":
        out = stream.map(
            lambda b: Row(b[0], b[1], 0.908 * b[2], b[5], b[6]),
            output_type=Types.ROW([long(), long(), Types.DOUBLE(), long(), text()]),
        )
    elif query == "q2":
        out = stream.filter(lambda b: b[0] % 123 == 0).map(
            lambda b: Row(b[0], b[2]), output_type=Types.ROW([long(), long()])
        )
    elif query == "q5":
        counts = (
            stream.key_by(lambda b: b[0], key_type=long())
            .window(SlidingEventTimeWindows.of(ms(WINDOW_MS), ms(SLIDE_MS)))
            .aggregate(Count(), WithWindow(), accumulator_type=long(), output_type=count_row())
        )
        out = (
            counts.key_by(lambda r: r[2], key_type=long())
            .window(TumblingEventTimeWindows.of(ms(SLIDE_MS)))
            .process(TopCounts(), output_type=count_row())
        )
    elif query == "q7":
        out = stream.window_all(TumblingEventTimeWindows.of(ms(WINDOW_MS))).aggregate(
            HighestBids(),
            EmitBids(),
            accumulator_type=Types.PICKLED_BYTE_ARRAY(),
            output_type=Types.ROW([long(), long(), long(), long(), text()]),
        )
    elif query in ("q11", "q12"):
        assigner = (
            EventTimeSessionWindows.with_gap(ms(WINDOW_MS))
            if query == "q11"
            else TumblingProcessingTimeWindows.of(ms(WINDOW_MS))
        )
        out = (
            stream.key_by(lambda b: b[1], key_type=long())
            .window(assigner)
            .aggregate(Count(), WithWindow(), accumulator_type=long(), output_type=count_row())
        )
    else:
        raise ValueError(
            f"query {query!r} has no PyFlink version; pass one of q0 q1 q2 q5 q7 q11 q12"
        )
    out.filter(lambda v: False).print()
    return out


def main(argv: list[str]) -> None:
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    query, folder, bound = argv[0], argv[1], int(argv[2])
    bids = _bids(folder)
    config = Configuration()
    config.set_string("python.execution-mode", "thread")
    config.set_string("python.executable", sys.executable)
    # a warm-up job on a few bids first (untimed): the JVM, the Python bridge and the
    # mini-cluster start once, as a Spark session is started once for the other contenders
    for sample in (bids[:1_000], bids):
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_parallelism(1)
        start = time.perf_counter()
        build(query, env, sample, bound)
        env.execute(f"nexmark {query}")
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1:])
