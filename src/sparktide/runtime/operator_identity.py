"""Stable identities of the operators of a job graph, for matching state on restore.

A checkpoint stores operator state (keyed state, timers, watermarks) under each operator's
*identity*, never under :attr:`Node.id` (a process-wide counter: building the same job twice in
one process, or its branches in another order, gives other ids). The identity is:

* ``"uid:<uid>"`` when the operator has a ``uid(...)`` (the stable choice: it survives any
  change of the job graph around the operator);
* else a hash of the operator's place in the topology, as Flink computes one: its kind
  (:attr:`Node.kind`: ``"source"``, ``"operator"`` or ``"sink"``), its
  name, the identities of its inputs (with how each edge partitions and which side output it
  reads) and its position among *siblings*, the operators that share all of that, in creation
  order. Changing anything upstream of an operator without a uid changes its identity.

>>> from sparktide.runtime.graph import Edge, OperatorNode, SourceNode
>>> src = SourceNode("events")
>>> a = OperatorNode("map", [Edge(src)])
>>> b = OperatorNode("map", [Edge(src)])
>>> ids = operator_identities([src, a, b])
>>> ids[a.id] != ids[b.id], ids[a.id] == operator_identities([src, a, b])[a.id]
(True, True)
>>> c = OperatorNode("map", [Edge(src)], uid="m")
>>> operator_identities([src, c])[c.id]
'uid:m'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from sparktide.runtime.graph import Node

__all__ = ["operator_identities"]


def _tag_name(tag: object) -> str | None:
    if tag is None:
        return None
    return str(getattr(tag, "tag_id", tag))


def operator_identities(nodes: Iterable[Node]) -> dict[int, str]:
    """The identity of every node of ``nodes`` and of every node upstream of them, by
    :attr:`Node.id` (see the module docstring). Two nodes with the same ``uid`` raise
    ``ValueError`` naming both."""
    ordered = sorted(_with_upstream(nodes), key=lambda n: n.id)  # creation order
    identities: dict[int, str] = {}
    siblings: dict[str, int] = {}
    by_uid: dict[str, Node] = {}
    for node in ordered:
        if node.uid is not None:
            other = by_uid.setdefault(node.uid, node)
            if other is not node:
                raise ValueError(
                    f"uid {node.uid!r} is set on two operators ({other.name!r} and "
                    f"{node.name!r}); a uid names one operator's state: make them unique"
                )
            identities[node.id] = f"uid:{node.uid}"
            continue
        inputs = [
            [identities[e.source.id], e.partitioning, _tag_name(e.tag), e.input_index]
            for e in node.inputs
        ]
        place = json.dumps([node.kind, node.name, inputs], separators=(",", ":"))
        position = siblings.get(place, 0)
        siblings[place] = position + 1
        digest = hashlib.blake2b(f"{place}#{position}".encode(), digest_size=12).hexdigest()
        identities[node.id] = digest
    return identities


def _with_upstream(nodes: Iterable[Node]) -> list[Node]:
    seen: dict[int, Node] = {}
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.id in seen:
            continue
        seen[node.id] = node
        stack.extend(e.source for e in node.inputs)
    return list(seen.values())
