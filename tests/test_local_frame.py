"""``local_frame``: rows the JVM holds as a local relation, with the values and types given."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparktide.spark.frames import local_frame


def _optimized_plan(df: Any) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())


def test_rows_are_a_local_relation_with_their_types(spark: Any) -> None:
    schema = pa.schema([("n", pa.int32()), ("k", pa.int64()), ("b", pa.binary())])
    df = local_frame(spark, [(1, 2**40, b"x"), (2, -1, b"")], schema)
    assert _optimized_plan(df).startswith("LocalRelation")
    assert [tuple(r) for r in df.collect()] == [(1, 2**40, bytearray(b"x")), (2, -1, bytearray())]
    assert df.schema.simpleString() == "struct<n:int,k:bigint,b:binary>"
    # what a list-built frame is on a classic session: a Python RDD, which this replaces
    listed = spark.createDataFrame([(1, 2, b"")], "n int, k bigint, b binary")
    assert not _optimized_plan(listed).startswith("LocalRelation")


def test_no_rows(spark: Any) -> None:
    df = local_frame(spark, [], pa.schema([("n", pa.int32())]))
    assert df.collect() == []
    assert df.schema.simpleString() == "struct<n:int>"
