"""A Kafka source's splits: one per topic partition, each with its own watermark generator,
and the deserialization of its records.

The split of a record is ``base[topic] + partition``, topics in name order
(:func:`split_indexes`); partitions that appear after the job started (a new topic matching
the pattern, or partitions added to a topic) share the splits by hash.

>>> split_indexes({"b": 2, "a": 1})
{('a', 0): 0, ('b', 0): 1, ('b', 1): 2}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparktide.common.serialization import DeserializationSchema

if TYPE_CHECKING:
    from sparktide.datastream.connectors.kafka_offsets import KafkaTopicPartition

__all__ = [
    "SPLIT_COLUMN",
    "Deserialize",
    "DeserializingAssigner",
    "split_expression",
    "split_indexes",
]

SPLIT_COLUMN = "__sparktide_kafka_split"


def split_indexes(partitions_per_topic: dict[str, int]) -> dict[tuple[str, int], int]:
    """The split of each (topic, partition): topics in name order, partitions in order."""
    out: dict[tuple[str, int], int] = {}
    for topic in sorted(partitions_per_topic):
        for partition in range(partitions_per_topic[topic]):
            out[(topic, partition)] = len(out)
    return out


def _partitions_per_topic(spark: Any, options: dict[str, str]) -> dict[str, int]:
    """Ask Kafka (through the Kafka client that Spark's connector brings) how many partitions
    the subscribed topics have."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        raise ValueError(
            "a KafkaSource that subscribes to topics needs their partition counts, which are "
            "asked from Kafka through the SparkSession's JVM, and a Spark Connect session has "
            "none: use set_partitions({KafkaTopicPartition(topic, p), ...}) instead"
        )
    props = jvm.java.util.Properties()
    for key, value in options.items():
        if key.startswith("kafka."):
            props.put(key[len("kafka.") :], value)
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    props.put("key.deserializer", deserializer)
    props.put("value.deserializer", deserializer)
    consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
    try:
        if "subscribe" in options:
            topics = options["subscribe"].split(",")
        else:
            pattern = re.compile(options["subscribePattern"])
            topics = [t for t in consumer.listTopics().keySet() if pattern.fullmatch(t)]
        return {topic: int(consumer.partitionsFor(topic).size()) for topic in topics}
    finally:
        consumer.close()


def split_expression(
    spark: Any, assigned: Sequence[KafkaTopicPartition] | None, options: dict[str, str]
) -> tuple[Any, int]:
    """The Spark column giving each record's split, and the number of splits."""
    from pyspark.sql import functions as F

    if assigned is not None:
        indexes = {(tp.topic, tp.partition): i for i, tp in enumerate(assigned)}
    else:
        indexes = split_indexes(_partitions_per_topic(spark, options))
    if not indexes:
        raise ValueError(f"the Kafka source matches no partition (options {options})")
    column: Any = None
    for (topic, partition), index in indexes.items():
        matches = (F.col("topic") == topic) & (F.col("partition") == partition)
        column = F.when(matches, index) if column is None else column.when(matches, index)
    spread = F.pmod(F.hash("topic", "partition"), F.lit(len(indexes)))
    return F.coalesce(column, spread).cast("bigint"), len(indexes)


class Deserialize:
    """A Kafka row -> its deserialized value."""

    def __init__(self, deserializer: DeserializationSchema) -> None:
        self.deserializer = deserializer

    def __call__(self, row: Any) -> Any:
        return self.deserializer.deserialize(row["value"])


class DeserializingAssigner:
    """The user's timestamp assigner, given the deserialized value and the Kafka record's
    timestamp (as Flink's KafkaSource does)."""

    def __init__(self, assigner: Any, deserializer: DeserializationSchema) -> None:
        self.assigner = assigner
        self.deserializer = deserializer

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        import datetime as dt

        stamp = value["timestamp"]
        if isinstance(stamp, dt.datetime):
            epoch = dt.datetime(1970, 1, 1)
            kafka_ts = (stamp.replace(tzinfo=None) - epoch) // dt.timedelta(milliseconds=1)
        else:
            kafka_ts = record_timestamp
        extract = getattr(self.assigner, "extract_timestamp", self.assigner)
        return int(extract(self.deserializer.deserialize(value["value"]), kafka_ts))
