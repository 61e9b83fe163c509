"""KafkaSource / KafkaSink: the Spark Kafka options they become, the splits, the
(de)serialization, and the one error when Spark's Kafka connector is missing (there is no
broker here, and the connector is a JVM package this machine does not have)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Row, Types, WatermarkStrategy
from sparktide.common.serialization import SimpleStringSchema
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.connectors import DeliveryGuarantee
from sparktide.datastream.connectors.kafka import (
    FlinkKafkaConsumer,
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from sparktide.datastream.connectors.kafka_spark import KafkaConnectorMissingError, kafka_package
from sparktide.datastream.connectors.kafka_splits import (
    Deserialize,
    DeserializingAssigner,
    split_indexes,
)


def builder() -> Any:
    return (
        KafkaSource.builder()
        .set_bootstrap_servers("b1:9092,b2:9092")
        .set_value_only_deserializer(SimpleStringSchema())
    )


def test_topics_pattern_and_partitions_become_subscribe_pattern_and_assign() -> None:
    topics = builder().set_topics("t2", "t1").build().reader_options()
    assert topics == {
        "kafka.bootstrap.servers": "b1:9092,b2:9092",
        "subscribe": "t1,t2",
        "startingOffsets": "earliest",  # Flink's default
    }
    pattern = builder().set_topic_pattern("events-.*").build().reader_options()
    assert pattern["subscribePattern"] == "events-.*" and "subscribe" not in pattern
    parts = {KafkaTopicPartition("a", 1), KafkaTopicPartition("a", 0), KafkaTopicPartition("b", 3)}
    assigned = builder().set_partitions(parts).build()
    assert json.loads(assigned.reader_options()["assign"]) == {"a": [0, 1], "b": [3]}
    assert assigned.partitions() == sorted(parts)


def test_offsets_group_client_and_properties() -> None:
    tp = KafkaTopicPartition("t", 2)
    source = (
        builder()
        .set_topics("t")
        .set_group_id("g")
        .set_client_id_prefix("c")
        .set_starting_offsets(KafkaOffsetsInitializer.offsets({tp: 7}))
        .set_bounded(KafkaOffsetsInitializer.timestamp(1_700_000_000_000))
        .set_properties({"security.protocol": "SSL", "partition.discovery.interval.ms": "10"})
        .build()
    )
    options = source.reader_options()
    assert options["kafka.group.id"] == "g"
    assert options["kafka.client.id"] == "c"
    assert json.loads(options["startingOffsets"]) == {"t": {"2": 7}}
    assert options["endingTimestamp"] == "1700000000000"
    assert options["kafka.security.protocol"] == "SSL"
    # Flink-only: Spark discovers partitions every micro-batch
    assert not any("discovery" in key for key in options)
    assert source.is_bounded()
    latest = builder().set_topics("t").set_unbounded(KafkaOffsetsInitializer.latest()).build()
    assert latest.is_bounded() and latest.reader_options()["endingOffsets"] == "latest"


def test_committed_offsets_start_from_the_reset_strategy() -> None:
    reset = KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.LATEST)
    source = builder().set_topics("t").set_starting_offsets(reset).build()
    assert source.reader_options()["startingOffsets"] == "latest"
    without = (
        builder().set_topics("t").set_starting_offsets(KafkaOffsetsInitializer.committed_offsets())
    )
    with pytest.raises(ValueError, match="committed_offsets\\(\\) is not supported on Spark"):
        without.build().reader_options()
    stop_at_start = builder().set_topics("t").set_bounded(KafkaOffsetsInitializer.earliest())
    with pytest.raises(ValueError, match="would read nothing"):
        stop_at_start.build().reader_options()


def test_the_builder_says_what_is_missing() -> None:
    with pytest.raises(ValueError, match="exactly one of set_topics"):
        builder().build()
    with pytest.raises(ValueError, match="exactly one of set_topics"):
        builder().set_topics("a").set_topic_pattern("b").build()
    with pytest.raises(ValueError, match="set_value_only_deserializer"):
        KafkaSource.builder().set_bootstrap_servers("b:1").set_topics("a").build()
    with pytest.raises(ValueError, match="set_bootstrap_servers"):
        KafkaSource.builder().set_topics("a").build()
    with pytest.raises(NotImplementedError, match=r"use KafkaSource\.builder"):
        FlinkKafkaConsumer("t", SimpleStringSchema(), {})


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers(1, 5), max_size=4))
def test_every_topic_partition_has_its_own_split(counts: dict[str, int]) -> None:
    indexes = split_indexes(counts)
    assert sorted(indexes.values()) == list(range(sum(counts.values())))
    assert set(indexes) == {(t, p) for t, n in counts.items() for p in range(n)}
    # topics in name order, partitions in order: the splits do not depend on dict order
    assert split_indexes(dict(reversed(list(counts.items())))) == indexes


def test_values_are_deserialized_and_the_assigner_sees_them() -> None:
    kafka_row = Row(
        key=None,
        value=b"7,hello",
        topic="t",
        partition=0,
        offset=3,
        timestamp=dt.datetime(1970, 1, 1, 0, 0, 2),
    )
    assert Deserialize(SimpleStringSchema())(kafka_row) == "7,hello"
    seen = []

    def assign(value: str, kafka_ts: int) -> int:
        seen.append((value, kafka_ts))
        return int(value.split(",")[0])

    assigner = DeserializingAssigner(assign, SimpleStringSchema())
    assert assigner.extract_timestamp(kafka_row, -1) == 7
    assert seen == [("7,hello", 2000)]


def sink(**topic: Any) -> KafkaSink:
    serializer = KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
        SimpleStringSchema()
    )
    if "topic" in topic:
        serializer = serializer.set_topic(topic["topic"])
    else:
        serializer = serializer.set_topic_selector(topic["selector"])
    return (
        KafkaSink.builder()
        .set_bootstrap_servers("b:9092")
        .set_record_serializer(
            serializer.set_key_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .set_property("acks", "all")
        .build()
    )


def test_sink_options_and_messages() -> None:
    fixed = sink(topic="out")
    assert fixed.writer_options() == {
        "kafka.bootstrap.servers": "b:9092",
        "topic": "out",
        "kafka.acks": "all",
    }
    assert fixed.record_serializer.serialize("v") == (None, b"v", b"v")
    routed = sink(selector=lambda v: "even" if len(v) % 2 == 0 else "odd")
    assert "topic" not in routed.writer_options()
    assert routed.record_serializer.serialize("ab") == ("even", b"ab", b"ab")
    with pytest.raises(ValueError, match="EXACTLY_ONCE is not supported on Spark"):
        KafkaSink.builder().set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)


def test_the_sink_serializes_inside_the_job_and_needs_spark_to_write() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.from_collection(["a", "bb"], Types.STRING()).sink_to(sink(topic="out"))
    names = [n.name for n in env.get_stream_graph().nodes]
    assert names == ["Collection Source", "Kafka Serializer", "Sink: Writer"]
    with pytest.raises(RuntimeError, match="KafkaSink writes with Spark's Kafka connector"):
        env.execute()


def test_without_the_connector_one_error_names_the_package(spark: Any) -> None:
    """No Kafka connector on this Spark's classpath: reading and writing say what to add."""
    assert kafka_package().startswith("org.apache.spark:spark-sql-kafka-0-10_2.13:4.")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    bounded = builder().set_topics("t").set_bounded(KafkaOffsetsInitializer.latest()).build()
    with pytest.raises(KafkaConnectorMissingError, match=kafka_package().replace(".", r"\.")):
        env.from_source(bounded, WatermarkStrategy.no_watermarks(), "Kafka")
    streaming = builder().set_topics("t").build()
    with pytest.raises(KafkaConnectorMissingError, match="KafkaSource needs Spark's Kafka"):
        env.from_source(streaming, WatermarkStrategy.no_watermarks(), "Kafka")
    env.from_collection(["a"], Types.STRING()).sink_to(sink(topic="out"))
    with pytest.raises(KafkaConnectorMissingError, match="KafkaSink needs Spark's Kafka"):
        env.execute()


