"""Heap (in-memory) keyed state: state tables, the state objects without TTL and the raw format.

Storage: one :class:`StateTable` per state name. Its ``data`` is a list indexed by key group
(``None`` outside the backend's range); each key group holds a plain dict
``(key, namespace) -> raw value``. A state object reads ``backend.current_key_group`` and
``backend.current_key`` and does one dict operation: no per-key-group lookups by hashing, no
per-call objects besides the ``(key, namespace)`` tuple. Snapshots and rescaling work per key
group without hashing a single key.

Raw values (also the snapshot format): a value, reducing or aggregating state stores the user
value / accumulator itself, a list state a non-empty ``list``, a map state a non-empty ``dict``.
With TTL every user value is paired with its last-access timestamp: ``(value, ts)``, a list of
``(element, ts)``, a dict ``{map_key: (value, ts)}``. Empty lists and maps are never stored, so
every dict entry holds a value.

The entry types and the fold functions of reducing and aggregating state are
:mod:`~sparktide.runtime.state.folding`'s; the reducing and aggregating states offer their
entries to operators through its ``folded_entries()``.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> table = StateTable("s", "list", False, 4, KeyGroupRange(0, 1))
>>> table.data
[{}, {}, None, None]
>>> check_raw("list", True, [("a", 5)], "raw")
[('a', 5)]
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

from sparktide.core.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.folding import (
    AccumulatedEntries,
    AggregateLike,
    EntryKey,
    KeyGroupDict,
    ReducedEntries,
    Reducer,
    checked_reduce,
    merge_accumulators,
    returned_none_error,
)

if TYPE_CHECKING:
    from sparktide.core.state import StateTtlConfig
    from sparktide.runtime.state.backend import HeapKeyedStateBackend
    from sparktide.runtime.state.cleanup import IncrementalCleanup
    from sparktide.runtime.state.state_types import StateTypes

__all__ = [
    "KINDS",
    "HeapAggregatingState",
    "HeapKvState",
    "HeapListState",
    "HeapMapState",
    "HeapReducingState",
    "HeapValueState",
    "InternalKvState",
    "InternalMergingState",
    "StateTable",
    "TtlEntry",
    "check_raw",
    "copy_raw",
    "describe_kind",
]

KINDS = ("value", "list", "map", "reducing", "aggregating")
"""The state kinds, as written in snapshot metadata."""

R = TypeVar("R")
"""The raw value of a state object's entries (fixed by its kind and TTL setting)."""

TtlEntry = tuple[object, int]
"""A user value with TTL: ``(value, last_access_ts)``."""


def describe_kind(kind: str, ttl: bool) -> str:
    """A readable kind for error messages.

    >>> describe_kind("map", True)
    'map state with TTL'
    """
    return f"{kind} state with TTL" if ttl else f"{kind} state"


class StateTable:
    """The entries of one named state: ``data[key_group][(key, namespace)] = raw value``.

    A table may exist before its descriptor is registered (restored from a snapshot): then
    ``registered`` is False and its entries are kept raw until a descriptor of the same kind
    and TTL-ness claims them.
    """

    __slots__ = (
        "cleanup",
        "data",
        "key_groups",
        "kind",
        "name",
        "registered",
        "ttl",
        "ttl_config",
        "types",
    )

    def __init__(
        self,
        name: str,
        kind: str,
        ttl: bool,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
    ) -> None:
        self.name = name
        self.kind = kind
        self.ttl = ttl
        self.ttl_config: StateTtlConfig | None = None
        self.registered = False
        # the declared types: the descriptor's, or as a snapshot recorded them (None: unknown)
        self.types: StateTypes | None = None
        # incremental TTL cleanup, set when a TTL descriptor registers
        self.cleanup: IncrementalCleanup | None = None
        self.key_groups = range(key_group_range.start, key_group_range.end + 1)
        data: list[KeyGroupDict[object] | None] = [None] * max_parallelism
        for kg in self.key_groups:
            data[kg] = {}
        self.data = data

    def num_entries(self) -> int:
        data = self.in_range()
        return sum(len(data[kg]) for kg in self.key_groups)

    def keys(self, namespace: object) -> list[object]:
        """The keys holding an entry in ``namespace``, by key group then insertion order."""
        data = self.in_range()
        return [k for kg in self.key_groups for (k, ns) in data[kg] if ns == namespace]

    def clear(self) -> None:
        data = self.in_range()
        for kg in self.key_groups:
            data[kg].clear()

    def in_range(self) -> list[KeyGroupDict[object]]:
        """``data`` as read at the key groups of ``key_groups``, which all hold a dict (the
        ``None`` slots lie outside the range and are never indexed through this view)."""
        return cast("list[KeyGroupDict[object]]", self.data)

    def describe(self) -> str:
        return describe_kind(self.kind, self.ttl)


