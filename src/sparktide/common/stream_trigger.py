"""``StreamTrigger``: when a streaming job (one reading ``env.from_stream``) starts its
micro-batches, as ``execute(..., trigger=...)`` takes it.

An immutable value in one of four forms:

- ``StreamTrigger.processing_time(interval)``: a micro-batch at most every ``interval`` (Spark's
  ``processingTime`` trigger), until the query is stopped;
- ``StreamTrigger.continuous(poll)``: a micro-batch as soon as data arrives, the source polled
  every ``poll`` while none does (Spark's ``spark.sql.streaming.pollingDelay`` for this query;
  without ``poll``, the session's value, 10 ms by default), until the query is stopped;
- ``StreamTrigger.available_now()``: every batch the sources hold when the query starts, then
  the query ends;
- ``StreamTrigger.once()``: one batch, then the query ends.

The strings ``"available_now"``, ``"once"``, ``"processing_time:<span>"``, ``"continuous"`` and
``"continuous:<span>"`` (a span is a whole number and a unit: ``ms``, ``s``, ``min`` or ``h``)
name the same values. ``None`` runs until stopped: a micro-batch at most every checkpoint
interval when checkpointing is enabled, else as soon as data arrives
(:meth:`StreamTrigger.resolve`).

>>> from sparktide.common.time import Duration
>>> StreamTrigger.processing_time(Duration.of_seconds(10))
StreamTrigger.processing_time(Duration.of_millis(10000))
>>> StreamTrigger.of("processing_time:10s") == StreamTrigger.processing_time(10_000)
True
>>> str(StreamTrigger.continuous(poll=Duration.of_millis(250)))
'continuous:250ms'
>>> StreamTrigger.of("available_now").runs_until_stopped
False
>>> StreamTrigger.resolve(None, checkpoint_interval_ms=5_000)
StreamTrigger.processing_time(Duration.of_millis(5000))
>>> StreamTrigger.of("every 10s")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: trigger must be ... got 'every 10s'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from sparktide.common.time import SpanLike, positive_millis

__all__ = ["StreamTrigger", "TriggerKind"]


class TriggerKind(Enum):
    """The form of a :class:`StreamTrigger`."""

    PROCESSING_TIME = "processing_time"
    CONTINUOUS = "continuous"
    AVAILABLE_NOW = "available_now"
    ONCE = "once"


ACCEPTED = (
    "StreamTrigger.processing_time(interval), StreamTrigger.continuous(poll=None), "
    "StreamTrigger.available_now(), StreamTrigger.once(), the strings 'available_now', 'once', "
    "'processing_time:<span>', 'continuous' or 'continuous:<span>' (a span: a whole number and "
    "ms, s, min or h, e.g. 'processing_time:10s'), or None (micro-batches until stopped)"
)
_UNITS = {"ms": 1, "s": 1_000, "min": 60_000, "h": 3_600_000}
_SPAN = re.compile(r"\s*(\d+)\s*(ms|s|min|h)\s*")
_TIMED = (TriggerKind.PROCESSING_TIME, TriggerKind.CONTINUOUS)


@dataclass(frozen=True)
class StreamTrigger:
    """When a streaming job starts its micro-batches (see the module docstring).

    ``interval_ms``: of ``PROCESSING_TIME``, the least time between two micro-batch starts; of
    ``CONTINUOUS``, the time between two polls of a source without new data (``None``: the
    session's polling delay); ``None`` for the other kinds. Build one with the class methods.
    """

    kind: TriggerKind
    interval_ms: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, TriggerKind):
            raise TypeError(f"kind must be a TriggerKind, got {self.kind!r}; {_use()}")
        interval = self.interval_ms
        needs = self.kind is TriggerKind.PROCESSING_TIME
        allowed = self.kind in _TIMED
        valid = interval is None or (type(interval) is int and interval > 0)
        if not valid or (needs and interval is None) or (not allowed and interval is not None):
            raise ValueError(
                f"a {self.kind.value} trigger cannot have interval_ms={interval!r} (processing "
                "time: an int > 0; continuous: an int > 0 or None; others: None); "
                f"{_use()}"
            )

    # ------------------------------------------------------------------ the forms

    @classmethod
    def processing_time(cls, interval: SpanLike) -> StreamTrigger:
        """A micro-batch at most every ``interval`` (a ``Duration``, ``Time``, ``timedelta``
        or int milliseconds, > 0), until the query is stopped."""
        return cls(TriggerKind.PROCESSING_TIME, positive_millis(interval, "interval"))

    @classmethod
    def continuous(cls, poll: SpanLike | None = None) -> StreamTrigger:
        """A micro-batch as soon as data arrives, the sources polled every ``poll`` (> 0;
        ``None``: the session's ``spark.sql.streaming.pollingDelay``) while none does, until
        the query is stopped."""
        return cls(TriggerKind.CONTINUOUS, None if poll is None else positive_millis(poll, "poll"))

    @classmethod
    def available_now(cls) -> StreamTrigger:
        """Every batch the sources hold when the query starts, then the query ends."""
        return cls(TriggerKind.AVAILABLE_NOW)

    @classmethod
    def once(cls) -> StreamTrigger:
        """One micro-batch, then the query ends."""
        return cls(TriggerKind.ONCE)

    # ------------------------------------------------------------------ from what users pass

    @classmethod
    def of(cls, value: StreamTrigger | str | None) -> StreamTrigger | None:
        """``value`` as a trigger (``None`` stays ``None``); anything else is refused with an
        error naming the accepted forms."""
        if value is None or isinstance(value, StreamTrigger):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        raise TypeError(f"trigger must be {ACCEPTED}; got {type(value).__name__} ({value!r})")

    @classmethod
    def parse(cls, text: str) -> StreamTrigger:
        """The trigger a string names (the forms :meth:`__str__` writes)."""
        name, _, span = text.strip().partition(":")
        if name in ("available_now", "once") and not span:
            return cls(TriggerKind(name))
        if name == "continuous" and not span:
            return cls.continuous()
        match = _SPAN.fullmatch(span) if name in ("processing_time", "continuous") else None
        if match is None or int(match.group(1)) <= 0:
            raise ValueError(f"trigger must be {ACCEPTED}; got {text!r}")
        millis = int(match.group(1)) * _UNITS[match.group(2)]
        return cls(TriggerKind(name), millis)

    @classmethod
    def resolve(
        cls, value: StreamTrigger | str | None, checkpoint_interval_ms: int | None = None
    ) -> StreamTrigger:
        """The trigger a query runs with: ``value``, else (``None``) a micro-batch at most every
        checkpoint interval when checkpointing is enabled, else as soon as data arrives."""
        trigger = cls.of(value)
        if trigger is not None:
            return trigger
        if checkpoint_interval_ms:
            return cls.processing_time(checkpoint_interval_ms)
        return cls.continuous()

    # ------------------------------------------------------------------ what it means

    @property
    def runs_until_stopped(self) -> bool:
        """Whether the query runs until it is stopped (else it ends when its batches are
        done); only such a query runs batches without new data, for due processing-time
        timers and idleness."""
        return self.kind in _TIMED

    def __str__(self) -> str:
        if self.interval_ms is None:
            return self.kind.value
        return f"{self.kind.value}:{self.interval_ms}ms"

    def __repr__(self) -> str:
        if self.interval_ms is None:
            return f"StreamTrigger.{self.kind.value}()"
        span = f"Duration.of_millis({self.interval_ms})"
        if self.kind is TriggerKind.CONTINUOUS:
            return f"StreamTrigger.continuous(poll={span})"
        return f"StreamTrigger.processing_time({span})"


def _use() -> str:
    return (
        "build a trigger with StreamTrigger.processing_time(...), .continuous(...), "
        ".available_now() or .once()"
    )
