"""One state of a native RocksDB checkpoint read straight into record batches.

Reading one state of a RocksDB stage subtask needs neither the backend-neutral snapshot of
all its states nor, where the layout allows, a Python object per entry.
:func:`native_state_batches` opens the checkpoint's database, scans the state's column family
in store order (key group, key, namespace: the order of the neutral snapshot) and makes the
rows of :mod:`sparktide.state_api.rows` chunk by chunk:

- a value, reducing or aggregating state whose key and value are declared fixed-width numbers
  (``Types.LONG()``, ``Types.INT()``, ``Types.DOUBLE()``, ...), read as those types, without
  a namespace or with ``TimeWindow`` ones: every store key of a chunk has one width and every
  stored value another, so the chunk's bytes are joined and read as NumPy arrays of
  fixed-width records, which become the Arrow columns as they are;
- any other state (strings, rows, pickled values, lists and maps, keys or values read as
  other types) entry by entry with the state's codec, as the neutral snapshot reads it (a
  list's or map's key and namespace decoded once per key prefix).

Both give the rows the neutral snapshot gives, in its order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from rocksdict import WriteOptions

from sparktide.runtime.state.rocksdb_layout import fixed_number_dtype, key_codec
from sparktide.runtime.state.rocksdb_raw import RawStore
from sparktide.spark.checkpoint_native import opened_checkpoint
from sparktide.state_api.rows import (
    BATCH_ROWS,
    NamespaceKind,
    StateEntry,
    StateRowsSpec,
    entry_batches,
    state_batch,
)

if TYPE_CHECKING:
    from rocksdict import Rdict

    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.keygroups import KeyGroupRange
    from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
    from sparktide.runtime.state.rocksdb_raw import StoredState
    from sparktide.spark.checkpoint_native import NativeReference

__all__ = ["database_state_batches", "native_state_batches"]

_NAMESPACE_TAGS = {NamespaceKind.NONE: 0, NamespaceKind.WINDOW: 1}
"""The tag byte of a state's namespaces of each kind read as fixed-width records."""


def _numbers(field: np.ndarray, dtype: str) -> np.ndarray:
    """The numbers a :func:`fixed_number_dtype` field holds, in native byte order."""
    if dtype[1] == "f":
        floats: np.ndarray = field.astype(dtype[1:])
        return floats
    width = int(dtype[2:])
    sign = np.array(1 << (8 * width - 1), dtype=f"u{width}")
    signed: np.ndarray = (field.astype(f"u{width}") ^ sign).view(f"i{width}")
    return signed


def _arrow_of(dtype: str) -> pa.DataType:
    """The Arrow type of the numbers of a :func:`fixed_number_dtype` (``">u8"``: int64)."""
    kind = "f" if dtype[1] == "f" else "i"
    return pa.from_numpy_dtype(np.dtype(f"{kind}{dtype[2:]}"))