# --------------------------------------------------------------------------------------------
# Raw values
# --------------------------------------------------------------------------------------------


def copy_raw(kind: str, raw: object) -> object:
    """A copy of the containers of ``raw`` (user values are shared, never copied)."""
    if kind == "list" and isinstance(raw, list):
        return list(raw)
    if kind == "map" and isinstance(raw, dict):
        return dict(raw)
    return raw


def _check_ts(pair: object, where: str) -> TtlEntry:
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ValueError(
            f"{where} must be a (value, last_access_ts) pair for a state with TTL, got "
            f"{type(pair).__name__} ({pair!r}); the snapshot does not match the state's TTL setting"
        )
    ts = pair[1]
    if type(ts) is not int:
        raise ValueError(
            f"{where}: last_access_ts must be an int of milliseconds, got "
            f"{type(ts).__name__} ({ts!r})"
        )
    return pair if type(pair) is tuple else (pair[0], ts)


def _no_none(value: object, where: str) -> None:
    if value is None:
        raise ValueError(f"{where} is None; a stored value is never None (None means no value)")


def check_raw(kind: str, ttl: bool, raw: object, where: str) -> object:
    """Validate a restored raw value and return the copy to store (``None``: nothing to store,
    e.g. an empty list). Raises ValueError naming ``where`` when the value does not fit.

    >>> check_raw("value", True, [3, 10], "v")
    (3, 10)
    >>> check_raw("map", False, [1], "raw")
    Traceback (most recent call last):
    ...
    ValueError: raw: the raw value of a map state must be a dict, got list ([1])
    """
    if kind == "list":
        if not isinstance(raw, (list, tuple)):
            raise ValueError(
                f"{where}: the raw value of a list state must be a list, got "
                f"{type(raw).__name__} ({raw!r})"
            )
        out: list[object] = []
        for i, elem in enumerate(raw):
            if ttl:
                elem = _check_ts(elem, f"{where}[{i}]")
                _no_none(elem[0], f"{where}[{i}][0]")
            else:
                _no_none(elem, f"{where}[{i}]")
            out.append(elem)
        return out or None
    if kind == "map":
        if not isinstance(raw, dict):
            raise ValueError(
                f"{where}: the raw value of a map state must be a dict, got "
                f"{type(raw).__name__} ({raw!r})"
            )
        if not ttl:
            return dict(raw) or None
        return {k: _check_ts(v, f"{where}[{k!r}]") for k, v in raw.items()} or None
    if kind not in KINDS:
        raise ValueError(f"unknown state kind {kind!r}; expected one of {', '.join(KINDS)}")
    if ttl:
        entry = _check_ts(raw, where)
        _no_none(entry[0], f"{where}[0]")
        return entry
    else:
        _no_none(raw, where)
    return raw


# --------------------------------------------------------------------------------------------
# State objects without TTL
# --------------------------------------------------------------------------------------------


