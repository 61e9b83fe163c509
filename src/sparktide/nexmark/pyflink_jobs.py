"""The NEXMark queries on PyFlink's DataStream API, for the runner's ``vs PyFlink`` column.

Run by a Python that has PyFlink (not sparktide)::

    python pyflink_jobs.py QUERY BIDS_FOLDER OUT_OF_ORDER_MS \\
        [--persons PERSONS_FOLDER] [--auctions AUCTIONS_FOLDER] [--collect]

reads the Parquet files of the kinds the query needs with pyarrow (q3 the persons and the
auctions, q4 the auctions and the bids, the others the bids), runs the query at parallelism 1
in thread mode with its results dropped, and prints ``{"seconds": ...}``: the wall time from
building the job to its end, after an untimed warm-up run on the first thousand events of each
kind. With ``--collect`` it runs the query once and prints ``{"seconds": ..., "rows": [...]}``,
every result row as a list of its fields, for comparing them with sparktide's.

The queries mirror :mod:`sparktide.nexmark.queries`, those PyFlink has the means for: q0, q1,
q2 (map, filter), q3 (persons connected to auctions, keyed by seller, a
``KeyedCoProcessFunction`` with value and list state), q4 (auctions connected to bids, keyed by
auction, a ``KeyedCoProcessFunction`` with an event-time timer at each auction's end, then a
running average in a ``KeyedProcessFunction`` keyed by category), q5, q7, q11, q12 (sliding,
tumbling, session and processing-time windows). q8 has none: it is a window co-group, and
PyFlink's DataStream API has no window join or co-group. q12's open processing-time windows
are dropped at the end of input, as Flink does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

WINDOW_MS = 10_000
SLIDE_MS = 2_000
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10
DOLLAR_TO_EURO = 0.908
WARM_UP_EVENTS = 1_000
"""Events of each kind in the untimed warm-up job."""

PERSON_FIELDS = ["id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"]
AUCTION_FIELDS = [
    "id",
    "itemName",
    "description",
    "initialBid",
    "reserve",
    "dateTime",
    "expires",
    "seller",
    "category",
    "extra",
]
BID_FIELDS = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]

LONG_FIELDS = frozenset(
    {"id", "initialBid", "reserve", "dateTime", "expires", "seller", "category"}
    | {"auction", "bidder", "price"}
)
"""The int64 fields of the three kinds; the others are strings."""

# field positions (PyFlink's rows are read by position)
P_ID = PERSON_FIELDS.index("id")
P_NAME = PERSON_FIELDS.index("name")
P_CITY = PERSON_FIELDS.index("city")
P_STATE = PERSON_FIELDS.index("state")
P_TIME = PERSON_FIELDS.index("dateTime")
A_ID = AUCTION_FIELDS.index("id")
A_TIME = AUCTION_FIELDS.index("dateTime")
A_EXPIRES = AUCTION_FIELDS.index("expires")
A_SELLER = AUCTION_FIELDS.index("seller")
A_CATEGORY = AUCTION_FIELDS.index("category")
B_AUCTION = BID_FIELDS.index("auction")
B_BIDDER = BID_FIELDS.index("bidder")
B_PRICE = BID_FIELDS.index("price")
B_TIME = BID_FIELDS.index("dateTime")
B_EXTRA = BID_FIELDS.index("extra")

KINDS_READ = {"q3": ("persons", "auctions"), "q4": ("auctions", "bids")}
"""The kinds of events a query reads, when not only the bids."""
QUERY_NAMES = ("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q11", "q12")


@dataclass
class Events:
    """The events of one job, each kind as a list of tuples in its fields' order."""

    persons: list[tuple[Any, ...]] = field(default_factory=list)
    auctions: list[tuple[Any, ...]] = field(default_factory=list)
    bids: list[tuple[Any, ...]] = field(default_factory=list)

    def head(self, n: int) -> Events:
        """The first ``n`` events of each kind."""
        return Events(self.persons[:n], self.auctions[:n], self.bids[:n])


