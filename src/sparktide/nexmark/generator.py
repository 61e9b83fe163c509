"""The NEXMark event generator: persons, auctions and bids as Arrow tables, vectorized.

Events are made in blocks of :data:`BLOCK` positions, each block from its own random stream
(``numpy.random.default_rng([seed, block])``), so the first ``n`` events are the same whatever
the total size, and a range of positions can be made alone (:func:`generate_range`). Strings
come from pools drawn once per seed (names, cities and states are the reference's lists;
e-mails, item names, descriptions, URLs and the ``extra`` padding are random strings of the
reference's lengths); their columns are dictionary-encoded, so ten million bids stay small.

>>> from sparktide.nexmark.config import GeneratorConfig
>>> tables = generate(GeneratorConfig(events=100))
>>> tables.persons.num_rows, tables.auctions.num_rows, tables.bids.num_rows
(2, 6, 92)
>>> tables.bids.column_names
['auction', 'bidder', 'price', 'channel', 'url', 'dateTime', 'extra']
>>> tables.persons.column("id").to_pylist(), tables.auctions.column("id").to_pylist()
([1000, 1001], [1000, 1001, 1002, 1003, 1004, 1005])
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sparktide.nexmark.config import (
    AUCTION_PROPORTION,
    HOT_AUCTION_RATIO,
    HOT_BIDDER_RATIO,
    HOT_SELLER_RATIO,
    TOTAL_PROPORTION,
    GeneratorConfig,
)
from sparktide.nexmark.model import (
    EventKind,
    Ints,
    adjusted_ids,
    kinds_of,
    last_auction,
    last_person,
    next_auction,
    next_person,
    next_price,
)
from sparktide.nexmark.schema import AUCTION_SCHEMA, BID_SCHEMA, PERSON_SCHEMA

__all__ = ["BLOCK", "EventTables", "generate", "generate_range"]

BLOCK = 1 << 16
"""Positions per random stream."""

FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
               "Deiter", "Walter")  # fmt: skip
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones",
              "Noris")  # fmt: skip
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
             "Seattle", "Kent", "Cheyenne")  # fmt: skip
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS = 10_000
"""Channels other than the hot ones (``channel-0`` ...)."""
HOT_CHANNELS_RATIO = 100
"""One bid in this many comes through a channel other than the hot ones."""
POOL = 4_096
"""Strings per random pool."""
_LETTERS = np.frombuffer(string.ascii_lowercase.encode(), dtype=np.uint8)


@dataclass(frozen=True)
class EventTables:
    """The events of a stream, per kind, each table in the order the stream emits them."""

    persons: pa.Table
    auctions: pa.Table
    bids: pa.Table


def _strings(rng: np.random.Generator, lengths: npt.NDArray[np.int64]) -> list[str]:
    letters = rng.choice(_LETTERS, size=int(lengths.sum()))
    text = letters.tobytes().decode()
    ends = np.cumsum(lengths)
    return [text[e - n : e] for e, n in zip(ends.tolist(), lengths.tolist(), strict=True)]


def _extra_lengths(rng: np.random.Generator, current: int, average: int) -> npt.NDArray[np.int64]:
    """The reference's ``nextExtra`` lengths: uniform within 20% around what pads a record of
    ``current`` bytes to ``average``."""
    if current > average:
        return np.zeros(POOL, dtype=np.int64)
    wanted = average - current
    delta = round(wanted * 0.2)
    low = wanted - delta
    return low + (rng.integers(0, 2 * delta, POOL) if delta else np.zeros(POOL, dtype=np.int64))


@dataclass(frozen=True)
class _Pools:
    emails: pa.Array
    items: pa.Array
    descriptions: pa.Array
    person_extra: pa.Array
    auction_extra: pa.Array
    bid_extra: pa.Array
    channels: pa.Array
    urls: pa.Array
    names: pa.Array
    cities: pa.Array
    states: pa.Array


@lru_cache(maxsize=8)
def _pools(config: GeneratorConfig) -> _Pools:
    rng = np.random.default_rng([config.seed, 1 << 40])
    fixed = np.full(POOL, 1, dtype=np.int64)
    user = _strings(rng, fixed * 7)
    host = _strings(rng, fixed * 5)
    segments = _strings(rng, np.full(3 * (len(HOT_CHANNELS) + CHANNELS), 5, dtype=np.int64))
    urls = [
        f"https://www.nexmark.com/{a}/{b}/{c}/item.htm?query=1"
        for a, b, c in zip(segments[0::3], segments[1::3], segments[2::3], strict=True)
    ]
    urls[len(HOT_CHANNELS) :] = [
        f"{u}&channel_id={i}" for i, u in enumerate(urls[len(HOT_CHANNELS) :])
    ]
    person_bytes = 8 + 12 + 17 + 19 + 8 + 2  # id, name, e-mail, card, city, state (typical)
    auction_bytes = 8 + 20 + 100 + 5 * 8
    return _Pools(
        emails=pa.array([f"{u}@{h}.com" for u, h in zip(user, host, strict=True)]),
        items=pa.array(_strings(rng, fixed * 20)),
        descriptions=pa.array(_strings(rng, fixed * 100)),
        person_extra=pa.array(
            _strings(rng, _extra_lengths(rng, person_bytes, config.avg_person_bytes))
        ),
        auction_extra=pa.array(
            _strings(rng, _extra_lengths(rng, auction_bytes, config.avg_auction_bytes))
        ),
        bid_extra=pa.array(_strings(rng, _extra_lengths(rng, 32, config.avg_bid_bytes))),
        channels=pa.array([*HOT_CHANNELS, *(f"channel-{i}" for i in range(CHANNELS))]),
        urls=pa.array(urls),
        names=pa.array([f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES]),
        cities=pa.array(US_CITIES),
        states=pa.array(US_STATES),
    )


def _pick(pool: pa.Array, indices: npt.NDArray[np.int64]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)), pool)


def _below(u: npt.NDArray[np.float64], bound: int) -> Ints:
    return np.minimum((u * bound).astype(np.int64), bound - 1)


def _block(config: GeneratorConfig, block: int, start: int, stop: int) -> EventTables:
    """The events at positions ``[start, stop)`` of ``block`` (all within it)."""
    rng = np.random.default_rng([config.seed, block])
    u = rng.random((10, BLOCK))[:, start - block * BLOCK : stop - block * BLOCK]
    pools = _pools(config)
    positions = np.arange(start, stop, dtype=np.int64)
    ids = adjusted_ids(positions, config.out_of_order_group_size)
    times = config.base_time_ms + ids * config.inter_event_delay_us // 1000
    kinds = kinds_of(ids)

    def extra(pool: pa.Array, rows: npt.NDArray[np.bool_]) -> pa.DictionaryArray:
        return _pick(pool, _below(u[9][rows], len(pool)))

    # persons
    p = kinds == EventKind.PERSON
    card = (u[2:6, p] * 10_000).astype(np.int64)
    persons = pa.table(
        [
            pa.array(last_person(ids[p]) + config.first_person_id),
            _pick(pools.names, _below(u[0][p], len(pools.names))),
            _pick(pools.emails, _below(u[1][p], POOL)),
            pa.array([f"{a:04d} {b:04d} {c:04d} {d:04d}" for a, b, c, d in card.T.tolist()]),
            _pick(pools.cities, _below(u[6][p], len(US_CITIES))),
            _pick(pools.states, _below(u[7][p], len(US_STATES))),
            pa.array(times[p]),
            extra(pools.person_extra, p),
        ],
        schema=PERSON_SCHEMA,
    )

    # auctions
    a = kinds == EventKind.AUCTION
    a_ids = ids[a]
    hot_seller = _below(u[0][a], config.hot_sellers_ratio) > 0
    seller = np.where(
        hot_seller,
        (last_person(a_ids) // HOT_SELLER_RATIO) * HOT_SELLER_RATIO,
        next_person(a_ids, u[1][a], config),
    )
    initial = next_price(u[3][a])
    horizon = config.in_flight_auctions * TOTAL_PROPORTION // AUCTION_PROPORTION
    # the reference: ts(id + horizon) - ts(id), twice, as exact integer milliseconds
    span = np.maximum(
        2
        * (
            (a_ids + horizon) * config.inter_event_delay_us // 1000
            - a_ids * config.inter_event_delay_us // 1000
        ),
        1,
    )
    auctions = pa.table(
        [
            pa.array(last_auction(a_ids) + config.first_auction_id),
            _pick(pools.items, _below(u[5][a], POOL)),
            _pick(pools.descriptions, _below(u[6][a], POOL)),
            pa.array(initial),
            pa.array(initial + next_price(u[4][a])),
            pa.array(times[a]),
            pa.array(times[a] + 1 + (u[7][a] * span).astype(np.int64)),
            pa.array(seller + config.first_person_id),
            pa.array(config.first_category_id + _below(u[2][a], config.categories)),
            extra(pools.auction_extra, a),
        ],
        schema=AUCTION_SCHEMA,
    )

    # bids
    b = kinds == EventKind.BID
    b_ids = ids[b]
    hot_auction = _below(u[0][b], config.hot_auction_ratio) > 0
    auction = np.where(
        hot_auction,
        (last_auction(b_ids) // HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO,
        next_auction(b_ids, u[1][b], config),
    )
    hot_bidder = _below(u[2][b], config.hot_bidders_ratio) > 0
    bidder = np.where(
        hot_bidder,
        (last_person(b_ids) // HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1,
        next_person(b_ids, u[3][b], config),
    )
    hot_channel = _below(u[5][b], HOT_CHANNELS_RATIO) > 0
    channel = np.where(
        hot_channel,
        _below(u[6][b], len(HOT_CHANNELS)),
        len(HOT_CHANNELS) + _below(u[6][b], CHANNELS),
    )
    bids = pa.table(
        [
            pa.array(auction + config.first_auction_id),
            pa.array(bidder + config.first_person_id),
            pa.array(next_price(u[4][b])),
            _pick(pools.channels, channel),
            _pick(pools.urls, channel),
            pa.array(times[b]),
            extra(pools.bid_extra, b),
        ],
        schema=BID_SCHEMA,
    )
    return EventTables(persons, auctions, bids)


def generate_range(config: GeneratorConfig, start: int, stop: int) -> EventTables:
    """The events at stream positions ``[start, stop)`` (clipped to ``config.events``)."""
    stop = min(stop, config.events)
    parts = []
    first = max(start, 0)
    while first < stop:
        block = first // BLOCK
        end = min(stop, (block + 1) * BLOCK)
        parts.append(_block(config, block, first, end))
        first = end
    if not parts:
        return _block(config, 0, 0, 0)
    return EventTables(
        pa.concat_tables([t.persons for t in parts]),
        pa.concat_tables([t.auctions for t in parts]),
        pa.concat_tables([t.bids for t in parts]),
    )


def generate(config: GeneratorConfig) -> EventTables:
    """Every event of the stream ``config`` describes."""
    return generate_range(config, 0, config.events)
