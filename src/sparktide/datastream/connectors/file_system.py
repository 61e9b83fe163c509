"""Files as a source and a sink (PyFlink's ``pyflink.datastream.connectors.file_system``).

:class:`FileSource` reads a static set of files, one split per file (directories are read
recursively, in sorted order; names starting with ``.`` or ``_`` are skipped, ``.gz``, ``.bz2``,
``.xz`` and ``.deflate`` text files are decompressed, as Flink does): lines of text
(:meth:`StreamFormat.text_line_format`), or rows of a typed format of
:mod:`sparktide.datastream.formats` (Parquet, CSV, JSON lines). See :mod:`.file_source`.

>>> import pathlib, tempfile
>>> base = pathlib.Path(tempfile.mkdtemp())
>>> _ = (base / "in").mkdir(), (base / "in" / "b.txt").write_text("3\\n"), \\
...     (base / "in" / "a.txt").write_text("1\\n2\\n")
>>> source = FileSource.for_record_stream_format(
...     StreamFormat.text_line_format(), str(base / "in")).process_static_file_set().build()
>>> [list(source.read_split(split)) for split in source.get_splits()]
[['1', '2'], ['3']]

:class:`FileSink` writes part files into bucket directories, like Flink's ``FileSink``:
``<base>/<bucket>/<prefix>-<uuid>-<counter><suffix>``, rolled by the :class:`RollingPolicy`; a
part file is written as a hidden in-progress file and renamed to its final name when committed
(at a completed checkpoint, and at the end of the input). See :mod:`.file_sink`. A streaming
job on Spark writes each micro-batch's output with :class:`ParquetBatchSink` or
:class:`JsonBatchSink` (``<path>/batch=<id>/``, overwritten when a batch is replayed: exactly
once), also exported by :mod:`sparktide.datastream.connectors`.

>>> from sparktide.common.serialization import Encoder
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.runtime.elements import StreamRecord
>>> from sparktide.runtime.processing_time import ManualProcessingTimeService
>>> sink = (FileSink.for_row_format(str(base / "out"), Encoder.simple_string_encoder())
...     .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix")
...                              .with_part_suffix(".ext").build())
...     .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
...     .build())
>>> op = sink.create_operator(Types.TUPLE([Types.STRING(), Types.INT()]))
>>> op.setup(None, ManualProcessingTimeService())
>>> op.open()
>>> for value in [("a", 1), ("b", 2)]:
...     op.process_element(StreamRecord(value, None))
>>> op.finish(); op.close()
>>> [(p.name.startswith("prefix-") and p.suffix, p.read_text())
...  for p in (base / "out").iterdir()]
[('.ext', '(a,1)\\n(b,2)\\n')]
"""

from __future__ import annotations

from sparktide.common.not_provided import module_getattr
from sparktide.datastream.connectors.bulk_format import (
    BulkWriter,
    BulkWriterFactory,
    RowDataBulkWriterFactory,
)
from sparktide.datastream.connectors.file_policies import (
    BucketAssigner,
    DefaultRollingPolicy,
    OnCheckpointRollingPolicy,
    OutputFileConfig,
    RollingPolicy,
)
from sparktide.datastream.connectors.file_sink import FileSink
from sparktide.datastream.connectors.file_source import (
    BulkFormat,
    FileSource,
    FileSourceBuilder,
    StreamFormat,
)
from sparktide.datastream.connectors.file_writer import FileWriter, PartFileInfo
from sparktide.spark.stream_sinks import JsonBatchSink, ParquetBatchSink

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "BulkWriter",
    "BulkWriterFactory",
    "DefaultRollingPolicy",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileWriter",
    "JsonBatchSink",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "ParquetBatchSink",
    "PartFileInfo",
    "RollingPolicy",
    "RowDataBulkWriterFactory",
    "StreamFormat",
]