@dataclass(frozen=True)
class _FixedRecords:
    """How the store keys and stored values of a state read as fixed-width records."""

    spec: StateRowsSpec
    key: str
    value: str

    @staticmethod
    def of(
        spec: StateRowsSpec, key_type: TypeInformation | None, state: StoredState
    ) -> _FixedRecords | None:
        """The records of ``state`` (its database's keys of ``key_type``) read as ``spec``
        says, ``None`` where they are not fixed-width numbers read as their own types."""
        if spec.kind in ("list", "map") or spec.namespace not in _NAMESPACE_TAGS:
            return None
        key = fixed_number_dtype(key_codec(key_type))
        value = fixed_number_dtype(state.codec.value)
        if key is None or value is None or spec.key_type is None or spec.value_type is None:
            return None
        if spec.key_type != key_type or spec.value_type != state.codec.types[0]:
            return None
        types = (spec.key_type.to_arrow_type(), spec.value_type.to_arrow_type())
        if types != (_arrow_of(key), _arrow_of(value)):
            return None
        return _FixedRecords(spec, key, value)

    def _key_dtype(self) -> np.dtype:
        fields = [("key_group", ">u2"), ("key", self.key), ("tag", "u1")]
        if self.spec.namespace is NamespaceKind.WINDOW:
            fields += [("start", ">u8"), ("end", ">u8")]
        return np.dtype(fields)

    def _value_dtype(self) -> np.dtype:
        return np.dtype(([("ts", ">u8")] if self.spec.ttl else []) + [("value", self.value)])

    def batch(self, keys: list[bytes], values: list[bytes]) -> pa.RecordBatch | None:
        """The rows of these entries (``None``: not all of them are such records)."""
        key_dtype, value_dtype = self._key_dtype(), self._value_dtype()
        key_bytes, value_bytes = b"".join(keys), b"".join(values)
        n = len(keys)
        if len(key_bytes) != n * key_dtype.itemsize or len(value_bytes) != n * value_dtype.itemsize:
            return None
        stored = np.frombuffer(key_bytes, key_dtype)
        if np.any(stored["tag"] != _NAMESPACE_TAGS[self.spec.namespace]):
            return None
        spec = self.spec
        arrays = [pa.array(_numbers(stored["key"], self.key), spec.schema().field("key").type)]
        if spec.namespace is NamespaceKind.WINDOW:
            arrays += [pa.array(_numbers(stored[f], ">u8"), pa.int64()) for f in ("start", "end")]
        read = np.frombuffer(value_bytes, value_dtype)["value"]
        arrays.append(pa.array(_numbers(read, self.value), spec.schema().field("value").type))
        arrays.append(pa.array(stored["key_group"].astype(np.int32), pa.int32()))
        return pa.RecordBatch.from_arrays(arrays, schema=spec.schema())


def _entries(
    raw: RawStore, state: StoredState, keys: list[bytes], values: list[bytes]
) -> list[StateEntry]:
    """The entries of a chunk of a value, reducing or aggregating state, one by one."""
    decode = state.codec.decode_single
    out: list[StateEntry] = []
    for sk, data in zip(keys, values, strict=True):
        key, ns, _ = raw.split(sk)
        out.append((int.from_bytes(sk[:2], "big"), key, ns, decode(data)))
    return out


def database_state_batches(
    db: Rdict,
    key_type: TypeInformation | None,
    max_parallelism: int,
    key_groups: KeyGroupRange,
    spec: StateRowsSpec,
    rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``spec.state`` in the key groups ``key_groups`` of ``db``, the database
    of a :class:`~sparktide.runtime.state.rocksdb_backend.RocksDBKeyedStateBackend` (keys of
    ``key_type``, ``max_parallelism``), in batches of about ``rows`` entries."""
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

    backend = RocksDBKeyedStateBackend.attach(
        db,
        max_parallelism=max_parallelism,
        key_group_range=key_groups,
        time_provider=lambda: 0,
        key_type=key_type,
    )
    try:
        if spec.state in backend.state_metas():
            state = backend.stored_state(spec.state)
            store = RawStore(db, key_codec(key_type), key_groups, WriteOptions(), lambda: 0)
            yield from _state_batches(spec, key_type, state, store, rows)
    finally:
        backend.dispose()


def _state_batches(
    spec: StateRowsSpec,
    key_type: TypeInformation | None,
    state: StoredState,
    store: RawStore,
    rows: int,
) -> Iterator[pa.RecordBatch]:
    records = _FixedRecords.of(spec, key_type, state)
    if records is None:
        yield from entry_batches(spec, store.entries(state), rows)
        return
    for keys, values in store.chunks(state, rows):
        batch = records.batch(keys, values)
        yield state_batch(spec, _entries(store, state, keys, values)) if batch is None else batch


def native_state_batches(
    storage: RocksDBCheckpointStorage,
    ref: NativeReference,
    where: str,
    spec: StateRowsSpec,
    rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``spec.state`` in the RocksDB checkpoint ``ref`` names (``where``: its
    state file, for errors), in batches of about ``rows`` entries."""
    with opened_checkpoint(storage, ref, where) as db:
        key_type = ref.decoded_key_type(where, trusted=True)
        yield from database_state_batches(
            db, key_type, ref.max_parallelism, ref.key_group_range, spec, rows
        )
