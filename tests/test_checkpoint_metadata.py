"""Checkpoint metadata is data, not code: manifests, valves, operator watermarks and split
positions are JSON with a format version; only user values are pickled. ``sparktide inspect``
shows the structure without unpickling anything, and user values only with ``--values``; a
checkpoint of another format version is refused naming both versions."""

from __future__ import annotations

import json
import pickle
import zlib

import pytest

from sparktide.cli import main
from sparktide.spark.checkpoint import (
    CHECKPOINT_FORMAT_VERSION,
    CheckpointError,
    CheckpointStore,
    unpack_parts,
)
from sparktide.spark.checkpoint_format import MIGRATED_FORMAT_VERSIONS
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from test_checkpoint_identity import _run, _write

JOB = [("w", 2_000, None, "windows")]


@pytest.fixture(scope="module")
def checkpoint(spark, tmp_path_factory):
    """A checkpoint of two batches of a keyed window job, parallelism 2."""
    tmp_path = tmp_path_factory.mktemp("meta")
    _write(tmp_path / "in", 0)
    _write(tmp_path / "in", 1)
    _run(spark, tmp_path, JOB)
    return tmp_path / "ckpt"


def _no_unpickling(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("unpickled something")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)


def test_inspect_shows_the_structure_without_unpickling(checkpoint, monkeypatch, capsys) -> None:
    _no_unpickling(monkeypatch)
    summary = describe_checkpoint(CheckpointStore(str(checkpoint)))
    assert summary["committed_batch"] == 1
    [stage] = summary["stages"]
    assert stage["operators"][0].startswith("Window") and stage["parallelism"] == 2
    subtasks = stage["subtasks"]
    assert [s["key_groups"] for s in subtasks] == [[0, 63], [64, 127]]
    # keys a and b hold one window each ([0, 2000) fired, then one left per key), one timer each
    assert sum(s["state_entries"] for s in subtasks) == sum(s["event_timers"] for s in subtasks)
    assert all(s["size_bytes"] > 0 for s in subtasks)
    assert all(s["watermarks"]["Window(TumblingEventTimeWindows)"] == 12_499 for s in subtasks)
    assert summary["splits"]["0"]["watermark"] == 12_499
    # batch 1 (a changelog): key b's window [10000, 12000) fired, its timer and state deleted,
    # and its window [12000, 14000) put with a new timer
    changed = [s["changed"] for s in subtasks]
    assert sum(c["timer_puts"] for c in changed) == sum(c["timer_deletes"] for c in changed) == 1
    assert main(["inspect", str(checkpoint)]) == 0
    text = capsys.readouterr().out
    assert "committed batch 1" in text and "0-63" in text and "1970-01-01T00:00:12.499Z" in text


def test_inspect_values_shows_the_state_values(checkpoint, capsys) -> None:
    assert main(["inspect", str(checkpoint), "--values"]) == 0
    text = capsys.readouterr().out
    assert "Row(key='b', ts=13000, v=5)" in text


def test_inspect_help_says_what_values_means(capsys) -> None:
    assert main(["inspect", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--values" in text and "runs code" in text and "trust" in text


def _is_pickle(data: bytes) -> bool:
    return data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")


def test_metadata_files_and_parts_hold_no_pickle(checkpoint) -> None:
    for path in (checkpoint / "commits").glob("*.json"):
        manifest = json.loads(path.read_text())
        assert manifest["body"]["format_version"] == CHECKPOINT_FORMAT_VERSION
    for path in (checkpoint / "batches").glob("*.json"):
        json.loads(path.read_text())
    for path in (checkpoint / "splits").glob("*.bin"):
        _, parts = unpack_parts(path.read_bytes(), str(path))
        for data in parts.values():  # per split: JSON meta, the generator's values pickled
            meta, inner = unpack_parts(data, str(path))
            assert {"watermark", "idle", "seq", "records"} <= set(meta)
            assert set(inner) <= {"generator"}
    state_files = list((checkpoint / "state").rglob("sub-*.*"))
    assert state_files
    for path in state_files:
        meta, parts = unpack_parts(path.read_bytes(), str(path))
        for name in ("valves", "watermarks"):
            assert not _is_pickle(parts[name])
            json.loads(parts[name])
        assert set(parts) - {"valves", "watermarks", "keyed"} == {
            p for p in parts if p.startswith("kg-")
        }
    changelogs = list((checkpoint / "state").rglob("sub-*.log"))
    timers = 0
    for path in changelogs:  # per key group: JSON structure, int64 timers, user values pickled
        _, parts = unpack_parts(path.read_bytes(), str(path))
        for name, data in parts.items():
            if not name.startswith("kg-"):
                continue
            meta, inner = unpack_parts(data, f"{path} {name}")
            assert meta["key_group"] == int(name[3:])
            assert set(inner) <= {"timers", "values"}
            assert not _is_pickle(inner.get("timers", b""))
            timer_sections = [s for s in meta["sections"] if s["type"] == "timers"]
            numbers = sum(2 * s["puts"] + s["deletes"] for s in timer_sections)
            assert len(inner.get("timers", b"")) == 8 * numbers
            timers += sum(s["puts"] + s["deletes"] for s in timer_sections)
    assert changelogs and timers > 0  # batch 1 moved key b's window timer


def _rewrite_manifest(store: CheckpointStore, version: int, format_version: int) -> None:
    path = store.path("commits", f"{version}.json")
    body = json.loads(store.read(path))["body"]
    body["format_version"] = format_version
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    store.write(path, json.dumps({"body": body, "crc32": zlib.crc32(encoded)}).encode())


def test_an_older_format_version_is_refused_naming_both(checkpoint, tmp_path) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(checkpoint, old)
    store = CheckpointStore(str(old))
    for older in range(1, min(MIGRATED_FORMAT_VERSIONS)):  # layouts no longer read
        for version in (0, 1):
            _rewrite_manifest(store, version, older)
        with pytest.raises(CheckpointError) as info:
            store.committed_version()
        message = str(info.value)
        assert f"format version {older} is not supported" in message
        assert f"reads version {CHECKPOINT_FORMAT_VERSION}" in message
        assert "empty checkpoint directory" in message
        assert main(["inspect", str(old)]) != 0


def test_a_streaming_runs_manifest_binds_every_file_to_its_slot(checkpoint, tmp_path) -> None:
    import shutil

    body = json.loads((checkpoint / "commits" / "1.json").read_text())["body"]
    files = body["files"]
    assert files["splits/1.bin"]["kind"] == "splits"
    subs = {p: r for p, r in files.items() if p.startswith("state/1/")}
    assert sorted((r["subtask"], tuple(r["key_groups"])) for r in subs.values()) == [
        (0, (0, 63)),
        (1, (64, 127)),
    ]
    assert {r["operator"] for r in subs.values()} == {"uid:windows"}
    # subtask 0's file where subtask 1's belongs: the next run refuses it
    copy = tmp_path / "copy"
    shutil.copytree(checkpoint, copy)
    state = copy / "state" / "1" / "stage-0"
    [name0] = [p.name for p in state.glob("sub-0.*")]
    shutil.copy(state / name0, state / name0.replace("sub-0", "sub-1"))
    store = CheckpointStore(str(copy))
    with pytest.raises(CheckpointError, match="its header says subtask 0 where the manifest"):
        store.read_subtask(1, 0, 1)
