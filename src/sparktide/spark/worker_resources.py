"""What a Spark Python worker keeps across micro-batches, in one object passed explicitly.

Spark reuses a Python worker process for many tasks, so a streaming subtask's state can outlive
its micro-batch there: the state a subtask left after writing a version (:class:`WarmCache`),
the worker-local RocksDB databases of the stage subtasks
(:class:`~sparktide.runtime.state.rocksdb_local.LocalDatabases`), the RocksDB memory budget
they share (:class:`~sparktide.runtime.state.rocksdb_memory.MemoryBudget`) and the counters of
how subtasks got their state (:class:`CacheStats`). A :class:`WorkerResources` holds them all;
the components that use them receive it (or the part they need) as a parameter: a
:class:`~sparktide.spark.stream_job.StreamingJob` carries one, and hands the database it opened
to the subtask it builds (``build_subtask(..., state_database=...)``).

**Where it lives.** One per process: :func:`process_resources` returns it, from the one
module-level reference of this module (``Final``: never rebound). A ``StreamingJob`` is built on
the driver with the driver's and shipped to the workers pickled; a :class:`WorkerResources`
never travels: unpickled, it is the receiving process's own (:meth:`WorkerResources.__reduce__`),
so each Spark worker process runs every batch with its own registry. Tests that run batches in
the driver process pass a registry of their own (``StreamingJob(..., resources=...)``) and read
its counters through it.

>>> resources = WorkerResources()
>>> resources.stats.warm, len(resources.warm)
(0, 0)
>>> import pickle
>>> pickle.loads(pickle.dumps(resources)) is process_resources()
True
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Final, NamedTuple

from sparktide.runtime.state.rocksdb_local import LocalDatabases
from sparktide.spark.checkpoint_native import open_state_db

if TYPE_CHECKING:
    from sparktide.runtime.live_state import SnapshotOrLive
    from sparktide.runtime.state.rocksdb_memory import MemoryBudget
    from sparktide.spark.changelog import Digests
    from sparktide.spark.checkpoint_meta import JobFingerprint, SubtaskWrite
    from sparktide.spark.checkpoint_native import NativeReference

__all__ = [
    "CacheStats",
    "WarmCache",
    "WarmKey",
    "WarmState",
    "WorkerResources",
    "process_resources",
]

WARM_LIMIT = 64
"""How many subtasks' states a worker keeps warm (the oldest goes first)."""


class WarmKey(NamedTuple):
    """Whose state a worker keeps: a subtask of a stage (by its entry operator's identity) of
    one job (checkpoint location and fingerprint), at one parallelism."""

    location: str
    fingerprint: JobFingerprint | None
    stage: str
    subtask: int
    parallelism: int


class WarmState(NamedTuple):
    """What a subtask left in this worker after writing ``version`` (``written``: its file
    and chain, what a later batch checks against the manifest it restores); ``caught_up``:
    how many changelogs written since by other workers brought it to ``version`` (0: as
    this worker left it)."""

    version: int
    written: SubtaskWrite
    snapshot: SnapshotOrLive | None  # live: as the operator left it
    digests: Digests
    valves: bytes
    watermarks: bytes
    reference: NativeReference | None = None  # a native chain: its RocksDB checkpoint
    broadcast: bytes | None = None  # a broadcast operator's broadcast state
    caught_up: int = 0


class WarmCache:
    """The states subtasks left in this worker for their next batch, at most ``limit`` (the
    oldest is dropped). An entry is *taken*, never shared: a failed attempt cannot leave it
    for its retry.

    >>> cache = WarmCache(limit=1)
    >>> key = WarmKey("ckpt", None, "op", 0, 1)
    >>> cache.take(key) is None, len(cache)
    (True, 0)
    """

    __slots__ = ("_entries", "limit")

    def __init__(self, limit: int = WARM_LIMIT) -> None:
        if type(limit) is not int or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        self.limit = limit
        self._entries: dict[WarmKey, WarmState] = {}

    def take(self, key: WarmKey) -> WarmState | None:
        """The state kept for ``key``, removed (``None``: nothing kept)."""
        return self._entries.pop(key, None)

    def keep(self, key: WarmKey, state: WarmState) -> None:
        """Keep ``state`` for the next batch of ``key``'s subtask."""
        entries = self._entries
        if len(entries) >= self.limit:
            entries.pop(next(iter(entries)))
        entries[key] = state

    def kept(self) -> list[WarmState]:
        """The states kept, oldest first (left in place)."""
        return list(self._entries.values())

    def clear(self) -> None:
        """Forget every state kept (the next batches read the checkpoint)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class CacheStats:
    """Counters of one worker: subtasks whose state came from the worker (``warm``: the warm
    cache or a database reused in memory; ``caught_up`` of them: an older state from the warm
    cache brought up to date by the changelogs written since) or from disk (``disk``), and
    the bytes of state files written as full snapshots and as changelogs."""

    warm: int = 0
    caught_up: int = 0
    disk: int = 0
    bytes_snapshot: int = 0
    bytes_changelog: int = 0

    def reset(self) -> None:
        """Every counter back to 0."""
        for f in fields(self):
            setattr(self, f.name, 0)


def _local_base() -> str:
    import tempfile

    return os.path.join(tempfile.gettempdir(), "sparktide-rocksdb")


class WorkerResources:
    """What one worker process keeps across micro-batches (see the module docstring): the
    ``warm`` cache of subtask states, the ``stats`` counters, the worker-local RocksDB
    ``databases`` under ``base`` (default: the system temporary directory's
    ``sparktide-rocksdb``) and the RocksDB ``memory`` budget."""

    __slots__ = ("databases", "stats", "warm")

    def __init__(self, base: str | None = None, warm_limit: int = WARM_LIMIT) -> None:
        self.warm = WarmCache(warm_limit)
        self.stats = CacheStats()
        self.databases = LocalDatabases(_local_base() if base is None else base, open_state_db)

    @property
    def memory(self) -> MemoryBudget:
        """The memory budget every RocksDB database of this process shares (one per process,
        by design: see :mod:`~sparktide.runtime.state.rocksdb_memory`)."""
        from sparktide.runtime.state.rocksdb_memory import PROCESS_BUDGET

        return PROCESS_BUDGET

    def clear_warm(self) -> None:
        """Forget the states kept warm (the next batches read the checkpoint) and reset the
        counters."""
        self.warm.clear()
        self.stats.reset()

    def close_databases(self, delete_copies: bool = False) -> None:
        """Close the databases this worker holds (the next batch of their subtasks reopens the
        local copies: ``REUSED_ON_DISK``); ``delete_copies``: delete the local copies too (as
        if the next batch ran on another machine: ``RESTORED``), every process's (never a live
        working directory).

        >>> WorkerResources().close_databases()
        """
        self.databases.close_all()
        if delete_copies:
            for root, dirs, _ in os.walk(self.databases.base):
                for name in [d for d in dirs if d[:1] == "v" and d[1:].isdigit()]:
                    shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                    dirs.remove(name)

    def __reduce__(self) -> tuple[object, tuple[()]]:
        # never shipped: a job unpickled in a worker uses that worker's registry
        return (process_resources, ())


_PROCESS: Final = WorkerResources()


def process_resources() -> WorkerResources:
    """The :class:`WorkerResources` of this process (the same object for the process's
    lifetime)."""
    return _PROCESS
