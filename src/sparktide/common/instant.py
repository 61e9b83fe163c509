"""``Instant``: a point on the time line, seconds and nanoseconds since the epoch (PyFlink's
``pyflink.common.time.Instant``).

>>> Instant.of_epoch_milli(1_500).to_epoch_milli()
1500
>>> Instant.of_epoch_milli(-1)
Instant(-1, 999000000)
"""

from __future__ import annotations

__all__ = ["Instant"]

_NANOS_PER_SECOND = 1_000_000_000
_NANOS_PER_MILLI = 1_000_000


class Instant:
    """``seconds`` since the epoch plus ``nanos`` in ``[0, 10**9)``, as Java's ``Instant``."""

    __slots__ = ("nanos", "seconds")

    def __init__(self, seconds: int, nanos: int) -> None:
        if type(seconds) is not int or type(nanos) is not int:
            raise TypeError(
                f"seconds and nanos must be ints, got {type(seconds).__name__} and "
                f"{type(nanos).__name__}"
            )
        if not 0 <= nanos < _NANOS_PER_SECOND:
            raise ValueError(f"nanos must be in [0, 10**9), got {nanos}")
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // _NANOS_PER_MILLI

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        seconds, millis = divmod(epoch_milli, 1000)
        return Instant(seconds, millis * _NANOS_PER_MILLI)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Instant)
            and other.seconds == self.seconds
            and other.nanos == self.nanos
        )

    def __hash__(self) -> int:
        return hash((self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant({self.seconds}, {self.nanos})"
