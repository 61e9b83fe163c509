"""One writer per checkpoint directory: a second streaming query on a directory is refused,
naming the holder; the lock of a killed process is taken over."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import warnings

import pytest

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_lock import (
    LOCK_FILE,
    CheckpointLock,
    CheckpointLockedError,
    CheckpointLockWarning,
)
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import SCHEMA, _records, _strategy, _timers, _write_files

_HOLDER = """
import sys, time
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_lock import CheckpointLock

lock = CheckpointLock.acquire(CheckpointStore(sys.argv[1]), clock=lambda: 1_700_000_000_000)
print("locked", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder_process(tmp_path):
    """Start a process that takes the lock of ``tmp_path / "ckpt"`` and keeps it; yields it
    (killed at the end)."""
    script = tmp_path / "holder.py"
    script.write_text(_HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "ckpt")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def _holder_record(tmp_path) -> dict:
    return json.loads((tmp_path / "ckpt" / LOCK_FILE).read_text())


def test_a_second_lock_in_this_process_is_refused_naming_the_holder(tmp_path) -> None:
    store = CheckpointStore(str(tmp_path / "ckpt"))
    lock = CheckpointLock.acquire(store, clock=lambda: 1_700_000_000_123)
    assert lock.held
    assert _holder_record(tmp_path) == {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": "2023-11-14T22:13:20.123Z",
        "started_ms": 1_700_000_000_123,
    }
    with pytest.raises(CheckpointLockedError) as caught:
        CheckpointLock.acquire(CheckpointStore(str(tmp_path / "ckpt")))
    message = str(caught.value)
    assert f"host {socket.gethostname()}, pid {os.getpid()} (this process)" in message
    assert "started 2023-11-14T22:13:20.123Z" in message
    assert "Stop that query first, or give this job a checkpoint directory" in message
    assert isinstance(caught.value, CheckpointError)
    lock.release()
    lock.release()  # idempotent
    assert (tmp_path / "ckpt" / LOCK_FILE).read_bytes() == b""  # no holder any more
    CheckpointLock.acquire(store).release()


def test_a_lock_whose_holder_cannot_be_written_is_not_left_held(tmp_path, monkeypatch) -> None:
    import errno

    store = CheckpointStore(str(tmp_path / "ckpt"))

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(os, "pwrite", full)
        with pytest.raises(CheckpointError, match=r"No space left.*make the checkpoint location"):
            CheckpointLock.acquire(store)
    CheckpointLock.acquire(store).release()  # the disk has room again: the lock is free


def test_a_lock_held_by_another_process_is_refused_and_taken_over_once_it_is_killed(
    tmp_path, holder_process, caplog
) -> None:
    store = CheckpointStore(str(tmp_path / "ckpt"))
    with pytest.raises(CheckpointLockedError) as caught:
        CheckpointLock.acquire(store)
    message = str(caught.value)
    assert f"host {socket.gethostname()}, pid {holder_process.pid}, started " in message
    assert "2023-11-14T22:13:20.000Z" in message and "this process" not in message
    holder_process.send_signal(signal.SIGKILL)
    holder_process.wait()
    assert _holder_record(tmp_path)["pid"] == holder_process.pid  # stale, left behind
    with caplog.at_level(logging.INFO, logger="sparktide.streaming"):
        lock = CheckpointLock.acquire(store)
    assert lock.held
    assert _holder_record(tmp_path)["pid"] == os.getpid()
    assert f"pid {holder_process.pid}" in caplog.text and "no longer runs" in caplog.text
    lock.release()


def test_a_file_system_without_locks_warns_once() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lock = CheckpointLock.acquire(CheckpointStore("mock:///ckpt"))
    assert not lock.held
    [warning] = caught
    assert warning.category is CheckpointLockWarning
    assert "'mock:///ckpt' is not on a local file system" in str(warning.message)
    assert "run at most one query per checkpoint directory" in str(warning.message)
    lock.release()


# ------------------------------------------------------------------------------ on Spark


def _start(spark, directory, ckpt, trigger=None):
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema(SCHEMA).json(str(directory))
    _timers(env.from_stream(frame, _strategy(), timestamp_column="ts")).sink_to(
        ForeachBatchSink(lambda df, batch_id: None)
    )
    return env.execute_async(checkpoint_location=str(ckpt), trigger=trigger)


def test_one_query_per_checkpoint_directory(spark, tmp_path, holder_process) -> None:
    from conftest import wait_for

    _write_files(tmp_path / "in", _records(1))
    ckpt = tmp_path / "ckpt"
    # another process holds the directory
    with pytest.raises(CheckpointLockedError, match=f"pid {holder_process.pid}, started 2023-"):
        _start(spark, tmp_path / "in", ckpt)
    assert not (ckpt / "spark").exists()  # refused before the query started
    holder_process.kill()
    holder_process.wait()
    # its lock is taken over; a second query in this process is refused while the first runs
    first = _start(spark, tmp_path / "in", ckpt)
    try:
        assert wait_for(lambda: first.recent_progress, 120)
        with pytest.raises(
            CheckpointLockedError, match=rf"pid {os.getpid()} \(this process\), started 20"
        ):
            _start(spark, tmp_path / "in", ckpt, trigger="available_now")
    finally:
        first.stop()
    # stopped: the lock is free again; a query that ends by itself frees it unawaited
    second = _start(spark, tmp_path / "in", ckpt, trigger="available_now")
    assert wait_for(lambda: (ckpt / LOCK_FILE).read_bytes() == b"", 60)
    assert not second.is_active
    _start(spark, tmp_path / "in", ckpt, trigger="available_now").await_termination()
