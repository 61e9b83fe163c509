"""Stored states of the RocksDB backend and their entries as raw values.

:class:`StoredState` is one named state in the database (its column family, kind, TTL setting
and codec); :class:`RawStore` reads and writes its entries as the heap backend's raw values
(:mod:`~sparktide.runtime.state.heap`), for snapshots, restores, key rollbacks and re-encoding.

>>> import shutil, tempfile
>>> from rocksdict import Options, Rdict, WriteOptions
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.rocksdb_layout import key_codec
>>> path = tempfile.mkdtemp()
>>> db = Rdict(path, Options(raw_mode=True))
>>> cf = db.create_column_family(CF_PREFIX + "s", Options(raw_mode=True))
>>> state = StoredState("s", "list", False, cf, EntryCodec("list", False, None, None))
>>> seq = iter(range(1, 100))
>>> store = RawStore(db, key_codec(None), KeyGroupRange(0, 127), WriteOptions(), lambda: next(seq))
>>> store.write(state, [(5, "k", None, ["a", "b"])])
>>> list(store.entries(state)), store.count(state)
([(5, 'k', None, ['a', 'b'])], 1)
>>> cf.close(); db.close(); shutil.rmtree(path)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rocksdict import Rdict, WriteBatch, WriteOptions

from sparktide.core.state import MapStateDescriptor, StateDescriptor, StateTtlConfig
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.heap import describe_kind
from sparktide.runtime.state.rocksdb_entries import NAMESPACES, EntryCodec, successor
from sparktide.runtime.state.rocksdb_integrity import check_scan, verified_reads
from sparktide.runtime.state.rocksdb_layout import Codec, key_group_bounds

if TYPE_CHECKING:
    from sparktide.runtime.state.rocksdb_ttl import RocksDBIncrementalCleanup
    from sparktide.runtime.state.state_types import StateTypes

__all__ = ["CF_PREFIX", "RawStore", "StoredState", "codec_for"]

CF_PREFIX = "state:"
"""The column family of state ``name`` is ``CF_PREFIX + name``."""
_BATCH_ENTRIES = 4096


class StoredState:
    """One named state in the store: its column family, kind, TTL setting and codec.

    A state restored from a snapshot before its descriptor registers keeps its values pickled
    (``registered`` False); the registration re-encodes them with the descriptor's types. The
    database records each state's kind, TTL setting, the types its values are encoded with
    and the types its descriptor declared (``types``; a backend attached to it later reads
    them back, and checks them against the descriptor that registers).
    """

    __slots__ = (
        "cf",
        "cleanup",
        "codec",
        "kind",
        "name",
        "registered",
        "ttl",
        "ttl_config",
        "types",
    )

    def __init__(self, name: str, kind: str, ttl: bool, cf: Rdict, codec: EntryCodec) -> None:
        self.name = name
        self.kind = kind
        self.ttl = ttl
        self.cf = cf
        self.codec = codec
        self.registered = False
        self.ttl_config: StateTtlConfig | None = None
        self.cleanup: RocksDBIncrementalCleanup | None = None
        # the declared types: the descriptor's, or as a checkpoint recorded them (None: unknown)
        self.types: StateTypes | None = None

    def describe(self) -> str:
        return describe_kind(self.kind, self.ttl)


def codec_for(kind: str, ttl: bool, descriptor: StateDescriptor | None) -> EntryCodec:
    if descriptor is None:
        return EntryCodec(kind, ttl, None, None)
    if isinstance(descriptor, MapStateDescriptor):
        return EntryCodec(kind, ttl, descriptor.value_type_info, descriptor.key_type_info)
    return EntryCodec(kind, ttl, descriptor.type_info, None)


class RawStore:
    """Reads and writes the entries of stored states as raw values (the heap's format)."""

    __slots__ = ("_db", "_key_codec", "_range", "_write_options", "next_seq")

    def __init__(
        self,
        db: Rdict,
        key_codec: Codec,
        key_group_range: KeyGroupRange,
        write_options: WriteOptions,
        next_seq: Callable[[], int],
    ) -> None:
        self._db = db
        self._key_codec = key_codec
        self._range = key_group_range
        self._write_options = write_options
        self.next_seq = next_seq

    def split(self, store_key: bytes) -> tuple[object, object, int]:
        """``(key, namespace, end)`` of a store key (``end``: where a map key starts)."""
        key, pos = self._key_codec.decode_key_from(store_key, 2)
        ns, pos = NAMESPACES.decode_value_from(store_key, pos)
        return key, ns, pos

    def entries(
        self,
        state: StoredState,
        lo: bytes | None = None,
        hi: bytes | None = None,
    ) -> Iterator[tuple[int, object, object, Any]]:
        """``(key_group, key, namespace, raw_value)`` of the entries in ``[lo, hi)`` (default:
        this backend's key groups), in store order; raw values as the heap backend keeps them."""
        if lo is None or hi is None:
            lo, hi = key_group_bounds(self._range)
        codec = state.codec
        it = state.cf.iter()
        it.seek(lo)
        if codec.kind not in ("map", "list"):
            decode = codec.decode_single
            while it.valid():
                sk = it.key()
                if sk >= hi:
                    return
                key, ns, _ = self.split(sk)
                yield int.from_bytes(sk[:2], "big"), key, ns, decode(it.value())
                it.next()
            check_scan(it)
            return
        current: bytes | None = None
        group: list[bytes] = []
        head: tuple[int, object, object] = (0, None, None)
        while it.valid():
            sk = it.key()
            if sk >= hi:
                break
            if current is None or not sk.startswith(current):
                if current is not None:
                    yield (*head, self._group(codec, group))
                key, ns, end = self.split(sk)
                current = sk[:end]
                head = (int.from_bytes(sk[:2], "big"), key, ns)
                group = []
            group.append(it.value())
            it.next()
        else:
            check_scan(it)
        if current is not None:
            yield (*head, self._group(codec, group))

    def chunks(self, state: StoredState, size: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """The store keys and stored values of ``state`` in this store's key groups, in store
        order, ``size`` entries at a time (undecoded: for reading many entries at once)."""
        lo, hi = key_group_bounds(self._range)
        options = verified_reads()
        options.set_iterate_upper_bound(hi)
        it = state.cf.iter(options)
        it.seek(lo)
        valid, key, value, step = it.valid, it.key, it.value, it.next
        keys: list[bytes] = []
        values: list[bytes] = []
        while valid():
            keys.append(key())
            values.append(value())
            if len(keys) == size:
                yield keys, values
                keys, values = [], []
            step()
        check_scan(it)
        if keys:
            yield keys, values

    @staticmethod
    def _group(codec: EntryCodec, group: list[bytes]) -> object:
        """The raw value of a list (its elements' stored values) or a map (its entries')."""
        if codec.kind == "list":
            return [codec.decode_single(data) for data in group]
        return dict(codec.decode_map(group))

    def write(self, state: StoredState, entries: Iterable[tuple[int, object, object, Any]]) -> None:
        """Store raw values (the heap backend's format), replacing what is there."""
        codec = state.codec
        handle = self._db.get_column_family_handle(CF_PREFIX + state.name)
        batch = WriteBatch(raw_mode=True)
        batch.set_default_column_family(handle)
        kc = self._key_codec
        for kg, key, ns, raw in entries:
            base = kg.to_bytes(2, "big") + kc.key_bytes(key) + NAMESPACES.key_bytes(ns)
            if codec.kind == "map":
                batch.delete_range(base, successor(base))
                for mk, v in raw.items():
                    data = codec.encode_map_value(self.next_seq(), mk, v)
                    batch.put(base + codec.map_key_bytes(mk), data)
            elif codec.kind == "list":
                batch.delete_range(base, successor(base))
                for element in raw:
                    batch.put(
                        base + self.next_seq().to_bytes(8, "big"), codec.encode_element(element)
                    )
            else:
                batch.put(base, codec.encode_single(raw))
            if len(batch) >= _BATCH_ENTRIES:
                self._db.write(batch, self._write_options)
                batch = WriteBatch(raw_mode=True)
                batch.set_default_column_family(handle)
        if len(batch):
            self._db.write(batch, self._write_options)

    @staticmethod
    def has_prefix(state: StoredState, prefix: bytes) -> bool:
        it = state.cf.iter()
        it.seek(prefix)
        if not it.valid():
            check_scan(it)
            return False
        return bytes(it.key()).startswith(prefix)

    def store_keys(self, state: StoredState) -> Iterator[bytes]:
        """The store keys of ``state`` in this store's key groups, in byte order."""
        lo, hi = key_group_bounds(self._range)
        it = state.cf.iter()
        it.seek(lo)
        while it.valid():
            sk: bytes = it.key()
            if sk >= hi:
                return
            yield sk
            it.next()
        check_scan(it)

    def count(self, state: StoredState, limit: int | None = None) -> int:
        """The number of ``(key, namespace)`` entries of ``state`` (up to ``limit``), read from
        the store keys alone."""
        grouped = state.kind in ("list", "map")
        n = 0
        last = b""
        for sk in self.store_keys(state):
            if grouped:
                if last and sk.startswith(last):
                    continue
                last = sk[: self.split(sk)[2]]
            n += 1
            if limit is not None and n >= limit:
                break
        return n
