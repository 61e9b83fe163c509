"""The states a native RocksDB checkpoint records, read as data (never a pickle).

A RocksDB stage subtask's database records, per state, a JSON object (its kind, TTL setting,
the codec's types and the types its descriptor declared) under the default column family's
key ``state:<name>``; the state file naming the checkpoint records the declared key type as
JSON (a key type an older sparktide pickled is not read: the keys are then undeclared).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sparktide.spark.checkpoint_native import _opened

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.spark.checkpoint import CheckpointStore
    from sparktide.spark.checkpoint_native import NativeReference

__all__ = ["native_states"]

_META_STATE = b"state:"


def native_states(
    store: CheckpointStore, operator: str, subtask: int, ref: NativeReference, where: str
) -> tuple[dict[str, dict[str, Any]], TypeInformation | None]:
    """Per state ``{kind, ttl, types}`` (the declared types' JSON, ``None``: undeclared) of
    the RocksDB checkpoint ``ref`` names, and the declared key type."""
    key_type = None if ref.key_type_pickled else ref.decoded_key_type(where, trusted=False)
    out: dict[str, dict[str, Any]] = {}
    with _opened(store.native_storage(operator, subtask), ref, where) as db:
        it = db.iter()
        it.seek(_META_STATE)
        while it.valid():
            key: bytes = it.key()
            if not key.startswith(_META_STATE):
                break
            info = json.loads(it.value())
            name = key[len(_META_STATE) :].decode()
            out[name] = {"kind": info["kind"], "ttl": info["ttl"], "types": info.get("declared")}
            it.next()
    return out, key_type