def _read(folder: str, fields: list[str]) -> list[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    table = pq.read_table(folder)
    columns = [table.column(name).to_pylist() for name in fields]
    return list(zip(*columns, strict=True))


def read_events(query: str, folders: dict[str, str | None]) -> Events:
    """The events ``query`` reads, from the Parquet folders of each kind."""
    fields = {"persons": PERSON_FIELDS, "auctions": AUCTION_FIELDS, "bids": BID_FIELDS}
    events = Events()
    for kind in KINDS_READ.get(query, ("bids",)):
        folder = folders.get(kind)
        if folder is None:
            raise ValueError(f"query {query} reads the {kind}: pass --{kind} FOLDER")
        setattr(events, kind, _read(folder, fields[kind]))
    return events


def build(query: str, env: Any, events: Events, bound: int) -> Any:
    """The query's output stream on ``env``, reading ``events``."""
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

    class Assigner(TimestampAssigner):  # type: ignore[misc]
        def __init__(self, position: int) -> None:
            self.position = position

        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[self.position])

    def row_type(names: list[str]) -> Any:
        return Types.ROW_NAMED(names, [long() if n in LONG_FIELDS else text() for n in names])

    def source(rows: list[tuple[Any, ...]], names: list[str], time_at: int) -> Any:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(bound)
        ).with_timestamp_assigner(Assigner(time_at))
        stream = env.from_collection(rows, type_info=row_type(names))
        return stream.assign_timestamps_and_watermarks(strategy)

    if query == "q3":
        persons = source(events.persons, PERSON_FIELDS, P_TIME)
        return _q3(persons, source(events.auctions, AUCTION_FIELDS, A_TIME))
    if query == "q4":
        auctions = source(events.auctions, AUCTION_FIELDS, A_TIME)
        return _q4(auctions, source(events.bids, BID_FIELDS, B_TIME))

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
            if bid[B_PRICE] > acc[0]:
                return (bid[B_PRICE], [bid])
            if bid[B_PRICE] == acc[0]:
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
                    yield Row(
                        bid[B_AUCTION], bid[B_PRICE], bid[B_BIDDER], bid[B_TIME], bid[B_EXTRA]
                    )

    bid_type = row_type(BID_FIELDS)
    stream = source(events.bids, BID_FIELDS, B_TIME)
    ms = Time.milliseconds

    def count_row() -> Any:
        return Types.ROW([long(), long(), long(), long()])

    if query == "q0":
        out = stream.map(lambda b: b, output_type=bid_type)
    elif query == "q1":
        out = stream.map(
            lambda b: Row(b[0], b[1], DOLLAR_TO_EURO * b[2], b[5], b[6]),
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
            f"query {query!r} has no PyFlink version; pass one of {' '.join(QUERY_NAMES)}"
        )
    return out


def _q3(persons: Any, auctions: Any) -> Any:
    """Auctions of category 10 with their seller's name, city and state, for sellers in
    Oregon, Idaho and California: ``(name, city, state, auction id)``."""
    from pyflink.common import Row, Types
    from pyflink.datastream import KeyedCoProcessFunction
    from pyflink.datastream.state import (  # type: ignore[import-not-found]
        ListStateDescriptor,
        ValueStateDescriptor,
    )

    class SellerJoin(KeyedCoProcessFunction):  # type: ignore[misc]
        """Keyed by person id: the person (input 1) in state, the auctions that came before
        it (input 2) waiting in a list."""

        def open(self, runtime_context: Any) -> None:
            self.person = runtime_context.get_state(
                ValueStateDescriptor("person", Types.PICKLED_BYTE_ARRAY())
            )
            self.waiting = runtime_context.get_list_state(
                ListStateDescriptor("auctions", Types.LONG())
            )

        def process_element1(self, person: Any, ctx: Any) -> Any:
            self.person.update(person)
            for auction in self.waiting.get() or ():
                yield Row(person[P_NAME], person[P_CITY], person[P_STATE], auction)
            self.waiting.clear()

        def process_element2(self, auction: Any, ctx: Any) -> Any:
            person = self.person.value()
            if person is None:
                self.waiting.add(auction[A_ID])
            else:
                yield Row(person[P_NAME], person[P_CITY], person[P_STATE], auction[A_ID])

    text = Types.STRING
    return (
        persons.filter(lambda p: p[P_STATE] in Q3_STATES)
        .connect(auctions.filter(lambda a: a[A_CATEGORY] == Q3_CATEGORY))
        .key_by(lambda p: p[P_ID], lambda a: a[A_SELLER], key_type=Types.LONG())
        .process(SellerJoin(), output_type=Types.ROW([text(), text(), text(), Types.LONG()]))
    )


