"""A worker-local database per subtask: reused in memory, reused on disk, or restored."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_local import (
    LocalDatabases,
    OpenOutcome,
    SubtaskSlot,
)


@pytest.fixture
def storage(tmp_path: Path) -> RocksDBCheckpointStorage:
    return RocksDBCheckpointStorage(str(tmp_path / "ckpt"))


def slot_of(tmp_path: Path, subtask: int = 0) -> SubtaskSlot:
    return SubtaskSlot(str(tmp_path / "ckpt"), "stage-1/window", subtask)


def batch(
    dbs: LocalDatabases,
    slot: SubtaskSlot,
    storage: RocksDBCheckpointStorage,
    version: int,
    writes: dict[bytes, bytes],
) -> OpenOutcome:
    """One micro-batch: open at the previous version, write, checkpoint, commit."""
    local = dbs.open(slot, version - 1 if version > 1 else None, storage)
    for k, v in writes.items():
        local.db[k] = v
    dbs.checkpoint(local, version, storage)
    storage.complete(version)
    return local.outcome


def held_directories(tmp_path: Path, base: str = "local") -> list[str]:
    return sorted(p.name for p in (tmp_path / base).rglob("*") if p.name.startswith(("v", "work-")))


def test_a_worker_keeps_its_database_in_memory_across_batches(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    dbs = LocalDatabases(str(tmp_path / "local"))
    slot = slot_of(tmp_path)
    outcomes = [batch(dbs, slot, storage, v, {b"k%d" % v: b"v"}) for v in range(1, 5)]
    assert outcomes == [OpenOutcome.CREATED] + [OpenOutcome.REUSED_IN_MEMORY] * 3
    local = dbs.open(slot, 4, storage)
    assert dict(local.db.items()) == {b"k%d" % v: b"v" for v in range(1, 5)}
    # older local copies are removed: the copy at 4 and the live directory stay
    assert dbs.stats.count(OpenOutcome.REUSED_IN_MEMORY) == 4
    assert len([n for n in held_directories(tmp_path) if n.startswith("v")]) <= 2
    dbs.close_all()


def test_a_batch_that_failed_after_writing_is_not_reused_from_memory(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    dbs = LocalDatabases(str(tmp_path / "local"))
    slot = slot_of(tmp_path)
    batch(dbs, slot, storage, 1, {b"a": b"1"})
    local = dbs.open(slot, 1, storage)
    local.db[b"uncommitted"] = b"x"  # the batch fails here: no checkpoint
    replay = dbs.open(slot, 1, storage)
    assert replay.outcome is OpenOutcome.REUSED_ON_DISK
    assert dict(replay.db.items()) == {b"a": b"1"}
    dbs.close_all()


def test_the_next_process_reuses_the_local_copy_on_disk(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    first = LocalDatabases(str(tmp_path / "local"))
    slot = slot_of(tmp_path)
    batch(first, slot, storage, 1, {b"a": b"1"})
    batch(first, slot, storage, 2, {b"b": b"2"})
    first.close(slot)  # the worker goes away and releases its directory
    second = LocalDatabases(str(tmp_path / "local"))
    assert batch(second, slot, storage, 3, {b"c": b"3"}) is OpenOutcome.REUSED_ON_DISK
    # the reused copy keeps sharing the SSTs checkpoint 2 uploaded
    assert storage.manifest(2).shared_paths() < storage.manifest(3).shared_paths()
    local = second.open(slot, 3, storage)
    assert dict(local.db.items()) == {b"a": b"1", b"b": b"2", b"c": b"3"}
    assert local.outcome is OpenOutcome.REUSED_IN_MEMORY
    second.close_all()


def test_a_batch_run_elsewhere_makes_the_local_database_stale(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    # two workers on one machine (the same base directory): the second finds the first's
    # directory locked, works in another one and links the first's local copy
    a = LocalDatabases(str(tmp_path / "local"))
    b = LocalDatabases(str(tmp_path / "local"))
    slot = slot_of(tmp_path)
    batch(a, slot, storage, 1, {b"a": b"1"})
    assert batch(b, slot, storage, 2, {b"b": b"2"}) is OpenOutcome.REUSED_ON_DISK
    assert b.stats.lock_conflicts == 1
    assert storage.manifest(1).shared_paths() < storage.manifest(2).shared_paths()
    stale = a.open(slot, 2, storage)  # a holds version 1: a version mismatch, b's copy
    assert stale.outcome is OpenOutcome.REUSED_ON_DISK
    assert dict(stale.db.items()) == {b"a": b"1", b"b": b"2"}
    a.close_all()
    shutil.rmtree(tmp_path / "local")  # no local copy anywhere: from the checkpoint's files
    stale = a.open(slot, 2, storage)
    assert stale.outcome is OpenOutcome.RESTORED
    assert dict(stale.db.items()) == {b"a": b"1", b"b": b"2"}
    a.close_all()
    local = b.open(slot, 2, storage)
    assert local.outcome is OpenOutcome.REUSED_IN_MEMORY
    assert dict(local.db.items()) == {b"a": b"1", b"b": b"2"}
    b.close_all()


_HOLD_LOCK = textwrap.dedent(
    """
    import sys
    from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
    from sparktide.runtime.state.rocksdb_local import LocalDatabases, SubtaskSlot

    base, location = sys.argv[1], sys.argv[2]
    dbs = LocalDatabases(base)
    slot = SubtaskSlot(location, "stage-1/window", 0)
    local = dbs.open(slot, 1, RocksDBCheckpointStorage(location))
    print(local.root, flush=True)
    sys.stdin.read()  # hold the lock until the parent closes stdin
    """
)


def test_a_directory_locked_by_a_live_process_is_never_opened_twice_until_it_dies(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    slot = slot_of(tmp_path)
    first = LocalDatabases(str(tmp_path / "local"))
    batch(first, slot, storage, 1, {b"a": b"1"})
    first.close_all()
    script = tmp_path / "hold.py"
    script.write_text(_HOLD_LOCK)
    child = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "local"), slot.location],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        child_root = child.stdout.readline().strip()
        with open(os.path.join(child_root, "LOCK")) as f:
            assert f.read().strip() == str(child.pid)
        dbs = LocalDatabases(str(tmp_path / "local"))
        local = dbs.open(slot, 1, storage)
        # another directory, the holder's local copy linked (a copy never changes)
        assert local.outcome is OpenOutcome.REUSED_ON_DISK
        assert local.root != child_root and local.root.startswith(child_root)
        assert dbs.stats.lock_conflicts == 1
        assert dict(local.db.items()) == {b"a": b"1"}
        dbs.close_all()
        # the holder is killed: its directory (and the local copy in it) is taken over
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
        after = LocalDatabases(str(tmp_path / "local"))
        local = after.open(slot, 1, storage)
        assert (local.root, local.outcome) == (child_root, OpenOutcome.REUSED_ON_DISK)
        assert after.stats.stale_locks == 1 and after.stats.lock_conflicts == 0
        assert dict(local.db.items()) == {b"a": b"1"}
        after.close_all()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()


def test_a_stale_lock_of_a_dead_process_is_taken_over(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    slot = slot_of(tmp_path)
    first = LocalDatabases(str(tmp_path / "local"))
    batch(first, slot, storage, 1, {b"a": b"1"})
    root = first.open(slot, 1, storage).root
    first.close_all()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    Path(root, "LOCK").write_text(dead.stdout)  # a worker that died holding the directory
    dbs = LocalDatabases(str(tmp_path / "local"))
    local = dbs.open(slot, 1, storage)
    assert local.root == root
    assert local.outcome is OpenOutcome.REUSED_ON_DISK
    assert dbs.stats.stale_locks == 1 and dbs.stats.lock_conflicts == 0
    assert Path(root, "LOCK").read_text().strip() == str(os.getpid())
    dbs.close_all()


def test_a_local_copy_of_another_attempt_is_not_reused(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    slot = slot_of(tmp_path)
    a = LocalDatabases(str(tmp_path / "local-a"))
    batch(a, slot, storage, 1, {b"a": b"1"})
    local = a.open(slot, 1, storage)
    local.db[b"attempt"] = b"a"
    a.checkpoint(local, 2, storage)  # attempt a of batch 2, never committed
    b = LocalDatabases(str(tmp_path / "local-b"))
    other = b.open(slot, 1, storage)
    other.db[b"attempt"] = b"b"
    b.checkpoint(other, 2, storage)  # attempt b replaces it and is committed
    storage.complete(2)
    b.close_all()
    reopened = a.open(slot, 2, storage)
    assert reopened.outcome is OpenOutcome.RESTORED
    assert reopened.db[b"attempt"] == b"b"
    a.close_all()


def test_stats_and_bad_arguments(tmp_path: Path, storage: RocksDBCheckpointStorage) -> None:
    dbs = LocalDatabases(str(tmp_path / "local"))
    batch(dbs, slot_of(tmp_path), storage, 1, {b"a": b"1"})
    dbs.open(slot_of(tmp_path), 1, storage)
    stats = dbs.stats.to_json()
    assert stats["created"] == {"count": 1, "seconds": stats["created"]["seconds"]}  # type: ignore[index]
    assert stats["reused_in_memory"]["count"] == 1  # type: ignore[index]
    assert stats["restored"]["count"] == 0  # type: ignore[index]
    dbs.close_all()
    with pytest.raises(ValueError, match="subtask must be an int >= 0"):
        SubtaskSlot("x", "op", -1)
    with pytest.raises(TypeError, match="operator must be a non-empty str"):
        SubtaskSlot("x", "", 0)
    with pytest.raises(ValueError, match="no RocksDB checkpoint 9"):
        dbs.open(slot_of(tmp_path), 9, storage)


def test_a_slot_names_its_storage_under_the_checkpoint_location(tmp_path: Path) -> None:
    slot = SubtaskSlot(str(tmp_path / "ckpt"), "stage-1/window", 3)
    assert slot.storage(retain=4).retain == 4
    location = slot.storage().location
    assert location.startswith(str(tmp_path / "ckpt" / "rocksdb")) and location.endswith("/3")
    other = SubtaskSlot(str(tmp_path / "ckpt"), "stage-1/window", 4).storage().location
    assert other != location
    dbs = LocalDatabases(str(tmp_path / "local"))
    assert batch(dbs, slot, slot.storage(), 1, {b"a": b"1"}) is OpenOutcome.CREATED
    assert slot.storage().completed_ids() == [1]
    dbs.close_all()


# ---------------------------------------------------------------------- damaged local copies


def _inodes(root: Path) -> dict[tuple[int, int], str]:
    return {
        (s.st_dev, s.st_ino): str(p) for p in root.rglob("*") if p.is_file() for s in [p.stat()]
    }


def _digests(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _flip_first_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    with open(path, "r+b") as f:  # in place: every hard link of the file sees it
        f.write(bytes(data[:1]))


def _flip_last_byte(path: Path) -> None:
    with open(path, "r+b") as f:  # the SST's footer (its magic number)
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))


def _scan(db) -> dict[bytes, bytes]:
    """Every entry of ``db``, read as the state backend scans (a damaged block raises)."""
    from sparktide.runtime.state.rocksdb_integrity import check_scan

    it = db.iter()
    it.seek_to_first()
    out = {}
    while it.valid():
        out[it.key()] = it.value()
        it.next()
    check_scan(it)
    del it
    return out


def _read_fails_and_discards(
    dbs: LocalDatabases, slot: SubtaskSlot, local, copies: list[Path]
) -> None:
    """A read of ``local`` (a local copy with an SST data block damaged, opened without
    hashing its SSTs) fails loudly; the database and every local copy are then discarded."""
    from sparktide.runtime.state.rocksdb_integrity import RocksDBCorruptionError

    with pytest.raises(RocksDBCorruptionError, match="block checksum mismatch") as caught:
        _scan(local.db)
    error = dbs.discard_damaged(slot, caught.value, "stage 1 subtask 0")
    assert isinstance(error, RocksDBCorruptionError)
    text = str(error)
    assert text.startswith("stage 1 subtask 0: RocksDB found damaged files")
    assert local.directory in text and ".sst" in text  # the directory and the file
    assert "restores the state from the checkpoint" in text
    assert all(str(c) in text for c in copies)
    assert not os.path.exists(local.directory)
    assert dbs.discard_damaged(slot, ValueError("another failure"), "x") is None


def _fill(local, n: int = 2000, tag: bytes = b"") -> dict[bytes, bytes]:
    rows = {b"key-%05d" % i: b"value-%05d" % i + tag for i in range(n)}
    for k, v in rows.items():
        local.db[k] = v
    return rows


def _checkpoint_one(
    tmp_path: Path, storage: RocksDBCheckpointStorage, where: str
) -> tuple[object, dict[bytes, bytes]]:
    """A subtask's database filled and checkpointed as version 1 (completed) by a process
    whose databases live under ``tmp_path / where``, then closed; its slot and rows."""
    slot = slot_of(tmp_path)
    dbs = LocalDatabases(str(tmp_path / where))
    local = dbs.open(slot, None, storage)
    rows = _fill(local)
    dbs.checkpoint(local, 1, storage)
    storage.complete(1)
    dbs.close_all()
    return slot, rows


def test_a_restored_database_shares_no_file_with_the_checkpoint(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    slot, rows = _checkpoint_one(tmp_path, storage, "first")
    # another machine: no local copy, the checkpoint's files
    other = LocalDatabases(str(tmp_path / "other"))
    restored = other.open(slot, 1, storage)
    assert restored.outcome is OpenOutcome.RESTORED
    # the working database and the copy it leaves share no inode with the checkpoint
    other.checkpoint(restored, 2, storage)
    storage.complete(2)
    checkpoint = tmp_path / "ckpt"
    assert not set(_inodes(tmp_path / "other")) & set(_inodes(checkpoint))
    before = _digests(checkpoint)
    local_ssts = {(s.st_dev, s.st_ino): p for p in (tmp_path / "other").rglob("*.sst")
                  for s in [p.stat()]}  # fmt: skip
    for sst in local_ssts.values():  # a stray write to each local SST file (once per inode)
        _flip_first_byte(sst)
        sst.chmod(0o600)
    assert _digests(checkpoint) == before
    other.close_all()
    again = LocalDatabases(str(tmp_path / "other"))
    # sizes unchanged: opened (SST contents are not hashed at open), the first read fails
    reopened = again.open(slot, 2, storage)
    assert reopened.outcome is OpenOutcome.REUSED_ON_DISK
    _read_fails_and_discards(again, slot, reopened, list((tmp_path / "other").rglob("v2")))
    retry = again.open(slot, 2, storage)  # the damaged copy is never used again
    assert retry.outcome is OpenOutcome.RESTORED_OVER_DAMAGED_COPY
    assert _scan(retry.db) == rows
    assert _digests(checkpoint) == before
    again.close_all()


@pytest.mark.parametrize("damage", ["flip", "footer", "manifest", "truncate", "delete"])
def test_a_damaged_local_copy_is_not_reused(
    tmp_path: Path, storage: RocksDBCheckpointStorage, damage: str
) -> None:
    # the next batch runs in another process on this machine
    slot, rows = _checkpoint_one(tmp_path, storage, "local")
    [copy] = (tmp_path / "local").rglob("v1")
    sst = sorted(copy.glob("*.sst"))[0]
    size = sst.stat().st_size
    before = _digests(tmp_path / "ckpt")
    if damage == "flip":  # a data block: only a read can tell
        _flip_first_byte(sst)
    elif damage == "footer":  # RocksDB reads it at open (paranoid_checks)
        _flip_last_byte(sst)
    elif damage == "manifest":  # a file RocksDB opens the database by: digested at open
        _flip_first_byte(next(copy.glob("MANIFEST-*")))
    elif damage == "truncate":
        with open(sst, "r+b") as f:
            f.truncate(size // 2)
    else:
        sst.unlink()
    nxt = LocalDatabases(str(tmp_path / "local"))
    opened = nxt.open(slot, 1, storage)
    if damage == "flip":
        assert sst.stat().st_size == size
        assert opened.outcome is OpenOutcome.REUSED_ON_DISK
        _read_fails_and_discards(nxt, slot, opened, [copy])
        opened = nxt.open(slot, 1, storage)  # the batch's next attempt
    assert opened.outcome is OpenOutcome.RESTORED_OVER_DAMAGED_COPY
    assert nxt.stats.to_json()["restored_over_damaged_copy"]["count"] == 1
    assert _scan(opened.db) == rows
    assert _digests(tmp_path / "ckpt") == before  # the checkpoint is untouched
    assert not copy.exists()  # the damaged copy is gone: never tried again
    nxt.checkpoint(opened, 2, storage)
    storage.complete(2)
    nxt.close_all()
    last = LocalDatabases(str(tmp_path / "local"))
    assert last.open(slot, 2, storage).outcome is OpenOutcome.REUSED_ON_DISK
    last.close_all()


def test_a_checksum_failure_while_reading_fails_loudly_and_the_retry_restores(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    from sparktide.core.state import ValueStateDescriptor
    from sparktide.runtime.keygroups import KeyGroupRange
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
    from sparktide.runtime.state.rocksdb_integrity import RocksDBCorruptionError
    from sparktide.runtime.state.rocksdb_memory import open_bounded

    kw = dict(max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
    count = ValueStateDescriptor("count", None)

    def entries(db) -> int:
        backend = RocksDBKeyedStateBackend.attach(db, **kw)
        try:
            backend.get_partitioned_state(count)
            return sum(len(per["count"]) for per in backend.snapshot_state()[1].values())
        finally:
            backend.dispose()

    slot = slot_of(tmp_path)
    dbs = LocalDatabases(str(tmp_path / "local"), open_bounded)
    local = dbs.open(slot, None, storage)
    backend = RocksDBKeyedStateBackend.attach(local.db, **kw)
    state = backend.get_partitioned_state(count)
    for i in range(3000):
        backend.set_current_key(f"user-{i}")
        state.update(i)
    backend.dispose()
    dbs.checkpoint(local, 1, storage)  # flushed: its data blocks never read since
    storage.complete(1)
    before = _digests(tmp_path / "ckpt")
    live = dbs.open(slot, 1, storage)  # the next batch: reused in memory, not read again
    assert live.outcome is OpenOutcome.REUSED_IN_MEMORY
    # a stray write to the state's file in the working directory (a hard link of the local
    # copy's: the copy is damaged too)
    _flip_first_byte(max(Path(live.directory).glob("*.sst"), key=lambda p: p.stat().st_size))
    with pytest.raises(RocksDBCorruptionError, match="block checksum mismatch") as caught:
        entries(live.db)
    assert _digests(tmp_path / "ckpt") == before
    error = dbs.discard_damaged(slot, caught.value, "stage 1 subtask 0")
    assert error is not None and live.directory in str(error)
    retry = dbs.open(slot, 1, storage)  # the batch again: not the damaged files
    assert retry.outcome is OpenOutcome.RESTORED_OVER_DAMAGED_COPY
    assert entries(retry.db) == 3000
    dbs.close_all()


def test_a_full_checkpoint_never_uploads_a_damaged_local_sst(
    tmp_path: Path, storage: RocksDBCheckpointStorage
) -> None:
    from sparktide.runtime.state.rocksdb_integrity import RocksDBCorruptionError

    slot, rows = _checkpoint_one(tmp_path, storage, "local")
    [copy] = (tmp_path / "local").rglob("v1")
    sst = sorted(copy.glob("*.sst"))[0]
    _flip_first_byte(sst)  # a data block no read meets before the checkpoint
    nxt = LocalDatabases(str(tmp_path / "local"))
    opened = nxt.open(slot, 1, storage)
    assert opened.outcome is OpenOutcome.REUSED_ON_DISK
    opened.db[b"new"] = b"row"
    # a full checkpoint uploads every file again: the damaged SST would become the
    # checkpoint's; its digest is not the one recorded for it, so it is refused
    with pytest.raises(RocksDBCorruptionError, match=rf"{sst.name}: .*damaged") as caught:
        nxt.checkpoint(opened, 2, storage, full=True)
    assert storage.pending_ids() == [] and storage.completed_ids() == [1]
    assert nxt.discard_damaged(slot, caught.value, "stage 1 subtask 0") is not None
    retry = nxt.open(slot, 1, storage)
    assert retry.outcome is OpenOutcome.RESTORED_OVER_DAMAGED_COPY
    retry.db[b"new"] = b"row"
    nxt.checkpoint(retry, 2, storage, full=True)
    storage.complete(2)
    nxt.close_all()
    elsewhere = LocalDatabases(str(tmp_path / "elsewhere"))
    assert _scan(elsewhere.open(slot, 2, storage).db) == {**rows, b"new": b"row"}
    elsewhere.close_all()
