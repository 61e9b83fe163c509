"""Restore a key-group range from the RocksDB checkpoints of another parallelism (rescaling).

Every keyed column family starts its store keys with the 2-byte key-group prefix
(:mod:`~sparktide.runtime.state.rocksdb_layout`), so the entries of a key-group range are one
contiguous range of each column family. :func:`restore_key_groups` rebuilds the database of a
new subtask from the checkpoints of the old subtasks whose ranges overlap it, as Flink's
incremental restore with rescaling does: the checkpoint that overlaps most is restored whole
and clipped (a range delete below and above the target range in every keyed column family),
then the entries in range of each other overlapping checkpoint are copied in (write batches
from a temporary restore of it). A single checkpoint whose range is the target range is
restored as is.

>>> import tempfile
>>> from rocksdict import Options, Rdict
>>> from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
>>> tmp = tempfile.mkdtemp()
>>> sources = []
>>> for subtask, key_groups in enumerate([KeyGroupRange(0, 63), KeyGroupRange(64, 127)]):
...     db = Rdict(f"{tmp}/db{subtask}", Options(raw_mode=True))
...     for kg in key_groups:
...         db[kg.to_bytes(2, "big") + b"key"] = b"%d" % kg
...     storage = RocksDBCheckpointStorage(f"{tmp}/ckpt/{subtask}")
...     _ = storage.snapshot(db, 1, f"{tmp}/stage{subtask}")
...     db.close()
...     sources.append(CheckpointSource(storage, 1, key_groups))
>>> restored = restore_key_groups(sources, KeyGroupRange(32, 95), f"{tmp}/new")
>>> keys = [int.from_bytes(k[:2], "big") for k in restored.db.keys()]
>>> (min(keys), max(keys), len(keys))
(32, 95, 64)
>>> restored.db.close()
"""

from __future__ import annotations

import itertools
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.rocksdb_checkpoint import (
    RestoredDatabase,
    RocksDBCheckpointStorage,
    open_rdict,
)
from sparktide.runtime.state.rocksdb_integrity import check_scan
from sparktide.runtime.state.rocksdb_layout import KEY_GROUP_PREFIX_BYTES, key_group_bounds

if TYPE_CHECKING:
    from rocksdict import Rdict

__all__ = ["CheckpointSource", "restore_key_groups"]

_BATCH = 10_000
_AFTER_ALL_KEY_GROUPS = b"\xff" * (KEY_GROUP_PREFIX_BYTES + 1)
"""A store key above every key-group prefix (key groups are below 2**15)."""


@dataclass(frozen=True)
class CheckpointSource:
    """The checkpoint ``checkpoint_id`` in ``storage`` of the subtask that owned
    ``key_groups``."""

    storage: RocksDBCheckpointStorage
    checkpoint_id: int
    key_groups: KeyGroupRange


def _every_family(name: str) -> bool:
    return True


def restore_key_groups(
    sources: Sequence[CheckpointSource],
    key_groups: KeyGroupRange,
    directory: str,
    open_db: Callable[[str], Rdict] = open_rdict,
    keyed: Callable[[str], bool] | None = None,
) -> RestoredDatabase:
    """The database of ``key_groups`` rebuilt in ``directory`` from the ``sources`` that
    overlap it (see the module docstring). ``keyed(name)``: whether column family ``name``
    holds key-group prefixed keys (default: every one, as the layout has it; a family that
    does not is taken from the base checkpoint as it is). The
    result's ``manifest`` is the base checkpoint's (what its SSTs are; it is in another
    storage, so the next checkpoint of the new subtask uploads them once).

    Sources whose ranges overlap each other are refused (a key group belongs to one
    subtask), and so is a target range the sources do not cover entirely.
    """
    is_keyed = _every_family if keyed is None else keyed
    overlapping = [s for s in sources if len(s.key_groups.intersection(key_groups))]
    _check_cover(overlapping, key_groups)
    overlapping.sort(key=lambda s: -len(s.key_groups.intersection(key_groups)))
    base, others = overlapping[0], overlapping[1:]
    restored = base.storage.restore(base.checkpoint_id, directory, open_db)
    if base.key_groups == key_groups:
        return restored
    db = restored.db
    begin, end = key_group_bounds(key_groups)
    try:
        for name in _families(directory):
            if is_keyed(name):
                family = db.get_column_family(name)
                family.delete_range(b"", begin)
                family.delete_range(end, _AFTER_ALL_KEY_GROUPS)
        for source in others:
            _copy_range(source, key_groups, db, directory, open_db, is_keyed)
    except BaseException:
        db.close()
        raise
    return restored


def _families(directory: str) -> list[str]:
    from rocksdict import Options, Rdict

    names: list[str] = Rdict.list_cf(directory, Options(raw_mode=True))
    return names


def _copy_range(
    source: CheckpointSource,
    key_groups: KeyGroupRange,
    target: Rdict,
    directory: str,
    open_db: Callable[[str], Rdict],
    is_keyed: Callable[[str], bool],
) -> None:
    """Write the entries of ``key_groups`` of every keyed column family of ``source`` into
    ``target``."""
    from rocksdict import Options, WriteBatch

    scratch = f"{directory}.rescale-{uuid.uuid4().hex[:12]}"
    begin, end = key_group_bounds(key_groups.intersection(source.key_groups))
    other = source.storage.restore(source.checkpoint_id, scratch, open_db).db
    try:
        existing = set(_families(directory))
        for name in _families(scratch):
            if not is_keyed(name):
                continue
            if name not in existing:
                target.create_column_family(name, Options(raw_mode=True))
            handle = target.get_column_family_handle(name)
            batch = WriteBatch(raw_mode=True)
            for key, value in _scan_from(other.get_column_family(name), begin):
                if not isinstance(key, bytes):
                    raise TypeError(
                        f"column family {name!r} of {scratch} gave a {type(key).__name__} key; "
                        "the databases of keyed state are opened in raw mode "
                        "(Options(raw_mode=True)): pass an open_db that does so"
                    )
                if key >= end:
                    break
                batch.put(key, value, handle)
                if len(batch) >= _BATCH:
                    target.write(batch)
                    batch = WriteBatch(raw_mode=True)
            if len(batch):
                target.write(batch)
    finally:
        other.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _scan_from(cf: Rdict, begin: bytes) -> Iterator[tuple[object, object]]:
    """The ``(key, value)`` entries of ``cf`` from ``begin`` on; damaged files raise
    (:func:`~sparktide.runtime.state.rocksdb_integrity.check_scan`)."""
    it = cf.iter()
    it.seek(begin)
    while it.valid():
        yield it.key(), it.value()
        it.next()
    check_scan(it)


def _check_cover(sources: Sequence[CheckpointSource], key_groups: KeyGroupRange) -> None:
    ranges = sorted((s.key_groups.start, s.key_groups.end) for s in sources)
    for (_, end), (start, _) in itertools.pairwise(ranges):
        if start <= end:
            raise ValueError(
                f"the checkpoints to restore key groups {key_groups} from overlap ({ranges}); "
                "pass the checkpoints of one job's subtasks, one per key-group range"
            )
    covered = sum(len(KeyGroupRange(s, e).intersection(key_groups)) for s, e in ranges)
    if covered != len(key_groups):
        raise ValueError(
            f"the checkpoints given cover {covered} of the {len(key_groups)} key groups of "
            f"{key_groups} (their ranges: {ranges}); pass the checkpoint of every subtask "
            "whose range overlaps it"
        )
