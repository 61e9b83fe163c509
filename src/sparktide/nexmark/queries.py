"""The NEXMark queries written with sparktide's DataStream API, as a user would write them.

Each query takes :class:`Sources` (the persons, auctions and bids streams, with event time and
watermarks) and returns the stream of its results, typed ``Types.ROW_NAMED`` so that
``to_dataframe()`` gives named columns:

====  =====================================================================================
q0    pass-through: every bid (``map``)
q1    currency conversion: the bid's price in euros, ``0.908 * price`` (``map``)
q2    selection: ``(auction, price)`` of the bids on auctions ``auction % 123 == 0``
q3    local item suggestion: ``(name, city, state, id)`` of auctions of category 10 by sellers
      in OR, ID, CA (a ``KeyedCoProcessFunction`` joining auctions to their seller, in state)
q4    average closing price per category: each auction's highest bid within
      ``[dateTime, expires]`` (a ``KeyedCoProcessFunction`` with an event-time timer at
      ``expires``), then a running average per category
q5    hot items: per 10 s window sliding every 2 s, the auctions with the most bids (sliding
      ``count()``, then a window over the counts of each window keeping every top count)
q7    highest bid: per 10 s tumbling window, every bid with the top price (``window_all``)
q8    new users: persons who opened an auction in the 10 s tumbling window in which they
      registered (a window ``co_group``)
q11   user sessions: bids per bidder and session of 10 s inactivity (session ``count()``)
q12   processing-time windows: bids per bidder per 10 s of processing time
====  =====================================================================================

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.nexmark.config import GeneratorConfig
>>> from sparktide.nexmark.generator import generate
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> sources = Sources.of_tables(env, generate(GeneratorConfig(events=2_000)))
>>> rows = list(QUERIES["q2"](sources).execute_and_collect())
>>> rows[0]
Row(auction=1107, price=92980)
>>> sorted({row.auction for row in rows})
[1107]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sparktide.common import Duration, Time, WatermarkStrategy
from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.types import Row
from sparktide.datastream import (
    AggregateFunction,
    CoGroupFunction,
    DataStream,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import ListStateDescriptor, ValueStateDescriptor
from sparktide.datastream.window import (
    EventTimeSessionWindows,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from sparktide.nexmark.generator import EventTables
from sparktide.nexmark.schema import AUCTION_TYPE, BID_TYPE, PERSON_TYPE
from sparktide.nexmark.table_source import TableSource

__all__ = ["EVENT_TIME_QUERIES", "QUERIES", "DateTimeAssigner", "Sources"]

WINDOW_MS = 10_000
"""The window size of q5, q7, q8 and the session gap of q11 and window of q12."""
SLIDE_MS = 2_000
"""The slide of q5's windows."""
DOLLAR_TO_EURO = 0.908
"""q1's exchange rate."""
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10


class DateTimeAssigner:
    """Event time = the record's ``dateTime`` field."""

    def extract_timestamp(self, value: Row, record_timestamp: int) -> int:
        result: int = value.dateTime
        return result


def strategy(out_of_order_ms: int) -> WatermarkStrategy:
    """The watermark of every NEXMark source: bounded out-of-orderness by the generator's
    bound, event time from ``dateTime``."""
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(out_of_order_ms)
    ).with_timestamp_assigner(DateTimeAssigner())


@dataclass(frozen=True)
class Sources:
    """The three NEXMark streams of one job, with event time and watermarks; each is built
    only when a query asks for it."""

    persons: Callable[[], DataStream]
    auctions: Callable[[], DataStream]
    bids: Callable[[], DataStream]

    @staticmethod
    def of_tables(
        env: StreamExecutionEnvironment,
        tables: EventTables,
        splits: int = 1,
        out_of_order_ms: int = 0,
    ) -> Sources:
        """Streams reading generated tables (``splits`` contiguous splits each)."""

        def read(name: str, table: Any, type_info: TypeInformation) -> Callable[[], DataStream]:
            def build() -> DataStream:
                source = TableSource(table, type_info, splits)
                return env.from_source(source, strategy(out_of_order_ms), name)

            return build

        return Sources(
            read("persons", tables.persons, PERSON_TYPE),
            read("auctions", tables.auctions, AUCTION_TYPE),
            read("bids", tables.bids, BID_TYPE),
        )

    @staticmethod
    def of_frames(
        env: StreamExecutionEnvironment,
        persons: Any,
        auctions: Any,
        bids: Any,
        out_of_order_ms: int = 0,
        streaming: bool = False,
    ) -> Sources:
        """Streams reading Spark DataFrames (bounded, or ``streaming`` ones), one split per
        partition (per micro-batch when streaming); event time is the ``dateTime`` column,
        so that Spark may run built-in window aggregates on columns."""
        read_frame = env.from_stream if streaming else env.from_dataframe
        bounded = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(out_of_order_ms)
        )

        def read(name: str, df: Any) -> Callable[[], DataStream]:
            def build() -> DataStream:
                stream: DataStream = read_frame(
                    df, bounded, timestamp_column="dateTime", source_name=name
                )
                return stream

            return build

        return Sources(read("persons", persons), read("auctions", auctions), read("bids", bids))


