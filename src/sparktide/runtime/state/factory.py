"""Build the keyed state of one operator subtask from the job's state backend.

:func:`create_keyed_state` is the one place that turns a
:class:`~sparktide.core.state_backend.StateBackend` (the job's choice, travelling with the plan)
and a subtask into its store: the keyed state backend, and the timer queue factory its timer
services use. :class:`KeyedState` owns what was built and releases it in :meth:`KeyedState.close`:
a RocksDB subtask's directory (under the backend's configured storage path, else a fresh
temporary directory) is deleted then, or when the process exits if the subtask never closes.

>>> from sparktide.core.state_backend import HashMapStateBackend
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> state = create_keyed_state(HashMapStateBackend(), SubtaskState(
...     "op", 0, 128, KeyGroupRange(0, 127), lambda: 0))
>>> type(state.backend).__name__, state.directory
('HeapKeyedStateBackend', None)
>>> state.close()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparktide.core.state_backend import HashMapStateBackend, StateBackend, StateBackendKind
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.state.keyed_backend import KeyedStateBackend

__all__ = ["ROCKSDB_DIR_PREFIX", "KeyedState", "SubtaskState", "create_keyed_state"]

ROCKSDB_DIR_PREFIX = "sparktide-rocksdb-"
"""The prefix of a RocksDB subtask's directory."""


@dataclass(frozen=True)
class SubtaskState:
    """The subtask whose keyed state is built: its operator's name, index, key groups and the
    processing-time clock that drives state TTL."""

    operator_name: str
    subtask_index: int
    max_parallelism: int
    key_group_range: KeyGroupRange
    time_provider: Callable[[], int]


class KeyedState:
    """What :func:`create_keyed_state` built for one subtask: the keyed state ``backend`` and
    the ``directory`` holding its files (``None`` on the heap)."""

    __slots__ = ("_closed", "backend", "directory")

    def __init__(self, backend: KeyedStateBackend, directory: str | None = None) -> None:
        self.backend = backend
        self.directory = directory
        self._closed = False

    def close(self) -> None:
        """Dispose of the backend and delete its directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.backend.dispose()


def create_keyed_state(config: StateBackend, subtask: SubtaskState) -> KeyedState:
    """The keyed state of ``subtask`` as ``config`` chooses."""
    if not isinstance(config, StateBackend):
        raise TypeError(
            f"the state backend must be a StateBackend, got {type(config).__name__}; "
            "use env.set_state_backend(HashMapStateBackend() or EmbeddedRocksDBStateBackend())"
        )
    if config.kind is StateBackendKind.HASHMAP:
        return KeyedState(
            HeapKeyedStateBackend(
                max_parallelism=subtask.max_parallelism,
                key_group_range=subtask.key_group_range,
                time_provider=subtask.time_provider,
            )
        )
    raise NotImplementedError(f"{config!r} is not available yet; use {HashMapStateBackend()!r}")
