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
TypeError: ts must be an int number of milliseconds, got float (3.0); convert it with int(...)
"""

from __future__ import annotations

import numbers
from functools import total_ordering
from typing import Any

__all__ = [
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "StreamRecord",
    "Watermark",
    "WatermarkStatus",
    "check_timestamp",
]

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
        f"({value!r}); convert it with int(...)"
    )


_KEEP: Any = object()


class StreamRecord:
    """A value with an optional event timestamp (``int`` ms or ``None``)."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: Any, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    @property
    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def replace(self, value: Any, timestamp: Any = _KEEP) -> StreamRecord:
        """A new record with ``value``, keeping this record's timestamp unless one is given.

        >>> StreamRecord("a", 5).replace("b")
        StreamRecord('b', 5)
        """
        return StreamRecord(value, self.timestamp if timestamp is _KEEP else timestamp)

    def __reduce__(self) -> tuple[Any, ...]:
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

    def __init__(self, timestamp: int) -> None:
        self.timestamp = check_timestamp(timestamp, "Watermark.timestamp")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Watermark) and self.timestamp == other.timestamp

    def __lt__(self, other: Watermark) -> bool:
        return self.timestamp < other.timestamp

    def __hash__(self) -> int:
        return hash((Watermark, self.timestamp))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Watermark, (self.timestamp,))

    def __repr__(self) -> str:
        return f"Watermark({self.timestamp})"


Watermark.MAX = Watermark(MAX_TIMESTAMP)  # type: ignore[attr-defined]
Watermark.MIN = Watermark(MIN_TIMESTAMP)  # type: ignore[attr-defined]


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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_status, (self._active,))


def _status(active: bool) -> WatermarkStatus:
    return WatermarkStatus.ACTIVE if active else WatermarkStatus.IDLE


WatermarkStatus.ACTIVE = WatermarkStatus(True)
WatermarkStatus.IDLE = WatermarkStatus(False)