def _q4(auctions: Any, bids: Any) -> Any:
    """Per category, the running average of closing prices (the highest bid of each auction
    within its lifetime): ``(category, average, auctions)``, the last row per category the
    final average."""
    from pyflink.common import Row, Types
    from pyflink.datastream import (
        KeyedCoProcessFunction,
        KeyedProcessFunction,
    )
    from pyflink.datastream.state import (
        ListStateDescriptor,
        ValueStateDescriptor,
    )

    class WinningBid(KeyedCoProcessFunction):  # type: ignore[misc]
        """Keyed by auction id: the highest bid with ``dateTime <= bid.dateTime <= expires``.

        The auction (input 1) sets an event-time timer at its ``expires``; bids (input 2) that
        come before their auction wait in state, each with a timer at its own time that drops
        it if the auction has not come by then. At ``expires`` the winning bid goes out as
        ``(auction, category, price)`` and the state is cleared.
        """

        def open(self, runtime_context: Any) -> None:
            self.auction = runtime_context.get_state(
                ValueStateDescriptor("auction", Types.PICKLED_BYTE_ARRAY())
            )
            self.best = runtime_context.get_state(ValueStateDescriptor("best", Types.LONG()))
            self.early = runtime_context.get_list_state(
                ListStateDescriptor("early", Types.TUPLE([Types.LONG(), Types.LONG()]))
            )

        def _offer(self, auction: Any, at: int, price: int) -> None:
            if auction[A_TIME] <= at <= auction[A_EXPIRES]:
                best = self.best.value()
                if best is None or price > best:
                    self.best.update(price)

        def process_element1(self, auction: Any, ctx: Any) -> None:
            self.auction.update(auction)
            for at, price in self.early.get() or ():
                self._offer(auction, at, price)
            self.early.clear()
            ctx.timer_service().register_event_time_timer(auction[A_EXPIRES])

        def process_element2(self, bid: Any, ctx: Any) -> None:
            auction = self.auction.value()
            if auction is not None:
                self._offer(auction, bid[B_TIME], bid[B_PRICE])
            else:
                self.early.add((bid[B_TIME], bid[B_PRICE]))
                ctx.timer_service().register_event_time_timer(bid[B_TIME])

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            auction = self.auction.value()
            if auction is None:  # bids whose auction never came (or came and closed)
                kept = [(t, p) for t, p in self.early.get() or () if t > timestamp]
                self.early.update(kept)
            elif timestamp == auction[A_EXPIRES]:
                best = self.best.value()
                if best is not None:
                    yield Row(auction[A_ID], auction[A_CATEGORY], best)
                self.auction.clear()
                self.best.clear()

    class RunningAverage(KeyedProcessFunction):  # type: ignore[misc]
        """Keyed by category: the average of the winning prices so far, on every one."""

        def open(self, runtime_context: Any) -> None:
            self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, winner: Any, ctx: Any) -> Any:
            total = (self.total.value() or 0) + winner[2]
            count = (self.count.value() or 0) + 1
            self.total.update(total)
            self.count.update(count)
            yield Row(winner[1], total / count, count)

    winners = (
        auctions.connect(bids)
        .key_by(lambda a: a[A_ID], lambda b: b[B_AUCTION], key_type=Types.LONG())
        .process(WinningBid(), output_type=Types.ROW([Types.LONG()] * 3))
    )
    return winners.key_by(lambda w: w[1], key_type=Types.LONG()).process(
        RunningAverage(),
        output_type=Types.ROW([Types.LONG(), Types.DOUBLE(), Types.LONG()]),
    )


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="pyflink_jobs.py", description=__doc__)
    ap.add_argument("query", choices=QUERY_NAMES)
    ap.add_argument("bids", help="the folder of the bids' Parquet files")
    ap.add_argument("bound", type=int, help="the out-of-orderness bound of the watermarks, ms")
    ap.add_argument("--persons", default=None, help="the folder of the persons' Parquet files")
    ap.add_argument("--auctions", default=None, help="the folder of the auctions' files")
    ap.add_argument("--collect", action="store_true", help="run once and print the rows")
    return ap.parse_args(argv)


def main(argv: list[str]) -> None:
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    args = _parse(argv)
    query = args.query
    try:
        events = read_events(
            query, {"persons": args.persons, "auctions": args.auctions, "bids": args.bids}
        )
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    config = Configuration()
    config.set_string("python.execution-mode", "thread")
    config.set_string("python.executable", sys.executable)
    if args.collect:
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_parallelism(1)
        start = time.perf_counter()
        with build(query, env, events, args.bound).execute_and_collect() as results:
            rows = [list(row) for row in results]
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "rows": rows}))
        return
    # a warm-up job on a few events first (untimed): the JVM, the Python bridge and the
    # mini-cluster start once, as a Spark session is started once for the other contenders
    for sample in (events.head(WARM_UP_EVENTS), events):
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_parallelism(1)
        start = time.perf_counter()
        build(query, env, sample, args.bound).filter(lambda v: False).print()
        env.execute(f"nexmark {query}")
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1:])
