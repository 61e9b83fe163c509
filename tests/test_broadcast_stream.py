"""Broadcast state in a streaming run: checkpointed once, restored into every subtask, rescaled.

One file stream holds rules and events (one micro-batch per file). Rules are broadcast to the
events keyed by their key, so within a batch they meet in the order of the file's lines (one
split: the positions are the lines' sequence numbers). The query stops after two batches and
restarts with three subtasks instead of two: the new subtask 2 never held any state and must
start from the broadcast state the checkpoint stored once (written by subtask 0).
"""

from __future__ import annotations

import json
import os
import random

import pytest

from sparktide.common import Duration, Types, WatermarkStrategy
from sparktide.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import MapStateDescriptor, ValueStateDescriptor
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.streaming import ForeachBatchSink
from test_stream_rocksdb_native import _forget_local_databases
from test_streaming import backend_named

SCHEMA = "kind string, key string, ts long, v long"
RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
SEEN = ValueStateDescriptor("seen", Types.LONG())


class Tagged(KeyedBroadcastProcessFunction):
    """Each event: its key, value, how many events its key had, and the rules it meets."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(SEEN)

    def process_element(self, value, ctx):
        n = (self.seen.value() or 0) + 1
        self.seen.update(n)
        rules = sorted(ctx.get_broadcast_state(RULES).items())
        yield f"{value.key} v={value.v} n={n} rules={rules}"

    def process_broadcast_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULES)
        if value.v < 0:
            state.remove(value.key)
        else:
            state.put(value.key, value.v)


class Unkeyed(BroadcastProcessFunction):
    """Each event: its key, value and the rules it meets (no keyed state)."""

    def process_element(self, value, ctx):
        yield f"{value.key} v={value.v} rules={sorted(ctx.get_broadcast_state(RULES).items())}"

    process_broadcast_element = Tagged.process_broadcast_element


def _files(count: int, per_file: int = 12) -> list[list[dict]]:
    rng = random.Random(5)
    files, ts = [], 0
    for f in range(count):
        rows = []
        for _ in range(per_file):
            ts += 10
            if rng.random() < (0.6 if f == 0 else 0.15):
                v = -1 if rng.random() < 0.3 else rng.randrange(100)
                rows.append({"kind": "rule", "key": f"r{rng.randrange(4)}", "ts": ts, "v": v})
            else:
                rows.append({"kind": "event", "key": f"k{rng.randrange(5)}", "ts": ts, "v": ts})
        files.append(rows)
    return files


def _write(directory, files, first: int = 0) -> None:
    os.makedirs(directory, exist_ok=True)
    for f, rows in enumerate(files, start=first):
        path = os.path.join(directory, f"part-{f:04d}.json")
        with open(path + ".tmp", "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows)
        os.replace(path + ".tmp", path)
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source's order


def _model(files, keyed: bool = True) -> list[str]:
    rules: dict[str, int] = {}
    seen: dict[str, int] = {}
    out = []
    for row in (r for rows in files for r in rows):
        if row["kind"] == "rule":
            if row["v"] < 0:
                rules.pop(row["key"], None)
            else:
                rules[row["key"]] = row["v"]
            continue
        seen[row["key"]] = seen.get(row["key"], 0) + 1
        n = f" n={seen[row['key']]}" if keyed else ""
        out.append(f"{row['key']} v={row['v']}{n} rules={sorted(rules.items())}")
    return out


def _run(
    spark, directory, ckpt, parallelism: int, keyed: bool = True, backend: str | None = None
) -> dict[int, list[str]]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    if backend is not None:
        env.set_state_backend(backend_named(backend))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    stream = env.from_stream(frame, strategy, timestamp_column="ts")
    rules = stream.filter(lambda r: r.kind == "rule").broadcast(RULES)
    events = stream.filter(lambda r: r.kind == "event")
    if keyed:
        events = events.key_by(lambda r: r.key)
    out: dict[int, list[str]] = {}

    def collect(df, batch_id):
        out[batch_id] = [r[0] for r in df.collect()]

    function = Tagged() if keyed else Unkeyed()
    events.connect(rules).process(function, Types.STRING()).sink_to(ForeachBatchSink(collect))
    env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return out


@pytest.mark.usefixtures("state_backend")
def test_restart_restores_the_broadcast_state_into_every_subtask(spark, tmp_path) -> None:
    files = _files(5)
    _write(tmp_path / "in", files[:2])
    first = _run(spark, tmp_path / "in", tmp_path / "ckpt", 2)
    assert sorted(first) == [0, 1]

    store = CheckpointStore(str(tmp_path / "ckpt"))
    version = store.committed_version()
    manifest = store.commit_info(version)
    [stage] = manifest.parallelism
    parts = [store.read_subtask(version, stage, i)[1] for i in range(2)]
    assert "broadcast" in parts[0] and "broadcast" not in parts[1]  # one copy

    _write(tmp_path / "in", files[2:], first=2)
    second = _run(spark, tmp_path / "in", tmp_path / "ckpt", 3)  # rescaled: 2 -> 3 subtasks
    assert sorted(second) == [2, 3, 4]
    produced = [line for out in (first, second) for b in sorted(out) for line in out[b]]
    expected = _model(files)
    assert sorted(produced) == sorted(expected)  # n= and rules= carry the order per key
    after_restart = [line for b in sorted(second) for line in second[b]]
    assert any("rules=[]" not in line for line in after_restart)


def test_a_broadcast_stage_without_keys_restores_cold_on_rocksdb(spark, tmp_path) -> None:
    """A RocksDB job whose only stage has no keys: its chains are heap files (the broadcast
    state, valves and watermarks), restored in new processes on another machine."""
    files = _files(4)
    _write(tmp_path / "in", files[:2])
    ckpt = tmp_path / "ckpt"
    first = _run(spark, tmp_path / "in", ckpt, 2, keyed=False, backend="rocksdb")
    manifest = CheckpointStore(str(ckpt)).commit_info(1)
    assert [c.native for c in manifest.chains[0]] == [False, False]
    _forget_local_databases(spark, delete_copies=True)
    _write(tmp_path / "in", files[2:], first=2)
    second = _run(spark, tmp_path / "in", ckpt, 2, keyed=False, backend="rocksdb")
    produced = [line for out in (first, second) for b in sorted(out) for line in out[b]]
    assert sorted(second) == [2, 3]
    assert sorted(produced) == sorted(_model(files, keyed=False))
