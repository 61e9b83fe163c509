"""Streaming checkpoints across state backends: a query restarted on the other backend (heap to
RocksDB and back, rescaled too) gives the output of an uninterrupted run; each manifest records
the backend of every subtask's chain and a switch starts new chains; a checkpoint of the
previous format (written by a heap job before manifests named backends) is migrated and
restored by a RocksDB job; RocksDB without incremental checkpointing writes full snapshots;
bytes written per batch follow the entries a batch changed, not the size of the state; every
batch reports how its subtasks got their state."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from sparktide.common import Types
from sparktide.core.state_backend import StateBackendKind
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.state_backend import EmbeddedRocksDBStateBackend
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_format import CHECKPOINT_FORMAT_VERSION
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import (
    SCHEMA,
    _final_watermark,
    _fired_before_end,
    _flatten,
    _records,
    _reference,
    _strategy,
    _stream,
    _write_files,
)

FORMAT4 = Path(__file__).parent / "data" / "checkpoint_format4_heap"


def _manifest(ckpt, version: int) -> dict:
    return json.loads((Path(ckpt) / "commits" / f"{version}.json").read_text())["body"]


def _backends(ckpt, version: int) -> set[str]:
    return {c["backend"] for cs in _manifest(ckpt, version)["chains"].values() for c in cs}


@pytest.mark.parametrize(("before", "after"), [("hashmap", "rocksdb"), ("rocksdb", "hashmap")])
def test_a_restart_on_the_other_backend_continues_exactly(spark, tmp_path, before, after) -> None:
    batches = _records(5)
    _write_files(tmp_path / "in", batches[:2])
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend=before)
    assert _backends(ckpt, 1) == {before}
    _write_files(tmp_path / "in", batches[2:], first=2)
    second, _ = _stream(spark, tmp_path / "in", "timers", 3, ckpt, backend=after)
    expected = _fired_before_end("timers", _reference("timers", batches), _final_watermark(batches))
    assert _flatten(first) + _flatten(second) == expected
    assert _backends(ckpt, 4) == {after}
    [stage] = describe_checkpoint(CheckpointStore(str(ckpt)))["stages"]
    assert {s["backend"] for s in stage["subtasks"]} == {after}
    # the first batch on the new backend started new chains (full snapshots)
    assert [c["snapshot"] for c in _manifest(ckpt, 2)["chains"]["0"]] == [2, 2, 2]
    restores = [m.get("state_restores") for m in (_manifest(ckpt, v)["metrics"] for v in (2, 3))]
    assert restores[0]["restored"]["count"] == 3  # every subtask read the heap's files


def test_a_checkpoint_of_the_previous_format_restores_on_rocksdb(spark, tmp_path) -> None:
    """The checkpoint in ``data/checkpoint_format4_heap`` was written by a heap job of the
    previous format (manifests name no backend): the first two files of ``_records(5)``,
    ``timers`` job, parallelism 2; ``@INPUT@`` stands for its input directory."""
    batches = _records(5)
    _write_files(tmp_path / "in", batches)
    ckpt = tmp_path / "ckpt"
    shutil.copytree(FORMAT4, ckpt)
    for log in (ckpt / "spark" / "sources" / "0").iterdir():
        log.write_text(log.read_text().replace("@INPUT@", f"file://{tmp_path / 'in'}"))
    old = _manifest(ckpt, 1)
    assert old["format_version"] == 4 and "backend" not in old["chains"]["0"][0]
    assert CheckpointStore(str(ckpt)).commit_info(1).chain(0, 0).backend is (
        StateBackendKind.HASHMAP
    )
    out, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert sorted(out) == [2, 3, 4]
    expected = _fired_before_end("timers", _reference("timers", batches), _final_watermark(batches))
    done = _fired_before_end(
        "timers", _reference("timers", batches[:2]), _final_watermark(batches[:2])
    )
    assert _flatten(out) == expected[len(done) :]
    new = _manifest(ckpt, 4)
    assert new["format_version"] == CHECKPOINT_FORMAT_VERSION
    assert _backends(ckpt, 4) == {"rocksdb"}


class _Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)


def _count_job(spark, directory, ckpt, backend, progress=None) -> dict[int, list]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.set_state_backend(backend)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: dict[int, list] = {}
    stream.key_by(lambda r: r.key).process(_Count(), output_type=Types.LONG()).sink_to(
        ForeachBatchSink(lambda df, b: out.setdefault(b, df.collect()))
    )
    client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    client.await_termination()
    if progress is not None:
        progress.extend(client.recent_progress)
    return out


def _count_input(tmp_path, keys: int, changed: int, batches: int) -> None:
    rows = [[(f"k{i}", i, i) for i in range(keys)]]
    for b in range(1, batches):
        rows.append([(f"k{(b * 7 + j) % keys}", 10_000 * b + j, j) for j in range(changed)])
    _write_files(tmp_path / "in", rows)


_ALONE = """
import json, sys
sys.path.insert(0, {tests!r})
import test_stream_backends as t
from sparktide.datastream.state_backend import EmbeddedRocksDBStateBackend
from sparktide.spark.session import get_spark
progress = []
t._count_job(get_spark("local[2]"), {inp!r}, {ckpt!r}, EmbeddedRocksDBStateBackend(True), progress)
print(json.dumps([{{"rocksdb_checkpoints": p["rocksdb_checkpoints"]}} for p in progress]))
"""


def _count_job_alone(directory: Path, ckpt: Path) -> list[dict]:
    """The progress of the count job on RocksDB, run by a Spark of its own, whose Python
    workers are only the job's: in the suite's long-lived session (many idle workers) some
    runs uploaded one subtask's whole state at every batch, a case this test does not cover."""
    script = _ALONE.format(tests=str(Path(__file__).parent), inp=str(directory), ckpt=str(ckpt))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKTIDE_")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_bytes_per_batch_follow_the_changes_not_the_state(tmp_path) -> None:
    # RocksDB checkpoints natively: a batch uploads the SST files that are new since the last
    # checkpoint, plus the few small files every checkpoint has
    keys, batches = 10_000, 6
    _count_input(tmp_path, keys, keys // 100, batches)  # 1% of the keys change per batch
    ckpt = tmp_path / "ckpt"
    progress = _count_job_alone(tmp_path / "in", ckpt)
    sizes = [p["rocksdb_checkpoints"] for p in progress]
    assert [s["subtasks"] for s in sizes] == [2] * batches
    assert sizes[0]["uploaded_bytes"] == sizes[0]["total_bytes"]  # everything, once
    sst_uploaded = [s["uploaded_bytes"] - s["private_bytes"] for s in sizes]
    sst_total = [s["total_bytes"] - s["private_bytes"] for s in sizes]
    # a batch between compactions uploads the SSTs of its changes only; a compaction into the
    # last level rewrites it (uploaded again, as in Flink), every few batches: the median
    # batch is one between compactions
    assert statistics.median(sst_uploaded[1:]) <= 0.1 * statistics.median(sst_total[1:])
    # what the storage keeps: the last two checkpoints of each subtask, and only their files
    for subtask in range(2):
        storage = CheckpointStore(str(ckpt)).native_storage(_entry_identity(ckpt), subtask)
        assert storage.completed_ids() == [batches - 2, batches - 1]
        assert storage.pending_ids() == []
        assert storage.collect_garbage() == 0
    summary = CheckpointStore(str(ckpt)).read_subtask(batches - 1, 0, 0)[1]
    assert "keyed" in summary  # the full state, read back from the SSTs


def _entry_identity(ckpt) -> str:
    files = _manifest(ckpt, _last_version(ckpt))["files"]
    [operator] = {r["operator"] for p, r in files.items() if p.startswith("state/")}
    return operator


def _last_version(ckpt) -> int:
    return max(int(n[:-5]) for n in os.listdir(Path(ckpt) / "commits"))


def test_rocksdb_without_incremental_checkpoints_writes_full_snapshots(spark, tmp_path) -> None:
    _count_input(tmp_path, 20, 2, 3)
    ckpt = tmp_path / "ckpt"
    _count_job(spark, tmp_path / "in", ckpt, EmbeddedRocksDBStateBackend(False))
    for v in range(3):
        chains = _manifest(ckpt, v)["chains"]["0"]
        assert [(c["snapshot"], c["changelogs"]) for c in chains] == [(v, [])] * 2
    assert not [p for p in os.listdir(ckpt / "state" / "2" / "stage-0") if p.endswith(".log")]
    # every batch reports how its subtasks got their state: created, then reused in memory,
    # reused from the local copy on disk (another worker process on this machine) or restored
    # from the checkpoint's files; never created again
    first = _manifest(ckpt, 0)["metrics"]["state_restores"]
    assert first["created"]["count"] == 2
    later = _manifest(ckpt, 2)["metrics"]["state_restores"]
    assert later["created"]["count"] == 0
    kept = ("reused_in_memory", "reused_on_disk", "restored")
    assert sum(later[outcome]["count"] for outcome in kept) == 2
