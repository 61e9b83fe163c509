"""Kafka on files: ``pyflink.datastream.connectors.kafka``'s names, with every topic kept as a
directory of files instead of on a broker.

``tests/test_pyflink_examples.py`` runs PyFlink's Kafka examples against this module: the
example's ``from sparktide.datastream.connectors.kafka import ...`` becomes ``from kafka_files
import ...``, and nothing else changes. The builders are sparktide's own (every ``set_*`` call and
its checks run on a real ``KafkaSource.builder()`` / ``KafkaSink.builder()``); only ``build()``
differs:

- ``KafkaSink.builder()...build()`` is a ``FileSink`` under ``<topics>/<topic>``: each record
  goes through the record serializer (the example's key and value serialization schemas) and is
  written as one line ``<base64 key or -> <base64 value>``;
- ``KafkaSource.builder()...build()`` is a bounded ``FileSource`` over ``<topics>/<topic>`` of
  every topic set with ``set_topics``, handing each message's value bytes to the value
  deserializer: reading "from the earliest offset" reads everything written so far, and ends.

``<topics>`` is ``$SPARKTIDE_KAFKA_FILES``, else a fresh temporary directory per process.
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparktide.common.serialization import Encoder
from sparktide.datastream.connectors import kafka as _kafka
from sparktide.datastream.connectors.file_system import FileSink, FileSource, StreamFormat

__all__ = [
    "DeliveryGuarantee",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaSink",
    "KafkaSource",
    "topic_dir",
]

KafkaOffsetsInitializer = _kafka.KafkaOffsetsInitializer
KafkaRecordSerializationSchema = _kafka.KafkaRecordSerializationSchema
DeliveryGuarantee = _kafka.DeliveryGuarantee

_TOPICS = os.environ.get("SPARKTIDE_KAFKA_FILES") or tempfile.mkdtemp(prefix="kafka-files-")


def topic_dir(topic: str) -> str:
    """The directory holding the messages of ``topic``."""
    return str(Path(_TOPICS) / topic)


def encode_message(key: bytes | None, value: bytes) -> bytes:
    """One message as one line: base64 key (``-`` without one), a space, base64 value."""
    k = b"-" if key is None else base64.b64encode(key)
    return k + b" " + base64.b64encode(value) + b"\n"


def decode_message(line: str) -> tuple[bytes | None, bytes]:
    """The ``(key, value)`` of a line written by :func:`encode_message`."""
    key, value = line.split(" ")
    return (None if key == "-" else base64.b64decode(key)), base64.b64decode(value)


class _MessageEncoder(Encoder):
    """Serializes a record with the sink's record serializer into one message line."""

    def __init__(self, serializer: Any) -> None:
        self.serializer = serializer

    def encode(self, value: Any, type_info: Any = None) -> bytes:
        _topic, key, message = self.serializer.serialize(value)
        return encode_message(key, message)


class _MessageFormat(StreamFormat):
    """Reads message lines and deserializes their values."""

    def __init__(self, deserializer: Any) -> None:
        super().__init__("UTF-8")
        self.deserializer = deserializer

    def get_produced_type(self) -> Any:
        return self.deserializer.get_produced_type()

    def read(self, path: str) -> Iterator[Any]:
        for line in super().read(path):
            if line:
                yield self.deserializer.deserialize(decode_message(line)[1])

    def __repr__(self) -> str:
        return f"KafkaMessages({self.deserializer!r})"


class _Builder:
    """Forwards every ``set_*`` call to sparktide's own builder (its checks run) and keeps
    what ``build()`` needs."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._calls: dict[str, tuple[Any, ...]] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)

        def call(*args: Any, **kwargs: Any) -> _Builder:
            method(*args, **kwargs)
            self._calls[name] = args
            return self

        return call


class _SourceBuilder(_Builder):
    def build(self) -> FileSource:
        self._real.build()
        topics = self._calls.get("set_topics")
        deserializer = self._calls.get("set_value_only_deserializer")
        if not topics or not deserializer:
            raise ValueError(
                "kafka_files reads topics set with set_topics(...) and values deserialized by "
                "set_value_only_deserializer(...)"
            )
        paths = [topic_dir(t) for t in topics]
        for path in paths:
            Path(path).mkdir(parents=True, exist_ok=True)
        return (
            FileSource.for_record_stream_format(_MessageFormat(deserializer[0]), *paths)
            .process_static_file_set()
            .build()
        )


class _SinkBuilder(_Builder):
    def build(self) -> FileSink:
        serializer = self._real.build().record_serializer
        if serializer.topic is None:
            raise ValueError("kafka_files writes to one topic: use set_topic(...)")
        return FileSink.for_row_format(
            topic_dir(serializer.topic), _MessageEncoder(serializer)
        ).build()


class KafkaSource:
    @staticmethod
    def builder() -> Any:
        return _SourceBuilder(_kafka.KafkaSource.builder())


class KafkaSink:
    @staticmethod
    def builder() -> Any:
        return _SinkBuilder(_kafka.KafkaSink.builder())
