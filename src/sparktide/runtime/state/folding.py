"""How reducing and aggregating state fold values, and the direct view of their entries.

A reducing state stores ``reduce(old, value)`` per ``(key, namespace)``, an aggregating state
the accumulator ``add(value, old or create_accumulator())``; neither function may return
``None`` (a stored value is never ``None``). :func:`checked_reduce`, :func:`accumulate` and
:func:`merge_accumulators` apply these contracts for every backend.

:class:`FoldableState` is what a state offers an operator that folds each record into several
namespaces (the window fast path, :mod:`~sparktide.runtime.operators.window_fast`):
``folded_entries()`` returns the stored entries themselves, per key group a dict
``(key, namespace) -> value``, with the function that folds into them, as a
:class:`ReducedEntries` or :class:`AccumulatedEntries`; or ``None`` when the state keeps its
entries in another form (serialized, with TTL timestamps). The heap backend's reducing and
aggregating states without TTL offer them. Bound once in ``open``, the view costs a record
nothing more than the state's own table reads.

>>> from sparktide.core.state import ReducingStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
>>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
>>> backend = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> state = backend.get_internal_state(ReducingStateDescriptor("sum", lambda a, b: a + b, None))
>>> entries = state.folded_entries()
>>> type(entries).__name__, entries.reduce(2, 3)
('ReducedEntries', 5)
>>> backend.set_current_key("a"); state.set_current_namespace("w1"); state.add(4)
>>> entries.key_group_dicts[assign_to_key_group("a", 128)][("a", "w1")]
4
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

__all__ = [
    "AccumulatedEntries",
    "AggregateLike",
    "EntryKey",
    "FoldableState",
    "FoldedEntries",
    "KeyGroupDict",
    "ReducedEntries",
    "Reducer",
    "accumulate",
    "checked_reduce",
    "merge_accumulators",
    "returned_none_error",
]

R = TypeVar("R")

EntryKey = tuple[object, object]
"""The key of an entry in a key group's dict: ``(key, namespace)``."""

KeyGroupDict = dict[EntryKey, R]
"""The entries of one state in one key group: ``(key, namespace) -> raw value``."""

Reducer = Callable[[object, object], object]
"""A reducing state's function ``(a, b) -> combined``."""


class AggregateLike(Protocol):
    """What aggregating state needs of its aggregate function (an ``AggregateFunction`` or any
    object with these methods; ``merge`` is looked up when namespaces merge)."""

    def create_accumulator(self) -> object: ...

    def add(self, value: object, accumulator: object) -> object: ...

    def get_result(self, accumulator: object) -> object: ...


@dataclass(frozen=True)
class ReducedEntries:
    """A reducing state's entries: each holds ``reduce`` of the values added to it, in order.

    ``key_group_dicts[kg]`` is the dict of key group ``kg`` (only the key groups of the
    backend's range hold one); writes go to the state itself. Values written must not be
    ``None`` (reduce with :func:`checked_reduce`)."""

    key_group_dicts: list[KeyGroupDict[object]]
    reduce: Reducer


@dataclass(frozen=True)
class AccumulatedEntries:
    """An aggregating state's entries: each holds an accumulator of ``aggregate`` (what
    ``get()`` passes to ``aggregate.get_result``). Accumulators written must not be ``None``
    (raise :func:`returned_none_error` when ``add`` returns one)."""

    key_group_dicts: list[KeyGroupDict[object]]
    aggregate: AggregateLike


FoldedEntries = ReducedEntries | AccumulatedEntries
"""The direct view of a folding state's entries."""


@runtime_checkable
class FoldableState(Protocol):
    """A state that may offer its entries directly (see the module docstring)."""

    def folded_entries(self) -> FoldedEntries | None:
        """The state's entries and fold function, or ``None`` when it keeps them otherwise."""


def returned_none_error(fn: object, method: str) -> TypeError:
    """The error for ``fn.method`` returning ``None`` instead of the new accumulator."""
    return TypeError(
        f"{type(fn).__name__}.{method} returned None; it must return the new value "
        "(the updated accumulator), not change it in place and return nothing"
    )


def checked_reduce(reduce: Reducer, a: object, b: object) -> object:
    """``reduce(a, b)``; a ``None`` result is an error (state values are never None)."""
    out = reduce(a, b)
    if out is None:
        raise TypeError(
            f"the reduce function {getattr(reduce, '__qualname__', reduce)!r} returned None; "
            "it must return the combined value"
        )
    return out


def accumulate(agg: AggregateLike, acc: object, value: object) -> object:
    """``agg.add(value, acc)``, starting from a new accumulator when ``acc`` is ``None``; a
    ``None`` result is an error.

    >>> class Count:
    ...     def create_accumulator(self): return 0
    ...     def add(self, value, acc): return acc + 1
    ...     def get_result(self, acc): return acc
    >>> accumulate(Count(), None, "x"), accumulate(Count(), 4, "x")
    (1, 5)
    """
    if acc is None:
        acc = agg.create_accumulator()
    out = agg.add(value, acc)
    if out is None:
        raise returned_none_error(agg, "add")
    return out


def merge_accumulators(agg: AggregateLike, a: object, b: object) -> object:
    """``agg.merge(a, b)``, with a clear error when the aggregate function cannot merge."""
    merge = getattr(agg, "merge", None)
    if not callable(merge):
        raise TypeError(
            f"{type(agg).__name__} has no merge(acc_a, acc_b) method, which merging state "
            "namespaces (merging windows) needs; implement merge"
        )
    out = merge(a, b)
    if out is None:
        raise returned_none_error(agg, "merge")
    return out
