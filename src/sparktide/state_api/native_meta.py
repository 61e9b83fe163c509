"""What a native RocksDB checkpoint records of its states, read without reading them all.

A RocksDB stage subtask's database records, per state, a JSON object (its kind, TTL setting,
the codec's types and the types its descriptor declared) under the default column family's
key ``state:<name>``; the state file naming the checkpoint records the declared key type as
JSON (a key type an older sparktide pickled is not read: the keys are then undeclared).
:func:`native_states` reads these as data (never a pickle). :func:`native_first_namespace`
decodes the store key of a state's first entry (``key group | key | namespace``): its
namespace, unpickled where it is pickled (a trusted read only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.runtime.state.rocksdb_entries import NAMESPACES
from sparktide.runtime.state.rocksdb_layout import key_codec, key_group_bounds
from sparktide.runtime.state.rocksdb_raw import CF_PREFIX
from sparktide.runtime.state.rocksdb_summary import state_records
from sparktide.spark.checkpoint_native import opened_checkpoint

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.spark.checkpoint import CheckpointStore
    from sparktide.spark.checkpoint_native import NativeReference

__all__ = ["native_first_namespace", "native_states"]


def native_states(
    store: CheckpointStore, operator: str, subtask: int, ref: NativeReference, where: str
) -> tuple[dict[str, dict[str, Any]], TypeInformation | None]:
    """Per state ``{kind, ttl, types}`` (the declared types' JSON, ``None``: undeclared) of
    the RocksDB checkpoint ``ref`` names, and the declared key type."""
    key_type = None if ref.key_type_pickled else ref.decoded_key_type(where, trusted=False)
    with opened_checkpoint(store.native_storage(operator, subtask), ref, where) as db:
        records = state_records(db)
    out = {
        name: {"kind": info["kind"], "ttl": info["ttl"], "types": info.get("declared")}
        for name, info in records.items()
    }
    return out, key_type


def native_first_namespace(
    store: CheckpointStore,
    operator: str,
    subtask: int,
    ref: NativeReference,
    state: str,
    where: str,
) -> list[object]:
    """The namespace of the first entry of ``state`` in the RocksDB checkpoint ``ref`` names
    (empty: the state has no entry there)."""
    keys = key_codec(ref.decoded_key_type(where, trusted=True))
    with opened_checkpoint(store.native_storage(operator, subtask), ref, where) as db:
        lo, hi = key_group_bounds(ref.key_group_range)
        it = db.get_column_family(CF_PREFIX + state).iter()
        it.seek(lo)
        if not it.valid() or it.key() >= hi:
            return []
        store_key: bytes = it.key()
        _, pos = keys.decode_key_from(store_key, 2)
        return [NAMESPACES.decode_value_from(store_key, pos)[0]]
