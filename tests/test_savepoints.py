"""Taking savepoints (``sparktide.state_api.savepoint``): a savepoint of a heap and of a RocksDB
checkpoint reads as the checkpoint does (keyed state, timers, split watermarks), lists the files
the job read and holds only full heap snapshots of one version; an incomplete or a non-empty
target is refused; a kill while one is taken leaves no ``savepoint.json`` and the checkpoint
untouched; ``client.stop_with_savepoint`` on a running stream; ``sparktide savepoint``.

One small streaming job per backend (``test_state_read``'s), written once (a module-scoped
fixture); taking a savepoint runs no Spark job.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from sparktide.cli import main
from sparktide.common import Types
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from sparktide.state_api import SavepointReader
from sparktide.state_api.savepoint import read_savepoint, write_savepoint
from sparktide.state_api.savepoint_format import (
    NotASavepointError,
    SavepointError,
    SavepointManifest,
    SourceKind,
    SourcePosition,
)
from test_clean_stop import MARK, RUN_TIMEOUT_S, count_job
from test_state_read import FILES, _run
from test_streaming import _records, _write_files

SRC = str(Path(__file__).resolve().parent.parent / "src")


@pytest.fixture(scope="module", params=["hashmap", "rocksdb"])
def job(request, tmp_path_factory):
    spark = request.getfixturevalue("spark")
    return _run(spark, tmp_path_factory.mktemp(request.param), request.param)


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.blake2b(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _sorted(table) -> list[dict]:
    return sorted(table.to_pylist(), key=repr)


def _same_state(checkpoint: str, savepoint: str) -> None:
    """Everything SavepointReader reads of the two is equal (and there is state to compare)."""
    old = SavepointReader.read(checkpoint, trusted=True)
    new = SavepointReader.read(savepoint, trusted=True)
    assert new.version == old.version
    assert _sorted(new.operators()) == _sorted(old.operators())
    assert new.split_watermarks().to_pylist() == old.split_watermarks().to_pylist()
    states = {(r["uid"] or r["name"], r["state"]) for r in old.operators().to_pylist()}
    compared = 0
    for uid, state in sorted(s for s in states if s[1] is not None):
        rows = _sorted(old.keyed_state(uid, state))
        assert _sorted(new.keyed_state(uid, state)) == rows, (uid, state)
        compared += len(rows)
    for uid in {uid for uid, state in states if state is not None}:
        assert _sorted(new.timers(uid)) == _sorted(old.timers(uid)), uid
    assert compared > 0


def test_a_savepoint_reads_as_the_checkpoint_and_lists_the_files_read(job, tmp_path) -> None:
    before = _tree(Path(job["ckpt"]))
    target = tmp_path / "sp"
    manifest = write_savepoint(job["ckpt"], str(target))
    assert read_savepoint(str(target)) == manifest
    last = CheckpointStore(job["ckpt"]).committed_version()
    assert (manifest.version, manifest.spark_batch) == (last, FILES - 1)
    assert manifest.origin == f"checkpoint:{job['ckpt']}"
    _same_state(job["ckpt"], str(target))
    [source] = manifest.sources
    assert source.kind is SourceKind.FILES and source.offsets is None
    read = Path(job["ckpt"]).parent / "in"
    assert [Path(urlsplit(f).path) for f in source.files] == [
        read / f"part-{i:04d}.json" for i in range(FILES)
    ]
    # one version, full heap snapshots, nothing else of the checkpoint
    assert sorted(p.name for p in target.iterdir()) == [
        "commits", "savepoint.json", "splits", "state"
    ]  # fmt: skip
    assert sorted(p.name for p in (target / "state").iterdir()) == [str(last)]
    body = json.loads((target / "commits" / f"{last}.json").read_text())["body"]
    chains = [c for cs in body["chains"].values() for c in cs]
    assert {
        (c["snapshot"], tuple(c["changelogs"]), c["backend"], c.get("native", False))
        for c in chains
    } == {(last, (), "hashmap", False)}
    assert set(body["files"]) == {str(p.relative_to(target)) for p in target.rglob("*.bin")}
    inspected = describe_checkpoint(CheckpointStore(str(target)))  # `sparktide inspect`
    assert inspected["committed_batch"] == last and len(inspected["stages"]) == len(body["chains"])
    assert _tree(Path(job["ckpt"])) == before  # the checkpoint untouched


def test_incomplete_non_empty_and_uncommitted_are_refused(job, tmp_path) -> None:
    partial = tmp_path / "partial"
    write_savepoint(job["ckpt"], str(partial))
    (partial / "savepoint.json").unlink()  # as a crash before the manifest leaves it
    with pytest.raises(NotASavepointError, match=r"partial.* is not a savepoint: .*take the"):
        read_savepoint(str(partial))
    with pytest.raises(SavepointError, match=r"partial' is not empty .*commits"):
        write_savepoint(job["ckpt"], str(partial))
    with pytest.raises(SavepointError, match=r"version 99 .* is not committed"):
        write_savepoint(job["ckpt"], str(tmp_path / "other"), version=99)
    assert not (tmp_path / "other").exists()
    (partial / "savepoint.json").write_text('{"format": "sparktide-savepoint"}')
    with pytest.raises(SavepointError, match="version None is not supported"):
        read_savepoint(str(partial))


def test_a_failed_copy_is_removed_and_a_version_deleted_while_copying_refused(
    job, tmp_path, monkeypatch
) -> None:
    ckpt = tmp_path / "ckpt"
    shutil.copytree(job["ckpt"], ckpt)
    last = CheckpointStore(str(ckpt)).committed_version()
    body = json.loads((ckpt / "commits" / f"{last}.json").read_text())["body"]
    named = ckpt / max(p for p in body["files"] if p.startswith("state/"))  # read last
    intact = named.read_bytes()
    named.write_bytes(intact[:-9])  # a corrupt checkpoint: refused, and nothing left behind
    with pytest.raises(CheckpointError, match=f"{named.name}: "):
        write_savepoint(str(ckpt), str(tmp_path / "sp"))
    assert [p for p in (tmp_path / "sp").rglob("*") if p.is_file()] == []
    named.write_bytes(intact)
    original = CheckpointStore.write_splits

    def retention(self, version, states):  # the query's retention deletes the version meanwhile
        original(self, version, states)
        (ckpt / "commits" / f"{last}.json").unlink()

    monkeypatch.setattr(CheckpointStore, "write_splits", retention)
    with pytest.raises(
        SavepointError, match=rf"version {last} of .* was deleted while copying .*; take it again"
    ):
        write_savepoint(str(ckpt), str(tmp_path / "sp"))
    assert list((tmp_path / "sp").iterdir()) == []  # the partial copy is removed


def test_kafka_offsets_are_the_sources_starting_offsets(job, tmp_path) -> None:
    """A source whose offset in Spark's log is Kafka's (per topic and partition) is recorded
    as such; its ``startingOffsets`` continue where the job stopped."""
    ckpt = tmp_path / "ckpt"
    shutil.copytree(job["ckpt"], ckpt)
    log = ckpt / "spark" / "offsets" / str(FILES - 1)
    version, meta, _ = log.read_text().splitlines()
    log.write_text(f'{version}\n{meta}\n{{"orders":{{"0":42,"1":7}}}}\n')
    manifest = write_savepoint(str(ckpt), str(tmp_path / "sp"))
    [source] = manifest.sources
    assert (source.kind, source.files) == (SourceKind.KAFKA, ())
    assert manifest.kafka_starting_offsets(source.name) == '{"orders":{"0":42,"1":7}}'
    with pytest.raises(SavepointError, match="no source 'nope'"):
        manifest.kafka_starting_offsets("nope")


_KILLED = """
import sys, time
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from sparktide.state_api.savepoint import write_savepoint

