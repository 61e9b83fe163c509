"""Streaming on RocksDB: every committed checkpoint restores, whatever the job's shape.

A RocksDB job keeps the keyed state of its keyed stages in worker-local databases, checkpointed
natively; its other stages (a union into a sink after an exchange, a subtask that only
forwards) hold only valves and watermarks, written as heap files. The job below has both: a
keyed ``process``, a keyed window after it and the ``union`` of the two into one sink (a
non-keyed stage fed by two exchanges). Its first batch holds one key, so some subtasks have no
input in it. Restarted cold (new processes, no local copies), on the heap backend, and read by
``sparktide inspect``, it gives the bounded run's output.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparktide.common import Row, Time
from sparktide.core.state_backend import StateBackendKind
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.runtime.execution.planner import plan_job
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from sparktide.spark.checkpoint_meta import (
    BatchCommit,
    Chain,
    CommitManifest,
    FileRecord,
    OperatorWatermarks,
    SubtaskWrite,
)
from sparktide.spark.checkpoint_native import NativeReference
from sparktide.spark.stream_job import StreamingJob
from sparktide.spark.streaming import ForeachBatchSink
from sparktide.spark.worker_resources import WarmState, WorkerResources
from test_dataframes import ALARM, Alarm
from test_stream_rocksdb_native import _forget_local_databases
from test_streaming import (
    EVENT,
    PER_FILE,
    SCHEMA,
    WINDOW,
    _final_watermark,
    _records,
    _strategy,
    _write_files,
    backend_named,
)

ROCKSDB = StateBackendKind.ROCKSDB


def _union_job(stream):
    """Alarms of a keyed process, the alarms summed per key in tumbling windows (tagged
    ``w:``), and the union of both."""
    alarms = stream.key_by(lambda r: r.key).process(Alarm(), output_type=ALARM)
    windows = (
        alarms.key_by(lambda a: a.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
        .reduce(
            lambda a, b: Row(key=a.key, at=max(a.at, b.at), count=a.count + b.count),
            output_type=ALARM,
        )
        .map(lambda a: Row(key="w:" + a.key, at=a.at, count=a.count), output_type=ALARM)
    )
    return alarms.union(windows)


def _reference(batches) -> list[tuple]:
    """The bounded run over all records (a round per file), less what only the end of input
    fires."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(PER_FILE)
    rows = [Row(key=k, ts=t, v=v) for batch in batches for k, t, v in batch]
    strategy = _strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(strategy)
    out = [tuple(r) for r in _union_job(stream).execute_and_collect()]
    watermark = _final_watermark(batches)

    def fired(row: tuple) -> bool:
        if row[0].startswith("w:"):  # a window fires at its end
            return (row[1] // WINDOW + 1) * WINDOW - 1 <= watermark
        return bool(row[1] <= watermark)

    return [r for r in out if fired(r)]


def _run(spark, folder: Path, ckpt: Path, backend: str) -> dict[int, list[tuple]]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.set_state_backend(backend_named(backend))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(folder))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: dict[int, list[tuple]] = {}
    _union_job(stream).sink_to(
        ForeachBatchSink(lambda df, b: out.__setitem__(b, [tuple(r) for r in df.collect()]))
    )
    env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return out


def _chains(ckpt: Path, version: int) -> dict[int, set[bool]]:
    """Per stage, whether its subtasks' chains are native."""
    info = CheckpointStore(str(ckpt)).commit_info(version)
    return {s: {c.native for c in chains} for s, chains in info.chains.items()}


def test_a_union_after_keyed_stages_restores_cold_on_rocksdb_then_on_the_heap(
    spark, tmp_path
) -> None:
    batches = _records(4)
    batches[0] = [("k0", ts, v) for _, ts, v in batches[0]]  # one key: idle subtasks
    folder, ckpt = tmp_path / "in", tmp_path / "ckpt"
    _write_files(folder, batches[:2])
    first = _run(spark, folder, ckpt, "rocksdb")
    assert sorted(first) == [0, 1]
    # the keyed stages' chains name RocksDB checkpoints (a subtask without input too); the
    # union's are heap files
    for version in (0, 1):
        assert _chains(ckpt, version) == {0: {True}, 1: {True}, 2: {False}}
    # new processes on another machine: every subtask reads the checkpoint's files
    _forget_local_databases(spark, delete_copies=True)
    _write_files(folder, batches[2:3], first=2)
    second = _run(spark, folder, ckpt, "rocksdb")
    assert sorted(second) == [2]
    summary = describe_checkpoint(CheckpointStore(str(ckpt)))
    assert summary["committed_batch"] == 2
    union = summary["stages"][2]["subtasks"]
    assert [s["backend"] for s in union] == ["rocksdb", "rocksdb"]
    assert all("key_groups" not in s and s["watermarks"] for s in union)
    # the heap backend restores the RocksDB job's checkpoint
    _write_files(folder, batches[3:], first=3)
    third = _run(spark, folder, ckpt, "hashmap")
    assert sorted(third) == [3]
    out = [row for run in (first, second, third) for b in sorted(run) for row in run[b]]
    assert out == _reference(batches)


