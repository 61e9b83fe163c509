"""``CheckpointConfig`` and what it names (PyFlink's ``pyflink.datastream.checkpoint_config``,
``CheckpointingMode``, ``ExternalizedCheckpointRetention`` and the checkpoint storages).

How each setting maps onto a streaming job on Spark (a job reading ``env.from_stream``), where
one micro-batch is one checkpoint (its state and timers are committed with it):

- interval (``enable_checkpointing(ms)``): a micro-batch starts at most every ``max(interval,
  min pause)`` ms (Spark's ``processingTime`` trigger); without it, one starts as soon as the
  previous one ends;
- storage (``FileSystemCheckpointStorage(path)``, ``execution.checkpointing.dir``): the default
  ``checkpoint_location`` of ``execute()``;
- mode: EXACTLY_ONCE and AT_LEAST_ONCE both hold (a replayed micro-batch reloads the state
  of the last committed one, so records are never counted twice in state);
- timeout, max concurrent checkpoints, tolerable failures, unaligned and alignment settings:
  recorded, no effect: a micro-batch commits once, after its sink write, with no barrier to
  align and no concurrent checkpoint;
- externalized retention: the checkpoint directory outlives the job (RETAIN_ON_CANCELLATION)
  whatever is set, since a restart resumes from it.

>>> config = CheckpointConfig().set_checkpoint_interval(5000).set_min_pause_between_checkpoints(
...     8000)
>>> config.is_checkpointing_enabled(), config.trigger_interval_ms()
(True, 8000)
"""

from __future__ import annotations

from enum import Enum

from sparktide.common.time import Duration

__all__ = [
    "CheckpointConfig",
    "CheckpointStorage",
    "CheckpointingMode",
    "CustomCheckpointStorage",
    "ExternalizedCheckpointRetention",
    "FileSystemCheckpointStorage",
    "JobManagerCheckpointStorage",
]


class CheckpointingMode(Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(Enum):
    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


class CheckpointStorage:
    """Where checkpoints are written (a path or ``pyarrow.fs`` URI, or ``None``)."""

    def __init__(self, checkpoint_path: str | None = None) -> None:
        if checkpoint_path is not None and (
            not isinstance(checkpoint_path, str) or not checkpoint_path
        ):
            raise ValueError(
                f"checkpoint_path must be a non-empty str (a path or URI), got {checkpoint_path!r}"
            )
        self._path = checkpoint_path

    def get_checkpoint_path(self) -> str | None:
        return self._path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._path!r})"


