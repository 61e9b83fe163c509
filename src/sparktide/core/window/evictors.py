"""Evictors: remove elements from a window before and/or after the window function runs
(Flink's ``Evictor``; PyFlink has none).

An evictor gets the window's elements as a ``list`` of :class:`TimestampedValue` and removes
elements by mutating that list in place (``del elements[:n]``, ``elements[:] = [...]``,
``elements.remove(x)``); what is left after :meth:`Evictor.evict_after` is what the window keeps.
A window with an evictor keeps all its elements (no incremental aggregation).

>>> elements = [TimestampedValue(v, t) for v, t in [("a", 1), ("b", 5), ("c", 9)]]
>>> CountEvictor.of(2).evict_before(elements, 3, None, None)
>>> [e.get_value() for e in elements]
['b', 'c']
>>> TimeEvictor.of(3).evict_before(elements, 2, None, None)
>>> [e.get_value() for e in elements]
['c']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sparktide.common.time import to_millis

__all__ = [
    "CountEvictor",
    "DeltaEvictor",
    "DeltaFunction",
    "Evictor",
    "TimeEvictor",
    "TimestampedValue",
]

T = TypeVar("T")
W = TypeVar("W")


class TimestampedValue(Generic[T]):
    """An element of a window with its event timestamp (``None`` if it has none).

    >>> tv = TimestampedValue("x", 5)
    >>> tv.get_value(), tv.get_timestamp(), tv.has_timestamp(), tv
    ('x', 5, True, TimestampedValue('x', 5))
    >>> TimestampedValue("y").get_timestamp()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: TimestampedValue('y', None) has no timestamp; check has_timestamp() first
    """

    __slots__ = ("timestamp", "value")

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    def get_value(self) -> T:
        return self.value

    def get_timestamp(self) -> int:
        if self.timestamp is None:
            raise ValueError(f"{self!r} has no timestamp; check has_timestamp() first")
        return self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TimestampedValue)
            and other.value == self.value
            and other.timestamp == self.timestamp
        )

    def __hash__(self) -> int:
        return hash((self.value, self.timestamp))

    def __reduce__(self) -> tuple[Any, ...]:
        return (TimestampedValue, (self.value, self.timestamp))

    def __repr__(self) -> str:
        return f"TimestampedValue({self.value!r}, {self.timestamp!r})"


class Evictor(ABC, Generic[T, W]):
    """Removes elements from a window's ``elements`` list, in place.

    ``evict_before`` runs after the trigger fired and before the window function;
    ``evict_after`` runs after the window function. ``size`` is ``len(elements)``;
    ``evictor_context`` has ``get_current_processing_time()`` and ``get_current_watermark()``.

    >>> class DropOdd(Evictor):
    ...     def evict_before(self, elements, size, window, evictor_context):
    ...         elements[:] = [e for e in elements if e.get_value() % 2 == 0]
    ...     def evict_after(self, elements, size, window, evictor_context):
    ...         pass
    >>> es = [TimestampedValue(v, v) for v in range(5)]
    >>> DropOdd().evict_before(es, 5, None, None); [e.value for e in es]
    [0, 2, 4]
    """

    class EvictorContext(ABC):
        """Time as seen by the window operator."""

        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

        def get_metric_group(self) -> Any:
            raise NotImplementedError("metric groups are not available to evictors yet")

    @abstractmethod
    def evict_before(
        self, elements: list[TimestampedValue[T]], size: int, window: W, evictor_context: Any
    ) -> None:
        """Remove elements before the window function sees them."""

    @abstractmethod
    def evict_after(
        self, elements: list[TimestampedValue[T]], size: int, window: W, evictor_context: Any
    ) -> None:
        """Remove elements after the window function ran."""


class _BeforeOrAfter(Evictor[Any, Any]):
    """Built-in evictors evict either before (default) or after the function."""

    __slots__ = ("_after",)

    def __init__(self, do_evict_after: bool) -> None:
        if not isinstance(do_evict_after, bool):
            raise TypeError(
                f"do_evict_after must be a bool, got {type(do_evict_after).__name__} "
                f"({do_evict_after!r})"
            )
        self._after = do_evict_after

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        raise NotImplementedError

    def evict_before(self, elements: Any, size: int, window: Any, evictor_context: Any) -> None:
        if not self._after:
            self._evict(elements, size)

    def evict_after(self, elements: Any, size: int, window: Any, evictor_context: Any) -> None:
        if self._after:
            self._evict(elements, size)


class CountEvictor(_BeforeOrAfter):
    """Keeps the last ``max_count`` elements (in arrival order) of the window.

    >>> CountEvictor.of(-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: CountEvictor: max_count must be an int >= 0 (elements to keep), got -1; ...
    """

    __slots__ = ("_max",)

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if type(max_count) is not int or max_count < 0:
            raise ValueError(
                f"CountEvictor: max_count must be an int >= 0 (elements to keep), got "
                f"{max_count!r}; pass e.g. CountEvictor.of(100)"
            )
        super().__init__(do_evict_after)
        self._max = max_count

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if size > self._max:
            del elements[: size - self._max]

    def get_max_count(self) -> int:
        return self._max

    def __repr__(self) -> str:
        return f"CountEvictor({self._max}, do_evict_after={self._after})"


class TimeEvictor(_BeforeOrAfter):
    """Keeps the elements with ``timestamp > max_ts - window_size``, where ``max_ts`` is the
    largest timestamp in the window (nothing is evicted when elements have no timestamp).

    >>> TimeEvictor.of(10)
    TimeEvictor(10, do_evict_after=False)
    """

    __slots__ = ("_size",)

    def __init__(self, window_size: Any, do_evict_after: bool = False) -> None:
        ms = to_millis(window_size, "window_size")
        if ms < 0:
            raise ValueError(f"TimeEvictor: window_size must be >= 0 ms, got {ms} ms")
        super().__init__(do_evict_after)
        self._size = ms

    @staticmethod
    def of(window_size: Any, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(window_size, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements or elements[0].timestamp is None:
            return
        cutoff = max(e.timestamp for e in elements if e.timestamp is not None) - self._size
        elements[:] = [e for e in elements if e.timestamp is None or e.timestamp > cutoff]

    def get_window_size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"TimeEvictor({self._size}, do_evict_after={self._after})"


class DeltaFunction(ABC, Generic[T]):
    """The distance between two elements, for :class:`DeltaEvictor`.

    >>> class Gap(DeltaFunction):
    ...     def get_delta(self, old_data_point, new_data_point):
    ...         return abs(new_data_point - old_data_point)
    >>> es = [TimestampedValue(v) for v in [1, 4, 5]]
    >>> DeltaEvictor.of(2, Gap()).evict_before(es, 3, None, None); [e.value for e in es]
    [4, 5]
    """

    @abstractmethod
    def get_delta(self, old_data_point: T, new_data_point: T) -> float: ...


class DeltaEvictor(_BeforeOrAfter):
    """Evicts every element whose delta to the last element is ``>= threshold``.

    ``delta_function`` is a :class:`DeltaFunction` or a callable ``(old, new) -> float``.

    >>> es = [TimestampedValue(v) for v in [1, 7, 9, 10]]
    >>> DeltaEvictor.of(3.0, lambda old, new: abs(new - old)).evict_before(es, 4, None, None)
    >>> [e.value for e in es]
    [9, 10]
    """

    __slots__ = ("_delta", "_delta_function", "_threshold")

    def __init__(self, threshold: float, delta_function: Any, do_evict_after: bool = False) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise TypeError(
                f"DeltaEvictor: threshold must be a number, got {type(threshold).__name__}"
            )
        delta = getattr(delta_function, "get_delta", delta_function)
        if not callable(delta):
            raise TypeError(
                "DeltaEvictor: delta_function must be a DeltaFunction (get_delta(old, new)) or a "
                f"callable (old, new) -> float, got {type(delta_function).__name__}"
            )
        super().__init__(do_evict_after)
        self._threshold = threshold
        self._delta_function = delta_function
        self._delta: Callable[[Any, Any], float] = delta

    @staticmethod
    def of(threshold: float, delta_function: Any, do_evict_after: bool = False) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements:
            return
        last = elements[-1].value
        delta, threshold = self._delta, self._threshold
        elements[:] = [e for e in elements if delta(e.value, last) < threshold]

    def __repr__(self) -> str:
        return f"DeltaEvictor({self._threshold}, {self._delta_function!r}, {self._after})"
