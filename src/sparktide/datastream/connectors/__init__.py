"""Connectors: sources and sinks of external systems, with PyFlink's names
(``pyflink.datastream.connectors``).

>>> from sparktide.datastream.connectors import FileSink, FileSource, StreamFormat
>>> FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/data").build()
FileSource(StreamFormat.text_line_format('UTF-8'), ['/data'])
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

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "BulkWriterFactory",
    "DeliveryGuarantee",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "RollingPolicy",
    "Sink",
    "Source",
    "StreamFormat",
]
