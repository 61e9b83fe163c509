"""Window assigners: which window(s) each element belongs to (Flink's ``WindowAssigner`` family).

Assigners are immutable descriptions. Sizes, slides, offsets and gaps accept ``Time``,
``Duration``, ``datetime.timedelta`` or int milliseconds.

>>> TumblingEventTimeWindows.of(Time.seconds(5)).assign_windows("x", 7_300, None)
(TimeWindow(start=5000, end=10000),)
>>> SlidingEventTimeWindows.of(10, 5).assign_windows("x", 12, None)
[TimeWindow(start=10, end=20), TimeWindow(start=5, end=15)]
>>> EventTimeSessionWindows.with_gap(3).assign_windows("x", 12, None)
[TimeWindow(start=12, end=15)]
"""

from __future__ import annotations

import inspect
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from typing import Any, Generic, TypeVar

from sparktide.common.time import Duration, Time, to_millis
from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.core.window.stagger import WindowStagger
from sparktide.core.window.triggers import (
    EventTimeTrigger,
    ProcessingTimeTrigger,
    Trigger,
)
from sparktide.core.window.windows import TimeWindow, Window, new_time_window

__all__ = [
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "MergingWindowAssigner",
    "ProcessingTimeSessionWindows",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowAssigner",
    "WindowStagger",
    "default_trigger",
    "no_timestamp_error",
]

T = TypeVar("T")
W = TypeVar("W", bound=Window)
W2 = TypeVar("W2")

SpanLike = Any  # Time | Duration | timedelta | int


def no_timestamp_error(assigner: Any) -> TypeError:
    """Flink's error for an event-time assigner that meets a record without timestamp."""
    return TypeError(
        f"Record has no timestamp (Flink: Long.MIN_VALUE timestamp, the no-timestamp marker), "
        f"so the event-time assigner {assigner!r} cannot place it in a window. Is the time "
        "characteristic meant to be processing time (use a *ProcessingTimeWindows assigner), "
        "or did you forget to call "
        "'DataStream.assign_timestamps_and_watermarks(...)'?"
    )


def _positive(value: SpanLike, name: str, owner: str) -> int:
    ms = to_millis(value, name)
    if ms <= 0:
        raise ValueError(
            f"{owner}: {name} must be positive (> 0 ms), got {ms} ms; pass e.g. Time.seconds(5)"
        )
    return ms


