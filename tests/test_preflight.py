"""What the job graph, the DataFrame schema and the checkpoint directory decide is refused
before Spark runs anything: a changed job, a checkpoint another query holds, Spark's logs that
disagree with the last commit, and an event-time column of the wrong type."""

from __future__ import annotations

import shutil

import pytest

import sparktide.spark.executor as spark_executor
from sparktide.common import Duration, WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_lock import CheckpointLock, CheckpointLockedError
from sparktide.spark.offset_log import SparkLogMismatchError
from test_checkpoint_identity import _run, _write

WINDOW = [("w", 2_000, None, "w1")]


def _no_session() -> None:
    raise AssertionError("the session was asked for before the pre-flight checks refused the job")


def test_checkpoint_errors_come_before_the_session_is_used(spark, tmp_path, monkeypatch) -> None:
    _write(tmp_path / "in", 0)
    _run(spark, tmp_path, WINDOW)  # a committed checkpoint
    monkeypatch.setattr(spark_executor, "get_spark", _no_session)

    # a changed job: its operator has another uid
    with pytest.raises(CheckpointError, match="uid 'w1'"):
        _run(spark, tmp_path, [("w", 2_000, None, "w2")])

    # another query holds the directory
    store = CheckpointStore(str(tmp_path / "ckpt"))
    held = CheckpointLock.acquire(store)
    try:
        with pytest.raises(CheckpointLockedError, match="in use by another streaming query"):
            _run(spark, tmp_path, WINDOW)
    finally:
        held.release()

    # the checks pass: then the session is asked for (refused here), and the lock given back
    with pytest.raises(AssertionError, match="the session was asked for"):
        _run(spark, tmp_path, WINDOW)
    CheckpointLock.acquire(store).release()

    # Spark's offset log gone while sparktide has commits; the lock is given back
    shutil.rmtree(tmp_path / "ckpt" / "spark" / "offsets")
    with pytest.raises(SparkLogMismatchError, match="is missing or empty"):
        _run(spark, tmp_path, WINDOW)
    CheckpointLock.acquire(store).release()


@pytest.mark.parametrize(
    ("column_type", "advice"),
    [
        ("string", "parse the strings into a timestamp column first"),
        ("date", "make it a timestamp column, e.g. df.withColumn('ts', F.col('ts').cast("),
        ("double", "make it integral milliseconds"),
    ],
)
def test_a_timestamp_column_of_another_type_is_refused_at_plan_time(
    spark, column_type, advice
) -> None:
    df = spark.createDataFrame([], f"key string, ts {column_type}")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    with pytest.raises(TypeError) as caught:
        env.from_dataframe(df, strategy, timestamp_column="ts")
    message = str(caught.value)
    assert message.startswith(
        "from_dataframe: the timestamp column 'ts' must hold integers (epoch milliseconds) or "
        f"timestamps, but it is a {column_type} column; "
    )
    assert advice in message
    # integers, timestamps, or a strategy with its own assigner: accepted
    for accepted in ("long", "int", "timestamp"):
        ok = spark.createDataFrame([], f"key string, ts {accepted}")
        env.from_dataframe(ok, strategy, timestamp_column="ts")
    own = strategy.with_timestamp_assigner(lambda r, _: 0)
    env.from_dataframe(df, own, timestamp_column="ts")