class InternalKvState(State):
    """A keyed state object as operators see it (Flink's ``InternalKvState``): scoped to the
    backend's current key and to a namespace set with :meth:`set_current_namespace`."""

    __slots__ = ()

    @property
    @abstractmethod
    def name(self) -> str:
        """The state's name (its descriptor's)."""

    @abstractmethod
    def set_current_namespace(self, namespace: object) -> None:
        """Scope further calls to ``namespace`` (any hashable; ``None`` is the void namespace)."""

    @abstractmethod
    def get_current_namespace(self) -> object: ...


class InternalMergingState(Protocol):
    """What an operator uses of a list, reducing or aggregating state whose namespaces merge
    (window contents; Flink's ``InternalMergingState``)."""

    def set_current_namespace(self, namespace: object) -> None: ...

    def get(self) -> object: ...

    def add(self, value: object) -> None: ...

    def clear(self) -> None: ...

    def merge_namespaces(self, target: object, sources: Iterable[object]) -> None: ...


class HeapKvState(InternalKvState, Generic[R]):
    """Base of the heap state objects: bound to a backend, a table and a current namespace.

    ``R`` is the raw value of the entries (see the module docstring). The same class serves
    users (bound once to a namespace, ``None`` for the void namespace) and operators
    (``set_current_namespace`` per window).
    """

    __slots__ = ("_backend", "_data", "_ns", "_table")

    def __init__(
        self, backend: HeapKeyedStateBackend, table: StateTable, namespace: object = None
    ) -> None:
        self._backend = backend
        self._table = table
        # The table's kind fixes the raw values; a state indexes only the current key's key
        # group, which set_current_key keeps inside the range (never a None slot).
        self._data = cast("list[KeyGroupDict[R]]", table.data)
        self._ns = namespace

    @property
    def name(self) -> str:
        return self._table.name

    def set_current_namespace(self, namespace: object) -> None:
        """Scope further calls to ``namespace`` (any hashable; ``None`` is the void namespace)."""
        self._ns = namespace

    def get_current_namespace(self) -> object:
        return self._ns

    def _slot(self) -> tuple[KeyGroupDict[R], EntryKey]:
        """The current key group's dict and the current entry key ``(key, namespace)``.

        Raises the backend's clear error when no key is current.
        """
        b = self._backend
        try:
            return self._data[b.current_key_group], (b.current_key, self._ns)
        except TypeError:
            b.check_key()
            raise

    def _current(self) -> R | None:
        """The raw value stored for the current key and namespace (``None`` if absent)."""
        b = self._backend
        try:
            return self._data[b.current_key_group].get((b.current_key, self._ns))
        except TypeError:
            b.check_key()
            raise

    def clear(self) -> None:
        b = self._backend  # self._slot(), inlined: windows clear their contents per firing
        try:
            self._data[b.current_key_group].pop((b.current_key, self._ns), None)
        except TypeError:
            b.check_key()
            raise

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._table.name!r}, namespace={self._ns!r})"


class MergingMixin(HeapKvState[R]):
    """``merge_namespaces`` on top of ``_merge_raw(a, b)`` (Flink's AbstractHeapMergingState)."""

    __slots__ = ()

    def _merge_raw(self, a: R, b: R) -> R | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def merge_namespaces(self, target: object, sources: Iterable[object]) -> None:
        """Merge the values of ``sources`` into ``target`` for the current key, removing the
        sources. The target's value comes first (list order, reduce/merge argument order)."""
        d, (key, _) = self._slot()
        merged: R | None = None
        for source in sources:
            if source == target:
                continue
            v = d.pop((key, source), None)
            if v is not None:
                merged = v if merged is None else self._merge_raw(merged, v)
        if merged is not None:
            t = d.get((key, target))
            if t is not None:
                merged = self._merge_raw(t, merged)
            if merged is None:  # TTL: everything had expired
                d.pop((key, target), None)
            else:
                d[(key, target)] = merged


