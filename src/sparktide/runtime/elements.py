"""The elements that flow through a job: records, watermarks and watermark statuses.

All timestamps are ``int`` milliseconds. A record without a timestamp carries ``None``
(never ``0``). ``MIN_TIMESTAMP`` and ``MAX_TIMESTAMP`` are Java's ``Long.MIN_VALUE`` and
``Long.MAX_VALUE``; a watermark of ``MAX_TIMESTAMP`` marks the end of a bounded input and fires
every pending event-time timer.

>>> StreamRecord("a", 5)
StreamRecord('a', 5)
>>> Watermark(10) < Watermark(11)
True
>>> check_timestamp(3.0, "ts")
Traceback (most recent call last):
...
TypeError: ts must be an int number of milliseconds, got float (3.0); convert it with int(...) \
(milliseconds, not seconds)
"""

from __future__ import annotations

import datetime as _dt
import numbers
from enum import Enum
from functools import total_ordering
from typing import ClassVar, Generic, Literal, TypeVar

__all__ = [
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "StreamRecord",
    "Watermark",
    "WatermarkStatus",
    "check_timestamp",
    "timestamp_advice",
]

MIN_TIMESTAMP: int = -(2**63)
"""Java ``Long.MIN_VALUE``: the watermark before any event has been seen."""

MAX_TIMESTAMP: int = 2**63 - 1
"""Java ``Long.MAX_VALUE``: the watermark at the end of a bounded input."""


def check_timestamp(value: object, name: str) -> int:
    """Return ``value`` if it is an ``int`` millisecond timestamp in Java's long range.

    Raises ``TypeError`` naming ``name`` and the received type otherwise (``bool`` is refused:
    it is an ``int`` subclass but never a timestamp), and ``ValueError`` when the value does not
    fit a Java long.
    """
    if type(value) is int:
        if MIN_TIMESTAMP <= value <= MAX_TIMESTAMP:
            return value
        raise ValueError(
            f"{name} must fit a 64-bit signed long [{MIN_TIMESTAMP}, {MAX_TIMESTAMP}], "
            f"got {value}; timestamps are milliseconds since the epoch"
        )
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_timestamp(int(value), name)  # int subclasses, numpy integers
    if value is None:
        raise TypeError(
            f"{name} must be an int number of milliseconds, got NoneType (None); if it is a "
            "record's timestamp, the record has none: timestamps must be assigned first, e.g. "
            "with assign_timestamps_and_watermarks(WatermarkStrategy...with_timestamp_assigner())"
        )
    raise TypeError(
        f"{name} must be an int number of milliseconds, got {type(value).__name__} "
        f"({value!r}); {timestamp_advice(value)}"
    )


def timestamp_advice(value: object) -> str:
    """How to turn ``value`` (not an int) into epoch milliseconds: advice that fits its type.

    >>> import datetime as dt
    >>> timestamp_advice(dt.datetime(2024, 1, 1))
    'convert it with int(dt.timestamp() * 1000) (a naive datetime is read in local time: ...'
    >>> timestamp_advice("2024-01-01T00:00:00")
    'parse the string first, e.g. int(datetime.fromisoformat(s).timestamp() * 1000)...'
    """
    if isinstance(value, _dt.datetime):
        return (
            "convert it with int(dt.timestamp() * 1000) (a naive datetime is read in local "
            "time: give it a zone first, e.g. dt.replace(tzinfo=datetime.timezone.utc))"
        )
    if isinstance(value, _dt.date):
        return (
            "a date has no time of day: make it a datetime first, e.g. int(datetime.datetime("
            "d.year, d.month, d.day, tzinfo=datetime.timezone.utc).timestamp() * 1000)"
        )
    if isinstance(value, (str, bytes)):
        return (
            "parse the string first, e.g. int(datetime.fromisoformat(s).timestamp() * 1000) "
            "for an ISO-8601 time, or int(s) if it holds epoch milliseconds as digits"
        )
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return "convert it with int(...) (milliseconds, not seconds)"
    return "return epoch milliseconds as an int"


class _Keep(Enum):
    """The default of :meth:`StreamRecord.replace`'s timestamp: keep the record's own."""

    KEEP = 0


_KEEP: Literal[_Keep.KEEP] = _Keep.KEEP

T = TypeVar("T")
U = TypeVar("U")


class StreamRecord(Generic[T]):
    """A value with an optional event timestamp (``int`` ms or ``None``)."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    @property
    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def replace(
        self, value: U, timestamp: int | Literal[_Keep.KEEP] | None = _KEEP
    ) -> StreamRecord[U]:
        """A new record with ``value``, keeping this record's timestamp unless one is given.

        >>> StreamRecord("a", 5).replace("b")
        StreamRecord('b', 5)
        """
        return StreamRecord(value, self.timestamp if timestamp is _KEEP else timestamp)

    def __reduce__(self) -> tuple[object, ...]:
        return (StreamRecord, (self.value, self.timestamp))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, StreamRecord)
            and self.value == other.value
            and self.timestamp == other.timestamp
        )

    def __hash__(self) -> int:
        return hash((StreamRecord, self.timestamp))

    def __repr__(self) -> str:
        return f"StreamRecord({self.value!r}, {self.timestamp!r})"


@total_ordering
class Watermark:
    """An assertion that no record with a timestamp ``<= timestamp`` will follow."""

    __slots__ = ("timestamp",)

    MAX: ClassVar[Watermark]
    MIN: ClassVar[Watermark]

    def __init__(self, timestamp: int) -> None:
        self.timestamp = check_timestamp(timestamp, "Watermark.timestamp")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Watermark) and self.timestamp == other.timestamp

    def __lt__(self, other: Watermark) -> bool:
        return self.timestamp < other.timestamp

    def __hash__(self) -> int:
        return hash((Watermark, self.timestamp))

    def __reduce__(self) -> tuple[object, ...]:
        return (Watermark, (self.timestamp,))

    def __repr__(self) -> str:
        return f"Watermark({self.timestamp})"


Watermark.MAX = Watermark(MAX_TIMESTAMP)
Watermark.MIN = Watermark(MIN_TIMESTAMP)


class WatermarkStatus:
    """Whether a channel currently produces watermarks (ACTIVE) or is idle (IDLE).

    >>> WatermarkStatus.IDLE.is_idle()
    True
    """

    __slots__ = ("_active",)

    ACTIVE: WatermarkStatus
    IDLE: WatermarkStatus

    def __init__(self, active: bool) -> None:
        self._active = active

    def is_active(self) -> bool:
        return self._active

    def is_idle(self) -> bool:
        return not self._active

    def __repr__(self) -> str:
        return "WatermarkStatus.ACTIVE" if self._active else "WatermarkStatus.IDLE"

    def __reduce__(self) -> tuple[object, ...]:
        return (_status, (self._active,))


def _status(active: bool) -> WatermarkStatus:
    return WatermarkStatus.ACTIVE if active else WatermarkStatus.IDLE


WatermarkStatus.ACTIVE = WatermarkStatus(True)
WatermarkStatus.IDLE = WatermarkStatus(False)
