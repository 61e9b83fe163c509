"""State objects with time-to-live in the RocksDB backend, and their incremental cleanup.

The rules are the heap backend's (:mod:`~sparktide.runtime.state.ttl`): every user value carries
its last-access timestamp, it is expired when ``ts + ttl <= now``, ``OnReadAndWrite`` refreshes
on reads, ``ReturnExpiredIfNotCleanedUp`` returns an expired value still stored, and an access
that finds an expired value removes it. Cleanup of values nobody reads: incremental (a cursor
walks the column family, ``cleanup_size`` entries per state access, as the heap's
:class:`~sparktide.runtime.state.cleanup.IncrementalCleanup` walks its dicts) and on full
snapshot (:func:`~sparktide.runtime.state.cleanup.purge_expired`).

>>> import tempfile
>>> from sparktide.core.state import StateTtlConfig, ValueStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
>>> clock = [0]
>>> b = RocksDBKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
...     time_provider=lambda: clock[0], directory=tempfile.mkdtemp())
>>> d = ValueStateDescriptor("seen", None)
>>> d.enable_time_to_live(StateTtlConfig.new_builder(10).build())
>>> s = b.get_partitioned_state(d)
>>> b.set_current_key("k"); s.update("x"); clock[0] = 9; s.value()
'x'
>>> clock[0] = 10; s.value() is None
True
>>> b.dispose()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from sparktide.core.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    MapState,
    ReducingState,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueState,
)
from sparktide.runtime.state.folding import (
    AggregateLike,
    Reducer,
    accumulate,
    checked_reduce,
    merge_accumulators,
)
from sparktide.runtime.state.heap import (
    InternalKvState,
    TtlEntry,
    check_mapping,
    check_not_none,
    list_values,
)
from sparktide.runtime.state.rocksdb_entries import successor
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_layout import decode_timestamp, key_group_bounds
from sparktide.runtime.state.rocksdb_states import (
    ElementsMixin,
    RocksDBKvState,
    _Merging,
    scan_prefix,
)
from sparktide.runtime.state.ttl_rules import TtlMapViews, TtlRules, ttl_settings

if TYPE_CHECKING:
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend, StoredState

__all__ = [
    "RocksDBIncrementalCleanup",
    "RocksDBTtlAggregatingState",
    "RocksDBTtlListState",
    "RocksDBTtlMapState",
    "RocksDBTtlReducingState",
    "RocksDBTtlValueState",
    "attach_cleanup",
    "create_ttl_state",
]


class _TtlState(TtlRules, RocksDBKvState):
    """Common part of the TTL states: the clock, the config flags and the access hook."""

    __slots__ = ("_cleanup", "_on_read", "_return_expired", "_time", "_ttl")

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        state: StoredState,
        namespace: object,
        config: StateTtlConfig,
    ) -> None:
        super().__init__(backend, state, namespace)
        self._time = backend.time_provider
        self._ttl, self._on_read, self._return_expired = ttl_settings(config)
        self._cleanup: RocksDBIncrementalCleanup | None = state.cleanup

    def _enter(self) -> tuple[bytes, int]:
        """The current store key and now; runs the cleanup hook."""
        now = self._time()
        c = self._cleanup
        if c is not None:
            c.ticks -= 1
            if not c.ticks or now < c.high:
                c.run(now)
        return self._key(), now

    def _read_single(self) -> TtlEntry | None:
        """The ``(value, ts)`` entry after the TTL check (``None`` when hidden or absent)."""
        k, now = self._enter()
        data = self._get(k)
        if data is None:
            return None
        e: TtlEntry = self._codec.decode_single(data)
        if e[1] + self._ttl <= now:
            self._delete(k)
            return e if self._return_expired else None
        if self._on_read:
            self._put(k, self._codec.encode_single((e[0], now)))
        return e

    def _merge_unexpired(self, a: bytes, b: bytes, combine: Reducer) -> bytes | None:
        """:meth:`_merge_entries` over stored single values."""
        c = self._codec
        merged = self._merge_entries(c.decode_single(a), c.decode_single(b), combine)
        return None if merged is None else c.encode_single(merged)

    def clear(self) -> None:
        k, _ = self._enter()
        self._delete(k)


class RocksDBTtlValueState(_TtlState, ValueState[object]):
    """:class:`ValueState` with TTL in RocksDB."""

    __slots__ = ()

    def value(self) -> object:
        e = self._read_single()
        return None if e is None else e[0]

    def update(self, value: object) -> None:
        k, now = self._enter()
        if value is None:
            self._delete(k)
        else:
            self._put(k, self._codec.encode_single((value, now)))


class RocksDBTtlListState(ElementsMixin, _TtlState, ListState[object]):
    """:class:`ListState` with TTL per element in RocksDB (one stored entry per element)."""

    __slots__ = ()

    def get(self) -> list[object]:
        k, now = self._enter()
        c = self._codec
        limit = now - self._ttl
        result: list[object] = []
        for sk, data in self._element_keys(k):
            e = c.decode_single(data)
            if e[1] > limit:
                result.append(e[0])
                if self._on_read:
                    self._put(sk, c.encode_single((e[0], now)))
            else:
                self._delete(sk)
                if self._return_expired:
                    result.append(e[0])
        return result

    def add(self, value: object) -> None:
        if value is None:
            check_not_none(value)
        k, now = self._enter()
        self._append(k, [self._codec.encode_element((value, now))])

    def add_all(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        if not new:
            return
        k, now = self._enter()
        enc = self._codec.encode_element
        self._append(k, [enc((v, now)) for v in new])

    def update(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        k, now = self._enter()
        self._remove_all(k)
        enc = self._codec.encode_element
        self._append(k, [enc((v, now)) for v in new])

    def clear(self) -> None:
        k, _ = self._enter()
        self._remove_all(k)


class RocksDBTtlMapState(TtlMapViews, _TtlState, MapState[object, object]):
    """:class:`MapState` with TTL per map entry in RocksDB."""

    __slots__ = ()

    def _entry(self, key: object) -> TtlEntry | None:
        k, now = self._enter()
        c = self._codec
        sk = k + c.map_key_bytes(key)
        data = self._get(sk)
        if data is None:
            return None
        mk, e = c.decode_map_entry(data)
        if e[1] + self._ttl <= now:
            self._delete(sk)
            return e if self._return_expired else None
        if self._on_read:
            self._put(sk, c.encode_map_value(c.map_seq(data), mk, (e[0], now)))
        return e  # type: ignore[no-any-return]

    def _visible(self) -> list[tuple[object, object]]:
        k, now = self._enter()
        c = self._codec
        limit = now - self._ttl
        out: list[tuple[object, object]] = []
        entries = sorted(scan_prefix(self._cf, k), key=lambda item: c.map_seq(item[1]))
        for sk, data in entries:
            mk, e = c.decode_map_entry(data)
            if e[1] > limit:
                out.append((mk, e[0]))
                if self._on_read:
                    self._put(sk, c.encode_map_value(c.map_seq(data), mk, (e[0], now)))
            else:
                self._delete(sk)
                if self._return_expired:
                    out.append((mk, e[0]))
        return out

    def put(self, key: object, value: object) -> None:
        k, now = self._enter()
        self._put_at(k, key, value, now)

    def _put_at(self, k: bytes, key: object, value: object, now: int) -> None:
        c = self._codec
        sk = k + c.map_key_bytes(key)
        old = self._get(sk)
        seq = self._backend.next_seq() if old is None else c.map_seq(old)
        self._put(sk, c.encode_map_value(seq, key, (value, now)))

    def put_all(self, dict_value: Mapping[object, object]) -> None:
        check_mapping(dict_value)
        if not dict_value:
            return
        k, now = self._enter()
        for mk, v in dict_value.items():
            self._put_at(k, mk, v, now)

    def remove(self, key: object) -> None:
        k, _ = self._enter()
        self._delete(k + self._codec.map_key_bytes(key))

    def is_empty(self) -> bool:
        k, now = self._enter()
        entries = list(scan_prefix(self._cf, k))
        if not entries:
            return True
        if self._return_expired:
            return False
        limit = now - self._ttl
        empty = True
        for sk, data in entries:
            if decode_timestamp(data) > limit:
                empty = False
            else:
                self._delete(sk)
        return empty

    def clear(self) -> None:
        k, _ = self._enter()
        self._cf.delete_range(k, successor(k))


class RocksDBTtlReducingState(_Merging, _TtlState, ReducingState[object]):
    """:class:`ReducingState` with TTL in RocksDB; the reduced value gets a fresh timestamp."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        state: StoredState,
        namespace: object,
        config: StateTtlConfig,
        reduce: Reducer,
    ) -> None:
        super().__init__(backend, state, namespace, config)
        self._reduce = reduce

    def get(self) -> object:
        e = self._read_single()
        return None if e is None else e[0]

    def add(self, value: object) -> None:
        k, now = self._enter()
        if value is None:
            self._delete(k)
            return
        c = self._codec
        data = self._get(k)
        old = None if data is None else self._unexpired(c.decode_single(data), now)
        new = value if old is None else checked_reduce(self._reduce, old, value)
        self._put(k, c.encode_single((new, now)))

    def _merge_data(self, a: bytes, b: bytes) -> bytes | None:
        return self._merge_unexpired(a, b, lambda x, y: checked_reduce(self._reduce, x, y))


