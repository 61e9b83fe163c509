"""Streaming on RocksDB with native checkpoints: a stage subtask's database outlives its batch
in the worker, and what happens when it cannot be reused (another process, a failed attempt, a
replayed batch) gives the output of an uninterrupted run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.streaming import ForeachBatchSink
from test_dataframes import ALARM, Alarm
from test_streaming import (
    PER_FILE,
    SCHEMA,
    _final_watermark,
    _fired_before_end,
    _flatten,
    _records,
    _reference,
    _strategy,
    _stream,
    _write_files,
    backend_named,
)


def _manifest_metrics(ckpt: Path, version: int) -> dict:
    return CheckpointStore(str(ckpt)).commit_info(version).metrics


def _restores(ckpt: Path, version: int) -> dict[str, int]:
    restores = _manifest_metrics(ckpt, version)["state_restores"]
    return {k: v["count"] for k, v in restores.items() if isinstance(v, dict) and v["count"]}


def _expected(batches) -> list[tuple]:
    return _fired_before_end("timers", _reference("timers", batches), _final_watermark(batches))


def _forget_local_databases(spark, delete_copies: bool) -> None:
    """Close the databases every Python worker holds and empty its block cache (as if the
    next batch ran in new worker processes; ``delete_copies``: on another machine)."""

    def forget(batches):
        import pyarrow as pa

        from sparktide.runtime.state import rocksdb_memory
        from sparktide.spark.worker_resources import process_resources

        for _ in batches:
            time.sleep(0.3)  # each idle worker takes a task in turn
            worker = process_resources()
            worker.clear_warm()
            worker.close_databases(delete_copies)
            cache = worker.memory.block_cache
            cache.set_capacity(0)  # evicts every block: the next reads are from the files
            cache.set_capacity(rocksdb_memory.BLOCK_CACHE_BYTES)
        yield pa.RecordBatch.from_pydict({"pid": [os.getpid()]})

    # the Python workers of Arrow functions, as the stream's tasks run in
    spark.range(8).repartition(8).mapInArrow(forget, "pid long").collect()


def test_batches_reuse_the_live_database_or_its_local_copy_else_the_checkpoint(
    spark, tmp_path
) -> None:
    batches = _records(6)
    _write_files(tmp_path / "in", batches[:2])
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert _restores(ckpt, 0) == {"created": 2}
    # the database stays open in the worker: the next batch changes nothing on disk to start
    assert set(_restores(ckpt, 1)) <= {"reused_in_memory", "reused_on_disk"}
    # new worker processes on the same machine: the local copies
    _forget_local_databases(spark, delete_copies=False)
    _write_files(tmp_path / "in", batches[2:4], first=2)
    second, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert _restores(ckpt, 2) == {"reused_on_disk": 2}
    # another machine: the checkpoint's files
    _forget_local_databases(spark, delete_copies=True)
    _write_files(tmp_path / "in", batches[4:], first=4)
    third, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert _restores(ckpt, 4) == {"restored": 2}
    assert _flatten(first) + _flatten(second) + _flatten(third) == _expected(batches)
    uploaded = _manifest_metrics(ckpt, 5)["rocksdb_checkpoints"]
    assert uploaded["subtasks"] == 2 and 0 < uploaded["uploaded_bytes"] <= uploaded["total_bytes"]


def test_a_replayed_batch_starts_again_from_the_previous_version(spark, tmp_path) -> None:
    batches = _records(3)
    _write_files(tmp_path / "in", batches)
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert sorted(first) == [0, 1, 2]
    # a crash after Spark logged batch 2 but before sparktide committed it: Spark replays it,
    # from version 1 (the RocksDB checkpoint of batch 2 is taken again)
    (ckpt / "commits" / "2.json").unlink()
    for name in ("2", ".2.crc"):
        (ckpt / "spark" / "commits" / name).unlink(missing_ok=True)
    replayed, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt, backend="rocksdb")
    assert replayed == {2: first[2]}
    for subtask in range(2):
        storage = CheckpointStore(str(ckpt)).native_storage(_identity(ckpt), subtask)
        assert storage.completed_ids() == [1, 2] and storage.pending_ids() == []
        # only the files the two checkpoints name are kept
        names = {p for v in (1, 2) for p in storage.manifest(v).shared_paths()}
        shared = Path(storage.location) / "shared"
        assert {f"shared/{n}" for n in os.listdir(shared)} == names


def _identity(ckpt: Path) -> str:
    return _identity_at(ckpt, 2)


class _FailsOnce(Alarm):
    """:class:`Alarm` that fails its first attempt at record ``v == at`` (after changing the
    state of the records before it): the flag file says it did."""

    def __init__(self, flag: str, at: int) -> None:
        self.flag, self.at = flag, at

    def process_element(self, value, ctx):
        super().process_element(value, ctx)
        if value.v == self.at and not os.path.exists(self.flag):
            with open(self.flag, "w"):
                pass
            raise RuntimeError("the first attempt fails")


def test_a_failed_attempt_is_replayed_from_the_previous_version(spark, tmp_path) -> None:
    batches = _records(4)
    _write_files(tmp_path / "in", batches)
    ckpt = tmp_path / "ckpt"
    flag = str(tmp_path / "failed-once")
    at = batches[2][PER_FILE // 2][2]  # the middle of batch 2

    def job(stream):
        return stream.key_by(lambda r: r.key).process(_FailsOnce(flag, at), output_type=ALARM)

    out: dict[int, list[tuple]] = {}

    def run() -> None:
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.set_parallelism(2)
        env.set_state_backend(backend_named("rocksdb"))
        frame = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / "in"))
        )
        stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
        job(stream).sink_to(
            ForeachBatchSink(lambda df, b: out.__setitem__(b, [tuple(r) for r in df.collect()]))
        )
        env.execute(checkpoint_location=str(ckpt), trigger="available_now")

    with pytest.raises(Exception, match="the first attempt fails"):
        run()
    assert os.path.exists(flag) and sorted(out) == [0, 1]
    identity = _identity_at(ckpt, 1)
    for subtask in range(2):  # the failed batch's pending checkpoints were discarded
        storage = CheckpointStore(str(ckpt)).native_storage(identity, subtask)
        assert storage.pending_ids() == [] and storage.completed_ids() == [0, 1]
    run()  # batch 2 again, from version 1 (the live databases changed before it failed)
    assert sorted(out) == [0, 1, 2, 3]
    assert _flatten(out) == _expected(batches)


def _identity_at(ckpt: Path, version: int) -> str:
    info = CheckpointStore(str(ckpt)).commit_info(version)
    [operator] = {r.operator for p, r in info.files.items() if p.startswith("state/")}
    assert operator is not None
    return operator


def _flip_first_byte(path: Path) -> None:
    """Flip the first byte of an SST (its first data block; RocksDB reads the index and footer
    at its end when it opens it), in place: its size unchanged and every hard link of the file
    sees it."""
    with open(path, "r+b") as f:
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 0xFF]))


def _checkpoint_files(ckpt: Path) -> dict[str, bytes]:
    root = ckpt / "state" / "rocksdb"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_damaged_local_copy_is_never_used_and_never_reaches_the_checkpoint(
    spark, tmp_path
) -> None:
    import tempfile

    from sparktide.runtime.state.rocksdb_local import SubtaskSlot

    batches = _records(4)
    _write_files(tmp_path / "in", batches[:2])
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "timers", 3, ckpt, backend="rocksdb")
    # the next batch runs in new worker processes on this machine: the local copies of
    # version 1 are what they would reuse; each subtask's is damaged in another way
    _forget_local_databases(spark, delete_copies=False)
    before = _checkpoint_files(ckpt)
    identity = _identity_at(ckpt, 1)
    base = Path(tempfile.gettempdir()) / "sparktide-rocksdb"
    for subtask, damage in enumerate(["flip", "truncate", "delete"]):
        slot = base / SubtaskSlot(str(ckpt), identity, subtask).relative_dir()
        copies = list(slot.parent.glob(f"{slot.name}*/v1"))
        assert copies, f"no local copy of subtask {subtask} under {slot.parent}"
        for copy in copies:
            ssts = sorted(copy.glob("*.sst"), key=lambda p: p.stat().st_size)
            if damage == "flip":  # sizes unchanged: only a read can tell
                for sst in ssts:
                    _flip_first_byte(sst)
            elif damage == "truncate":  # caught at open
                with open(ssts[-1], "r+b") as f:
                    f.truncate(ssts[-1].stat().st_size // 2)
            else:
                ssts[-1].unlink()
    assert _checkpoint_files(ckpt) == before  # no write to a local copy reached it
    _write_files(tmp_path / "in", batches[2:], first=2)
    # subtask 0 opens its local copy (nothing there says it is damaged) and its first read
    # of a damaged block fails the batch, naming the subtask, the directory and the file
    with pytest.raises(Exception, match=r"subtask 0: RocksDB found damaged files") as caught:
        _stream(spark, tmp_path / "in", "timers", 3, ckpt, backend="rocksdb")
    text = str(caught.value)
    assert "block checksum mismatch" in text and ".sst" in text and "sparktide-rocksdb" in text
    assert "restores the state from the checkpoint" in text
    assert {k: v for k, v in _checkpoint_files(ckpt).items() if k in before} == before
    # the next attempt: the damaged copies are never used, the checkpoint's files are
    second, _ = _stream(spark, tmp_path / "in", "timers", 3, ckpt, backend="rocksdb")
    restores = _restores(ckpt, 2)
    assert restores.get("restored_over_damaged_copy", 0) >= 1
    assert set(restores) <= {"restored_over_damaged_copy", "restored"}
    assert sum(restores.values()) == 3
    assert _flatten(first) + _flatten(second) == _expected(batches)


def test_a_declared_key_type_is_recorded_as_data_and_read_back_on_the_heap(
    spark, tmp_path, monkeypatch
) -> None:
    from sparktide.common import Types
    from sparktide.common.typeinfo_json import versioned_type
    from sparktide.spark.checkpoint_format import unpack_parts
    from sparktide.spark.checkpoint_inspect import describe_checkpoint
    from test_streaming import JOBS

    def typed(stream):
        keyed = stream.key_by(lambda r: r.key, key_type=Types.STRING())
        return keyed.process(Alarm(), output_type=ALARM)

    monkeypatch.setitem(JOBS, "typed", typed)
    batches = _records(4)
    _write_files(tmp_path / "in", batches[:2])
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "typed", 2, ckpt, backend="rocksdb")
    for path in ckpt.glob("state/1/stage-*/sub-*.bin"):
        meta, _ = unpack_parts(path.read_bytes(), str(path))
        if "rocksdb" in meta:
            assert meta["rocksdb"]["key_type"] == versioned_type(Types.STRING())
    [stage] = [
        s
        for s in describe_checkpoint(CheckpointStore(str(ckpt)))["stages"]
        if "key_groups" in s["subtasks"][0]
    ]
    assert {s["key_type"] for s in stage["subtasks"]} == {"String"}
    assert sum(s["state_entries"] for s in stage["subtasks"]) > 0
    # the heap reads the RocksDB checkpoint back with the key type it records
    _write_files(tmp_path / "in", batches[2:], first=2)
    second, _ = _stream(spark, tmp_path / "in", "typed", 3, ckpt, backend="hashmap")
    assert _flatten(first) + _flatten(second) == _expected(batches)
