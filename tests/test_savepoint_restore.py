"""Starting a streaming job from a savepoint: ``execute(..., from_savepoint=path)``.

A savepoint of a file stream's job is taken after two files; two more files arrive; jobs start
from the savepoint in new checkpoint directories: at another parallelism and on the other state
backend, with an operator added, or with one removed. The reference is the local runtime's
bounded run of all the records (see ``test_streaming.py``): the output before the savepoint
plus the output of the job started from it is the output of the uninterrupted run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from sparktide.common import Row, Types
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.savepoint_start import RESTORED_FROM_FILE
from sparktide.spark.streaming import ForeachBatchSink, ParquetBatchSink
from sparktide.state_api.savepoint import write_savepoint
from sparktide.state_api.savepoint_format import NotASavepointError, SavepointError
from test_dataframes import ALARM, Alarm
from test_streaming import (
    SCHEMA,
    _final_watermark,
    _fired_before_end,
    _flatten,
    _in_order_records,
    _read_parquet,
    _records,
    _reference,
    _strategy,
    _windows,
    _write_files,
    backend_named,
)

NUMBERED = Types.ROW_NAMED(
    ["key", "at", "count", "n"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]
)


class Numbered(KeyedProcessFunction):
    """Numbers each key's records 1, 2, ... in a keyed state."""

    def open(self, runtime_context):
        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.n.value() or 0) + 1
        self.n.update(n)
        yield Row(key=value.key, at=value.at, count=value["count"], n=n)


def _run(
    spark: Any,
    directory: Path,
    ckpt: Path,
    *,
    parallelism: int = 2,
    backend: str | None = None,
    numbered: bool = False,
    per_file: bool = True,
    trigger: str = "available_now",
    stop_at: int | None = None,
    **execute: Any,
) -> tuple[dict[int, list[tuple]], dict[int, int]]:
    """The timers job (a keyed process function with a count and timers, uid ``alarm``) over
    the file stream of ``directory``, with ``numbered`` a keyed ``Numbered`` after it (uid
    ``numbered``): what its sink got per batch, and the records each batch read. ``stop_at``:
    stop the query once it has committed that version."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    if backend is not None:
        env.set_state_backend(backend_named(backend))
    reader = spark.readStream.schema(SCHEMA)
    if per_file:
        reader = reader.option("maxFilesPerTrigger", 1)
    stream = env.from_stream(reader.json(str(directory)), _strategy(), timestamp_column="ts")
    out = stream.key_by(lambda r: r.key).process(Alarm(), output_type=ALARM).uid("alarm")
    if numbered:
        out = out.key_by(lambda r: r.key).process(Numbered(), output_type=NUMBERED).uid("numbered")
    got: dict[int, list[tuple]] = {}
    out.sink_to(
        ForeachBatchSink(lambda df, b: got.__setitem__(b, [tuple(r) for r in df.collect()]))
    ).uid("sink")
    client = env.execute_async(checkpoint_location=str(ckpt), trigger=trigger, **execute)
    if stop_at is not None:
        assert wait_for(lambda: client.last_committed_batch() == stop_at, 120)
        client.stop()
    assert client.await_termination(120)
    return got, {p["batch_id"]: p["records"] for p in client.recent_progress}


class Saved:
    """A savepoint of the timers job after the first two of four files (in ``folder``)."""

    def __init__(self, root: Path, spark: Any) -> None:
        self.batches = _records(4, seed=5)
        self.folder = root / "in"
        _write_files(self.folder, self.batches[:2])
        self.before, _ = _run(spark, self.folder, root / "ckpt")
        self.path = root / "savepoint"
        self.manifest = write_savepoint(str(root / "ckpt"), str(self.path))
        _write_files(self.folder, self.batches[2:], first=2)  # arrive after the savepoint

    def expected(self) -> list[tuple]:
        reference = _reference("timers", self.batches)
        return _fired_before_end("timers", reference, _final_watermark(self.batches))


@pytest.fixture(scope="module")
def saved(spark, tmp_path_factory) -> Saved:
    return Saved(tmp_path_factory.mktemp("saved"), spark)


def test_restore_at_another_parallelism_and_backend_continues_the_run(spark, saved, tmp_path):
    """Started from the savepoint (version 1) at parallelism 3 on RocksDB, the job's first
    batch is version 2 and reads none of the files read before (with one file per batch, its
    first batch lists an old file and drops it), also after a restart of the new checkpoint,
    on the heap at parallelism 1: the output of both runs is the uninterrupted run's."""
    assert saved.manifest.version == 1 and sorted(saved.before) == [0, 1]
    ckpt = tmp_path / "ckpt"
    first, records = _run(
        spark,
        saved.folder,
        ckpt,
        parallelism=3,
        backend="rocksdb",
        trigger="processing_time:600s",  # its first batch, then stopped
        stop_at=2,
        from_savepoint=str(saved.path),
    )
    assert sorted(first) == [2] and records == {2: 0}
    assert (ckpt / RESTORED_FROM_FILE).is_file()
    # the restart lists the other old file first: it is dropped on every start
    rest, records = _run(spark, saved.folder, ckpt, parallelism=1, backend="hashmap")
    assert sorted(rest) == [3, 4, 5] and records == {3: 0, 4: 30, 5: 30}
    assert _flatten({**saved.before, **first, **rest}) == saved.expected()


