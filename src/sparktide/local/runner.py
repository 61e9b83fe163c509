"""The in-process runner: a :class:`~sparktide.runtime.execution.runner.Runner` that runs jobs
in this process with :class:`~sparktide.local.executor.LocalExecutor` (no Java, no Spark).

It reads no streaming source; ``to_dataframe()`` runs the job here and hands its records to
Spark (the only use of Spark it makes).

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> stream = env.from_collection([1, 2])
>>> runner = LocalRunner()
>>> runner.name, runner.in_process, runner.is_streaming(env.get_stream_graph())
('local', True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.local.executor import LocalExecutor
from sparktide.runtime.execution.path import PathOptions, Request, choose_path
from sparktide.runtime.filesystems import check_sink_folders

if TYPE_CHECKING:
    from sparktide.common.configuration import Configuration
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.execution.driver import JobEnvironment
    from sparktide.runtime.execution.path import PathChoice
    from sparktide.runtime.execution.planner import Plan
    from sparktide.runtime.execution.runner import PythonShipping, StreamRequest
    from sparktide.runtime.graph import JobGraph, SinkNode

__all__ = ["LocalRunner"]


class LocalRunner:
    """Runs bounded jobs in-process, deterministically, in rounds."""

    name = "local"
    in_process = True
    reads_streams = False

    def run(self, graph: JobGraph, env: JobEnvironment) -> dict[str, Any]:
        check_sink_folders(graph.sinks())
        local = LocalExecutor(graph, env)
        return {**local.run(), **local.tasks.user_metrics().as_dict()}

    def to_dataframe(
        self,
        graph: JobGraph,
        env: JobEnvironment,
        sink: SinkNode,
        type_info: TypeInformation | None,
        ordered: bool,
    ) -> Any:
        """Run the job now and build the DataFrame of ``sink``'s records (in position order
        whatever ``ordered`` says: the records are all here)."""
        import pyarrow as pa

        from sparktide.spark.frame_types import type_of_values
        from sparktide.spark.frames import spark_schema_of, to_record_batch
        from sparktide.spark.session import get_spark

        if sink.collected is None:
            raise ValueError(f"{sink} is no collect sink: to_dataframe() reads a collect sink")
        spark = get_spark()  # before running: no Spark, no DataFrame
        self.run(graph, env)
        values = [record.value for _, record in sorted(sink.collected, key=_position)]
        if type_info is None:
            type_info = type_of_values(values, "to_dataframe()")
        batch = to_record_batch(values, type_info)
        return spark.createDataFrame(pa.Table.from_batches([batch]), spark_schema_of(type_info))

    def is_streaming(self, graph: JobGraph) -> bool:
        return False

    def path(self, plan: Plan, configuration: Configuration) -> PathChoice:
        return choose_path(plan, PathOptions.of(configuration), Request.run())

    def start_stream(self, graph: JobGraph, env: JobEnvironment, request: StreamRequest) -> Any:
        raise ValueError(
            'a streaming job needs runtime="spark": a Structured Streaming DataFrame is read by '
            "Spark micro-batches"
        )

    def ship_python(self, python: PythonShipping) -> None:
        python.apply_local()


def _position(item: tuple[Any, Any]) -> Any:
    return item[0]
