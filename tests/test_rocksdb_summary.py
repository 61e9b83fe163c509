"""``sparktide inspect``'s summary of a RocksDB database, counted from its store keys without
unpickling anything, equals the summary of the state read back in full (declared keys of any
layout, value, list and map states in windows, timers of both domains)."""

from __future__ import annotations

import pickle

import pytest
from rocksdict import Rdict

from sparktide.common import Types
from sparktide.core.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from sparktide.core.timerservice import TimeDomain
from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
from sparktide.runtime.state.rocksdb_layout import key_codec
from sparktide.runtime.state.rocksdb_memory import db_options
from sparktide.runtime.state.rocksdb_summary import summarize_database
from sparktide.runtime.timers.queue_factory import RocksDBTimerQueueFactory
from sparktide.spark.checkpoint import summarize

RANGE = KeyGroupRange(0, 127)


@pytest.mark.parametrize(
    ("key_type", "keys"),
    [
        (None, ["a", 7, ("t", 1)]),
        (Types.STRING(), ["a", "bb", "ccc"]),
        (Types.TUPLE([Types.LONG(), Types.STRING()]), [(1, "x"), (2, "y"), (3, "zz")]),
    ],
)
def test_the_summary_from_store_keys_equals_the_full_one(tmp_path, monkeypatch, key_type, keys):
    db = Rdict(str(tmp_path / "db"), db_options())
    backend = RocksDBKeyedStateBackend.attach(
        db, max_parallelism=128, key_group_range=RANGE, time_provider=lambda: 0, key_type=key_type
    )
    timers = RocksDBTimerQueueFactory(None, key_type=key_type, db=db)
    event = timers.create_timer_queue("window", TimeDomain.EVENT_TIME, RANGE)
    proc = timers.create_timer_queue("window", TimeDomain.PROCESSING_TIME, RANGE)
    value = ValueStateDescriptor("v", Types.LONG())
    items = ListStateDescriptor("l", None)
    table = MapStateDescriptor("m", Types.STRING(), None)
    for i, key in enumerate(keys):
        kg = assign_to_key_group(key, 128)
        backend.set_current_key(key)
        for w in range(i + 1):
            window = TimeWindow(w * 10, w * 10 + 10)
            for descriptor in (value, items, table):
                state = backend.get_partitioned_state(descriptor)
                state.set_current_namespace(window)
                if descriptor is value:
                    state.update(w)
                elif descriptor is items:
                    state.add(w)
                    state.add(-w)
                else:
                    state.put("x", w)
                    state.put("y", w)
            event.add(w * 10 + 9, key, window, kg)
        proc.add(1_000 + i, key, None, kg)
    timers.sync()
    meta, state = backend.snapshot_state()
    full = summarize(
        KeyedOperatorSnapshot(
            "op",
            128,
            RANGE,
            meta,
            state,
            {
                kg: {
                    "window": (
                        event.entries_for_key_group(kg),
                        proc.entries_for_key_group(kg),
                    )
                }
                for kg in RANGE
            },
        )
    )
    assert full["state_entries"] > 0 and full["event_timers"] > 0

    def refuse(*args, **kwargs):
        raise AssertionError("unpickled something")

    monkeypatch.setattr(pickle, "loads", refuse)
    assert summarize_database(db, key_codec(key_type), RANGE) == full
    if key_type is None:  # an unknown key type: the layout of undeclared keys is recorded
        assert summarize_database(db, None, RANGE) == full
    monkeypatch.undo()
    timers.dispose()
    backend.dispose()
    db.close()
