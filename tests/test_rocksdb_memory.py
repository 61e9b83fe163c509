"""The keyed-state RocksDB databases of a process share one memory budget."""

from __future__ import annotations

import gc
from pathlib import Path

import sparktide.runtime.state.rocksdb_memory as memory
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend


def test_every_state_of_every_backend_shares_the_write_buffers_and_block_cache(
    tmp_path: Path,
) -> None:
    gc.collect()  # no database closed by the garbage collector while the usage is measured
    backends = [
        RocksDBKeyedStateBackend(
            max_parallelism=16,
            key_group_range=KeyGroupRange(0, 15),
            time_provider=lambda: 0,
            directory=tmp_path / f"db{i}",
        )
        for i in range(2)
    ]
    manager = memory.PROCESS_BUDGET.write_buffers  # the process's budget
    before = manager.get_usage()  # the empty memtables
    for b in backends:
        states = [b.get_partitioned_state(ValueStateDescriptor(f"s{i}", None)) for i in range(3)]
        for key in range(200):
            b.set_current_key(key)
            for state in states:
                state.update("x" * 100)
    # every state's memtable is charged to it
    assert manager.get_usage() - before > 3 * 2 * 200 * 100
    for b in backends:
        for stored in map(b.stored_state, b.get_state_names()):
            capacity = stored.cf.property_int_value("rocksdb.block-cache-capacity")
            assert capacity == memory.BLOCK_CACHE_BYTES  # the shared cache, not one per state
        b.dispose()
