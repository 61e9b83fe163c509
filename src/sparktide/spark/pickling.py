"""Check, before a job is shipped to Spark's workers, that every part of it can be pickled.

Spark pickles the job (with cloudpickle) into its tasks; a function that holds a lock, an open
file, a socket or a SparkSession cannot travel. Rather than a long Py4J/pickle trace from inside
Spark, the error names the operator and the function:

>>> import threading
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.runtime.execution.planner import plan_job
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> lock = threading.Lock()
>>> def guarded(v):
...     with lock:
...         return v
>>> _ = env.from_collection([1]).map(guarded).print()
>>> check_picklable(plan_job(env.get_stream_graph(), 1, None))
Traceback (most recent call last):
...
TypeError: the function guarded of operator 'Map' cannot be pickled to ship it to Spark's ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.runtime.graph import Node, ProcessingNode, SourceNode

if TYPE_CHECKING:
    from sparktide.runtime.execution.planner import Plan

__all__ = ["check_picklable"]


def _dumps(value: object) -> None:
    from pyspark import cloudpickle

    cloudpickle.dumps(value)


def _name(value: object) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is not None:
        return str(name)
    return f"{type(value).__name__} instance"


def _culprit(factory: object) -> object:
    """The first value captured by ``factory`` (an operator factory closure) that fails to
    pickle, looking one level into functions and objects it holds."""
    cells = [c.cell_contents for c in (getattr(factory, "__closure__", None) or ())]
    for value in cells:
        try:
            _dumps(value)
        except Exception:
            return value
    return factory


def _shipped_parts(node: Node) -> list[tuple[str, object]]:
    """What of ``node`` the workers get: a source and its watermark strategy, or the function
    that builds an operator."""
    if isinstance(node, SourceNode):
        return [("source", node.source), ("watermark strategy", node.watermark_strategy)]
    if isinstance(node, ProcessingNode):
        return [("function", node.operator_factory)]
    return []


def check_picklable(plan: Plan) -> None:
    """Raise ``TypeError`` naming the operator and function that cannot be pickled."""
    for node in plan.nodes:
        parts = _shipped_parts(node)
        for what, value in parts:
            if value is None:
                continue
            try:
                _dumps(value)
            except Exception as exc:
                culprit = _culprit(value) if what == "function" else value
                raise TypeError(
                    f"the {what} {_name(culprit)} of operator {node.name!r} cannot be pickled "
                    f"to ship it to Spark's workers ({type(exc).__name__}: {exc}); make it "
                    "picklable (create locks, connections and clients in open() instead of "
                    "capturing them), or run on the in-process runtime: "
                    'get_execution_environment(runtime="local")'
                ) from exc
