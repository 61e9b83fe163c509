"""The Spark runner: jobs built with the DataStream API run on a SparkSession.

The names below are imported when first used, so that importing a module of this package
(e.g. :mod:`sparktide.spark.worker_daemon`, which must not load pyarrow) stays light.

>>> import sparktide.spark
>>> sparktide.spark.get_spark.__module__
'sparktide.spark.session'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparktide.spark.executor import SparkExecutor
    from sparktide.spark.session import SparkUnavailableError, get_spark

__all__ = ["SparkExecutor", "SparkUnavailableError", "get_spark"]

_HOMES = {
    "SparkExecutor": "sparktide.spark.executor",
    "SparkUnavailableError": "sparktide.spark.session",
    "get_spark": "sparktide.spark.session",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sparktide.spark' has no attribute {name!r}")
    return getattr(import_module(home), name)
