"""Keyed state with PyFlink's names: state interfaces, descriptors and ``StateTtlConfig``.

A descriptor is an immutable description (name, kind, type information, optional TTL); the keyed
state backend of each subtask turns it into a state object scoped to the current key (and
namespace). Inside a ``KeyedProcessFunction`` you get the state object from the runtime context
in ``open()``; here a backend is used directly:

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state import HeapKeyedStateBackend
>>> backend = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> count = backend.get_partitioned_state(ValueStateDescriptor("count", None))
>>> for key in ["a", "b", "a"]:
...     backend.set_current_key(key)
...     count.update((count.value() or 0) + 1)
>>> backend.set_current_key("a")
>>> count.value()
2

Time-to-live is configured with PyFlink's builder and is measured in processing time:

>>> from sparktide.common.time import Time
>>> ttl = (StateTtlConfig.new_builder(Time.seconds(10))
...        .update_ttl_on_read_and_write()
...        .cleanup_full_snapshot()
...        .build())
>>> descriptor = ValueStateDescriptor("last_seen", None)
>>> descriptor.enable_time_to_live(ttl)
>>> descriptor.ttl_config.get_ttl().to_milliseconds()
10000
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import timedelta
from enum import Enum
from typing import Any, Generic, TypeAlias, TypeVar, Union

from sparktide.common.time import Duration, Time, positive_millis

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]

T = TypeVar("T")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
K = TypeVar("K")
V = TypeVar("V")
_E = TypeVar("_E", bound=Enum)

TtlLike = Union[Time, Duration, timedelta, int]  # noqa: UP007 - a runtime alias on 3.10


class State(ABC):
    """Base of all keyed state: a value scoped to the current key (and namespace).

    >>> issubclass(ValueState, State)
    True
    """

    __slots__ = ()

    @abstractmethod
    def clear(self) -> None:
        """Remove the value of the current key (and namespace)."""


class ValueState(State, Generic[T]):
    """A single value per key; ``None`` means "no value".

    ``update(None)`` clears the state, as in Flink.

    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> from sparktide.runtime.state import HeapKeyedStateBackend
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    >>> s = b.get_partitioned_state(ValueStateDescriptor("v", None))
    >>> b.set_current_key("k")
    >>> s.update(3); s.value()
    3
    >>> s.clear(); s.value() is None
    True
    """

    __slots__ = ()

    @abstractmethod
    def value(self) -> T | None:
        """The value of the current key, or ``None`` if there is none."""

    @abstractmethod
    def update(self, value: T | None) -> None:
        """Set the value of the current key; ``None`` clears it."""


class AppendingState(State, Generic[IN, OUT]):
    """A state that values are added to and that is read as a whole."""

    __slots__ = ()

    @abstractmethod
    def get(self) -> OUT:
        """The current result for the current key."""

    @abstractmethod
    def add(self, value: IN) -> None:
        """Add ``value`` to the state of the current key."""


class MergingState(AppendingState[IN, OUT]):
    """An appending state whose values of several namespaces can be merged (merging windows)."""

    __slots__ = ()


class ReducingState(MergingState[T, T]):
    """Keeps one value per key, combining added values with a reduce function.

    ``get()`` is ``None`` when nothing was added; ``add(None)`` clears the state, as in Flink.

    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> from sparktide.runtime.state import HeapKeyedStateBackend
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    >>> total = b.get_partitioned_state(ReducingStateDescriptor("sum", lambda a, c: a + c, None))
    >>> b.set_current_key(7)
    >>> total.add(2); total.add(5); total.get()
    7
    """

    __slots__ = ()


class AggregatingState(MergingState[IN, OUT]):
    """Keeps one accumulator per key, fed by an aggregate function; ``get()`` is its result.

    >>> from types import SimpleNamespace
    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> from sparktide.runtime.state import HeapKeyedStateBackend
    >>> avg = SimpleNamespace(create_accumulator=lambda: (0, 0), get_result=lambda a: a[0] / a[1],
    ...                       add=lambda v, a: (a[0] + v, a[1] + 1))
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    >>> state = b.get_partitioned_state(AggregatingStateDescriptor("avg", avg, None))
    >>> b.set_current_key("k")
    >>> state.add(1); state.add(4); state.get()
    2.5
    """

    __slots__ = ()


class ListState(MergingState[T, Iterable[T]]):
    """A list of values per key. ``get()`` returns a copy (an empty list when there is none).

    ``None`` elements are refused, as in Flink.

    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> from sparktide.runtime.state import HeapKeyedStateBackend
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    >>> s = b.get_partitioned_state(ListStateDescriptor("events", None))
    >>> b.set_current_key("k")
    >>> s.add(1); s.add_all([2, 3]); list(s.get())
    [1, 2, 3]
    >>> s.update([9]); list(s)
    [9]
    """

    __slots__ = ()

    @abstractmethod
    def update(self, values: Iterable[T]) -> None:
        """Replace the list of the current key by ``values`` (an empty iterable clears it)."""

    @abstractmethod
    def add_all(self, values: Iterable[T]) -> None:
        """Append every element of ``values``."""

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class MapState(State, Generic[K, V]):
    """A dict per key. Iteration methods return snapshots, so the state may be changed while
    iterating over them.

    >>> from sparktide.runtime.keygroups import KeyGroupRange
    >>> from sparktide.runtime.state import HeapKeyedStateBackend
    >>> b = HeapKeyedStateBackend(
    ...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    >>> m = b.get_partitioned_state(MapStateDescriptor("m", None, None))
    >>> b.set_current_key("k")
    >>> m.put("x", 1); m["y"] = 2
    >>> sorted(m.items()), m.get("x"), "y" in m, m.is_empty()
    ([('x', 1), ('y', 2)], 1, True, False)
    >>> m.remove("x"); list(m)
    ['y']
    """

    __slots__ = ()

    @abstractmethod
    def get(self, key: K) -> V | None:
        """The value mapped to ``key``, or ``None``."""

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map ``key`` to ``value``."""

    @abstractmethod
    def put_all(self, dict_value: Mapping[K, V]) -> None:
        """Put every mapping of ``dict_value``."""

    @abstractmethod
    def remove(self, key: K) -> None:
        """Remove the mapping of ``key`` (no-op when absent)."""

    @abstractmethod
    def contains(self, key: K) -> bool:
        """Whether ``key`` has a mapping."""

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]:
        """The ``(key, value)`` pairs."""

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """The keys."""

    @abstractmethod
    def values(self) -> Iterable[V]:
        """The values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Whether the map of the current key has no mapping."""

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


