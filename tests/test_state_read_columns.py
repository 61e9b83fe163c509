"""A RocksDB database's keyed state read straight into rows
(:func:`sparktide.state_api.native_columns.database_state_batches`) equals the rows of its
backend-neutral snapshot, and keys and values declared as fixed-width numbers are read as
whole chunks, without decoding an entry on its own.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from rocksdict import Options, Rdict

import sparktide.runtime.state.rocksdb_raw as raw_mod
from sparktide.common.typeinfo import Types
from sparktide.core.window.windows import TimeWindow
from sparktide.datastream.state import ListStateDescriptor, StateTtlConfig, ValueStateDescriptor
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
from sparktide.state_api.native_columns import database_state_batches
from sparktide.state_api.rows import NamespaceKind, StateRowsSpec, entry_batches

KEY_GROUPS = KeyGroupRange(0, 127)
TTL = StateTtlConfig.new_builder(1_000).build()
KEYS = [-(2**63), -5, -1, 0, 1, 7, 2**31, 2**63 - 1]


def _write(db: Rdict, key_type, writes) -> dict:
    """Each ``(descriptor, key, namespace, value)`` written by a backend attached to ``db``;
    the backend-neutral snapshot of what it holds."""
    backend = RocksDBKeyedStateBackend.attach(
        db, max_parallelism=128, key_group_range=KEY_GROUPS, time_provider=lambda: 50,
        key_type=key_type,
    )  # fmt: skip
    for descriptor, key, ns, value in writes:
        backend.set_current_key(key)
        state = backend.get_internal_state(descriptor)
        state.set_current_namespace(ns)
        state.add(value) if isinstance(descriptor, ListStateDescriptor) else state.update(value)
    _, snapshot = backend.snapshot_state()
    backend.dispose()
    return snapshot


def _read(db: Rdict, key_type, spec: StateRowsSpec, rows: int) -> pa.Table:
    batches = database_state_batches(db, key_type, 128, KEY_GROUPS, spec, rows)
    return pa.Table.from_batches(list(batches), schema=spec.schema())


def _neutral(snapshot: dict, spec: StateRowsSpec) -> pa.Table:
    entries = (
        (kg, key, ns, raw)
        for kg in sorted(snapshot)
        for key, ns, raw in snapshot[kg].get(spec.state, ())
    )
    return pa.Table.from_batches(list(entry_batches(spec, entries)), schema=spec.schema())


@pytest.fixture()
def db(tmp_path):
    opened = Rdict(str(tmp_path / "db"), Options(raw_mode=True))
    yield opened
    opened.close()


def _no_entry_decoding(monkeypatch) -> None:
    def refuse(self, store_key):
        raise AssertionError("an entry was decoded on its own")

    monkeypatch.setattr(raw_mod.RawStore, "split", refuse)


def test_fixed_width_numbers_are_read_by_chunk(db, monkeypatch) -> None:
    plain = ValueStateDescriptor("plain", Types.LONG())
    windowed = ValueStateDescriptor("windowed", Types.DOUBLE())
    aged = ValueStateDescriptor("aged", Types.INT())
    aged.enable_time_to_live(TTL)
    windows = [TimeWindow(-10, 0), TimeWindow(0, 10)]
    writes = [(plain, k, None, k // 3) for k in KEYS]
    writes += [(windowed, k, w, k / 7 + w.start) for k in KEYS for w in windows]
    writes += [(aged, k, None, i - 2**31) for i, k in enumerate(KEYS)]
    snapshot = _write(db, Types.LONG(), writes)
    _no_entry_decoding(monkeypatch)
    specs = [
        StateRowsSpec("plain", "value", False, Types.LONG(), Types.LONG()),
        StateRowsSpec(
            "windowed", "value", False, Types.LONG(), Types.DOUBLE(),
            namespace=NamespaceKind.WINDOW,
        ),
        StateRowsSpec("aged", "value", True, Types.LONG(), Types.INT()),
    ]  # fmt: skip
    for spec in specs:
        table = _read(db, Types.LONG(), spec, rows=3)
        assert table.equals(_neutral(snapshot, spec))
    plain_rows = _read(db, Types.LONG(), specs[0], rows=3).to_pylist()
    assert sorted((r["key"], r["value"]) for r in plain_rows) == [(k, k // 3) for k in KEYS]
    windowed_rows = _read(db, Types.LONG(), specs[1], rows=5).to_pylist()
    assert sorted((r["key"], r["window_start"], r["value"]) for r in windowed_rows) == [
        (k, w.start, k / 7 + w.start) for k in KEYS for w in windows
    ]


def test_other_states_and_odd_chunks_read_entry_by_entry(db) -> None:
    plain = ValueStateDescriptor("plain", Types.LONG())
    words = ValueStateDescriptor("words", Types.STRING())
    seen = ListStateDescriptor("seen", Types.LONG())
    writes = [(plain, k, None, k) for k in KEYS] + [(plain, 3, TimeWindow(0, 5), 1)]
    writes += [(words, k, None, f"w{k}") for k in KEYS]
    writes += [(seen, k, None, v) for k in KEYS[:3] for v in (1, 2)]
    snapshot = _write(db, Types.LONG(), writes)
    specs = [
        StateRowsSpec("plain", "value", False, Types.LONG(), Types.LONG()),  # a window in one
        StateRowsSpec("plain", "value", False, Types.STRING(), Types.LONG()),  # as another type
        StateRowsSpec("words", "value", False, Types.LONG(), Types.STRING()),
        StateRowsSpec("seen", "list", False, Types.LONG(), Types.LONG()),
        StateRowsSpec("none", "value", False, Types.LONG(), Types.LONG()),
    ]
    for spec in specs[:1] + specs[2:]:
        assert _read(db, Types.LONG(), spec, rows=4).equals(_neutral(snapshot, spec))
    with pytest.raises(Exception, match="column 'key' is read as String"):
        _read(db, Types.LONG(), specs[1], rows=4)
    with pytest.raises(Exception, match="column 'key' is read as String"):
        _neutral(snapshot, specs[1])
    assert _read(db, Types.LONG(), specs[-1], rows=4).num_rows == 0
