"""``MergingWindowSet``: the in-flight windows of one key for a merging assigner (sessions),
each mapped to the *state window*, the namespace that holds its contents (Flink's
``MergingWindowSet``).

When windows merge, the contents are not moved: the merge result keeps the state window of one
of the merged windows (the earliest, by the order the assigner reports them; Flink takes
"any"), and the other state windows are merged into it. The mapping lives in keyed state (a
map state ``"merging-window-set"``, void namespace), so it is snapshotted with everything
else; a set is loaded per element or timer and written back by :meth:`persist` only when it
changed. A store with a live dict (:class:`LiveMappingStore`, the heap map state) is read and
updated in place: no copy per element, and :meth:`persist` only stores a new or emptied map.

>>> from sparktide.core.window.assigners import EventTimeSessionWindows
>>> from sparktide.core.window.windows import TimeWindow
>>> class Store(dict):  # stands in for the map state
...     def items(self): return list(super().items())
...     def put_all(self, d): self.update(d)
>>> store = Store()
>>> s = MergingWindowSet(EventTimeSessionWindows.with_gap(5), store)
>>> s.add_window(TimeWindow(0, 5), print)
TimeWindow(start=0, end=5)
>>> s.add_window(TimeWindow(3, 8), lambda *args: print("merge", *args))
merge TimeWindow(start=0, end=8) [TimeWindow(start=0, end=5)] TimeWindow(start=0, end=5) []
TimeWindow(start=0, end=8)
>>> s.get_state_window(TimeWindow(0, 8))
TimeWindow(start=0, end=5)
>>> s.persist(); store
{TimeWindow(start=0, end=8): TimeWindow(start=0, end=5)}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from sparktide.core.window.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
)
from sparktide.core.window.windows import TimeWindow, Window

__all__ = [
    "LiveMappingStore",
    "MergeFunction",
    "MergingWindowSet",
    "SetLookup",
    "WindowMappingStore",
]

MergeFunction = Callable[[Window, list[Window], Window, list[Window]], None]
"""``merge(merge_result, merged_windows, state_window_result, merged_state_windows)``."""


class WindowMappingStore(Protocol):
    """Where the mapping is kept: the operator's map state ``"merging-window-set"``."""

    def items(self) -> Iterable[tuple[Window, Window]]: ...

    def clear(self) -> None: ...

    def put_all(self, dict_value: Mapping[Window, Window], /) -> None: ...


class LiveMappingStore(WindowMappingStore, Protocol):
    """A store that hands out its stored dict itself (the heap map state): the set updates it
    in place instead of copying it in and out."""

    def live_dict(self) -> dict[Window, Window] | None: ...

    def store_live_dict(self, value: dict[Window, Window], /) -> None: ...


@dataclass(frozen=True)
class SetLookup:
    """What a :class:`MergingWindowSet` looks up in its assigner and store, the same for every
    key: whether the assigner is one of the built-in session assigners (exactly those classes:
    they merge time windows with ``TimeWindow.merge_windows``), and the store's ``live_dict``
    (``None``: the store is copied in and out)."""

    sessions: bool
    live: Callable[[], dict[Window, Window] | None] | None

    @staticmethod
    def of(assigner: object, state: object) -> SetLookup:
        return SetLookup(type(assigner) in _TIME_SESSIONS, getattr(state, "live_dict", None))


