"""What a NEXMark event stream is made of: :class:`GeneratorConfig`.

The model is NEXMark's as its reference generators define it (Beam's ``GeneratorConfig`` and
``nexmark-flink``): event ``n`` of the stream is a person, an auction or a bid by ``n % 50``
(1 : 3 : 46), its event time is ``base_time + n * inter_event_delay`` (the delay follows from the
rate), and the stream emits the events in groups of ``out_of_order_group_size`` whose members
are permuted, so event time is out of order by less than a group's span.

>>> config = GeneratorConfig(events=1_000)
>>> config.inter_event_delay_us, config.out_of_order_bound_ms
(100, 0)
>>> GeneratorConfig(events=1_000, out_of_order_group_size=50).out_of_order_bound_ms
5
>>> GeneratorConfig(events=-1)
Traceback (most recent call last):
...
ValueError: events must be an int >= 0, got -1; pass how many events to generate
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass

__all__ = [
    "AUCTION_PROPORTION",
    "BASE_TIME_MS",
    "BID_PROPORTION",
    "PERSON_PROPORTION",
    "TOTAL_PROPORTION",
    "GeneratorConfig",
]

PERSON_PROPORTION = 1
"""Persons among every :data:`TOTAL_PROPORTION` events."""
AUCTION_PROPORTION = 3
"""Auctions among every :data:`TOTAL_PROPORTION` events."""
BID_PROPORTION = 46
"""Bids among every :data:`TOTAL_PROPORTION` events."""
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION

BASE_TIME_MS = 1_436_918_400_000
"""2015-07-15T00:00:00Z, the base time of Beam's NEXMark generator (epoch milliseconds)."""

HOT_AUCTION_RATIO = 100
"""Hot auctions are the multiples of this among the auction ids (ids stay base-0 here)."""
HOT_SELLER_RATIO = 100
"""Hot sellers are the multiples of this among the person ids (base 0)."""
HOT_BIDDER_RATIO = 100
"""Hot bidders are one above the multiples of this among the person ids (base 0)."""
PERSON_ID_LEAD = 10
"""A bid or auction may name a person up to this many ids ahead of the last one created."""
AUCTION_ID_LEAD = 10
"""A bid may name an auction up to this many ids ahead of the last one created."""


def _int(value: object, name: str, low: int, what: str) -> int:
    if type(value) is not int or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {reprlib.repr(value)}; {what}")
    return value


@dataclass(frozen=True)
class GeneratorConfig:
    """A NEXMark stream: its size, seed, rate and the reference model's parameters.

    ``events``: how many events; ``seed``: the random draws (ids, kinds and event times do not
    depend on it); ``rate``: events per second of event time (Beam's default 10,000/s);
    ``out_of_order_group_size``: 1 keeps event time in order. The ratios and counts are the
    reference defaults: a fraction ``1 - 1/hot_*_ratio`` of bids (auctions) go to hot auctions
    and hot bidders (sellers); other ids are drawn among the ``active_people`` newest persons
    and the ``in_flight_auctions`` newest auctions; auctions last up to twice the event time
    in which ``in_flight_auctions`` auctions are created.
    """

    events: int
    seed: int = 0
    rate: int = 10_000
    base_time_ms: int = BASE_TIME_MS
    out_of_order_group_size: int = 1
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    active_people: int = 1_000
    in_flight_auctions: int = 100
    first_person_id: int = 1_000
    first_auction_id: int = 1_000
    first_category_id: int = 10
    categories: int = 5
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100

    def __post_init__(self) -> None:
        _int(self.events, "events", 0, "pass how many events to generate")
        _int(self.seed, "seed", 0, "pass a non-negative int")
        _int(self.rate, "rate", 1, "pass events per second of event time")
        _int(self.base_time_ms, "base_time_ms", 0, "pass epoch milliseconds")
        group = _int(
            self.out_of_order_group_size,
            "out_of_order_group_size",
            1,
            "pass 1 for events in order, or the size of the groups permuted",
        )
        if group % 953 == 0:
            raise ValueError(
                f"out_of_order_group_size must not be a multiple of 953, got {group}: the "
                "permutation of a group multiplies by 953; pick a neighbouring size"
            )
        for name in ("hot_auction_ratio", "hot_sellers_ratio", "hot_bidders_ratio"):
            _int(getattr(self, name), name, 1, "pass 1 for no hot ids, n for 1 - 1/n hot")
        for name in ("active_people", "in_flight_auctions", "categories"):
            _int(getattr(self, name), name, 1, "pass a positive count")
        for name in ("first_person_id", "first_auction_id", "first_category_id"):
            _int(getattr(self, name), name, 0, "pass the first id")
        for name in ("avg_person_bytes", "avg_auction_bytes", "avg_bid_bytes"):
            _int(getattr(self, name), name, 0, "pass an average record size in bytes")

    @property
    def inter_event_delay_us(self) -> int:
        """Microseconds of event time between consecutive events."""
        return 1_000_000 // self.rate

    @property
    def out_of_order_bound_ms(self) -> int:
        """How far (ms) an event's time may lag behind an earlier event's: a group's span."""
        return (self.out_of_order_group_size - 1) * self.inter_event_delay_us // 1000 + (
            1 if self.out_of_order_group_size > 1 else 0
        )

    def timestamp_ms(self, event_number: int) -> int:
        """The event time of event ``event_number`` (in order).

        >>> GeneratorConfig(events=10, rate=3).timestamp_ms(4) - BASE_TIME_MS
        1333
        """
        return self.base_time_ms + event_number * self.inter_event_delay_us // 1000
