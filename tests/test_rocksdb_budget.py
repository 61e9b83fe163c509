"""Timer stores and databases opened again from their files share the memory budget of the
keyed-state databases (one write buffer manager, one block cache per process)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from rocksdict import Options, Rdict

import sparktide.runtime.state.rocksdb_memory as memory
from sparktide.core.timerservice import TimeDomain
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state.rocksdb_checkpoint import open_rdict
from sparktide.runtime.timers.queue_factory import RocksDBTimerQueueFactory
from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

CAPACITY = "rocksdb.block-cache-capacity"


@pytest.fixture
def budget() -> memory.WriteBufferManager:
    """The write buffers of the process's budget (what the timer stores use), with no
    database left to be closed by the garbage collector while a test measures its usage."""
    gc.collect()
    return memory.PROCESS_BUDGET.write_buffers


def test_the_memtables_and_blocks_of_timer_stores_are_in_the_budget(
    tmp_path: Path, budget: memory.WriteBufferManager
) -> None:
    before = budget.get_usage()
    factory = RocksDBTimerQueueFactory(tmp_path / "timers", cache_size=4)
    queues = [
        factory.create_timer_queue(f"s{i}", domain, KeyGroupRange(0, 127))
        for i in range(2)
        for domain in (TimeDomain.EVENT_TIME, TimeDomain.PROCESSING_TIME)
    ]
    for q in queues:
        for key in range(2000):
            q.add(key, f"key-{key}", None, assign_to_key_group(f"key-{key}", 128))
        q.flush()
    # the timers' memtables are charged to the one manager of the process
    assert budget.get_usage() - before > 4 * 2000 * 10
    for q in queues:
        capacity = (memory.BLOCK_CACHE_BYTES, memory.BLOCK_CACHE_BYTES)
        assert q.column_family_property(CAPACITY) == capacity
    own = RocksDBTimerQueue(KeyGroupRange(0, 127), tmp_path / "own")  # a store of its own
    assert own.column_family_property(CAPACITY)[1] == memory.BLOCK_CACHE_BYTES
    own.dispose()
    factory.dispose()


@pytest.mark.parametrize("opener", [memory.open_bounded, open_rdict])
def test_a_database_opened_from_its_files_is_in_the_budget(
    tmp_path: Path, budget: memory.WriteBufferManager, opener: object
) -> None:
    path = str(tmp_path / "db")
    plain = Options(raw_mode=True)
    plain.create_if_missing(True)
    db = Rdict(path, plain)  # RocksDB's defaults: a cache of its own
    cf = db.create_column_family("state:s", Options(raw_mode=True))
    cf[b"k"] = b"v"
    assert cf.property_int_value(CAPACITY) != memory.BLOCK_CACHE_BYTES
    del cf
    db.close()
    before = budget.get_usage()
    again = opener(path)  # type: ignore[operator]
    cf = again.get_column_family("state:s")
    assert cf[b"k"] == b"v"
    assert cf.property_int_value(CAPACITY) == memory.BLOCK_CACHE_BYTES
    for i in range(1000):
        cf[i.to_bytes(4, "big")] = b"x" * 100
    assert budget.get_usage() - before > 1000 * 100
    del cf
    again.close()
