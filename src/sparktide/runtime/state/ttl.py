"""State objects with time-to-live, and TTL cleanup (Flink's TTL state decorators).

Every user value carries its last-access timestamp (processing time from the backend's
``time_provider``): a value/reducing/aggregating entry is ``(value, ts)``, a list entry is a list
of ``(element, ts)``, a map entry a dict ``{map_key: (value, ts)}``. A value is expired when
``ts + ttl <= now``.

- Update type ``OnCreateAndWrite`` refreshes ``ts`` on writes, ``OnReadAndWrite`` on reads too.
- Visibility ``NeverReturnExpired`` hides expired values; ``ReturnExpiredIfNotCleanedUp``
  returns one that is still stored. Either way an expired value found by an access is removed.
- Cleanup (see :mod:`sparktide.runtime.state.cleanup`): incremental, on by default as in
  Flink, and on full snapshot.

These classes are separate from the plain heap states, so states without TTL pay nothing.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state import HeapKeyedStateBackend
>>> from sparktide.core.state import ValueStateDescriptor
>>> clock = [0]
>>> b = HeapKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
...                           time_provider=lambda: clock[0])
>>> d = ValueStateDescriptor("seen", None)
>>> d.enable_time_to_live(StateTtlConfig.new_builder(10).build())
>>> s = b.get_partitioned_state(d)
>>> b.set_current_key("k"); s.update("x"); clock[0] = 9; s.value()
'x'
>>> clock[0] = 10; s.value() is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from sparktide.core.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    StateTtlConfig,
    ValueState,
)
from sparktide.runtime.state.cleanup import IncrementalCleanup, purge_expired
from sparktide.runtime.state.folding import (
    AggregateLike,
    EntryKey,
    KeyGroupDict,
    Reducer,
    accumulate,
    checked_reduce,
    merge_accumulators,
)
from sparktide.runtime.state.heap import (
    HeapKvState,
    MergingMixin,
    R,
    StateTable,
    TtlEntry,
    check_mapping,
    check_not_none,
    list_values,
)
from sparktide.runtime.state.ttl_rules import TtlMapViews, TtlRules, ttl_settings

if TYPE_CHECKING:
    from sparktide.runtime.state.backend import HeapKeyedStateBackend

__all__ = [
    "TtlAggregatingState",
    "TtlListState",
    "TtlMapState",
    "TtlReducingState",
    "TtlState",
    "TtlValueState",
]


class TtlState(TtlRules, HeapKvState[R]):
    """Common part of the TTL states: the clock, the config flags and the access hook."""

    __slots__ = ("_cleanup", "_on_read", "_return_expired", "_time", "_ttl")

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: StateTable,
        namespace: object,
        config: StateTtlConfig,
        time_provider: Callable[[], int],
    ) -> None:
        super().__init__(backend, table, namespace)
        self._time = time_provider
        self._ttl, self._on_read, self._return_expired = ttl_settings(config)
        self._cleanup: IncrementalCleanup | None = table.cleanup

    def _enter(self) -> tuple[KeyGroupDict[R], EntryKey, int]:
        """The current key group's dict, the entry key and now; runs the cleanup hook."""
        now = self._time()
        c = self._cleanup
        if c is not None:
            c.ticks -= 1
            if not c.ticks or now < c.high:
                c.run(now)
        # InternalKvState._slot() inlined: one call less on every TTL access
        b = self._backend
        try:
            return self._data[b.current_key_group], (b.current_key, self._ns), now
        except TypeError:
            b.check_key()
            raise

    def _read_single(self: TtlState[TtlEntry]) -> TtlEntry | None:
        """The ``(value, ts)`` entry after the TTL check (``None`` when hidden or absent)."""
        d, k, now = self._enter()
        e = d.get(k)
        if e is None:
            return None
        if e[1] + self._ttl <= now:
            del d[k]
            return e if self._return_expired else None
        if self._on_read:
            d[k] = (e[0], now)
        return e

    def clear(self) -> None:
        d, k, _ = self._enter()
        d.pop(k, None)


class TtlValueState(TtlState[TtlEntry], ValueState[object]):
    """:class:`ValueState` with TTL."""

    __slots__ = ()

    # value() and update() inline _enter(): they are the hottest TTL paths

    def value(self) -> object:
        now = self._time()
        c = self._cleanup
        if c is not None:
            c.ticks -= 1
            if not c.ticks or now < c.high:
                c.run(now)
        b = self._backend
        try:
            d = self._data[b.current_key_group]
        except TypeError:
            b.check_key()
            raise
        k = (b.current_key, self._ns)
        e = d.get(k)
        if e is None:
            return None
        if e[1] + self._ttl <= now:
            del d[k]
            return e[0] if self._return_expired else None
        if self._on_read:
            d[k] = (e[0], now)
        return e[0]

    def update(self, value: object) -> None:
        now = self._time()
        c = self._cleanup
        if c is not None:
            c.ticks -= 1
            if not c.ticks or now < c.high:
                c.run(now)
        b = self._backend
        try:
            d = self._data[b.current_key_group]
        except TypeError:
            b.check_key()
            raise
        if value is None:
            d.pop((b.current_key, self._ns), None)
        else:
            d[(b.current_key, self._ns)] = (value, now)


