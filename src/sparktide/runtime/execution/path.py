"""The execution path of a planned job: one function decides it, with the reason.

:func:`choose_path` takes the plan, the job's options (:class:`PathOptions`, from its
``Configuration``) and what is asked (:class:`Request`: a bounded run, a ``to_dataframe()`` of a
sink, a streaming run) and returns a :class:`PathChoice`: the job's :class:`ExecutionPath` and
why, per stage, and for each window operator whether it takes the window fast path
(:mod:`~sparktide.runtime.operators.window_path`) and why. Runners build what it chose; none
decides again. It runs once per run, on the driver: nothing per record.

Paths (docs/architecture.md, "Execution paths"):

* ``per-record``: the general tasks (:mod:`~sparktide.runtime.execution.tasks`), on both
  runtimes; window operators that qualify take the window fast path;
* ``columnar-python``: a built-in window aggregate on Arrow columns in Python workers (Spark);
* ``columnar-sql``: an unordered ``to_dataframe()`` of one in Spark's own engine, when no record
  can be late (checked on the data first; otherwise ``columnar-python`` builds it);
* ``columnar-stream``: a streaming run's built-in window aggregate on columns, batch by batch.

The columnar paths need one source feeding one keyed window with a built-in aggregate and
sinks of its output; what the runner's sources can give on columns (a DataFrame's column types,
a column timestamp) it says through :class:`ColumnarSources`. The local runtime has none.

>>> from sparktide.common.configuration import Configuration
>>> options = PathOptions.of(Configuration().set_string("sparktide.execution.columnar", "off"))
>>> options.columnar.value, options.columnar_origin
('off', 'sparktide.execution.columnar = off')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from sparktide.common import env_overrides
from sparktide.common.config_options import (
    COLUMNAR_EXECUTION,
    WINDOW_FAST_PATH,
    ColumnarExecution,
)
from sparktide.core.state_backend import StateBackendKind
from sparktide.runtime.columnar.spec import FieldKey
from sparktide.runtime.graph import OperatorNode, SinkNode, SourceNode
from sparktide.runtime.operators.window import WindowOperator
from sparktide.runtime.operators.window_path import FastPathDecision, window_fast_path

if TYPE_CHECKING:
    from sparktide.common.configuration import Configuration
    from sparktide.runtime.columnar.spec import WindowAggregateSpec
    from sparktide.runtime.execution.planner import Plan, Stage

__all__ = [
    "ColumnarSources",
    "ExecutionPath",
    "NodePath",
    "PathChoice",
    "PathOptions",
    "Request",
    "RequestKind",
    "StagePath",
    "choose_path",
    "field_key",
]


class ExecutionPath(Enum):
    """How a job (or a stage of it) runs."""

    PER_RECORD = "per-record"
    COLUMNAR_PYTHON = "columnar-python"
    COLUMNAR_SQL = "columnar-sql"
    COLUMNAR_STREAM = "columnar-stream"

    @property
    def columnar(self) -> bool:
        return self is not ExecutionPath.PER_RECORD


class RequestKind(Enum):
    """What is asked of the job."""

    RUN = "a bounded run"
    FRAME = "a to_dataframe() of a sink"
    STREAM = "a streaming run"


@dataclass(frozen=True)
class Request:
    """What is asked: a bounded run, the DataFrame of ``sink`` (``ordered`` by position or not),
    or a streaming run."""

    kind: RequestKind
    sink: int | None = None
    ordered: bool = True

    @staticmethod
    def run() -> Request:
        return Request(RequestKind.RUN)

    @staticmethod
    def frame(sink: int, ordered: bool = True) -> Request:
        return Request(RequestKind.FRAME, sink, ordered)

    @staticmethod
    def stream() -> Request:
        return Request(RequestKind.STREAM)


@dataclass(frozen=True)
class PathOptions:
    """The job's options that steer the choice, with where the columnar mode came from (for
    the reasons): the job's ``sparktide.execution.columnar`` wins over the environment variable
    ``SPARKTIDE_COLUMNAR``, which wins over the default (as Flink's job configuration wins over
    the cluster's, which deployments fill from their environment)."""

    columnar: ColumnarExecution = ColumnarExecution.AUTO
    window_fast_path: bool = True
    columnar_origin: str = "the default"

    @staticmethod
    def of(configuration: Configuration | Mapping[str, object] | None) -> PathOptions:
        """The options of a job's ``configuration`` (its ``get_config().get_configuration()``),
        with the environment override; an invalid value is an error naming the key."""
        values: Mapping[str, object] = {}
        if configuration is not None:
            to_dict = getattr(configuration, "to_dict", None)
            values = to_dict() if callable(to_dict) else configuration  # type: ignore[assignment]
        fast = WINDOW_FAST_PATH.read(values)
        key = COLUMNAR_EXECUTION.key()
        if key in values:
            mode = COLUMNAR_EXECUTION.read(values) or ColumnarExecution.AUTO
            return PathOptions(mode, bool(fast), f"{key} = {mode.value}")
        override = env_overrides.columnar()
        if override is not None:
            mode = _overridden(override)
            return PathOptions(mode, bool(fast), f"{env_overrides.COLUMNAR}={override}")
        return PathOptions(ColumnarExecution.AUTO, bool(fast))


def _overridden(text: str) -> ColumnarExecution:
    """``SPARKTIDE_COLUMNAR``'s spellings: ``off``/``0``/``false``/``no``, ``python``; anything
    else (``on``, ``auto``) is ``auto``."""
    if text in ("off", "0", "false", "no"):
        return ColumnarExecution.OFF
    return ColumnarExecution.PYTHON if text == "python" else ColumnarExecution.AUTO


class ColumnarSources(Protocol):
    """What a runner can read on columns (the Spark runner's DataFrame and stream sources)."""

    def refusal(
        self, source: SourceNode, spec: WindowAggregateSpec, request: Request
    ) -> str | None:
        """Why ``source`` cannot feed ``spec`` on columns for ``request`` (``None``: it can):
        its kind, its watermark strategy, its column types."""
        ...


@dataclass(frozen=True)
class NodePath:
    """The path one node takes and why; ``window_fast_path``: for a window operator run per
    record, whether it takes the window fast path (``None``: no such operator)."""

    path: ExecutionPath
    reason: str
    window_fast_path: bool | None = None


@dataclass(frozen=True)
class StagePath:
    """An exchange stage's path and why, with its window operators' fast-path decisions (for
    when they run per record)."""

    index: int
    path: ExecutionPath
    reason: str
    windows: Mapping[int, FastPathDecision]


@dataclass(frozen=True)
class PathChoice:
    """The path of a job (:func:`choose_path`)."""

    path: ExecutionPath
    reason: str
    stages: tuple[StagePath, ...]

    @property
    def fast_windows(self) -> frozenset[int]:
        """The ids of the window nodes that take the window fast path where they run per
        record (a columnar job's ``to_dataframe()`` of its late output runs them so)."""
        return frozenset(n for s in self.stages for n, d in s.windows.items() if d.taken)

    def of_node(self, node_id: int, stage: int | None) -> NodePath:
        """The path of node ``node_id`` in stage ``stage`` (``None``: the source stage)."""
        if stage is None:
            return NodePath(self.path, self.reason)
        own = self.stages[stage]
        decision = own.windows.get(node_id)
        if decision is None or own.path.columnar:  # no per-record window operator runs
            return NodePath(own.path, own.reason)
        return NodePath(
            own.path, f"{own.reason}; window fast path: {decision.reason}", decision.taken
        )


def choose_path(
    plan: Plan,
    options: PathOptions,
    request: Request,
    columnar: ColumnarSources | None = None,
) -> PathChoice:
    """The path of ``plan`` for ``request`` under ``options``; ``columnar``: what the runner
    can read on columns (``None``: nothing, as on the local runtime)."""
    path, reason = _job_path(plan, options, request, columnar)
    heap = plan.state_backend.kind is StateBackendKind.HASHMAP
    stages = tuple(
        StagePath(
            stage.index,
            path,
            reason,
            _windows(stage, heap, options.window_fast_path),
        )
        for stage in plan.stages
    )
    return PathChoice(path, reason, stages)


def _windows(stage: Stage, heap: bool, enabled: bool) -> dict[int, FastPathDecision]:
    """The fast-path decision of each window operator of ``stage`` (built once from its node's
    factory, on the driver, to read its assigner, trigger and contents)."""
    out = {}
    for node in stage.nodes:
        if not isinstance(node, OperatorNode) or node.operator_factory is None:
            continue
        op = node.operator_factory()
        if isinstance(op, WindowOperator):
            out[node.id] = window_fast_path(op, heap, enabled)
    return out


def _job_path(
    plan: Plan, options: PathOptions, request: Request, columnar: ColumnarSources | None
) -> tuple[ExecutionPath, str]:
    per_record = ExecutionPath.PER_RECORD
    if columnar is None:
        return per_record, "the local runtime runs every job per record"
    if options.columnar is ColumnarExecution.OFF:
        return per_record, f"columnar execution is off ({options.columnar_origin})"
    refusal = _shape_refusal(plan, request, columnar)
    if refusal is not None:
        return per_record, refusal
    if request.kind is RequestKind.STREAM:
        return ExecutionPath.COLUMNAR_STREAM, (
            "a built-in window aggregate keyed by a field runs each micro-batch on columns"
        )
    if request.kind is RequestKind.FRAME and not request.ordered:
        if options.columnar is ColumnarExecution.AUTO:
            return ExecutionPath.COLUMNAR_SQL, (
                "an unordered to_dataframe() of a built-in window aggregate runs in Spark's "
                "engine when no record can be late (checked on the data; else on columns)"
            )
        return ExecutionPath.COLUMNAR_PYTHON, (
            f"a built-in window aggregate runs on columns in Python ({options.columnar_origin})"
        )
    reason = "a built-in window aggregate keyed by a field runs on Arrow columns"
    if options.columnar is ColumnarExecution.AUTO:
        reason += (
            " (an unordered to_dataframe() of its output: columnar-sql, in Spark's engine when "
            "no record can be late)"
        )
    return ExecutionPath.COLUMNAR_PYTHON, reason


def _shape_refusal(plan: Plan, request: Request, columnar: ColumnarSources) -> str | None:
    """Why ``plan`` lacks the columnar shape for ``request`` (``None``: it has it)."""
    if len(plan.sources) != 1:
        return f"the job reads {len(plan.sources)} sources (the columnar paths read one)"
    if len(plan.stages) != 1:
        return (
            f"the job has {len(plan.stages)} exchange stages (the columnar paths run one: "
            "a keyed window)"
        )
    source, stage = plan.sources[0], plan.stages[0]
    if plan.source_stage != {source.id}:
        return "operators run between the source and the window"
    spec = stage.entry.window_aggregate if isinstance(stage.entry, OperatorNode) else None
    if spec is None or spec.output_type is None:
        return "the stage is no built-in window aggregate (count(), agg(), sum(), ...)"
    edges = stage.input_edges
    if (
        len(edges) != 1
        or edges[0].source is not source
        or edges[0].partitioning != "hash"
        or edges[0].tag is not None
        or field_key(edges[0].key_selector) != spec.key
    ):
        return 'the window is not keyed by a field of the source (key_by("field"))'
    refusal = columnar.refusal(source, spec, request)
    if refusal is not None:
        return refusal
    return _sinks_refusal(plan, stage, spec, request)


def _sinks_refusal(
    plan: Plan, stage: Stage, spec: WindowAggregateSpec, request: Request
) -> str | None:
    """Why the nodes after the window keep the job per record (``None``: they do not)."""
    window, source = stage.entry, plan.sources[0]
    main: list[int] = []
    for node in stage.nodes[1:]:
        ins = plan.edges_in[node.id]
        if not isinstance(node, SinkNode) or len(ins) != 1 or ins[0].source is not window:
            return f"{node.name!r} follows the window (the columnar paths feed sinks only)"
        late = ins[0].tag is not None
        if late and ins[0].tag != spec.late_tag:
            return f"sink {node.name!r} reads a side output other than the late data"
        if request.kind is RequestKind.STREAM:
            if node.frame_writer is None:
                return f"sink {node.name!r} is not written by Spark"
            if late and node.output_type != source.output_type:
                return f"the late-data sink {node.name!r} is typed otherwise than the source"
        elif not (node.collected is not None or node.id == request.sink) and (
            node.frame_writer is None or late
        ):
            return f"sink {node.name!r} is neither collected nor written by Spark"
        if not late:
            main.append(node.id)
    if len(stage.nodes) == 1:
        return "no sink reads the window"
    if request.kind is RequestKind.FRAME and request.sink not in main:
        return "the DataFrame read is not the window's main output"
    return None


def field_key(selector: object) -> FieldKey | None:
    """The :class:`~sparktide.runtime.columnar.spec.FieldKey` a key selector is (or is the
    bound ``get_key`` of)."""
    owner = getattr(selector, "__self__", selector)
    return owner if isinstance(owner, FieldKey) else None
