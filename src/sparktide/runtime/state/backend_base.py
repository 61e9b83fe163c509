"""``KeyedStateBackendBase``: what the heap and RocksDB keyed state backends do alike.

A backend keeps one record per named state (the heap's table, RocksDB's stored state); it
registers a descriptor into its record (``_register``) and builds state objects over it
(``_create``). This base gives both backends the same properties, key checks and state lookup
(:meth:`~KeyedStateBackendBase.get_partitioned_state` caches the void-namespace state object).

>>> from sparktide.core.state import ValueStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
>>> b = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> isinstance(b, KeyedStateBackendBase)
True
>>> d = ValueStateDescriptor("v", None)
>>> b.get_partitioned_state(d) is b.get_partitioned_state(d)
True
>>> b.get_partitioned_state(d, "window-1") is b.get_partitioned_state(d, "window-1")
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from sparktide.core.state import State, StateDescriptor
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.backend_checks import disposed, no_current_key
from sparktide.runtime.state.heap import InternalKvState
from sparktide.runtime.state.state_types import StateTypes, check_state_types
from sparktide.runtime.state.type_compat import Convert

__all__ = ["DEFAULT_OPERATOR", "KeyedStateBackendBase", "NamedState"]

DEFAULT_OPERATOR = "the keyed operator"
"""How errors name the operator of a backend built without one."""


class NamedState(Protocol):
    """A backend's record of one state: its name, kind and declared types."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def ttl(self) -> bool: ...

    types: StateTypes | None

    def describe(self) -> str: ...


S = TypeVar("S", bound=NamedState)


class KeyedStateBackendBase(Generic[S]):
    """The part of a keyed state backend that does not depend on where entries live.

    Subclasses set the attributes annotated here (in their ``__slots__``) and implement
    ``_register`` and ``_create``.
    """

    __slots__ = ()

    _max_parallelism: int
    _operator: str
    _range: KeyGroupRange
    _time: Callable[[], int]
    _disposed: bool
    _void_states: dict[str, InternalKvState]
    current_key_group: int

    # ------------------------------------------------------------------ properties

    @property
    def max_parallelism(self) -> int:
        return self._max_parallelism

    @property
    def key_group_range(self) -> KeyGroupRange:
        return self._range

    @property
    def time_provider(self) -> Callable[[], int]:
        return self._time

    # ------------------------------------------------------------------ key checks

    def _check_open(self) -> None:
        if self._disposed:
            raise disposed("state can no longer be used")

    def check_key(self) -> None:
        """Raise a clear RuntimeError when no key is current (called by states on failure)."""
        self._check_open()
        if self.current_key_group is None:
            raise no_current_key() from None

    @property
    def operator(self) -> str:
        """The operator whose state this is, as errors name it (``operator 'Count'``)."""
        return self._operator

    # ------------------------------------------------------------------ states

    def _claim_types(self, state: S, descriptor: StateDescriptor) -> Convert | None:
        """Give ``state`` the types ``descriptor`` declares, as it registers for the first
        time. A state restored with other recorded types is migrated (the converter of its
        raw values is returned, ``None``: nothing to convert; the backend applies it to every
        restored value, once) or, when the change is not compatible, raises
        :class:`~sparktide.runtime.state.state_types.IncompatibleStateTypeError`."""
        declared = StateTypes.of(descriptor)
        migration = check_state_types(
            self._operator, state.name, state.describe(), state.kind, state.types, declared
        )
        state.types = declared
        return None if migration is None else migration.raw_converter(state.kind, state.ttl)

    def _register(self, descriptor: StateDescriptor) -> S:
        """The record of ``descriptor``'s state, registered (created or checked)."""
        raise NotImplementedError

    def _create(self, state: S, descriptor: StateDescriptor, ns: object) -> InternalKvState:
        """A new state object over ``state`` in namespace ``ns``."""
        raise NotImplementedError

    def get_partitioned_state(self, descriptor: StateDescriptor, namespace: object = None) -> State:
        """The state object for ``descriptor``, scoped to ``namespace`` (``None``: the void
        namespace of ``KeyedProcessFunction``) and to the current key at each call.

        States with the same name share their entries; registering a name again with another
        kind (or TTL setting) raises ValueError.
        """
        state = self._register(descriptor)
        if namespace is None:
            obj = self._void_states.get(state.name)
            if obj is None:
                obj = self._void_states[state.name] = self._create(state, descriptor, None)
            return obj
        return self._create(state, descriptor, namespace)

    def get_internal_state(self, descriptor: StateDescriptor) -> InternalKvState:
        """A new state object for operators: ``set_current_namespace(ns)`` scopes it, and list,
        reducing and aggregating states have ``merge_namespaces(target, sources)``."""
        return self._create(self._register(descriptor), descriptor, None)
