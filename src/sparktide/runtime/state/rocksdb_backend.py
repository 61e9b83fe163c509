"""``RocksDBKeyedStateBackend``: the keyed state of one operator subtask in an embedded RocksDB.

The same interface and semantics as :class:`~sparktide.runtime.state.HeapKeyedStateBackend`
(current key, state objects of every kind with and without TTL, inspection, snapshot and
restore in the same backend-neutral form), with the entries in a RocksDB database in
``directory``: one column family per state, store keys ``key group | key | namespace``
(:mod:`~sparktide.runtime.state.rocksdb_entries`), so a key-group range is one contiguous range.

Differences from the heap backend: values are copies, as in Flink's RocksDB backend (a value
changed in place and not written back stays unchanged in the store); values must fit their
declared types and be picklable where undeclared, map keys and namespaces must be values a key
may be (or windows); ``get_keys`` and snapshots list a key group's entries in the byte order of
their store keys (the heap: insertion order; lists and maps keep insertion order on both); keys
and namespaces come back from the store in canonical form (``1.0`` and ``True`` as ``1``).

>>> import tempfile
>>> from sparktide.core.state import ValueStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state import HeapKeyedStateBackend
>>> b = RocksDBKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
...     time_provider=lambda: 0, directory=tempfile.mkdtemp())
>>> count = b.get_partitioned_state(ValueStateDescriptor("count", None))
>>> b.set_current_key("user-1"); count.update(3)
>>> meta, per_key_group = b.snapshot_state()
>>> heap = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> heap.restore_state(meta, per_key_group)
>>> heap.snapshot_state() == (meta, per_key_group)
True
>>> b.dispose()
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from pathlib import Path
from typing import Any, cast

from rocksdict import Options, Rdict, WriteOptions

from sparktide.common.typeinfo_json import type_from_versioned, versioned_type
from sparktide.core.state import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
)
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state.backend import (
    NO_KEY_GROUP,
    KeyEntries,
    StateEntry,
    StateMeta,
    StateSnapshot,
)
from sparktide.runtime.state.backend_base import DEFAULT_OPERATOR, KeyedStateBackendBase
from sparktide.runtime.state.backend_checks import (
    check_backend_args,
    check_registration,
    disposed,
    key_group_out_of_range,
    key_out_of_range,
    kind_of,
    ttl_enabled,
    unhashable_key,
)
from sparktide.runtime.state.cleanup import purge_expired
from sparktide.runtime.state.folding import EntryKey
from sparktide.runtime.state.heap import InternalKvState, check_raw
from sparktide.runtime.state.rocksdb_entries import NAMESPACES, EntryCodec, successor
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_key_slot import KeyPrefixSlot
from sparktide.runtime.state.rocksdb_layout import Codec, key_codec, key_group_bounds, key_layout
from sparktide.runtime.state.rocksdb_memory import db_options, state_options
from sparktide.runtime.state.rocksdb_raw import CF_PREFIX, RawStore, StoredState, codec_for
from sparktide.runtime.state.rocksdb_states import (
    PLAIN,
    RocksDBAggregatingState,
    RocksDBReducingState,
)
from sparktide.runtime.state.snapshot_checks import (
    check_entry,
    check_meta,
    duplicate_entry,
    entry_groups,
    full_snapshot_ttls,
    recorded_types,
    state_meta,
)
from sparktide.runtime.state.state_types import StateTypes, check_key_type, declared_or_none
from sparktide.runtime.state.type_compat import Convert

__all__ = ["RocksDBKeyedStateBackend", "StoredState"]

_KEY_CACHE_SIZE = 1 << 14
"""Keys whose key group and prefix a backend remembers (equal keys of different records; the
same key object in a row hits :class:`KeyPrefixSlot` first). Bounded small: with many more
distinct keys it cannot hit and would only cost a lookup, an insertion and its memory."""
_META_BACKEND = b"backend"
_META_STATE = b"state:"
_META_SEQ = b"seq"
_SEQ_BLOCK = 1 << 20
"""Sequence numbers (the order of list elements and map entries) are reserved in blocks: the
database records the end of the block in use, so a backend attached to it later starts past
every number given."""
_NO_PREFIX = cast(bytes, None)
"""``key_prefix`` while no key is current: ``None`` at run time, so a state that appends its
namespace raises TypeError and turns that into the clear "no current key" error."""
_HOOKED: tuple[bool, ...] = (True,)  # key_hooks(): never empty (an immutable constant)


def _open_error(directory: Path, exc: Exception) -> RuntimeError:
    text = str(exc)
    if "lock" in text.lower():
        return RuntimeError(
            f"the RocksDB state directory {str(directory)!r} is in use (locked by another "
            "backend or process); give every backend its own directory, or dispose the other "
            "backend first"
        )
    return RuntimeError(
        f"cannot open a RocksDB database in {str(directory)!r}: {text}; pass a writable "
        "directory on a local disk"
    )


class RocksDBKeyedStateBackend(KeyedStateBackendBase[StoredState]):
    """The keyed state of one operator subtask in RocksDB, for the key groups in
    ``key_group_range``; the database lives in ``directory`` (created if missing; it must be
    empty) until :meth:`dispose` deletes it.

    ``key_type``: the declared type information of the keys (``Types.LONG()``, ...) or None
    (keys are then ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes`` or tuples of
    these). See :class:`~sparktide.runtime.state.HeapKeyedStateBackend` for the rest.

    >>> import tempfile
    >>> b = RocksDBKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 63),
    ...     time_provider=lambda: 0, directory=tempfile.mkdtemp())
    >>> b.set_current_key("b")
    >>> b.current_key, b.current_key_group
    ('b', 22)
    >>> b.dispose()
    """

    __slots__ = (
        "_db",
        "_directory",
        "_disposed",
        "_end",
        "_key_cache",
        "_key_codec",
        "_key_layout",
        "_key_listeners",
        "_key_type",
        "_max_parallelism",
        "_operator",
        "_owns_db",
        "_range",
        "_raw",
        "_seq",
        "_seq_mark",
        "_start",
        "_states",
        "_time",
        "_void_states",
        "_write_options",
        "current_key",
        "current_key_group",
        "key_prefix",
        "key_slot",
    )

    def __init__(
        self,
        *,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        time_provider: Callable[[], int],
        directory: str | os.PathLike[str],
        key_type: Any = None,
        operator: str = DEFAULT_OPERATOR,
    ) -> None:
        check_backend_args(max_parallelism, key_group_range, time_provider)
        self._operator = operator
        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError(
                f"directory must be a path (str or os.PathLike) for the RocksDB files, got "
                f"{type(directory).__name__} ({directory!r})"
            )
        self._set_key_type(key_type)
        self._max_parallelism = max_parallelism
        self._range = key_group_range
        self._start = key_group_range.start
        self._end = key_group_range.end
        self._time = time_provider
        self._directory = Path(directory)
        self._db = self._open(self._directory)
        self._owns_db = True
        self._setup()

    @classmethod
    def attach(
        cls,
        db: Rdict,
        *,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        time_provider: Callable[[], int],
        key_type: Any = None,
        operator: str = DEFAULT_OPERATOR,
    ) -> RocksDBKeyedStateBackend:
        """A backend on ``db``, a raw-mode database opened by its owner (e.g. a worker-local
        database that survives micro-batches): the states a backend stored in it before are
        there again, kept as stored until their descriptors register. :meth:`dispose` leaves
        closing and deleting the database to the owner.

        >>> import tempfile
        >>> from rocksdict import Options, Rdict
        >>> from sparktide.core.state import ValueStateDescriptor
        >>> path = tempfile.mkdtemp()
        >>> kw = dict(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
        ...           time_provider=lambda: 0)
        >>> db = Rdict(path, Options(raw_mode=True))
        >>> b = RocksDBKeyedStateBackend.attach(db, **kw)
        >>> v = ValueStateDescriptor("v", None)
        >>> b.set_current_key("k"); b.get_partitioned_state(v).update(1)
        >>> b.dispose(); db.close()
        >>> db = Rdict(path)  # reopened with every column family
        >>> b = RocksDBKeyedStateBackend.attach(db, **kw)
        >>> b.set_current_key("k"); b.get_partitioned_state(v).value()
        1
        >>> b.dispose(); db.close(); shutil.rmtree(path)
        """
        check_backend_args(max_parallelism, key_group_range, time_provider)
        self = cls.__new__(cls)
        self._operator = operator
        self._set_key_type(key_type)
        self._max_parallelism = max_parallelism
        self._range = key_group_range
        self._start = key_group_range.start
        self._end = key_group_range.end
        self._time = time_provider
        self._directory = Path(db.path())
        self._db = db
        self._owns_db = False
        self._setup()
        return self

    def _set_key_type(self, key_type: object) -> None:
        try:
            self._key_codec: Codec = key_codec(key_type)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(
                f"key_type must be type information (e.g. Types.LONG(), as given to "
                f"key_by(..., key_type=...)) or None, got {type(key_type).__name__} "
                f"({key_type!r})"
            ) from None
        self._key_type = key_type
        self._key_layout = key_layout(key_type)  # type: ignore[arg-type]
        self.key_slot = KeyPrefixSlot(self._key_layout)

    def _setup(self) -> None:
        self._write_options = WriteOptions()
        # snapshots, not the log, make state durable (the stub declares a method; it is a
        # property)
        self._write_options.disable_wal = True  # type: ignore[method-assign,assignment]
        self._raw = RawStore(
            self._db, self._key_codec, self._range, self._write_options, self.next_seq
        )
        self._states: dict[str, StoredState] = {}
        self._void_states: dict[str, InternalKvState] = {}
        self._key_listeners: list[Callable[[], None]] = []
        self._key_cache: dict[object, tuple[int, bytes]] = {}
        self._seq = 0
        self._seq_mark = 0
        self._disposed = False
        self.current_key: object = None
        self.current_key_group: int = NO_KEY_GROUP
        self.key_prefix: bytes = _NO_PREFIX
        self._load_meta()

    def _load_meta(self) -> None:
        """Read what a backend stored in this database before: its max parallelism, its states
        and the sequence numbers it gave."""
        db = self._db
        stored = db.get(_META_BACKEND)
        if stored is None:
            info = {
                "max_parallelism": self._max_parallelism,
                "key_layout": self._key_layout,
                "key_type": versioned_type(declared_or_none(self._key_type)),
            }
            db.put(_META_BACKEND, json.dumps(info).encode())
        else:
            found = json.loads(stored)
            if "key_type" in found:  # recorded since key types are checked on restore
                where = f"the database in {str(self._directory)!r}"
                recorded = type_from_versioned(found["key_type"], where)
                check_key_type(self._operator, recorded, declared_or_none(self._key_type))
            maxp = found["max_parallelism"]
            if maxp != self._max_parallelism:
                raise ValueError(
                    f"the database in {str(self._directory)!r} holds state of max_parallelism="
                    f"{maxp}, not {self._max_parallelism}; key groups cannot change: restore "
                    "from a snapshot (restore_state) instead"
                )
            # databases written before keys were serialized by type: the canonical layout
            layout = found.get("key_layout", "canonical")
            if layout != self._key_layout:
                raise ValueError(
                    f"the database in {str(self._directory)!r} holds keys serialized as "
                    f"{layout!r}, not as {self._key_layout!r} (key_by(..., key_type=...)): its "
                    "store keys cannot be read with another key type; keep the job's key type, "
                    "or restore from a snapshot (restore_state) instead"
                )
        mark = db.get(_META_SEQ)
        if mark is not None:
            self._seq = self._seq_mark = int.from_bytes(mark, "big")
        it = db.iter()
        it.seek(_META_STATE)
        while it.valid():
            k: bytes = it.key()
            if not k.startswith(_META_STATE):
                break
            info = json.loads(it.value())
            name = k[len(_META_STATE) :].decode()
            cf = db.get_column_family(CF_PREFIX + name)
            cf.set_write_options(self._write_options)
            self._states[name] = self._stored_state(name, info, cf)
            it.next()
        check_scan(it)

    def _stored_state(self, name: str, info: dict[str, Any], cf: Rdict) -> StoredState:
        """A state the database records (:meth:`_store_meta`'s ``info``)."""
        kind, ttl = info["kind"], info["ttl"]
        where = f"state {name!r} in the database in {str(self._directory)!r}"
        if "codec" in info:
            encoded = StateTypes.from_json(info["codec"], where)
            value_type, map_key_type = encoded.value, encoded.map_key
        else:  # recorded before the types were plain data
            value_type, map_key_type = pickle.loads(base64.b64decode(info["types"]))
        state = StoredState(name, kind, ttl, cf, EntryCodec(kind, ttl, value_type, map_key_type))
        declared = info.get("declared")
        state.types = None if declared is None else StateTypes.from_json(declared, where)
        return state

    def _store_meta(self, state: StoredState) -> None:
        """Record ``state`` in the database as plain JSON: its kind, TTL setting, the types
        its values are encoded with (``codec``) and the types its descriptor declared
        (``declared``; ``None``: not known)."""
        codec = StateTypes(*state.codec.types).to_json()
        declared = None if state.types is None else state.types.to_json()
        info = {"kind": state.kind, "ttl": state.ttl, "codec": codec, "declared": declared}
        self._db.put(_META_STATE + state.name.encode(), json.dumps(info).encode())

    @staticmethod
    def _open(directory: Path) -> Rdict:
        if directory.exists():
            if not directory.is_dir():
                raise ValueError(
                    f"directory {str(directory)!r} is a file; pass a directory for the RocksDB "
                    "files (it is created if missing)"
                )
            if any(directory.iterdir()):
                if (directory / "LOCK").exists():
                    try:
                        Rdict(str(directory), Options(raw_mode=True)).close()
                    except Exception as exc:
                        raise _open_error(directory, exc) from None
                raise ValueError(
                    f"directory {str(directory)!r} is not empty; the RocksDB backend starts from "
                    "an empty directory (restore state with restore_state): pass a new one or "
                    "delete its contents"
                )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RuntimeError(
                f"cannot create the RocksDB state directory {str(directory)!r}: {exc}; pass a "
                "writable directory"
            ) from None
        if not os.access(directory, os.W_OK | os.X_OK):
            raise RuntimeError(
                f"the RocksDB state directory {str(directory)!r} is not writable; pass a "
                "writable directory"
            )
        try:
            return Rdict(str(directory), db_options())
        except Exception as exc:
            raise _open_error(directory, exc) from None

    # ------------------------------------------------------------------ properties

    @property
    def directory(self) -> Path:
        """Where the database lives."""
        return self._directory

    # ------------------------------------------------------------------ current key

    def _key_info(self, key: object) -> tuple[int, bytes]:
        slot = self.key_slot
        if key is slot.key:
            return slot.key_group, slot.prefix
        cache = self._key_cache
        try:
            info = cache[key]
        except KeyError:
            kg = assign_to_key_group(key, self._max_parallelism)
            info = (kg, kg.to_bytes(2, "big") + self._key_bytes(key))
            if len(cache) >= _KEY_CACHE_SIZE:
                cache.clear()
            cache[key] = info
        except TypeError:
            assign_to_key_group(key, self._max_parallelism)  # the canonical unsupported-type error
            raise unhashable_key(key) from None
        slot.key, (slot.key_group, slot.prefix) = key, info
        return info

    def _key_bytes(self, key: object) -> bytes:
        """The key bytes of ``key``; an error naming the declared key type it does not fit."""
        try:
            return self._key_codec.key_bytes(key)
        except (TypeError, ValueError, OverflowError) as exc:
            if self._key_type is None:
                raise
            raise TypeError(
                f"key {key!r} does not fit the declared key type {self._key_type!r} "
                f"(key_by(..., key_type=...)): {exc}; declare the type the key selector "
                "returns, or leave key_type out"
            ) from None

    def set_current_key(self, key: object) -> None:
        """Make ``key`` the current key (computes its key group and store-key prefix; TypeError
        for unsupported key types, ValueError when the key group is not in this backend's
        range)."""
        kg, prefix = self._key_info(key)
        if not self._start <= kg <= self._end:
            self._check_open()
            raise key_out_of_range(key, kg, self._start, self._end)
        self.current_key = key
        self.current_key_group = kg
        self.key_prefix = prefix
        if self._key_listeners:
            for listener in self._key_listeners:
                listener()

    def key_hooks(self) -> Sized:
        """Never empty: setting the key also sets the key's prefix (see
        :meth:`~sparktide.runtime.state.keyed_backend.KeyedStateBackend.key_hooks`)."""
        return _HOOKED

    def set_current_key_and_group(self, key: object, key_group: int) -> None:
        """Like :meth:`set_current_key` for a key whose key group is known (timers)."""
        if not self._start <= key_group <= self._end:
            self._check_open()
            raise key_group_out_of_range(key, key_group, self._start, self._end)
        slot = self.key_slot
        if key is slot.key and key_group == slot.key_group:  # e.g. the key of a timer that fired
            prefix = slot.prefix
        else:
            cache = self._key_cache
            cached = cache.get(key)
            if cached is not None and cached[0] == key_group:
                prefix = cached[1]
            else:
                prefix = key_group.to_bytes(2, "big") + self._key_bytes(key)
                if cached is None:  # remembered as set_current_key does (records come this way)
                    if len(cache) >= _KEY_CACHE_SIZE:
                        cache.clear()
                    cache[key] = (key_group, prefix)
            slot.key = key
            slot.key_group = key_group
            slot.prefix = prefix
        self.current_key = key
        self.current_key_group = key_group
        self.key_prefix = prefix
        if self._key_listeners:
            for listener in self._key_listeners:
                listener()

    # ------------------------------------------------------------------ registration

    def _new_state(self, name: str, kind: str, ttl: bool) -> StoredState:
        cf_name = CF_PREFIX + name
        cf = self._db.create_column_family(cf_name, state_options())
        cf.set_write_options(self._write_options)
        state = StoredState(name, kind, ttl, cf, EntryCodec(kind, ttl, None, None))
        self._states[name] = state
        self._store_meta(state)
        return state

    def _register(self, descriptor: StateDescriptor) -> StoredState:
        self._check_open()
        kind = kind_of(descriptor)
        name = descriptor.name
        ttl = ttl_enabled(descriptor)
        cfg = descriptor.ttl_config if ttl else None
        state = self._states.get(name)
        if state is None:
            state = self._new_state(name, kind, ttl)
        else:
            check_registration(state, name, kind, ttl, cfg)
        if not state.registered:
            restored = state.types
            migrate = self._claim_types(state, descriptor)
            changed = restored != state.types
            codec = codec_for(kind, ttl, descriptor)
            if codec.same_bytes(state.codec) and migrate is None:
                state.codec = codec  # e.g. stored by a backend attached before
            else:
                self._recode(state, codec, migrate)
                changed = True
            if changed:
                self._store_meta(state)
            state.registered = True
            if cfg is not None:
                state.ttl_config = cfg
                self._attach_cleanup(state, cfg)
        return state

    def _attach_cleanup(self, state: StoredState, cfg: StateTtlConfig) -> None:
        from sparktide.runtime.state.rocksdb_ttl import attach_cleanup

        attach_cleanup(self, state, cfg)

    def next_seq(self) -> int:
        """A number greater than every one given before (orders list elements and map
        entries)."""
        self._seq += 1
        if self._seq >= self._seq_mark:
            self._seq_mark += _SEQ_BLOCK
            self._db.put(_META_SEQ, self._seq_mark.to_bytes(8, "big"))
        return self._seq

    def add_key_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every change of the current key (per-record TTL cleanup)."""
        self._key_listeners.append(listener)

    def _recode(self, state: StoredState, codec: EntryCodec, migrate: Convert | None) -> None:
        """Give ``state`` the codec of its descriptor, re-encoding the (pickled) values restored
        before it registered, each converted by ``migrate`` first where its declared type
        changed (state schema evolution: once, here; ``None``: values as they are)."""
        same = state.codec.same_bytes(codec)
        if (migrate is not None or not same) and self._raw.count(state, limit=1):
            entries = list(self._raw.entries(state))
            lo, hi = key_group_bounds(self._range)
            state.cf.delete_range(lo, hi)
            state.codec = codec
            if migrate is not None:
                entries = [(kg, k, ns, migrate(raw)) for kg, k, ns, raw in entries]
            self._raw.write(state, entries)
        state.codec = codec

    def _create(
        self, state: StoredState, descriptor: StateDescriptor, ns: object
    ) -> InternalKvState:
        cfg = state.ttl_config
        if cfg is not None:
            from sparktide.runtime.state.rocksdb_ttl import create_ttl_state

            return create_ttl_state(self, state, descriptor, ns, cfg)
        if isinstance(descriptor, ReducingStateDescriptor):
            return RocksDBReducingState(self, state, ns, descriptor.reduce)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return RocksDBAggregatingState(self, state, ns, descriptor.get_agg_function())
        return PLAIN[state.kind](self, state, ns)

    # ------------------------------------------------------------------ inspection

    def num_entries(self) -> int:
        """The number of (state, key, namespace) entries holding a value (TTL: including expired
        values not yet cleaned up). O(entries): it reads the store's keys; metrics of large
        states use :meth:`estimate_num_entries`."""
        return sum(self._raw.count(s) for s in self._states.values())

    def estimate_num_entries(self) -> int:
        """RocksDB's estimate of the stored entries of every state (a list counts its elements,
        a map its map keys), read without scanning: for metrics of large states."""
        return sum(
            s.cf.property_int_value("rocksdb.estimate-num-keys") or 0 for s in self._states.values()
        )

    def key_entries(self, key: object, key_group: int) -> KeyEntries:
        """Copies of every entry of ``key`` (all states, all namespaces), to roll back to with
        :meth:`reset_key_entries`. O(entries of the key)."""
        prefix = key_group.to_bytes(2, "big") + self._key_bytes(key)
        out: KeyEntries = {}
        for name, state in self._states.items():
            mine: dict[EntryKey, object] = {
                (key, ns): raw
                for _, _, ns, raw in self._raw.entries(state, prefix, successor(prefix))
            }
            if mine:
                out[name] = mine
        return out

    def reset_key_entries(self, key: object, key_group: int, saved: KeyEntries) -> None:
        """Make the entries of ``key`` exactly ``saved`` (from :meth:`key_entries`)."""
        prefix = key_group.to_bytes(2, "big") + self._key_bytes(key)
        for name, state in self._states.items():
            state.cf.delete_range(prefix, successor(prefix))
            old = saved.get(name)
            if old:
                self._raw.write(state, ((key_group, k, ns, raw) for (k, ns), raw in old.items()))

    def get_keys(self, state_name: str, namespace: object) -> Iterator[object]:
        """The keys with an entry of ``state_name`` in ``namespace`` (a snapshot: state may be
        changed while iterating), by key group then key bytes. Empty for an unknown state."""
        state = self._states.get(state_name)
        if state is None:
            return iter(())
        keys: list[object] = []
        last: bytes | None = None
        split = self._raw.split
        for sk in self._raw.store_keys(state):
            key, ns, end = split(sk)
            if ns == namespace and sk[:end] != last:
                keys.append(key)
                last = sk[:end]
        return iter(keys)

    def get_state_names(self) -> list[str]:
        """The names of the registered and restored states."""
        return list(self._states)

    def state_metas(self) -> dict[str, StateMeta]:
        """Per state, what a snapshot's ``meta`` records of it (its kind, TTL setting and
        declared types), without reading an entry."""
        return {name: state_meta(state) for name, state in self._states.items()}

    def stored_state(self, name: str) -> StoredState:
        """How the state ``name`` is stored: its column family, codec and settings (for
        inspecting the store, e.g. the size of its values or the options of its column
        family)."""
        state = self._states.get(name)
        if state is None:
            raise KeyError(
                f"no state named {name!r} in this backend; its states are "
                f"{sorted(self._states)} (get_state_names())"
            )
        return state

    def dispose(self) -> None:
        """Close the database and delete its directory (an attached database: leave both to
        its owner); the backend cannot be used afterwards."""
        if self._disposed:
            return
        for state in self._states.values():
            state.cf.close()  # state objects may outlive the backend: release the database
        self._states.clear()
        self._void_states.clear()
        self._key_listeners.clear()
        self._key_cache.clear()
        self.key_slot.forget()
        self.current_key = None
        self.current_key_group = NO_KEY_GROUP
        self.key_prefix = _NO_PREFIX
        self._start, self._end = 0, -1  # every key is out of range: set_current_key raises
        self._disposed = True
        if self._owns_db:
            self._db.close()
            shutil.rmtree(self._directory, ignore_errors=True)

    # ------------------------------------------------------------------ invariants

    def check_invariants(self) -> None:
        """Assert every invariant (for tests): every entry lies in this backend's key groups,
        in the key group of its key, its store key is the one its key and namespace give, and
        its raw value is valid (no empty list or map, no ``None``, TTL pairs)."""
        kc = self._key_codec
        for name, state in self._states.items():
            if state.name != name:
                raise AssertionError("invariant broken: state.name == name")
            every = self._raw.entries(state, b"\x00\x00", b"\xff\xff")
            for kg, key, ns, raw in every:
                if not self._start <= kg <= self._end:
                    raise AssertionError((name, kg))
                if assign_to_key_group(key, self._max_parallelism) != kg:
                    raise AssertionError((name, key, kg))
                base = kg.to_bytes(2, "big") + kc.key_bytes(key) + NAMESPACES.key_bytes(ns)
                if self._raw.split(base) != (key, ns, len(base)):
                    raise AssertionError((name, key, ns))
                if raw is None or check_raw(state.kind, state.ttl, raw, "raw") != raw:
                    raise AssertionError((name, key, raw))
        for name, obj in self._void_states.items():
            if not self._states[name].registered:
                raise AssertionError("invariant broken: self._states[name].registered")
            if obj.get_current_namespace() is not None:
                raise AssertionError("invariant broken: state.get_current_namespace() is None")

    # ------------------------------------------------------------------ snapshot / restore

    def snapshot_state(self) -> tuple[dict[str, StateMeta], StateSnapshot]:
        """Plain data, exactly the heap backend's form: ``(meta, per_key_group)``.

        ``meta[name] = {"kind": ..., "ttl": bool}``; ``per_key_group[kg][name]`` is a list of
        ``(key, namespace, raw_value)`` (key groups ascending, state names sorted, entries in
        store order). States with TTL and ``cleanup_full_snapshot`` leave out expired values.
        """
        if self._disposed:
            raise disposed("nothing to snapshot")
        names = sorted(self._states)
        meta = {n: state_meta(self._states[n]) for n in names}
        purge = full_snapshot_ttls(self._states, names)
        now = self._time() if purge else 0
        collected: dict[int, dict[str, list[StateEntry]]] = {}
        for n in names:
            state = self._states[n]
            ttl = purge.get(n)
            for kg, key, ns, raw in self._raw.entries(state):
                if ttl is not None:
                    raw = purge_expired(state.kind, raw, now, ttl)
                    if raw is None:
                        continue
                collected.setdefault(kg, {}).setdefault(n, []).append((key, ns, raw))
        return meta, {kg: collected[kg] for kg in sorted(collected)}

    def restore_state(
        self,
        meta: Mapping[str, Mapping[str, object]],
        per_key_group: Mapping[int, Mapping[str, Iterable[StateEntry]]],
        *,
        trusted: bool = False,
    ) -> None:
        """Add the entries of a snapshot (of either backend) for the key groups in this
        backend's range (others are ignored), so several snapshots can be restored into one
        backend when rescaling.

        Everything is validated first: on bad input a ValueError names the culprit and the
        backend is unchanged. States without a registered descriptor are kept (pickled) until
        one is registered (which must then match kind and TTL setting, and the declared types
        the snapshot records, else ``IncompatibleStateTypeError``). ``trusted``: the
        entries come from a snapshot of this process with the same max parallelism, so only
        ``meta`` is checked.
        """
        if self._disposed:
            raise disposed("create a new one")
        kinds = check_meta(meta, self._states)
        types = recorded_types(meta, self._states, self._operator)
        staged: dict[str, list[tuple[int, object, object, Any]]] = {n: [] for n in kinds}
        if trusted:
            for kg, by_name in per_key_group.items():
                if self._start <= kg <= self._end:
                    for name, trusted_entries in by_name.items():
                        staged[name].extend((kg, k, ns, raw) for k, ns, raw in trusted_entries)
        else:
            self._stage_checked(kinds, per_key_group, staged)
        # validated: apply
        for name, (kind, ttl) in kinds.items():
            state = self._states.get(name)
            if state is None:
                state = self._new_state(name, kind, ttl)
            if state.types is None and types[name] is not None:
                state.types = types[name]
                self._store_meta(state)
        for name, to_write in staged.items():
            if to_write:
                self._raw.write(self._states[name], to_write)
                cleanup = self._states[name].cleanup
                if cleanup is not None:
                    cleanup.reset()

    def _stage_checked(
        self,
        kinds: dict[str, tuple[str, bool]],
        per_key_group: object,
        staged: dict[str, list[tuple[int, object, object, Any]]],
    ) -> None:
        seen: set[tuple[str, bytes]] = set()
        max_p = self._max_parallelism
        for kg, name, where, kind, ttl, entries in entry_groups(
            per_key_group, kinds, max_p, self._start, self._end
        ):
            state = self._states.get(name)
            if state is not None and not self._raw.count(state, limit=1):
                state = None  # nothing stored yet: no entry to collide with
            for i, entry in enumerate(entries):
                at = f"{where}[{i}]"
                checked = check_entry(entry, at, kg, kind, ttl, max_p, self._locate)
                if checked is None:
                    continue
                key, ns, raw, base = checked
                exists = state is not None and self._raw.has_prefix(state, base)
                if (name, base) in seen or exists:
                    raise duplicate_entry(at, name, key, ns)
                seen.add((name, base))
                staged[name].append((kg, key, ns, raw))

    def _locate(self, key: object, ns: object) -> tuple[int, bytes]:
        kg, prefix = self._key_info(key)
        return kg, prefix + NAMESPACES.key_bytes(ns)
