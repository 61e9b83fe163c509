"""Parquet, CSV and JSON lines through FileSource / FileSink, on the local runtime and on Spark.

Every format round-trips (write with ``FileSink.for_bulk_format``, read with ``FileSource``) at
parallelism 1 and 2; the records read are the same on both runtimes, in the same order per split;
files written by plain pyarrow / by Spark are read; bad input is a clear error.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re
from pathlib import Path
from typing import Any

import pytest

from sparktide.common.typeinfo import Types
from sparktide.common.types import Row, row_field_names
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from sparktide.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from sparktide.datastream.formats.json import JsonLinesBulkWriters, JsonLinesFormat
from sparktide.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)

NAMES = ["id", "name", "score", "ratio", "amount", "day", "ts", "flag", "tags"]
TYPES = [
    Types.INT(),
    Types.STRING(),
    Types.DOUBLE(),
    Types.FLOAT(),
    Types.BIG_DEC(),
    Types.LOCAL_DATE(),
    Types.LOCAL_DATE_TIME(),
    Types.BOOLEAN(),
    Types.LIST(Types.STRING()),
]
ROW_TYPE = Types.ROW_NAMED(NAMES, TYPES)
PART = re.compile(r"^part-[0-9a-f-]{36}-0(?P<suffix>.*)$")


def records(n: int = 40) -> list[tuple[Any, ...]]:
    texts = ["plain", 'a "quoted", text', "line\nbreak", "", "ünï ☃", None, "NULL", "#hash"]
    out = []
    for i in range(n):
        out.append(
            (
                i,
                texts[i % len(texts)],
                None if i % 7 == 3 else i * 1.5e-3,
                i / 3,
                decimal.Decimal(i) / 8,
                dt.date(2024, 1, 1) + dt.timedelta(days=i),
                dt.datetime(2024, 1, 1, 12, 0) + dt.timedelta(seconds=i, microseconds=i * 7),
                i % 2 == 0,
                None if i % 5 == 4 else [f"t{j}" for j in range(i % 3)],
            )
        )
    return out


def csv_schema() -> CsvSchema:
    return (
        CsvSchema.builder()
        .add_number_column("id", number_type=Types.INT())
        .add_string_column("name")
        .add_number_column("score", number_type=Types.DOUBLE())
        .add_number_column("ratio", number_type=Types.FLOAT())
        .add_number_column("amount", number_type=Types.BIG_DEC())
        .add_column("day", Types.LOCAL_DATE())
        .add_column("ts", Types.LOCAL_DATE_TIME())
        .add_boolean_column("flag")
        .add_array_column("tags", "|")
        .set_use_header()
        .build()
    )


FORMATS = {
    "parquet": (
        lambda: ParquetBulkWriters.for_row_type(ROW_TYPE),
        lambda p: FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE), p),
    ),
    "csv": (
        lambda: CsvBulkWriters.for_schema(csv_schema()),
        lambda p: FileSource.for_record_stream_format(CsvReaderFormat.for_schema(csv_schema()), p),
    ),
    "json": (
        lambda: JsonLinesBulkWriters.for_row_type(ROW_TYPE),
        lambda p: FileSource.for_record_stream_format(JsonLinesFormat.for_row_type(ROW_TYPE), p),
    ),
}


def expected_rows(values: list[tuple[Any, ...]]) -> list[Row]:
    """What reading back gives: FLOAT rounded to 32 bits, decimals at scale 18."""
    import struct

    out = []
    for v in values:
        ratio = struct.unpack("f", struct.pack("f", v[3]))[0]
        amount = v[4].quantize(decimal.Decimal(1).scaleb(-18))
        out.append(ROW_TYPE.coerce((*v[:3], ratio, amount, *v[5:])))
    return out


def key(row: Row) -> int:
    return row[0]  # type: ignore[no-any-return]


def write(runtime: str, fmt: str, out: Path, values: list, parallelism: int = 1) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    sink = (
        FileSink.for_bulk_format(str(out), FORMATS[fmt][0]())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    env.from_collection(values, type_info=ROW_TYPE).sink_to(sink)
    env.execute()


def read(runtime: str, fmt: str, path: Path, parallelism: int = 1) -> list[Row]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    source = FORMATS[fmt][1](str(path)).build()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
    return list(stream.execute_and_collect())


def read_splits(fmt: str, path: Path) -> list[list[Row]]:
    """The records of each split, read directly (local runtime)."""
    source = FORMATS[fmt][1](str(path)).build()
    return [list(source.read_split(s)) for s in source.get_splits()]


def part_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------ local runtime


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("parallelism", [1, 2])
def test_round_trip_on_the_local_runtime(fmt: str, parallelism: int, tmp_path: Path) -> None:
    values = records()
    write("local", fmt, tmp_path / "out", values, parallelism)
    files = part_files(tmp_path / "out")
    assert len(files) == parallelism  # one part file per subtask, Flink's names
    assert all(PART.match(f.name) for f in files)
    got = read("local", fmt, tmp_path / "out", parallelism)
    assert sorted(got, key=key) == expected_rows(values)
    assert all(isinstance(r, Row) and row_field_names(r) == tuple(NAMES) for r in got)
    # each split holds its file's rows in file order
    splits = read_splits(fmt, tmp_path / "out")
    assert [r for split in splits for r in split] == read("local", fmt, tmp_path / "out", 1)


def test_parquet_written_by_plain_pyarrow(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "extra": ["ignored"] * 3,
            "id": pa.array([1, 2, 3], pa.int16()),  # narrower than INT: fits
            "name": pa.array(["a", None, "c"], pa.large_string()),
            "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123456)] * 3, pa.timestamp("ns")),
        }
    )
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=2)
    row_type = Types.ROW_NAMED(
        ["id", "name", "ts"], [Types.INT(), Types.STRING(), Types.SQL_TIMESTAMP()]
    )
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type, batch_size=1), str(tmp_path)
    ).build()
    rows = [list(source.read_split(s)) for s in source.get_splits()]
    when = dt.datetime(2024, 1, 1, 0, 0, 0, 123000)  # SQL_TIMESTAMP holds milliseconds
    assert rows == [[Row(id=1, name="a", ts=when), Row(id=2, name=None, ts=when),
                     Row(id=3, name="c", ts=when)]]  # fmt: skip


def test_csv_dialect_options(tmp_path: Path) -> None:
    schema = (
        CsvSchema.builder()
        .add_string_column("a")
        .add_number_column("b")
        .set_column_separator(";")
        .set_quote_char("'")
        .set_null_value("NULL")
        .set_allow_comments()
        .set_skip_first_data_row()
        .build()
    )
    (tmp_path / "x.csv").write_text("skipped;line\n# comment\n'x;y';1\nNULL;NULL\r\n'';2\r")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path)
    ).build()
    assert [list(source.read_split(s)) for s in source.get_splits()] == [
        [Row(a="x;y", b=1), Row(a=None, b=None), Row(a="", b=2)]
    ]


def test_row_format_sink_and_text_source_are_unchanged(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    from sparktide.common.serialization import Encoder

    env.from_collection(["a", "b"], type_info=Types.STRING()).sink_to(
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(OutputFileConfig("p", ".txt"))
        .build()
    )
    env.execute()
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    assert [list(source.read_split(s)) for s in source.get_splits()] == [["a", "b"]]


# ------------------------------------------------------------------------------ errors


def test_missing_path_and_wrong_format_kinds(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist; create it or fix the path"):
        read("local", "parquet", tmp_path / "missing")
    with pytest.raises(TypeError, match=r"for_bulk_file_format"):
        FileSource.for_record_stream_format(ParquetColumnarRowInputFormat(ROW_TYPE), "/x")
    with pytest.raises(TypeError, match="for_record_stream_format"):
        FileSource.for_bulk_file_format(StreamFormat.text_line_format(), "/x")
    with pytest.raises(TypeError, match=r"Types\.ROW_NAMED"):
        ParquetBulkWriters.for_row_type(Types.INT())
    map_row = Types.ROW_NAMED(["m"], [Types.MAP(Types.STRING(), Types.INT())])
    with pytest.raises(ValueError, match=r"field 'm' is declared Types\.MAP"):
        JsonLinesFormat.for_row_type(map_row)
    builder = FileSink.for_bulk_format("/x", ParquetBulkWriters.for_row_type(ROW_TYPE))
    with pytest.raises(ValueError, match="OnCheckpointRollingPolicy"):
        builder.with_rolling_policy(RollingPolicy.default_rolling_policy())
    with pytest.raises(TypeError, match="writer_factory must be a BulkWriterFactory"):
        FileSink.for_bulk_format("/x", "parquet")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="number_type of column 'n'"):
        CsvSchema.builder().add_number_column("n", Types.STRING())


def test_parquet_schema_mismatches_are_explained(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "x": ["a"]}), tmp_path / "a.parquet")
    narrow = Types.ROW_NAMED(["id"], [Types.INT()])
    with pytest.raises(ValueError, match=r"column 'id' of .*a.parquet holds int64, which does not "
                                         r"fit the declared Types.INT\(\)"):  # fmt: skip
        read_splits_of(ParquetColumnarRowInputFormat(narrow), tmp_path)
    missing = Types.ROW_NAMED(["nope"], [Types.INT()])
    with pytest.raises(ValueError, match=r"has no column 'nope'; its columns are \['id', 'x'\]"):
        read_splits_of(ParquetColumnarRowInputFormat(missing), tmp_path)
    upper = Types.ROW_NAMED(["ID"], [Types.LONG()])
    assert read_splits_of(ParquetColumnarRowInputFormat(upper, is_case_sensitive=False), tmp_path) \
        == [[Row(ID=1)]]  # fmt: skip
    (tmp_path / "b.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match=r"b\.parquet is not a Parquet file"):
        read_splits_of(ParquetColumnarRowInputFormat(upper, is_case_sensitive=False), tmp_path)


def read_splits_of(fmt: Any, path: Path) -> list[list[Row]]:
    source = FileSource.for_bulk_file_format(fmt, str(path)).build()
    return [list(source.read_split(s)) for s in source.get_splits()]


def test_csv_and_json_value_errors_name_file_record_field_and_value(tmp_path: Path) -> None:
    schema = CsvSchema.builder().add_string_column("a").add_number_column("n").build()
    (tmp_path / "a.csv").write_text("x,1\ny,1.5\n")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path / "a.csv")
    ).build()
    with pytest.raises(ValueError, match=r"a.csv, record 2: field 'n' is declared Types.LONG\(\) "
                                         r"but holds '1.5', which is not an integer"):  # fmt: skip
        list(source.read_split(source.get_splits()[0]))
    (tmp_path / "b.csv").write_text("x,1,extra\n")
    with pytest.raises(ValueError, match=r"b.csv, record 1: 3 fields, but the schema declares 2"):
        list(CsvReaderFormat.for_schema(schema).read(str(tmp_path / "b.csv")))
    (tmp_path / "c.csv").write_text('"open,1\n')
    with pytest.raises(ValueError, match=r"c.csv is not valid CSV: a quoted field .* never closed"):
        list(CsvReaderFormat.for_schema(schema).read(str(tmp_path / "c.csv")))
    header = (
        CsvSchema.builder().add_string_column("a").add_number_column("n").set_use_header()
        .set_strict_headers().build()
    )  # fmt: skip
    (tmp_path / "d.csv").write_text("a,m\nx,1\n")
    with pytest.raises(ValueError, match=r"the header of .*d.csv is \['a', 'm'\]"):
        list(CsvReaderFormat.for_schema(header).read(str(tmp_path / "d.csv")))
    row_type = Types.ROW_NAMED(["n", "when"], [Types.INT(), Types.LOCAL_DATE_TIME()])
    (tmp_path / "e.json").write_text('{"n": 1}\n{"n": 2.5}\n')
    wrong = r"e.json, record 2: field 'n' is declared Types.INT\(\) but holds Decimal\('2.5'\), "
    with pytest.raises(ValueError, match=wrong + "which is not an integer"):
        list(JsonLinesFormat.for_row_type(row_type).read(str(tmp_path / "e.json")))
    (tmp_path / "f.json").write_text('{"n": 1}\n[1]\n')
    with pytest.raises(ValueError, match=r"f.json, record 2: a JSON list, not an object"):
        list(JsonLinesFormat.for_row_type(row_type).read(str(tmp_path / "f.json")))
    (tmp_path / "g.json").write_text('{"when": "2024-01-01T00:00:00+02:00"}\n')
    with pytest.raises(ValueError, match=r"field 'when' .* not a timestamp without a time zone"):
        list(JsonLinesFormat.for_row_type(row_type).read(str(tmp_path / "g.json")))


def test_records_that_do_not_fit_the_writer_are_errors(tmp_path: Path) -> None:
    row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.from_collection([(1, "a"), ("2", "b")]).sink_to(  # no declared type
        FileSink.for_bulk_format(str(tmp_path), ParquetBulkWriters.for_row_type(row_type)).build()
    )
    error = r"FileSink .*: a record does not fit the writer's row type .*record.id: Types.INT\(\)"
    with pytest.raises(TypeError, match=error + " holds an int, got str"):
        env.execute()


# ------------------------------------------------------------------------------ Spark


def test_spark_hash_placement_matches_spark(spark) -> None:
    from pyspark.sql import functions as F

    from sparktide.spark.placement import placement_keys, spark_hash_long

    rows = spark.range(-20, 200).select("id", F.hash("id").alias("h")).collect()
    assert all(spark_hash_long(r["id"]) == r["h"] for r in rows)
    keys = placement_keys(5)
    df = spark.createDataFrame([(k,) for k in keys], "k long").repartition(5, "k")
    parts = df.select("k", F.spark_partition_id().alias("p")).collect()
    assert sorted((r["p"], r["k"]) for r in parts) == list(enumerate(keys))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_spark_and_local_write_and_read_the_same(fmt: str, spark, tmp_path: Path) -> None:
    values = records()
    # written by Spark's writer (parallelism 2), read back on the local runtime
    write("spark", fmt, tmp_path / "spark", values, 2)
    files = part_files(tmp_path / "spark")
    assert files and all(PART.match(f.name) for f in files), files
    assert len(files) <= 2
    assert sorted(read("local", fmt, tmp_path / "spark"), key=key) == expected_rows(values)
    # written locally in two files (plus an empty one), read by Spark's reader: same records,
    # same order per split, at parallelism 1 and 2
    write("local", fmt, tmp_path / "local", values, 2)
    empty = tmp_path / "local" / "zz-empty"
    empty.write_bytes(b"")
    if fmt == "parquet":
        empty.unlink()
    local = read("local", fmt, tmp_path / "local", 2)
    assert read("spark", fmt, tmp_path / "local", 2) == local
    assert sorted(local, key=key) == expected_rows(values)


def test_spark_writes_next_to_existing_files(spark, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("unrelated")
    row_type = Types.ROW_NAMED(["id"], [Types.INT()])
    for _ in range(2):
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.from_collection([(1,), (2,)]).sink_to(  # undeclared type: converted by the writer
            FileSink.for_bulk_format(str(tmp_path), JsonLinesBulkWriters.for_row_type(row_type))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_output_file_config(OutputFileConfig("out", ".json"))
            .build()
        )
        env.execute()
    names = sorted(os.listdir(tmp_path))
    assert "keep.txt" in names and (tmp_path / "keep.txt").read_text() == "unrelated"
    parts = [n for n in names if n.startswith("out-")]
    assert len(parts) == 2 and all(n.endswith(".json") for n in parts)
    assert not [n for n in names if n.startswith((".", "_"))]  # no staging left behind
    lines = sorted(line for n in parts for line in (tmp_path / n).read_text().splitlines())
    assert lines == ['{"id":1}', '{"id":1}', '{"id":2}', '{"id":2}']


def test_spark_reports_values_that_do_not_fit(spark, tmp_path: Path) -> None:
    schema = CsvSchema.builder().add_string_column("a").add_number_column("n").build()
    (tmp_path / "a.csv").write_text("x,1\ny,1.5\n")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path)
    ).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "csv").print()
    with pytest.raises(Exception, match=r"record 2: field 'n' is declared Types.LONG\(\)"):
        env.execute()