class HeapValueState(HeapKvState[object], ValueState[object]):
    """:class:`ValueState` on the heap."""

    __slots__ = ()

    def value(self) -> object:
        b = self._backend
        try:
            return self._data[b.current_key_group].get((b.current_key, self._ns))
        except TypeError:
            b.check_key()
            raise

    def update(self, value: object) -> None:
        b = self._backend
        try:
            if value is None:
                self._data[b.current_key_group].pop((b.current_key, self._ns), None)
            else:
                self._data[b.current_key_group][(b.current_key, self._ns)] = value
        except TypeError:
            b.check_key()
            raise


def list_values(values: Iterable[object], name: str) -> list[object]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{name} must be an iterable of elements (e.g. a list), got "
            f"{type(values).__name__} ({values!r}); wrap a single element in a list"
        )
    out = list(values)
    for v in out:
        if v is None:
            raise ValueError(f"{name} contains None; a ListState cannot hold None elements")
    return out


def check_mapping(dict_value: object) -> None:
    """Raise TypeError unless ``dict_value`` is a mapping (the argument of ``put_all``)."""
    if not isinstance(dict_value, Mapping):
        raise TypeError(
            f"dict_value must be a mapping, got {type(dict_value).__name__}; pass a dict"
        )


def check_not_none(value: object) -> None:
    if value is None:
        raise ValueError(
            "value is None; a ListState cannot hold None elements (as in Flink); "
            "store a sentinel or wrap the value, e.g. (None,)"
        )


