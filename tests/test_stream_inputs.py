"""A replayed micro-batch reads exactly what its first attempt read, or stops saying why.

Spark replays a micro-batch that was not committed with the files its source log lists for it,
and reads a listed file that no longer exists as empty. A replay that read less and committed
would replace what the first attempt's sinks wrote with less. The tests kill a run before
sparktide's commit of its last micro-batch (by removing that commit and Spark's, as
``test_streaming`` does), then change the input before the restart.
"""

from __future__ import annotations

import json
import logging
import os
import shutil

import pytest

from sparktide.common.config_options import SKIP_MISSING_INPUT_FILES
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.batch_inputs import (
    ChangedInputError,
    MissingInputFilesError,
    spark_batch_files,
)
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_meta import BatchInputs, InputFile
from sparktide.spark.streaming import ParquetBatchSink
from test_streaming import (
    JOBS,
    PER_FILE,
    SCHEMA,
    _drop_spark_commit,
    _final_watermark,
    _fired_before_end,
    _in_order_records,
    _read_parquet,
    _reference,
    _strategy,
    _write_files,
)


def _run(spark, directory, ckpt, out, skip: bool | None = None) -> list:
    """The windows job over ``directory`` (one file per micro-batch) into a Parquet sink;
    returns the metrics of the batches it committed."""
    config = {} if skip is None else {SKIP_MISSING_INPUT_FILES.key(): str(skip).lower()}
    env = StreamExecutionEnvironment.get_execution_environment(config, runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    JOBS["windows"](stream).sink_to(ParquetBatchSink(str(out)))
    client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    client.await_termination()
    return client.recent_progress


def _killed_before_commit(ckpt, version: int) -> None:
    """What a kill after the sinks of ``version`` wrote and before its commit leaves."""
    (ckpt / "commits" / f"{version}.json").unlink()
    _drop_spark_commit(ckpt, version)


def _file_of_batch(ckpt, batch: int) -> str:
    lines = (ckpt / "spark" / "sources" / "0" / str(batch)).read_text().splitlines()[1:]
    [entry] = [json.loads(line) for line in lines]
    return entry["path"].removeprefix("file://")


def _batch_rows(spark, out, batch: int) -> list[tuple]:
    return _read_parquet(spark, out / f"batch={batch}")


@pytest.fixture(scope="module")
def first_run(spark, tmp_path_factory):
    """Three files, one micro-batch each, run once: the input folder (which every test leaves
    as it found it), and the checkpoint and output each test starts from a copy of."""
    base = tmp_path_factory.mktemp("first-run")
    batches = _in_order_records(3)
    _write_files(base / "in", batches)
    _run(spark, base / "in", base / "ckpt", base / "out")
    return batches, base


@pytest.fixture
def killed_run(spark, tmp_path, first_run):
    """The first run with its last micro-batch killed before its commit: the sink holds what
    the first attempt of every batch wrote. Yields the records, input folder, checkpoint,
    output and the rows of batch 2; restores the input folder after the test."""
    batches, base = first_run
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    shutil.copytree(base / "ckpt", ckpt)
    shutil.copytree(base / "out", out)
    _killed_before_commit(ckpt, 2)
    written = _batch_rows(spark, out, 2)
    assert written  # the batch fired windows: rows a replay reading less would remove
    yield batches, base / "in", ckpt, out, written
    _write_files(base / "in", batches)  # as it was, modification times included


def test_a_vanished_file_stops_the_replay_and_its_restore_gives_the_reference(
    spark, killed_run
) -> None:
    batches, inputs, ckpt, out, written = killed_run
    vanished = _file_of_batch(ckpt, 2)
    with open(vanished, "rb") as f:
        saved = f.read()
    os.remove(vanished)
    with pytest.raises(MissingInputFilesError) as caught:
        _run(spark, inputs, ckpt, out)
    message = str(caught.value)
    assert vanished in message and "micro-batch 2" in message
    assert "restore the file" in message.lower() and SKIP_MISSING_INPUT_FILES.key() in message
    assert _batch_rows(spark, out, 2) == written  # nothing the first attempt wrote is gone
    assert not (ckpt / "commits" / "2.json").exists()
    # the file restored as it was: the replay reads it and the output is the reference
    with open(vanished, "wb") as f:
        f.write(saved)
    os.utime(vanished, (1_700_000_002, 1_700_000_002))
    [replayed] = _run(spark, inputs, ckpt, out)
    assert replayed["batch_id"] == 2 and replayed["records"] == PER_FILE
    assert "skipped_records" not in replayed
    reference = _reference("windows", batches)
    expected = _fired_before_end("windows", reference, _final_watermark(batches))
    assert _read_parquet(spark, out) == sorted(expected)


def test_a_changed_file_stops_the_replay(spark, killed_run) -> None:
    _, inputs, ckpt, out, written = killed_run
    changed = _file_of_batch(ckpt, 2)
    with open(changed, "a") as f:
        f.write(json.dumps({"key": "k0", "ts": 8_999, "v": 1}) + "\n")
    message = r"changed since micro-batch 2 first read them: .*part-0002.json: size"
    with pytest.raises(ChangedInputError, match=message):
        _run(spark, inputs, ckpt, out)
    assert _batch_rows(spark, out, 2) == written


def test_the_skip_option_replays_without_the_file_and_reports_the_records_skipped(
    spark, killed_run, caplog
) -> None:
    _, inputs, ckpt, out, _ = killed_run
    vanished = _file_of_batch(ckpt, 2)
    os.remove(vanished)
    with caplog.at_level(logging.WARNING, logger="sparktide.streaming"):
        [replayed] = _run(spark, inputs, ckpt, out, skip=True)
    assert replayed["batch_id"] == 2 and replayed["records"] == 0
    assert replayed["skipped_records"] == PER_FILE
    assert replayed["skipped_input_files"] == [f"file://{vanished}"]
    [line] = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert f"{PER_FILE} records" in line and vanished in line
    committed = CheckpointStore(str(ckpt)).commit_info(2).metrics
    assert committed["skipped_records"] == PER_FILE


# ------------------------------------------------------------------------------ the parts


def test_the_files_of_a_micro_batch_come_from_sparks_source_log(tmp_path) -> None:
    store = CheckpointStore(str(tmp_path / "ckpt"))
    log = tmp_path / "ckpt" / "spark" / "sources" / "0"
    log.mkdir(parents=True)
    entry = {"path": "file:///in/a.json", "timestamp": 5, "batchId": 3}
    (log / "3").write_text("v1\n" + json.dumps(entry) + "\n")
    (log / "9.compact").write_text(
        "v1\n"
        + "\n".join(
            json.dumps({**entry, "path": f"file:///in/{b}", "batchId": b}) for b in (3, 8, 9)
        )
    )
    kafka = tmp_path / "ckpt" / "spark" / "sources" / "1"
    kafka.mkdir()
    (kafka / "0").write_text('v1\n{"topic":{"0":0}}')  # not a file source
    assert spark_batch_files(store, 3) == ["file:///in/a.json"]
    assert spark_batch_files(store, 9) == ["file:///in/9"]  # from the compacted log
    assert spark_batch_files(store, 0) == [] and spark_batch_files(store, 4) == []


def test_the_record_of_a_batchs_inputs_is_versioned_json() -> None:
    inputs = BatchInputs(2, 5, (InputFile("file:///a", 10, 7),), {0: 8, 1: 0})
    raw = inputs.to_json()
    assert raw["format_version"] >= 1 and raw["records"] == {"0": 8, "1": 0}
    assert BatchInputs.from_json(json.loads(json.dumps(raw)), "inputs/2.json") == inputs
    with pytest.raises(ValueError, match=r"inputs/2.json: field 'records.0' must be an int"):
        BatchInputs.from_json({**raw, "records": {"0": "8"}}, "inputs/2.json")
