"""Parquet files (PyFlink's ``pyflink.datastream.formats.parquet``).

:class:`ParquetColumnarRowInputFormat` reads rows of a row type from Parquet files (a bulk format
for ``FileSource.for_bulk_file_format``); :meth:`ParquetBulkWriters.for_row_type` writes them
(a writer factory for ``FileSink.for_bulk_format``). The row type is a ``Types.ROW_NAMED`` or, as
in PyFlink, a ``DataTypes.ROW`` from :mod:`sparktide.table`. On the local runtime pyarrow reads and
writes the files; on Spark, Spark's Parquet reader and writer do.

>>> import tempfile
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.common.watermark_strategy import WatermarkStrategy
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.datastream.connectors.file_system import FileSink, FileSource
>>> row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
>>> out = tempfile.mkdtemp()
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> _ = env.from_collection([(1, "a"), (2, "b")], type_info=row_type).sink_to(
...     FileSink.for_bulk_format(out, ParquetBulkWriters.for_row_type(row_type)).build())
>>> _ = env.execute()
>>> source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), out).build()
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "parquet")
>>> sorted(stream.execute_and_collect(), key=lambda r: r.id)
[Row(id=1, name='a'), Row(id=2, name='b')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import pyarrow as pa

from sparktide.common.not_provided import module_getattr
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
from sparktide.datastream.connectors.file_source import BulkFormat
from sparktide.datastream.formats.row_values import RowReader, field_kinds
from sparktide.table.types import RowType

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = ["ParquetBulkWriters", "ParquetColumnarRowInputFormat"]

_NAME = "ParquetColumnarRowInputFormat"


def _fits(file_type: pa.DataType, declared: pa.DataType) -> bool:
    """Whether a Parquet column of ``file_type`` is read as ``declared`` by both runtimes."""
    t = pa.types
    if t.is_string(declared):
        return bool(t.is_string(file_type) or t.is_large_string(file_type))
    if t.is_boolean(declared):
        return bool(t.is_boolean(file_type))
    if t.is_signed_integer(declared):
        return bool(t.is_signed_integer(file_type) and file_type.bit_width <= declared.bit_width)
    if t.is_floating(declared):
        return bool(t.is_floating(file_type) and file_type.bit_width <= declared.bit_width)
    if t.is_decimal(declared):
        return bool(
            t.is_decimal(file_type)
            and file_type.scale <= declared.scale
            and file_type.precision - file_type.scale <= declared.precision - declared.scale
        )
    if t.is_date(declared):
        return bool(t.is_date(file_type))
    if t.is_timestamp(declared):
        return bool(t.is_timestamp(file_type) and file_type.tz is None)
    if t.is_list(declared):
        is_list = bool(t.is_list(file_type) or t.is_large_list(file_type))
        return is_list and _fits(file_type.value_type, declared.value_type)
    return False


class ParquetColumnarRowInputFormat(BulkFormat, FrameFormat):
    """Reads the columns of ``row_type`` from Parquet files (PyFlink's
    ``ParquetColumnarRowInputFormat``); records are ``Row`` values named by the row type.

    Columns are found by name (ignoring case unless ``is_case_sensitive``). A column must hold
    the declared type or a narrower one of its kind (an int32 column for ``Types.LONG()``, a
    float column for ``Types.DOUBLE()``); timestamps must be zone-less (``Types.LOCAL_DATE_TIME``
    and ``Types.SQL_TIMESTAMP`` are). ``hadoop_config`` and ``is_utc_timestamp`` are accepted
    for PyFlink compatibility and not used; ``batch_size`` is the rows per batch read locally.
    """

    def __init__(
        self,
        row_type: RowTypeInfo | RowType,
        hadoop_config: Any = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ) -> None:
        self.row_type = check_row_type(row_type)
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}; e.g. 2048")
        self._reader = RowReader(self.row_type, "arrow", format_name=_NAME)
        self.batch_size = batch_size
        self.is_case_sensitive = bool(is_case_sensitive)

    def _columns(self, path: str) -> list[str]:
        """The file's column of each field (checked: present and of a type that fits)."""
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(
                f"{_NAME}: {path} is not a Parquet file ({exc}); read it with another format "
                "or remove it from the source's paths"
            ) from None
        columns = []
        for name, t in zip(
            self.row_type.get_field_names(), self.row_type.get_field_types(), strict=True
        ):
            matches = [
                f
                for f in schema
                if f.name == name or (not self.is_case_sensitive and f.name.lower() == name.lower())
            ]
            if not matches:
                raise ValueError(
                    f"{_NAME}: {path} has no column {name!r}; its columns are {schema.names}. "
                    "Declare only columns the file has (or fix the file)"
                )
            found = matches[0]
            if not _fits(found.type, t.to_arrow_type()):
                raise ValueError(
                    f"{_NAME}: column {name!r} of {path} holds {found.type}, which does not fit "
                    f"the declared {t._decl()}; declare the field with a type that fits, or "
                    "write the column with the declared type"
                )
            columns.append(found.name)
        return columns

    def check_file(self, path: str) -> None:
        self._columns(path)

    def read_local(self, path: str) -> Iterator[Row]:
        import pyarrow.parquet as pq

        columns = self._columns(path)
        with pq.ParquetFile(path) as file:
            batches = file.iter_batches(self.batch_size, columns=columns, use_threads=False)
            yield from self.records_of_batches(batches, path)

    def spark_frame(self, spark: Any, path: str) -> Any:
        from sparktide.spark.frames import spark_schema_of

        return spark.read.schema(spark_schema_of(self.row_type)).parquet(path)

    def records_of_batches(self, batches: Iterable[Any], path: str) -> Iterator[Row]:
        return numbered_rows(self._reader.row, batches, path)

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.row_type._decl()})"


