"""Keyed state backends: the in-memory (heap) backend and its state objects.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> backend = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> backend.num_entries()
0
"""

from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.state.heap import InternalKvState, StateTable

__all__ = ["HeapKeyedStateBackend", "InternalKvState", "StateTable"]