commit = CheckpointStore.commit

def stalled(self, version, batch, retain=2):  # every file written, the manifest not yet
    manifest = commit(self, version, batch, retain)
    print("stalled", flush=True)
    time.sleep(600)
    return manifest

CheckpointStore.commit = stalled
write_savepoint(sys.argv[1], sys.argv[2])
"""


def test_a_kill_while_taking_a_savepoint_leaves_no_manifest(job, tmp_path) -> None:
    before = _tree(Path(job["ckpt"]))
    target = tmp_path / "sp"
    process = subprocess.Popen(
        [sys.executable, "-c", _KILLED, job["ckpt"], str(target)],
        stdout=subprocess.PIPE,
        env={"PYTHONPATH": SRC, "PATH": ""},
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == b"stalled\n"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert process.returncode == -signal.SIGKILL
    assert (target / "commits").is_dir() and not (target / "savepoint.json").exists()
    with pytest.raises(NotASavepointError):
        read_savepoint(str(target))
    assert _tree(Path(job["ckpt"])) == before
    shutil.rmtree(target)  # as the refusal says: delete it, then take it again
    write_savepoint(job["ckpt"], str(target))
    _same_state(job["ckpt"], str(target))


def test_the_savepoint_command_prints_what_it_wrote(job, tmp_path, capsys) -> None:
    target = tmp_path / "sp"
    last = CheckpointStore(job["ckpt"]).committed_version()
    assert main(["savepoint", job["ckpt"], str(target), "--version", str(last - 1)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"savepoint {target}: version {last - 1} of checkpoint:{job['ckpt']} " + (
        f"(Spark micro-batch {FILES - 2})"
    )
    assert out[1].startswith("operators: ") and "count" in out[1] and "sums" in out[1]
    size = sum(p.stat().st_size for p in target.rglob("*.bin"))
    assert out[2] == f"bytes: {size}"
    assert out[3].endswith(f": {FILES - 1} file(s) read")
    assert read_savepoint(str(target)).version == last - 1
    assert main(["savepoint", job["ckpt"], str(target)]) == 2
    assert "is not empty" in capsys.readouterr().err


def test_stop_with_savepoint_stops_the_stream_and_saves_its_last_version(spark, tmp_path) -> None:
    records = _records(4)
    _write_files(tmp_path / "in", records)
    client = count_job(spark, tmp_path)
    try:
        assert wait_for(lambda: (tmp_path / "out" / MARK).exists(), RUN_TIMEOUT_S)
        (tmp_path / "taken").mkdir()
        (tmp_path / "taken" / "x").touch()
        with pytest.raises(SavepointError, match="is not empty"):  # checked before stopping
            client.stop_with_savepoint(str(tmp_path / "taken"))
        assert client.is_active
    finally:
        manifest = client.stop_with_savepoint(str(tmp_path / "sp"))
    assert isinstance(manifest, SavepointManifest) and not client.is_active
    assert manifest.version == CheckpointStore(str(tmp_path / "ckpt")).committed_version() == 1
    [source] = manifest.sources
    assert [Path(urlsplit(f).path).name for f in source.files] == [
        "part-0000.json",
        "part-0001.json",
    ]
    counts = Counter(key for batch in records[:2] for key, _, _ in batch)
    [(uid, state)] = {
        (r["identity"], r["state"])
        for r in SavepointReader.read(str(tmp_path / "sp")).operators().to_pylist()
        if r["state"] is not None
    }
    rows = SavepointReader.read(str(tmp_path / "sp"), trusted=True).keyed_state(
        uid, state, key_type=Types.STRING()
    )
    assert {r["key"]: r["value"]["n"] for r in rows.to_pylist()} == dict(counts)


def test_a_manifest_with_a_missing_or_mistyped_field_names_the_file_and_the_field() -> None:
    files = SourcePosition("s", None, SourceKind.FILES, ("file:///in/a.json",))
    raw = SavepointManifest(3, 1, "checkpoint:/ck", 3, (files,)).to_json()
    assert SavepointManifest.from_json(raw, "sp/savepoint.json").sources == (files,)
    with pytest.raises(CheckpointError, match=r"sp/savepoint.json: field 'created_ms' is missing"):
        SavepointManifest.from_json(
            {k: v for k, v in raw.items() if k != "created_ms"}, "sp/savepoint.json"
        )
    bad = {**raw, "sources": [{**files.to_json(), "kind": "socket"}]}
    with pytest.raises(CheckpointError, match=r"field 'sources\[0\].kind' must be one of"):
        SavepointManifest.from_json(bad, "sp/savepoint.json")
    with pytest.raises(SavepointError, match="'files' source, not a Kafka source"):
        SavepointManifest.from_json(raw, "x").kafka_starting_offsets("s")