def _row_type(names: list[str], types: list[TypeInformation]) -> TypeInformation:
    return Types.ROW_NAMED(names, types)


Q1_TYPE = _row_type(
    ["auction", "bidder", "price", "dateTime", "extra"],
    [Types.LONG(), Types.LONG(), Types.DOUBLE(), Types.LONG(), Types.STRING()],
)
Q2_TYPE = _row_type(["auction", "price"], [Types.LONG(), Types.LONG()])
Q3_TYPE = _row_type(
    ["name", "city", "state", "id"], [Types.STRING(), Types.STRING(), Types.STRING(), Types.LONG()]
)
Q4_TYPE = _row_type(
    ["category", "avg_price", "auctions"], [Types.LONG(), Types.DOUBLE(), Types.LONG()]
)
_WINNER_TYPE = _row_type(["auction", "category", "price"], [Types.LONG()] * 3)
Q5_TYPE = _row_type(["auction", "num", "window_start", "window_end"], [Types.LONG()] * 4)
Q7_TYPE = _row_type(
    ["auction", "price", "bidder", "dateTime", "extra"],
    [Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.STRING()],
)
Q8_TYPE = _row_type(["id", "name", "starttime"], [Types.LONG(), Types.STRING(), Types.LONG()])


# ---------------------------------------------------------------------------- q0, q1, q2


def q0(sources: Sources) -> DataStream:
    """Pass-through: every bid as it is."""
    return sources.bids().map(lambda bid: bid, output_type=BID_TYPE)


def q1(sources: Sources) -> DataStream:
    """Every bid with its price in euros."""
    return sources.bids().map(
        lambda bid: Row(
            auction=bid.auction,
            bidder=bid.bidder,
            price=DOLLAR_TO_EURO * bid.price,
            dateTime=bid.dateTime,
            extra=bid.extra,
        ),
        output_type=Q1_TYPE,
    )


