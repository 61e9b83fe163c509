"""PyFlink's ``DataTypes`` (``pyflink.table.DataTypes`` → ``sparktide.table.DataTypes``) where the
file formats take them, as PyFlink's own docstrings use them."""

from __future__ import annotations

import datetime as dt
import decimal
import subprocess
import textwrap
from pathlib import Path

import pytest

from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.connectors.file_system import BucketAssigner, FileSink, FileSource
from sparktide.datastream.formats.csv import CsvReaderFormat, CsvSchema
from sparktide.datastream.formats.json import JsonLinesFormat
from sparktide.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from sparktide.table import DataTypes
from tool_modules import load_tool

REPO = Path(__file__).resolve().parents[1]


def _pyflink_python() -> str | None:
    return load_tool("pyflink_oracle/record.py").pyflink_python()  # type: ignore[no-any-return]


def _read_all(source: FileSource) -> list[Row]:
    return [row for split in source.get_splits() for row in source.read_split(split)]


def test_csv_schema_built_as_in_pyflinks_docstring(tmp_path: Path) -> None:
    schema = CsvSchema.builder() \
        .add_number_column('id', number_type=DataTypes.INT()) \
        .add_string_column('name') \
        .add_array_column('list', ',', element_type=DataTypes.STRING()) \
        .set_column_separator('|') \
        .set_escape_char('\\') \
        .set_use_header() \
        .set_strict_headers() \
        .build()  # fmt: skip
    # "the type of records is Types.ROW_NAMED(['id', 'name', 'list'],
    #   [Types.INT(), Types.STRING(), Types.LIST(Types.STRING())])"
    assert schema.get_row_type() == Types.ROW_NAMED(
        ["id", "name", "list"], [Types.INT(), Types.STRING(), Types.LIST(Types.STRING())]
    )
    (tmp_path / "a.csv").write_text("id|name|list\n1|a b|x,y\n2|c|z\n", encoding="utf-8")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path)
    ).build()
    assert _read_all(source) == [
        Row(id=1, name="a b", list=["x", "y"]),
        Row(id=2, name="c", list=["z"]),
    ]


def test_every_number_type_of_a_csv_column(tmp_path: Path) -> None:
    schema = (
        CsvSchema.builder()
        .add_number_column("t", DataTypes.TINYINT())
        .add_number_column("s", DataTypes.SMALLINT())
        .add_number_column("i", DataTypes.INT())
        .add_number_column("b", DataTypes.BIGINT())
        .add_number_column("f", DataTypes.FLOAT())
        .add_number_column("d", DataTypes.DOUBLE())
        .add_number_column("m", DataTypes.DECIMAL(10, 2))
        .add_column("day", DataTypes.DATE())
        .add_boolean_column("ok")
        .build()
    )
    (tmp_path / "n.csv").write_text("1,2,3,4,0.5,0.25,12.34,2024-02-29,true\n", encoding="utf-8")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path)
    ).build()
    [row] = _read_all(source)
    assert tuple(row) == (
        1,
        2,
        3,
        4,
        0.5,
        0.25,
        decimal.Decimal("12.34"),
        dt.date(2024, 2, 29),
        True,
    )
    assert schema.get_row_type().get_field_types()[:4] == [
        Types.BYTE(),
        Types.SHORT(),
        Types.INT(),
        Types.LONG(),
    ]


@pytest.mark.parametrize(
    ("runtime_type", "data_type", "value"),
    [
        (Types.INT(), DataTypes.INT(), 7),
        (Types.STRING(), DataTypes.VARCHAR(20), "x"),
        (Types.LOCAL_DATE_TIME(), DataTypes.TIMESTAMP(3), dt.datetime(2024, 1, 1, 12)),
    ],
)
def test_parquet_row_type_as_a_data_types_row(
    tmp_path: Path, runtime_type: Types, data_type: DataTypes, value: object
) -> None:
    row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()),
                              DataTypes.FIELD("v", data_type)])  # fmt: skip
    values = [value, None]
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    declared = Types.ROW_NAMED(["id", "v"], [Types.LONG(), runtime_type])
    env.from_collection([(1, values[0]), (2, values[1])], type_info=declared).sink_to(
        FileSink.for_bulk_format(str(tmp_path), ParquetBulkWriters.for_row_type(row_type))
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    env.execute()
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type=row_type, batch_size=2048), str(tmp_path)
    ).build()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "parquet-source")
    assert list(stream.execute_and_collect()) == [Row(id=1, v=values[0]), Row(id=2, v=values[1])]


