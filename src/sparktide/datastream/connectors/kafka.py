"""Kafka with PyFlink's names (``pyflink.datastream.connectors.kafka``), read and written by
Spark's Kafka connector.

``KafkaSource`` becomes Spark's Kafka source: unbounded (the default) a Structured Streaming
read (``env.from_stream``), bounded (``set_bounded``) a batch read (``env.from_dataframe``).
Each Kafka topic partition is one split with its own watermark generator, read in offset order,
and a record's timestamp is the Kafka record's unless the watermark strategy assigns one (its
assigner sees the deserialized value, as in Flink). ``KafkaSink`` writes with Spark's Kafka
sink. Without the connector on Spark's classpath, both fail with one error naming the package
to add (:mod:`sparktide.datastream.connectors.kafka_spark`).

>>> from sparktide.common.serialization import SimpleStringSchema
>>> source = (KafkaSource.builder()
...           .set_bootstrap_servers("broker:9092")
...           .set_topics("events", "audit")
...           .set_group_id("readers")
...           .set_starting_offsets(KafkaOffsetsInitializer.earliest())
...           .set_value_only_deserializer(SimpleStringSchema())
...           .build())
>>> source.reader_options()
{'kafka.bootstrap.servers': 'broker:9092', 'subscribe': 'audit,events', \
'kafka.group.id': 'readers', 'startingOffsets': 'earliest'}
>>> source.is_bounded()
False
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from sparktide.common.serialization import DeserializationSchema, SerializationSchema
from sparktide.common.typeinfo import Types
from sparktide.datastream.connectors.base import DeliveryGuarantee, Sink
from sparktide.datastream.connectors.kafka_offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)
from sparktide.datastream.connectors.kafka_spark import with_kafka_connector
from sparktide.datastream.connectors.kafka_splits import (
    SPLIT_COLUMN,
    Deserialize,
    DeserializingAssigner,
    split_expression,
)

if TYPE_CHECKING:
    from sparktide.datastream.data_stream import DataStream

__all__ = [
    "FlinkKafkaConsumer",
    "FlinkKafkaProducer",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "Semantic",
]

# Flink properties with no Spark counterpart: Spark discovers new partitions every micro-batch
# and keeps offsets in its checkpoint
_FLINK_ONLY_PROPERTIES = frozenset(
    {
        "partition.discovery.interval.ms",
        "commit.offsets.on.checkpoint",
        "register.consumer.metrics",
        "client.id.prefix",
    }
)


def _non_empty(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


# ---------------------------------------------------------------------- the source


class KafkaSource:
    """A Kafka source built by :meth:`builder`; read it with ``env.from_source(source,
    watermark_strategy, name)``."""

    def __init__(self, options: dict[str, object]) -> None:
        self._options = options

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    def is_bounded(self) -> bool:
        return self._options.get("stopping") is not None

    @property
    def deserializer(self) -> DeserializationSchema:
        return self._options["deserializer"]  # type: ignore[return-value]

    def partitions(self) -> list[KafkaTopicPartition] | None:
        """The assigned partitions (``set_partitions``), sorted; ``None`` when subscribed."""
        assigned = self._options.get("partitions")
        return None if assigned is None else sorted(assigned)  # type: ignore[call-overload]

    def reader_options(self) -> dict[str, str]:
        """The options of Spark's Kafka source (``spark.read[Stream].format("kafka")``)."""
        o = self._options
        out = {"kafka.bootstrap.servers": str(o["bootstrap_servers"])}
        assigned = self.partitions()
        if assigned is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in assigned:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            out["assign"] = json.dumps(by_topic)
        elif o.get("pattern") is not None:
            out["subscribePattern"] = str(o["pattern"])
        else:
            out["subscribe"] = ",".join(sorted(o["topics"]))  # type: ignore[call-overload]
        if o.get("group_id") is not None:
            out["kafka.group.id"] = str(o["group_id"])
        if o.get("client_id_prefix") is not None:
            out["kafka.client.id"] = str(o["client_id_prefix"])
        starting: KafkaOffsetsInitializer = o["starting"]  # type: ignore[assignment]
        out.update(starting.spark_options("starting"))
        stopping = o.get("stopping")
        if isinstance(stopping, KafkaOffsetsInitializer):
            out.update(stopping.spark_options("ending"))
        for key, value in dict(o["properties"]).items():  # type: ignore[call-overload]
            if key not in _FLINK_ONLY_PROPERTIES:
                out[f"kafka.{key}"] = str(value)
        return out

    def build_stream(
        self, env: Any, watermark_strategy: Any, source_name: str, type_info: Any
    ) -> DataStream:
        """The stream of this source in ``env`` (``env.from_source`` calls it): Spark reads
        the records, one split per topic partition, and the deserializer makes the values."""
        from sparktide.common.watermark_strategy import WatermarkStrategy
        from sparktide.spark.session import get_spark

        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(
                "watermark_strategy must be a WatermarkStrategy (e.g. WatermarkStrategy."
                f"no_watermarks()), got {type(watermark_strategy).__name__}"
            )
        spark = get_spark()
        options = self.reader_options()
        strategy = watermark_strategy
        if strategy.timestamp_assigner is not None:
            strategy = strategy.with_timestamp_assigner(
                DeserializingAssigner(strategy.timestamp_assigner, self.deserializer)
            )
        produced = type_info if type_info is not None else self.deserializer.get_produced_type()
        if self.is_bounded():
            frame = with_kafka_connector(
                "KafkaSource", lambda: spark.read.format("kafka").options(**options).load()
            )
            rows = env.from_dataframe(
                frame,
                strategy,
                timestamp_column="timestamp",
                order_by="offset",
                source_name=source_name,
            )
        else:
            frame = with_kafka_connector(
                "KafkaSource", lambda: spark.readStream.format("kafka").options(**options).load()
            )
            column, num_splits = split_expression(spark, self.partitions(), options)
            rows = env.from_stream(
                frame.withColumn(SPLIT_COLUMN, column),
                strategy,
                timestamp_column="timestamp",
                split_by=SPLIT_COLUMN,
                order_by="offset",
                num_splits=num_splits,
                source_name=source_name,
            )
        stream: DataStream = rows.map(Deserialize(self.deserializer), produced)
        return stream.name("Kafka Deserializer")

    def __repr__(self) -> str:
        return f"KafkaSource({self.reader_options()!r})"