class HeapListState(MergingMixin[list[object]], ListState[object]):
    """:class:`ListState` on the heap; ``get()`` returns a copy of the list."""

    __slots__ = ()

    def get(self) -> list[object]:
        lst = self._current()
        return [] if lst is None else lst.copy()

    def add(self, value: object) -> None:
        if value is None:
            check_not_none(value)
        b = self._backend  # self._slot(), inlined: the per-record call of window contents
        try:
            d, k = self._data[b.current_key_group], (b.current_key, self._ns)
        except TypeError:
            b.check_key()
            raise
        lst = d.get(k)
        if lst is None:
            d[k] = [value]
        else:
            lst.append(value)

    def add_all(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        if not new:
            return
        d, k = self._slot()
        lst = d.get(k)
        if lst is None:
            d[k] = new
        else:
            lst.extend(new)

    def update(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        d, k = self._slot()
        if new:
            d[k] = new
        else:
            d.pop(k, None)

    def _merge_raw(self, a: list[object], b: list[object]) -> list[object]:
        a.extend(b)
        return a


class HeapMapState(HeapKvState[dict[object, object]], MapState[object, object]):
    """:class:`MapState` on the heap; ``items()``, ``keys()`` and ``values()`` are snapshots."""

    __slots__ = ()

    def get(self, key: object) -> object:
        m = self._current()
        return None if m is None else m.get(key)

    def put(self, key: object, value: object) -> None:
        d, k = self._slot()
        m = d.get(k)
        if m is None:
            d[k] = {key: value}
        else:
            m[key] = value

    def put_all(self, dict_value: Mapping[object, object]) -> None:
        check_mapping(dict_value)
        if not dict_value:
            return
        d, k = self._slot()
        m = d.get(k)
        if m is None:
            d[k] = dict(dict_value)
        else:
            m.update(dict_value)

    def remove(self, key: object) -> None:
        d, k = self._slot()
        m = d.get(k)
        if m is not None:
            m.pop(key, None)
            if not m:
                del d[k]

    def contains(self, key: object) -> bool:
        m = self._current()
        return m is not None and key in m

    def items(self) -> list[tuple[object, object]]:
        m = self._current()
        return [] if m is None else list(m.items())

    def keys(self) -> list[object]:
        m = self._current()
        return [] if m is None else list(m)

    def values(self) -> list[object]:
        m = self._current()
        return [] if m is None else list(m.values())

    def is_empty(self) -> bool:
        return self._current() is None

    def __iter__(self) -> Iterator[object]:
        return iter(self.keys())

    def live_dict(self) -> dict[object, object] | None:
        """The stored dict of the current key and namespace itself (not a copy), or None when
        there is none: for operators that update one map in place per record (merging window
        sets). Changes made to it are the state's; store a new or emptied dict with
        :meth:`store_live_dict`. Snapshots copy it, so they never see later changes.

        >>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
        >>> from sparktide.runtime.keygroups import KeyGroupRange
        >>> from sparktide.core.state import MapStateDescriptor
        >>> b = HeapKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
        ...     time_provider=lambda: 0)
        >>> m = b.get_partitioned_state(MapStateDescriptor("m", None, None))
        >>> b.set_current_key("k")
        >>> m.live_dict() is None
        True
        >>> m.store_live_dict({"a": 1}); m.live_dict()["b"] = 2; m.items()
        [('a', 1), ('b', 2)]
        >>> m.live_dict().clear(); m.store_live_dict(m.live_dict()); m.is_empty()
        True
        """
        return self._current()

    def store_live_dict(self, value: dict[object, object]) -> None:
        """Make ``value`` itself the current key's map (no copy; an empty dict removes the
        entry, as an emptied map state holds none)."""
        if not value:
            self.clear()
            return
        d, k = self._slot()
        d[k] = value


class HeapReducingState(MergingMixin[object], ReducingState[object]):
    """:class:`ReducingState` on the heap."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: StateTable,
        namespace: object,
        reduce: Reducer,
    ) -> None:
        super().__init__(backend, table, namespace)
        self._reduce = reduce

    @property
    def reduce_function(self) -> Reducer:
        """The reduce function ``(a, b) -> combined``."""
        return self._reduce

    def folded_entries(self) -> ReducedEntries:
        """The state table's entries themselves with the reduce function (see
        :class:`~sparktide.runtime.state.folding.FoldableState`)."""
        return ReducedEntries(self._data, self._reduce)

    def get(self) -> object:
        return self._current()

    def add(self, value: object) -> None:
        b = self._backend  # self._slot(), inlined: the per-record call of window contents
        try:
            d, k = self._data[b.current_key_group], (b.current_key, self._ns)
        except TypeError:
            b.check_key()
            raise
        if value is None:
            d.pop(k, None)
            return
        old = d.get(k)
        d[k] = value if old is None else checked_reduce(self._reduce, old, value)

    def _merge_raw(self, a: object, b: object) -> object:
        return checked_reduce(self._reduce, a, b)


class HeapAggregatingState(MergingMixin[object], AggregatingState[object, object]):
    """:class:`AggregatingState` on the heap: stores the accumulator."""

    __slots__ = ("_agg", "_agg_add", "_create_acc")

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: StateTable,
        namespace: object,
        agg: AggregateLike,
    ) -> None:
        super().__init__(backend, table, namespace)
        self._agg = agg
        # bound once: add runs per record and window
        self._agg_add = agg.add
        self._create_acc = agg.create_accumulator

    @property
    def aggregate_function(self) -> AggregateLike:
        """The aggregate function whose accumulators the entries hold."""
        return self._agg

    def folded_entries(self) -> AccumulatedEntries:
        """The state table's entries themselves with the aggregate function (see
        :class:`~sparktide.runtime.state.folding.FoldableState`)."""
        return AccumulatedEntries(self._data, self._agg)

    def get(self) -> object:
        acc = self._current()
        return None if acc is None else self._agg.get_result(acc)

    def add(self, value: object) -> None:
        b = self._backend  # self._slot(), inlined: the per-record call of window contents
        try:
            d, k = self._data[b.current_key_group], (b.current_key, self._ns)
        except TypeError:
            b.check_key()
            raise
        if value is None:
            d.pop(k, None)
            return
        acc = d.get(k)
        if acc is None:
            acc = self._create_acc()
        acc = self._agg_add(value, acc)
        if acc is None:
            raise returned_none_error(self._agg, "add")
        d[k] = acc

    def _merge_raw(self, a: object, b: object) -> object:
        return merge_accumulators(self._agg, a, b)
