"""The writer behind ``KafkaSink``: hands (topic, key, value) rows to Spark's Kafka sink, per
micro-batch when streaming and once for a bounded job.

>>> KafkaFrameWriter({"kafka.bootstrap.servers": "b:9092", "topic": "t"}).idempotent
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from sparktide.datastream.connectors.kafka_spark import with_kafka_connector
from sparktide.spark.stream_sinks import ForeachBatchSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.common.typeinfo import TypeInformation

__all__ = ["KafkaFrameWriter"]


class KafkaFrameWriter(ForeachBatchSink):
    """Writes the rows with ``df.write.format("kafka").options(...)``. Not idempotent (a
    replayed micro-batch writes its messages again): the job runs at least once."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(self._write, idempotent=False)
        self.options = dict(options)

    def create_operator(self, type_info: TypeInformation | None) -> NoReturn:
        raise RuntimeError(
            "KafkaSink writes with Spark's Kafka connector: run the job on Spark "
            '(runtime="spark"); on the local runtime, sink to print() or a FileSink instead'
        )

    def _write(self, df: DataFrame, batch_id: int) -> None:
        frame = df if "topic" not in self.options else df.drop("topic")
        with_kafka_connector(
            "KafkaSink", lambda: frame.write.format("kafka").options(**self.options).save()
        )
