"""The TTL rules every backend's TTL states follow, over ``(value, timestamp)`` entries.

A user value carries the time of its last write (or read, with ``OnReadAndWrite``); it is
expired when ``ts + ttl <= now``; ``ReturnExpiredIfNotCleanedUp`` still returns an expired value
that is stored. :class:`TtlRules` holds a state's settings and the rules over single entries;
:class:`TtlMapViews` derives the map views of a TTL map state from its two accessors. The heap
states (:mod:`~sparktide.runtime.state.ttl`) and the RocksDB ones
(:mod:`~sparktide.runtime.state.rocksdb_ttl`) both build on them.

>>> from sparktide.core.state import StateTtlConfig
>>> ttl_settings(StateTtlConfig.new_builder(10).build())
(10, False, False)
>>> class Rules(TtlRules):  # a state declares and sets the settings and the clock
...     __slots__ = ("_ttl", "_on_read", "_return_expired", "_time")
...     def __init__(self, config, time):
...         self._ttl, self._on_read, self._return_expired = ttl_settings(config)
...         self._time = time
...     def visible(self, entry, now):
...         return self._unexpired(entry, now)
...     def merged(self, a, b):
...         return self._merge_entries(a, b, lambda x, y: x + y)
>>> r = Rules(StateTtlConfig.new_builder(10).build(), lambda: 15)
>>> r.visible(("x", 5), 15) is None, r.visible(("x", 6), 15)
(True, 'x')
>>> r.merged(("a", 5), ("b", 6))
('b', 15)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sparktide.core.state import StateTtlConfig
from sparktide.runtime.state.folding import Reducer
from sparktide.runtime.state.heap import TtlEntry

__all__ = ["TtlMapViews", "TtlRules", "ttl_settings"]


def ttl_settings(config: StateTtlConfig) -> tuple[int, bool, bool]:
    """``(ttl_ms, on_read, return_expired)`` of ``config``: the values of :class:`TtlRules`'s
    ``_ttl``, ``_on_read`` and ``_return_expired``."""
    return (
        config.get_ttl().to_milliseconds(),
        config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite,
        config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp,
    )


class TtlRules:
    """The rules over single ``(value, ts)`` entries of a TTL state. Subclasses declare and set
    the four slots: the settings (:func:`ttl_settings`) and the clock ``_time``."""

    __slots__ = ()

    _ttl: int
    _on_read: bool
    _return_expired: bool
    _time: Callable[[], int]

    def _unexpired(self, e: TtlEntry | None, now: int) -> object:
        """The user value of entry ``e`` if visible, else ``None`` (Flink's getUnexpired)."""
        if e is None or (not self._return_expired and e[1] + self._ttl <= now):
            return None
        return e[0]

    def _merge_entries(self, a: TtlEntry, b: TtlEntry, combine: Reducer) -> TtlEntry | None:
        """Merge entries ``a`` and ``b`` of a single-value state into ``(value, now)``:
        ``combine`` of their visible values, the one visible value, or ``None`` if neither is."""
        now = self._time()
        ua, ub = self._unexpired(a, now), self._unexpired(b, now)
        if ua is None:
            return None if ub is None else (ub, now)
        if ub is None:
            return (ua, now)
        return (combine(ua, ub), now)


class TtlMapViews:
    """The reads of a TTL map state built from its accessors: ``_entry(key)``, the visible
    ``(value, ts)`` of one map key, and ``_visible()``, the visible ``(map_key, value)`` pairs
    (both drop what they find expired and refresh on read)."""

    __slots__ = ()

    def _entry(self, key: object) -> TtlEntry | None:
        raise NotImplementedError

    def _visible(self) -> list[tuple[object, object]]:
        raise NotImplementedError

    def get(self, key: object) -> object:
        e = self._entry(key)
        return None if e is None else e[0]

    def contains(self, key: object) -> bool:
        return self._entry(key) is not None

    def items(self) -> list[tuple[object, object]]:
        return self._visible()

    def keys(self) -> list[object]:
        return [mk for mk, _ in self._visible()]

    def values(self) -> list[object]:
        return [v for _, v in self._visible()]

    def __iter__(self) -> Iterator[object]:
        return iter(self.keys())
