"""Windows: the namespaces of window state (Flink's ``TimeWindow``, ``GlobalWindow``,
``CountWindow``).

A window is only an identifier: the elements of a window live in keyed state whose namespace is
the window, and its timers are registered under it. Windows are therefore hashable, comparable,
picklable values. ``TimeWindow`` and ``CountWindow`` are tuples underneath (``(start, end)`` and
``(id,)``), so hashing and equality run at C speed on the per-record path; a consequence is that
a window compares equal to the plain tuple of its fields.

>>> w = TimeWindow(0, 10)
>>> w.start, w.end, w.max_timestamp()
(0, 10, 9)
>>> w.intersects(TimeWindow(10, 20)), w.cover(TimeWindow(5, 15))
(True, TimeWindow(start=0, end=15))
>>> TimeWindow.get_window_start_with_offset(17, 0, 5)
15
>>> GlobalWindow.get().max_timestamp() == 2**63 - 1
True
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from functools import partial
from operator import itemgetter
from typing import Any

from sparktide.common.timestamps import MAX_TIMESTAMP

__all__ = ["CountWindow", "GlobalWindow", "TimeWindow", "Window"]


class Window(ABC):
    """A grouping of elements into a finite bucket, with a maximum timestamp: once the
    watermark passes it, every element of the window has arrived.

    Subclasses used as custom windows must be hashable and picklable (they are state
    namespaces and end up in snapshots).

    >>> issubclass(TimeWindow, Window) and issubclass(GlobalWindow, Window)
    True
    """

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window, tuple):
    """The time interval ``[start, end)`` in int milliseconds.

    >>> w = TimeWindow(5, 15)
    >>> w, w.max_timestamp(), sorted([TimeWindow(3, 9), w, TimeWindow(3, 4)])
    (TimeWindow(start=5, end=15), 14, [TimeWindow(start=3, end=4), TimeWindow(start=3, end=9), \
TimeWindow(start=5, end=15)])
    >>> import pickle; pickle.loads(pickle.dumps(w)) == w
    True
    """

    __slots__ = ()

    start = property(itemgetter(0), doc="The start (inclusive) in ms.")
    end = property(itemgetter(1), doc="The end (exclusive) in ms.")

    def __new__(cls, start: int, end: int) -> TimeWindow:
        return tuple.__new__(cls, (start, end))

    def __getnewargs__(self) -> tuple[int, int]:
        return (self[0], self[1])

    def max_timestamp(self) -> int:
        return self[1] - 1  # type: ignore[no-any-return]

    def intersects(self, other: TimeWindow) -> bool:
        """Whether the windows overlap or touch (``start <= other.end and end >= other.start``)."""
        return self[0] <= other[1] and self[1] >= other[0]  # type: ignore[no-any-return]

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both."""
        return TimeWindow(min(self[0], other[0]), max(self[1], other[1]))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of ``window_size`` (shifted by ``offset``) containing
        ``timestamp``; correct for negative timestamps too.

        >>> TimeWindow.get_window_start_with_offset(-3, 0, 5)
        -5
        """
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Collapse overlapping (or touching) windows: for every group of more than one window,
        call ``callback.merge(to_be_merged, merge_result)`` (or ``callback(...)`` if it is a
        plain callable). Windows are visited by start; ``to_be_merged`` lists them in that
        order.

        >>> TimeWindow.merge_windows(
        ...     [TimeWindow(0, 5), TimeWindow(9, 12), TimeWindow(4, 8), TimeWindow(20, 21)],
        ...     lambda merged, result: print(merged, "->", result))
        [TimeWindow(start=0, end=5), TimeWindow(start=4, end=8)] -> TimeWindow(start=0, end=8)
        """
        merge = getattr(callback, "merge", callback)
        groups: list[tuple[TimeWindow, list[TimeWindow]]] = []
        current: TimeWindow | None = None
        members: list[TimeWindow] = []
        for candidate in sorted(windows, key=itemgetter(0)):
            if current is None:
                current, members = candidate, [candidate]
            elif current.intersects(candidate):
                current = current.cover(candidate)
                if candidate not in members:
                    members.append(candidate)
            else:
                groups.append((current, members))
                current, members = candidate, [candidate]
        if current is not None:
            groups.append((current, members))
        for result, group in groups:
            if len(group) > 1:
                merge(group, result)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self[0]}, end={self[1]})"


new_time_window: Callable[[tuple[int, int]], TimeWindow] = partial(tuple.__new__, TimeWindow)
"""``new_time_window((start, end))``: a TimeWindow without the Python-level constructor (the
built-in assigners use it per record)."""


class CountWindow(Window, tuple):
    """A window identified by a number (PyFlink's count window assigners).

    >>> CountWindow(3).id, CountWindow(3) == CountWindow(3), CountWindow(3)
    (3, True, CountWindow(id=3))
    """

    __slots__ = ()

    id = property(itemgetter(0), doc="The window's number.")

    def __new__(cls, id: int) -> CountWindow:
        return tuple.__new__(cls, (id,))

    def __getnewargs__(self) -> tuple[int]:
        return (self[0],)

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __repr__(self) -> str:
        return f"CountWindow(id={self[0]})"


class GlobalWindow(Window):
    """The single window of :class:`~sparktide.datastream.window.GlobalWindows`: every element
    of a key goes into it. A singleton.

    >>> GlobalWindow() is GlobalWindow.get(), GlobalWindow()
    (True, GlobalWindow)
    """

    __slots__ = ()
    _instance: GlobalWindow | None = None

    def __new__(cls) -> GlobalWindow:
        inst = cls._instance
        if inst is None:
            inst = cls._instance = super().__new__(cls)
        return inst

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __reduce__(self) -> tuple[Any, ...]:
        return (GlobalWindow, ())

    def __lt__(self, other: object) -> bool:
        if isinstance(other, GlobalWindow):
            return False
        return NotImplemented

    def __repr__(self) -> str:
        return "GlobalWindow"
