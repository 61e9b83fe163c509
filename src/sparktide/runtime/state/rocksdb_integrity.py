"""RocksDB reads that never accept damaged files silently.

RocksDB keeps a checksum of every block of its SST files. A point read (``db[key]``,
``db.get``) of a damaged block raises ``Corruption: block checksum mismatch``; an iterator that
meets one only stops (``valid()`` turns false, as at the end of the data), so a scan that
does not ask would read a damaged database as a shorter one. Every scan of keyed state and
timers ends with :func:`check_scan`, which raises :class:`RocksDBCorruptionError` when the
iterator stopped on an error. Databases are opened with ``paranoid_checks`` (RocksDB checks
its files when it opens them) and reads verify checksums (:func:`verified_reads`).
:func:`is_corruption` tells such a failure from others (a point read raises a plain
``Exception`` whose message starts with ``Corruption:``), wherever it was raised from.

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

__all__ = [
    "RocksDBCorruptionError",
    "check_scan",
    "corruption_of",
    "is_corruption",
    "verified_reads",
]


class RocksDBCorruptionError(RuntimeError):
    """A RocksDB read met damaged files (a checksum mismatch, a truncated or missing file)."""


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from or while handling, is RocksDB
    reporting damaged files: a :class:`RocksDBCorruptionError`, or RocksDB's own
    ``Corruption: ...`` (a point read's checksum mismatch, a damaged file at open).

    >>> is_corruption(Exception("Corruption: block checksum mismatch: ... in /db/000009.sst"))
    True
    >>> try:
    ...     try:
    ...         raise RocksDBCorruptionError("damaged")
    ...     except RocksDBCorruptionError as inner:
    ...         raise ValueError("while reading the state") from inner
    ... except ValueError as outer:
    ...     is_corruption(outer), is_corruption(ValueError("Corruption: a user's own error"))
    (True, False)
    """
    return corruption_of(exc) is not None


def corruption_of(exc: BaseException) -> BaseException | None:
    """The innermost exception of ``exc``'s chain (causes and contexts) that reports damaged
    files (its message names the file, as RocksDB wrote it); ``None``: not a corruption."""
    found: BaseException | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RocksDBCorruptionError) or _rocksdb_corruption(current):
            found = current
        current = current.__cause__ or current.__context__
    return found


def _rocksdb_corruption(exc: BaseException) -> bool:
    """RocksDB's own report (rocksdict raises a plain ``Exception`` with RocksDB's status):
    not a user's exception that happens to say so."""
    return type(exc) is Exception and str(exc).startswith("Corruption:")


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
        raise RocksDBCorruptionError(f"RocksDB could not read the state's files: {exc}") from exc
