"""Folders a job writes are checked before its first batch, and a full disk fails a batch
without committing it.

The tests run as root (here and in CI), which permission bits do not stop, so a folder that
cannot be written is made real in ways root cannot get around: a path under a regular file
(everywhere) and a read-only tmpfs mount (where mounting is permitted, else skipped). A full
disk is a tiny tmpfs filled up mid-run (where permitted) and, everywhere, an in-process
``ENOSPC`` from the checkpoint's file system at the commit of a batch.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator

import pytest

from sparktide.common import Types
from sparktide.common.serialization import Encoder
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.connectors.file_system import FileSink
from sparktide.runtime.filesystems import NotWritableError, check_writable
from sparktide.spark import checkpoint as checkpoint_module
from sparktide.spark.checkpoint import CheckpointError
from sparktide.spark.streaming import ParquetBatchSink
from test_stream_inputs import _run
from test_streaming import (
    _final_watermark,
    _fired_before_end,
    _in_order_records,
    _read_parquet,
    _reference,
    _write_files,
)


@contextlib.contextmanager
def _tmpfs(path, size: str, read_only: bool = False) -> Iterator[None]:
    """A tmpfs of ``size`` mounted at ``path`` (made here); skips the test where mounting is
    not permitted."""
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _expected(batches) -> list[tuple]:
    reference = _reference("windows", batches)
    return sorted(_fired_before_end("windows", reference, _final_watermark(batches)))


# ------------------------------------------------------------------------------ the check


def test_a_path_under_a_regular_file_is_refused_naming_it(tmp_path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(NotWritableError) as caught:
        check_writable(str(blocker / "ckpt"), "checkpoint_location")
    message = str(caught.value)
    assert f"checkpoint_location '{blocker}/ckpt' cannot be written" in message
    assert f"{blocker} is a regular file, not a folder" in message
    assert caught.value.errno == errno.ENOTDIR
    check_writable(str(tmp_path / "fine" / "ckpt"), "checkpoint_location")
    assert os.listdir(tmp_path / "fine" / "ckpt") == []  # the probe is gone
    check_writable("mock:///bucket/out", "the output folder")  # a pyarrow.fs URI


def test_a_read_only_mount_is_refused(tmp_path) -> None:
    refused = pytest.raises(NotWritableError, match=r"mounted read-only: choose a writable")
    with _tmpfs(tmp_path / "ro", "1m", read_only=True), refused:
        check_writable(str(tmp_path / "ro" / "out"), "the output folder of sink 'out'")


# ------------------------------------------------------------------------------ before the job


def test_a_streaming_job_is_refused_before_spark_starts_it(spark, tmp_path) -> None:
    _write_files(tmp_path / "in", _in_order_records(1))
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    queries = len(spark.streams.active)
    with pytest.raises(NotWritableError, match=r"^checkpoint_location .* is a regular file"):
        _run(spark, tmp_path / "in", blocker / "ckpt", tmp_path / "out")
    with pytest.raises(NotWritableError, match=r"^the output folder of sink .* regular file"):
        _run(spark, tmp_path / "in", tmp_path / "ckpt", blocker / "out")
    assert len(spark.streams.active) == queries
    assert not (tmp_path / "ckpt" / "spark").exists()  # Spark never started the query


def test_a_bounded_file_sink_is_refused_before_the_job_runs(tmp_path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    sink = FileSink.for_row_format(str(blocker / "out"), Encoder.simple_string_encoder())
    env.from_collection(["a", "b"], type_info=Types.STRING()).sink_to(sink.build())
    with pytest.raises(NotWritableError, match=r"output folder of sink .*/blocker/out"):
        env.execute()


# ------------------------------------------------------------------------------ a full disk


class _FullAtCommit:
    """The checkpoint's file system, whose disk fills up when the commit of ``version`` is
    written (``ENOSPC`` in the middle of that file)."""

    def __init__(self, inner, version: int) -> None:
        self._inner = inner
        self._name = f"/commits/{version}.json"

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def open_output_stream(self, path, *args, **kwargs):
        if self._name in path:
            self._inner.open_output_stream(path).close()  # a torn file is left
            raise OSError(errno.ENOSPC, f"No space left on device: {path}")
        return self._inner.open_output_stream(path, *args, **kwargs)


def test_a_full_disk_at_the_commit_leaves_the_batch_uncommitted(
    spark, tmp_path, monkeypatch
) -> None:
    batches = _in_order_records(3)
    _write_files(tmp_path / "in", batches)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    opened = checkpoint_module.open_filesystem

    def full_disk(location, *args):
        filesystem, root = opened(location, *args)
        return _FullAtCommit(filesystem, 2), root

    monkeypatch.setattr(checkpoint_module, "open_filesystem", full_disk)  # how the store opens
    with pytest.raises(CheckpointError, match=r"commits/2.json: .*no space left on its device"):
        _run(spark, tmp_path / "in", ckpt, out)
    assert sorted(os.listdir(ckpt / "commits")) == ["0.json", "1.json"]  # nothing torn left
    monkeypatch.undo()
    [resumed] = _run(spark, tmp_path / "in", ckpt, out)
    assert resumed["batch_id"] == 2
    assert _read_parquet(spark, out) == _expected(batches)


def test_a_disk_that_fills_mid_run_resumes_from_the_last_commit(spark, tmp_path) -> None:
    batches = _in_order_records(3)
    _write_files(tmp_path / "in", batches)
    disk, out = tmp_path / "disk", tmp_path / "out"
    with _tmpfs(disk, "8m"):
        ckpt = disk / "ckpt"
        filler = disk / "filler"
        with pytest.raises(Exception, match=r"(?i)no space left"):
            _run_filling(spark, tmp_path / "in", ckpt, out, filler)
        assert os.listdir(ckpt / "commits") == ["0.json"]
        filler.unlink()
        resumed = _run(spark, tmp_path / "in", ckpt, out)
        assert [m["batch_id"] for m in resumed] == [1, 2]
        assert _read_parquet(spark, out) == _expected(batches)


def _run_filling(spark, directory, ckpt, out, filler) -> None:
    """The job of :func:`_run`, whose disk fills up once batch 0 is committed."""
    from test_streaming import JOBS, SCHEMA, _strategy

    def fill(metrics) -> None:
        if metrics["batch_id"] == 0:
            with open(filler, "wb") as f, contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 65536)

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    JOBS["windows"](stream).sink_to(ParquetBatchSink(str(out)))
    client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    client.add_listener(fill)
    client.await_termination()
