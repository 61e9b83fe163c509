"""The SparkSession a job runs on: the active one, or an embedded ``local[*]`` one.

The embedded session has its UI off, quiet logs, and workers that use the driver's Python. For
any session, adaptive coalescing of shuffle partitions is turned off while sparktide runs: a
keyed stage's subtasks must stay in their own partitions.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

__all__ = ["SparkUnavailableError", "get_spark"]


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no pyspark, or no Java)."""


def _check_prerequisites() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError(
            "pyspark is not installed: install sparktide's dependencies (pip install sparktide), "
            'or run on the in-process runtime: get_execution_environment(runtime="local")'
        ) from None
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise SparkUnavailableError(
            "Java was not found (no JAVA_HOME and no java on PATH): Spark needs Java 17; install "
            'it, or run on the in-process runtime: get_execution_environment(runtime="local")'
        )


def get_spark(master: str | None = None) -> Any:
    """The active SparkSession, or a new embedded one (``master`` defaults to ``local[*]``)."""
    _check_prerequisites()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # embedded workers import what the driver imports (job modules next to the driver script)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    current = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*paths, *current.split(os.pathsep)]))
    builder = (
        SparkSession.builder.master(master or os.environ.get("SPARKTIDE_MASTER") or "local[*]")
        .appName("sparktide")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
