"""Streaming sinks: each micro-batch's output handed to Spark as a DataFrame, per batch id.

A micro-batch that fails before it is committed is replayed from the previous checkpoint
version, and its output is written again. The output is exactly once only when every sink
writes idempotently per batch id:

============================  ==========================================================
sink                          replay of a batch
============================  ==========================================================
:class:`ParquetBatchSink`     overwrites ``<path>/batch=<id>/``: exactly once
:class:`JsonBatchSink`        overwrites ``<path>/batch=<id>/``: exactly once
:class:`ForeachBatchSink`     calls ``fn`` again with the same batch id: exactly once if
                              ``fn`` is idempotent per batch id (``idempotent=True``)
:class:`ConsoleBatchSink`     prints the batch again: at least once
``print()``                   prints the lines again: at least once
``add_sink(...)``, other      write the records again: at least once
``sink_to(...)`` sinks
============================  ==========================================================

:func:`idempotence_warnings` lists the sinks of a job that are not idempotent; a streaming
run warns about each one with a :class:`StreamingExactlyOnceWarning` when it starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NoReturn

from sparktide.runtime.execution.planner import Plan
from sparktide.runtime.graph import Node, SinkNode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.common.typeinfo import TypeInformation
    from sparktide.spark.stream_batch import DriverRecords

from sparktide.runtime.operators.simple import CollectSinkOperator, PrintSinkOperator

__all__ = [
    "ConsoleBatchSink",
    "ForeachBatchSink",
    "JsonBatchSink",
    "ParquetBatchSink",
    "StreamingExactlyOnceWarning",
    "batch_sink_of",
    "check_declared_types",
    "idempotence_warnings",
]


class StreamingExactlyOnceWarning(UserWarning):
    """A sink of a streaming job is not idempotent per batch id, so the output of a micro-batch
    replayed after a failure may be written twice: exactly-once does not hold for it."""


class ForeachBatchSink:
    """Calls ``fn(batch_df, batch_id)`` with each micro-batch's output (a DataFrame of the
    stream's columns, in position order). ``fn`` may be called again with the same batch id
    after a failure: make what it does idempotent per batch id (e.g. overwrite a partition,
    or upsert keyed by batch id). Pass ``idempotent=False`` when it is not (e.g. it appends
    to a table or sends messages): the job then runs at least once, and starting it warns
    with a :class:`StreamingExactlyOnceWarning`.

    >>> sink = ForeachBatchSink(lambda df, batch_id: None)
    >>> sink.idempotent, ForeachBatchSink(print, idempotent=False).idempotent
    (True, False)
    """

    split_local = True
    """Its records are handed to Spark as they are made: the sink runs where its input runs
    (in the source splits' tasks when nothing repartitions before it), not in a stage of its
    own. It does nothing per subtask, so where it runs changes nothing it is given."""

    def __init__(self, fn: Callable[[DataFrame, int], None], *, idempotent: bool = True) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a callable (batch_df, batch_id), got {type(fn).__name__}")
        if type(idempotent) is not bool:
            raise TypeError(
                "idempotent must be a bool: True when fn(batch_df, batch_id) called twice with "
                f"the same batch id leaves the same result as once; got {idempotent!r}"
            )
        self.fn = fn
        self.idempotent = idempotent

    def create_operator(self, type_info: TypeInformation | None) -> NoReturn:
        raise RuntimeError(
            f"{type(self).__name__} is a streaming sink: it runs on Spark for a stream made by "
            "env.from_stream(...)"
        )

    @property
    def write_dataframe(self) -> Callable[[DataFrame], None]:
        return self._write_once

    def _write_once(self, df: DataFrame) -> None:
        self.write_batch(df, 0)

    def write_batch(self, df: DataFrame, batch_id: int) -> None:
        self.fn(df, batch_id)

    def write_driver_records(self, records: DriverRecords, batch_id: int) -> bool:
        """Write batch ``batch_id``'s records from the driver, if this sink can: ``False``
        when it needs their DataFrame (:meth:`write_batch`)."""
        return False

    def __getstate__(self) -> dict[str, object]:
        # ``fn`` runs on the driver only: it may hold what cannot travel (a progress bar, a
        # SparkSession, a lock), so the copy shipped with the job graph goes without it
        state = dict(self.__dict__)
        state["fn"] = None
        return state


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

    @property
    def output_location(self) -> str:
        """The folder the sink writes (checked writable before the job runs)."""
        return self.path

    def _write(self, df: DataFrame, batch_id: int) -> None:
        df.write.mode("overwrite").format(self.format).save(self._target(batch_id))

    def _target(self, batch_id: int) -> str:
        return f"{self.path.rstrip('/')}/batch={batch_id}"

    def write_driver_records(self, records: DriverRecords, batch_id: int) -> bool:
        """Parquet on a local path of a local session is written by the driver
        (:mod:`sparktide.spark.driver_parquet`): the same files for Spark's readers, without
        a Spark job."""
        from sparktide.spark.driver_parquet import DriverParquet, local_directory

        target = local_directory(self._target(batch_id))
        if self.format != "parquet" or target is None:
            return False
        writer = DriverParquet.of(records.spark, records.schema)
        if writer is None:
            return False
        writer.write(records.table, records.schema, target)
        return True


class JsonBatchSink(ParquetBatchSink):
    """Like :class:`ParquetBatchSink`, in JSON lines (``spark.read.json(path)`` reads it).

    >>> JsonBatchSink("/tmp/out").format
    'json'
    """

    format = "json"


class ConsoleBatchSink(ForeachBatchSink):
    """Prints each micro-batch's output on the driver as Spark's console sink does: a
    ``Batch: <id>`` header, then ``df.show(num_rows, truncate)``. For development: a batch
    replayed after a failure is printed again (at least once).

    >>> sink = ConsoleBatchSink(num_rows=5, truncate=False)
    >>> sink.num_rows, sink.truncate, sink.idempotent
    (5, False, False)
    >>> ConsoleBatchSink(num_rows=0)
    Traceback (most recent call last):
    ...
    ValueError: num_rows must be an int >= 1 (the rows shown per batch), got 0
    """

    def __init__(self, num_rows: int = 20, truncate: bool | int = True) -> None:
        if type(num_rows) is not int or num_rows < 1:
            raise ValueError(
                f"num_rows must be an int >= 1 (the rows shown per batch), got {num_rows!r}"
            )
        if not isinstance(truncate, (bool, int)) or (type(truncate) is int and truncate < 1):
            raise ValueError(
                "truncate must be a bool (True: cut strings at 20 characters) or an int >= 1 "
                f"(the characters kept), got {truncate!r}"
            )
        super().__init__(self._show, idempotent=False)
        self.num_rows = num_rows
        self.truncate = truncate

    def _show(self, df: DataFrame, batch_id: int) -> None:
        rule = "-" * 43
        print(f"{rule}\nBatch: {batch_id}\n{rule}")
        df.show(self.num_rows, self.truncate)


def batch_sink_of(writer: object) -> ForeachBatchSink | None:
    owner = getattr(writer, "__self__", None)
    return owner if isinstance(owner, ForeachBatchSink) else None


_INSTEAD = (
    "for exactly-once output use sink_to(ParquetBatchSink(path)), sink_to(JsonBatchSink(path)) "
    "or foreach_batch(fn) with an fn that is idempotent per batch id"
)


def _sink_operator(node: Node) -> object:
    factory = getattr(node, "operator_factory", None)
    if factory is None:
        return None
    try:
        return factory()
    except Exception:  # an unusable sink fails later, where the job builds it
        return None


def _nodes_of(plan_or_nodes: Plan | Iterable[Node]) -> Iterable[Node]:
    return plan_or_nodes.nodes if isinstance(plan_or_nodes, Plan) else plan_or_nodes


def idempotence_warnings(plan_or_nodes: Plan | Iterable[Node]) -> list[str]:
    """One message per sink of a streaming job that does not write idempotently per batch id
    (see the module's table), naming the sink and what to use instead; ``plan_or_nodes``:
    a plan (its ``nodes``) or the job graph's nodes.

    >>> from sparktide.runtime.graph import SinkNode
    >>> def sink(name, writer):
    ...     return SinkNode(name, frame_writer=writer.write_dataframe)
    >>> idempotence_warnings([sink("out", ParquetBatchSink("/tmp/out"))])
    []
    >>> [message] = idempotence_warnings([sink("show", ConsoleBatchSink())])
    >>> message.split(":")[0]
    "sink 'show' (ConsoleBatchSink) prints a replayed micro-batch again"
    """
    messages: list[str] = []
    for node in _nodes_of(plan_or_nodes):
        if not isinstance(node, SinkNode):
            continue
        what = f"sink {node.name!r}"
        writer = node.frame_writer
        if writer is not None:
            sink = batch_sink_of(writer)
            if sink is None:
                owner = type(getattr(writer, "__self__", writer)).__name__
                messages.append(
                    f"{what} ({owner}) writes each micro-batch as new files, so a replayed "
                    f"batch is written again: exactly-once does not hold for it; {_INSTEAD}"
                )
            elif isinstance(sink, ConsoleBatchSink):
                messages.append(
                    f"{what} (ConsoleBatchSink) prints a replayed micro-batch again: "
                    f"exactly-once does not hold for it; {_INSTEAD}"
                )
            elif not sink.idempotent:
                messages.append(
                    f"{what} ({type(sink).__name__} with idempotent=False) gets a replayed "
                    "micro-batch again: exactly-once does not hold for it; make fn idempotent "
                    "per batch id and pass idempotent=True, or "
                    + _INSTEAD.removeprefix("for exactly-once output ")
                )
            continue
        operator = _sink_operator(node)
        if isinstance(operator, CollectSinkOperator):
            continue  # refused by the streaming run itself
        if isinstance(operator, PrintSinkOperator):
            messages.append(
                f"{what} (print()) prints the lines of a replayed micro-batch again: "
                f"exactly-once does not hold for it (fine for watching a stream); {_INSTEAD}"
            )
        else:
            kind = type(operator).__name__ if operator is not None else "a record sink"
            messages.append(
                f"{what} ({kind}) writes record by record, so the records of a replayed "
                f"micro-batch are written again: exactly-once does not hold for it; {_INSTEAD}"
            )
    return messages


def check_declared_types(plan_or_nodes: Plan | Iterable[Node]) -> None:
    """Refuses a streaming job whose batch sinks (``ParquetBatchSink``, ``JsonBatchSink``,
    ``foreach_batch``, ``ConsoleBatchSink``) get a stream without a declared type: every
    micro-batch must be written in the same columns, which one batch's records cannot fix (a
    batch may even have none), so the type is declared instead of inferred.

    >>> from sparktide.common.typeinfo import Types
    >>> from sparktide.runtime.graph import SinkNode
    >>> def sink(output_type):
    ...     writer = ParquetBatchSink("/tmp/out").write_dataframe
    ...     return SinkNode("out", output_type=output_type, frame_writer=writer)
    >>> check_declared_types([sink(Types.LONG())])
    >>> check_declared_types([sink(None)])
    Traceback (most recent call last):
    ...
    TypeError: sink 'out' (ParquetBatchSink) writes each micro-batch in the columns of its input's type, but that stream has no declared type; declare it where the stream is made (e.g. .map(f, output_type=Types.ROW_NAMED(['id', 'name'], [Types.LONG(), Types.STRING()]))), or output_type=Types.PICKLED_BYTE_ARRAY() for a column of pickled values
    """  # noqa: E501
    for node in _nodes_of(plan_or_nodes):
        sink = batch_sink_of(node.frame_writer) if isinstance(node, SinkNode) else None
        if sink is not None and node.output_type is None:
            raise TypeError(
                f"sink {node.name!r} ({type(sink).__name__}) writes each micro-batch in the "
                "columns of its input's type, but that stream has no declared type; declare it "
                "where the stream is made (e.g. .map(f, output_type=Types.ROW_NAMED(['id', "
                "'name'], [Types.LONG(), Types.STRING()]))), or "
                "output_type=Types.PICKLED_BYTE_ARRAY() for a column of pickled values"
            )
