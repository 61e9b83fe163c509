"""Spark's offset log and sparktide's commits must agree before a streaming query starts.

The two parts of a checkpoint may differ by what one crash leaves (Spark has logged the
micro-batch in flight, or has not written its commit of the last one); anything else is refused
with a :class:`SparkLogMismatchError` that says what to do, instead of starting a query that
skips rows.
"""

from __future__ import annotations

import shutil
import textwrap

import pytest

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.offset_log import (
    SparkLog,
    SparkLogMismatchError,
    check_spark_log,
    read_spark_log,
)
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import (
    JOBS,
    SCHEMA,
    _final_watermark,
    _fired_before_end,
    _records,
    _reference,
    _strategy,
    _write_files,
)

# ------------------------------------------------------------------------------ the rule


def _checkpoint(tmp_path, offsets: list[int], commits: list[int]) -> CheckpointStore:
    store = CheckpointStore(str(tmp_path / "ckpt"))
    for folder, ids in (("offsets", offsets), ("commits", commits)):
        directory = tmp_path / "ckpt" / "spark" / folder
        directory.mkdir(parents=True, exist_ok=True)
        for n in ids:
            (directory / str(n)).write_text("v1\n{}\n")
            (directory / f".{n}.crc").write_bytes(b"crc")  # Spark's checksum files: not entries
    return store


@pytest.mark.parametrize(
    ("offsets", "commits", "last"),
    [
        ([], [], None),  # a new checkpoint
        ([0], [], None),  # killed in the first micro-batch
        ([0, 1, 2], [0, 1, 2], 2),  # stopped cleanly
        ([0, 1, 2, 3], [0, 1, 2], 2),  # killed with micro-batch 3 in flight
        ([0, 1, 2], [0, 1], 2),  # killed between sparktide's commit of 2 and Spark's
        ([5, 6, 7], [5, 6], 7),  # Spark purged its oldest entries
    ],
)
def test_what_a_crash_leaves_is_accepted(tmp_path, offsets, commits, last) -> None:
    store = _checkpoint(tmp_path, offsets, commits)
    assert read_spark_log(store) == SparkLog(max(offsets, default=None), max(commits, default=None))
    check_spark_log(store, committed=None if last is None else last + 10, last_spark_batch=last)


@pytest.mark.parametrize(
    ("offsets", "commits", "last", "message"),
    [
        ([], [], 2, r"offset log .*spark/offsets' is missing or empty.* up to 2"),
        ([0, 1], [0, 1], 2, r"ends at micro-batch 1, behind sparktide"),
        ([0, 1, 2, 3, 4], [0, 1, 2, 3], 2, r"holds micro-batch 4.* at most micro-batch 3"),
        ([0, 1], [0], None, r"holds micro-batch 1, but sparktide has committed nothing"),
        ([0, 1, 2, 3], [0, 1, 2, 3], 2, r"commit log .* marks micro-batch 3 done"),
        ([0], [0], None, r"marks micro-batch 0 done, but sparktide has committed nothing"),
    ],
)
def test_other_states_are_refused_saying_what_to_do(
    tmp_path, offsets, commits, last, message
) -> None:
    store = _checkpoint(tmp_path, offsets, commits)
    with pytest.raises(SparkLogMismatchError, match=message) as caught:
        check_spark_log(store, committed=None if last is None else 7, last_spark_batch=last)
    assert isinstance(caught.value, CheckpointError)
    assert "restore the whole checkpoint directory" in str(caught.value)
    assert "new, empty checkpoint directory" in str(caught.value)


def test_spark_logs_are_read_through_the_stores_file_system() -> None:
    store = CheckpointStore("mock:///ckpt")
    store.write(store.path("spark", "offsets", "0"), b"v1\n")
    store.write(store.path("spark", "offsets", "1"), b"v1\n")
    store.write(store.path("spark", "commits", "0"), b"v1\n")
    assert read_spark_log(store) == SparkLog(last_offset=1, last_commit=0)
    with pytest.raises(SparkLogMismatchError, match="behind"):
        check_spark_log(store, committed=3, last_spark_batch=3)


# ------------------------------------------------------------------------------ on Spark


def run_job(spark, directory, ckpt, files_per_batch: int) -> list[tuple]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", files_per_batch)
        .json(str(directory))
    )
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        out[batch_id] = [tuple(r) for r in df.collect()]

    JOBS["windows"](stream).sink_to(ForeachBatchSink(collect))
    env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return [row for b in sorted(out) for row in out[b]]


def _expected(batches) -> list[tuple]:
    reference = _reference("windows", batches)
    return sorted(_fired_before_end("windows", reference, _final_watermark(batches)))


def test_a_checkpoint_whose_spark_logs_disagree_is_refused(spark, tmp_path) -> None:
    batches = _records(5)
    _write_files(tmp_path / "in", batches[:2])
    ckpt = tmp_path / "ckpt"
    first = run_job(spark, tmp_path / "in", ckpt, 1)  # micro-batches 0 and 1
    _write_files(tmp_path / "in", batches[2:], first=2)
    backup = tmp_path / "spark-backup"
    shutil.copytree(ckpt / "spark", backup)

    def restore() -> None:
        shutil.rmtree(ckpt / "spark", ignore_errors=True)
        shutil.copytree(backup, ckpt / "spark")

    # Spark's folder deleted: Spark would start again at micro-batch 0 with three files per
    # micro-batch, and sparktide would skip micro-batches 0 and 1 (all five files) as committed
    shutil.rmtree(ckpt / "spark")
    with pytest.raises(SparkLogMismatchError, match="missing or empty"):
        run_job(spark, tmp_path / "in", ckpt, 3)
    restore()
    # Spark's log behind sparktide's commits
    for folder in ("offsets", "commits"):
        (ckpt / "spark" / folder / "1").unlink()
    with pytest.raises(SparkLogMismatchError, match="ends at micro-batch 0, behind"):
        run_job(spark, tmp_path / "in", ckpt, 3)
    restore()
    # Spark's log more than one micro-batch ahead
    for n in (2, 3):
        shutil.copy(ckpt / "spark" / "offsets" / "1", ckpt / "spark" / "offsets" / str(n))
    with pytest.raises(SparkLogMismatchError, match="holds micro-batch 3"):
        run_job(spark, tmp_path / "in", ckpt, 3)
    restore()
    # the intact checkpoint goes on where it stopped, with another maxFilesPerTrigger
    second = run_job(spark, tmp_path / "in", ckpt, 3)
    assert sorted(first + second) == _expected(batches)


def test_sparktide_run_exits_non_zero_with_the_error(spark, tmp_path, capsys, monkeypatch) -> None:
    from sparktide.cli import main

    for name in ("SPARKTIDE_RUNTIME", "SPARKTIDE_MASTER", "SPARKTIDE_PARALLELISM"):
        monkeypatch.setenv(name, "")  # `sparktide run` sets them: restored after the test
        monkeypatch.delenv(name)
    _write_files(tmp_path / "in", _records(2))
    ckpt = tmp_path / "ckpt"
    run_job(spark, tmp_path / "in", ckpt, 1)
    shutil.rmtree(ckpt / "spark")
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(
            f"""
            from pyspark.sql import SparkSession

            import test_spark_offset_log as t

            t.run_job(SparkSession.getActiveSession(), {str(tmp_path / "in")!r}, {str(ckpt)!r}, 1)
            """
        )
    )
    assert main(["run", str(job)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sparktide: error: Spark's offset log")
    assert "new, empty checkpoint directory" in err
