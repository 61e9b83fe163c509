"""``Duration`` and ``Time``: PyFlink's time spans, as immutable millisecond values.

Both accept PyFlink's constructors and ``datetime.timedelta``; sub-millisecond parts are refused
rather than silently rounded.

>>> Duration.of_seconds(2).to_milliseconds()
2000
>>> Time.minutes(1).to_milliseconds()
60000
>>> from datetime import timedelta
>>> Duration.of(timedelta(milliseconds=1500)).to_milliseconds()
1500
"""

from __future__ import annotations

import numbers
from datetime import timedelta
from functools import total_ordering
from typing import Any, Union

from sparktide.common.instant import Instant

__all__ = ["Duration", "Instant", "Time", "to_millis"]


def _whole(value: Any, name: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise TypeError(
        f"{name} must be an int, got {type(value).__name__} ({value!r}); pass an int "
        "(for a datetime.timedelta use Duration.of(...) / Time.of(...))"
    )


def _from_timedelta(td: timedelta, name: str) -> int:
    if td.microseconds % 1000:
        raise ValueError(
            f"{name} must be a whole number of milliseconds, got {td!r}; "
            "round it to milliseconds first"
        )
    return (td.days * 86_400 + td.seconds) * 1000 + td.microseconds // 1000


@total_ordering
class _Span:
    __slots__ = ("_ms",)
    _ms: int

    def __init__(self, milliseconds: int) -> None:
        object.__setattr__(self, "_ms", _whole(milliseconds, "milliseconds"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def to_milliseconds(self) -> int:
        """The span in milliseconds."""
        return self._ms

    def to_timedelta(self) -> timedelta:
        return timedelta(milliseconds=self._ms)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._ms == self._ms

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._ms))

    def __lt__(self, other: SpanLike) -> bool:
        return self._ms < to_millis(other, "other")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._ms,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}.of_millis({self._ms})"


class Duration(_Span):
    """A time span (PyFlink's ``pyflink.common.Duration``).

    >>> Duration.of_minutes(1) == Duration.of_millis(60_000)
    True
    """

    __slots__ = ()

    @classmethod
    def of(cls, value: Duration | Time | timedelta | int) -> Duration:
        """From a ``timedelta``, another span, or an int number of milliseconds."""
        return cls(to_millis(value, "value"))

    @classmethod
    def of_millis(cls, millis: int) -> Duration:
        return cls(_whole(millis, "millis"))

    @classmethod
    def of_seconds(cls, seconds: int) -> Duration:
        return cls(_whole(seconds, "seconds") * 1000)

    @classmethod
    def of_minutes(cls, minutes: int) -> Duration:
        return cls(_whole(minutes, "minutes") * 60_000)

    @classmethod
    def of_hours(cls, hours: int) -> Duration:
        return cls(_whole(hours, "hours") * 3_600_000)

    @classmethod
    def of_days(cls, days: int) -> Duration:
        return cls(_whole(days, "days") * 86_400_000)

    @classmethod
    def of_nanos(cls, nanos: int) -> Duration:
        nanos = _whole(nanos, "nanos")
        if nanos % 1_000_000:
            raise ValueError(
                f"nanos must be a whole number of milliseconds, got {nanos}; "
                "sparktide's clock has millisecond resolution"
            )
        return cls(nanos // 1_000_000)

    @classmethod
    def zero(cls) -> Duration:
        return cls(0)


class Time(_Span):
    """A time span for windows and TTL (PyFlink's ``pyflink.common.time.Time``).

    >>> Time.seconds(5).to_milliseconds()
    5000
    """

    __slots__ = ()

    @classmethod
    def of(cls, value: Duration | Time | timedelta | int) -> Time:
        return cls(to_millis(value, "value"))

    def __repr__(self) -> str:
        return f"Time.milliseconds({self._ms})"

    @classmethod
    def milliseconds(cls, milliseconds: int) -> Time:
        return cls(_whole(milliseconds, "milliseconds"))

    @classmethod
    def seconds(cls, seconds: int) -> Time:
        return cls(_whole(seconds, "seconds") * 1000)

    @classmethod
    def minutes(cls, minutes: int) -> Time:
        return cls(_whole(minutes, "minutes") * 60_000)

    @classmethod
    def hours(cls, hours: int) -> Time:
        return cls(_whole(hours, "hours") * 3_600_000)

    @classmethod
    def days(cls, days: int) -> Time:
        return cls(_whole(days, "days") * 86_400_000)


SpanLike = Union[Duration, Time, timedelta, int]  # noqa: UP007 - a runtime alias on 3.10


def to_millis(value: SpanLike, name: str) -> int:
    """Milliseconds of a ``Duration``, ``Time``, ``timedelta`` or int, naming ``name`` on error.

    >>> to_millis(Time.seconds(1), "size")
    1000
    """
    if isinstance(value, _Span):
        return value.to_milliseconds()
    if isinstance(value, timedelta):
        return _from_timedelta(value, name)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise TypeError(
        f"{name} must be a Duration, Time, datetime.timedelta or int milliseconds, "
        f"got {type(value).__name__} ({value!r})"
    )


def positive_millis(value: SpanLike, name: str) -> int:
    """Like :func:`to_millis` but the span must be > 0 (ValueError naming ``name`` otherwise)."""
    ms = to_millis(value, name)
    if ms <= 0:
        raise ValueError(f"{name} must be a positive duration, got {ms} ms; pass a span > 0")
    return ms
