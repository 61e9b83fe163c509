"""The checks and error texts every keyed state backend shares: constructor arguments, the kind
of a descriptor, registering a name again, and the key context (current key, dispose).

Both :class:`~sparktide.runtime.state.backend.HeapKeyedStateBackend` and the RocksDB backend
call these, so a user sees the same error for the same mistake on either backend.

>>> from sparktide.core.state import ListStateDescriptor
>>> kind_of(ListStateDescriptor("events", None))
'list'
>>> check_backend_args(0, KeyGroupRange(0, 0), lambda: 0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: max_parallelism must be an int in [1, 32768], got 0; ...
>>> print(key_out_of_range("a", 81, 0, 63))  # doctest: +ELLIPSIS
key 'a' is in key group 81, outside this backend's key-group range [0, 63]; ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sparktide.core.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import UPPER_BOUND_MAX_PARALLELISM, KeyGroupRange
from sparktide.runtime.state.heap import describe_kind

__all__ = [
    "RegisteredState",
    "check_backend_args",
    "check_registration",
    "disposed",
    "key_group_out_of_range",
    "key_out_of_range",
    "kind_of",
    "no_current_key",
    "ttl_enabled",
    "unhashable_key",
]

_KIND_OF: tuple[tuple[type[StateDescriptor], str], ...] = (
    (ValueStateDescriptor, "value"),
    (ListStateDescriptor, "list"),
    (MapStateDescriptor, "map"),
    (ReducingStateDescriptor, "reducing"),
    (AggregatingStateDescriptor, "aggregating"),
)


class RegisteredState(Protocol):
    """What the checks read of a backend's record of one state (the heap's table, RocksDB's
    stored state)."""

    @property
    def kind(self) -> str: ...

    @property
    def ttl(self) -> bool: ...

    @property
    def registered(self) -> bool: ...

    @property
    def ttl_config(self) -> StateTtlConfig | None: ...

    def describe(self) -> str: ...


def check_backend_args(
    max_parallelism: int, key_group_range: KeyGroupRange, time_provider: Callable[[], int]
) -> None:
    """Raise a clear error for bad constructor arguments of a keyed state backend."""
    if type(max_parallelism) is not int or not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(
            f"max_parallelism must be an int in [1, {UPPER_BOUND_MAX_PARALLELISM}], got "
            f"{max_parallelism!r}; use compute_default_max_parallelism(parallelism)"
        )
    if not isinstance(key_group_range, KeyGroupRange):
        raise TypeError(
            f"key_group_range must be a KeyGroupRange, got {type(key_group_range).__name__}; "
            "use compute_key_group_range_for_operator_index(...)"
        )
    if len(key_group_range) and not (
        key_group_range.start >= 0 and key_group_range.end < max_parallelism
    ):
        raise ValueError(
            f"key_group_range {key_group_range} must lie within [0, {max_parallelism - 1}] "
            f"for max_parallelism={max_parallelism}"
        )
    if not callable(time_provider):
        raise TypeError(
            f"time_provider must be a callable returning the processing time in ms, got "
            f"{type(time_provider).__name__}; pass e.g. the processing-time service's "
            "get_current_processing_time"
        )


def kind_of(descriptor: object) -> str:
    """The state kind (one of ``KINDS``) a descriptor describes; TypeError for anything else."""
    for cls, kind in _KIND_OF:
        if isinstance(descriptor, cls):
            return kind
    raise TypeError(
        f"descriptor must be a ValueStateDescriptor, ListStateDescriptor, MapStateDescriptor, "
        f"ReducingStateDescriptor or AggregatingStateDescriptor, got "
        f"{type(descriptor).__name__} ({descriptor!r})"
    )


def ttl_enabled(descriptor: StateDescriptor) -> bool:
    """Whether ``descriptor`` has an enabled TTL config."""
    cfg = descriptor.ttl_config
    return cfg is not None and cfg.is_enabled()


def check_registration(
    existing: RegisteredState, name: str, kind: str, ttl: bool, cfg: StateTtlConfig | None
) -> None:
    """Raise ValueError when a descriptor of ``kind``/``ttl``/``cfg`` cannot register under
    ``name``, which ``existing`` holds already (registered or restored)."""
    if existing.kind != kind or existing.ttl != ttl:
        origin = "registered" if existing.registered else "restored from a snapshot"
        raise ValueError(
            f"state {name!r} is a {existing.describe()} ({origin}), but the descriptor "
            f"describes a {describe_kind(kind, ttl)}; give the new state another name or "
            "keep the kind and TTL setting of the existing one"
        )
    if existing.registered and ttl and existing.ttl_config != cfg:
        raise ValueError(
            f"state {name!r} is registered with TTL config {existing.ttl_config!r}, but the "
            f"descriptor has {cfg!r}; use the same StateTtlConfig for every registration"
        )


def disposed(what_now: str) -> RuntimeError:
    """The error of a disposed backend used again; ``what_now`` ends the sentence."""
    return RuntimeError(f"the keyed state backend was disposed; {what_now}")


def unhashable_key(key: object) -> TypeError:
    """The error of a key that cannot be hashed."""
    return TypeError(
        f"key must be hashable for keyed state, got {type(key).__name__} ({key!r}); "
        "convert it, e.g. bytearray -> bytes, list -> tuple"
    )


def key_out_of_range(key: object, key_group: int, start: int, end: int) -> ValueError:
    """The error of a key whose key group is not in ``[start, end]``."""
    return ValueError(
        f"key {key!r} is in key group {key_group}, outside this backend's key-group range "
        f"[{start}, {end}]; route records to the subtask owning the key "
        "group (assign_key_to_parallel_operator)"
    )


def key_group_out_of_range(key: object, key_group: object, start: int, end: int) -> ValueError:
    """The error of a given key group not in ``[start, end]``."""
    return ValueError(
        f"key_group {key_group!r} (of key {key!r}) is outside this backend's key-group "
        f"range [{start}, {end}]; pass the key group the key was stored under"
    )


def no_current_key() -> RuntimeError:
    """The error of a keyed state used while no key is current."""
    return RuntimeError(
        "no current key: keyed state is scoped to a key and can only be used while "
        "processing an element or timer of a keyed stream (key_by first); "
        "outside an operator call set_current_key(key)"
    )
