"""sparktide: Apache Flink's event-time machinery in Python, with the pipeline on Apache Spark."""

__version__ = "0.1.0"
__all__ = ["__version__"]
