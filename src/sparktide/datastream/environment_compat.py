"""The ``StreamExecutionEnvironment`` methods of PyFlink about checkpointing, shipping Python,
the plan and the settings that have no meaning on Spark (mixed into the environment).

What each does here (see also docs/pyflink_compat.md):

- works: ``enable_checkpointing``, ``get_checkpoint_config`` (see
  :mod:`sparktide.datastream.checkpoint_config`), the Python shipping methods (see
  :mod:`sparktide.datastream.python_dependencies`), ``register_cached_file`` (Spark's
  ``addFile``), ``get_execution_plan``, ``close``;
- documented no-ops: ``set_buffer_timeout`` (records ship per round or micro-batch),
  ``disable_operator_chaining`` (chaining never changes a job's output),
  ``register_slot_sharing_group`` (Spark schedules tasks itself),
  ``enable_changelog_state_backend`` (streaming state is always written as a changelog between
  snapshots), ``set_default_local_parallelism``, ``set_default_savepoint_directory`` (recorded);
- not supported on Spark, with an error at use: ``add_jars``, ``add_classpaths`` (no JVM of
  our own: use ``spark.jars``), ``create_input`` (a Java ``InputFormat``).

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> env.enable_checkpointing(1000).get_checkpoint_interval()
1000
>>> env.add_jars("file:///x.jar")
Traceback (most recent call last):
...
NotImplementedError: add_jars is not supported on Spark, because sparktide runs no JVM of its \
own: add jars to the SparkSession with spark.jars (paths) or spark.jars.packages (Maven \
coordinates)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from sparktide.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from sparktide.datastream.execution_plan import execution_plan, node_paths
from sparktide.datastream.python_dependencies import PythonDependencies
from sparktide.datastream.slot_sharing_group import SlotSharingGroup

if TYPE_CHECKING:
    from sparktide.datastream.environment import StreamExecutionEnvironment
    from sparktide.runtime.execution.runner import Runner
    from sparktide.runtime.graph import JobGraph

__all__ = ["EnvironmentCompat"]


def _no_jvm(method: str) -> NotImplementedError:
    return NotImplementedError(
        f"{method} is not supported on Spark, because sparktide runs no JVM of its own: add "
        "jars to the SparkSession with spark.jars (paths) or spark.jars.packages (Maven "
        "coordinates)"
    )


class EnvironmentCompat:
    """Mixed into ``StreamExecutionEnvironment``."""

    _checkpoint_config: CheckpointConfig
    _python: PythonDependencies
    _slot_sharing_groups: dict[str, SlotSharingGroup]
    _chaining: bool
    _changelog: bool
    _buffer_timeout: int
    _default_local_parallelism: int | None
    _savepoint_directory: str | None
    _graph: JobGraph
    _runner: Runner
    _parallelism: int

    # ------------------------------------------------------------------ checkpointing

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode | None = None
    ) -> StreamExecutionEnvironment:
        """Checkpoint every ``interval`` ms: a streaming job on Spark starts a micro-batch
        (which is a checkpoint) at most that often."""
        self._checkpoint_config.set_checkpoint_interval(interval)
        if mode is not None:
            self._checkpoint_config.set_checkpointing_mode(mode)
        return self  # type: ignore[return-value]

    def get_checkpoint_config(self) -> CheckpointConfig:
        return self._checkpoint_config

    def get_checkpoint_interval(self) -> int:
        return self._checkpoint_config.get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self._checkpoint_config.get_checkpointing_mode()

    get_checkpointing_consistency_mode = get_checkpointing_mode

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self._checkpoint_config.is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self._checkpoint_config.is_force_unaligned_checkpoints()

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Recorded only: streaming state is always written as a changelog between full
        snapshots (``execute(snapshot_every=...)``)."""
        self._changelog = bool(enabled)
        return self  # type: ignore[return-value]

    def is_changelog_state_backend_enabled(self) -> bool:
        return self._changelog

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        """Recorded only: a streaming job resumes from its ``checkpoint_location``."""
        self._savepoint_directory = directory
        return self  # type: ignore[return-value]

    def get_default_savepoint_directory(self) -> str | None:
        return self._savepoint_directory

    # ------------------------------------------------------------------ Python on the workers

    def set_python_executable(self, python_exec: str) -> StreamExecutionEnvironment:
        self._python.set_executable(python_exec)
        return self  # type: ignore[return-value]

    def add_python_file(self, file_path: str) -> StreamExecutionEnvironment:
        self._python.add_file(file_path)
        return self  # type: ignore[return-value]

    def add_python_archive(
        self, archive_path: str, target_dir: str | None = None
    ) -> StreamExecutionEnvironment:
        self._python.add_archive(archive_path, target_dir)
        return self  # type: ignore[return-value]

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> StreamExecutionEnvironment:
        self._python.set_requirements(requirements_file_path, requirements_cache_dir)
        return self  # type: ignore[return-value]

    def register_cached_file(
        self, file_path: str, name: str, executable: bool = False
    ) -> StreamExecutionEnvironment:
        """Ship ``file_path`` to every worker (Spark's ``addFile``; read it there with
        ``pyspark.SparkFiles.get(basename)``); on the local runtime it is checked to exist."""
        if not os.path.exists(file_path):
            raise FileNotFoundError(f"register_cached_file: {file_path} does not exist")
        self._python.cached_files[name] = os.path.abspath(file_path)
        return self  # type: ignore[return-value]

    def _apply_python(self) -> None:
        python = self._python
        if python.is_set():
            self._runner.ship_python(python)

    def add_jars(self, *jars_path: str) -> None:
        raise _no_jvm("add_jars")

    def add_classpaths(self, *classpaths: str) -> None:
        raise _no_jvm("add_classpaths")

    def create_input(self, input_format: Any, type_info: Any = None) -> Any:
        raise NotImplementedError(
            "create_input is not supported on Spark, because an InputFormat is a Java class: "
            "read files with from_source(FileSource...) or a DataFrame with from_dataframe(df)"
        )

    # ------------------------------------------------------------------ no meaning on Spark

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """A no-op: records ship per round (a micro-batch when streaming), not per network
        buffer."""
        if type(timeout_millis) is not int or timeout_millis < -1:
            raise ValueError(f"timeout_millis must be an int >= -1, got {timeout_millis!r}")
        self._buffer_timeout = timeout_millis
        return self  # type: ignore[return-value]

    def get_buffer_timeout(self) -> int:
        return self._buffer_timeout

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        """A no-op: operators of equal parallelism joined by forward edges still run in one
        task (chaining never changes a job's output)."""
        self._chaining = False
        return self  # type: ignore[return-value]

    def is_chaining_enabled(self) -> bool:
        return self._chaining

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        return True

    def register_slot_sharing_group(
        self, slot_sharing_group: SlotSharingGroup
    ) -> StreamExecutionEnvironment:
        """Recorded only: Spark schedules every task on its executors' cores itself."""
        if not isinstance(slot_sharing_group, SlotSharingGroup):
            raise TypeError(
                f"slot_sharing_group must be a SlotSharingGroup, got "
                f"{type(slot_sharing_group).__name__}"
            )
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self  # type: ignore[return-value]

    def set_default_local_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """The parallelism of an environment on the local runtime (as Flink's local
        environment): sets it now when this one runs locally."""
        if type(parallelism) is not int or parallelism < 1:
            raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
        self._default_local_parallelism = parallelism
        if self._runner.in_process:
            self._parallelism = parallelism
        return self  # type: ignore[return-value]

    def get_default_local_parallelism(self) -> int | None:
        return self._default_local_parallelism

    # ------------------------------------------------------------------ the plan

    def get_execution_plan(self) -> str:
        """The job as JSON, shaped as Flink's (see :mod:`sparktide.datastream.execution_plan`)."""
        graph = self._graph
        env = cast("StreamExecutionEnvironment", self)
        return execution_plan(graph, self._parallelism, node_paths(env, self._runner, graph))

    def get_stream_graph(self) -> JobGraph:
        """The job graph built so far (Flink's ``getStreamGraph()``): every source, operator
        and sink of this environment in creation order, each a typed node
        (:mod:`sparktide.runtime.graph`), to inspect or plan a job, e.g.
        ``plan_job(env.get_stream_graph(), ...)`` (:mod:`sparktide.runtime.execution.planner`).
        It is the environment's own graph, not a copy: build jobs through the DataStream API.

        >>> from sparktide.datastream import StreamExecutionEnvironment
        >>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        >>> env.from_collection([1, 2]).map(lambda v: v).print()  # doctest: +ELLIPSIS
        <...DataStreamSink object at ...>
        >>> [(n.kind, n.name) for n in env.get_stream_graph().nodes]
        [('source', 'Collection Source'), ('operator', 'Map'), ('sink', 'Print to Std. Out')]
        """
        return self._graph

    def close(self) -> None:
        """Drop every stream and sink defined so far (a closed environment has nothing left to
        execute)."""
        from sparktide.runtime.graph import JobGraph

        self._graph = JobGraph()