def bids_in_euros(bids: Any) -> Any:
    """q1 over columns: a batch of bids (a ``pyarrow.RecordBatch``) with the price in euros."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = ["auction", "bidder", "price", "dateTime", "extra"]  # Q1_TYPE's fields
    columns = [bids.column(name) for name in names]
    columns[2] = pc.multiply(pc.cast(bids.column("price"), pa.float64()), DOLLAR_TO_EURO)
    return pa.RecordBatch.from_arrays(columns, names=names)


def q1b(sources: Sources) -> DataStream:
    """q1 written over columns (``map_batches``): the same records as :func:`q1`."""
    return sources.bids().map_batches(bids_in_euros, Q1_TYPE)


def q2(sources: Sources) -> DataStream:
    """``(auction, price)`` of the bids on every 123rd auction id."""
    return (
        sources.bids()
        .filter(lambda bid: bid.auction % 123 == 0)
        .map(lambda bid: Row(auction=bid.auction, price=bid.price), output_type=Q2_TYPE)
    )


# ---------------------------------------------------------------------------- q3


class SellerJoin(KeyedCoProcessFunction):
    """Keyed by person id: keeps the person (input 1) and the auctions that came before it
    (input 2); emits ``(name, city, state, auction id)`` once both are there."""

    def open(self, runtime_context: Any) -> None:
        self.person = runtime_context.get_state(
            ValueStateDescriptor("person", Types.PICKLED_BYTE_ARRAY())
        )
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("auctions", Types.LONG()))

    def process_element1(self, person: Row, ctx: Any) -> Iterator[Row]:
        self.person.update(person)
        for auction in self.waiting.get() or ():
            yield Row(name=person.name, city=person.city, state=person.state, id=auction)
        self.waiting.clear()

    def process_element2(self, auction: Row, ctx: Any) -> Iterator[Row]:
        person = self.person.value()
        if person is None:
            self.waiting.add(auction.id)
        else:
            yield Row(name=person.name, city=person.city, state=person.state, id=auction.id)


def q3(sources: Sources) -> DataStream:
    """Auctions of category 10 with their seller's name, city and state, for sellers in
    Oregon, Idaho and California."""
    persons = sources.persons().filter(lambda p: p.state in Q3_STATES)
    auctions = sources.auctions().filter(lambda a: a.category == Q3_CATEGORY)
    return (
        persons.connect(auctions)
        .key_by(lambda p: p.id, lambda a: a.seller, key_type=Types.LONG())
        .process(SellerJoin(), output_type=Q3_TYPE)
    )


# ---------------------------------------------------------------------------- q4


class WinningBid(KeyedCoProcessFunction):
    """Keyed by auction id: the highest bid with ``dateTime <= bid.dateTime <= expires``.

    The auction (input 1) registers an event-time timer at its ``expires``; bids (input 2)
    that come before their auction wait in state, each with a timer at its own time that drops
    it if the auction has not come by then (an auction is never later than its bids' time
    allows: ``auction.dateTime <= bid.dateTime``). When the ``expires`` timer fires, the
    winning bid goes out as ``(auction, category, price)`` and the state is cleared.
    """

    def open(self, runtime_context: Any) -> None:
        self.auction = runtime_context.get_state(
            ValueStateDescriptor("auction", Types.PICKLED_BYTE_ARRAY())
        )
        self.best = runtime_context.get_state(ValueStateDescriptor("best", Types.LONG()))
        self.early = runtime_context.get_list_state(
            ListStateDescriptor("early", Types.TUPLE([Types.LONG(), Types.LONG()]))
        )

    def _offer(self, auction: Row, time: int, price: int) -> None:
        if auction.dateTime <= time <= auction.expires:
            best = self.best.value()
            if best is None or price > best:
                self.best.update(price)

    def process_element1(self, auction: Row, ctx: Any) -> None:
        self.auction.update(auction)
        for time, price in self.early.get() or ():
            self._offer(auction, time, price)
        self.early.clear()
        ctx.timer_service().register_event_time_timer(auction.expires)

    def process_element2(self, bid: Row, ctx: Any) -> None:
        auction = self.auction.value()
        if auction is not None:
            self._offer(auction, bid.dateTime, bid.price)
        else:
            self.early.add((bid.dateTime, bid.price))
            ctx.timer_service().register_event_time_timer(bid.dateTime)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        auction = self.auction.value()
        if auction is None:  # bids whose auction never came (or came and closed)
            kept = [(t, p) for t, p in self.early.get() or () if t > timestamp]
            self.early.update(kept)
        elif timestamp == auction.expires:
            best = self.best.value()
            if best is not None:
                yield Row(auction=auction.id, category=auction.category, price=best)
            self.auction.clear()
            self.best.clear()


class RunningAverage(KeyedProcessFunction):
    """Keyed by category: the average of the winning prices so far, emitted on every one."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, winner: Row, ctx: Any) -> Iterator[Row]:
        total = (self.total.value() or 0) + winner.price
        count = (self.count.value() or 0) + 1
        self.total.update(total)
        self.count.update(count)
        yield Row(category=winner.category, avg_price=total / count, auctions=count)


def q4(sources: Sources) -> DataStream:
    """Per category, the running average of closing prices (the highest bid of each auction
    within its lifetime); the last row per category is the final average."""
    winners = (
        sources.auctions()
        .connect(sources.bids())
        .key_by(lambda a: a.id, lambda b: b.auction, key_type=Types.LONG())
        .process(WinningBid(), output_type=_WINNER_TYPE)
    )
    return winners.key_by("category").process(RunningAverage(), output_type=Q4_TYPE)


# ---------------------------------------------------------------------------- q5


class TopCounts(ProcessWindowFunction):
    """Of the bid counts of one sliding window, every auction with the highest count."""

    def process(self, key: int, context: Any, counts: Iterable[Row]) -> Iterator[Row]:
        rows = list(counts)
        top = max(row["count"] for row in rows)
        for row in rows:
            if row["count"] == top:
                yield Row(auction=row.key, num=top, window_start=row.window_start, window_end=key)


