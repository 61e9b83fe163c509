"""``HeapKeyedStateBackend``: the in-memory keyed state of one operator subtask.

The backend owns the current key (set per record by the operator, per timer by the timer
service), the state tables of every registered state, and snapshot/restore per key group.

>>> from sparktide.core.state import ListStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> backend = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> from sparktide.common.typeinfo import Types
>>> events = backend.get_partitioned_state(ListStateDescriptor("events", Types.STRING()))
>>> backend.set_current_key("user-1")
>>> events.add("click")
>>> backend.num_entries()
1
>>> meta, per_key_group = backend.snapshot_state()
>>> meta  # doctest: +NORMALIZE_WHITESPACE
{'events': {'kind': 'list', 'ttl': False,
            'types': {'format_version': 1, 'value': {'type': 'STRING'}, 'map_key': None}}}
>>> restored = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> restored.restore_state(meta, per_key_group)
>>> restored.set_current_key("user-1")
>>> restored.get_partitioned_state(ListStateDescriptor("events", Types.STRING())).get()
['click']
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from functools import partial
from types import MappingProxyType
from typing import cast

from sparktide.core.state import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
)
from sparktide.runtime.keygroups import (
    KeyGroupCache,
    KeyGroupRange,
    assign_to_key_group,
    assign_to_key_groups,
)
from sparktide.runtime.state.backend_base import DEFAULT_OPERATOR, KeyedStateBackendBase
from sparktide.runtime.state.backend_checks import (
    check_backend_args,
    check_registration,
    disposed,
    key_group_out_of_range,
    key_out_of_range,
    kind_of,
    ttl_enabled,
    unhashable_key,
)
from sparktide.runtime.state.cleanup import IncrementalCleanup, purge_expired
from sparktide.runtime.state.folding import AggregateLike, EntryKey, KeyGroupDict
from sparktide.runtime.state.heap import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
    InternalKvState,
    StateTable,
    check_raw,
    copy_raw,
)
from sparktide.runtime.state.snapshot_checks import (
    EntryGroup,
    StateMeta,
    check_entry,
    check_meta,
    checked_group,
    duplicate_entry,
    entry_groups,
    full_snapshot_ttls,
    recorded_types,
    state_meta,
)
from sparktide.runtime.state.state_types import StateTypes
from sparktide.runtime.state.ttl import (
    TtlAggregatingState,
    TtlListState,
    TtlMapState,
    TtlReducingState,
    TtlValueState,
)
from sparktide.runtime.state.type_compat import Convert

__all__ = [
    "NO_KEY_GROUP",
    "HeapKeyedStateBackend",
    "KeyEntries",
    "StateEntry",
    "StateMeta",
    "StateSnapshot",
]


StateEntry = tuple[object, object, object]
"""One entry of a snapshot: ``(key, namespace, raw_value)``."""

StateSnapshot = dict[int, dict[str, list[StateEntry]]]
"""A snapshot's entries: ``per_key_group[key_group][state_name] = [entries]``."""

KeyEntries = dict[str, KeyGroupDict[object]]
"""The entries of one key, per state name (:meth:`HeapKeyedStateBackend.key_entries`)."""

_PLAIN: Mapping[str, Callable[[HeapKeyedStateBackend, StateTable, object], InternalKvState]] = (
    MappingProxyType(
        {
            "value": HeapValueState,
            "list": HeapListState,
            "map": HeapMapState,
        }
    )
)
_TTL: Mapping[
    str,
    Callable[
        [HeapKeyedStateBackend, StateTable, object, StateTtlConfig, Callable[[], int]],
        InternalKvState,
    ],
] = MappingProxyType(
    {
        "value": TtlValueState,
        "list": TtlListState,
        "map": TtlMapState,
    }
)

_KEY_GROUP_CACHE_SIZE = 1 << 17

NO_KEY_GROUP = cast(int, None)
"""``current_key_group`` while no key is current. It is ``None`` at run time, so a state that
indexes its table with it raises TypeError and turns that into the clear "no current key"
error (:meth:`HeapKeyedStateBackend.check_key`) without a check on every access; typed ``int``
because every reader runs with a key set (states, timer services)."""


