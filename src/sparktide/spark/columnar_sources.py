"""What the Spark runner can read on columns, for the path choice
(:func:`~sparktide.runtime.execution.path.choose_path`): a bounded job's ``from_dataframe``
source or a streaming job's ``from_stream`` source, with a built-in watermark strategy on its
timestamp column (no idleness) and column types the columnar engine aggregates (integer or
string keys, integer or double fields).

:func:`spark_path` is the choice of a job on Spark: its options and these sources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.runtime.execution.path import (
    ColumnarSources,
    PathChoice,
    PathOptions,
    Request,
    RequestKind,
    choose_path,
)
from sparktide.spark.columnar_job import columns_fit, watermark_bound
from sparktide.spark.dataframe_source import DataFrameSource
from sparktide.spark.stream_source import StreamSource

if TYPE_CHECKING:
    from sparktide.common.configuration import Configuration
    from sparktide.runtime.columnar.spec import WindowAggregateSpec
    from sparktide.runtime.execution.planner import Plan
    from sparktide.runtime.graph import SourceNode

__all__ = ["SparkColumnarSources", "spark_path"]


class SparkColumnarSources:
    """The Spark runner's answer to :class:`~sparktide.runtime.execution.path.
    ColumnarSources`."""

    def refusal(
        self, source: SourceNode, spec: WindowAggregateSpec, request: Request
    ) -> str | None:
        """Why ``source`` cannot feed ``spec`` on columns for ``request`` (``None``: it can)."""
        if request.kind is RequestKind.STREAM:
            stream = source.source
            if not isinstance(stream, StreamSource) or stream.df is None:
                return "the source is no stream of from_stream(...)"
            schema, columns = stream.df.schema, stream.columns
        else:
            frame = source.source
            if not isinstance(frame, DataFrameSource):
                return "the source is no DataFrame of from_dataframe(...)"
            schema, columns = frame.prepared().schema, frame.columns
        built_in, _ = watermark_bound(source.watermark_strategy)
        if not built_in:
            return (
                "the watermark strategy is not a built-in one on a timestamp column "
                "(bounded out-of-orderness, monotonous or none, without idleness)"
            )
        if not columns_fit(schema, columns, spec):
            return (
                "the key is no integer or string column, or an aggregated field no integer or "
                "double column"
            )
        return None


_SOURCES: ColumnarSources = SparkColumnarSources()


def spark_path(plan: Plan, configuration: Configuration, request: Request) -> PathChoice:
    """The path of ``plan`` on Spark for ``request`` under the job's ``configuration``."""
    return choose_path(plan, PathOptions.of(configuration), request, _SOURCES)