class RocksDBTtlAggregatingState(_Merging, _TtlState, AggregatingState[object, object]):
    """:class:`AggregatingState` with TTL in RocksDB; the accumulator gets a fresh timestamp
    on add."""

    __slots__ = ("_agg",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        state: StoredState,
        namespace: object,
        config: StateTtlConfig,
        agg: AggregateLike,
    ) -> None:
        super().__init__(backend, state, namespace, config)
        self._agg = agg

    def get(self) -> object:
        e = self._read_single()
        return None if e is None else self._agg.get_result(e[0])

    def add(self, value: object) -> None:
        k, now = self._enter()
        if value is None:
            self._delete(k)
            return
        c = self._codec
        data = self._get(k)
        old = None if data is None else self._unexpired(c.decode_single(data), now)
        self._put(k, c.encode_single((accumulate(self._agg, old, value), now)))

    def _merge_data(self, a: bytes, b: bytes) -> bytes | None:
        return self._merge_unexpired(a, b, lambda x, y: merge_accumulators(self._agg, x, y))


_SIMPLE: Mapping[str, Callable[..., InternalKvState]] = MappingProxyType(
    {
        "value": RocksDBTtlValueState,
        "list": RocksDBTtlListState,
        "map": RocksDBTtlMapState,
    }
)