class HeapKeyedStateBackend(KeyedStateBackendBase[StateTable]):
    """The in-memory keyed state of one operator subtask, for the key groups in
    ``key_group_range``.

    ``current_key`` and ``current_key_group`` are read by every state access and by the timer
    service; set them only with :meth:`set_current_key` or :meth:`set_current_key_and_group`.
    ``time_provider`` returns the processing time in ms; it drives state TTL.

    >>> from sparktide.core.state import MapStateDescriptor
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 63), time_provider=lambda: 0)
    >>> b.set_current_key("b")
    >>> b.current_key, b.current_key_group
    ('b', 22)
    >>> b.set_current_key("a")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: key 'a' is in key group 81, outside this backend's key-group range [0, 63]; ...
    """

    __slots__ = (
        "_disposed",
        "_end",
        "_handed_over",
        "_key_listeners",
        "_kg_cache",
        "_max_parallelism",
        "_operator",
        "_range",
        "_start",
        "_tables",
        "_time",
        "_void_states",
        "current_key",
        "current_key_group",
    )

    def __init__(
        self,
        *,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        time_provider: Callable[[], int],
        operator: str = DEFAULT_OPERATOR,
    ) -> None:
        check_backend_args(max_parallelism, key_group_range, time_provider)
        self._operator = operator
        self._max_parallelism = max_parallelism
        self._range = key_group_range
        self._start = key_group_range.start
        self._end = key_group_range.end
        self._time = time_provider
        self._tables: dict[str, StateTable] = {}
        self._void_states: dict[str, InternalKvState] = {}
        self._key_listeners: list[Callable[[], None]] = []
        self._kg_cache = KeyGroupCache(max_parallelism, _KEY_GROUP_CACHE_SIZE)
        self._disposed = False
        self._handed_over = False
        self.current_key: object = None
        self.current_key_group: int = NO_KEY_GROUP

    # ------------------------------------------------------------------ current key

    def _key_group(self, key: object) -> int:
        try:
            return self._kg_cache[key]
        except TypeError:
            assign_to_key_group(key, self._max_parallelism)  # the canonical unsupported-type error
            raise unhashable_key(key) from None

    def set_current_key(self, key: object) -> None:
        """Make ``key`` the current key (computes its key group; TypeError for unsupported key
        types, ValueError when the key group is not in this backend's range)."""
        kg = self._key_group(key)
        if not self._start <= kg <= self._end:
            self._check_open()
            raise key_out_of_range(key, kg, self._start, self._end)
        self.current_key = key
        self.current_key_group = kg
        if self._key_listeners:
            for listener in self._key_listeners:
                listener()

    def key_hooks(self) -> Sized:
        """The per-record TTL cleanups run on every change of the key (the list itself: see
        :meth:`~sparktide.runtime.state.keyed_backend.KeyedStateBackend.key_hooks`)."""
        return self._key_listeners

    def set_current_key_and_group(self, key: object, key_group: int) -> None:
        """Like :meth:`set_current_key` for a key whose key group is known (timers): no hashing."""
        if not self._start <= key_group <= self._end:
            self._check_open()
            raise key_group_out_of_range(key, key_group, self._start, self._end)
        self.current_key = key
        self.current_key_group = key_group
        if self._key_listeners:
            for listener in self._key_listeners:
                listener()

    # ------------------------------------------------------------------ registration

    def _register(self, descriptor: StateDescriptor) -> StateTable:
        if self._disposed:
            raise disposed("state can no longer be used")
        kind = kind_of(descriptor)
        name = descriptor.name
        ttl = ttl_enabled(descriptor)
        cfg = descriptor.ttl_config if ttl else None
        table = self._tables.get(name)
        if table is None:
            table = StateTable(name, kind, ttl, self._max_parallelism, self._range)
            self._tables[name] = table
        else:
            check_registration(table, name, kind, ttl, cfg)
        if not table.registered:
            migrate = self._claim_types(table, descriptor)
            if migrate is not None:
                _migrate_table(table, migrate)
            table.registered = True
            if cfg is not None:
                table.ttl_config = cfg
                strategy = cfg.get_cleanup_strategies().get_incremental_cleanup_strategy()
                if strategy is not None:
                    cleanup = IncrementalCleanup(
                        table, cfg.get_ttl().to_milliseconds(), strategy.get_cleanup_size()
                    )
                    table.cleanup = cleanup
                    if strategy.run_cleanup_for_every_record():
                        time = self._time
                        self._key_listeners.append(lambda: cleanup.step(time()))
        return table

    def _create(
        self, table: StateTable, descriptor: StateDescriptor, ns: object
    ) -> InternalKvState:
        cfg = table.ttl_config
        if isinstance(descriptor, ReducingStateDescriptor):
            fn = descriptor.reduce
            if cfg is None:
                return HeapReducingState(self, table, ns, fn)
            return TtlReducingState(self, table, ns, cfg, self._time, fn)
        if isinstance(descriptor, AggregatingStateDescriptor):
            agg: AggregateLike = descriptor.get_agg_function()
            if cfg is None:
                return HeapAggregatingState(self, table, ns, agg)
            return TtlAggregatingState(self, table, ns, cfg, self._time, agg)
        kind = table.kind
        if cfg is None:
            return _PLAIN[kind](self, table, ns)
        return _TTL[kind](self, table, ns, cfg, self._time)

    # ------------------------------------------------------------------ inspection

    def num_entries(self) -> int:
        """The number of (state, key, namespace) entries holding a value (TTL: including expired
        values not yet cleaned up)."""
        return sum(t.num_entries() for t in self._tables.values())

    def estimate_num_entries(self) -> int:
        """:meth:`num_entries`: exact and cheap on the heap (one ``len`` per key group)."""
        return self.num_entries()

    def key_entries(self, key: object, key_group: int) -> KeyEntries:
        """Copies of every entry of ``key`` (all states, all namespaces), to roll back to with
        :meth:`reset_key_entries`; values are deep-copied where they can be, so changes made
        in place are rolled back too. O(entries of the key group)."""
        out: KeyEntries = {}
        for name, table in self._tables.items():
            data = table.data[key_group]
            if not data:
                continue
            mine = {k: v for k, v in data.items() if k[0] == key}
            if mine:
                try:
                    out[name] = copy.deepcopy(mine)
                except Exception:  # values that cannot be copied: their containers are
                    out[name] = {k: copy_raw(table.kind, v) for k, v in mine.items()}
        return out

    def reset_key_entries(self, key: object, key_group: int, saved: KeyEntries) -> None:
        """Make the entries of ``key`` exactly ``saved`` (from :meth:`key_entries`)."""
        for name, table in self._tables.items():
            data = table.data[key_group]
            if data is None:
                continue
            old = saved.get(name, {})
            for k in [k for k in data if k[0] == key and k not in old]:
                del data[k]
            data.update(old)

    def get_keys(self, state_name: str, namespace: object) -> Iterator[object]:
        """The keys with an entry of ``state_name`` in ``namespace`` (a snapshot: state may be
        changed while iterating). Empty for an unknown state."""
        table = self._tables.get(state_name)
        return iter(() if table is None else table.keys(namespace))

    def get_state_names(self) -> list[str]:
        """The names of the registered and restored states."""
        return list(self._tables)

    def state_metas(self) -> dict[str, StateMeta]:
        """Per state, what a snapshot's ``meta`` records of it (its kind, TTL setting and
        declared types), without reading an entry."""
        return {name: state_meta(table) for name, table in self._tables.items()}

    def dispose(self) -> None:
        """Drop every entry (tables handed over with :meth:`hand_over_tables` are left as they
        are); the backend cannot be used afterwards."""
        if not self._handed_over:
            for table in self._tables.values():
                table.clear()
        self._tables = {}
        self._void_states.clear()
        self._key_listeners.clear()
        self._kg_cache.clear()
        self.current_key = None
        self.current_key_group = NO_KEY_GROUP
        self._start, self._end = 0, -1  # every key is out of range: set_current_key raises
        self._disposed = True

    # ------------------------------------------------------------------ live hand-over

    def hand_over_tables(self) -> dict[str, StateTable]:
        """The state tables as they are (no copy), for the next backend of this subtask to
        :meth:`adopt_tables` (a streaming worker keeps a subtask's state live between
        micro-batches). This backend may still be read until it is disposed of, which then
        leaves the tables alone; it must not be written any more."""
        self._handed_over = True
        return dict(self._tables)

    def purges_in_snapshots(self) -> bool:
        """Whether a snapshot leaves expired values of some state out (TTL cleanup in full
        snapshots), so that it holds less than the tables."""
        return bool(full_snapshot_ttls(self._tables, list(self._tables)))

    def adopt_tables(self, tables: Mapping[str, StateTable]) -> None:
        """Take ``tables`` (:meth:`hand_over_tables` of a backend with this key-group range
        and max parallelism) as this backend's state, before any state is registered: each
        table then waits for its descriptor as a restored one does (kind, TTL setting and
        declared types checked when it registers)."""
        if self._disposed:
            raise disposed("create a new one")
        if self._tables:
            raise ValueError(
                f"cannot adopt state tables: this backend already has {sorted(self._tables)}"
            )
        for name, table in tables.items():
            if table.key_groups != range(self._start, self._end + 1) or len(table.data) != (
                self._max_parallelism
            ):
                raise ValueError(
                    f"state table {name!r} holds key groups {table.key_groups} of "
                    f"{len(table.data)}; this backend has [{self._start}, {self._end}] of "
                    f"{self._max_parallelism}"
                )
        for table in tables.values():
            table.registered = False
            table.ttl_config = None
            table.cleanup = None  # a registering TTL descriptor sets up its own
        self._tables = dict(tables)

    # ------------------------------------------------------------------ snapshot / restore

    def snapshot_state(self) -> tuple[dict[str, StateMeta], StateSnapshot]:
        """Plain data: ``(meta, per_key_group)``.

        ``meta[name] = {"kind": ..., "ttl": bool, "types": ...}`` (``types``: the declared
        types, where known); ``per_key_group[kg][name]`` is a list of
        ``(key, namespace, raw_value)`` (key groups ascending, state names sorted, entries in
        insertion order). Raw values are builtins plus user values; containers are copies.
        States with TTL and ``cleanup_full_snapshot`` leave out expired values.
        """
        if self._disposed:
            raise disposed("nothing to snapshot")
        names = sorted(self._tables)
        meta = {n: state_meta(self._tables[n]) for n in names}
        purge = full_snapshot_ttls(self._tables, names)
        now = self._time() if purge else 0
        per_key_group: StateSnapshot = {}
        for kg in range(self._start, self._end + 1):
            by_name: dict[str, list[StateEntry]] = {}
            for n in names:
                table = self._tables[n]
                d = table.data[kg]
                if not d:
                    continue
                kind = table.kind
                ttl = purge.get(n)
                entries: list[StateEntry] = []
                for (key, ns), raw in d.items():
                    if ttl is not None:
                        raw = purge_expired(kind, raw, now, ttl)
                        if raw is None:
                            continue
                    entries.append((key, ns, copy_raw(kind, raw)))
                if entries:
                    by_name[n] = entries
            if by_name:
                per_key_group[kg] = by_name
        return meta, per_key_group

    def restore_state(
        self,
        meta: Mapping[str, Mapping[str, object]],
        per_key_group: Mapping[int, Mapping[str, Iterable[StateEntry]]],
        *,
        trusted: bool = False,
    ) -> None:
        """Add the entries of a snapshot for the key groups in this backend's range (others are
        ignored), so several snapshots can be restored into one backend when rescaling.

        Everything is validated first: on bad input a ValueError names the culprit and the
        backend is unchanged. States without a registered descriptor are kept raw until one is
        registered (which must then match kind and TTL setting, and the declared types the
        snapshot records, else ``IncompatibleStateTypeError``). ``trusted``: the entries come
        from :meth:`snapshot_state` of a backend of this process with the same max parallelism
        (a streaming worker's cache), so only ``meta`` is checked and entries are taken as they
        are (the raw containers are not copied: do not use them afterwards).
        """
        if self._disposed:
            raise disposed("create a new one")
        kinds = check_meta(meta, self._tables)
        types = recorded_types(meta, self._tables, self._operator)
        if trusted:
            self._restore_trusted(kinds, types, per_key_group)
            return
        staged: list[tuple[str, int, dict[EntryKey, object]]] = []
        groups = partial(assign_to_key_groups, max_parallelism=self._max_parallelism)
        for group in entry_groups(
            per_key_group, kinds, self._max_parallelism, self._start, self._end
        ):
            table = self._tables.get(group.name)
            existing = None if table is None else table.data[group.key_group]
            checked = checked_group(group, groups)
            if checked is None or (existing and not existing.keys().isdisjoint(checked)):
                checked = self._checked_entries(group, existing)  # raises what is wrong
            staged.append((group.name, group.key_group, checked))
        # validated: apply
        self._add_tables(kinds, types)
        views = {name: table.in_range() for name, table in self._tables.items()}
        for name, kg, checked in staged:
            views[name][kg].update(checked)
        for name in {name for name, _, checked in staged if checked}:
            cleanup = self._tables[name].cleanup
            if cleanup is not None:
                cleanup.reset()  # restored values may be old: drop the "nothing expires" bound

    def _checked_entries(
        self, group: EntryGroup, existing: dict[EntryKey, object] | None
    ) -> dict[EntryKey, object]:
        """The entries of ``group`` checked one by one: a ValueError names the first one that
        is malformed, in another key group, or there already (in ``group`` or ``existing``)."""
        kg, name, where, kind, ttl, entries = group
        out: dict[EntryKey, object] = {}
        for i, entry in enumerate(entries):
            at = f"{where}[{i}]"
            checked = check_entry(entry, at, kg, kind, ttl, self._max_parallelism, self._locate)
            if checked is None:
                continue
            key, ns, raw, key_ns = checked
            if key_ns in out or (existing is not None and key_ns in existing):
                raise duplicate_entry(at, name, key, ns)
            out[key_ns] = raw
        return out

    def _add_tables(
        self, kinds: dict[str, tuple[str, bool]], types: dict[str, StateTypes | None]
    ) -> None:
        """A table for every restored state this backend has none of yet, with the declared
        types the snapshot records (checked when its descriptor registers)."""
        for name, (kind, ttl) in kinds.items():
            table = self._tables.get(name)
            if table is None:
                table = StateTable(name, kind, ttl, self._max_parallelism, self._range)
                self._tables[name] = table
            if table.types is None:
                table.types = types[name]

    def _restore_trusted(
        self,
        kinds: dict[str, tuple[str, bool]],
        types: dict[str, StateTypes | None],
        per_key_group: Mapping[int, Mapping[str, Iterable[StateEntry]]],
    ) -> None:
        self._add_tables(kinds, types)
        start, end = self._start, self._end
        for kg, by_name in per_key_group.items():
            if not start <= kg <= end:
                continue
            for name, entries in by_name.items():
                data = self._tables[name].in_range()[kg]
                for key, ns, raw in entries:
                    data[(key, ns)] = raw
        for name in kinds:
            cleanup = self._tables[name].cleanup
            if cleanup is not None:
                cleanup.reset()

    def _locate(self, key: object, ns: object) -> tuple[int, EntryKey]:
        return self._key_group(key), (key, ns)

    # ------------------------------------------------------------------ invariants

    def check_invariants(self) -> None:
        """Assert every invariant (for tests): entries sit in their key group, no empty
        containers, no ``None`` values, TTL values are ``(value, int ts)``."""
        for name, table in self._tables.items():
            if not (table.name == name):
                raise AssertionError("invariant broken: table.name == name")
            for kg, d in enumerate(table.data):
                if not self._start <= kg <= self._end:
                    if d is not None:
                        raise AssertionError((name, kg))
                    continue
                if not (isinstance(d, dict)):
                    raise AssertionError("invariant broken: isinstance(d, dict)")
                for (key, _ns), raw in d.items():
                    if not (assign_to_key_group(key, self._max_parallelism) == kg):
                        raise AssertionError((name, key, kg))
                    if not (check_raw(table.kind, table.ttl, raw, "raw") == raw):
                        raise AssertionError((name, key, raw))
                    if not (raw is not None):
                        raise AssertionError("invariant broken: raw is not None")
        for name, state in self._void_states.items():
            if not (self._tables[name].registered):
                raise AssertionError("invariant broken: self._tables[name].registered")
            if state.get_current_namespace() is not None:
                raise AssertionError("invariant broken: state.get_current_namespace() is None")


def _migrate_table(table: StateTable, migrate: Convert) -> None:
    """Convert every raw value of ``table`` (restored with an older declared type) to its
    descriptor's type, once, as the descriptor registers (state schema evolution)."""
    data = table.in_range()
    for kg in table.key_groups:
        entries = data[kg]
        for key_ns, raw in entries.items():
            entries[key_ns] = migrate(raw)
