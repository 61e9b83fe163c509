"""The elements that flow through a job: records, watermarks and watermark statuses.

All timestamps are ``int`` milliseconds (see :mod:`sparktide.common.timestamps`). A record
without a timestamp carries ``None`` (never ``0``). Watermarks and their statuses are contracts
of :mod:`sparktide.common.watermark`, re-exported here with the runtime's record type.

>>> StreamRecord("a", 5)
StreamRecord('a', 5)
>>> Watermark(10) < Watermark(11)
True
"""

from __future__ import annotations

from enum import Enum
from typing import Generic, Literal, TypeVar

from sparktide.common.timestamps import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    check_timestamp,
    timestamp_advice,
)
from sparktide.common.watermark import (
    Watermark,
    WatermarkStatus,
    _status,  # noqa: F401 - old pickles name it here
)

__all__ = [
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "StreamRecord",
    "Watermark",
    "WatermarkStatus",
    "check_timestamp",
    "timestamp_advice",
]


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
