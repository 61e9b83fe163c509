"""Parquet sinks written by the driver (``sparktide.spark.driver_parquet``): Spark reads back
exactly what its own writer gives for the same records, a one-pass micro-batch writes them
without a Spark job of their own, and a batch written again replaces its folder."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparktide.common.arrow_columns import arrow_schema_of
from sparktide.common.typeinfo import Types
from sparktide.spark.driver_parquet import SPARK_ROW_METADATA, DriverParquet
from sparktide.spark.frames import spark_schema_of
from sparktide.spark.streaming import ParquetBatchSink
from test_streaming import _marker_jobs, _records, _stream, _write_files

FIELDS = {
    "b": (Types.BYTE(), lambda r: r.randrange(-128, 128)),
    "s": (Types.SHORT(), lambda r: r.randrange(-(2**15), 2**15)),
    "i": (Types.INT(), lambda r: r.randrange(-(2**31), 2**31)),
    "l": (Types.LONG(), lambda r: r.randrange(-(2**63), 2**63)),
    "big": (Types.BIG_INT(), lambda r: r.randrange(-(2**63), 2**63)),
    "f": (Types.FLOAT(), lambda r: r.choice([0.5, -0.0, float("inf"), float("nan")])),
    "d": (Types.DOUBLE(), lambda r: r.choice([r.random(), -0.0, float("-inf"), 1e308])),
    "str": (Types.STRING(), lambda r: r.choice(["", "é", "a\nb", "日本", "x" * 40])),
    "bool": (Types.BOOLEAN(), lambda r: r.random() < 0.5),
    "dec": (Types.BIG_DEC(), lambda r: decimal.Decimal(r.randrange(-(10**30), 10**30)) / 10**18),
    "bytes": (Types.PRIMITIVE_ARRAY(Types.BYTE()), lambda r: r.randbytes(r.randrange(4))),
    "date": (Types.LOCAL_DATE(), lambda r: dt.date(r.choice([1, 1969, 2020, 9999]), 3, 8)),
    "ldt": (  # 02:30 on 2020-03-08 does not exist in New York
        Types.LOCAL_DATE_TIME(),
        lambda r: dt.datetime(2020, 3, 8, 2, 30, r.randrange(60), r.randrange(10**6)),
    ),
    "sqlts": (Types.SQL_TIMESTAMP(), lambda r: dt.datetime(1960, 11, 1, 1, 30, 0, 123000)),
    "inst": (
        Types.INSTANT(),
        lambda r: dt.datetime(1900 + r.randrange(200), 1, 1, tzinfo=dt.timezone.utc),
    ),
    "arr": (Types.LIST(Types.LONG()), lambda r: [r.randrange(9) for _ in range(r.randrange(3))]),
    "map": (Types.MAP(Types.STRING(), Types.DOUBLE()), lambda r: [("k", 1.5)] * r.randrange(2)),
    "row": (
        Types.ROW_NAMED(["x", "t"], [Types.INT(), Types.LOCAL_DATE_TIME()]),
        lambda r: {"x": r.randrange(9), "t": dt.datetime(2021, 11, 7, 1, 30)},
    ),
}
ROW = Types.ROW_NAMED(list(FIELDS), [t for t, _ in FIELDS.values()])


def _table(rows: int, seed: int) -> pa.Table:
    """``rows`` random records of :data:`ROW` as the tasks give them, a null in every field of
    every fifth."""
    rng = random.Random(seed)
    records = [
        {name: None if k % 5 == 4 else make(rng) for name, (_, make) in FIELDS.items()}
        for k in range(rows)
    ]
    return pa.Table.from_pylist(records, schema=arrow_schema_of(ROW))


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_spark_reads_what_the_driver_writes_as_what_it_writes_itself(
    spark, tmp_path: Path, zone: str
) -> None:
    table, schema = _table(40, seed=len(zone)), spark_schema_of(ROW)
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        spark.createDataFrame(table, schema=schema).write.parquet(str(tmp_path / "spark"))
        writer = DriverParquet.of(spark, schema)
        assert writer is not None and writer.timezone == zone
        writer.write(table, schema, tmp_path / "driver")
        theirs = spark.read.parquet(str(tmp_path / "spark"))
        ours = spark.read.parquet(str(tmp_path / "driver"))
        assert ours.schema == theirs.schema
        # by repr: NaN equals itself there; Spark's writer splits the rows over its partitions
        assert sorted(map(repr, ours.collect())) == sorted(map(repr, theirs.collect()))
        assert len(ours.collect()) == 40
        # one file, the records in the table's order
        assert [r["l"] for r in ours.collect()] == table.column("l").to_pylist()
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)


def test_a_batch_written_again_replaces_its_folder(spark, tmp_path: Path) -> None:
    schema = spark_schema_of(ROW)
    writer = DriverParquet.of(spark, schema)
    assert writer is not None
    target = tmp_path / "out" / "batch=3"
    writer.write(_table(7, seed=1), schema, target)
    # what a write killed before its rename leaves: a hidden folder, never read, then removed
    (tmp_path / "out" / ".batch=3.dead").mkdir()
    (tmp_path / "out" / ".batch=3.dead" / "part-0.parquet").write_bytes(b"junk")
    assert spark.read.parquet(str(tmp_path / "out")).count() == 7
    writer.write(_table(2, seed=2), schema, target)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["batch=3"]
    [part] = [p for p in target.iterdir() if p.name != "_SUCCESS"]
    assert (target / "_SUCCESS").exists() and part.name.endswith(".snappy.parquet")
    footer = pq.read_metadata(part)
    assert footer.metadata[SPARK_ROW_METADATA.encode()] == schema.json().encode()
    back = spark.read.parquet(str(tmp_path / "out"))
    assert back.count() == 2 and {r["batch"] for r in back.collect()} == {3}
    # a batch without records: a file of no rows, read as Spark's own (its schema, no rows)
    writer.write(_table(0, seed=3), schema, target)
    spark.createDataFrame(_table(0, seed=3), schema=schema).write.parquet(str(tmp_path / "empty"))
    empty = spark.read.parquet(str(target))
    assert empty.count() == 0 and empty.schema == spark.read.parquet(str(tmp_path / "empty")).schema


def test_the_driver_writes_with_the_session_s_codec_or_leaves_the_write_to_spark(spark) -> None:
    schema = spark_schema_of(ROW)
    saved = spark.conf.get("spark.sql.parquet.compression.codec")
    try:
        spark.conf.set("spark.sql.parquet.compression.codec", "zstd")
        writer = DriverParquet.of(spark, schema)
        assert writer is not None and writer.compression == "zstd"
        spark.conf.set("spark.sql.parquet.compression.codec", "lz4")  # Hadoop's LZ4 framing
        assert DriverParquet.of(spark, schema) is None
    finally:
        spark.conf.set("spark.sql.parquet.compression.codec", saved)
    spark.conf.set("spark.sql.parquet.writeLegacyFormat", "true")  # for Hive and Impala
    try:
        assert DriverParquet.of(spark, schema) is None
    finally:
        spark.conf.unset("spark.sql.parquet.writeLegacyFormat")
    assert DriverParquet.of(spark, schema) is not None
    # Spark's writer refuses TIME: it keeps doing so
    assert DriverParquet.of(spark, spark_schema_of(Types.ROW([Types.LOCAL_TIME()]))) is None
    assert DriverParquet.of(spark, spark_schema_of(Types.LIST(Types.LOCAL_TIME()))) is None


@pytest.mark.parametrize("parallelism", [1, 4])
def test_a_one_pass_batch_writes_its_parquet_sink_without_a_spark_job(
    spark, tmp_path, parallelism: int
) -> None:
    """The same files' rows, in the same order, as Spark writes them from persisted frames;
    one Spark job per micro-batch instead of two."""
    batches = _records(2, seed=5)
    _write_files(tmp_path / "in", batches)
    outs, jobs = [], []
    for one_pass in ("true", "false"):
        before = max(_marker_jobs(spark))
        out = tmp_path / f"out-{one_pass}"
        config = {"sparktide.execution.stream-sinks-one-pass": one_pass}
        sink = ParquetBatchSink(str(out))
        _stream(
            spark,
            tmp_path / "in",
            "windows",
            parallelism,
            tmp_path / f"ckpt-{one_pass}",
            sink=sink,
            config=config,
        )
        jobs.append(min(_marker_jobs(spark)) - before - 1)
        outs.append([spark.read.parquet(str(out / f"batch={b}")).collect() for b in (0, 1)])
    assert outs[0] == outs[1] and sum(map(len, outs[0])) > 0
    assert jobs == [len(batches), 2 * len(batches)], jobs