class KafkaSourceBuilder:
    """Builds a :class:`KafkaSource` (PyFlink's builder methods)."""

    def __init__(self) -> None:
        self._options: dict[str, object] = {
            "bootstrap_servers": None,
            "topics": None,
            "pattern": None,
            "partitions": None,
            "group_id": None,
            "client_id_prefix": None,
            "starting": KafkaOffsetsInitializer.earliest(),
            "stopping": None,
            "deserializer": None,
            "properties": {},
        }

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._options["bootstrap_servers"] = _non_empty(bootstrap_servers, "bootstrap_servers")
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._options["group_id"] = _non_empty(group_id, "group_id")
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        if not topics:
            raise ValueError("set_topics needs at least one topic")
        self._options["topics"] = [_non_empty(t, "topic") for t in topics]
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        self._options["pattern"] = _non_empty(topic_pattern, "topic_pattern")
        return self

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        if not partitions or not all(isinstance(p, KafkaTopicPartition) for p in partitions):
            raise ValueError(
                "partitions must be a non-empty set of KafkaTopicPartition(topic, partition)"
            )
        self._options["partitions"] = set(partitions)
        return self

    def set_starting_offsets(
        self, starting_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        self._options["starting"] = _initializer(starting_offsets_initializer)
        return self

    def set_unbounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Stop at the given offsets. Spark's streaming Kafka source cannot stop at offsets,
        so the source is read as a bounded batch up to them: the same records, read once."""
        return self.set_bounded(stopping_offsets_initializer)

    def set_bounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        self._options["stopping"] = _initializer(stopping_offsets_initializer)
        return self

    def set_value_only_deserializer(
        self, deserialization_schema: DeserializationSchema
    ) -> KafkaSourceBuilder:
        if not callable(getattr(deserialization_schema, "deserialize", None)):
            raise TypeError(
                "deserialization_schema must be a DeserializationSchema (e.g. "
                f"SimpleStringSchema()), got {type(deserialization_schema).__name__}"
            )
        self._options["deserializer"] = deserialization_schema
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        self._options["client_id_prefix"] = _non_empty(prefix, "prefix")
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        self._options["properties"][_non_empty(key, "key")] = value  # type: ignore[index]
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        for key, value in props.items():
            self.set_property(key, value)
        return self

    def build(self) -> KafkaSource:
        o = self._options
        if o["bootstrap_servers"] is None:  # as in Flink, the property counts as well
            o["bootstrap_servers"] = o["properties"].get("bootstrap.servers")  # type: ignore[attr-defined]
        if o["bootstrap_servers"] is None:
            raise ValueError(
                "KafkaSource needs set_bootstrap_servers('host:9092,...') (or the property "
                "bootstrap.servers)"
            )
        chosen = [k for k in ("topics", "pattern", "partitions") if o[k] is not None]
        if len(chosen) != 1:
            raise ValueError(
                "KafkaSource reads exactly one of set_topics(...), set_topic_pattern(...) or "
                f"set_partitions(...); got {chosen or 'none'}"
            )
        if o["deserializer"] is None:
            raise ValueError(
                "KafkaSource needs set_value_only_deserializer(...) (e.g. SimpleStringSchema())"
            )
        return KafkaSource(dict(o, properties=dict(o["properties"])))  # type: ignore[call-overload]


def _initializer(value: object) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise TypeError(
            "expected a KafkaOffsetsInitializer (e.g. KafkaOffsetsInitializer.earliest()), got "
            f"{type(value).__name__}"
        )
    return value


# ---------------------------------------------------------------------- the sink


class KafkaTopicSelector:
    """Picks the topic of a record (``apply(value) -> topic``)."""

    def apply(self, data: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__}.apply(data) must return a topic")


class KafkaRecordSerializationSchema:
    """How a record becomes a Kafka message: its topic, key and value."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: Callable[[Any], str] | None,
        key_schema: SerializationSchema | None,
        value_schema: SerializationSchema,
    ) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, value: Any) -> tuple[str | None, bytes | None, bytes]:
        """(topic or ``None`` for the fixed topic, key bytes or ``None``, value bytes)."""
        topic = None if self.topic_selector is None else self.topic_selector(value)
        key = None if self.key_schema is None else self.key_schema.serialize(value)
        return topic, key, self.value_schema.serialize(value)


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._selector: Callable[[Any], str] | None = None
        self._key: SerializationSchema | None = None
        self._value: SerializationSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic = _non_empty(topic, "topic")
        return self

    def set_topic_selector(
        self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
    ) -> KafkaRecordSerializationSchemaBuilder:
        select = getattr(topic_selector, "apply", topic_selector)
        if not callable(select):
            raise TypeError(
                "topic_selector must be a KafkaTopicSelector or a callable value -> topic, got "
                f"{type(topic_selector).__name__}"
            )
        self._selector = select
        return self

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._key = key_serialization_schema
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._value = value_serialization_schema
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if (self._topic is None) == (self._selector is None):
            raise ValueError(
                "a KafkaRecordSerializationSchema needs exactly one of set_topic(...) or "
                "set_topic_selector(...)"
            )
        if self._value is None:
            raise ValueError(
                "a KafkaRecordSerializationSchema needs set_value_serialization_schema(...) "
                "(e.g. SimpleStringSchema())"
            )
        return KafkaRecordSerializationSchema(self._topic, self._selector, self._key, self._value)


