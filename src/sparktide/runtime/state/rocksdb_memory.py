"""The memory of the keyed-state RocksDB databases of a process: one budget, whatever the number
of states and subtasks.

RocksDB's defaults size memory per column family: each state would get its own memtables (up to
two of 64 MB) and its own block cache, so a subtask with ten states could hold over a gigabyte
before its first flush. As Flink's managed memory does for its RocksDB backend, every database
opened with :func:`db_options` and every state's column family opened with :func:`state_options`
share, per process:

* one write buffer manager: all their memtables together stay near ``WRITE_BUFFER_BYTES``
  (RocksDB flushes the largest memtable when the total gets there), each memtable at most
  ``STATE_WRITE_BUFFER_BYTES``;
* one LRU block cache of ``BLOCK_CACHE_BYTES`` for data blocks, with index and filter blocks in
  it too (charged to the budget instead of growing with the files).

>>> import tempfile
>>> from rocksdict import Rdict
>>> folder = tempfile.TemporaryDirectory()
>>> db = Rdict(folder.name, db_options())
>>> cf = db.create_column_family("state:count", state_options())
>>> cf[b"k"] = b"v"; cf[b"k"]
b'v'
>>> cf.close(); db.close(); folder.cleanup()
"""

from __future__ import annotations

from rocksdict import BlockBasedOptions, Cache, Options, WriteBufferManager

__all__ = [
    "BLOCK_CACHE_BYTES",
    "STATE_WRITE_BUFFER_BYTES",
    "WRITE_BUFFER_BYTES",
    "db_options",
    "state_options",
]

WRITE_BUFFER_BYTES = 128 << 20
"""All memtables of the process's keyed-state databases together."""
STATE_WRITE_BUFFER_BYTES = 32 << 20
"""One memtable of one state (its column family)."""
BLOCK_CACHE_BYTES = 64 << 20
"""The block cache the keyed-state databases of the process share."""

_shared: tuple[WriteBufferManager, Cache] | None = None


def _shared_memory() -> tuple[WriteBufferManager, Cache]:
    global _shared
    if _shared is None:
        _shared = (WriteBufferManager(WRITE_BUFFER_BYTES, False), Cache(BLOCK_CACHE_BYTES))
    return _shared


def _bounded(options: Options) -> Options:
    manager, cache = _shared_memory()
    options.set_write_buffer_manager(manager)
    options.set_write_buffer_size(STATE_WRITE_BUFFER_BYTES)
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    options.set_block_based_table_factory(table)
    return options


def db_options() -> Options:
    """Options to open a keyed-state database with (raw mode, created if missing)."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    return _bounded(options)


def state_options() -> Options:
    """Options of a state's column family."""
    return _bounded(Options(raw_mode=True))