def test_added_operator_starts_empty_and_removed_one_needs_allow_non_restored_state(
    spark, saved, tmp_path
):
    """An operator the savepoint's job did not have starts with empty state; a savepoint
    holding state of an operator the job no longer has is refused before anything is written,
    and accepted with ``allow_non_restored_state=True``."""
    added, records = _run(
        spark, saved.folder, tmp_path / "added", numbered=True, from_savepoint=str(saved.path)
    )
    assert records == {2: 0, 3: 0, 4: 30, 5: 30}  # the old files first, dropped
    rows = _flatten(added)
    alarms = [r[:3] for r in rows]
    assert _flatten(saved.before) + alarms == saved.expected()
    for key in {r[0] for r in rows}:  # the numbering starts at 1: the operator's state is new
        numbers = [r[3] for r in rows if r[0] == key]
        assert numbers == list(range(1, len(numbers) + 1))
    with_numbered = tmp_path / "with-numbered"
    write_savepoint(str(tmp_path / "added"), str(with_numbered))
    removed = tmp_path / "removed"
    with pytest.raises(CheckpointError, match="numbered") as refused:
        _run(spark, saved.folder, removed, from_savepoint=str(with_numbered))
    assert "allow_non_restored_state" in str(refused.value)
    assert not removed.exists() or not any(removed.iterdir())
    out, records = _run(
        spark,
        saved.folder,
        removed,
        trigger="once",
        from_savepoint=str(with_numbered),
        allow_non_restored_state=True,
    )
    assert sorted(out) == [6] and records == {6: 0}  # savepoint version 5, all files read


def test_refusals(spark, saved, tmp_path):
    """A non-empty checkpoint directory, a directory without ``savepoint.json`` (a savepoint
    whose taking was interrupted), a bounded job and a checkpoint whose start from a savepoint
    was interrupted are refused before Spark runs anything."""
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("x")
    with pytest.raises(SavepointError, match=r"not empty.*notes\.txt.*empty"):
        _run(spark, saved.folder, busy, from_savepoint=str(saved.path))
    partial = tmp_path / "partial"
    shutil.copytree(saved.path, partial)
    (partial / "savepoint.json").unlink()
    fresh = tmp_path / "fresh"
    with pytest.raises(NotASavepointError, match=r"partial.*incomplete.*savepoint again"):
        _run(spark, saved.folder, fresh, from_savepoint=str(partial))
    assert not fresh.exists() or not any(fresh.iterdir())
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.from_collection([1, 2]).print()
    with pytest.raises(ValueError, match=r"from_savepoint=.*no streaming source"):
        env.execute(from_savepoint=str(saved.path))
    with pytest.raises(ValueError, match=r"from_savepoint=.*no streaming source"):
        env.execute_async(from_savepoint=str(saved.path))
    interrupted = tmp_path / "interrupted"
    interrupted.mkdir()
    shutil.copy(saved.path / "savepoint.json", interrupted / "unused.json")
    (interrupted / RESTORED_FROM_FILE).write_text(
        '{"format_version": 1, "savepoint": "/sp", "version": 1, "sources": []}'
    )
    with pytest.raises(CheckpointError, match=r"interrupted.*empty checkpoint directory"):
        _run(spark, saved.folder, interrupted)


