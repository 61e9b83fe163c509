"""Files as a source (PyFlink's ``FileSource``, ``FileSourceBuilder``, ``StreamFormat`` and
``BulkFormat``): one split per file, on both runtimes.

* Text lines (:meth:`StreamFormat.text_line_format`) are read with Python wherever the split
  runs: in the local process, or in Spark's Python workers (the files must then be visible to the
  workers at the same path: local Spark, or a shared filesystem).
* Typed formats (Parquet, CSV, JSON lines of :mod:`sparktide.datastream.formats`) are read with
  pyarrow or Python on the local runtime, and with Spark's readers on Spark, where the source is
  a DataFrame with one partition per file, rows in file order (see
  :func:`~sparktide.datastream.connectors.spark_files.one_partition_per_file`), so each split
  holds the same records in the same order on both runtimes.

>>> import pathlib, tempfile
>>> base = pathlib.Path(tempfile.mkdtemp())
>>> _ = (base / "b.txt").write_text("3\\n"), (base / "a.txt").write_text("1\\n2\\n")
>>> source = FileSource.for_record_stream_format(
...     StreamFormat.text_line_format(), str(base)).process_static_file_set().build()
>>> [list(source.read_split(split)) for split in source.get_splits()]
[['1', '2'], ['3']]
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.datastream.connectors.bulk_format import FrameFormat
from sparktide.datastream.connectors.file_paths import (
    as_path,
    check_str,
    list_files,
    open_decompressed,
)
from sparktide.datastream.source import Source, SourceSplit
from sparktide.spark.dataframe_source import DataFrameSource

__all__ = ["BulkFormat", "FileSource", "FileSourceBuilder", "StreamFormat"]


class StreamFormat:
    """How a file's bytes become records, one after another (PyFlink's ``StreamFormat``).

    >>> StreamFormat.text_line_format()
    StreamFormat.text_line_format('UTF-8')
    """

    def __init__(self, charset_name: str = "UTF-8") -> None:
        check_str(charset_name, "charset_name", "'UTF-8'")
        try:
            "".encode(charset_name)
        except LookupError:
            raise ValueError(
                f"charset_name must name a charset Python knows, got {charset_name!r}; use "
                "e.g. 'UTF-8' or 'ISO-8859-1'"
            ) from None
        self._charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Lines of text (without their ``\\n``, ``\\r\\n`` or ``\\r``), decoded with
        ``charset_name``; undecodable bytes become U+FFFD as in Java. Files ending in ``.gz``,
        ``.bz2``, ``.xz`` or ``.deflate`` are decompressed."""
        return StreamFormat(charset_name)

    def get_produced_type(self) -> TypeInformation:
        """The type of the records (``Types.STRING()`` for text lines)."""
        return Types.STRING()

    def read(self, path: str) -> Iterator[Any]:
        """The records of the file ``path``."""
        with open_decompressed(path) as raw:
            text = io.TextIOWrapper(raw, encoding=self._charset_name, errors="replace")
            for line in text:  # universal newlines: \n, \r\n and \r all end a line
                yield line[:-1] if line.endswith("\n") else line

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self._charset_name!r})"


class BulkFormat:
    """Reads a file's records in batches (PyFlink's ``BulkFormat``), e.g.
    :class:`~sparktide.datastream.formats.parquet.ParquetColumnarRowInputFormat`."""


class FileSourceBuilder:
    """Configures a :class:`FileSource` (PyFlink's ``FileSourceBuilder``)."""

    def __init__(self, file_format: StreamFormat | BulkFormat, paths: tuple[str, ...]) -> None:
        self._format = file_format
        self._paths = paths

    def process_static_file_set(self) -> FileSourceBuilder:
        """Reads the files present when the job starts, then finishes (the default)."""
        return self

    def monitor_continuously(self, discovery_interval: Any) -> FileSourceBuilder:
        """Not supported: the files are read as a bounded, static set."""
        raise ValueError(
            "monitor_continuously is not supported: FileSource reads a static set of files; "
            "call process_static_file_set() (or nothing) and run the job again for new files"
        )

    def build(self) -> FileSource:
        """The source."""
        if isinstance(self._format, FrameFormat):
            return FrameFileSource(self._format, self._paths)
        return FileSource(self._format, self._paths)