_MESSAGE_TYPE = Types.ROW_NAMED(
    ["topic", "key", "value"],
    [Types.STRING(), Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.PRIMITIVE_ARRAY(Types.BYTE())],
)


class _Serialize:
    """A record -> the (topic, key, value) row Spark's Kafka sink writes."""

    def __init__(self, schema: KafkaRecordSerializationSchema) -> None:
        self.schema = schema

    def __call__(self, value: Any) -> Any:
        from sparktide.common.types import Row

        topic, key, message = self.schema.serialize(value)
        return Row(topic=topic, key=key, value=message)


class KafkaSink(Sink):
    """A Kafka sink built by :meth:`builder`; write a stream with ``stream.sink_to(sink)``."""

    def __init__(self, options: dict[str, object]) -> None:
        self._options = options

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    @property
    def record_serializer(self) -> KafkaRecordSerializationSchema:
        return self._options["serializer"]  # type: ignore[return-value]

    def get_transformer(self) -> None:
        return None

    def writer_options(self) -> dict[str, str]:
        """The options of Spark's Kafka sink (``df.write[Stream].format("kafka")``)."""
        out = {"kafka.bootstrap.servers": str(self._options["bootstrap_servers"])}
        if self.record_serializer.topic is not None:
            out["topic"] = self.record_serializer.topic
        for key, value in dict(self._options["properties"]).items():  # type: ignore[call-overload]
            out[f"kafka.{key}"] = str(value)
        return out

    def prepare_stream(self, stream: DataStream) -> tuple[DataStream, Any]:
        """What ``sink_to`` writes: the records serialized into (topic, key, value) rows, and
        the writer that hands them to Spark's Kafka sink."""
        from sparktide.datastream.connectors.kafka_writer import KafkaFrameWriter

        rows = stream.map(_Serialize(self.record_serializer), _MESSAGE_TYPE).name(
            "Kafka Serializer"
        )
        return rows, KafkaFrameWriter(self.writer_options())