def test_what_each_data_type_stands_for() -> None:
    pairs = [
        (DataTypes.CHAR(3), Types.STRING()),
        (DataTypes.STRING(), Types.STRING()),
        (DataTypes.BOOLEAN(), Types.BOOLEAN()),
        (DataTypes.BYTES(), Types.PRIMITIVE_ARRAY(Types.BYTE())),
        (DataTypes.TINYINT(), Types.BYTE()),
        (DataTypes.SMALLINT(), Types.SHORT()),
        (DataTypes.BIGINT(nullable=False), Types.LONG()),
        (DataTypes.FLOAT(), Types.FLOAT()),
        (DataTypes.DOUBLE(), Types.DOUBLE()),
        (DataTypes.DECIMAL(38, 18), Types.BIG_DEC()),
        (DataTypes.DATE(), Types.LOCAL_DATE()),
        (DataTypes.TIME(), Types.LOCAL_TIME()),
        (DataTypes.TIMESTAMP(), Types.LOCAL_DATE_TIME()),
        (DataTypes.TIMESTAMP_LTZ(3), Types.INSTANT()),
        (DataTypes.ARRAY(DataTypes.INT()), Types.LIST(Types.INT())),
        (
            DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()),
            Types.MAP(Types.STRING(), Types.INT()),
        ),
    ]
    for data_type, expected in pairs:
        assert data_type.to_type_info() == expected, data_type
    assert DataTypes.INT().not_null() == DataTypes.INT(nullable=False) != DataTypes.INT()
    assert DataTypes.INT().not_null().nullable() == DataTypes.INT()


def test_types_that_do_not_fit_are_errors_that_say_so() -> None:
    with pytest.raises(ValueError, match=r"DECIMAL\(30, 2\) does not fit Types\.BIG_DEC\(\)"):
        CsvSchema.builder().add_number_column("m", DataTypes.DECIMAL(30, 2))
    with pytest.raises(ValueError, match=r"number_type of column 'n' must be a number type"):
        CsvSchema.builder().add_number_column("n", DataTypes.STRING())
    with pytest.raises(TypeError, match=r"number_type of column 'n' must be a type.*'INT'"):
        CsvSchema.builder().add_number_column("n", "INT")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"element_type of column 'l' must be a type"):
        CsvSchema.builder().add_array_column("l", ",", element_type=str)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"row_type must be a row type.*DataTypes\.ROW"):
        ParquetBulkWriters.for_row_type(DataTypes.INT())
    with pytest.raises(ValueError, match=r"field 'm' is declared Types\.MAP"):
        JsonLinesFormat.for_row_type(
            DataTypes.ROW(
                [DataTypes.FIELD("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()))]
            )
        )
    with pytest.raises(TypeError, match=r"FIELD 'x': data_type must be a DataTypes type"):
        DataTypes.FIELD("x", Types.INT())
    with pytest.raises(TypeError, match=r"ROW takes a list of DataTypes\.FIELD"):
        DataTypes.ROW([DataTypes.INT()])
    with pytest.raises(ValueError, match=r"DECIMAL scale must be an int in \[0, precision=5\]"):
        DataTypes.DECIMAL(5, 6)


def test_names_and_parameters_are_pyflinks() -> None:
    python = _pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    import inspect

    ours = {
        name: list(inspect.signature(getattr(DataTypes, name)).parameters)
        for name in dir(DataTypes)
        if name.isupper()
    }
    probe = textwrap.dedent(
        f"""
        import inspect
        from pyflink.table import DataTypes
        for name in {sorted(ours)!r}:
            print(name, *inspect.signature(getattr(DataTypes, name)).parameters)
        """
    )
    out = subprocess.run(
        [python, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    theirs = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert theirs == ours
