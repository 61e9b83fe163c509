"""The state objects of the RocksDB backend without TTL.

A state object reads ``backend.key_prefix`` (``key group | key``, computed once per
``set_current_key``), appends its namespace's bytes (computed once per
``set_current_namespace``) and does one store operation. Values are deserialized on every read:
a value read, changed in place and not written back is not changed in the store (copy
semantics, as in Flink's RocksDB backend; the heap backend shares the stored object instead).

>>> from sparktide.core.state import ListStateDescriptor
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
>>> import tempfile
>>> b = RocksDBKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
...     time_provider=lambda: 0, directory=tempfile.mkdtemp())
>>> events = b.get_partitioned_state(ListStateDescriptor("events", None))
>>> b.set_current_key("k"); events.add("a"); events.add_all(["b", "c"]); events.get()
['a', 'b', 'c']
>>> b.dispose()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from rocksdict import Rdict

from sparktide.core.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from sparktide.runtime.state.folding import (
    AggregateLike,
    Reducer,
    accumulate,
    checked_reduce,
    merge_accumulators,
)
from sparktide.runtime.state.heap import (
    InternalKvState,
    check_mapping,
    check_not_none,
    list_values,
)
from sparktide.runtime.state.rocksdb_entries import NAMESPACES, EntryCodec, successor
from sparktide.runtime.state.rocksdb_integrity import check_scan

if TYPE_CHECKING:
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend, StoredState

__all__ = [
    "RocksDBAggregatingState",
    "RocksDBKvState",
    "RocksDBListState",
    "RocksDBMapState",
    "RocksDBReducingState",
    "RocksDBValueState",
    "scan_prefix",
]


def scan_prefix(cf: Rdict, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The ``(store_key, value)`` entries of ``cf`` whose keys start with ``prefix``, in byte
    order."""
    it = cf.iter()
    it.seek(prefix)
    while it.valid():
        key = it.key()
        if not key.startswith(prefix):
            return
        yield key, it.value()
        it.next()
    check_scan(it)


_UNSET = object()
_UNUSABLE = cast(bytes, None)
"""The namespace bytes of a namespace without a layout: appending them raises TypeError, which
the state's ``_fail`` turns into the namespace's own error."""


class RocksDBKvState(InternalKvState):
    """Base of the RocksDB state objects: bound to a backend, a stored state (its column family
    and codec) and a current namespace."""

    __slots__ = (
        "_backend",
        "_cf",
        "_codec",
        "_delete",
        "_get",
        "_ns",
        "_ns_bytes",
        "_put",
        "_state",
    )

    def __init__(
        self, backend: RocksDBKeyedStateBackend, state: StoredState, namespace: object = None
    ) -> None:
        self._backend = backend
        self._state = state
        self._cf: Rdict = state.cf
        self._codec: EntryCodec = state.codec
        self._get = state.cf.get
        self._put = state.cf.put
        self._delete = state.cf.delete
        self._ns: object = _UNSET
        self._ns_bytes = _UNUSABLE
        self.set_current_namespace(namespace)

    @property
    def name(self) -> str:
        return self._state.name

    def set_current_namespace(self, namespace: object) -> None:
        """Scope further calls to ``namespace`` (``None`` is the void namespace; windows and
        values a key may be are supported)."""
        if namespace is not self._ns:
            try:
                self._ns_bytes = NAMESPACES.key_bytes(namespace)
            except TypeError:  # raised on use, as by the heap backend
                self._ns_bytes = _UNUSABLE
            self._ns = namespace

    def get_current_namespace(self) -> object:
        return self._ns

    def _fail(self) -> None:
        """Raise the clear error of a failed access: no current key, or a namespace the store
        has no layout for."""
        self._backend.check_key()
        if self._ns_bytes is None:
            hash(self._ns)  # "unhashable type", as on the heap
            NAMESPACES.key_bytes(self._ns)

    def _key(self) -> bytes:
        """The store key of the current key and namespace (the backend's clear error when no
        key is current)."""
        try:
            return self._backend.key_prefix + self._ns_bytes
        except TypeError:
            self._fail()
            raise

    def clear(self) -> None:
        self._delete(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._state.name!r}, namespace={self._ns!r})"


