"""JSON lines files: one JSON object per line. **This format is sparktide's own**: PyFlink's
``pyflink.datastream.formats.json`` has only (de)serialization schemas for message queues, not a
file format.

:meth:`JsonLinesFormat.for_row_type` reads rows of a ``Types.ROW_NAMED`` (a stream format for
``FileSource.for_record_stream_format``): each object's members are matched to the fields by
name (a missing member is null, members without a field are ignored);
:meth:`JsonLinesBulkWriters.for_row_type` writes them (for ``FileSink.for_bulk_format``), leaving
out null fields, as Spark's JSON writer does. Dates and timestamps are ISO-8601 strings.

On the local runtime Python reads and writes the files; on Spark, Spark's JSON reader and writer
do (dates and timestamps are read as strings and parsed by the same code as on the local
runtime). One difference remains: a non-string JSON value in a ``Types.STRING()`` field
becomes its JSON text on both runtimes, but Spark keeps the text as written in the file while
the local runtime writes it compactly (``{"a": 1}`` vs ``{"a":1}``).

>>> import pathlib, tempfile
>>> from sparktide.common.typeinfo import Types
>>> path = pathlib.Path(tempfile.mkdtemp(), "a.json")
>>> _ = path.write_text('{"id": 1, "name": "x"}\\n\\n{"id": 2, "extra": true}\\n')
>>> row_type = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])
>>> list(JsonLinesFormat.for_row_type(row_type).read(str(path)))
[Row(id=1, name='x'), Row(id=2, name=None)]
"""

from __future__ import annotations

import decimal
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.common.types import Row
from sparktide.datastream.connectors.bulk_format import (
    BulkWriter,
    BulkWriterFactory,
    FrameFormat,
    RowDataBulkWriterFactory,
    check_row_type,
    numbered_rows,
)
from sparktide.datastream.connectors.file_paths import open_decompressed
from sparktide.datastream.connectors.file_source import StreamFormat
from sparktide.datastream.formats.row_schemas import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from sparktide.datastream.formats.row_values import (
    DATE_PATTERN,
    TIMESTAMP_PATTERN,
    RowReader,
    field_kinds,
    json_text,
    spark_wire_type,
)
from sparktide.table.types import RowType

__all__ = [
    "JsonLinesBulkWriters",
    "JsonLinesFormat",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
]


class JsonLinesFormat(StreamFormat, FrameFormat):
    """Reads rows of ``row_type`` from JSON lines files (UTF-8; ``.gz``, ``.bz2`` and
    ``.deflate`` files are decompressed); sparktide's own format. Blank lines are skipped."""

    def __init__(self, row_type: RowTypeInfo | RowType) -> None:
        super().__init__("UTF-8")
        self.row_type = check_row_type(row_type)
        self._reader = RowReader(self.row_type, "json", format_name="JsonLinesFormat")
        self._names = self.row_type.get_field_names()

    @staticmethod
    def for_row_type(row_type: RowTypeInfo | RowType) -> JsonLinesFormat:
        """A format reading rows of ``row_type`` (a ``Types.ROW_NAMED``)."""
        return JsonLinesFormat(row_type)

    def get_produced_type(self) -> TypeInformation:
        return self.row_type

    def read(self, path: str) -> Iterator[Row]:
        return self.read_local(path)

    def read_local(self, path: str) -> Iterator[Row]:
        names = self._names
        n = 0
        with open_decompressed(path) as raw:
            for line in io.TextIOWrapper(raw, encoding="utf-8", errors="replace"):
                if not line.strip():
                    continue
                n += 1
                try:
                    value = json.loads(line, parse_float=decimal.Decimal)
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{path}, record {n}: not valid JSON ({exc}): {line.strip()[:80]!r}; "
                        "write one JSON object per line"
                    ) from None
                if not isinstance(value, dict):
                    raise ValueError(
                        f"{path}, record {n}: a JSON {type(value).__name__}, not an object: "
                        f"{line.strip()[:80]!r}; write one JSON object per line"
                    )
                yield self._reader.row([value.get(name) for name in names], path, n)

    def spark_frame(self, spark: Any, path: str) -> Any:
        from pyspark.sql import types as T

        wire = T.StructType(
            [
                T.StructField(name, spark_wire_type(kind, t, "json"))
                for name, kind, t in zip(
                    self._names, self._reader.kinds, self.row_type.get_field_types(), strict=True
                )
            ]
        )
        return spark.read.schema(wire).options(mode="FAILFAST").json(path)

    def records_of_batches(self, batches: Iterable[Any], path: str) -> Iterator[Row]:
        return numbered_rows(self._reader.row, batches, path)

    def __repr__(self) -> str:
        return f"JsonLinesFormat.for_row_type({self.row_type._decl()})"


class _JsonWriter(BulkWriter):
    def __init__(self, stream: BinaryIO, row_type: RowTypeInfo) -> None:
        self._stream = stream
        self._keys = [json.dumps(n, ensure_ascii=False) + ":" for n in row_type.get_field_names()]
        self._kinds = field_kinds(row_type, "JsonLinesBulkWriters")

    def add_batch(self, batch: Any) -> None:
        columns = [c.to_pylist() for c in batch.columns]
        lines = []
        for values in zip(*columns, strict=True):
            members = [
                key + json_text(value, kind)
                for key, value, kind in zip(self._keys, values, self._kinds, strict=True)
                if value is not None
            ]
            lines.append("{" + ",".join(members) + "}\n")
        self._stream.write("".join(lines).encode("utf-8"))

    def finish(self) -> None:
        pass


class _JsonWriterFactory(RowDataBulkWriterFactory):
    def create(self, stream: BinaryIO) -> BulkWriter:
        return _JsonWriter(stream, self.get_row_type())

    def write_spark(self, df: Any, directory: str) -> None:
        df.write.mode("append").options(
            timestampNTZFormat=TIMESTAMP_PATTERN, dateFormat=DATE_PATTERN
        ).json(directory)

    def __repr__(self) -> str:
        return f"JsonLinesBulkWriters.for_row_type({self.get_row_type()._decl()})"


class JsonLinesBulkWriters:
    """Writer factories of JSON lines files (sparktide's own)."""

    @staticmethod
    def for_row_type(row_type: RowTypeInfo | RowType) -> BulkWriterFactory:
        """A factory writing rows of ``row_type`` as one JSON object per line (UTF-8); records
        are matched to the row type by field name (a ``Row`` named like it) or by position."""
        factory = _JsonWriterFactory(row_type)
        field_kinds(factory.get_row_type(), "JsonLinesBulkWriters")
        return factory
