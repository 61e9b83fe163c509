"""Every state file of a checkpoint is bound to its slot: the manifest records, per file, its
digest, size, checkpoint version, operator, subtask and key-group range, and a restore refuses
a file of the same job moved into another slot (another subtask's, another version's) or
changed in any way, naming the file and what differs."""

from __future__ import annotations

import shutil

import pytest

from sparktide.runtime.keygroups import KeyGroupRange, compute_key_group_range_for_operator_index
from sparktide.spark.changelog import rebuild
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_meta import BatchCommit

MAXP = 16
META = {"count": {"kind": "value", "ttl": False}}
PARTS = {"valves": b"v", "watermarks": b"w"}


def _snapshot(kgs: KeyGroupRange, version: int):
    # one entry per key group of the range, valued by the version: any mix-up shows
    flat = {kg: {(0, "count", f"k{kg}", None): version} for kg in range(kgs.start, kgs.end + 1)}
    return rebuild("op", MAXP, kgs, META, flat)


def _store(tmp_path, versions: int = 2, snapshot_every: int = 1, offset: int = 0):
    """Versions ``0 .. versions - 1`` of a keyed stage with two subtasks."""
    store = CheckpointStore(str(tmp_path), None, snapshot_every=snapshot_every)
    for version in range(versions):
        previous = store.commit_info(version - 1) if version else None
        for i in range(2):
            kgs = compute_key_group_range_for_operator_index(MAXP, 2, i)
            plan = store.plan_chain(previous, 0, i, 2, version)
            store.write_version(
                version, 0, i, plan, _snapshot(kgs, version + offset), {}, PARTS, operator="uid:w"
            )
        store.commit(version, BatchCommit(processing_time=version, parallelism={0: 2}))
    return store


def _restore(store: CheckpointStore, version: int, subtask: int):
    kgs = compute_key_group_range_for_operator_index(MAXP, 2, subtask)
    return store.restore_range(store.commit_info(version), 0, subtask, MAXP, kgs)


def test_the_manifest_records_each_file_and_its_slot(tmp_path) -> None:
    store = _store(tmp_path)
    files = store.commit_info(1).files
    record = files["state/1/stage-0/sub-1.bin"]
    assert record.digest.startswith("blake2b:") and record.size > 0
    assert (record.version, record.stage, record.subtask) == (1, 0, 1)
    assert record.operator == "uid:w" and record.key_groups == (8, 15)
    assert "splits/1.bin" not in files  # no split file written by this store
    loaded = _restore(store, 1, 1)
    assert loaded.snapshot().state[8]["count"] == [("k8", None, 1)]


def test_another_subtasks_file_is_refused(tmp_path) -> None:
    store = _store(tmp_path)
    state = tmp_path / "state" / "1" / "stage-0"
    shutil.copy(state / "sub-0.bin", state / "sub-1.bin")
    with pytest.raises(CheckpointError) as info:
        _restore(store, 1, 1)
    message = str(info.value)
    assert "sub-1.bin" in message
    assert "its header says subtask 0 where the manifest expects 1" in message
    assert "key_groups [0, 7] where the manifest expects [8, 15]" in message


def test_an_older_versions_file_is_refused(tmp_path) -> None:
    store = _store(tmp_path)
    shutil.copy(
        tmp_path / "state" / "0" / "stage-0" / "sub-0.bin",
        tmp_path / "state" / "1" / "stage-0" / "sub-0.bin",
    )
    expected = r"sub-0\.bin.*version 0 where the manifest expects 1"
    with pytest.raises(CheckpointError, match=expected):
        _restore(store, 1, 0)


def test_an_older_changelog_is_refused(tmp_path) -> None:
    store = _store(tmp_path, versions=3, snapshot_every=5)
    state = tmp_path / "state"
    shutil.copy(state / "1" / "stage-0" / "sub-0.log", state / "2" / "stage-0" / "sub-0.log")
    expected = r"sub-0\.log.*version 1 where the manifest expects 2"
    with pytest.raises(CheckpointError, match=expected):
        _restore(store, 2, 0)


def test_a_file_of_another_job_with_valid_checksums_is_refused(tmp_path) -> None:
    store = _store(tmp_path / "a")
    _store(tmp_path / "b", offset=100)  # the same slots, other contents
    same_slot = ("state", "1", "stage-0", "sub-0.bin")
    (tmp_path / "a").joinpath(*same_slot).write_bytes(
        (tmp_path / "b").joinpath(*same_slot).read_bytes()
    )
    with pytest.raises(CheckpointError, match=r"sub-0\.bin: this is not the file the manifest"):
        _restore(store, 1, 0)


def test_a_truncated_or_changed_file_is_refused(tmp_path) -> None:
    store = _store(tmp_path)
    path = tmp_path / "state" / "1" / "stage-0" / "sub-0.bin"
    good = path.read_bytes()
    path.write_bytes(good + b"\0")
    with pytest.raises(CheckpointError, match=rf"has {len(good) + 1} bytes where the manifest"):
        _restore(store, 1, 0)
    path.write_bytes(good[:-1])
    with pytest.raises(CheckpointError, match=r"sub-0\.bin.*truncated"):
        _restore(store, 1, 0)
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # same size, other bytes
    with pytest.raises(CheckpointError, match=r"sub-0\.bin.*corrupt"):
        _restore(store, 1, 0)
    path.write_bytes(good)
    assert _restore(store, 1, 0).snapshot().state[0]["count"] == [("k0", None, 1)]