class RocksDBValueState(RocksDBKvState, ValueState[object]):
    """:class:`ValueState` in RocksDB."""

    __slots__ = ("_decode", "_encode")

    def __init__(
        self, backend: RocksDBKeyedStateBackend, state: StoredState, namespace: object = None
    ) -> None:
        super().__init__(backend, state, namespace)
        self._decode = state.codec.value.decode_value
        self._encode = state.codec.value.value_bytes

    def value(self) -> object:
        try:
            data = self._get(self._backend.key_prefix + self._ns_bytes)
        except TypeError:
            self._fail()
            raise
        return None if data is None else self._decode(data)

    def update(self, value: object) -> None:
        try:
            k = self._backend.key_prefix + self._ns_bytes
        except TypeError:
            self._fail()
            raise
        if value is None:
            self._delete(k)
        else:
            self._put(k, self._encode(value))


class _Merging(RocksDBKvState):
    """``merge_namespaces`` for states holding one stored value per namespace (reducing,
    aggregating)."""

    __slots__ = ()

    def _merge_data(self, a: bytes, b: bytes) -> bytes | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def merge_namespaces(self, target: object, sources: Iterable[object]) -> None:
        """Merge the values of ``sources`` into ``target`` for the current key, removing the
        sources. The target's value comes first (list order, reduce/merge argument order)."""
        k = self._key()
        base = k[: len(k) - len(self._ns_bytes)]
        merged: bytes | None = None
        for source in sources:
            if source == target:
                continue
            k = base + NAMESPACES.key_bytes(source)
            v = self._get(k)
            if v is not None:
                self._delete(k)
                merged = v if merged is None else self._merge_data(merged, v)
        if merged is not None:
            tk = base + NAMESPACES.key_bytes(target)
            t = self._get(tk)
            if t is not None:
                merged = self._merge_data(t, merged)
            if merged is None:
                self._delete(tk)
            else:
                self._put(tk, merged)


class ElementsMixin(RocksDBKvState):
    """A list as one stored entry per element: store key ``... | namespace | seq`` (8 bytes,
    from the backend's sequence), so ``add`` is one write whatever the list's length and the
    elements of a list are one contiguous range in the order they were added."""

    __slots__ = ()

    def _element_keys(self, k: bytes) -> list[tuple[bytes, bytes]]:
        """The ``(store_key, stored_value)`` elements of the list at ``k``, in order."""
        return list(scan_prefix(self._cf, k))

    def _append(self, k: bytes, encoded: Iterable[bytes]) -> None:
        seq = self._backend.next_seq
        put = self._put
        for data in encoded:
            put(k + seq().to_bytes(8, "big"), data)

    def _remove_all(self, k: bytes) -> None:
        delete = self._delete
        for sk, _ in scan_prefix(self._cf, k):
            delete(sk)

    def clear(self) -> None:
        self._remove_all(self._key())

    def merge_namespaces(self, target: object, sources: Iterable[object]) -> None:
        """Append the elements of ``sources`` (in order) to ``target``'s for the current key,
        removing the sources."""
        k = self._key()
        base = k[: len(k) - len(self._ns_bytes)]
        tk = base + NAMESPACES.key_bytes(target)
        for source in sources:
            if source == target:
                continue
            elements = self._element_keys(base + NAMESPACES.key_bytes(source))
            for sk, _ in elements:
                self._delete(sk)
            self._append(tk, [data for _, data in elements])