class MergingWindowSet:
    """The window -> state window mapping of the current key, loaded from ``state`` (a map
    state, or anything with ``items()``, ``clear()`` and ``put_all(dict)``; a
    :class:`LiveMappingStore` is updated in place)."""

    __slots__ = ("_assigner", "_initial", "_live", "_mapping", "_sessions", "_state", "_stored")
    _mapping: dict[Window, Window]
    _initial: dict[Window, Window]

    def __init__(
        self,
        assigner: MergingWindowAssigner[object, Window],
        state: WindowMappingStore,
        looked_up: SetLookup | None = None,
    ) -> None:
        if looked_up is None:
            looked_up = SetLookup.of(assigner, state)
        self._assigner = assigner
        self._sessions = looked_up.sessions
        self._state = state
        live = looked_up.live
        self._live = live is not None
        if live is not None:
            stored = live()
            self._stored = stored is not None  # the state holds self._mapping itself
            self._mapping = {} if stored is None else stored
            self._initial = {}
            return
        self._stored = False
        self._mapping = dict(state.items())
        self._initial = dict(self._mapping)

    @classmethod
    def loader(
        cls, assigner: MergingWindowAssigner[object, Window], state: WindowMappingStore
    ) -> Callable[[], MergingWindowSet]:
        """What loads the set of the current key, per element or timer: ``MergingWindowSet(
        assigner, state)``, with what does not depend on the key looked up once."""
        looked_up = SetLookup.of(assigner, state)
        return lambda: cls(assigner, state, looked_up)

    def persist(self) -> None:
        """Write the mapping back to the state if it changed."""
        if self._live:
            # the stored dict was changed in place: only a new or emptied map is (re)stored
            if self._stored != bool(self._mapping):
                cast(LiveMappingStore, self._state).store_live_dict(self._mapping)
                self._stored = not self._stored
            return
        if self._mapping != self._initial:
            self._state.clear()
            if self._mapping:
                self._state.put_all(dict(self._mapping))
            self._initial = dict(self._mapping)

    def get_state_window(self, window: Window) -> Window | None:
        """The state window of the in-flight ``window``, or None."""
        return self._mapping.get(window)

    def retire_window(self, window: Window) -> None:
        """Forget ``window`` (it was purged or expired); its state must be cleared by the
        caller."""
        if self._mapping.pop(window, None) is None:
            raise KeyError(f"Window {window!r} is not in the in-flight window set")

    def windows(self) -> list[Window]:
        """The in-flight windows (in insertion order)."""
        return list(self._mapping)

    def add_window(self, new_window: Window, merge_function: MergeFunction) -> Window:
        """Add ``new_window`` and merge it (and whatever else the assigner merges); return the
        window ``new_window`` ended up in.

        ``merge_function(merge_result, merged_windows, state_window_result,
        merged_state_windows)`` is called per merge, after the mapping was updated:
        ``merged_windows`` are the in-flight windows that disappeared (``new_window``
        excluded: it never had state), ``state_window_result`` the state window the result
        keeps and ``merged_state_windows`` the state windows to merge into it.
        """
        mapping = self._mapping
        if self._sessions and len(mapping) <= 1 and type(new_window) is TimeWindow:
            return self._add_to_session(new_window, merge_function)
        results: dict[Window, list[Window]] = {}

        def collect(to_be_merged: Iterable[Window], merge_result: Window) -> None:
            results[merge_result] = list(to_be_merged)

        self._assigner.merge_windows([*mapping, new_window], _Callback(collect))
        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in results.items():
            if new_window in merged_windows:
                merged_windows = [w for w in merged_windows if w != new_window]
                merged_new_window = True
                result_window = merge_result
            if not merged_windows:  # only the new window: nothing held state yet
                mapping.setdefault(merge_result, merge_result)
                continue
            if len(merged_windows) == 1 and merged_windows[0] == merge_result:
                continue  # an in-flight window took in the new one: the mapping is unchanged
            state_window_result = mapping[merged_windows[0]]
            merged_state_windows = []
            for w in merged_windows:
                sw = mapping.pop(w, None)
                if sw is not None and sw != state_window_result:
                    merged_state_windows.append(sw)
            mapping[merge_result] = state_window_result
            if not (len(merged_windows) == 1 and merged_windows[0] == merge_result):
                merge_function(
                    merge_result, merged_windows, state_window_result, merged_state_windows
                )
        if not results or (result_window == new_window and not merged_new_window):
            # Flink re-maps the window to itself even when it is already in flight, which
            # loses the contents of an equal merged window (possible with dynamic gaps): keep it.
            mapping.setdefault(result_window, result_window)
        return result_window

    def _add_to_session(self, new_window: TimeWindow, merge_function: MergeFunction) -> Window:
        """:meth:`add_window` of a time window next to at most one in-flight window, with
        :meth:`TimeWindow.merge_windows`'s merging: the same mapping and merge calls without
        sorting and grouping."""
        mapping = self._mapping
        if mapping:
            (window,) = mapping
            if type(window) is TimeWindow and window != new_window:
                start, end = new_window
                if window[0] <= end and window[1] >= start:  # they intersect: one group
                    merged = TimeWindow(min(window[0], start), max(window[1], end))
                    if merged == window:
                        return window  # the in-flight window took in the new one
                    state_window = mapping.pop(window)
                    mapping[merged] = state_window
                    merge_function(merged, [window], state_window, [])
                    return merged
        mapping.setdefault(new_window, new_window)
        return new_window

    def check_invariants(self) -> None:
        """Assert the invariants (for tests): state windows are distinct, and no two in-flight
        windows would still merge."""
        values = list(self._mapping.values())
        if not (len(values) == len(set(values))):
            raise AssertionError(f"state windows shared: {self._mapping}")
        pending: list[Window] = []
        self._assigner.merge_windows(
            list(self._mapping), _Callback(lambda merged, result: pending.append(result))
        )
        if pending:
            raise AssertionError(f"in-flight windows still merge into {pending}: {self._mapping}")

    def __repr__(self) -> str:
        return f"MergingWindowSet({self._mapping!r})"


_TIME_SESSIONS = (
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
)


class _Callback:
    """A ``MergeCallback`` around a plain function (assigners may call ``callback.merge``)."""

    __slots__ = ("merge",)

    def __init__(self, merge: Callable[[Iterable[Window], Window], None]) -> None:
        self.merge = merge

    def __call__(self, to_be_merged: Iterable[Window], merge_result: Window) -> None:
        self.merge(to_be_merged, merge_result)
