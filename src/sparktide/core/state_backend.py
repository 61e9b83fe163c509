"""State backends: where a job keeps its keyed state and timers (PyFlink's
``pyflink.datastream.state_backend``).

A state backend here is a description, not a store: plain data that travels with the job to
every keyed operator subtask, which builds its store from it.

* :class:`HashMapStateBackend` (the default): state and timers are Python objects on the heap
  of the process running the subtask. Fastest, as long as the state fits in memory.
* :class:`EmbeddedRocksDBStateBackend`: state and timers live in an embedded RocksDB database
  per subtask, in a local directory (:meth:`~EmbeddedRocksDBStateBackend.set_db_storage_paths`,
  else a fresh temporary directory, deleted when the subtask closes). State can then exceed
  memory; every access serializes, so it is slower than the heap.

Both give the same results, in the same order, and their checkpoints are interchangeable.

>>> backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
>>> backend.set_db_storage_paths("/tmp/a", "/tmp/b")
>>> backend.get_db_storage_paths(), backend.is_incremental_checkpoints_enabled()
(['/tmp/a', '/tmp/b'], True)
>>> backend.db_storage_path_for(subtask_index=3)
'/tmp/b'
>>> HashMapStateBackend().kind, backend.kind
(<StateBackendKind.HASHMAP: 'hashmap'>, <StateBackendKind.ROCKSDB: 'rocksdb'>)
>>> state_backend_from_config({"state.backend.type": "rocksdb"})
EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=None, db_storage_paths=[], \
predefined_options=DEFAULT, number_of_transfer_threads=4)
"""

from __future__ import annotations

import copy
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from sparktide.common import env_overrides

__all__ = [
    "CONFIG_INCREMENTAL",
    "CONFIG_LOCAL_DIR",
    "CONFIG_STATE_BACKEND_TYPE",
    "CustomStateBackend",
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
    "StateBackendKind",
    "default_state_backend",
    "state_backend_from_config",
]

CONFIG_STATE_BACKEND_TYPE = "state.backend.type"
"""The configuration key choosing the backend: ``"hashmap"`` or ``"rocksdb"`` (Flink's)."""

CONFIG_LOCAL_DIR = "state.backend.rocksdb.localdir"
"""The configuration key of RocksDB's local directories (comma-separated, Flink's)."""

CONFIG_INCREMENTAL = "execution.checkpointing.incremental"
"""The configuration key enabling incremental checkpoints (``"true"``/``"false"``, Flink's)."""

ENV_STATE_BACKEND = env_overrides.STATE_BACKEND
"""The environment variable giving the default backend (``"hashmap"``, the default, or
``"rocksdb"``): what an environment starts with, and what an operator set up without one uses
(the test harness). ``set_state_backend`` in the job wins."""

DEFAULT_TRANSFER_THREADS = 4
"""Flink's default number of threads moving checkpoint files of a RocksDB backend."""

B = TypeVar("B", bound="StateBackend")


class StateBackendKind(Enum):
    """Which store a backend builds: the values are those of ``state.backend.type``."""

    HASHMAP = "hashmap"
    ROCKSDB = "rocksdb"


