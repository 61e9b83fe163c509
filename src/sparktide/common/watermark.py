"""Watermarks and watermark statuses: how event time advances through a job.

>>> Watermark(10) < Watermark(11)
True
>>> Watermark.MAX.timestamp == MAX_TIMESTAMP
True
>>> WatermarkStatus.IDLE.is_idle()
True
"""

from __future__ import annotations

from functools import total_ordering
from typing import Any, ClassVar

from sparktide.common.timestamps import MAX_TIMESTAMP, MIN_TIMESTAMP, check_timestamp

__all__ = ["Watermark", "WatermarkStatus"]


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

    def __reduce__(self) -> tuple[Any, ...]:
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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_status, (self._active,))


def _status(active: bool) -> WatermarkStatus:
    return WatermarkStatus.ACTIVE if active else WatermarkStatus.IDLE


WatermarkStatus.ACTIVE = WatermarkStatus(True)
WatermarkStatus.IDLE = WatermarkStatus(False)