class TtlListState(MergingMixin[list[TtlEntry]], TtlState[list[TtlEntry]], ListState[object]):
    """:class:`ListState` with TTL per element."""

    __slots__ = ()

    def get(self) -> list[object]:
        d, k, now = self._enter()
        lst = d.get(k)
        if lst is None:
            return []
        limit = now - self._ttl
        alive = [e for e in lst if e[1] > limit]
        if len(alive) == len(lst):
            result = [e[0] for e in lst]
        else:
            source = lst if self._return_expired else alive
            result = [e[0] for e in source]
            if alive:
                d[k] = alive
            else:
                del d[k]
        if self._on_read and alive:
            d[k] = [(e[0], now) for e in alive]
        return result

    def add(self, value: object) -> None:
        if value is None:
            check_not_none(value)
        d, k, now = self._enter()
        lst = d.get(k)
        if lst is None:
            d[k] = [(value, now)]
        else:
            lst.append((value, now))

    def add_all(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        if not new:
            return
        d, k, now = self._enter()
        wrapped = [(v, now) for v in new]
        lst = d.get(k)
        if lst is None:
            d[k] = wrapped
        else:
            lst.extend(wrapped)

    def update(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        d, k, now = self._enter()
        if new:
            d[k] = [(v, now) for v in new]
        else:
            d.pop(k, None)

    def _merge_raw(self, a: list[TtlEntry], b: list[TtlEntry]) -> list[TtlEntry]:
        a.extend(b)  # elements keep their own timestamps, as in Flink
        return a


class TtlMapState(TtlMapViews, TtlState[dict[object, TtlEntry]], MapState[object, object]):
    """:class:`MapState` with TTL per map entry."""

    __slots__ = ()

    def _entry(self, key: object) -> TtlEntry | None:
        """The ``(value, ts)`` of map key ``key`` after the TTL check, or ``None``."""
        d, k, now = self._enter()
        m = d.get(k)
        if m is None:
            return None
        e = m.get(key)
        if e is None:
            return None
        if e[1] + self._ttl <= now:
            del m[key]
            if not m:
                del d[k]
            return e if self._return_expired else None
        if self._on_read:
            m[key] = (e[0], now)
        return e

    def _visible(self) -> list[tuple[object, object]]:
        """The visible ``(map_key, value)`` pairs; drops expired ones, refreshes on read."""
        d, k, now = self._enter()
        m = d.get(k)
        if m is None:
            return []
        limit = now - self._ttl
        out: list[tuple[object, object]] = []
        expired: list[object] = []
        on_read = self._on_read
        for mk, e in list(m.items()):
            if e[1] > limit:
                out.append((mk, e[0]))
                if on_read:
                    m[mk] = (e[0], now)
            else:
                expired.append(mk)
                if self._return_expired:
                    out.append((mk, e[0]))
        if expired:
            for mk in expired:
                del m[mk]
            if not m:
                del d[k]
        return out

    def put(self, key: object, value: object) -> None:
        d, k, now = self._enter()
        m = d.get(k)
        if m is None:
            d[k] = {key: (value, now)}
        else:
            m[key] = (value, now)

    def put_all(self, dict_value: Mapping[object, object]) -> None:
        check_mapping(dict_value)
        if not dict_value:
            return
        d, k, now = self._enter()
        wrapped = {mk: (v, now) for mk, v in dict_value.items()}
        m = d.get(k)
        if m is None:
            d[k] = wrapped
        else:
            m.update(wrapped)

    def remove(self, key: object) -> None:
        d, k, _ = self._enter()
        m = d.get(k)
        if m is not None:
            m.pop(key, None)
            if not m:
                del d[k]

    def is_empty(self) -> bool:
        d, k, now = self._enter()
        m = d.get(k)
        if m is None:
            return True
        if self._return_expired:
            return False
        alive = purge_expired("map", m, now, self._ttl)
        if alive is None:
            del d[k]
            return True
        if alive is not m:
            d[k] = alive
        return False


class TtlReducingState(MergingMixin[TtlEntry], TtlState[TtlEntry], ReducingState[object]):
    """:class:`ReducingState` with TTL; the reduced value gets a fresh timestamp."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: StateTable,
        namespace: object,
        config: StateTtlConfig,
        time_provider: Callable[[], int],
        reduce: Reducer,
    ) -> None:
        super().__init__(backend, table, namespace, config, time_provider)
        self._reduce = reduce

    def get(self) -> object:
        e = self._read_single()
        return None if e is None else e[0]

    def add(self, value: object) -> None:
        d, k, now = self._enter()
        if value is None:
            d.pop(k, None)
            return
        old = self._unexpired(d.get(k), now)
        d[k] = (value if old is None else checked_reduce(self._reduce, old, value), now)

    def _merge_raw(self, a: TtlEntry, b: TtlEntry) -> TtlEntry | None:
        return self._merge_entries(a, b, lambda x, y: checked_reduce(self._reduce, x, y))


class TtlAggregatingState(
    MergingMixin[TtlEntry], TtlState[TtlEntry], AggregatingState[object, object]
):
    """:class:`AggregatingState` with TTL; the accumulator gets a fresh timestamp on add."""

    __slots__ = ("_agg",)

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: StateTable,
        namespace: object,
        config: StateTtlConfig,
        time_provider: Callable[[], int],
        agg: AggregateLike,
    ) -> None:
        super().__init__(backend, table, namespace, config, time_provider)
        self._agg = agg

    def get(self) -> object:
        e = self._read_single()
        return None if e is None else self._agg.get_result(e[0])

    def add(self, value: object) -> None:
        d, k, now = self._enter()
        if value is None:
            d.pop(k, None)
            return
        d[k] = (accumulate(self._agg, self._unexpired(d.get(k), now), value), now)

    def _merge_raw(self, a: TtlEntry, b: TtlEntry) -> TtlEntry | None:
        return self._merge_entries(a, b, lambda x, y: merge_accumulators(self._agg, x, y))