def _check_enum(value: object, enum_cls: type[_E], name: str) -> _E:
    if not isinstance(value, enum_cls):
        members = ", ".join(f"StateTtlConfig.{enum_cls.__name__}.{m.name}" for m in enum_cls)
        raise TypeError(f"{name} must be one of {members}, got {type(value).__name__} ({value!r})")
    return value


class _ValueObject:
    """Equality and hash from ``_key()``."""

    __slots__ = ()

    def _key(self) -> tuple[Any, ...]:  # pragma: no cover - overridden
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _ttl_span(ttl: TtlLike) -> Time | Duration:
    ms = positive_millis(ttl, "ttl")
    return ttl if isinstance(ttl, (Time, Duration)) else Duration.of_millis(ms)


class IncrementalCleanupStrategy(_ValueObject):
    """Check ``cleanup_size`` entries for expiry on every state access (and, when
    ``run_cleanup_for_every_record``, on every record)."""

    __slots__ = ("_run_for_every_record", "_size")

    def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
        if type(cleanup_size) is not int or cleanup_size <= 0:
            raise ValueError(
                f"cleanup_size must be a positive int (entries checked per state access), "
                f"got {cleanup_size!r}; pass e.g. 5"
            )
        if not isinstance(run_cleanup_for_every_record, bool):
            raise TypeError(
                "run_cleanup_for_every_record must be a bool, got "
                f"{type(run_cleanup_for_every_record).__name__} ({run_cleanup_for_every_record!r})"
            )
        self._size = cleanup_size
        self._run_for_every_record = run_cleanup_for_every_record

    def get_cleanup_size(self) -> int:
        return self._size

    def run_cleanup_for_every_record(self) -> bool:
        return self._run_for_every_record

    def _key(self) -> tuple[Any, ...]:
        return (self._size, self._run_for_every_record)

    def __repr__(self) -> str:
        return f"IncrementalCleanupStrategy({self._size}, {self._run_for_every_record})"


