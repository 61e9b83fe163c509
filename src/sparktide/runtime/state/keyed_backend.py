"""``KeyedStateBackend``: what the runtime needs of the keyed state of one operator subtask.

Operators, window functions and contents, the failed-records rollback, the timer services (as
their key context) and the checkpoint code use a backend only through this protocol, so the
heap backend (:class:`~sparktide.runtime.state.backend.HeapKeyedStateBackend`) and the RocksDB
backend are interchangeable. Snapshots are in the canonical, backend-neutral form of
:meth:`KeyedStateBackend.snapshot_state`: a checkpoint written with one backend restores with
the other.

Code that reads the heap backend's tables directly (the window fast path, merging window sets
updating their mapping in place) checks for the heap's state classes first and takes the
general path otherwise.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
>>> def entries(backend: KeyedStateBackend) -> int:
...     return backend.num_entries()
>>> entries(HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0))
0
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from typing import Protocol

from sparktide.core.state import State, StateDescriptor
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.backend import KeyEntries, StateEntry, StateMeta, StateSnapshot
from sparktide.runtime.state.heap import InternalKvState

__all__ = ["KeyedStateBackend"]


class KeyedStateBackend(Protocol):
    """The keyed state of one operator subtask, for the key groups of ``key_group_range``.

    ``current_key`` and ``current_key_group`` are the key context of state accesses and timer
    services; they change only through :meth:`set_current_key` and
    :meth:`set_current_key_and_group`.
    """

    current_key: object
    current_key_group: int

    @property
    def max_parallelism(self) -> int: ...

    @property
    def key_group_range(self) -> KeyGroupRange: ...

    @property
    def time_provider(self) -> Callable[[], int]:
        """The processing time in ms (drives state TTL)."""
        ...

    def key_hooks(self) -> Sized:
        """What :meth:`set_current_key_and_group` runs besides assigning ``current_key`` and
        ``current_key_group`` (for a key group in :attr:`key_group_range`): one container for
        the backend's life, empty while there is nothing else. Loops that set the key per
        record or per timer test it (``if hooks:``, no call) and assign the two attributes
        themselves while it is empty."""
        ...

    # ------------------------------------------------------------------ key context

    def set_current_key(self, key: object) -> None:
        """Make ``key`` current (computes its key group; errors for keys outside the range)."""
        ...

    def set_current_key_and_group(self, key: object, key_group: int) -> None:
        """Make ``key`` current, its key group known (no hashing)."""
        ...

    def check_key(self) -> None:
        """Raise the clear error of a state used without a current key (or after dispose)."""
        ...

    # ------------------------------------------------------------------ states

    def get_partitioned_state(self, descriptor: StateDescriptor, namespace: object = None) -> State:
        """The user-facing state of ``descriptor`` in ``namespace`` (``None``: void)."""
        ...

    def get_internal_state(self, descriptor: StateDescriptor) -> InternalKvState:
        """A new state object for operators, scoped with ``set_current_namespace``."""
        ...

    def get_keys(self, state_name: str, namespace: object) -> Iterator[object]:
        """The keys with an entry of ``state_name`` in ``namespace`` (a snapshot)."""
        ...

    def get_state_names(self) -> list[str]: ...

    def state_metas(self) -> dict[str, StateMeta]:
        """Per state, its kind, TTL setting and declared types (a snapshot's ``meta``)."""
        ...

    def num_entries(self) -> int:
        """The (state, key, namespace) entries holding a value."""
        ...

    def estimate_num_entries(self) -> int:
        """:meth:`num_entries`, or an estimate where counting would read the whole state
        (metrics read this every micro-batch)."""
        ...

    # ------------------------------------------------------------------ rollback of one key

    def key_entries(self, key: object, key_group: int) -> KeyEntries:
        """Copies of every entry of ``key``, to roll back to with :meth:`reset_key_entries`."""
        ...

    def reset_key_entries(self, key: object, key_group: int, saved: KeyEntries) -> None:
        """Make the entries of ``key`` exactly ``saved``."""
        ...

    # ------------------------------------------------------------------ snapshots, lifecycle

    def snapshot_state(self) -> tuple[dict[str, StateMeta], StateSnapshot]:
        """The canonical snapshot: ``(meta, per_key_group[kg][name] = [(key, ns, raw)])``."""
        ...

    def restore_state(
        self,
        meta: Mapping[str, Mapping[str, object]],
        per_key_group: Mapping[int, Mapping[str, Iterable[StateEntry]]],
        *,
        trusted: bool = False,
    ) -> None:
        """Add the entries of a canonical snapshot for the key groups in range."""
        ...

    def dispose(self) -> None:
        """Release everything; the backend cannot be used afterwards."""
        ...
