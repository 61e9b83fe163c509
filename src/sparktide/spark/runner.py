"""The Spark runner: a :class:`~sparktide.runtime.execution.runner.Runner` that runs jobs on the
active SparkSession, or an embedded ``local[*]`` one (:mod:`sparktide.spark.session`), classic
or Spark Connect.

Bounded jobs run as one Spark job (:class:`~sparktide.spark.executor.SparkExecutor`); jobs
reading ``env.from_stream(...)`` as a Structured Streaming query
(:func:`~sparktide.spark.streaming.start_stream`). Creating the runner checks that pyspark and
Java (or a Spark Connect server) are there, and raises
:class:`~sparktide.spark.session.SparkUnavailableError` saying what is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.runtime.execution.path import Request
from sparktide.runtime.filesystems import check_sink_folders
from sparktide.spark.executor import SparkExecutor
from sparktide.spark.session import check_prerequisites, get_spark, is_connect
from sparktide.spark.stream_source import has_stream_source

if TYPE_CHECKING:
    from sparktide.common.configuration import Configuration
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.execution.driver import JobEnvironment
    from sparktide.runtime.execution.path import PathChoice
    from sparktide.runtime.execution.planner import Plan
    from sparktide.runtime.execution.runner import PythonShipping, StreamRequest
    from sparktide.runtime.graph import JobGraph, SinkNode

__all__ = ["SparkRunner"]


class SparkRunner:
    """Runs jobs on Spark (see the module docstring)."""

    name = "spark"
    in_process = False
    reads_streams = True

    def __init__(self) -> None:
        check_prerequisites()

    def run(self, graph: JobGraph, env: JobEnvironment) -> dict[str, Any]:
        spark = SparkExecutor(graph, env)
        if not is_connect(spark.spark):  # over Spark Connect, the server's paths
            check_sink_folders(graph.sinks())  # before the job runs
        return {**spark.run(), **spark.user_metrics.as_dict()}

    def to_dataframe(
        self,
        graph: JobGraph,
        env: JobEnvironment,
        sink: SinkNode,
        type_info: TypeInformation | None,
        ordered: bool,
    ) -> Any:
        """A lazy DataFrame: the job runs when Spark computes it."""
        return SparkExecutor(graph, env).frame(sink.id, type_info, ordered)

    def is_streaming(self, graph: JobGraph) -> bool:
        return has_stream_source(graph.reachable_from_sinks())

    def path(self, plan: Plan, configuration: Configuration) -> PathChoice:
        from sparktide.spark.columnar_sources import spark_path

        streaming = has_stream_source(plan.nodes)
        return spark_path(plan, configuration, Request.stream() if streaming else Request.run())

    def start_stream(self, graph: JobGraph, env: JobEnvironment, request: StreamRequest) -> Any:
        from sparktide.spark.streaming import start_stream

        return start_stream(
            graph,
            env,
            request.job_name,
            request.checkpoint_location,
            request.trigger,
            request.snapshot_every,
            request.allow_non_restored_state,
            request.interval_ms,
            request.skip_missing_input_files,
            request.from_savepoint,
        )

    def ship_python(self, python: PythonShipping) -> None:
        with python.session_python():
            spark = get_spark()
        python.apply_spark(spark)
