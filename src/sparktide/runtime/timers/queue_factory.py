"""Where timer services get their queues (Flink's ``PriorityQueueSetFactory``).

A keyed state backend decides where its timers live: the heap backend keeps them in
:class:`~sparktide.runtime.timers.queue.KeyGroupedTimerQueue`\\ s on the Python heap, the
RocksDB backend in :class:`~sparktide.runtime.timers.rocksdb_queue.RocksDBTimerQueue`\\ s. A
:class:`TimerQueueFactory` makes the two queues (event time, processing time) of every timer
service of one operator subtask; :class:`TimerQueue` is what a service needs of a queue, the
interface both queues share (same entries, same firing order).

:class:`RocksDBTimerQueueFactory` opens one store per subtask in its directory and gives each
queue a pair of column families in it (timers, index): one set of background threads, block
cache and write buffers per subtask instead of one per queue. Disposing of the factory closes
its queues and the store and deletes the directory.

With ``db=`` (a database its owner opened and keeps, e.g. a streaming subtask's, holding its
keyed state too) the factory's queues live in that database and survive the factory: the
column families of each ``(service, domain)`` are recorded in the database, a queue created
again for them resumes the timers they hold, :meth:`RocksDBTimerQueueFactory.sync` writes what
every queue holds (before a checkpoint of the database), and disposing of the factory closes
the queues and leaves the database and its files alone.

>>> import tempfile
>>> from sparktide.core.timerservice import TimeDomain
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> factory = RocksDBTimerQueueFactory(tempfile.mkdtemp(), cache_size=4)
>>> q = factory.create_timer_queue("user-timers", TimeDomain.EVENT_TIME, KeyGroupRange(0, 127))
>>> q.add(20, "a", None, 5), q.add(10, "b", None, 7)
(True, True)
>>> q.poll()[:3], len(q)
((10, 1, 'b'), 1)
>>> factory.dispose()
>>> type(HeapTimerQueueFactory().create_timer_queue(
...     "user-timers", TimeDomain.EVENT_TIME, KeyGroupRange(0, 127))).__name__
'KeyGroupedTimerQueue'
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from sparktide.core.timerservice import TimeDomain
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_key_slot import KeyPrefixSlot
from sparktide.runtime.state.rocksdb_layout import key_codec, key_layout
from sparktide.runtime.timers.queue import AssignedKey, K, KeyGroupedTimerQueue, N, TimerEntry
from sparktide.runtime.timers.rocksdb_queue import (
    DEFAULT_CACHE_SIZE,
    RocksDBTimerQueue,
    open_store,
)

if TYPE_CHECKING:
    from rocksdict import Rdict

    from sparktide.common.typeinfo_base import TypeInformation

__all__ = [
    "HeapTimerQueueFactory",
    "RocksDBTimerQueueFactory",
    "TimerQueue",
    "TimerQueueFactory",
    "recorded_timer_services",
]

K2 = TypeVar("K2")
N2 = TypeVar("N2")

_DOMAIN_NAMES: Mapping[TimeDomain, str] = MappingProxyType(
    {TimeDomain.EVENT_TIME: "event", TimeDomain.PROCESSING_TIME: "processing"}
)


class TimerQueue(Protocol[K, N]):
    """A set of timers ``(timestamp, key, namespace)`` ordered by ``(timestamp, insertion
    order)`` and deduplicated per key group: what a timer service needs of its queues.

    Entries are ``(timestamp, seq, key, namespace, key_group)``
    (:data:`~sparktide.runtime.timers.queue.TimerEntry`).
    """

    def add(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Add a timer; True if it became the head. An equal timer present: no-op, False."""
        ...

    def remove(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Remove a timer if present; True if it was the head."""
        ...

    def poll(self) -> TimerEntry[K, N] | None:
        """Remove and return the head entry, None when empty."""
        ...

    def poll_until(self, timestamp: int) -> TimerEntry[K, N] | None:
        """Remove and return the head if its timestamp is ``<= timestamp``, else None."""
        ...

    def peek(self) -> TimerEntry[K, N] | None:
        """The head entry without removing it, None when empty."""
        ...

    def fire_until(
        self,
        timestamp: int,
        set_key: Callable[[K, int], object],
        fire: Callable[[int, K, N], object],
        assign: AssignedKey | None = None,
        hooks: Sized = (),
    ) -> int:
        """Remove every timer ``<= timestamp`` in firing order, calling ``set_key(key,
        key_group)`` then ``fire(timestamp, key, namespace)`` for each (a timer ``fire`` adds
        that is due fires too); how many fired. Flink's ``advanceWatermark`` loop over
        ``peek``/``poll``, run by the queue so that it may keep its own layout in locals.
        ``assign``, ``hooks``: a queue may set the key by assigning ``assign``'s attributes
        while ``hooks`` is empty (:class:`~sparktide.runtime.timers.queue.AssignedKey`)."""
        ...

    def clear(self) -> None: ...

    def contains(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool: ...

    def __len__(self) -> int: ...

    def __bool__(self) -> bool: ...

    def __iter__(self) -> Iterator[TimerEntry[K, N]]: ...

    def key_group_range(self) -> KeyGroupRange: ...

    def entries_for_key_group(self, key_group: int) -> list[TimerEntry[K, N]]:
        """The entries of ``key_group`` in ``(timestamp, seq)`` order (snapshot order)."""
        ...

    def timers_for_namespace(self, key: K, namespace: object, key_group: int) -> list[int]:
        """Timestamps of the timers of ``(key, namespace)``, ascending."""
        ...

    def key_timers(self, key: K, key_group: int) -> list[TimerEntry[K, N]]:
        """The entries of ``key`` (to put back with :meth:`reset_key_timers`)."""
        ...

    def reset_key_timers(self, key: K, key_group: int, saved: Iterable[TimerEntry[K, N]]) -> None:
        """Make the timers of ``key`` exactly ``saved``, with their sequence numbers."""
        ...

    def add_restored(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add the timers of a snapshot."""
        ...


class TimerQueueFactory(Protocol):
    """Makes the timer queues of one operator subtask and owns them until :meth:`dispose`."""

    def create_timer_queue(
        self, service_name: str, domain: TimeDomain, key_group_range: KeyGroupRange
    ) -> TimerQueue[K2, N2]:
        """A new, empty queue for the ``domain`` timers of service ``service_name``."""
        ...

    def dispose(self) -> None:
        """Release the queues and whatever holds them (files, stores). Idempotent."""
        ...


def _check_request(service_name: object, domain: object, key_group_range: object) -> None:
    if not isinstance(service_name, str) or not service_name:
        raise ValueError(f"service_name must be a non-empty str, got {service_name!r}")
    if not isinstance(domain, TimeDomain):
        raise TypeError(
            f"domain must be a TimeDomain (TimeDomain.EVENT_TIME or TimeDomain.PROCESSING_TIME), "
            f"got {domain!r}"
        )
    if not isinstance(key_group_range, KeyGroupRange):
        raise TypeError(
            f"key_group_range must be a KeyGroupRange, got {type(key_group_range).__name__}"
        )


class HeapTimerQueueFactory:
    """Timer queues on the Python heap (:class:`KeyGroupedTimerQueue`): the default."""

    __slots__ = ()

    def create_timer_queue(
        self, service_name: str, domain: TimeDomain, key_group_range: KeyGroupRange
    ) -> KeyGroupedTimerQueue[K2, N2]:
        _check_request(service_name, domain, key_group_range)
        return KeyGroupedTimerQueue(key_group_range)

    def dispose(self) -> None:
        """Nothing to release: the queues are garbage-collected."""

    def __repr__(self) -> str:
        return "HeapTimerQueueFactory()"


class RocksDBTimerQueueFactory:
    """Timer queues in one RocksDB store in ``directory`` (created, wiped if it exists).

    ``cache_size``: timers per key group each queue keeps in memory. ``key_type``: the type
    information of the keys (``Types.LONG()``, ...), None for undeclared keys (see
    :func:`~sparktide.runtime.state.rocksdb_layout.key_codec`). ``slot``: the key slot of the
    subtask's state backend (:class:`~sparktide.runtime.state.rocksdb_key_slot.KeyPrefixSlot`,
    of the same key type), so that a key is encoded once for state and timers.
    """

    __slots__ = (
        "_cache_size",
        "_closed",
        "_db",
        "_directory",
        "_keys",
        "_owns_db",
        "_queues",
        "_recorded",
        "_slot",
    )

    def __init__(
        self,
        directory: str | os.PathLike[str] | None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        key_type: TypeInformation | None = None,
        *,
        db: Rdict | None = None,
        slot: KeyPrefixSlot | None = None,
    ) -> None:
        self._owns_db = db is None
        self._recorded: dict[tuple[str, str], tuple[str, str]] = {}
        if db is not None:
            if directory is not None:
                raise ValueError(
                    "give either directory (the factory opens a store there) or db (an open "
                    "database its owner keeps), not both"
                )
            directory = db.path()
            self._recorded = _read_queues(db)
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(
                f"directory must be a path (str or os.PathLike), got {type(directory).__name__}"
            )
        if type(cache_size) is not int or cache_size < 1:
            raise ValueError(
                f"cache_size must be an int >= 1 (timers per key group kept in memory), got "
                f"{cache_size!r}"
            )
        self._directory = Path(directory)
        self._cache_size = cache_size
        self._keys = key_codec(key_type)
        if slot is not None:
            slot.check_layout(key_layout(key_type))
        self._slot = slot
        self._queues: dict[tuple[str, TimeDomain], RocksDBTimerQueue[object, object]] = {}
        self._db: Rdict | None = db
        self._closed = False

    @property
    def directory(self) -> Path:
        return self._directory

    def _store(self) -> Rdict:
        """The subtask's store, opened on first use (a fresh working copy)."""
        if self._db is None:
            self._db = open_store(self._directory)
        return self._db

    def create_timer_queue(
        self, service_name: str, domain: TimeDomain, key_group_range: KeyGroupRange
    ) -> RocksDBTimerQueue[K2, N2]:
        _check_request(service_name, domain, key_group_range)
        if self._closed:
            raise RuntimeError(
                f"{self!r} is closed: its queues and store are gone; timer services of a new "
                "subtask need a new factory"
            )
        slot = (service_name, domain)
        if slot in self._queues:
            raise ValueError(
                f"a {_DOMAIN_NAMES[domain]}-time queue for service {service_name!r} already "
                "exists in this factory; each service creates its two queues once"
            )
        recorded = self._recorded.get((service_name, _DOMAIN_NAMES[domain]))
        if recorded is not None:
            families = recorded
        else:
            n = len(self._queues) if self._owns_db else len(self._recorded)
            base = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', service_name)}-{n}"
            base += f"/{_DOMAIN_NAMES[domain]}"
            families = (f"{base}/timers", f"{base}/timer-index")
        queue: RocksDBTimerQueue[K2, N2] = RocksDBTimerQueue(
            key_group_range,
            cache_size=self._cache_size,
            keys=self._keys,
            db=self._store(),
            column_families=families,
            resume=recorded is not None,
            slot=self._slot,
        )
        if not self._owns_db and recorded is None:
            self._recorded[(service_name, _DOMAIN_NAMES[domain])] = families
            _write_queues(self._store(), self._recorded)
        self._queues[slot] = cast("RocksDBTimerQueue[object, object]", queue)
        return queue

    def sync(self) -> None:
        """Write what every queue holds into the store, with what resuming them needs
        (:meth:`RocksDBTimerQueue.sync`): before a checkpoint of the store."""
        for queue in self._queues.values():
            queue.sync()

    def close(self) -> None:
        """Close the queues and the store (the files stay; a store the factory was given stays
        open). Idempotent."""
        self._closed = True
        for queue in self._queues.values():
            queue.close()
        self._queues.clear()
        if self._db is not None:
            db, self._db = self._db, None
            if self._owns_db:
                db.close()

    def dispose(self) -> None:
        """Close the queues and the store and delete the directory (a store the factory was
        given: only the queues are closed). Idempotent."""
        self.close()
        if self._owns_db:
            shutil.rmtree(self._directory, ignore_errors=True)

    def __repr__(self) -> str:
        return f"RocksDBTimerQueueFactory({str(self._directory)!r}, cache_size={self._cache_size})"


_QUEUES_KEY = b"timer-queues"
"""The default column family's key of the column families of every queue a database holds."""


def _read_queues(db: Rdict) -> dict[tuple[str, str], tuple[str, str]]:
    """The column families ``(timers, index)`` of each ``(service, domain)`` recorded in
    ``db`` (none: an empty dict)."""
    raw = db.get(_QUEUES_KEY)
    if not isinstance(raw, bytes):
        return {}
    try:
        rows = json.loads(raw)
        return {(str(s), str(d)): (str(t), str(i)) for s, d, t, i in rows}
    except (ValueError, TypeError) as exc:
        raise RuntimeError(
            f"the timer queues recorded in the database {db.path()!r} are unreadable ({exc}); "
            "the database is corrupt: restore it from a checkpoint"
        ) from None


def _write_queues(db: Rdict, queues: dict[tuple[str, str], tuple[str, str]]) -> None:
    rows = [[s, d, t, i] for (s, d), (t, i) in sorted(queues.items())]
    db.put(_QUEUES_KEY, json.dumps(rows).encode())


def recorded_timer_services(db: Rdict) -> dict[str, dict[str, tuple[str, str]]]:
    """Per timer service recorded in ``db`` (by a factory given it), per domain (``"event"``,
    ``"processing"``) its column families ``(timers, index)``.

    >>> import tempfile
    >>> from rocksdict import Options, Rdict
    >>> db = Rdict(tempfile.mkdtemp(), Options(raw_mode=True))
    >>> factory = RocksDBTimerQueueFactory(None, db=db)
    >>> _ = factory.create_timer_queue("t", TimeDomain.EVENT_TIME, KeyGroupRange(0, 127))
    >>> factory.dispose(); recorded_timer_services(db)
    {'t': {'event': ('t-0/event/timers', 't-0/event/timer-index')}}
    >>> db.close()
    """
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for (service, domain), families in sorted(_read_queues(db).items()):
        out.setdefault(service, {})[domain] = families
    return out