def _rewrite_manifest(store: CheckpointStore, version: int, edit) -> None:
    path = Path(store.path("commits", f"{version}.json"))
    body = json.loads(path.read_text())["body"]
    edit(body)
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    path.write_text(json.dumps({"body": body, "crc32": zlib.crc32(encoded)}, sort_keys=True))


def test_a_non_keyed_file_named_by_a_native_chain_restores(tmp_path) -> None:
    """What RocksDB jobs committed before their non-keyed stages wrote heap chains: a chain
    marked native whose file holds only valves and watermarks. It is read as the heap file it
    is, by a restore and by ``inspect``; a keyed file without its RocksDB checkpoint is still
    refused."""
    store = CheckpointStore(str(tmp_path), state_backend=ROCKSDB)
    parts = {
        "valves": b"{}",
        "watermarks": OperatorWatermarks.encode({"op": OperatorWatermarks(5, {})}),
    }
    store.write_version(0, 1, 0, Chain(0, backend=ROCKSDB), None, {}, parts, "sink")
    store.commit(0, BatchCommit(processing_time=0, parallelism={1: 1}))

    def mark_native(body: dict) -> None:
        body["chains"]["1"][0]["native"] = True

    _rewrite_manifest(store, 0, mark_native)
    info = store.commit_info(0)
    assert info.chain(1, 0) == Chain(0, backend=ROCKSDB, native=True)
    for reader in (store, CheckpointStore(str(tmp_path))):  # this RocksDB job's, a heap job's
        loaded = reader.restore_range(info, 1, 0, 128, None)
        assert loaded.header is None
        assert (loaded.valves, loaded.watermarks) == (parts["valves"], parts["watermarks"])
    (tmp_path / "spark").mkdir()
    [stage] = describe_checkpoint(store)["stages"]
    assert stage["subtasks"][0]["watermarks"] == {"op": 5}
    # a file with key groups must name its RocksDB checkpoint
    keyed = {"stage": 1, "subtask": 0, "operator": "sink", "key_groups": [0, 127]}
    store.write_subtask(1, 1, 0, keyed, parts)
    native = {1: (Chain(1, backend=ROCKSDB, native=True),)}
    store.commit(1, BatchCommit(processing_time=0, parallelism={1: 1}, chains=native))
    with pytest.raises(CheckpointError, match="field 'rocksdb' must name a RocksDB checkpoint"):
        store.restore_range(store.commit_info(1), 1, 0, 128, None)


def test_a_worker_reuses_only_the_state_the_previous_manifest_commits(tmp_path) -> None:
    """What a subtask left in its worker is its state at the next batch only if the manifest
    of its version records the very file it wrote (not another attempt's, replayed in
    another worker) and it is kept as the batch keeps state (a heap snapshot, or native)."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    _union_job(env.from_collection([Row(key="a", ts=1, v=1)], type_info=EVENT)).print()
    plan = plan_job(env.get_stream_graph(), 2, None)
    stage = plan.stages[2]  # the union: heap chains
    store = CheckpointStore(str(tmp_path), state_backend=ROCKSDB, native_stages={0, 1})
    base = SimpleNamespace(plan=plan)
    chain = Chain(1, backend=ROCKSDB)
    path = store.relative(store.subtask_path(1, 2, 0))

    worker = WorkerResources()

    def attempt(digest: str, reference: NativeReference | None = None) -> WarmState:
        record = FileRecord(digest, 9, 1, "sink", 2, 0, None, "snapshot")
        written = SubtaskWrite(2, 0, path, record, chain)
        return WarmState(1, written, None, {}, b"{}", b"{}", reference)

    def taken(kept: WarmState, committed: str) -> bool:
        StreamingJob(base, store, 1, 0, 0, None, {}, worker).keep_warm(stage, 0, kept)
        record = attempt(committed).written.record
        previous = CommitManifest(1, 0, {2: 2}, {2: (chain, chain)}, {path: record}, None)
        job = StreamingJob(base, store, 2, 0, 0, previous, {}, worker)
        plan_2 = store.plan_chain(previous, 2, 0, 2, 2)
        return job.take_warm(stage, 0, 2, plan_2) is kept

    assert taken(attempt("blake2b:aa"), "blake2b:aa")
    assert not taken(attempt("blake2b:aa"), "blake2b:bb")  # another attempt's file committed
    native = NativeReference(1, "blake2b:cc", (0, 63), "op", 128)
    assert not taken(attempt("blake2b:aa", native), "blake2b:aa")  # not a snapshot
