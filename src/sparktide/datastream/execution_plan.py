"""``get_execution_plan()``: the job graph as JSON, in the shape of Flink's
``getStreamingPlanAsJSON`` (``nodes`` with ``id``, ``type``, ``pact``, ``contents``,
``parallelism`` and ``predecessors`` with ``id``, ``ship_strategy`` and ``side``), with each
node's execution path and why (``execution_path``, ``reason`` and, for a window operator run per
record, ``window_fast_path``): what the job's path choice
(:func:`~sparktide.runtime.execution.path.choose_path`) decides for a run on the environment's
runtime (a streaming run for a job reading ``from_stream``).

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> env.from_collection([1, 2]).key_by(lambda v: v).reduce(lambda a, b: a + b).print()
<...DataStreamSink object at ...>
>>> import json
>>> [(n["pact"], n["type"]) for n in json.loads(env.get_execution_plan())["nodes"]]
[('Data Source', 'Source: Collection Source'), ('Operator', 'Reduce'), ('Data Sink', \
'Sink: Print to Std. Out')]
>>> json.loads(env.get_execution_plan())["nodes"][1]["predecessors"][0]["ship_strategy"]
'HASH'
>>> node = json.loads(env.get_execution_plan())["nodes"][1]
>>> node["execution_path"], node["reason"]
('per-record', 'the local runtime runs every job per record')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparktide.runtime.execution.path import NodePath
from sparktide.runtime.execution.planner import plan_job
from sparktide.runtime.execution.tasks import splits_of
from sparktide.runtime.graph import JobGraph, Node, OperatorNode, SourceNode

if TYPE_CHECKING:
    from sparktide.datastream.environment import StreamExecutionEnvironment
    from sparktide.runtime.execution.runner import Runner

__all__ = ["execution_plan", "node_paths"]

_PACT = {"source": "Data Source", "operator": "Operator", "sink": "Data Sink"}
_PREFIX = {"source": "Source: ", "operator": "", "sink": "Sink: "}
_SHIP = {
    "forward": "FORWARD",
    "hash": "HASH",
    "rebalance": "REBALANCE",
    "global": "GLOBAL",
    "custom": "CUSTOM",
}


def _is_virtual(node: Node) -> bool:
    return isinstance(node, OperatorNode) and node.is_virtual


def node_paths(
    env: StreamExecutionEnvironment, runner: Runner, graph: JobGraph
) -> dict[int, NodePath]:
    """The path each planned node of ``graph`` takes when ``env`` runs it on ``runner``, by
    node id."""
    plan = plan_job(
        graph, env.get_parallelism(), env.get_max_parallelism(), env.get_state_backend()
    )
    choice = runner.path(plan, env.get_config().get_configuration())
    paths = {n.id: choice.of_node(n.id, None) for n in plan.nodes if n.id in plan.source_stage}
    for node_id, stage in plan.stage_of.items():
        paths[node_id] = choice.of_node(node_id, stage.index)
    return paths


def execution_plan(
    graph: JobGraph, default_parallelism: int, paths: Mapping[int, NodePath] | None = None
) -> str:
    """The plan of every node the unexecuted sinks of ``graph`` need. Routing nodes
    (``rebalance()``, ``forward()``, ``partition_custom()``...) are no operators: their
    partitioning shows as the ``ship_strategy`` of the edge into the next operator, as in
    Flink. A forward edge between different parallelisms ships REBALANCE, as it does when
    the job runs. ``paths``: each node's execution path (:func:`node_paths`)."""
    nodes = graph.reachable_from_sinks()
    out: list[dict[str, Any]] = []

    def parallelism(node: Node) -> int:
        if isinstance(node, SourceNode):  # one subtask per split
            return len(splits_of(node))
        return node.parallelism or default_parallelism

    def predecessors(node: Node) -> list[dict[str, Any]]:
        found = []
        for edge in node.inputs:
            strategy = edge.partitioning
            source = edge.source
            while _is_virtual(source) and len(source.inputs) == 1:
                if strategy == "forward":
                    strategy = source.inputs[0].partitioning
                source = source.inputs[0].source
            if strategy == "forward" and parallelism(source) != parallelism(node):
                strategy = "rebalance"
            found.append(
                {
                    "id": source.id,
                    "ship_strategy": _SHIP[strategy],
                    "side": "first" if edge.input_index == 1 and len(node.inputs) > 1 else "second",
                }
            )
        return found

    for node in nodes:
        if _is_virtual(node):
            continue
        name = _PREFIX[node.kind] + node.name
        entry: dict[str, Any] = {
            "id": node.id,
            "type": name,
            "pact": _PACT[node.kind],
            "contents": getattr(node, "description", None) or name,
            "parallelism": parallelism(node),
        }
        if node.inputs:
            entry["predecessors"] = predecessors(node)
        path = None if paths is None else paths.get(node.id)
        if path is not None:
            entry["execution_path"] = path.path.value
            entry["reason"] = path.reason
            if path.window_fast_path is not None:
                entry["window_fast_path"] = path.window_fast_path
        out.append(entry)
    return json.dumps({"nodes": out}, indent=2)
