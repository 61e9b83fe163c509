"""Incremental RocksDB checkpoints: what is uploaded, shared, released and restored."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rocksdict import Options, Rdict

from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_checkpoint_manifest import (
    FileKind,
    RocksDBCheckpointError,
    RocksDBManifest,
)

CFS = ("default", "a", "b")


def open_db(path: str | Path, auto_compactions: bool = True) -> Rdict:
    def options() -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        opts.set_disable_auto_compactions(not auto_compactions)
        return opts

    opts = options()
    families = {name: options() for name in CFS if name != "default"}
    return Rdict(str(path), opts, column_families=families)


def contents(db: Rdict) -> dict[str, dict[bytes, bytes]]:
    return {name: dict(db.get_column_family(name).items()) for name in CFS}


def write(db: Rdict, model: dict[str, dict[bytes, bytes]], rng: random.Random, n: int) -> None:
    """``n`` random puts and deletes over the column families, mirrored in ``model``."""
    families = {name: db.get_column_family(name) for name in CFS}
    for _ in range(n):
        name = rng.choice(CFS)
        cf = families[name]
        key = b"k%05d" % rng.randrange(2000)
        if rng.random() < 0.2:
            cf.delete(key)
            model[name].pop(key, None)
        else:
            value = rng.randbytes(rng.randrange(1, 40))
            cf[key] = value
            model[name][key] = value


def stored_shared(root: Path) -> set[str]:
    folder = root / "shared"
    return {f"shared/{p.name}" for p in folder.iterdir()} if folder.exists() else set()


def check_storage(storage: RocksDBCheckpointStorage, root: Path | None) -> None:
    """The storage's invariants: the stored shared files and private folders are exactly those
    the manifests present name (``root``: where a local storage keeps them)."""
    manifests = [storage.manifest(i) for i in storage.completed_ids() + storage.pending_ids()]
    shared = {p for m in manifests for p in m.shared_paths()}
    assert set(storage.shared_references()) == shared
    if root is not None:
        assert stored_shared(root) == shared
        private = {p.rsplit("/", 1)[0] for m in manifests for p in m.private_paths()}
        folder = root / "private"
        stored = {f"private/{p.name}" for p in folder.iterdir()} if folder.exists() else set()
        assert stored == private
    assert len(storage.completed_ids()) <= storage.retain


@pytest.mark.parametrize(("seed", "where"), [(1, "path"), (2, "path"), (3, "memory")])
def test_every_retained_checkpoint_restores_its_contents(
    tmp_path: Path, seed: int, where: str
) -> None:
    # random writes, compactions, and checkpoints completed or discarded (a batch that was not
    # committed); "memory": pyarrow's in-memory file system, a storage that is not the local
    # disk (every file is copied, none hard-linked)
    rng = random.Random(seed)
    location = str(tmp_path / "ckpt") if where == "path" else "mock:///ckpt"
    root = tmp_path / "ckpt" if where == "path" else None
    storage = RocksDBCheckpointStorage(location, retain=3)
    assert storage.is_local is (where == "path")
    db = open_db(tmp_path / "db")
    model: dict[str, dict[bytes, bytes]] = {name: {} for name in CFS}
    expected = {}
    base = None
    for version in range(1, 9):
        write(db, model, rng, rng.randrange(1, 400))
        if rng.random() < 0.3:
            db.compact_range(None, None)
        manifest = storage.snapshot(db, version, str(tmp_path / f"stage-{version}"), base=base)
        check_storage(storage, root)
        if version > 1 and rng.random() < 0.25:
            storage.discard(version)
        else:
            storage.complete(version)
            expected[version] = {name: dict(kv) for name, kv in model.items()}
            base = manifest
        check_storage(storage, root)
    db.close()
    assert storage.collect_garbage() == 0
    assert storage.completed_ids() == sorted(expected)[-3:]
    for version in storage.completed_ids():
        restored = storage.restore(version, str(tmp_path / f"restored-{version}"))
        assert contents(restored.db) == expected[version]
        restored.db.close()


def test_uploaded_bytes_grow_with_the_changes_not_the_state(tmp_path: Path) -> None:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"))
    db = open_db(tmp_path / "db", auto_compactions=False)
    rng = random.Random(7)
    keys = 20_000
    cf = db.get_column_family("a")
    for i in range(keys):
        cf[b"key%08d" % i] = rng.randbytes(32)
    first = storage.snapshot(db, 1, str(tmp_path / "stage-1"))
    storage.complete(1)
    assert first.uploaded_bytes == first.total_bytes
    base = first
    for version in range(2, 7):
        for i in rng.sample(range(keys), keys // 100):  # 1% of the keys change
            cf[b"key%08d" % i] = rng.randbytes(32)
        manifest = storage.snapshot(db, version, str(tmp_path / f"stage-{version}"), base=base)
        storage.complete(version)
        assert manifest.uploaded_bytes < 0.1 * manifest.total_bytes, (version, manifest)
        shared = [f for f in manifest.files if f.kind is FileKind.SHARED]
        assert base.files[0] in manifest.files or any(f in base.files for f in shared)
        base = manifest
    db.close()
    restored = storage.restore(6, str(tmp_path / "restored"))
    assert len(list(restored.db.get_column_family("a").keys())) == keys
    restored.db.close()


def test_shared_files_are_deleted_when_no_retained_checkpoint_needs_them(tmp_path: Path) -> None:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"), retain=2)
    root = tmp_path / "ckpt"
    db = open_db(tmp_path / "db", auto_compactions=False)
    db[b"x"] = db[b"y"] = b"1"
    m1 = storage.snapshot(db, 1, str(tmp_path / "s1"))
    storage.complete(1)
    db[b"x"] = db[b"y"] = b"2"  # overlapping ranges: a compaction rewrites both files
    m2 = storage.snapshot(db, 2, str(tmp_path / "s2"), base=m1)
    storage.complete(2)
    assert m1.shared_paths() < m2.shared_paths()  # the first SST is shared, not re-uploaded
    db.compact_range(None, None)  # one new SST replaces both
    m3 = storage.snapshot(db, 3, str(tmp_path / "s3"), base=m2)
    assert not (m3.shared_paths() & m2.shared_paths())
    assert storage.shared_references()[next(iter(m1.shared_paths()))] == 2
    done = storage.complete(3)
    assert done.released == (1,)
    assert done.deleted_files == 0  # checkpoint 2 still references every SST of 1
    assert stored_shared(root) == m2.shared_paths() | m3.shared_paths()
    db[b"z"] = b"3"
    m4 = storage.snapshot(db, 4, str(tmp_path / "s4"), base=m3)
    done = storage.complete(4)
    assert done.released == (2,)
    assert done.deleted_files == len(m2.shared_paths())
    assert stored_shared(root) == m3.shared_paths() | m4.shared_paths()
    assert sorted(p.name for p in (root / "private").iterdir()) == sorted(
        {p.split("/")[1] for p in m3.private_paths() | m4.private_paths()}
    )
    db.close()


def test_a_discarded_checkpoint_releases_its_references(tmp_path: Path) -> None:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"))
    db = open_db(tmp_path / "db", auto_compactions=False)
    db[b"x"] = b"1"
    m1 = storage.snapshot(db, 1, str(tmp_path / "s1"))
    storage.complete(1)
    db[b"y"] = b"2"
    m2 = storage.snapshot(db, 2, str(tmp_path / "s2"), base=m1)
    assert storage.pending_ids() == [2]
    storage.discard(2)
    assert storage.pending_ids() == []
    assert stored_shared(tmp_path / "ckpt") == m1.shared_paths()
    assert not any(
        (tmp_path / "ckpt" / p).exists()
        for p in m2.private_paths() | m2.shared_paths() - m1.shared_paths()
    )
    with pytest.raises(ValueError, match="only a pending checkpoint can be discarded"):
        storage.discard(1)
    # the pending checkpoints a completion subsumes are released too
    m2 = storage.snapshot(db, 2, str(tmp_path / "s2b"), base=m1)
    db[b"z"] = b"3"
    storage.snapshot(db, 3, str(tmp_path / "s3"), base=m1)
    assert storage.complete(3).released == (2,)
    assert storage.pending_ids() == []
    db.close()


def test_taking_an_id_again_replaces_the_pending_checkpoint(tmp_path: Path) -> None:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"))
    db = open_db(tmp_path / "db", auto_compactions=False)
    db[b"x"] = b"1"
    first = storage.snapshot(db, 1, str(tmp_path / "s1"))
    db[b"y"] = b"2"
    second = storage.snapshot(db, 1, str(tmp_path / "s1b"))
    db.close()
    assert storage.manifest(1) == second
    assert not any((tmp_path / "ckpt" / p).exists() for p in first.private_paths())
    storage.complete(1)
    restored = storage.restore(1, str(tmp_path / "r"))
    assert restored.db[b"y"] == b"2"
    restored.db.close()


def _checkpointed(tmp_path: Path) -> tuple[RocksDBCheckpointStorage, RocksDBManifest]:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"))
    db = open_db(tmp_path / "db")
    for i in range(100):
        db.get_column_family("b")[b"%d" % i] = b"v" * 20
    manifest = storage.snapshot(db, 1, str(tmp_path / "s1"))
    storage.complete(1)
    db.close()
    return storage, manifest


@pytest.mark.parametrize("kind", [FileKind.SHARED, FileKind.PRIVATE])
def test_a_missing_file_is_named(tmp_path: Path, kind: FileKind) -> None:
    storage, manifest = _checkpointed(tmp_path)
    victim = next(f for f in manifest.files if f.kind is kind)
    os.remove(tmp_path / "ckpt" / victim.path)
    with pytest.raises(RocksDBCheckpointError, match=f"{victim.path}: missing"):
        storage.restore(1, str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("damage", ["flip", "truncate", "append"])
def test_a_changed_file_is_named(tmp_path: Path, damage: str) -> None:
    storage, manifest = _checkpointed(tmp_path)
    victim = next(f for f in manifest.files if f.kind is FileKind.SHARED)
    path = tmp_path / "ckpt" / victim.path
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        del data[-10:]
    else:
        data += b"x"
    os.remove(path)  # a fresh inode: the restore's hard link must not hide the change
    path.write_bytes(bytes(data))
    what = "its digest" if damage == "flip" else "bytes where the manifest records"
    with pytest.raises(
        RocksDBCheckpointError, match=f"{victim.path}: this is not the file.*{what}"
    ):
        storage.restore(1, str(tmp_path / "r"))


def test_a_manifest_of_another_format_or_with_a_bad_field_is_refused(tmp_path: Path) -> None:
    storage, _ = _checkpointed(tmp_path)
    path = tmp_path / "ckpt" / "completed" / "1.json"
    raw = json.loads(path.read_text())
    path.write_text(json.dumps({**raw, "format_version": 99}))
    with pytest.raises(RocksDBCheckpointError, match="format version 99 is not supported"):
        RocksDBCheckpointStorage(str(tmp_path / "ckpt")).restore(1, str(tmp_path / "r"))
    raw["files"][0]["size"] = "12"
    path.write_text(json.dumps(raw))
    with pytest.raises(RocksDBCheckpointError, match=r"field 'files\[0\].size' must be an int"):
        RocksDBCheckpointStorage(str(tmp_path / "ckpt")).manifest(1)
    with pytest.raises(RocksDBCheckpointError, match="there is no RocksDB checkpoint 5"):
        storage.manifest(5)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retain must be an int >= 1"):
        RocksDBCheckpointStorage(str(tmp_path), retain=0)
    with pytest.raises(TypeError, match="location must be a non-empty str"):
        RocksDBCheckpointStorage("")
    storage, _ = _checkpointed(tmp_path)
    with pytest.raises(ValueError, match="checkpoint_id must be an int >= 0"):
        storage.manifest(-1)
    with pytest.raises(ValueError, match="checkpoint 7 was not taken"):
        storage.complete(7)
    db = open_db(tmp_path / "db")
    with pytest.raises(ValueError, match="already exists"):
        storage.snapshot(db, 2, str(tmp_path / "s1"))
    with pytest.raises(ValueError, match="checkpoint 1 is completed already"):
        storage.snapshot(db, 1, str(tmp_path / "s1b"))
    db.close()


def test_a_uri_location_and_a_pickled_storage_work(tmp_path: Path) -> None:
    import pickle

    storage = pickle.loads(pickle.dumps(RocksDBCheckpointStorage(f"file://{tmp_path}/ckpt")))
    db = open_db(tmp_path / "db")
    db.get_column_family("a")[b"k"] = b"v"
    storage.snapshot(db, 0, str(tmp_path / "s0"))
    db.close()
    storage.complete(0)
    restored = storage.restore(0, str(tmp_path / "r"), verify=False)
    assert contents(restored.db)["a"] == {b"k": b"v"}
    restored.db.close()


_KILLED_MID_CHECKPOINT = textwrap.dedent(
    """
    import os, signal, sys
    from rocksdict import Options, Rdict
    from sparktide.runtime.state import rocksdb_checkpoint as rc

    class DyingStorage(rc.RocksDBCheckpointStorage):
        uploads = 0  # killed right after its argv[3]-th upload

        def upload_file(self, local, folder):
            written = super().upload_file(local, folder)
            DyingStorage.uploads += 1
            if DyingStorage.uploads == int(sys.argv[3]):
                os.kill(os.getpid(), signal.SIGKILL)
            return written

    root, version = sys.argv[1], int(sys.argv[2])
    storage = DyingStorage(root + "/ckpt")
    restored = storage.restore(version - 1, root + f"/db-{version}")
    db = restored.db
    for i in range(500):
        db[b"late%d" % i] = b"x" * 30
    storage.snapshot(db, version, root + f"/stage-{version}", base=restored.manifest)
    """
)


@pytest.mark.parametrize("die_at_upload", [1, 3])
def test_a_process_killed_mid_checkpoint_leaves_the_last_completed_one(
    tmp_path: Path, die_at_upload: int
) -> None:
    storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt"))
    db = open_db(tmp_path / "db")
    db[b"early"] = b"1"
    storage.snapshot(db, 1, str(tmp_path / "s1"))
    storage.complete(1)
    db.close()
    script = tmp_path / "die.py"
    script.write_text(_KILLED_MID_CHECKPOINT)
    child = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "2", str(die_at_upload)], check=False
    )
    assert child.returncode == -signal.SIGKILL
    assert storage.completed_ids() == [1] and storage.pending_ids() == []
    restored = storage.restore(1, str(tmp_path / "r"))
    assert dict(restored.db.items()) == {b"early": b"1"}
    assert storage.collect_garbage() >= 1  # the dead process's partial upload
    assert stored_shared(tmp_path / "ckpt") == storage.manifest(1).shared_paths()
    restored.db[b"after"] = b"2"
    storage.snapshot(restored.db, 2, str(tmp_path / "s2"), base=restored.manifest)
    storage.complete(2)
    restored.db.close()
    again = storage.restore(2, str(tmp_path / "r2"))
    assert dict(again.db.items()) == {b"early": b"1", b"after": b"2"}
    again.db.close()
