"""Streaming sinks: each micro-batch's output handed to Spark as a DataFrame, per batch id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ForeachBatchSink", "JsonBatchSink", "ParquetBatchSink", "batch_sink_of"]


class ForeachBatchSink:
    """Calls ``fn(batch_df, batch_id)`` with each micro-batch's output (a DataFrame of the
    stream's columns, in position order). ``fn`` may be called again with the same batch id
    after a failure: make what it does idempotent per batch id (e.g. overwrite a partition).

    >>> sink = ForeachBatchSink(lambda df, batch_id: None)
    """

    def __init__(self, fn: Callable[[Any, int], None]) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a callable (batch_df, batch_id), got {type(fn).__name__}")
        self.fn = fn

    def create_operator(self, type_info: Any) -> Any:
        raise RuntimeError(
            f"{type(self).__name__} is a streaming sink: it runs on Spark for a stream made by "
            "env.from_stream(...)"
        )

    @property
    def write_dataframe(self) -> Callable[[Any], None]:
        return self._write_once

    def _write_once(self, df: Any) -> None:
        self.write_batch(df, 0)

    def write_batch(self, df: Any, batch_id: int) -> None:
        self.fn(df, batch_id)


class ParquetBatchSink(ForeachBatchSink):
    """Writes each micro-batch's output as Parquet into ``<path>/batch=<id>/`` (overwritten
    when the batch is replayed, so the sink is idempotent per batch id). Read the whole output
    back with ``spark.read.parquet(path)`` (``batch`` becomes a column).

    >>> ParquetBatchSink("/tmp/out").path
    '/tmp/out'
    """

    format = "parquet"

    def __init__(self, path: str) -> None:
        if not isinstance(path, str) or not path:
            raise TypeError(f"path must be a non-empty str (a directory or URI), got {path!r}")
        super().__init__(self._write)
        self.path = path

    def _write(self, df: Any, batch_id: int) -> None:
        target = f"{self.path.rstrip('/')}/batch={batch_id}"
        df.write.mode("overwrite").format(self.format).save(target)


class JsonBatchSink(ParquetBatchSink):
    """Like :class:`ParquetBatchSink`, in JSON lines (``spark.read.json(path)`` reads it).

    >>> JsonBatchSink("/tmp/out").format
    'json'
    """

    format = "json"


def batch_sink_of(writer: Any) -> Any:
    owner = getattr(writer, "__self__", None)
    return owner if isinstance(owner, ForeachBatchSink) else None
