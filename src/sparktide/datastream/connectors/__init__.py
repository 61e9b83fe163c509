"""Connectors: sources and sinks of external systems, with PyFlink's names
(``pyflink.datastream.connectors``).

>>> from sparktide.datastream.connectors import FileSink, FileSource, StreamFormat
>>> FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/data").build()
FileSource(StreamFormat.text_line_format('UTF-8'), ['/data'])

The sinks of a streaming job on Spark (one reading ``env.from_stream``) live here too: each
micro-batch's output goes to them as a DataFrame, per batch id (see
:mod:`sparktide.spark.stream_sinks` for which of them are exactly once).
:class:`ParquetBatchSink` and :class:`JsonBatchSink` overwrite ``<path>/batch=<id>/``;
:class:`ForeachBatchSink` calls a function; :class:`ConsoleBatchSink` prints.

>>> from sparktide.datastream.connectors import ParquetBatchSink
>>> ParquetBatchSink("/tmp/out").path
'/tmp/out'
"""

from sparktide.datastream.connectors.base import DeliveryGuarantee, Sink
from sparktide.datastream.connectors.file_system import (
    BucketAssigner,
    BulkFormat,
    BulkWriterFactory,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from sparktide.datastream.source import Source
from sparktide.spark.stream_sinks import (
    ConsoleBatchSink,
    ForeachBatchSink,
    JsonBatchSink,
    ParquetBatchSink,
    StreamingExactlyOnceWarning,
)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "BulkWriterFactory",
    "ConsoleBatchSink",
    "DeliveryGuarantee",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "ForeachBatchSink",
    "JsonBatchSink",
    "OutputFileConfig",
    "ParquetBatchSink",
    "RollingPolicy",
    "Sink",
    "Source",
    "StreamFormat",
    "StreamingExactlyOnceWarning",
]