class PredefinedOptions(Enum):
    """Flink's predefined RocksDB option profiles. Recorded with the backend; the embedded
    databases here are small per-subtask stores and use one tuned profile whatever is chosen."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class StateBackend(ABC):
    """How a job stores its keyed state and timers (set with
    ``StreamExecutionEnvironment.set_state_backend``)."""

    @property
    @abstractmethod
    def kind(self) -> StateBackendKind:
        """The store this backend builds."""

    def copy(self: B) -> B:
        """An independent copy: the job keeps one, so later changes to this object do not
        reach a job already built."""
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.kind))

    def __str__(self) -> str:
        return repr(self)


class HashMapStateBackend(StateBackend):
    """Keyed state and timers as Python objects in the memory of the process running each
    subtask (the default backend).

    >>> HashMapStateBackend()
    HashMapStateBackend()
    """

    @property
    def kind(self) -> StateBackendKind:
        return StateBackendKind.HASHMAP

    def __repr__(self) -> str:
        return "HashMapStateBackend()"


def _check_path(path: object, where: str) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise TypeError(
            f"{where} must be a non-empty str (a local directory), got "
            f"{type(path).__name__} ({path!r})"
        )
    if "://" in path and not path.startswith("file://"):
        raise ValueError(
            f"{where} {path!r} is not a local directory; RocksDB keeps its working files on "
            "local disk (checkpoints go to the checkpoint location): pass a local path"
        )
    return path.removeprefix("file://")


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keyed state and timers in an embedded RocksDB database per operator subtask: state may
    exceed memory, each access costs a (de)serialization.

    ``enable_incremental_checkpointing``: ``True`` or ``False``, or ``None`` for the default
    (Flink's: not incremental).

    >>> b = EmbeddedRocksDBStateBackend()
    >>> b.is_incremental_checkpoints_enabled(), b.get_db_storage_paths()
    (False, [])
    >>> b.set_number_of_transfer_threads(2); b.get_number_of_transfer_threads()
    2
    >>> EmbeddedRocksDBStateBackend(enable_incremental_checkpointing="yes")
    Traceback (most recent call last):
    ...
    TypeError: enable_incremental_checkpointing must be None, True or False, got str ('yes')
    """

    def __init__(self, enable_incremental_checkpointing: bool | None = None) -> None:
        if enable_incremental_checkpointing not in (None, True, False) or (
            enable_incremental_checkpointing is not None
            and type(enable_incremental_checkpointing) is not bool
        ):
            raise TypeError(
                "enable_incremental_checkpointing must be None, True or False, got "
                f"{type(enable_incremental_checkpointing).__name__} "
                f"({enable_incremental_checkpointing!r})"
            )
        self._incremental = enable_incremental_checkpointing
        self._paths: list[str] = []
        self._predefined = PredefinedOptions.DEFAULT
        self._transfer_threads = DEFAULT_TRANSFER_THREADS

    @property
    def kind(self) -> StateBackendKind:
        return StateBackendKind.ROCKSDB

    # ------------------------------------------------------------------ PyFlink's methods

    def set_db_storage_paths(self, *paths: str) -> None:
        """The local directories under which the subtasks' databases are created (spread over
        them by subtask index); none: a fresh temporary directory per subtask. A subtask's
        directory is deleted when it closes: the state survives in checkpoints only."""
        self._paths = [_check_path(p, f"paths[{i}]") for i, p in enumerate(paths)]

    def get_db_storage_paths(self) -> list[str]:
        """The configured directories (empty: temporary directories)."""
        return list(self._paths)

    def is_incremental_checkpoints_enabled(self) -> bool:
        """Whether a checkpoint writes only the database files that are new since the last
        completed one."""
        return bool(self._incremental)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        """Record a predefined option profile (see :class:`PredefinedOptions`)."""
        if not isinstance(options, PredefinedOptions):
            raise TypeError(
                f"options must be a PredefinedOptions, got {type(options).__name__} "
                f"({options!r}); e.g. PredefinedOptions.FLASH_SSD_OPTIMIZED"
            )
        self._predefined = options

    def get_predefined_options(self) -> PredefinedOptions:
        return self._predefined

    def set_options(self, options_factory_class_name: str) -> None:
        """Not available: it names a Java ``RocksDBOptionsFactory`` class, and there is no JVM
        behind the embedded databases here."""
        raise NotImplementedError(
            f"set_options({options_factory_class_name!r}) names a Java RocksDBOptionsFactory "
            "class, but the embedded RocksDB databases here are opened from Python, not by a "
            "JVM; use set_predefined_options(...) or leave the options at their defaults"
        )

    def get_options(self) -> str | None:
        """The options factory class: always ``None`` (see :meth:`set_options`)."""
        return None

    def get_number_of_transfer_threads(self) -> int:
        return self._transfer_threads

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        """Record how many threads may move checkpoint files at once (an int >= 1)."""
        n = number_of_transfering_threads
        if type(n) is not int or n < 1:
            raise ValueError(f"number_of_transfering_threads must be an int >= 1, got {n!r}")
        self._transfer_threads = n

    # ------------------------------------------------------------------ for the runtime

    def db_storage_path_for(self, subtask_index: int) -> str | None:
        """The configured directory the database of subtask ``subtask_index`` goes under
        (``None``: a temporary directory)."""
        paths = self._paths
        return paths[subtask_index % len(paths)] if paths else None

    def __repr__(self) -> str:
        return (
            f"EmbeddedRocksDBStateBackend(enable_incremental_checkpointing={self._incremental!r}, "
            f"db_storage_paths={self._paths!r}, predefined_options={self._predefined.name}, "
            f"number_of_transfer_threads={self._transfer_threads})"
        )


