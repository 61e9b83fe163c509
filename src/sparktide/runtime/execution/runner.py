"""What a runner is: the protocol the environment runs jobs through.

A :class:`Runner` takes a job graph and the environment it was built in
(:class:`~sparktide.runtime.execution.driver.JobEnvironment`) and runs it: the in-process runner
(``sparktide.local.runner.LocalRunner``) or the Spark runner (``sparktide.spark.runner.
SparkRunner``, on a classic or a Spark Connect session). The environment picks one when it is
created, from its runtime name (``StreamExecutionEnvironment(runtime=...)``), and asks it, never
the name, what to do; what differs between the runners is decided inside them. The runners
implement the protocol structurally (they import nothing of the DataStream API).

A :class:`StreamRequest` holds the arguments of a streaming run (``execute`` or
``execute_async`` of a job reading a Structured Streaming source).

>>> from sparktide.common.stream_trigger import StreamTrigger
>>> StreamRequest("job", "/tmp/ckpt", trigger=StreamTrigger.once()).snapshot_every is None
True
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sparktide.common.configuration import Configuration
    from sparktide.common.stream_trigger import StreamTrigger
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.execution.driver import JobEnvironment
    from sparktide.runtime.execution.path import PathChoice
    from sparktide.runtime.execution.planner import Plan
    from sparktide.runtime.graph import JobGraph, SinkNode

__all__ = ["PythonShipping", "Runner", "StreamRequest"]


@dataclass(frozen=True)
class StreamRequest:
    """How to run a streaming job (see ``StreamExecutionEnvironment.execute``): its name, the
    checkpoint folder, the trigger (a :class:`~sparktide.common.stream_trigger.StreamTrigger`;
    ``None``: until stopped),
    full snapshots every ``snapshot_every`` batches, whether state of operators the job no
    longer has is dropped, the checkpoint interval (ms) that paces micro-batches, whether a
    replayed batch whose input files are gone runs without them, and the savepoint the job
    starts from in its new checkpoint folder (``None``: it restarts from what the folder
    holds)."""

    job_name: str
    checkpoint_location: str | None
    trigger: StreamTrigger | None = None
    snapshot_every: int | None = None
    allow_non_restored_state: bool = False
    interval_ms: int | None = None
    skip_missing_input_files: bool = False
    from_savepoint: str | None = None


class PythonShipping(Protocol):
    """The Python files, archives and executable a job's workers need (the environment's
    ``PythonDependencies``): made importable here, or shipped to Spark's executors."""

    def apply_local(self) -> None: ...

    def session_python(self) -> AbstractContextManager[None]: ...

    def apply_spark(self, spark: Any) -> None: ...


class Runner(Protocol):
    """Where an environment's jobs run (see the module docstring)."""

    @property
    def name(self) -> str:
        """The runtime's name, ``"local"`` or ``"spark"`` (``env.get_runtime()``)."""
        ...

    @property
    def in_process(self) -> bool:
        """Whether jobs run in this process (``set_default_local_parallelism`` applies)."""
        ...

    @property
    def reads_streams(self) -> bool:
        """Whether jobs may read Structured Streaming sources (``env.from_stream``)."""
        ...

    def run(self, graph: JobGraph, env: JobEnvironment) -> dict[str, Any]:
        """Run the unexecuted sinks of bounded ``graph`` to the end; the job's metrics, the
        user metrics (``get_metrics_group()``) included."""
        ...

    def to_dataframe(
        self,
        graph: JobGraph,
        env: JobEnvironment,
        sink: SinkNode,
        type_info: TypeInformation | None,
        ordered: bool,
    ) -> Any:
        """A Spark DataFrame of what collect sink ``sink`` of ``graph`` receives, in the
        columns of ``type_info`` (inferred from the records when ``None``)."""
        ...

    def is_streaming(self, graph: JobGraph) -> bool:
        """Whether the job of ``graph``'s unexecuted sinks reads a streaming source."""
        ...

    def path(self, plan: Plan, configuration: Configuration) -> PathChoice:
        """The path planned job ``plan`` takes on this runner under the job's
        ``configuration`` (:func:`~sparktide.runtime.execution.path.choose_path`)."""
        ...

    def start_stream(self, graph: JobGraph, env: JobEnvironment, request: StreamRequest) -> Any:
        """Start the streaming job of ``graph``; its job client."""
        ...

    def ship_python(self, python: PythonShipping) -> None:
        """Make ``python``'s files and executable available where the job's Python runs."""
        ...
