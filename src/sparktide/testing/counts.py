"""Counting timers and state entries, in total or of one namespace (a window), for the test
harnesses (Flink's ``numEventTimeTimers(window)``, ``numKeyedStateEntries(namespace)``).

Both work on what every backend offers: timer queues list their entries per key group, and
keyed state backends give their backend-neutral snapshot, so the counts are the same on the heap
and on RocksDB. They are meant for tests (a count of one namespace reads every entry).

>>> from sparktide.core.state import ValueStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
>>> b = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> b.set_current_key("k")
>>> b.get_partitioned_state(ValueStateDescriptor("v", None), namespace="w1").update(1)
>>> b.get_partitioned_state(ValueStateDescriptor("v", None), namespace="w2").update(2)
>>> count_state_entries(b), count_state_entries(b, "w1"), count_state_entries(b, "w3")
(2, 1, 0)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparktide.runtime.state.keyed_backend import KeyedStateBackend
from sparktide.runtime.timers.queue_factory import TimerQueue

__all__ = ["ALL_NAMESPACES", "count_state_entries", "count_timers"]


class _AllNamespaces:
    """The default of the counts: every namespace (``None`` is a namespace of its own: the one
    of a process function's state and timers)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ALL_NAMESPACES"


ALL_NAMESPACES: Any = _AllNamespaces()


def count_timers(queues: Iterable[TimerQueue[Any, Any]], namespace: object = ALL_NAMESPACES) -> int:
    """The timers in ``queues``, of ``namespace`` only if given."""
    if namespace is ALL_NAMESPACES:
        return sum(len(q) for q in queues)
    return sum(
        1
        for q in queues
        for kg in q.key_group_range()
        for entry in q.entries_for_key_group(kg)
        if entry[3] == namespace
    )


def count_state_entries(
    backend: KeyedStateBackend | None, namespace: object = ALL_NAMESPACES
) -> int:
    """The state entries holding a value in ``backend``, of ``namespace`` only if given."""
    if backend is None:
        return 0
    if namespace is ALL_NAMESPACES:
        return backend.num_entries()
    _meta, per_key_group = backend.snapshot_state()
    return sum(
        1
        for by_name in per_key_group.values()
        for entries in by_name.values()
        for _key, ns, _raw in entries
        if ns == namespace
    )
