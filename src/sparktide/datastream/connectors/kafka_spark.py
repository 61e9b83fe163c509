"""Spark's Kafka connector: finding out that it is missing, and saying which package to add.

The connector (``spark-sql-kafka-0-10``) is a JVM artifact that neither PyPI nor the pyspark
wheel provides; add it to the SparkSession with ``spark.jars.packages`` (or
``spark-submit --packages``).

>>> kafka_package("4.0.1")
'org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["KafkaConnectorMissingError", "kafka_package", "with_kafka_connector"]

T = TypeVar("T")

_NOT_FOUND = ("Failed to find data source: kafka", "DATA_SOURCE_NOT_FOUND")


def kafka_package(spark_version: str | None = None) -> str:
    """The Maven coordinates of Spark's Kafka connector for ``spark_version`` (default: the
    installed pyspark's); Spark 4 is built for Scala 2.13."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}"


class KafkaConnectorMissingError(RuntimeError):
    """Spark has no Kafka connector on its classpath."""

    def __init__(self, what: str) -> None:
        package = kafka_package()
        super().__init__(
            f"{what} needs Spark's Kafka connector, which is not on the SparkSession's "
            f"classpath: add the package {package} (SparkSession.builder.config("
            f"'spark.jars.packages', '{package}'), or spark-submit --packages {package}) and "
            "start a new session"
        )


def with_kafka_connector(what: str, action: Callable[[], T]) -> T:
    """``action()``, with Spark's "no such data source" error turned into a
    :class:`KafkaConnectorMissingError` naming the package to add."""
    try:
        return action()
    except Exception as exc:
        text = str(exc)
        if any(marker in text for marker in _NOT_FOUND):
            raise KafkaConnectorMissingError(what) from exc
        raise