class RocksDBListState(ElementsMixin, ListState[object]):
    """:class:`ListState` in RocksDB, one stored entry per element (:class:`ElementsMixin`)."""

    __slots__ = ("_dec", "_enc")

    def __init__(
        self, backend: RocksDBKeyedStateBackend, state: StoredState, namespace: object = None
    ) -> None:
        super().__init__(backend, state, namespace)
        self._enc = state.codec.encode_element
        self._dec = state.codec.decode_single

    def get(self) -> list[object]:
        dec = self._dec
        return [dec(data) for _, data in scan_prefix(self._cf, self._key())]

    def add(self, value: object) -> None:
        if value is None:
            check_not_none(value)
        try:
            k = self._backend.key_prefix + self._ns_bytes
        except TypeError:
            self._fail()
            raise
        self._put(k + self._backend.next_seq().to_bytes(8, "big"), self._enc(value))

    def add_all(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        if new:
            self._append(self._key(), map(self._enc, new))

    def update(self, values: Iterable[object]) -> None:
        new = list_values(values, "values")
        k = self._key()
        self._remove_all(k)
        self._append(k, map(self._enc, new))


class RocksDBMapState(RocksDBKvState, MapState[object, object]):
    """:class:`MapState` in RocksDB: one stored entry per map key; ``items()``, ``keys()`` and
    ``values()`` are snapshots in insertion order, as on the heap (each entry stores the
    sequence number of its first ``put``: a ``put`` reads before it writes)."""

    __slots__ = ()

    def get(self, key: object) -> object:
        c = self._codec
        data = self._get(self._key() + c.map_key_bytes(key))
        return None if data is None else c.decode_map_entry(data)[1]

    def put(self, key: object, value: object) -> None:
        c = self._codec
        sk = self._key() + c.map_key_bytes(key)
        old = self._get(sk)
        seq = self._backend.next_seq() if old is None else c.map_seq(old)
        self._put(sk, c.encode_map_value(seq, key, value))

    def put_all(self, dict_value: Mapping[object, object]) -> None:
        check_mapping(dict_value)
        for mk, v in dict_value.items():
            self.put(mk, v)

    def remove(self, key: object) -> None:
        self._delete(self._key() + self._codec.map_key_bytes(key))

    def contains(self, key: object) -> bool:
        return self._get(self._key() + self._codec.map_key_bytes(key)) is not None

    def items(self) -> list[tuple[object, object]]:
        return self._codec.decode_map([v for _, v in scan_prefix(self._cf, self._key())])

    def keys(self) -> list[object]:
        return [mk for mk, _ in self.items()]

    def values(self) -> list[object]:
        return [v for _, v in self.items()]

    def is_empty(self) -> bool:
        return next(scan_prefix(self._cf, self._key()), None) is None

    def clear(self) -> None:
        k = self._key()
        self._cf.delete_range(k, successor(k))

    def __iter__(self) -> Iterator[object]:
        return iter(self.keys())


class RocksDBReducingState(_Merging, ReducingState[object]):
    """:class:`ReducingState` in RocksDB."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        state: StoredState,
        namespace: object,
        reduce: Reducer,
    ) -> None:
        super().__init__(backend, state, namespace)
        self._reduce = reduce

    @property
    def reduce_function(self) -> Reducer:
        """The reduce function ``(a, b) -> combined``."""
        return self._reduce

    def get(self) -> object:
        data = self._get(self._key())
        return None if data is None else self._codec.decode_single(data)

    def add(self, value: object) -> None:
        k = self._key()
        if value is None:
            self._delete(k)
            return
        c = self._codec
        old = self._get(k)
        if old is not None:
            value = checked_reduce(self._reduce, c.decode_single(old), value)
        self._put(k, c.encode_single(value))

    def _merge_data(self, a: bytes, b: bytes) -> bytes:
        c = self._codec
        return c.encode_single(checked_reduce(self._reduce, c.decode_single(a), c.decode_single(b)))


class RocksDBAggregatingState(_Merging, AggregatingState[object, object]):
    """:class:`AggregatingState` in RocksDB: stores the accumulator."""

    __slots__ = ("_agg",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        state: StoredState,
        namespace: object,
        agg: AggregateLike,
    ) -> None:
        super().__init__(backend, state, namespace)
        self._agg = agg

    @property
    def aggregate_function(self) -> AggregateLike:
        """The aggregate function whose accumulators the entries hold."""
        return self._agg

    def get(self) -> object:
        data = self._get(self._key())
        return None if data is None else self._agg.get_result(self._codec.decode_single(data))

    def add(self, value: object) -> None:
        k = self._key()
        if value is None:
            self._delete(k)
            return
        c = self._codec
        old = self._get(k)
        acc = accumulate(self._agg, None if old is None else c.decode_single(old), value)
        self._put(k, c.encode_single(acc))

    def _merge_data(self, a: bytes, b: bytes) -> bytes:
        c = self._codec
        merged = merge_accumulators(self._agg, c.decode_single(a), c.decode_single(b))
        return c.encode_single(merged)


PlainFactory = Callable[["RocksDBKeyedStateBackend", "StoredState", object], RocksDBKvState]
PLAIN: Mapping[str, PlainFactory] = MappingProxyType(
    {
        "value": RocksDBValueState,
        "list": RocksDBListState,
        "map": RocksDBMapState,
    }
)
"""The state classes of the kinds built from backend, stored state and namespace alone."""
