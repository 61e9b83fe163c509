"""A streaming job reading two ``from_stream`` sources: both are read by one Structured
Streaming query (their union), and each micro-batch is one round of both. An interval join of
two file streams equals the local runtime's bounded run with rounds of one file per source."""

from __future__ import annotations

import pytest

from sparktide.common import Row, Types
from sparktide.datastream import ProcessJoinFunction, StreamExecutionEnvironment
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import EVENT, PER_FILE, SCHEMA, _records, _strategy, _write_files

PAIR = Types.ROW_NAMED(
    ["key", "left_ts", "right_ts", "left_v", "right_v"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
RIGHT_SCHEMA = "name string, at long, v long"  # other column names: the union keeps both


class Pairs(ProcessJoinFunction):
    def process_element(self, left, right, ctx):
        yield Row(key=left.key, left_ts=left.ts, right_ts=right.at, left_v=left.v, right_v=right.v)


def _join(left, right):
    return (
        left.key_by(lambda r: r.key)
        .interval_join(right.key_by(lambda r: r.name))
        .between(-300, 300)
        .process(Pairs(), output_type=PAIR)
    )


def _right_rows(batches):
    return [[(k, t, v) for k, t, v in batch] for batch in batches]


def _reference(left_batches, right_batches) -> list[tuple]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(2)
    env.get_config().set_watermark_every(PER_FILE)
    right_type = Types.ROW_NAMED(["name", "at", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
    left = env.from_collection(
        [Row(key=k, ts=t, v=v) for b in left_batches for k, t, v in b], type_info=EVENT
    ).assign_timestamps_and_watermarks(_strategy().with_timestamp_assigner(lambda r, _: r.ts))
    right = env.from_collection(
        [Row(name=k, at=t, v=v) for b in right_batches for k, t, v in b], type_info=right_type
    ).assign_timestamps_and_watermarks(_strategy().with_timestamp_assigner(lambda r, _: r.at))
    return sorted(tuple(r) for r in _join(left, right).execute_and_collect())


def test_interval_join_of_two_streams_equals_the_bounded_run(spark, tmp_path) -> None:
    left_batches, right_batches = _records(4, seed=3), _records(4, seed=4)
    _write_files(tmp_path / "left", left_batches)
    right_dir = tmp_path / "right"
    right_dir.mkdir()
    import json
    import os

    for f, rows in enumerate(right_batches):
        path = right_dir / f"part-{f:04d}.json"
        path.write_text(
            "".join(json.dumps({"name": k, "at": t, "v": v}) + "\n" for k, t, v in rows)
        )
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)

    def read(directory, schema):
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(directory))

    left = env.from_stream(read(tmp_path / "left", SCHEMA), _strategy(), timestamp_column="ts")
    right = env.from_stream(read(right_dir, RIGHT_SCHEMA), _strategy(), timestamp_column="at")
    out: dict[int, list[tuple]] = {}
    _join(left, right).sink_to(
        ForeachBatchSink(lambda df, b: out.__setitem__(b, [tuple(r) for r in df.collect()]))
    )
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert client.await_termination(600), client.recent_progress
    progress = client.recent_progress
    assert [p["records"] for p in progress] == [2 * PER_FILE] * 4  # a file of each per batch
    assert set(progress[-1]["split_watermarks"]) == {"0", "1"}  # one split per source
    streamed = sorted(row for rows in out.values() for row in rows)
    expected = _reference(left_batches, right_batches)
    assert len(expected) > 20
    assert streamed == expected


def test_a_bounded_source_in_a_streaming_job_is_refused(spark, tmp_path) -> None:
    _write_files(tmp_path / "in", _records(1))
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    left = env.from_stream(frame, _strategy(), timestamp_column="ts")
    right = env.from_collection([Row(key="a", ts=1, v=1)], type_info=EVENT)
    left.union(right).sink_to(ForeachBatchSink(lambda df, b: None))
    with pytest.raises(ValueError, match=r"every source of a streaming job must be made by"):
        env.execute(checkpoint_location=str(tmp_path / "ckpt"))