class _ParquetWriter(BulkWriter):
    def __init__(self, stream: BinaryIO, schema: pa.Schema) -> None:
        self._stream = stream
        self._schema = schema
        self._writer: Any = None

    def _open(self) -> Any:
        import pyarrow.parquet as pq

        if self._writer is None:
            self._writer = pq.ParquetWriter(self._stream, self._schema)
        return self._writer

    def add_batch(self, batch: Any) -> None:
        self._open().write_batch(batch)

    def finish(self) -> None:
        self._open().close()


class _ParquetWriterFactory(RowDataBulkWriterFactory):
    def create(self, stream: BinaryIO) -> BulkWriter:
        from sparktide.spark.frames import arrow_schema_of

        return _ParquetWriter(stream, arrow_schema_of(self.get_row_type()))

    def write_spark(self, df: Any, directory: str) -> None:
        df.write.mode("append").parquet(directory)

    def spark_part_is_empty(self, spark: Any, path: str, size: int) -> bool:
        from sparktide.datastream.connectors.spark_files import local_path

        local = local_path(path)
        if local is not None:
            import pyarrow.parquet as pq

            return bool(pq.read_metadata(local).num_rows == 0)
        return spark.read.parquet(path).limit(1).count() == 0  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"ParquetBulkWriters.for_row_type({self.get_row_type()._decl()})"


class ParquetBulkWriters:
    """Writer factories of Parquet files (PyFlink's ``ParquetBulkWriters``)."""

    @staticmethod
    def for_row_type(
        row_type: RowTypeInfo | RowType, hadoop_config: Any = None, utc_timestamp: bool = False
    ) -> BulkWriterFactory:
        """A factory writing rows of ``row_type`` (a ``Types.ROW_NAMED``) into Parquet files,
        one column per field; records are matched to the row type by field name (a ``Row``
        named like it) or by position. ``hadoop_config`` and ``utc_timestamp`` are accepted for
        PyFlink compatibility and not used (timestamps are written zone-less)."""
        factory = _ParquetWriterFactory(row_type)
        field_kinds(factory.get_row_type(), "ParquetBulkWriters")
        return factory