class RocksdbCompactFilterCleanupStrategy(_ValueObject):
    """Accepted for PyFlink compatibility; the heap backend has no compaction and ignores it."""

    __slots__ = ("_periodic", "_query_after")

    def __init__(
        self, query_time_after_num_entries: int, periodic_compaction_time: TtlLike | None = None
    ) -> None:
        if type(query_time_after_num_entries) is not int or query_time_after_num_entries < 0:
            raise ValueError(
                "query_time_after_num_entries must be a non-negative int, got "
                f"{query_time_after_num_entries!r}"
            )
        self._query_after = query_time_after_num_entries
        self._periodic = (
            None if periodic_compaction_time is None else _ttl_span(periodic_compaction_time)
        )

    def get_query_time_after_num_entries(self) -> int:
        return self._query_after

    def get_periodic_compaction_time(self) -> Time | Duration | None:
        return self._periodic

    def _key(self) -> tuple[Any, ...]:
        return (self._query_after, self._periodic)


class Strategies(Enum):
    FULL_STATE_SCAN_SNAPSHOT = 0
    INCREMENTAL_CLEANUP = 1
    ROCKSDB_COMPACTION_FILTER = 2


class CleanupStrategies(_ValueObject):
    """The cleanup strategies of a TTL config (PyFlink's ``StateTtlConfig.CleanupStrategies``).

    With cleanup in background (the default) and no explicit incremental strategy, the heap
    backend checks 5 entries per state access, as Flink's does.
    """

    Strategies: TypeAlias = Strategies
    IncrementalCleanupStrategy: TypeAlias = IncrementalCleanupStrategy
    RocksdbCompactFilterCleanupStrategy: TypeAlias = RocksdbCompactFilterCleanupStrategy
    DEFAULT_INCREMENTAL_CLEANUP_STRATEGY = IncrementalCleanupStrategy(5, False)

    __slots__ = ("_background", "_strategies")

    def __init__(self, strategies: Mapping[Strategies, Any], is_cleanup_in_background: bool):
        self._strategies = dict(strategies)
        self._background = bool(is_cleanup_in_background)

    def is_cleanup_in_background(self) -> bool:
        return self._background

    def in_full_snapshot(self) -> bool:
        """Whether expired entries are left out of full snapshots."""
        return Strategies.FULL_STATE_SCAN_SNAPSHOT in self._strategies

    def get_incremental_cleanup_strategy(self) -> IncrementalCleanupStrategy | None:
        default = self.DEFAULT_INCREMENTAL_CLEANUP_STRATEGY if self._background else None
        return self._strategies.get(Strategies.INCREMENTAL_CLEANUP, default)

    def get_rocksdb_compact_filter_cleanup_strategy(
        self,
    ) -> RocksdbCompactFilterCleanupStrategy | None:
        return self._strategies.get(Strategies.ROCKSDB_COMPACTION_FILTER)

    def _key(self) -> tuple[Any, ...]:
        return (self._background, frozenset(self._strategies.items()))

    def __repr__(self) -> str:
        names = sorted(s.name for s in self._strategies)
        return f"CleanupStrategies({names}, in_background={self._background})"


