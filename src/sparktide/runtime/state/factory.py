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
>>> from sparktide.core.state_backend import EmbeddedRocksDBStateBackend
>>> import os
>>> state = create_keyed_state(EmbeddedRocksDBStateBackend(), SubtaskState(
...     "op", 0, 128, KeyGroupRange(0, 127), lambda: 0))
>>> type(state.backend).__name__, os.path.basename(state.directory).startswith(ROCKSDB_DIR_PREFIX)
('RocksDBKeyedStateBackend', True)
>>> state.close(); os.path.exists(state.directory)
False

A database its owner keeps open across subtasks (a streaming subtask's worker-local database,
:mod:`~sparktide.runtime.state.rocksdb_local`) is passed as ``database``: the subtask's keyed
state and its timer queues then live in that one database (the states and timers it holds are
there again), and closing the subtask leaves the database open and its files in place.

>>> from rocksdict import Rdict
>>> from sparktide.runtime.state.rocksdb_memory import db_options
>>> db = Rdict(tempfile.mkdtemp(), db_options())
>>> state = create_keyed_state(EmbeddedRocksDBStateBackend(), SubtaskState(
...     "op", 0, 128, KeyGroupRange(0, 127), lambda: 0), database=db)
>>> state.directory is None, state.backend.directory == Path(db.path())
(True, True)
>>> state.close(); db.close()
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.core.state_backend import (
    EmbeddedRocksDBStateBackend,
    StateBackend,
    StateBackendKind,
)
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.state.keyed_backend import KeyedStateBackend
from sparktide.runtime.state.state_types import describe_operator
from sparktide.runtime.timers.queue_factory import (
    HeapTimerQueueFactory,
    RocksDBTimerQueueFactory,
    TimerQueueFactory,
)

if TYPE_CHECKING:
    from rocksdict import Rdict

__all__ = [
    "ROCKSDB_DIR_PREFIX",
    "KeyedState",
    "SubtaskState",
    "create_keyed_state",
]

ROCKSDB_DIR_PREFIX = "sparktide-rocksdb-"
"""The prefix of a RocksDB subtask's directory (``tempfile.mkdtemp``'s ``prefix``)."""


@dataclass(frozen=True)
class SubtaskState:
    """The subtask whose keyed state is built: its operator's name, index, key groups and the
    processing-time clock that drives state TTL."""

    operator_name: str
    subtask_index: int
    max_parallelism: int
    key_group_range: KeyGroupRange
    time_provider: Callable[[], int]
    key_type: TypeInformation | None = None
    """The declared type information of the keys, None if undeclared (the RocksDB backend
    serializes declared keys by type)."""
    operator_uid: str | None = None
    """The operator's ``uid(...)``, if it has one (errors name the operator by it too)."""

    @property
    def operator(self) -> str:
        """The operator as errors about its state name it."""
        return describe_operator(self.operator_name, self.operator_uid)


def _remove(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


class KeyedState:
    """What :func:`create_keyed_state` built for one subtask: the keyed state ``backend``, the
    ``queue_factory`` of its timer services and the ``directory`` holding their files
    (``None`` on the heap)."""

    __slots__ = ("__weakref__", "_cleanup", "_closed", "backend", "directory", "queue_factory")

    def __init__(
        self,
        backend: KeyedStateBackend,
        queue_factory: TimerQueueFactory,
        directory: str | None = None,
    ) -> None:
        self.backend = backend
        self.queue_factory = queue_factory
        self.directory = directory
        self._closed = False
        # a subtask that is never closed (a failed run) still leaves no files behind
        self._cleanup = None if directory is None else weakref.finalize(self, _remove, directory)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Dispose of the backend and the timer queues and delete the directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.dispose()
        finally:
            self.queue_factory.dispose()
            if self._cleanup is not None:
                self._cleanup()


def _rocksdb_directory(config: EmbeddedRocksDBStateBackend, subtask: SubtaskState) -> str:
    """A new directory for the subtask's databases: under the configured storage path (spread
    by subtask index), else in the system's temporary directory."""
    parent = config.db_storage_path_for(subtask.subtask_index)
    if parent is not None:
        try:
            Path(parent).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RuntimeError(
                f"cannot create the RocksDB storage path {parent!r}: {exc}; pass a writable "
                "local directory to set_db_storage_paths(...)"
            ) from None
    return tempfile.mkdtemp(prefix=ROCKSDB_DIR_PREFIX, dir=parent)


def create_keyed_state(
    config: StateBackend, subtask: SubtaskState, database: Rdict | None = None
) -> KeyedState:
    """The keyed state of ``subtask`` as ``config`` chooses; ``database``: a raw-mode RocksDB
    database the caller owns and closes, in which a RocksDB subtask keeps its keyed state and
    timers (``None``: a database of its own, in a directory of its own)."""
    if not isinstance(config, StateBackend):
        raise TypeError(
            f"the state backend must be a StateBackend, got {type(config).__name__}; "
            "use env.set_state_backend(HashMapStateBackend() or EmbeddedRocksDBStateBackend())"
        )
    if database is not None and config.kind is not StateBackendKind.ROCKSDB:
        raise ValueError(
            f"a database was given for the keyed state of {subtask.operator}, whose state "
            f"backend is {type(config).__name__}; only EmbeddedRocksDBStateBackend keeps its "
            "state in a given database: pass database=None"
        )
    if config.kind is StateBackendKind.HASHMAP:
        heap = HeapKeyedStateBackend(
            max_parallelism=subtask.max_parallelism,
            key_group_range=subtask.key_group_range,
            time_provider=subtask.time_provider,
            operator=subtask.operator,
        )
        return KeyedState(heap, HeapTimerQueueFactory())
    if not isinstance(config, EmbeddedRocksDBStateBackend):  # pragma: no cover - two kinds
        raise TypeError(f"unknown state backend {config!r}")
    # loaded with the first RocksDB subtask: jobs on the heap never open a database
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

    if database is not None:
        attached = RocksDBKeyedStateBackend.attach(
            database,
            max_parallelism=subtask.max_parallelism,
            key_group_range=subtask.key_group_range,
            time_provider=subtask.time_provider,
            key_type=subtask.key_type,
            operator=subtask.operator,
        )
        timers = RocksDBTimerQueueFactory(
            None, key_type=subtask.key_type, db=database, slot=attached.key_slot
        )
        return KeyedState(attached, timers)
    directory = _rocksdb_directory(config, subtask)
    try:
        backend = RocksDBKeyedStateBackend(
            max_parallelism=subtask.max_parallelism,
            key_group_range=subtask.key_group_range,
            time_provider=subtask.time_provider,
            directory=Path(directory) / "state",
            key_type=subtask.key_type,
            operator=subtask.operator,
        )
        timers = RocksDBTimerQueueFactory(
            Path(directory) / "timers", key_type=subtask.key_type, slot=backend.key_slot
        )
    except BaseException:
        _remove(directory)
        raise
    return KeyedState(backend, timers, directory)