class KafkaSinkBuilder:
    def __init__(self) -> None:
        self._options: dict[str, object] = {
            "bootstrap_servers": None,
            "serializer": None,
            "guarantee": DeliveryGuarantee.NONE,
            "transactional_id_prefix": None,
            "properties": {},
        }

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._options["bootstrap_servers"] = _non_empty(bootstrap_servers, "bootstrap_servers")
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        """NONE and AT_LEAST_ONCE: Spark's Kafka sink writes every record at least once (a
        replayed micro-batch writes again). EXACTLY_ONCE is not supported on Spark, because
        Spark's Kafka sink writes without Kafka transactions."""
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise TypeError(
                "delivery_guarantee must be a DeliveryGuarantee, got "
                f"{type(delivery_guarantee).__name__}"
            )
        if delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            raise ValueError(
                "DeliveryGuarantee.EXACTLY_ONCE is not supported on Spark, because Spark's Kafka "
                "sink writes without Kafka transactions: use AT_LEAST_ONCE (and deduplicate by "
                "key downstream), or write to an idempotent sink such as ParquetBatchSink"
            )
        self._options["guarantee"] = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """Recorded only: without transactions there is no transactional id."""
        self._options["transactional_id_prefix"] = transactional_id_prefix
        return self

    def set_record_serializer(
        self, record_serializer: KafkaRecordSerializationSchema
    ) -> KafkaSinkBuilder:
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise TypeError(
                "record_serializer must be built with KafkaRecordSerializationSchema.builder(), "
                f"got {type(record_serializer).__name__}"
            )
        self._options["serializer"] = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        self._options["properties"][_non_empty(key, "key")] = value  # type: ignore[index]
        return self

    def build(self) -> KafkaSink:
        if self._options["bootstrap_servers"] is None:
            raise ValueError("KafkaSink needs set_bootstrap_servers('host:9092,...')")
        if self._options["serializer"] is None:
            raise ValueError(
                "KafkaSink needs set_record_serializer(KafkaRecordSerializationSchema.builder()"
                ".set_topic(...).set_value_serialization_schema(...).build())"
            )
        return KafkaSink(dict(self._options))


# ---------------------------------------------------------------------- the legacy API


class Semantic(Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class FlinkKafkaConsumer:
    """Flink's legacy Kafka consumer: not supported on Spark, because it is a Java
    SourceFunction; use :class:`KafkaSource`, which Spark's Kafka connector reads."""

    def __init__(self, topics: Any, deserialization_schema: Any, properties: Any) -> None:
        raise NotImplementedError(
            "FlinkKafkaConsumer is not supported on Spark, because it is a Java SourceFunction: "
            "use KafkaSource.builder().set_bootstrap_servers(...).set_topics(...)"
            ".set_value_only_deserializer(...).build() with env.from_source(...)"
        )


class FlinkKafkaProducer:
    """Flink's legacy Kafka producer: not supported on Spark, because it is a Java
    SinkFunction; use :class:`KafkaSink`."""

    def __init__(
        self, topic: Any, serialization_schema: Any, producer_config: Any, *args: Any, **kwargs: Any
    ) -> None:
        raise NotImplementedError(
            "FlinkKafkaProducer is not supported on Spark, because it is a Java SinkFunction: "
            "use KafkaSink.builder().set_bootstrap_servers(...).set_record_serializer(...)"
            ".build() with stream.sink_to(...)"
        )