def create_ttl_state(
    backend: RocksDBKeyedStateBackend,
    state: StoredState,
    descriptor: StateDescriptor,
    namespace: object,
    config: StateTtlConfig,
) -> InternalKvState:
    """The TTL state object of ``descriptor``'s kind."""
    if isinstance(descriptor, ReducingStateDescriptor):
        return RocksDBTtlReducingState(backend, state, namespace, config, descriptor.reduce)
    if isinstance(descriptor, AggregatingStateDescriptor):
        agg: AggregateLike = descriptor.get_agg_function()
        return RocksDBTtlAggregatingState(backend, state, namespace, config, agg)
    return _SIMPLE[state.kind](backend, state, namespace, config)


def attach_cleanup(
    backend: RocksDBKeyedStateBackend, state: StoredState, config: StateTtlConfig
) -> None:
    """Give ``state`` the incremental cleanup its TTL config asks for (none, per state access,
    or also per record)."""
    strategy = config.get_cleanup_strategies().get_incremental_cleanup_strategy()
    if strategy is None:
        return
    cleanup = RocksDBIncrementalCleanup(
        backend, state, config.get_ttl().to_milliseconds(), strategy.get_cleanup_size()
    )
    state.cleanup = cleanup
    if strategy.run_cleanup_for_every_record():
        time = backend.time_provider
        backend.add_key_listener(lambda: cleanup.step(time()))


_MIN = -(2**63)


class RocksDBIncrementalCleanup:
    """Walks a TTL state's column family with a cursor, dropping expired values: the heap's
    :class:`~sparktide.runtime.state.cleanup.IncrementalCleanup` (same interface, same
    ``BATCH`` and quiet bound) over stored entries instead of dicts.
    """

    BATCH = 16

    __slots__ = (
        "_backend",
        "_cursor",
        "_pass_min_ts",
        "_pass_start",
        "_quiet_until",
        "_size",
        "_state",
        "_ttl",
        "high",
        "ticks",
    )

    def __init__(
        self, backend: RocksDBKeyedStateBackend, state: StoredState, ttl: int, cleanup_size: int
    ) -> None:
        self._backend = backend
        self._state = state
        self._ttl = ttl
        self._size = cleanup_size * self.BATCH
        self.ticks = self.BATCH
        self.reset()

    def reset(self) -> None:
        """Forget the current pass and its bound (entries were added from outside)."""
        self._cursor: bytes | None = None
        self._pass_start: int | None = None
        self._pass_min_ts: int | None = None
        self._quiet_until: int | None = None
        self.high = _MIN

    def step(self, now: int) -> None:
        """Count one state access (at ``now``); runs the cleanup every ``BATCH`` accesses."""
        self.ticks -= 1
        if not self.ticks or now < self.high:
            self.run(now)

    def _keep(self, ts: int) -> None:
        if self._pass_min_ts is None or ts < self._pass_min_ts:
            self._pass_min_ts = ts

    def run(self, now: int) -> None:
        """Check the next ``BATCH * cleanup_size`` stored entries, dropping expired values."""
        self.ticks = self.BATCH
        if now < self.high:
            self.reset()
        self.high = now
        if self._quiet_until is not None and now < self._quiet_until:
            return
        lo, hi = key_group_bounds(self._backend.key_group_range)
        if self._cursor is None:  # a pass starts
            self._pass_start, self._pass_min_ts = now, None
            self._cursor = lo
        cf = self._state.cf
        limit = now - self._ttl
        budget = self._size
        it = cf.iter()
        it.seek(self._cursor)
        while budget > 0:
            if not it.valid() or it.key() >= hi:  # a full pass ends
                check_scan(it)
                low = self._pass_start if self._pass_start is not None else now
                if self._pass_min_ts is not None and self._pass_min_ts < low:
                    low = self._pass_min_ts
                self._quiet_until = low + self._ttl
                self._cursor = None
                return
            sk, data = it.key(), it.value()
            budget -= 1
            ts = decode_timestamp(data)  # every stored entry starts with its timestamp
            if ts <= limit:
                cf.delete(sk)
            else:
                self._keep(ts)
            it.next()
        self._cursor = it.key() if it.valid() else hi