def _offset(value: SpanLike | None, bound: int, bound_name: str, owner: str) -> int:
    ms = 0 if value is None else to_millis(value, "offset")
    if abs(ms) >= bound:
        raise ValueError(
            f"{owner}: abs(offset) must be < {bound_name} ({bound} ms), got offset {ms} ms; "
            f"use an offset in (-{bound_name}, {bound_name})"
        )
    return ms


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns zero or more windows to an element.

    Subclasses implement :meth:`assign_windows`, :meth:`get_default_trigger` and
    :meth:`is_event_time`. ``context`` gives ``get_current_processing_time()`` and
    ``get_runtime_context()`` (keyed state of the current key).

    >>> class EveryTen(WindowAssigner):
    ...     def assign_windows(self, element, timestamp, context):
    ...         start = timestamp - timestamp % 10
    ...         return [TimeWindow(start, start + 10)]
    ...     def get_default_trigger(self, env=None):
    ...         return EventTimeTrigger.create()
    ...     def is_event_time(self):
    ...         return True
    >>> EveryTen().assign_windows(None, 25, None)
    [TimeWindow(start=20, end=30)]
    """

    class WindowAssignerContext(ABC):
        """What an assigner may ask while assigning."""

        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_runtime_context(self) -> Any: ...

    @abstractmethod
    def assign_windows(
        self, element: T, timestamp: int | None, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[W]:
        """The windows ``element`` (with event ``timestamp``, None if it has none) belongs to."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when ``WindowedStream.trigger(...)`` is not called."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """Whether windows are based on event time (then watermarks fire and expire them)."""

    def get_window_serializer(self) -> Any:
        """Accepted for PyFlink compatibility; windows are pickled with the state."""
        return None


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions).

    :meth:`merge_windows` reports each group of windows to merge through
    ``callback.merge(to_be_merged, merge_result)``.

    >>> merged = []
    >>> EventTimeSessionWindows.with_gap(5).merge_windows(
    ...     [TimeWindow(0, 5), TimeWindow(3, 8), TimeWindow(20, 25)],
    ...     lambda to_be_merged, result: merged.append(result))
    >>> merged
    [TimeWindow(start=0, end=8)]
    """

    class MergeCallback(ABC, Generic[W2]):
        """Receives the windows to merge and the window they merge into."""

        @abstractmethod
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None: ...

    @abstractmethod
    def merge_windows(self, windows: Iterable[W], callback: Any) -> None:
        """Determine which of ``windows`` merge; report each group to ``callback``."""


class SessionWindowTimeGapExtractor(ABC):
    """Extracts the session gap (int ms > 0) of an element, for dynamic session windows.

    >>> class FromField(SessionWindowTimeGapExtractor):
    ...     def extract(self, element):
    ...         return element[1]
    >>> DynamicEventTimeSessionWindows.with_dynamic_gap(FromField()).assign_windows(
    ...     ("a", 4), 10, None)
    [TimeWindow(start=10, end=14)]
    """

    @abstractmethod
    def extract(self, element: Any) -> int:
        """The session gap of ``element`` in milliseconds."""


def default_trigger(assigner: Any, env: Any = None) -> Any:
    """``assigner.get_default_trigger(env)``, or ``get_default_trigger()`` for assigners whose
    method takes no argument."""
    method = getattr(assigner, "get_default_trigger", None)
    if not callable(method):
        raise TypeError(
            f"window_assigner {assigner!r} has no get_default_trigger(); subclass WindowAssigner"
        )
    try:
        takes_env = bool(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        takes_env = True
    return method(env) if takes_env else method()


# -------------------------------------------------------------------------------- time domains


class _EventTimeAssigner:
    """Event time: :class:`EventTimeTrigger` by default; watermarks fire and expire windows."""

    __slots__ = ()

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class _ProcessingTimeAssigner:
    """Processing time: :class:`ProcessingTimeTrigger` by default."""

    __slots__ = ()

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


# -------------------------------------------------------------------------------- time windows


class TumblingEventTimeWindows(_EventTimeAssigner, WindowAssigner[Any, TimeWindow]):
    """Fixed-size, non-overlapping windows by event time: ``[start, start + size)`` with
    ``start = ts - (ts - offset) % size``.

    >>> TumblingEventTimeWindows.of(Time.hours(1), Time.minutes(15))
    TumblingEventTimeWindows(size=3600000, offset=900000)
    >>> TumblingEventTimeWindows.of(10, 10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: TumblingEventTimeWindows: abs(offset) must be < size (10 ms), got offset 10 ms; ...
    """

    __slots__ = ("_offset", "_size")

    def __init__(self, size: int, offset: int = 0) -> None:
        name = type(self).__name__
        self._size = _positive(size, "size", name)
        self._offset = _offset(offset, self._size, "size", name)

    @classmethod
    def of(cls, size: SpanLike, offset: SpanLike | None = None) -> Any:
        return cls(size, 0 if offset is None else offset)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        try:
            if timestamp > MIN_TIMESTAMP:  # type: ignore[operator]
                start = timestamp - (timestamp - self._offset) % self._size  # type: ignore[operator]
                return (new_time_window((start, start + self._size)),)
        except TypeError:
            pass
        raise no_timestamp_error(self)

    def get_size(self) -> int:
        return self._size

    def get_offset(self) -> int:
        return self._offset

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, offset={self._offset})"


class TumblingProcessingTimeWindows(_ProcessingTimeAssigner, TumblingEventTimeWindows):
    """Tumbling windows by the processing time at which the element is processed.

    ``window_stagger`` (a :class:`WindowStagger`, default ``ALIGNED``) shifts the windows of
    each subtask by an offset chosen when it places its first element, as Flink's
    ``TumblingProcessingTimeWindows.of(size, offset, stagger)``: windows start at
    ``k * size + (offset + stagger_offset) % size``. Each subtask works on its own copy of the
    assigner, so each has its own stagger offset.

    >>> class Clock:
    ...     def __init__(self, now): self.now = now
    ...     def get_current_processing_time(self): return self.now
    >>> TumblingProcessingTimeWindows.of(Duration.of_seconds(1)).assign_windows(
    ...     "x", None, Clock(1234))
    (TimeWindow(start=1000, end=2000),)
    >>> natural = TumblingProcessingTimeWindows.of(1000, 0, WindowStagger.NATURAL)
    >>> natural.assign_windows("x", None, Clock(1234))  # windows start at 234 + k * 1000
    (TimeWindow(start=1234, end=2234),)
    >>> natural.assign_windows("y", None, Clock(2500))
    (TimeWindow(start=2234, end=3234),)
    """

    __slots__ = ("_stagger", "_stagger_offset")

    def __init__(
        self, size: int, offset: int = 0, window_stagger: WindowStagger = WindowStagger.ALIGNED
    ) -> None:
        super().__init__(size, offset)
        if not isinstance(window_stagger, WindowStagger):
            raise TypeError(
                f"{type(self).__name__}: window_stagger must be a WindowStagger (ALIGNED, "
                f"RANDOM or NATURAL), got {window_stagger!r}"
            )
        self._stagger = window_stagger
        self._stagger_offset: int | None = None

    @classmethod
    def of(
        cls,
        size: SpanLike,
        offset: SpanLike | None = None,
        window_stagger: WindowStagger = WindowStagger.ALIGNED,
    ) -> Any:
        return cls(size, 0 if offset is None else offset, window_stagger)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        now = context.get_current_processing_time()
        offset = self._offset
        if self._stagger is not WindowStagger.ALIGNED:
            stagger = self._stagger_offset
            if stagger is None:  # chosen once per subtask, at its first element (as Flink)
                stagger = self._stagger_offset = self._stagger.get_stagger_offset(now, self._size)
            offset = (offset + stagger) % self._size
        start = now - (now - offset) % self._size
        return (new_time_window((start, start + self._size)),)

    def get_window_stagger(self) -> WindowStagger:
        return self._stagger

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy (each subtask's) chooses its own stagger offset
        return (type(self), (self._size, self._offset, self._stagger))

    def __repr__(self) -> str:
        if self._stagger is WindowStagger.ALIGNED:
            return super().__repr__()
        return (
            f"{type(self).__name__}(size={self._size}, offset={self._offset}, "
            f"window_stagger={self._stagger!r})"
        )


class SlidingEventTimeWindows(_EventTimeAssigner, WindowAssigner[Any, TimeWindow]):
    """Windows of ``size`` starting every ``slide`` (they overlap when ``slide < size``).

    An element goes into every window ``[start, start + size)`` with ``start`` from
    ``ts - (ts - offset) % slide`` down while ``start > ts - size``. As in Flink,
    ``abs(offset) < slide``.

    >>> SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)).assign_windows(
    ...     "x", 7_000, None)
    [TimeWindow(start=5000, end=15000), TimeWindow(start=0, end=10000)]
    """

    __slots__ = ("_offset", "_size", "_slide")

    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        name = type(self).__name__
        self._size = _positive(size, "size", name)
        self._slide = _positive(slide, "slide", name)
        self._offset = _offset(offset, self._slide, "slide", name)

    @classmethod
    def of(cls, size: SpanLike, slide: SpanLike, offset: SpanLike | None = None) -> Any:
        return cls(size, slide, 0 if offset is None else offset)

    def _windows(self, timestamp: int) -> list[TimeWindow]:
        size, slide = self._size, self._slide
        start = timestamp - (timestamp - self._offset) % slide
        lowest = timestamp - size
        out = []
        while start > lowest:
            out.append(new_time_window((start, start + size)))
            start -= slide
        return out

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        if type(timestamp) is int and timestamp > MIN_TIMESTAMP:
            return self._windows(timestamp)
        if timestamp is None or timestamp == MIN_TIMESTAMP:
            raise no_timestamp_error(self)
        return self._windows(int(timestamp))

    def get_size(self) -> int:
        return self._size

    def get_slide(self) -> int:
        return self._slide

    def get_offset(self) -> int:
        return self._offset

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(size={self._size}, slide={self._slide}, offset={self._offset})"
        )


class SlidingProcessingTimeWindows(_ProcessingTimeAssigner, SlidingEventTimeWindows):
    """Sliding windows by processing time.

    >>> class Clock:
    ...     def get_current_processing_time(self): return 12
    >>> SlidingProcessingTimeWindows.of(10, 5).assign_windows("x", None, Clock())
    [TimeWindow(start=10, end=20), TimeWindow(start=5, end=15)]
    """

    __slots__ = ()

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        return self._windows(context.get_current_processing_time())


# -------------------------------------------------------------------------------- sessions


def _gap_extractor(extractor: Any) -> Callable[[Any], Any]:
    method = getattr(extractor, "extract", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(extractor):
        return extractor  # type: ignore[no-any-return]
    raise TypeError(
        f"extractor must be a SessionWindowTimeGapExtractor (extract(element) -> int ms) or a "
        f"callable element -> int ms, got {type(extractor).__name__}"
    )


def _dynamic_gap(extract: Callable[[Any], Any], element: Any) -> int:
    gap = extract(element)
    if not (isinstance(gap, numbers.Integral) and not isinstance(gap, bool)):
        if isinstance(gap, (Time, Duration)):
            gap = gap.to_milliseconds()
        else:
            raise TypeError(
                f"the session gap extractor returned {type(gap).__name__} ({gap!r}) for element "
                f"{element!r}; it must return the gap as int milliseconds"
            )
    if gap <= 0:
        raise ValueError(
            f"Dynamic session time gap must satisfy 0 < gap: the extractor returned {gap} ms for "
            f"element {element!r}; return a positive number of milliseconds"
        )
    return int(gap)


class EventTimeSessionWindows(_EventTimeAssigner, MergingWindowAssigner[Any, TimeWindow]):
    """Sessions by event time: each element opens ``[ts, ts + gap)``; overlapping (or touching)
    windows merge, so a session closes after ``gap`` without elements.

    >>> EventTimeSessionWindows.with_gap(Time.minutes(1))
    EventTimeSessionWindows(gap=60000)
    >>> EventTimeSessionWindows.with_gap(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: EventTimeSessionWindows: gap must be positive (> 0 ms), got 0 ms; ...
    """

    __slots__ = ("_gap",)

    def __init__(self, session_gap: SpanLike) -> None:
        self._gap = _positive(session_gap, "gap", type(self).__name__)

    @classmethod
    def with_gap(cls, size: SpanLike) -> Any:
        return cls(size)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        """Sessions whose gap ``extractor.extract(element)`` picks per element."""
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        if timestamp is None or timestamp == MIN_TIMESTAMP:
            raise no_timestamp_error(self)
        return [new_time_window((timestamp, timestamp + self._gap))]

    def merge_windows(self, windows: Iterable[TimeWindow], callback: Any) -> None:
        TimeWindow.merge_windows(windows, callback)

    def get_session_gap(self) -> int:
        return self._gap

    def __repr__(self) -> str:
        return f"{type(self).__name__}(gap={self._gap})"


class ProcessingTimeSessionWindows(_ProcessingTimeAssigner, EventTimeSessionWindows):
    """Sessions by processing time: each element opens ``[now, now + gap)``.

    >>> class Clock:
    ...     def get_current_processing_time(self): return 100
    >>> ProcessingTimeSessionWindows.with_gap(30).assign_windows("x", None, Clock())
    [TimeWindow(start=100, end=130)]
    """

    __slots__ = ()

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        now = context.get_current_processing_time()
        return [new_time_window((now, now + self._gap))]


class DynamicEventTimeSessionWindows(_EventTimeAssigner, MergingWindowAssigner[Any, TimeWindow]):
    """Event-time sessions with a gap chosen per element by a
    :class:`SessionWindowTimeGapExtractor` (or a callable ``element -> int ms``).

    >>> DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: 0).assign_windows(
    ...     "e", 5, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Dynamic session time gap must satisfy 0 < gap: the extractor returned 0 ms for \
element 'e'; ...
    """

    __slots__ = ("_extract", "_extractor")

    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        self._extract = _gap_extractor(session_window_time_gap_extractor)
        self._extractor = session_window_time_gap_extractor

    @classmethod
    def with_dynamic_gap(cls, extractor: Any) -> Any:
        return cls(extractor)

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        if timestamp is None or timestamp == MIN_TIMESTAMP:
            raise no_timestamp_error(self)
        return [new_time_window((timestamp, timestamp + _dynamic_gap(self._extract, element)))]

    def merge_windows(self, windows: Iterable[TimeWindow], callback: Any) -> None:
        TimeWindow.merge_windows(windows, callback)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._extractor!r})"


class DynamicProcessingTimeSessionWindows(_ProcessingTimeAssigner, DynamicEventTimeSessionWindows):
    """Processing-time sessions with a gap chosen per element.

    >>> class Clock:
    ...     def get_current_processing_time(self): return 50
    >>> DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: e[1]).assign_windows(
    ...     ("a", 7), None, Clock())
    [TimeWindow(start=50, end=57)]
    """

    __slots__ = ()

    def assign_windows(self, element: Any, timestamp: int | None, context: Any) -> Any:
        now = context.get_current_processing_time()
        return [new_time_window((now, now + _dynamic_gap(self._extract, element)))]