class CustomStateBackend(StateBackend):
    """PyFlink's wrapper of a Java state backend: not available here (there is no JVM behind
    the state); choose :class:`HashMapStateBackend` or :class:`EmbeddedRocksDBStateBackend`."""

    def __init__(self, j_custom_state_backend: object = None) -> None:
        raise NotImplementedError(
            "CustomStateBackend wraps a Java state backend, and state here is kept by Python "
            "stores; use HashMapStateBackend() or EmbeddedRocksDBStateBackend()"
        )

    @property
    def kind(self) -> StateBackendKind:  # pragma: no cover - never constructed
        raise NotImplementedError


_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


def _flag(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(f"configuration {key!r} must be 'true' or 'false', got {value!r}")


def default_state_backend() -> StateBackend:
    """The backend ``SPARKTIDE_STATE_BACKEND`` names (``"hashmap"`` or ``"rocksdb"``), else
    :class:`HashMapStateBackend`.

    >>> default_state_backend().kind in (StateBackendKind.HASHMAP, StateBackendKind.ROCKSDB)
    True
    """
    raw = env_overrides.state_backend()
    if raw is None:
        return HashMapStateBackend()
    try:
        chosen = state_backend_from_config({CONFIG_STATE_BACKEND_TYPE: raw})
    except ValueError:
        raise ValueError(
            f"{ENV_STATE_BACKEND} must be 'hashmap' or 'rocksdb', got {raw!r}; unset it or fix it"
        ) from None
    return HashMapStateBackend() if chosen is None else chosen


def state_backend_from_config(config: Mapping[str, object]) -> StateBackend | None:
    """The backend a configuration chooses with ``state.backend.type`` (``"hashmap"`` or
    ``"rocksdb"``), with ``state.backend.rocksdb.localdir`` and
    ``execution.checkpointing.incremental``; ``None`` when it chooses none.

    >>> state_backend_from_config({"state.backend.type": "hashmap"})
    HashMapStateBackend()
    >>> state_backend_from_config({"state.backend.type": "memory"})
    Traceback (most recent call last):
    ...
    ValueError: configuration 'state.backend.type' must be 'hashmap' or 'rocksdb', got 'memory'
    """
    raw = config.get(CONFIG_STATE_BACKEND_TYPE)
    if raw is None:
        return None
    name = str(raw).strip().lower()
    if name == StateBackendKind.HASHMAP.value:
        return HashMapStateBackend()
    if name != StateBackendKind.ROCKSDB.value:
        raise ValueError(
            f"configuration {CONFIG_STATE_BACKEND_TYPE!r} must be 'hashmap' or 'rocksdb', "
            f"got {raw!r}"
        )
    incremental = config.get(CONFIG_INCREMENTAL)
    backend = EmbeddedRocksDBStateBackend(
        None if incremental is None else _flag(incremental, CONFIG_INCREMENTAL)
    )
    local = config.get(CONFIG_LOCAL_DIR)
    if local is not None:
        paths = [p.strip() for p in str(local).replace(";", ",").split(",") if p.strip()]
        backend.set_db_storage_paths(*paths)
    return backend