def q5(sources: Sources) -> DataStream:
    """Per sliding window (10 s every 2 s), the auctions with the most bids, ties kept."""
    counts = (
        sources.bids()
        .key_by("auction")
        .window(
            SlidingEventTimeWindows.of(Time.milliseconds(WINDOW_MS), Time.milliseconds(SLIDE_MS))
        )
        .count()
    )
    # each count carries its window's max timestamp: one slide-sized window holds exactly the
    # counts of one sliding window (keyed by its end)
    return (
        counts.key_by("window_end")
        .window(TumblingEventTimeWindows.of(Time.milliseconds(SLIDE_MS)))
        .process(TopCounts(), output_type=Q5_TYPE)
    )


# ---------------------------------------------------------------------------- q7


class HighestBids(AggregateFunction):
    """The top price of a window and every bid that offered it."""

    def create_accumulator(self) -> tuple[int, list[Row]]:
        return (-1, [])

    def add(self, bid: Row, acc: tuple[int, list[Row]]) -> tuple[int, list[Row]]:
        price, bids = acc
        if bid.price > price:
            return (bid.price, [bid])
        if bid.price == price:
            bids.append(bid)
        return acc

    def get_result(self, acc: tuple[int, list[Row]]) -> list[Row]:
        return acc[1]

    def merge(self, a: tuple[int, list[Row]], b: tuple[int, list[Row]]) -> tuple[int, list[Row]]:
        if a[0] != b[0]:
            return a if a[0] > b[0] else b
        return (a[0], a[1] + b[1])


class EmitBids(ProcessAllWindowFunction):
    """Each top bid of the window as ``(auction, price, bidder, dateTime, extra)``."""

    def process(self, context: Any, elements: Iterable[list[Row]]) -> Iterator[Row]:
        for bids in elements:
            for bid in bids:
                yield Row(
                    auction=bid.auction,
                    price=bid.price,
                    bidder=bid.bidder,
                    dateTime=bid.dateTime,
                    extra=bid.extra,
                )


def q7(sources: Sources) -> DataStream:
    """Per 10 s tumbling window, every bid with the highest price."""
    return (
        sources.bids()
        .window_all(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .aggregate(HighestBids(), EmitBids(), output_type=Q7_TYPE)
    )


# ---------------------------------------------------------------------------- q8


class NewUsers(CoGroupFunction):
    """A person (first input) who opened auctions (second input) in the same window."""

    def co_group(self, persons: Iterable[Row], auctions: Iterable[Row]) -> Iterator[Row]:
        if not list(auctions):
            return
        for person in persons:
            start = person.dateTime - person.dateTime % WINDOW_MS
            yield Row(id=person.id, name=person.name, starttime=start)


def q8(sources: Sources) -> DataStream:
    """Persons who opened an auction in the 10 s tumbling window in which they registered."""
    return (
        sources.persons()
        .co_group(sources.auctions())
        .where(lambda p: p.id)
        .equal_to(lambda a: a.seller)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .apply(NewUsers(), output_type=Q8_TYPE)
    )


# ---------------------------------------------------------------------------- q11, q12


def q11(sources: Sources) -> DataStream:
    """Bids per bidder and session (10 s of inactivity closes it):
    ``Row(key=bidder, window_start, window_end, count)``."""
    return (
        sources.bids()
        .key_by("bidder")
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(WINDOW_MS)))
        .count()
    )


END_OF_INPUT = 2**63 - 1
"""The watermark at the end of a bounded input."""


class ProcessingTimeOrEndOfInput(Trigger):
    """Fires a window when the processing time reaches its end, as ``ProcessingTimeTrigger``
    does, and also at the end of a bounded input (whose final watermark fires event-time
    timers only), so a bounded run emits every window instead of dropping the open ones."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        ctx.register_event_time_timer(END_OF_INPUT)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == END_OF_INPUT else TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())
        ctx.delete_event_time_timer(END_OF_INPUT)


def q12(sources: Sources) -> DataStream:
    """Bids per bidder per 10 s of processing time:
    ``Row(key=bidder, window_start, window_end, count)`` (the windows still open at the end
    of a bounded input fire then)."""
    return (
        sources.bids()
        .key_by("bidder")
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .trigger(ProcessingTimeOrEndOfInput())
        .count()
    )


QUERIES: dict[str, Callable[[Sources], DataStream]] = {
    "q0": q0,
    "q1": q1,
    "q1b": q1b,
    "q2": q2,
    "q3": q3,
    "q4": q4,
    "q5": q5,
    "q7": q7,
    "q8": q8,
    "q11": q11,
    "q12": q12,
}
"""Every query by name."""

EVENT_TIME_QUERIES = tuple(name for name in QUERIES if name != "q12")
"""The queries whose results do not depend on when they run (all but q12)."""