class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints in ``checkpoint_path`` (any ``pyarrow.fs`` URI: a local path, ``s3://``,
    ``hdfs://``...): the job's default ``checkpoint_location``."""

    def __init__(
        self,
        checkpoint_path: str,
        file_state_size_threshold: int | None = None,
        write_buffer_size: int = -1,
    ) -> None:
        if checkpoint_path is None:
            raise ValueError("checkpoint_path is required: the directory checkpoints go to")
        super().__init__(checkpoint_path)


class JobManagerCheckpointStorage(CheckpointStorage):
    """Flink keeps these checkpoints in the JobManager's memory; here a checkpoint always goes
    to a directory, so ``checkpoint_path`` (if given) is that directory."""

    def __init__(
        self, checkpoint_path: str | None = None, max_state_size: int | None = None
    ) -> None:
        super().__init__(checkpoint_path)


class CustomCheckpointStorage(CheckpointStorage):
    """A Java checkpoint storage in Flink: not supported on Spark, because sparktide writes its
    checkpoints itself; use :class:`FileSystemCheckpointStorage`."""

    def __init__(self, j_custom_checkpoint_storage: object = None) -> None:
        raise NotImplementedError(
            "CustomCheckpointStorage is not supported on Spark, because it wraps a Java class "
            "and sparktide writes its checkpoints itself: use FileSystemCheckpointStorage(path)"
        )


def _millis(value: int, name: str, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum} (ms), got {value!r}")
    return value


class CheckpointConfig:
    """The checkpoint settings of an environment (``env.get_checkpoint_config()``); see the
    module docstring for what each does on Spark."""

    def __init__(self, j_checkpoint_config: object = None) -> None:
        if j_checkpoint_config is not None:
            raise ValueError("j_checkpoint_config is a Java object; use CheckpointConfig()")
        self._interval = -1
        self._mode = CheckpointingMode.EXACTLY_ONCE
        self._timeout = 600_000
        self._min_pause = 0
        self._max_concurrent = 1
        self._tolerable_failures = 0
        self._retention: ExternalizedCheckpointRetention | None = None
        self._unaligned = False
        self._force_unaligned = False
        self._alignment_timeout = Duration.of_millis(0)
        self._storage: CheckpointStorage | None = None

    def trigger_interval_ms(self) -> int | None:
        """How often a micro-batch (a checkpoint) starts at most: ``max(interval, min
        pause)`` when checkpointing is enabled, else ``None``."""
        if not self.is_checkpointing_enabled():
            return None
        return max(self._interval, self._min_pause)

    def is_checkpointing_enabled(self) -> bool:
        return self._interval > 0

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self._mode

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        if not isinstance(checkpointing_mode, CheckpointingMode):
            raise TypeError(
                "checkpointing_mode must be a CheckpointingMode (EXACTLY_ONCE or "
                f"AT_LEAST_ONCE), got {type(checkpointing_mode).__name__}"
            )
        self._mode = checkpointing_mode
        return self

    def get_checkpoint_interval(self) -> int:
        return self._interval

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        self._interval = _millis(checkpoint_interval, "checkpoint_interval", 10)
        return self

    def get_checkpoint_timeout(self) -> int:
        return self._timeout

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        self._timeout = _millis(checkpoint_timeout, "checkpoint_timeout", 1)
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        return self._min_pause

    def set_min_pause_between_checkpoints(
        self, min_pause_between_checkpoints: int
    ) -> CheckpointConfig:
        self._min_pause = _millis(min_pause_between_checkpoints, "min_pause", 0)
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        return self._max_concurrent

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        self._max_concurrent = _millis(max_concurrent_checkpoints, "max_concurrent", 1)
        return self

    def is_fail_on_checkpointing_errors(self) -> bool:
        return self._tolerable_failures == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        self._tolerable_failures = 0 if fail_on_checkpointing_errors else 2**31 - 1
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self._tolerable_failures

    def set_tolerable_checkpoint_failure_number(
        self, tolerable_checkpoint_failure_number: int
    ) -> CheckpointConfig:
        self._tolerable_failures = _millis(
            tolerable_checkpoint_failure_number, "tolerable_checkpoint_failure_number", 0
        )
        return self

    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        if not isinstance(retention_mode, ExternalizedCheckpointRetention):
            raise TypeError(
                "retention_mode must be an ExternalizedCheckpointRetention, got "
                f"{type(retention_mode).__name__}"
            )
        self._retention = retention_mode
        return self

    def is_externalized_checkpoints_enabled(self) -> bool:
        return self._retention not in (
            None,
            ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS,
        )

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention | None:
        return self._retention

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self._unaligned

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        self._unaligned = bool(enabled)
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        self._alignment_timeout = alignment_timeout
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        return self._alignment_timeout

    set_alignment_timeout = set_aligned_checkpoint_timeout
    get_alignment_timeout = get_aligned_checkpoint_timeout

    def set_force_unaligned_checkpoints(
        self, force_unaligned_checkpoints: bool = True
    ) -> CheckpointConfig:
        self._force_unaligned = bool(force_unaligned_checkpoints)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        return self._force_unaligned

    def set_checkpoint_storage(self, storage: CheckpointStorage) -> CheckpointConfig:
        """Where checkpoints go: its path is the default ``checkpoint_location``."""
        if not isinstance(storage, CheckpointStorage):
            raise TypeError(
                "storage must be a CheckpointStorage (e.g. FileSystemCheckpointStorage(path)), "
                f"got {type(storage).__name__}"
            )
        self._storage = storage
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        return self.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_path))

    def get_checkpoint_storage(self) -> CheckpointStorage | None:
        return self._storage

    def checkpoint_location(self, given: str | None = None) -> str | None:
        """Where a streaming job keeps its checkpoints: ``given`` (``execute(
        checkpoint_location=...)``), else the path of the checkpoint storage
        (:meth:`set_checkpoint_storage`, ``execution.checkpointing.dir``), else ``None``.

        >>> config = CheckpointConfig().set_checkpoint_storage_dir("/tmp/ckpt")
        >>> config.checkpoint_location(), config.checkpoint_location("/elsewhere")
        ('/tmp/ckpt', '/elsewhere')
        """
        if given is not None:
            return given
        storage = self._storage
        return None if storage is None else storage.get_checkpoint_path()
