"""The Spark runner: jobs built with the DataStream API run on a SparkSession."""

from sparktide.spark.executor import SparkExecutor
from sparktide.spark.session import SparkUnavailableError, get_spark

__all__ = ["SparkExecutor", "SparkUnavailableError", "get_spark"]