# ---------------------------------------------------------------------- row schemas

ROW_TYPE = Types.ROW_NAMED(
    ["id", "name", "score", "tags"],
    [Types.LONG(), Types.STRING(), Types.DOUBLE(), Types.LIST(Types.STRING())],
)
rows = st.builds(
    lambda i, n, s, t: Row(id=i, name=n, score=s, tags=t),
    st.none() | st.integers(-(2**63), 2**63 - 1),
    st.none() | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
    st.none() | st.lists(st.text(alphabet='abc,"x ', min_size=1), max_size=3),
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows)
def test_json_row_schemas_round_trip(row: Row) -> None:
    from sparktide.datastream.formats.json import (
        JsonRowDeserializationSchema,
        JsonRowSerializationSchema,
    )

    out = JsonRowSerializationSchema.builder().with_type_info(ROW_TYPE).build()
    back = JsonRowDeserializationSchema.builder().type_info(ROW_TYPE).build()
    message = out.serialize(row)
    assert json.loads(message)["id"] == row["id"]
    assert back.deserialize(message) == row


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows)
def test_csv_row_schemas_round_trip(row: Row) -> None:
    from sparktide.datastream.formats.csv import (
        CsvRowDeserializationSchema,
        CsvRowSerializationSchema,
    )

    # CSV cannot tell an empty list from null, nor an empty string from null
    if row["tags"] is not None and (not row["tags"] or any(";" in t for t in row["tags"])):
        row = Row(id=row["id"], name=row["name"], score=row["score"], tags=None)
    out = CsvRowSerializationSchema.Builder(ROW_TYPE).set_field_delimiter("|").build()
    back = CsvRowDeserializationSchema.Builder(ROW_TYPE).set_field_delimiter("|").build()
    assert back.deserialize(out.serialize(row)) == row


