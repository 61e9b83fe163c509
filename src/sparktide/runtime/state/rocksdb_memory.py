"""The memory of the RocksDB databases of a process (keyed state and timers): one budget,
whatever the number of states, timer services and subtasks.

RocksDB's defaults size memory per column family: each state would get its own memtables (up to
two of 64 MB) and its own block cache, so a subtask with ten states could hold over a gigabyte
before its first flush. As Flink's managed memory does for its RocksDB backend, every database
opened with :func:`db_options` (timer stores: :func:`timer_options`), every state's column family
opened with :func:`state_options`, every timer column family opened with :func:`timer_options`,
and every database opened again from its files with :func:`open_bounded` share, per process:

* one write buffer manager: all their memtables together stay near ``WRITE_BUFFER_BYTES``
  (RocksDB flushes the largest memtable when the total gets there), each memtable at most
  ``STATE_WRITE_BUFFER_BYTES``;
* one LRU block cache of ``BLOCK_CACHE_BYTES`` for data blocks, with index and filter blocks in
  it too (charged to the budget instead of growing with the files).

The budget is a :class:`MemoryBudget`; a process has one, :data:`PROCESS_BUDGET`, made when this
module is first imported (with the first RocksDB database: a job on the heap never imports it)
and never replaced: the budget is what the process's databases share, so it is per process by
design. The options functions take it as a parameter (default: the process's); a Spark worker's
:class:`~sparktide.spark.worker_resources.WorkerResources` names it as ``memory``.

A database is opened with ``paranoid_checks`` and reads that verify block checksums
(:mod:`~sparktide.runtime.state.rocksdb_integrity`): damaged files are an error, never less
state.

>>> import tempfile
>>> from rocksdict import Rdict
>>> folder = tempfile.TemporaryDirectory()
>>> db = Rdict(folder.name, db_options())
>>> cf = db.create_column_family("state:count", state_options())
>>> cf[b"k"] = b"v"; cf[b"k"]
b'v'
>>> cf.close(); db.close()
>>> db = open_bounded(folder.name)  # again, from its files: every column family, in the budget
>>> db.get_column_family("state:count")[b"k"]
b'v'
>>> db.close(); folder.cleanup()
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBufferManager

from sparktide.runtime.state.rocksdb_integrity import verified_reads

__all__ = [
    "BLOCK_CACHE_BYTES",
    "PROCESS_BUDGET",
    "STATE_WRITE_BUFFER_BYTES",
    "WRITE_BUFFER_BYTES",
    "MemoryBudget",
    "db_options",
    "open_bounded",
    "state_options",
    "timer_options",
]

WRITE_BUFFER_BYTES = 128 << 20
"""All memtables of the process's keyed-state databases together."""
STATE_WRITE_BUFFER_BYTES = 32 << 20
"""One memtable of one state (its column family)."""
BLOCK_CACHE_BYTES = 64 << 20
"""The block cache the keyed-state databases of the process share."""


@dataclass(frozen=True)
class MemoryBudget:
    """The memory RocksDB databases share: one write buffer manager (``write_buffers``: all
    their memtables together) and one LRU block cache (``block_cache``: data, index and filter
    blocks).

    >>> budget = MemoryBudget.create(write_buffer_bytes=1 << 20)
    >>> budget.write_buffers.get_buffer_size(), budget.block_cache.get_usage()
    (1048576, 0)
    """

    write_buffers: WriteBufferManager
    block_cache: Cache

    @classmethod
    def create(
        cls,
        write_buffer_bytes: int = WRITE_BUFFER_BYTES,
        block_cache_bytes: int = BLOCK_CACHE_BYTES,
    ) -> MemoryBudget:
        """A new budget of ``write_buffer_bytes`` of memtables and a block cache of
        ``block_cache_bytes``."""
        for name, value in (
            ("write_buffer_bytes", write_buffer_bytes),
            ("block_cache_bytes", block_cache_bytes),
        ):
            if type(value) is not int or value <= 0:
                raise ValueError(f"{name} must be a positive int (bytes), got {value!r}")
        return cls(WriteBufferManager(write_buffer_bytes, False), Cache(block_cache_bytes))


PROCESS_BUDGET: Final = MemoryBudget.create()
"""The budget of this process's RocksDB databases (see the module docstring)."""


def _bounded(options: Options, budget: MemoryBudget, bloom: bool = False) -> Options:
    options.set_write_buffer_manager(budget.write_buffers)
    options.set_write_buffer_size(STATE_WRITE_BUFFER_BYTES)
    table = BlockBasedOptions()
    table.set_block_cache(budget.block_cache)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    if bloom:  # read by point lookups, most of absent keys: bloom filters in the files (their
        # blocks charged to the cache) and in the memtable
        table.set_bloom_filter(10, False)
        options.set_memtable_whole_key_filtering(True)
        options.set_memtable_prefix_bloom_ratio(0.1)
    options.set_block_based_table_factory(table)
    return options


def db_options(budget: MemoryBudget = PROCESS_BUDGET) -> Options:
    """Options to open a keyed-state database with (raw mode, created if missing), within
    ``budget``."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_paranoid_checks(True)  # check the files on open (local copies may be damaged)
    return _bounded(options, budget)


def state_options(budget: MemoryBudget = PROCESS_BUDGET) -> Options:
    """Options of a state's column family (bloom filters: a key's first access looks up a value
    that is absent), within ``budget``."""
    return _bounded(Options(raw_mode=True), budget, bloom=True)


def timer_options(index: bool = False, budget: MemoryBudget = PROCESS_BUDGET) -> Options:
    """Options of a timer store and of its column families (raw mode, created if missing,
    column families too); ``index``: the column family of a timer index (bloom filters: every
    add looks up a timer that is mostly absent).

    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> db = Rdict(folder.name, timer_options(),
    ...            column_families={"timers": timer_options(), "index": timer_options(index=True)})
    >>> cf = db.get_column_family("index")
    >>> cf.property_int_value("rocksdb.block-cache-capacity") == BLOCK_CACHE_BYTES
    True
    >>> del cf; db.close(); folder.cleanup()
    """
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    return _bounded(options, budget, bloom=index)


def open_bounded(path: str, budget: MemoryBudget = PROCESS_BUDGET) -> Rdict:
    """Open the database in ``path`` (raw mode) with every column family it has, all within
    the budget: a database restored from a checkpoint's files, or kept by a worker between
    micro-batches, takes its memory from the same write buffers and block cache as the rest.
    The options RocksDB recorded in the directory cannot say so (a cache is no setting). A
    directory without a database gets a new one."""
    exists = os.path.exists(os.path.join(path, "CURRENT"))
    names = Rdict.list_cf(path, Options(raw_mode=True)) if exists else []
    families = {name: state_options(budget) for name in names if name != "default"}
    db = Rdict(path, db_options(budget), column_families=families)
    db.set_read_options(verified_reads())
    return db
