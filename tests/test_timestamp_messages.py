"""Timestamp errors name what the user called (``from_stream`` or ``from_dataframe``) and give
advice that fits the wrong value's type: a ``datetime`` is converted with its ``timestamp()``,
a string is parsed first; ``int()`` of a string is never suggested."""

from __future__ import annotations

import datetime as dt

import pytest

from conftest import csv_stream
from sparktide.common import Row
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment


def _local() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(runtime="local")


def _assigned(value):
    """Run a local job whose timestamp assigner returns ``value``; the error it raises."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda record, previous: value
    )
    env = _local()
    stream = env.from_collection([1, 2]).assign_timestamps_and_watermarks(strategy)
    with pytest.raises(TypeError) as caught:
        stream.execute_and_collect()
    return str(caught.value)


def test_a_datetime_timestamp_gets_datetime_advice() -> None:
    message = _assigned(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    assert "got datetime" in message
    assert "int(dt.timestamp() * 1000)" in message


def test_a_string_timestamp_is_parsed_never_int_of_a_string() -> None:
    message = _assigned("2024-01-01T00:00:00")
    assert "got str" in message
    assert "parse the string first" in message
    assert "convert it with int(...)" not in message


def test_from_stream_null_timestamp_names_from_stream(spark, tmp_path) -> None:
    frame = csv_stream(spark, tmp_path / "in", "k string, ts long", "k,ts\na,\n")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    stream = env.from_stream(frame, timestamp_column="ts")
    assigner = stream.get_transformation().watermark_strategy.create_timestamp_assigner(None)
    with pytest.raises(ValueError, match=r"^from_stream: the timestamp column 'ts' holds null"):
        assigner.extract_timestamp(Row(k="a", ts=None), 0)


def test_from_dataframe_string_column_advises_to_timestamp(spark) -> None:
    df = spark.createDataFrame([("2024-01-01 00:00:01", 1)], "at string, v long")
    env = _local()
    with pytest.raises(TypeError, match=r"^from_dataframe: the timestamp column 'at'") as caught:
        env.from_dataframe(df, timestamp_column="at")  # at plan time, from the schema
    message = str(caught.value)
    assert "F.to_timestamp('at')" in message
    assert "int(" not in message


def test_a_from_stream_job_with_a_null_timestamp_fails_naming_from_stream(spark, tmp_path) -> None:
    frame = csv_stream(spark, tmp_path / "in", "k string, ts long", "k,ts\na,1\nb,\n")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.from_stream(frame, timestamp_column="ts").foreach_batch(lambda df, b: None)
    with pytest.raises(ValueError, match=r"^from_stream: the timestamp column 'ts' holds null"):
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
