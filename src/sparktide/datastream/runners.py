"""The one place a runtime name becomes a runner.

``StreamExecutionEnvironment(runtime=...)`` calls :func:`runner_for` once; the environment then
asks its :class:`~sparktide.runtime.execution.runner.Runner` what to do and never tests the
name. ``"spark"`` (the default) runs jobs on Spark (:mod:`sparktide.spark.runner`, classic or
Spark Connect), ``"local"`` in this process (:mod:`sparktide.local.runner`). Each runner is
imported only when chosen: the local runtime imports neither pyspark nor the Spark runner.

>>> runner_for("local").name
'local'
>>> runner_for("flink")
Traceback (most recent call last):
...
ValueError: runtime must be one of ('local', 'spark'), got 'flink'; use runtime="spark" or \
runtime="local"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparktide.runtime.execution.runner import Runner

__all__ = ["DEFAULT_RUNTIME", "RUNTIMES", "runner_for"]


def _local() -> Runner:
    from sparktide.local.runner import LocalRunner

    return LocalRunner()


def _spark() -> Runner:
    from sparktide.spark.runner import SparkRunner

    return SparkRunner()


_RUNNERS: Mapping[str, Callable[[], Runner]] = MappingProxyType({"local": _local, "spark": _spark})

RUNTIMES = tuple(_RUNNERS)
DEFAULT_RUNTIME = "spark"


def runner_for(runtime: str) -> Runner:
    """The runner of ``runtime`` (one of :data:`RUNTIMES`); creating the Spark runner checks
    that pyspark and Java (or a Spark Connect server) are there."""
    make = _RUNNERS.get(runtime) if isinstance(runtime, str) else None
    if make is None:
        raise ValueError(
            f'runtime must be one of {RUNTIMES}, got {runtime!r}; use runtime="spark" '
            'or runtime="local"'
        )
    return make()
