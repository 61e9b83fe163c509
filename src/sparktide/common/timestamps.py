"""Event-time timestamps: ``int`` milliseconds since the epoch, in Java's long range.

A record without a timestamp carries ``None`` (never ``0``). ``MIN_TIMESTAMP`` and
``MAX_TIMESTAMP`` are Java's ``Long.MIN_VALUE`` and ``Long.MAX_VALUE``; a watermark of
``MAX_TIMESTAMP`` marks the end of a bounded input and fires every pending event-time timer.

>>> check_timestamp(3.0, "ts")
Traceback (most recent call last):
...
TypeError: ts must be an int number of milliseconds, got float (3.0); convert it with int(...) \
(milliseconds, not seconds)
"""

from __future__ import annotations

import datetime as _dt
import numbers
from typing import Any

__all__ = ["MAX_TIMESTAMP", "MIN_TIMESTAMP", "check_timestamp", "timestamp_advice"]

MIN_TIMESTAMP: int = -(2**63)
"""Java ``Long.MIN_VALUE``: the watermark before any event has been seen."""

MAX_TIMESTAMP: int = 2**63 - 1
"""Java ``Long.MAX_VALUE``: the watermark at the end of a bounded input."""


def check_timestamp(value: Any, name: str) -> int:
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


def timestamp_advice(value: Any) -> str:
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