class FileSource(Source):
    """The records of a static set of files, one split per file (PyFlink's ``FileSource``).

    Build it with :meth:`for_record_stream_format` or :meth:`for_bulk_file_format`.
    ``get_splits()`` lists the files: each path that is a file, and the files under each path
    that is a directory (recursively, sorted by name), skipping names that start with ``.`` or
    ``_`` (Flink's default file filter; it skips Spark's ``_SUCCESS`` files too). Paths are
    local (or mounted) paths that the driver can list.
    """

    def __init__(self, stream_format: StreamFormat | BulkFormat, paths: Sequence[Any]) -> None:
        if not isinstance(stream_format, StreamFormat | BulkFormat):
            raise TypeError(
                f"stream_format must be a StreamFormat or a BulkFormat, got "
                f"{type(stream_format).__name__}; use StreamFormat.text_line_format() or a "
                "format of sparktide.datastream.formats"
            )
        if not paths:
            raise ValueError("paths must name at least one file or directory; pass one or more")
        self._stream_format = stream_format
        self._paths = tuple(as_path(p, f"paths[{i}]", "'/data/input'") for i, p in enumerate(paths))
        self._files: list[str] | None = None
        # the type of the records, for ``env.from_source``
        self.type_info: TypeInformation | None = self.get_produced_type()

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        """A builder of a source that reads the files under ``paths`` with ``stream_format``
        (text lines, :class:`~sparktide.datastream.formats.csv.CsvReaderFormat`, ...)."""
        if not isinstance(stream_format, StreamFormat):
            raise TypeError(
                f"stream_format must be a StreamFormat, got {type(stream_format).__name__}; use "
                "StreamFormat.text_line_format() (bulk formats such as Parquet go to "
                "FileSource.for_bulk_file_format)"
            )
        return FileSourceBuilder(stream_format, tuple(paths))

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        """A builder of a source that reads the files under ``paths`` with ``bulk_format``
        (e.g. :class:`~sparktide.datastream.formats.parquet.ParquetColumnarRowInputFormat`)."""
        if not isinstance(bulk_format, BulkFormat):
            raise TypeError(
                f"bulk_format must be a BulkFormat, got {type(bulk_format).__name__}; use e.g. "
                "ParquetColumnarRowInputFormat(row_type) (stream formats such as text lines go "
                "to FileSource.for_record_stream_format)"
            )
        return FileSourceBuilder(bulk_format, tuple(paths))

    def get_produced_type(self) -> TypeInformation | None:
        """The type of the records (the format's)."""
        produced = getattr(self._stream_format, "get_produced_type", None)
        return None if produced is None else produced()

    def files(self) -> list[str]:
        """The files of the splits (listed once, on first use)."""
        if self._files is None:
            self._files = list_files(self._paths)
        return self._files

    def get_splits(self) -> list[SourceSplit]:
        return [SourceSplit(str(i), path) for i, path in enumerate(self.files())]

    def read_split(self, split: SourceSplit) -> Iterator[Any]:
        return self._stream_format.read(split.payload)  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"FileSource({self._stream_format!r}, {list(self._paths)!r})"


class FrameFileSource(FileSource, DataFrameSource):
    """A :class:`FileSource` of a typed format: read locally with the format's own reader, and
    on Spark as a DataFrame (Spark's readers) with one partition per file, in file order."""

    type_info: RowTypeInfo

    def __init__(self, file_format: FrameFormat, paths: Sequence[Any]) -> None:
        FileSource.__init__(self, file_format, paths)  # type: ignore[arg-type]
        self.type_info = file_format.row_type
        self._format = file_format
        self.columns = file_format.row_type.get_field_names()
        self.split_by: list[str] = []
        self.order_by: list[str] = []
        self._prepared: Any = None

    def read_split(self, split: SourceSplit) -> Iterator[Any]:
        return self._format.read_local(split.payload)

    def prepared(self) -> Any:
        """The DataFrame whose partition ``i`` holds the rows of file ``i`` (driver side)."""
        if self._prepared is None:
            from sparktide.datastream.connectors.spark_files import one_partition_per_file
            from sparktide.spark.session import get_spark

            spark = get_spark()
            files = self.files()
            for path in files:
                self._format.check_file(path)
            frames = [self._format.spark_frame(spark, path) for path in files]
            self._prepared = one_partition_per_file(spark, frames)
        return self._prepared

    def records(self, batches: Iterable[Any]) -> Iterator[Any]:
        """The records of this task's partition (in Spark's workers: partition ``i`` is file
        ``i``)."""
        from pyspark import TaskContext

        context = TaskContext.get()
        index = context.partitionId() if context is not None else 0
        return self._format.records_of_batches(batches, self.files()[index])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_prepared"] = None
        return state

    def __repr__(self) -> str:
        return f"FileSource({self._format!r}, {list(self._paths)!r})"
