"""NEXMark's id arithmetic, vectorized: which person and auction an event creates or names.

Event ids count events in order (``0, 1, ...``); in every :data:`~.config.TOTAL_PROPORTION`
events the first is a person, the next three auctions, the rest bids. Ids are base 0 here (the
generator adds the configured first ids).

>>> import numpy as np
>>> ids = np.arange(0, 100, 10)
>>> kinds_of(ids).tolist()
[0, 2, 2, 2, 2, 0, 2, 2, 2, 2]
>>> last_person(ids).tolist(), last_auction(np.array([1, 2, 3, 4, 51])).tolist()
([0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 1, 2, 2, 3])
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
import numpy.typing as npt

from sparktide.nexmark.config import (
    AUCTION_ID_LEAD,
    AUCTION_PROPORTION,
    PERSON_ID_LEAD,
    PERSON_PROPORTION,
    TOTAL_PROPORTION,
    GeneratorConfig,
)

__all__ = [
    "EventKind",
    "adjusted_ids",
    "kinds_of",
    "last_auction",
    "last_person",
    "next_auction",
    "next_person",
    "next_price",
]

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class EventKind(IntEnum):
    """What an event is; its value is the code :func:`kinds_of` returns."""

    PERSON = 0
    AUCTION = 1
    BID = 2


def adjusted_ids(positions: Ints, group: int) -> Ints:
    """The id of the event emitted at each position: within each group of ``group`` positions
    the ids are permuted (Beam's ``nextAdjustedEventNumber``: ``953 * n mod group``).

    >>> adjusted_ids(np.arange(8), 4).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> adjusted_ids(np.arange(8), 3).tolist()
    [0, 2, 1, 3, 5, 4, 6, 8]
    """
    if group == 1:
        return positions
    return (positions // group) * group + (positions * 953) % group


def kinds_of(ids: Ints) -> npt.NDArray[np.int8]:
    """The :class:`EventKind` code of every event id."""
    offset = ids % TOTAL_PROPORTION
    kinds = np.full(ids.shape, EventKind.BID, dtype=np.int8)
    kinds[offset < PERSON_PROPORTION + AUCTION_PROPORTION] = EventKind.AUCTION
    kinds[offset < PERSON_PROPORTION] = EventKind.PERSON
    return kinds


def last_person(ids: Ints) -> Ints:
    """The (base 0) id of the last person created at or before each event."""
    epoch, offset = np.divmod(ids, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + np.minimum(offset, PERSON_PROPORTION - 1)


def last_auction(ids: Ints) -> Ints:
    """The (base 0) id of the last auction created at or before each event (``-1`` before
    the first)."""
    epoch, offset = np.divmod(ids, TOTAL_PROPORTION)
    before = offset < PERSON_PROPORTION
    epoch = epoch - before
    offset = np.where(
        before | (offset >= PERSON_PROPORTION + AUCTION_PROPORTION),
        AUCTION_PROPORTION - 1,
        offset - PERSON_PROPORTION,
    )
    return epoch * AUCTION_PROPORTION + offset


def _below(u: Floats, bound: Ints) -> Ints:
    """Uniform ints in ``[0, bound)`` from uniforms in ``[0, 1)``."""
    return np.minimum((u * bound).astype(np.int64), bound - 1)


def next_person(ids: Ints, u: Floats, config: GeneratorConfig) -> Ints:
    """A person among the ``active_people`` newest (or up to :data:`PERSON_ID_LEAD` ahead)."""
    people = last_person(ids) + 1
    active = np.minimum(people, config.active_people)
    return people - active + _below(u, active + PERSON_ID_LEAD)


def next_auction(ids: Ints, u: Floats, config: GeneratorConfig) -> Ints:
    """An auction among the ``in_flight_auctions`` newest (or up to :data:`AUCTION_ID_LEAD`
    ahead)."""
    newest = last_auction(ids)
    oldest = np.maximum(newest - config.in_flight_auctions, 0)
    return oldest + _below(u, newest - oldest + 1 + AUCTION_ID_LEAD)


def next_price(u: Floats) -> Ints:
    """A price in cents, log-uniform from 1 to 10^6 dollars (``round(10^(6u) * 100)``).

    >>> next_price(np.array([0.0, 0.5])).tolist()
    [100, 100000]
    """
    return np.rint(np.power(10.0, u * 6.0) * 100.0).astype(np.int64)