def test_row_schemas_say_what_is_wrong() -> None:
    from sparktide.datastream.formats.csv import CsvRowDeserializationSchema
    from sparktide.datastream.formats.json import JsonRowDeserializationSchema

    strict = (
        JsonRowDeserializationSchema.builder().type_info(ROW_TYPE).fail_on_missing_field().build()
    )
    with pytest.raises(ValueError, match="the message has no member 'name'"):
        strict.deserialize(b'{"id": 1, "score": 1.0, "tags": []}')
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW_TYPE).ignore_parse_errors()
    assert lenient.build().deserialize(b"not json") is None
    csv = CsvRowDeserializationSchema.Builder(ROW_TYPE).build()
    with pytest.raises(ValueError, match="field 'id' is declared"):
        csv.deserialize(b"x,a,1.0,\n")
    with pytest.raises(TypeError, match=r"needs a row type: Types\.ROW_NAMED"):
        CsvRowDeserializationSchema.Builder(Types.STRING())


# ---------------------------------------------------------------------- a bounded read, end to end

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int"
)


def kafka_frame(spark: Any, spark_partitions: int = 2) -> Any:
    """What Spark's Kafka batch reader gives for two partitions of topic ``t``: one Spark
    partition per Kafka partition, in offset order. Partition 1 lags far behind partition 0."""
    epoch = dt.datetime(1970, 1, 1)
    rows = []
    for partition, base in ((0, 10_000), (1, 0)):
        for offset in range(4):
            ts = base + offset * 1000
            value = f"p{partition}@{ts}".encode()
            stamp = epoch + dt.timedelta(milliseconds=ts)
            rows.append((None, value, "t", partition, offset, stamp, 0))
    rdd = spark.sparkContext.parallelize(rows, spark_partitions)
    return spark.createDataFrame(rdd, KAFKA_SCHEMA)


@pytest.mark.parametrize(
    ("runtime", "spark_partitions"), [("local", 2), ("spark", 2), ("local", 1)]
)
def test_a_bounded_source_reads_each_partition_as_a_split_with_its_own_watermarks(
    spark: Any, runtime: str, spark_partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition 1 lags 10 s behind partition 0: as its own split, none of its records is
    late; read as one split with partition 0 (the control), all of them are."""
    from sparktide.common import Duration
    from sparktide.datastream.connectors import kafka
    from sparktide.datastream.window import TumblingEventTimeWindows

    asked: list[str] = []
    frame = kafka_frame(spark, spark_partitions)

    def fake_connector(what: str, action: Any) -> Any:
        asked.append(what)
        return frame  # instead of spark.read.format("kafka")...load()

    monkeypatch.setattr(kafka, "with_kafka_connector", fake_connector)
    source = builder().set_topics("t").set_bounded(KafkaOffsetsInitializer.latest()).build()
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime).set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    env.get_config().set_watermark_every(1)  # a watermark after every record of a split
    values = env.from_source(source, strategy, "Kafka")
    assert values.get_type() == Types.STRING()
    counts = (
        values.map(lambda v: (v[:2], 1), Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    per_window = sorted(counts.execute_and_collect())
    on_time = ["p0"] * 4 + (["p1"] * 4 if spark_partitions == 2 else [])
    assert per_window == [(p, 1) for p in on_time]
    assert asked == ["KafkaSource"]


def test_an_unbounded_source_splits_micro_batches_by_topic_partition(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The streaming path: each assigned partition is one split (its own watermark generator,
    kept across micro-batches), read in offset order."""
    from pyspark.sql import functions as F

    from sparktide.common import Duration
    from sparktide.datastream.connectors import kafka
    from sparktide.datastream.window import TumblingEventTimeWindows

    folder = tmp_path / "in"
    folder.mkdir()
    lines = []
    for partition, base in ((0, 10_000), (1, 0), (3, 5_000)):
        for offset in range(3):
            ts = base + offset * 1000
            value = f"{partition}@{ts}"
            lines.append(
                json.dumps(
                    {
                        "value": value,
                        "topic": "t",
                        "partition": partition,
                        "offset": offset,
                        "ts": ts,
                    }
                )
            )
    (folder / "a.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    frame = (
        spark.readStream.schema("value string, topic string, partition int, offset long, ts long")
        .json(str(folder))
        .select(
            F.lit(None).cast("binary").alias("key"),
            F.col("value").cast("binary").alias("value"),
            "topic",
            "partition",
            "offset",
            F.timestamp_millis("ts").alias("timestamp"),
            F.lit(0).alias("timestampType"),
        )
    )
    monkeypatch.setattr(kafka, "with_kafka_connector", lambda what, action: frame)
    assigned = {KafkaTopicPartition("t", p) for p in (0, 1, 3)}
    source = builder().set_partitions(assigned).build()
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark").set_parallelism(2)
    env.get_config().set_watermark_every(1)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    batches: list[Any] = []
    (
        env.from_source(source, strategy, "Kafka")
        .map(lambda v: (v.split("@")[0], 1), Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .foreach_batch(lambda df, batch_id: batches.extend(df.collect()))
    )
    result = env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    # the job's watermark is the min over the partitions' own (partition 1: 2000 - 1), so only
    # partition 1's first two windows are complete; nothing is late (read as one split in
    # offset order, partition 1's and 3's records would come after partition 0's 10 s and drop)
    assert sorted(tuple(row) for row in batches) == [("1", 1), ("1", 1)]
    assert result.metrics["late_records_dropped"] == 0
