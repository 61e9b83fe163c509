"""CSV files (PyFlink's ``pyflink.datastream.formats.csv``).

:class:`CsvSchema` (built with :meth:`CsvSchema.builder`) names and types the columns and sets the
separator, quote, escape and null literal; :meth:`CsvReaderFormat.for_schema` reads rows of it
(a stream format for ``FileSource.for_record_stream_format``) and
:meth:`CsvBulkWriters.for_schema` writes them (for ``FileSink.for_bulk_format``). Records are
``Row`` values named by the columns. Column types are sparktide ``Types``
(``number_type=Types.INT()``) or, as in PyFlink, ``DataTypes`` from :mod:`sparktide.table`
(``number_type=DataTypes.INT()``).

On the local runtime Python reads and writes the files; on Spark, Spark's CSV reader splits the
fields (every column read as a string) and Spark's CSV writer writes them. Both runtimes parse
the fields with the same code (:mod:`.row_values`), so a value that does not fit its column is
the same error on both, naming the file, the record, the column and the value.

>>> from sparktide.common.typeinfo import Types
>>> schema = (CsvSchema.builder().add_number_column("id", number_type=Types.INT())
...           .add_string_column("name").add_array_column("tags", ",").set_column_separator("|")
...           .build())
>>> schema.get_row_type()
RowTypeInfo(id: Integer, name: String, tags: ListTypeInfo<String>)
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp(), "a.csv")
>>> _ = path.write_text('1|x|a,b\\n2|"y|z"|\\n')
>>> list(CsvReaderFormat.for_schema(schema).read(str(path)))
[Row(id=1, name='x', tags=['a', 'b']), Row(id=2, name='y|z', tags=None)]
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.types import Row
from sparktide.datastream.connectors.bulk_format import (
    BulkWriter,
    BulkWriterFactory,
    FrameFormat,
    RowDataBulkWriterFactory,
)
from sparktide.datastream.connectors.file_paths import open_decompressed
from sparktide.datastream.connectors.file_source import StreamFormat
from sparktide.datastream.formats.csv_schema import CsvSchema, CsvSchemaBuilder
from sparktide.datastream.formats.row_schemas import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from sparktide.datastream.formats.row_values import (
    DATE_PATTERN,
    TIMESTAMP_PATTERN,
    RowReader,
    format_text,
)

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]

_SPARK_NULL = "\u0001sparktide-null\u0001"


def _spark_options(schema: CsvSchema) -> dict[str, str]:
    d = schema.dialect
    return {
        "sep": d.separator,
        "quote": d.quote if d.quote is not None else "\u0000",
        "escape": d.escape if d.escape is not None else (d.quote or "\\"),
        "nullValue": d.null_value,
        "lineSep": d.line_separator,
    }


class CsvReaderFormat(StreamFormat, FrameFormat):
    """Reads rows of a :class:`CsvSchema` (PyFlink's ``CsvReaderFormat``; build it with
    :meth:`for_schema`). Files are UTF-8 (``.gz``, ``.bz2`` and ``.deflate`` files are
    decompressed)."""

    def __init__(self, schema: CsvSchema) -> None:
        if not isinstance(schema, CsvSchema):
            raise TypeError(
                f"schema must be a CsvSchema, got {type(schema).__name__}; build one with "
                "CsvSchema.builder()...build()"
            )
        super().__init__("UTF-8")
        self.schema = schema
        self.row_type = schema.get_row_type()
        self._text = RowReader(self.row_type, "text", schema.array_separators(), "CsvSchema")

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        """A format reading rows of ``schema``."""
        return CsvReaderFormat(schema)

    def get_produced_type(self) -> TypeInformation:
        return self.row_type

    def _header_lines(self) -> int:
        return 1 if self.schema.use_header or self.schema.skip_first_data_row else 0

    def _check_header(self, header: list[str | None], path: str) -> None:
        if self.schema.use_header and self.schema.strict_headers and header != self.schema.names:
            raise ValueError(
                f"CsvReaderFormat: the header of {path} is {header}, but the schema's columns "
                f"are {self.schema.names}; fix the header or the schema (or do not set "
                "set_strict_headers)"
            )

    def check_file(self, path: str) -> None:
        if self.schema.use_header and self.schema.strict_headers:
            with open_decompressed(path) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace").read()
            first = next(iter(self.schema.dialect.records(text)), None)
            if first is not None:
                self._check_header(first, path)

    def read(self, path: str) -> Iterator[Row]:
        return self.read_local(path)

    def read_local(self, path: str) -> Iterator[Row]:
        with open_decompressed(path) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace").read()
        records = self.schema.dialect.records(text)
        try:
            for n, fields in enumerate(records, start=1 - self._header_lines()):
                if n <= 0:
                    self._check_header(fields, path)
                    continue
                yield self._text.row(fields, path, n)
        except ValueError as exc:
            if str(exc).startswith(path):
                raise
            raise ValueError(f"CsvReaderFormat: {path} is not valid CSV: {exc}") from None

    def spark_frame(self, spark: Any, path: str) -> Any:
        from pyspark.sql import types as T

        wire = T.StructType([T.StructField(n, T.StringType()) for n in self.schema.names])
        options = {
            **_spark_options(self.schema),
            "header": str(self._header_lines() == 1).lower(),
            "multiLine": "true",  # quoted line breaks; also one partition per file
            "mode": "FAILFAST",
            "ignoreLeadingWhiteSpace": "false",
            "ignoreTrailingWhiteSpace": "false",
            "enforceSchema": "true",
        }
        del options["lineSep"]  # reading accepts \n, \r\n and \r
        # Spark would also read a quoted "" as null when the null literal is "": it reads an
        # unquoted empty field as a sentinel instead, and the null literal is matched here
        options["nullValue"] = _SPARK_NULL
        options["emptyValue"] = ""
        if self.schema.dialect.allow_comments:
            options["comment"] = "#"
        return spark.read.schema(wire).options(**options).csv(path)

    def records_of_batches(self, batches: Iterable[Any], path: str) -> Iterator[Row]:
        row = self._text.row
        null = self.schema.dialect.null_value
        n = 0
        for batch in batches:
            for values in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                n += 1
                yield row([None if null and v == null else v for v in values], path, n)

    def __repr__(self) -> str:
        return f"CsvReaderFormat.for_schema({self.schema!r})"


class _CsvWriter(BulkWriter):
    def __init__(self, stream: BinaryIO, schema: CsvSchema) -> None:
        self._stream = stream
        self._schema = schema
        self._started = False

    def _header(self) -> None:
        if not self._started:
            self._started = True
            if self._schema.use_header:
                self._stream.write(self._schema.dialect.line(self._schema.names).encode("utf-8"))

    def add_batch(self, batch: Any) -> None:
        self._header()
        schema = self._schema
        kinds, separators = schema.kinds, schema.array_separators()
        columns = [c.to_pylist() for c in batch.columns]
        out = []
        for values in zip(*columns, strict=True):
            fields: list[str | None] = []
            for value, kind, sep in zip(values, kinds, separators, strict=True):
                if value is None:
                    fields.append(None)
                elif kind.startswith("list:"):
                    texts = [format_text(v, kind[5:]) for v in value if v is not None]
                    fields.append((sep or "").join(texts))
                else:
                    fields.append(format_text(value, kind))
            out.append(schema.dialect.line(fields))
        self._stream.write("".join(out).encode("utf-8"))

    def finish(self) -> None:
        self._header()


class _CsvWriterFactory(RowDataBulkWriterFactory):
    def __init__(self, schema: CsvSchema) -> None:
        super().__init__(schema.get_row_type())
        self.schema = schema

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _CsvWriter(stream, self.schema)

    def write_spark(self, df: Any, directory: str) -> None:
        from pyspark.sql import functions as F

        columns = []
        for name, kind, sep in zip(
            self.schema.names, self.schema.kinds, self.schema.array_separators(), strict=True
        ):
            col = F.col(f"`{name}`")
            if kind.startswith("list:"):  # Spark's CSV writer has no arrays: join the elements
                joined = F.concat_ws(sep or "", col.cast("array<string>"))
                col = F.when(col.isNull(), F.lit(None)).otherwise(joined)
            columns.append(col.alias(name))
        options = {
            **_spark_options(self.schema),
            "header": str(self.schema.use_header).lower(),
            "emptyValue": '""' if self.schema.dialect.quote else "",
            "timestampNTZFormat": TIMESTAMP_PATTERN,
            "dateFormat": DATE_PATTERN,
        }
        df.select(*columns).write.mode("append").options(**options).csv(directory)

    def spark_part_is_empty(self, spark: Any, path: str, size: int) -> bool:
        header = self.schema.dialect.line(self.schema.names).encode("utf-8")
        return size == 0 or (self.schema.use_header and size == len(header))

    def __repr__(self) -> str:
        return f"CsvBulkWriters.for_schema({self.schema!r})"


class CsvBulkWriters:
    """Writer factories of CSV files (PyFlink's ``CsvBulkWriters``)."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> BulkWriterFactory:
        """A factory writing rows of ``schema``'s columns as CSV (UTF-8; a header line per
        part file when the schema uses a header). Records are matched to the columns by
        field name (a ``Row`` named like them) or by position."""
        if not isinstance(schema, CsvSchema):
            raise TypeError(
                f"schema must be a CsvSchema, got {type(schema).__name__}; build one with "
                "CsvSchema.builder()...build()"
            )
        return _CsvWriterFactory(schema)
