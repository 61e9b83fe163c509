"""What a keyed-state database holds, counted from its store keys alone: never a value, never
a pickle (``sparktide inspect`` of a RocksDB checkpoint).

:func:`summarize_database` gives the summary the heap writes into each state file (see
:func:`~sparktide.spark.checkpoint.summarize`) for a database of a
:class:`~sparktide.runtime.state.rocksdb_backend.RocksDBKeyedStateBackend` and its timer
queues: the ``(key, namespace)`` entries of every state (the kinds the database records as
JSON; list and map entries grouped by their store-key prefix, split with the key codec of the
declared key type), and per timer domain the count, earliest and latest timestamp (the
timestamp is part of a timer's store key). Entries a TTL has expired but no cleanup removed
yet are counted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rocksdict import WriteOptions

from sparktide.runtime.state.rocksdb_entries import EntryCodec
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_layout import decode_timestamp, key_codec, key_group_bounds
from sparktide.runtime.state.rocksdb_raw import CF_PREFIX, RawStore, StoredState
from sparktide.runtime.timers.queue_factory import recorded_timer_services

if TYPE_CHECKING:
    from rocksdict import Rdict

    from sparktide.runtime.keygroups import KeyGroupRange
    from sparktide.runtime.state.rocksdb_layout import Codec

__all__ = ["recorded_states", "state_records", "summarize_database"]

_META_STATE = b"state:"  # the default column family's key of a state's kind (JSON)
_META_BACKEND = b"backend"  # ... and of the backend's max parallelism and key layout (JSON)


def state_records(db: Rdict) -> dict[str, dict[str, Any]]:
    """Per state recorded in ``db`` (by a backend attached to it) its JSON meta: its kind,
    TTL setting and declared types (``"declared"``)."""
    out: dict[str, dict[str, Any]] = {}
    it = db.iter()
    it.seek(_META_STATE)
    while it.valid():
        key: bytes = it.key()
        if not key.startswith(_META_STATE):
            break
        out[key[len(_META_STATE) :].decode()] = json.loads(it.value())
        it.next()
    else:
        check_scan(it)
    return out


def recorded_states(db: Rdict) -> dict[str, tuple[str, bool]]:
    """Per state recorded in ``db`` its kind and TTL setting (:func:`state_records`)."""
    return {
        name: (str(info["kind"]), bool(info["ttl"])) for name, info in state_records(db).items()
    }


def _canonical_keys(db: Rdict) -> Codec | None:
    """The key codec of undeclared keys when ``db`` records that its keys are laid out so
    (the layout its backend recorded as JSON), else ``None``."""
    stored = db.get(_META_BACKEND)
    layout = json.loads(stored).get("key_layout", "canonical") if stored is not None else None
    return key_codec(None) if layout == "canonical" else None


def _state_entries(db: Rdict, keys: Codec | None, key_groups: KeyGroupRange) -> int | None:
    """The ``(key, namespace)`` entries of every state in ``key_groups`` (``None``: a list or
    map state and no key codec to group its entries with)."""
    states = recorded_states(db)
    if keys is None:
        keys = _canonical_keys(db)
    if keys is None and any(kind in ("list", "map") for kind, _ in states.values()):
        return None
    raw = RawStore(db, keys or key_codec(None), key_groups, WriteOptions(), lambda: 0)
    total = 0
    for name, (kind, ttl) in sorted(states.items()):
        cf = db.get_column_family(CF_PREFIX + name)
        total += raw.count(StoredState(name, kind, ttl, cf, EntryCodec(kind, ttl, None, None)))
    return total


def summarize_database(
    db: Rdict, keys: Codec | None, key_groups: KeyGroupRange
) -> dict[str, int | None]:
    """``state_entries`` and per timer domain ``<domain>_timers``, ``next_<domain>_timer``
    and ``last_<domain>_timer`` of the key groups ``key_groups`` of ``db``; ``keys``: the codec
    of the declared key type (``None``: unknown; list and map states are then counted only when the
    database records the layout of undeclared keys, else ``state_entries`` is ``None``)."""
    out: dict[str, int | None] = {"state_entries": _state_entries(db, keys, key_groups)}
    lo, hi = key_group_bounds(key_groups)
    for domain in ("event", "processing"):
        count, first, last = 0, None, None  # type: int, int | None, int | None
        for families in recorded_timer_services(db).values():
            if domain not in families:
                continue
            it = db.get_column_family(families[domain][0]).iter()
            it.seek(lo)
            while it.valid():
                key: bytes = it.key()
                if key >= hi:
                    break
                ts = decode_timestamp(key, 2)
                count += 1
                first = ts if first is None else min(first, ts)
                last = ts if last is None else max(last, ts)
                it.next()
            else:
                check_scan(it)
        out[f"{domain}_timers"] = count
        out[f"next_{domain}_timer"] = first
        out[f"last_{domain}_timer"] = last
    return out