class UpdateType(Enum):
    """When the last-access timestamp of a value is refreshed."""

    Disabled = 0
    OnCreateAndWrite = 1
    OnReadAndWrite = 2


class StateVisibility(Enum):
    """Whether expired values that are still stored may be returned."""

    ReturnExpiredIfNotCleanedUp = 0
    NeverReturnExpired = 1


class TtlTimeCharacteristic(Enum):
    """The time TTL is measured in: processing time only, as in Flink."""

    ProcessingTime = 0


class StateTtlConfig(_ValueObject):
    """Time-to-live of keyed state (PyFlink's ``StateTtlConfig``), measured in processing time.

    Every value (each list element, each map entry) remembers when it was last accessed; it is
    expired once ``last_access + ttl <= now``. Build it with :meth:`new_builder`:

    >>> cfg = (StateTtlConfig.new_builder(Time.minutes(1))
    ...        .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
    ...        .set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    ...        .build())
    >>> cfg.get_update_type(), cfg.get_state_visibility(), cfg.is_enabled()
    (<UpdateType.OnReadAndWrite: 2>, <StateVisibility.ReturnExpiredIfNotCleanedUp: 0>, True)
    >>> cfg.get_ttl() == Time.minutes(1)
    True
    """

    UpdateType: TypeAlias = UpdateType
    StateVisibility: TypeAlias = StateVisibility
    TtlTimeCharacteristic: TypeAlias = TtlTimeCharacteristic
    CleanupStrategies: TypeAlias = CleanupStrategies

    __slots__ = ("_characteristic", "_cleanup", "_ttl", "_update_type", "_visibility")

    def __init__(
        self,
        update_type: UpdateType,
        state_visibility: StateVisibility,
        ttl_time_characteristic: TtlTimeCharacteristic,
        ttl: TtlLike,
        cleanup_strategies: CleanupStrategies,
    ) -> None:
        self._update_type = _check_enum(update_type, UpdateType, "update_type")
        self._visibility = _check_enum(state_visibility, StateVisibility, "state_visibility")
        self._characteristic = _check_enum(
            ttl_time_characteristic, TtlTimeCharacteristic, "ttl_time_characteristic"
        )
        self._ttl = _ttl_span(ttl)
        if not isinstance(cleanup_strategies, CleanupStrategies):
            raise TypeError(
                "cleanup_strategies must be a StateTtlConfig.CleanupStrategies, got "
                f"{type(cleanup_strategies).__name__}; build the config with "
                "StateTtlConfig.new_builder(ttl)...build()"
            )
        self._cleanup = cleanup_strategies

    @staticmethod
    def new_builder(ttl: TtlLike) -> StateTtlConfig.Builder:
        """A builder for a config with time-to-live ``ttl`` (``Time``, ``Duration``,
        ``timedelta`` or int milliseconds, > 0)."""
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> UpdateType:
        return self._update_type

    def get_state_visibility(self) -> StateVisibility:
        return self._visibility

    def get_ttl(self) -> Time | Duration:
        """The time-to-live as given to the builder (a ``Duration`` for timedelta/int input)."""
        return self._ttl

    def get_ttl_time_characteristic(self) -> TtlTimeCharacteristic:
        return self._characteristic

    def is_enabled(self) -> bool:
        """False when the update type is ``Disabled``: the state then has no TTL at all."""
        return self._update_type is not UpdateType.Disabled

    def get_cleanup_strategies(self) -> CleanupStrategies:
        return self._cleanup

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_cleanup"):
            raise AttributeError("StateTtlConfig is immutable; build a new one with new_builder")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            StateTtlConfig,
            (self._update_type, self._visibility, self._characteristic, self._ttl, self._cleanup),
        )

    def _key(self) -> tuple[Any, ...]:
        return (
            self._update_type,
            self._visibility,
            self._characteristic,
            self._ttl.to_milliseconds(),
            self._cleanup,
        )

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig(ttl={self._ttl!r}, update_type={self._update_type.name}, "
            f"state_visibility={self._visibility.name}, cleanup={self._cleanup!r})"
        )

    class Builder:
        """Builds a :class:`StateTtlConfig`; every setter returns the builder.

        Defaults (Flink's): ``OnCreateAndWrite``, ``NeverReturnExpired``, processing time,
        cleanup in background.

        >>> b = StateTtlConfig.new_builder(1000).never_return_expired().cleanup_incrementally(
        ...     10, False)
        >>> b.build().get_cleanup_strategies().get_incremental_cleanup_strategy()
        IncrementalCleanupStrategy(10, False)
        """

        def __init__(self, ttl: TtlLike) -> None:
            self._ttl = _ttl_span(ttl)
            self._update_type = UpdateType.OnCreateAndWrite
            self._visibility = StateVisibility.NeverReturnExpired
            self._characteristic = TtlTimeCharacteristic.ProcessingTime
            self._background = True
            self._strategies: dict[Strategies, Any] = {}

        def set_update_type(self, update_type: UpdateType) -> StateTtlConfig.Builder:
            self._update_type = _check_enum(update_type, UpdateType, "update_type")
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(UpdateType.OnReadAndWrite)

        def set_state_visibility(self, state_visibility: StateVisibility) -> StateTtlConfig.Builder:
            self._visibility = _check_enum(state_visibility, StateVisibility, "state_visibility")
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, ttl_time_characteristic: TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            self._characteristic = _check_enum(
                ttl_time_characteristic, TtlTimeCharacteristic, "ttl_time_characteristic"
            )
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(TtlTimeCharacteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leave expired entries out of full snapshots."""
            self._strategies[Strategies.FULL_STATE_SCAN_SNAPSHOT] = None
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            """Check ``cleanup_size`` entries for expiry per state access, and also per record
            when ``run_cleanup_for_every_record``."""
            self._strategies[Strategies.INCREMENTAL_CLEANUP] = IncrementalCleanupStrategy(
                cleanup_size, run_cleanup_for_every_record
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self,
            query_time_after_num_entries: int,
            periodic_compaction_time: TtlLike | None = None,
        ) -> StateTtlConfig.Builder:
            """Accepted for PyFlink compatibility; ignored by the heap backend."""
            self._strategies[Strategies.ROCKSDB_COMPACTION_FILTER] = (
                RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries, periodic_compaction_time
                )
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """No default incremental cleanup (explicit strategies still apply)."""
            self._background = False
            return self

        def set_ttl(self, ttl: TtlLike) -> StateTtlConfig.Builder:
            self._ttl = _ttl_span(ttl)
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                self._update_type,
                self._visibility,
                self._characteristic,
                self._ttl,
                CleanupStrategies(self._strategies, self._background),
            )


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"name must be a non-empty str (it identifies the state in snapshots), got {name!r}; "
            'pass e.g. "count"'
        )
    return name


class StateDescriptor:
    """Describes a keyed state: its name (unique per operator), type information (stored, any
    object or ``None``) and optional time-to-live.

    >>> d = ListStateDescriptor("events", None)
    >>> d.get_name(), d.name, d.ttl_config is None
    ('events', 'events', True)
    >>> ValueStateDescriptor("", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: name must be a non-empty str (it identifies the state in snapshots), got ''; ...
    """

    __slots__ = ("_name", "_ttl_config", "_type_info")

    def __init__(self, name: str, type_info: Any) -> None:
        self._name = _check_name(name)
        self._type_info = type_info
        self._ttl_config: StateTtlConfig | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def type_info(self) -> Any:
        return self._type_info

    @property
    def ttl_config(self) -> StateTtlConfig | None:
        """The TTL config given to :meth:`enable_time_to_live`, or ``None``."""
        return self._ttl_config

    def get_name(self) -> str:
        return self._name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Give the state a time-to-live (a config whose update type is ``Disabled`` means no
        TTL). Call it before the descriptor is used to get a state."""
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(
                f"ttl_config must be a StateTtlConfig, got {type(ttl_config).__name__}; "
                "build one with StateTtlConfig.new_builder(ttl).build()"
            )
        self._ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


class ValueStateDescriptor(StateDescriptor):
    """Describes a :class:`ValueState`.

    >>> ValueStateDescriptor("count", None)
    ValueStateDescriptor('count')
    """

    __slots__ = ()

    def __init__(self, name: str, value_type_info: Any) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    """Describes a :class:`ListState`; ``elem_type_info`` is the element type.

    >>> ListStateDescriptor("events", None).elem_type_info is None
    True
    """

    __slots__ = ()

    def __init__(self, name: str, elem_type_info: Any) -> None:
        super().__init__(name, elem_type_info)

    @property
    def elem_type_info(self) -> Any:
        return self._type_info


class MapStateDescriptor(StateDescriptor):
    """Describes a :class:`MapState`.

    >>> MapStateDescriptor("m", "K", "V").key_type_info
    'K'
    """

    __slots__ = ("_key_type_info", "_value_type_info")

    def __init__(self, name: str, key_type_info: Any, value_type_info: Any) -> None:
        super().__init__(name, (key_type_info, value_type_info))
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info

    @property
    def key_type_info(self) -> Any:
        return self._key_type_info

    @property
    def value_type_info(self) -> Any:
        return self._value_type_info


class ReducingStateDescriptor(StateDescriptor):
    """Describes a :class:`ReducingState`; ``reduce_function`` is a callable ``(a, b) -> c`` or
    an object with ``reduce(a, b)`` (a ``ReduceFunction``).

    >>> ReducingStateDescriptor("sum", max, None).get_reduce_function() is max
    True
    >>> ReducingStateDescriptor("sum", 3, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: reduce_function must be callable as f(a, b) or have a reduce(a, b) method, ...
    """

    __slots__ = ("_reduce", "_reduce_function")

    def __init__(self, name: str, reduce_function: Any, type_info: Any) -> None:
        super().__init__(name, type_info)
        reduce = getattr(reduce_function, "reduce", None)
        if not callable(reduce):
            reduce = reduce_function
        if not callable(reduce):
            raise TypeError(
                "reduce_function must be callable as f(a, b) or have a reduce(a, b) method, got "
                f"{type(reduce_function).__name__} ({reduce_function!r}); "
                "pass e.g. lambda a, b: a + b"
            )
        self._reduce_function = reduce_function
        self._reduce: Callable[[Any, Any], Any] = reduce

    def get_reduce_function(self) -> Any:
        """The reduce function as given."""
        return self._reduce_function

    @property
    def reduce(self) -> Callable[[Any, Any], Any]:
        """The reduce function as a plain callable ``(a, b) -> c``."""
        return self._reduce


_AGG_METHODS = ("create_accumulator", "add", "get_result")


class AggregatingStateDescriptor(StateDescriptor):
    """Describes an :class:`AggregatingState`; ``agg_function`` has ``create_accumulator()``,
    ``add(value, acc) -> acc``, ``get_result(acc)`` and, for merging namespaces,
    ``merge(acc_a, acc_b) -> acc`` (an ``AggregateFunction``).

    >>> AggregatingStateDescriptor("avg", object(), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: agg_function must have callable create_accumulator, add, get_result ...
    """

    __slots__ = ("_agg_function",)

    def __init__(self, name: str, agg_function: Any, state_type_info: Any) -> None:
        super().__init__(name, state_type_info)
        if not all(callable(getattr(agg_function, m, None)) for m in _AGG_METHODS):
            raise TypeError(
                "agg_function must have callable create_accumulator, add, get_result (and merge "
                f"for merging windows), got {type(agg_function).__name__}; "
                "pass an AggregateFunction"
            )
        self._agg_function = agg_function

    def get_agg_function(self) -> Any:
        return self._agg_function
