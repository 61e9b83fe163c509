"""Plan a job graph: resolve virtual nodes, chain operators into stages (every runner uses it).

* The **source stage** holds the sources and every split-local operator reachable from them
  through forward edges (map, flat_map, filter, process, timestamp assignment, sinks). It runs
  once per source split, with its own operator instances, so every split has its own timestamp
  assigner and watermark generator.
* Every other operator starts an **exchange stage** (a keyed operator, a two-input operator, a
  different parallelism, an explicit rebalance/global) or is chained into the stage of its only
  input (forward edge, same parallelism; any parallelism for a sink with nothing to do per
  subtask, :attr:`~sparktide.runtime.graph.SinkNode.runs_with_input`).

Virtual nodes (union, rebalance, global) are resolved into the edges of their consumers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparktide.core.state_backend import StateBackend, default_state_backend
from sparktide.runtime.graph import (
    Edge,
    JobGraph,
    Node,
    OperatorNode,
    ProcessingNode,
    SinkNode,
    SourceNode,
)
from sparktide.runtime.keygroups import compute_default_max_parallelism

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation

__all__ = ["SOURCE_STAGE", "Plan", "Stage", "plan_job"]

SOURCE_STAGE = -1
"""Where the source stage sorts among the stage indexes (before every exchange stage)."""


@dataclass(eq=False)
class Stage:
    """An exchange stage: ``nodes[0]`` is fed by ``input_edges``; the rest are chained to it."""

    index: int
    nodes: list[ProcessingNode]
    parallelism: int
    max_parallelism: int
    input_edges: list[Edge] = field(default_factory=list)

    @property
    def entry(self) -> ProcessingNode:
        return self.nodes[0]

    @property
    def keyed(self) -> bool:
        return any(e.partitioning == "hash" for e in self.input_edges)

    @property
    def two_input(self) -> bool:
        return any(e.input_index == 2 for e in self.input_edges)

    @property
    def key_type(self) -> TypeInformation | None:
        """The declared key type of the entry's keyed inputs (``key_by(..., key_type=...)``;
        ``None``: undeclared, or inputs keyed by different types)."""
        types = [e.key_type for e in self.input_edges if e.key_selector is not None]
        return types[0] if types and all(t == types[0] for t in types) else None


@dataclass(eq=False)
class Plan:
    sources: list[SourceNode]
    source_stage: set[int]  # ids of the nodes that run per source split
    stages: list[Stage]
    stage_of: dict[int, Stage]
    edges_in: dict[int, list[Edge]]  # resolved input edges per node id
    consumers: dict[int, list[tuple[ProcessingNode, Edge]]]  # resolved, per producer id
    nodes: list[Node]
    state_backend: StateBackend = field(default_factory=default_state_backend)
    """Where the keyed operators of the job keep their state (a copy of the environment's)."""

    @property
    def sinks(self) -> list[SinkNode]:
        """The job's sinks, in creation order."""
        return [n for n in self.nodes if isinstance(n, SinkNode)]


def _is_virtual(node: Node) -> bool:
    return isinstance(node, OperatorNode) and node.is_virtual


def _resolve(edge: Edge) -> list[Edge]:
    """Replace an edge from a virtual node by edges from that node's real producers."""
    src = edge.source
    if not _is_virtual(src):
        return [edge]
    out: list[Edge] = []
    for inner in src.inputs:
        for r in _resolve(inner):
            chosen = edge if edge.partitioning != "forward" else r
            out.append(
                Edge(
                    r.source,
                    chosen.partitioning,
                    chosen.key_selector,
                    r.tag,
                    edge.input_index,
                    key_type=chosen.key_type,
                    partitioner=chosen.partitioner,
                )
            )
    return out


def plan_job(
    graph: JobGraph,
    default_parallelism: int,
    default_max_parallelism: int | None,
    state_backend: StateBackend | None = None,
) -> Plan:
    """The stages of ``graph``; ``state_backend`` (default: :func:`~sparktide.core.state_backend.
    default_state_backend`) is copied into the plan,
    which takes it to every keyed operator subtask."""
    nodes = [n for n in graph.reachable_from_sinks() if not _is_virtual(n)]
    edges_in = {n.id: [r for e in n.inputs for r in _resolve(e)] for n in nodes}

    source_stage: set[int] = set()
    stages: list[Stage] = []
    stage_of: dict[int, Stage] = {}
    for n in nodes:
        ins = edges_in[n.id]
        if not isinstance(n, ProcessingNode):  # a source
            source_stage.add(n.id)
            continue
        if not ins:
            raise ValueError(f"{n.name} has no input")
        forward = all(e.partitioning == "forward" for e in ins)
        if forward and n.split_local and all(e.source.id in source_stage for e in ins):
            source_stage.add(n.id)
            continue
        parallelism = n.parallelism or default_parallelism
        if forward and len(ins) == 1 and ins[0].input_index == 1:
            upstream = stage_of.get(ins[0].source.id)
            if upstream is not None and (
                upstream.parallelism == parallelism
                or (isinstance(n, SinkNode) and n.runs_with_input)
            ):
                upstream.nodes.append(n)
                stage_of[n.id] = upstream
                continue
        maxp = n.max_parallelism or default_max_parallelism
        if maxp is None:
            maxp = compute_default_max_parallelism(parallelism)
        if maxp < parallelism:
            raise ValueError(
                f"max_parallelism ({maxp}) of {n.name!r} is below its parallelism "
                f"({parallelism}); raise set_max_parallelism(...) or lower the parallelism"
            )
        stage_edges = [
            e
            if e.partitioning != "forward"
            else Edge(e.source, "rebalance", None, e.tag, e.input_index)
            for e in ins
        ]
        stage = Stage(len(stages), [n], parallelism, maxp, stage_edges)
        stages.append(stage)
        stage_of[n.id] = stage
        edges_in[n.id] = stage_edges
    consumers: dict[int, list[tuple[ProcessingNode, Edge]]] = {n.id: [] for n in nodes}
    for n in nodes:
        if isinstance(n, ProcessingNode):  # a source has no inputs
            for e in edges_in[n.id]:
                consumers[e.source.id].append((n, e))
    sources = [n for n in nodes if isinstance(n, SourceNode)]
    backend = default_state_backend() if state_backend is None else state_backend.copy()
    return Plan(sources, source_stage, stages, stage_of, edges_in, consumers, nodes, backend)