# ------------------------------------------------------------------------------ end to end
#
# A stream runs in a subprocess on a folder of files; once it has read them, a savepoint of its
# checkpoint is taken while the query still runs, each file of the savepoint written slowly,
# and the process is killed (SIGKILL) once a state file of the savepoint exists. The savepoint
# is then taken again from the checkpoint, more files arrive, and the job starts from it at
# another parallelism on the other backend. The job's windows never see a late record (see the
# kill test of test_streaming.py), so the output does not depend on the batch boundaries.

_SAVEPOINT_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import test_savepoint_restore
from sparktide.spark.session import get_spark
test_savepoint_restore.run_then_take_savepoint(
    get_spark("local[2]"), {inp!r}, {ckpt!r}, {out!r}, {savepoint!r}, {files!r}
)
"""


def windows_to_parquet(spark, directory, ckpt, out, trigger, **options):
    """The windows of the file stream of ``directory`` written by a ``ParquetBatchSink`` to
        ``out``; ``options``: ``parallelism``, ``backend``, ``per_file`` (one file per micro-batch,
    the default) and ``execute_async``'s arguments."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(options.pop("parallelism", 2))
    env.set_state_backend(backend_named(options.pop("backend", "hashmap")))
    reader = spark.readStream.schema(SCHEMA)
    if options.pop("per_file", True):
        reader = reader.option("maxFilesPerTrigger", 1)
    stream = env.from_stream(reader.json(str(directory)), _strategy(), timestamp_column="ts")
    _windows(stream).sink_to(ParquetBatchSink(str(out)))
    return env.execute_async(checkpoint_location=str(ckpt), trigger=trigger, **options)


def run_then_take_savepoint(spark, directory, ckpt, out, savepoint, files: int) -> None:
    """The subprocess: the stream reads ``files`` files, then, while its query runs, a
    savepoint is taken with every file write slowed down (the test kills this process)."""
    client = windows_to_parquet(spark, directory, ckpt, out, "processing_time:200ms")
    assert wait_for(lambda: client.last_committed_batch() == files - 1, 120)
    write = CheckpointStore._write_bytes

    def slow(store, path, data):
        time.sleep(0.3)
        write(store, path, data)

    CheckpointStore._write_bytes = slow  # type: ignore[method-assign]
    write_savepoint(str(ckpt), str(savepoint))
    raise SystemExit("the savepoint was not interrupted")


def _state_file_written(savepoint: Path) -> bool:
    state = savepoint / "state"
    return state.is_dir() and any(p.is_file() for p in state.rglob("*"))


def test_savepoint_killed_then_taken_again_restores_without_loss_or_duplicates(spark, tmp_path):
    batches = _in_order_records(4)
    _write_files(tmp_path / "in", batches[:2])
    ckpt, out, killed = tmp_path / "ckpt", tmp_path / "out", tmp_path / "killed"
    script = tmp_path / "job.py"
    tests = os.path.dirname(os.path.abspath(__file__))
    script.write_text(
        _SAVEPOINT_SCRIPT.format(
            tests=tests,
            inp=str(tmp_path / "in"),
            ckpt=str(ckpt),
            out=str(out),
            savepoint=str(killed),
            files=2,
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    try:
        assert wait_for(lambda: _state_file_written(killed) or proc.poll() is not None, 180)
        assert proc.poll() is None, "the subprocess ended before the savepoint was taken"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (killed / "savepoint.json").exists()
    with pytest.raises(NotASavepointError, match="incomplete"):
        windows_to_parquet(
            spark, tmp_path / "in", tmp_path / "never", out, "once", from_savepoint=str(killed)
        )
    savepoint = tmp_path / "savepoint"
    manifest = write_savepoint(str(ckpt), str(savepoint))  # taken again, from the checkpoint
    assert manifest.version == 1 and len(manifest.sources[0].files) == 2
    _write_files(tmp_path / "in", batches[2:], first=2)
    client = windows_to_parquet(
        spark,
        tmp_path / "in",
        tmp_path / "restored",
        out,
        "available_now",
        parallelism=3,
        backend="rocksdb",
        per_file=False,  # one batch: the files read before dropped, the new ones read
        from_savepoint=str(savepoint),
    )
    assert client.await_termination(120)
    assert [(p["batch_id"], p["records"]) for p in client.recent_progress] == [(2, 60)]
    expected = _fired_before_end(
        "windows", _reference("windows", batches), _final_watermark(batches)
    )
    assert _read_parquet(spark, out) == sorted(expected)
