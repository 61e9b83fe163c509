"""The ``DataStream`` methods that route records or describe an operator without running a
user function of their own (PyFlink's ``forward``, ``partition_custom``, ``project``,
``set_description``, ``cache``, ``set_buffer_timeout``).

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.common import Types
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> pairs = env.from_collection([(1, 'a', 2.0)], Types.TUPLE([Types.INT(), Types.STRING(),
...                                                          Types.DOUBLE()]))
>>> pairs.project(2, 0).execute_and_collect(limit=1)
[(2.0, 1)]
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from sparktide.datastream.partitioner import custom_partitioner
from sparktide.runtime.graph import Edge, Node, OperatorNode

if TYPE_CHECKING:
    from sparktide.common.execution_config import ExecutionConfig
    from sparktide.datastream.data_stream import DataStream
    from sparktide.datastream.environment import StreamExecutionEnvironment

__all__ = ["AccumulateType", "StreamRouting"]


class AccumulateType(Enum):
    """The built-in aggregations of a keyed stream (PyFlink's ``KeyedStream.AccumulateType``)."""

    MIN = 1
    MAX = 2
    MIN_BY = 3
    MAX_BY = 4
    SUM = 5


_KEYED = (
    "a KeyedStream is partitioned by its key already, and cannot be re-partitioned with {}; "
    "call it on the stream before key_by(...)"
)


class StreamRouting:
    """Mixed into ``DataStream``: routing and description methods."""

    _env: StreamExecutionEnvironment
    _node: Node
    _tag: Any

    if TYPE_CHECKING:

        def _edge(
            self,
            partitioning: str = "forward",
            key_selector: Any = None,
            index: int = 1,
            key_type: Any = None,
        ) -> Edge: ...

        def get_type(self) -> Any: ...

    def _not_keyed(self, method: str) -> None:
        if hasattr(self, "_key_selector"):
            raise TypeError(_KEYED.format(method))

    def _routed(self, name: str, edge: Edge) -> DataStream:
        from sparktide.datastream.data_stream import DataStream

        node = self._env._graph.add(OperatorNode(name, [edge], output_type=self.get_type()))
        return DataStream(self._env, node)

    def forward(self) -> DataStream:
        """Send each record to the subtask of the next operator with the same index (the
        default between operators of equal parallelism; a different parallelism spreads the
        records round-robin, as ``rebalance()``)."""
        self._not_keyed("forward()")
        return self._routed("Forward", self._edge("forward"))

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """Send each record to the subtask ``partitioner.partition(key_selector(value),
        num_partitions)`` of the next operator (a :class:`~sparktide.datastream.functions.
        Partitioner` or a callable ``(key, num_partitions) -> int``; a result outside
        ``[0, num_partitions)`` fails the job naming the key).

        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> from sparktide.datastream.functions import RuntimeContext, MapFunction
        >>> class Where(MapFunction):
        ...     def open(self, ctx: RuntimeContext):
        ...         self.index = ctx.get_index_of_this_subtask()
        ...     def map(self, value):
        ...         return value, self.index
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> stream = env.from_collection([1, 2, 3, 4]).partition_custom(lambda k, n: k % n,
        ...                                                          lambda v: v)
        >>> sorted(stream.map(Where()).set_parallelism(3).execute_and_collect(limit=4))
        [(1, 1), (2, 2), (3, 0), (4, 1)]
        """
        self._not_keyed("partition_custom()")
        select = getattr(key_selector, "get_key", key_selector)
        if not callable(select):
            raise TypeError(
                "key_selector must be a KeySelector or a callable value -> key, got "
                f"{type(key_selector).__name__}"
            )
        plain = self._edge("forward")
        edge = Edge(
            plain.source,
            "custom",
            None,
            plain.tag,
            plain.input_index,
            partitioner=custom_partitioner(partitioner, select),
        )
        return self._routed("Custom Partition", edge)

    def project(self, *field_indexes: int) -> DataStream:
        """A stream of tuples of the given fields of each (tuple or Row) record, in the given
        order; typed when the stream's type is a tuple or Row type."""
        if not field_indexes or any(type(i) is not int or i < 0 for i in field_indexes):
            raise ValueError(
                f"project() takes one or more field indexes (ints >= 0), got {field_indexes!r}"
            )
        type_info = self.get_type()
        output_type = None
        if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)):
            fields = type_info.get_field_types()
            too_high = [i for i in field_indexes if i >= len(fields)]
            if too_high:
                raise ValueError(
                    f"project{field_indexes}: the stream's records have {len(fields)} fields, "
                    f"so {too_high} are no field indexes"
                )
            output_type = TupleTypeInfo([fields[i] for i in field_indexes])
        indexes = tuple(field_indexes)
        stream: DataStream = self.map(_Projection(indexes), output_type)  # type: ignore[attr-defined]
        return stream.name("Projection")

    def set_description(self, description: str) -> DataStream:
        """A description of the operator, shown in :meth:`StreamExecutionEnvironment.
        get_execution_plan`."""
        if not isinstance(description, str):
            raise TypeError(f"description must be a str, got {type(description).__name__}")
        self._node.description = description  # type: ignore[attr-defined]
        return self  # type: ignore[return-value]

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        """A no-op on Spark: records are shipped per round (a micro-batch when streaming), so
        there is no network buffer to flush on a timeout."""
        if type(timeout_millis) is not int or timeout_millis < -1:
            raise ValueError(f"timeout_millis must be an int >= -1, got {timeout_millis!r}")
        return self  # type: ignore[return-value]

    def cache(self) -> DataStream:
        """The stream itself: a later ``execute()`` re-reads the sources (as a Flink streaming
        job does), and a stream's records are the same every time they are computed."""
        return self  # type: ignore[return-value]

    def get_execution_config(self) -> ExecutionConfig:
        return self._env.get_config()


class _Projection:
    __slots__ = ("indexes",)

    def __init__(self, indexes: tuple[int, ...]) -> None:
        self.indexes = indexes

    def __call__(self, value: Any) -> tuple[Any, ...]:
        try:
            return tuple(value[i] for i in self.indexes)
        except (IndexError, TypeError):
            raise ValueError(
                f"project{self.indexes} needs tuple or Row records with those fields, got {value!r}"
            ) from None
