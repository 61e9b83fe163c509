r"""The logical job graph built by the DataStream API and executed by a runner.

A :class:`Node` is one transformation: a :class:`SourceNode`, an :class:`OperatorNode` with one
or two inputs, or a :class:`SinkNode` (the last two are :class:`ProcessingNode`\ s, which run an
operator built by their ``operator_factory``).
An :class:`Edge` connects a producer to a consumer and says how records are distributed
(``forward``: same subtask; ``hash``: by the key group of ``key_selector``; ``rebalance``:
spread; ``global``: all to subtask 0; ``broadcast``: each to every subtask; ``custom``: to the
subtask ``partitioner`` picks) and which output of
the producer it reads (the main output or a side output ``tag``). Nodes are immutable
descriptions; runners build operators from their ``operator_factory`` per subtask. A
:class:`JobGraph` holds every node of an environment (``env.get_stream_graph()``).

>>> source = SourceNode("events")
>>> doubled = OperatorNode("map", [Edge(source)], operator_factory=lambda: None)
>>> graph = JobGraph([source, doubled, SinkNode("print", [Edge(doubled)])])
>>> [n.name for n in graph.sinks()], [n.kind for n in graph.reachable_from_sinks()]
(['print'], ['source', 'operator', 'sink'])
>>> isinstance(doubled, ProcessingNode), doubled.is_virtual
(True, False)
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.core.output_tag import OutputTag
    from sparktide.runtime.columnar.spec import WindowAggregateSpec
    from sparktide.runtime.elements import StreamRecord

__all__ = [
    "Edge",
    "JobGraph",
    "Node",
    "OperatorNode",
    "ProcessingNode",
    "SinkNode",
    "SourceNode",
    "copy_function",
]

PARTITIONINGS = ("forward", "hash", "rebalance", "global", "broadcast", "custom")


@dataclass(frozen=True, eq=False)
class Edge:
    """How ``source``'s output reaches the consumer's input ``input_index`` (1 or 2)."""

    source: Node
    partitioning: str = "forward"
    # a user function: it takes the records' values, whatever their type
    key_selector: Callable[[Any], object] | None = None
    tag: OutputTag | None = None  # an OutputTag for a side output, None for the main output
    input_index: int = 1
    # the declared type information of the keys (``key_by(..., key_type=...)``), None if
    # undeclared: the RocksDB backend serializes keys with it
    key_type: TypeInformation | None = None
    # a "custom" edge: (value, number of target subtasks) -> the target subtask
    partitioner: Callable[[Any, int], int] | None = None

    def __post_init__(self) -> None:
        if self.partitioning not in PARTITIONINGS:
            raise ValueError(
                f"partitioning must be one of {PARTITIONINGS}, got {self.partitioning!r}"
            )
        if (self.partitioning == "hash") != (self.key_selector is not None):
            raise ValueError("a hash edge needs a key selector, and only a hash edge has one")
        if (self.partitioning == "custom") != (self.partitioner is not None):
            raise ValueError("a custom edge needs a partitioner, and only a custom edge has one")


_ids = itertools.count(1)

F = TypeVar("F")
N = TypeVar("N", bound="Node")


def copy_function(function: F) -> F:
    """A private copy of a user function for one operator instance (Flink ships each subtask its
    own deserialized copy, so instance attributes set in ``open`` never leak between subtasks)."""
    try:
        return copy.deepcopy(function)
    except Exception as exc:
        raise TypeError(
            f"user function {function!r} cannot be copied for each parallel instance ({exc}); "
            "keep only picklable values in its attributes and create clients, locks and "
            "connections in open()"
        ) from exc


@dataclass(eq=False)
class Node:
    """One transformation of the job graph: a :class:`SourceNode`, an :class:`OperatorNode` or
    a :class:`SinkNode` (as Flink's ``Transformation`` subclasses). What a runner needs to know
    about a node is an attribute of its class: runners tell the kinds apart with
    ``isinstance``."""

    # the kind's name in operator identities (:mod:`sparktide.runtime.operator_identity`: part
    # of the hash that matches a checkpoint's state) and in the execution plan
    kind: ClassVar[str]
    name: str
    inputs: list[Edge] = field(default_factory=list)
    parallelism: int | None = None  # None: the environment's default
    max_parallelism: int | None = None
    output_type: TypeInformation | None = None
    uid: str | None = None
    id: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self) -> None:
        if type(self) is Node:
            raise TypeError("Node is abstract: build a SourceNode, OperatorNode or SinkNode")

    @property
    def is_keyed(self) -> bool:
        return any(e.partitioning == "hash" for e in self.inputs)

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.kind}, {self.name!r})"


@dataclass(eq=False, repr=False)
class SourceNode(Node):
    """A source: a split-aware ``Source`` (read split by split, each with its own watermark
    generator from ``watermark_strategy``), a ``SourceFunction`` (one split) or a source that
    Spark reads (a DataFrame or a streaming query)."""

    kind: ClassVar[str] = "source"
    # Any: runners narrow it themselves (Source, SourceFunction or a Spark source)
    source: Any = None
    watermark_strategy: WatermarkStrategy | None = None  # for sources created by from_source
    _splits: list[object] | None = field(default=None, init=False, compare=False)

    def splits(self) -> list[object]:
        """The source's splits, listed once (a ``SourceFunction`` is one split, ``None``):
        every runner and the execution plan see the same list."""
        source = self.source
        if hasattr(source, "run"):
            return [None]
        if self._splits is None:
            self._splits = list(source.get_splits())
        return self._splits


@dataclass(eq=False, repr=False)
class ProcessingNode(Node):
    """A node that processes its inputs' records with an operator that runners build from
    ``operator_factory``, one instance per subtask (or per source split when ``split_local``):
    an :class:`OperatorNode` or a :class:`SinkNode`."""

    # Any: the operator subclass a factory builds, which runners narrow themselves
    operator_factory: Callable[[], Any] | None = None
    split_local: bool = False  # stateless one-input node that may run per source split
    coerce_output: bool = True  # False: output_type is inherited, values are already typed


@dataclass(eq=False, repr=False)
class OperatorNode(ProcessingNode):
    """An operator with one or two inputs; without ``operator_factory`` it is *virtual*
    (union, broadcast, rebalance, global: it only reroutes its inputs, and the planner
    replaces it by edges)."""

    kind: ClassVar[str] = "operator"
    failed_records: OutputTag | None = None  # records whose function raised go there
    # a built-in window aggregate over a declarative key: a runner may run it on columns
    window_aggregate: WindowAggregateSpec | None = None

    @property
    def is_virtual(self) -> bool:
        return self.operator_factory is None


@dataclass(eq=False, repr=False)
class SinkNode(ProcessingNode):
    """A sink: records leave the job here."""

    kind: ClassVar[str] = "sink"
    # sinks that Spark's writers can serve: called with the sink's DataFrame on Spark
    frame_writer: Callable[[DataFrame], None] | None = None
    # a sink writing files: the folder it writes (checked writable before the job runs)
    output_location: str | None = None
    # a collect sink: where the runner delivers its records, each with its position
    collected: list[tuple[tuple[int, ...], StreamRecord]] | None = None

    @property
    def runs_with_input(self) -> bool:
        """Whether the sink has nothing to do per subtask, its records collected (collect,
        ``to_dataframe()``) or handed to Spark as a DataFrame (a ``ForeachBatchSink``): it runs
        where its input runs, at whatever parallelism that is."""
        return self.split_local and (self.frame_writer is not None or self.collected is not None)


@dataclass(eq=False)
class JobGraph:
    """Every node of an environment, in creation order (a topological order)."""

    nodes: list[Node] = field(default_factory=list)
    executed: set[int] = field(default_factory=set)

    def add(self, node: N) -> N:
        self.nodes.append(node)
        return node

    def sinks(self) -> list[SinkNode]:
        """The sinks not executed yet (a new ``execute()`` runs only these, re-reading sources
        they share with earlier executions, as Flink does)."""
        return [n for n in self.nodes if isinstance(n, SinkNode) and n.id not in self.executed]

    def mark_executed(self) -> None:
        self.executed.update(n.id for n in self.sinks())

    def copy(self) -> JobGraph:
        """The graph as it is now: what a job started now runs, whatever is built after it."""
        return JobGraph(list(self.nodes), set(self.executed))

    def reachable_from_sinks(self) -> list[Node]:
        """The nodes a sink depends on, in creation order (unused branches are dropped)."""
        needed: set[int] = set()
        stack: list[Node] = list(self.sinks())
        while stack:
            node = stack.pop()
            if node.id in needed:
                continue
            needed.add(node.id)
            stack.extend(e.source for e in node.inputs)
        return [n for n in self.nodes if n.id in needed]

    def consumers(self, nodes: list[Node]) -> dict[int, list[tuple[Node, Edge]]]:
        out: dict[int, list[tuple[Node, Edge]]] = {n.id: [] for n in nodes}
        for n in nodes:
            for e in n.inputs:
                out.setdefault(e.source.id, []).append((n, e))
        return out
