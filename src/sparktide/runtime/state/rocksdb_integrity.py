"""RocksDB reads that never accept damaged files silently.

RocksDB keeps a checksum of every block of its SST files. A point read (``db[key]``,
``db.get``) of a damaged block raises ``Corruption: block checksum mismatch``; an iterator that
meets one only stops (``valid()`` turns false, as at the end of the data), so a scan that
does not ask would read a damaged database as a shorter one. Every scan of keyed state and
timers ends with :func:`check_scan`, which raises :class:`RocksDBCorruptionError` when the
iterator stopped on an error. Databases are opened with ``paranoid_checks`` (RocksDB checks
its files when it opens them) and reads verify checksums (:func:`verified_reads`).

>>> import tempfile
>>> from rocksdict import Options, Rdict
>>> db = Rdict(tempfile.mkdtemp(), Options(raw_mode=True))
>>> db.set_read_options(verified_reads())
>>> it = db.iter(); it.seek_to_first(); check_scan(it)  # an empty database: no error
>>> del it; db.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocksdict import ReadOptions

if TYPE_CHECKING:
    from rocksdict import RdictIter

__all__ = ["RocksDBCorruptionError", "check_scan", "verified_reads"]


class RocksDBCorruptionError(RuntimeError):
    """A RocksDB read met damaged files (a checksum mismatch, a truncated or missing file)."""


def verified_reads() -> ReadOptions:
    """Read options that verify the block checksums of everything read."""
    options = ReadOptions()
    options.set_verify_checksums(True)
    return options


def check_scan(it: RdictIter) -> None:
    """Raise :class:`RocksDBCorruptionError` when the iterator ``it`` stopped on an error
    rather than at the end of the data (cheap: one call per scan, not per entry)."""
    try:
        it.status()
    except Exception as exc:
        raise RocksDBCorruptionError(
            f"RocksDB could not read the state's files: {exc}. The worker-local database is "
            "damaged: this batch fails, and its retry restores the state from the checkpoint "
            "(a damaged local copy is never reused)"
        ) from exc
