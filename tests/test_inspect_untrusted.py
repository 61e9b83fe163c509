"""``sparktide inspect`` on a checkpoint that is not trusted: without ``--values`` it never
unpickles anything, whatever file of the checkpoint holds a malicious pickle, on either state
backend; with ``--values`` (the user's consent) it unpickles the state values, as documented.

The job puts a :class:`Boom` wherever a checkpoint holds a pickle: keyed state (value, list and
map state, with timers), broadcast state and the split's watermark generator state; on RocksDB
the state files' key type is then replaced by the pickled key type an older sparktide wrote,
itself a :class:`Boom`. Unpickling a :class:`Boom` copies a file to the marker path, so the
marker says whether anything was unpickled.
"""

from __future__ import annotations

import base64
import json
import operator
import os
import pickle
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from sparktide.cli import main
from sparktide.common import Types, WatermarkStrategy
from sparktide.common.typeinfo_json import type_from_versioned
from sparktide.common.watermark_strategy import WatermarkGenerator
from sparktide.datastream import KeyedBroadcastProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from sparktide.spark.checkpoint_format import pack_parts, unpack_parts
from sparktide.spark.checkpoint_meta import FileRecord
from sparktide.spark.streaming import ForeachBatchSink
from test_broadcast_stream import SCHEMA, _files, _write
from test_streaming import backend_named

BROADCAST = MapStateDescriptor("rules", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
VALUE = ValueStateDescriptor("value", Types.PICKLED_BYTE_ARRAY())
ITEMS = ListStateDescriptor("items", Types.PICKLED_BYTE_ARRAY())
TABLE = MapStateDescriptor("table", Types.STRING(), Types.PICKLED_BYTE_ARRAY())


class Boom:
    """A pickle that copies ``source`` to ``marker`` when it is unpickled."""

    def __init__(self, source: str, marker: str) -> None:
        self.source, self.marker = source, marker

    def __reduce__(self):
        return shutil.copyfile, (self.source, self.marker)


class BoomKeyType:
    """A pickled key type that runs a :class:`Boom` and gives ``key_type``."""

    def __init__(self, boom: Boom, key_type: object) -> None:
        self.boom, self.key_type = boom, key_type

    def __reduce__(self):
        return operator.getitem, ((self.boom, self.key_type), 1)


class Generator(WatermarkGenerator):
    """Bounded out-of-orderness of 5 ms whose carried state holds a :class:`Boom`."""

    def __init__(self, source: str, marker: str) -> None:
        self.paths = (source, marker)
        self.max_ts: int | None = None

    def on_event(self, event, event_timestamp, output):
        self.max_ts = max(self.max_ts or event_timestamp, event_timestamp)

    def on_periodic_emit(self, output):
        if self.max_ts is not None:
            output.emit_watermark(self.max_ts - 5)

    def snapshot_state(self):
        return {"max_ts": self.max_ts, "boom": Boom(*self.paths)}

    def restore_state(self, state):
        self.max_ts = state["max_ts"]


class Payloads(KeyedBroadcastProcessFunction):
    """Every event puts a :class:`Boom` into value, list and map state and sets a timer; every
    rule puts one into the broadcast state."""

    def __init__(self, source: str, marker: str) -> None:
        self.paths = (source, marker)

    def open(self, runtime_context):
        self.value = runtime_context.get_state(VALUE)
        self.items = runtime_context.get_list_state(ITEMS)
        self.table = runtime_context.get_map_state(TABLE)

    def process_element(self, value, ctx):
        self.value.update(Boom(*self.paths))
        self.items.add(Boom(*self.paths))
        self.table.put(value.key, Boom(*self.paths))
        ctx.timer_service().register_event_time_timer(value.ts + 1_000_000)
        yield value.key

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(BROADCAST).put(value.key, Boom(*self.paths))


def _run(spark, tmp_path: Path, backend: str, source: str, marker: str) -> Path:
    _write(tmp_path / "in", _files(3))
    ckpt = tmp_path / "ckpt"
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.set_state_backend(backend_named(backend))
    frame = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    )
    strategy = WatermarkStrategy.for_generator(lambda: Generator(source, marker))
    stream = env.from_stream(frame, strategy, timestamp_column="ts")
    rules = stream.filter(lambda r: r.kind == "rule").broadcast(BROADCAST)
    events = stream.filter(lambda r: r.kind == "event").key_by(
        lambda r: r.key, key_type=Types.STRING()
    )
    events.connect(rules).process(Payloads(source, marker), Types.STRING()).sink_to(
        ForeachBatchSink(lambda df, b: df.collect())
    )
    env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return ckpt


# every kind of file a checkpoint holds, by its path under the checkpoint directory
KINDS = {
    "commit manifest": r"commits/\d+\.json",
    "batch times": r"batches/.+",
    "batch inputs": r"inputs/\d+\.json",
    "split states": r"splits/\d+\.bin",
    "state file": r"state/\d+/stage-\d+/sub-\d+\.bin",
    "changelog": r"state/\d+/stage-\d+/sub-\d+\.log",
    "RocksDB shared file (SST)": r"state/rocksdb/[^/]+/\d+/shared/[^/]+\.sst",
    "RocksDB private file": r"state/rocksdb/[^/]+/\d+/private/[^/]+/[^/]+",
    "RocksDB checkpoint manifest": r"state/rocksdb/[^/]+/\d+/(completed|pending)/\d+\.json",
    "writer lock": r"writer\.lock",
    "batch lock": r"batch\.lock",
    "Spark's streaming metadata": r"spark/.+",
}
EXPECTED = {
    "hashmap": set(KINDS) - {k for k in KINDS if k.startswith("RocksDB")},
    "rocksdb": set(KINDS) - {"changelog"},
}


def _kinds(ckpt: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in sorted(p for p in ckpt.rglob("*") if p.is_file()):
        relative = path.relative_to(ckpt).as_posix()
        if relative.endswith(".crc"):  # Hadoop's checksum files of Spark's metadata
            relative = relative.replace("/.", "/")
        found = [k for k, pattern in KINDS.items() if re.fullmatch(pattern, relative)]
        assert len(found) == 1, f"{relative}: a file of no known kind (or of two): {found}"
        out.setdefault(found[0], []).append(path)
    return out


def _legacy_key_type(ckpt: Path, boom: Boom) -> int:
    """Make the checkpoint one of format 6: every native state file holds the key type as
    that format pickled it (a :class:`BoomKeyType`) and says format 6, and the commit
    manifests say format 6 and name the files' new records; returns how many files changed."""
    changed: dict[str, FileRecord] = {}
    for path in ckpt.glob("state/*/stage-*/sub-*.bin"):
        meta, parts = unpack_parts(path.read_bytes(), str(path))
        if not isinstance(meta.get("rocksdb"), dict):
            continue
        declared = meta["rocksdb"]["key_type"]  # JSON data now
        key_type = None if declared is None else type_from_versioned(declared, str(path))
        legacy = pickle.dumps(BoomKeyType(boom, key_type))
        meta["rocksdb"]["key_type"] = base64.b64encode(legacy).decode()
        data = pack_parts(parts, meta)
        data = data[:8] + struct.pack(">I", 6) + data[12:]  # the format version of the file
        path.write_bytes(data)
        changed[path.relative_to(ckpt).as_posix()] = FileRecord.of(data, meta, str(path))
    for commit in ckpt.glob("commits/*.json"):
        envelope = json.loads(commit.read_text())
        envelope["body"]["format_version"] = 6
        files = envelope["body"]["files"]
        for relative, record in changed.items():
            if relative in files:
                files[relative] = record.to_json()
        encoded = json.dumps(envelope["body"], sort_keys=True, separators=(",", ":")).encode()
        envelope["crc32"] = zlib.crc32(encoded)
        commit.write_text(json.dumps(envelope, sort_keys=True))
    return len(changed)


def _refuse_unpickling(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("inspect unpickled something")

    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_inspect_never_unpickles_any_file_of_a_checkpoint(
    spark, tmp_path, backend, monkeypatch, capsys
) -> None:
    source, marker = tmp_path / "source", tmp_path / "marker"
    source.write_text("ran")
    ckpt = _run(spark, tmp_path, backend, str(source), str(marker))
    kinds = _kinds(ckpt)
    assert set(kinds) == EXPECTED[backend]
    # the payloads are where the checkpoint holds pickles
    for kind in ("split states", "state file", "changelog"):
        for path in kinds.get(kind, []):
            if kind != "state file" or backend == "hashmap" or "stage-1" in str(path):
                assert b"copyfile" in path.read_bytes(), path
    if backend == "rocksdb":
        assert _legacy_key_type(ckpt, Boom(str(source), str(marker))) > 0
    marker.unlink(missing_ok=True)  # the job's own restores unpickled them
    with monkeypatch.context() as patched:
        _refuse_unpickling(patched)
        for args in ([], ["--json"]):
            assert main(["inspect", str(ckpt), *args]) == 0, capsys.readouterr().err
            assert not marker.exists()
    as_json = capsys.readouterr().out.split("\n{", 1)[1]
    summary = json.loads("{" + as_json)
    [stage] = [s for s in summary["stages"] if "key_groups" in s["subtasks"][0]]
    # value, list and map state of each key seen, one timer per event: counted without a pickle
    assert sum(s["state_entries"] for s in stage["subtasks"]) % 3 == 0
    assert sum(s["event_timers"] for s in stage["subtasks"]) > 0
    if backend == "rocksdb":  # the key type an older sparktide pickled is left unread
        assert {s["key_type"] for s in stage["subtasks"]} == {"pickled"}
    # with --values the user trusts the checkpoint: the values are unpickled, as documented
    assert main(["inspect", str(ckpt), "--values"]) == 0
    captured = capsys.readouterr()
    assert marker.exists() and "runs code stored in the checkpoint" in captured.err
    assert os.path.getsize(marker) == 3
