"""Job-wide settings (``env.get_config()``, PyFlink's ``ExecutionConfig``) and the restart
strategies PyFlink configures there.

>>> config = ExecutionConfig().set_auto_watermark_interval(50)
>>> config.get_auto_watermark_interval()
50
>>> config.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))
ExecutionConfig(auto_watermark_interval=50)
>>> config.get_restart_strategy()
FixedDelayRestartStrategyConfiguration(restart_attempts=3, delay_between_attempts=1000)

Restart strategies are recorded and have no other effect: a failed Spark task is retried by
Spark (``spark.task.maxFailures``), and a failed streaming job restarts from its checkpoint
when it is started again.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from sparktide.common.configuration import Configuration

__all__ = [
    "ExecutionConfig",
    "InputDependencyConstraint",
    "RestartStrategies",
    "RestartStrategyConfiguration",
]


class InputDependencyConstraint(Enum):
    """Flink's (deprecated) scheduling constraint of batch inputs; recorded, no effect here."""

    ANY = 0
    ALL = 1


class RestartStrategyConfiguration:
    """What to do when a job fails (see the module docstring: recorded only)."""

    def get_description(self) -> str:
        return type(self).__name__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class RestartStrategies:
    """Builds restart strategy configurations (PyFlink's names)."""

    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        def get_description(self) -> str:
            return "Restart deactivated."

    class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self, restart_attempts: int, delay_between_attempts: int) -> None:
            _check_non_negative(restart_attempts=restart_attempts)
            _check_non_negative(delay_between_attempts=delay_between_attempts)
            self.restart_attempts = restart_attempts
            self.delay_between_attempts = delay_between_attempts

        def get_restart_attempts(self) -> int:
            return self.restart_attempts

        def get_delay_between_attempts(self) -> int:
            return self.delay_between_attempts

    class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self, failure_rate: int, failure_interval: int, delay_interval: int) -> None:
            _check_non_negative(failure_rate=failure_rate)
            _check_non_negative(failure_interval=failure_interval)
            _check_non_negative(delay_interval=delay_interval)
            self.failure_rate = failure_rate
            self.failure_interval = failure_interval
            self.delay_interval = delay_interval

        def get_max_failure_rate(self) -> int:
            return self.failure_rate

        def get_failure_interval(self) -> int:
            return self.failure_interval

        def get_delay_between_attempts_interval(self) -> int:
            return self.delay_interval

    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        pass

    @staticmethod
    def no_restart() -> RestartStrategies.NoRestartStrategyConfiguration:
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> RestartStrategies.FallbackRestartStrategyConfiguration:
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: int
    ) -> RestartStrategies.FixedDelayRestartStrategyConfiguration:
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(
            restart_attempts, delay_between_attempts
        )

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: int, delay_interval: int
    ) -> RestartStrategies.FailureRateRestartStrategyConfiguration:
        return RestartStrategies.FailureRateRestartStrategyConfiguration(
            failure_rate, failure_interval, delay_interval
        )


def _check_non_negative(**value: int) -> None:
    ((name, number),) = value.items()
    if type(number) is not int or number < 0:
        raise ValueError(f"{name} must be an int >= 0, got {number!r}")


class ExecutionConfig:
    """Job-wide settings (``env.get_config()``)."""

    def __init__(self) -> None:
        self._auto_watermark_interval = 200
        self._watermark_every: int | None = None
        self._simulated_clock: tuple[int, int | None] | None = None
        self._job_parameters: dict[str, str] = {}
        self._progress_listener: Any = None
        self._task_buffer: int | None = None
        self._restart_strategy: RestartStrategyConfiguration | None = None
        self._configuration = Configuration()

    def __repr__(self) -> str:
        return f"ExecutionConfig(auto_watermark_interval={self._auto_watermark_interval})"

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> ExecutionConfig:
        """Record a restart strategy (no effect: see the module docstring)."""
        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise TypeError(
                "restart_strategy_configuration must come from RestartStrategies (e.g. "
                "RestartStrategies.fixed_delay_restart(3, 1000)), got "
                f"{type(restart_strategy_configuration).__name__}"
            )
        self._restart_strategy = restart_strategy_configuration
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration | None:
        return self._restart_strategy

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Periodic watermark interval in ms of processing time (0 disables; default 200)."""
        if type(interval) is not int or interval < 0:
            raise ValueError(f"interval must be an int >= 0 (ms), got {interval!r}")
        self._auto_watermark_interval = interval
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._auto_watermark_interval

    def set_watermark_every(self, records: int | None) -> ExecutionConfig:
        """End a round (and emit periodic watermarks) every ``records`` records per split.

        A bounded job is otherwise one round: its watermarks advance only at the end of input.
        Rounds make the output deterministic at any parallelism (see docs/architecture.md).
        """
        if records is not None and (type(records) is not int or records < 1):
            raise ValueError(f"records must be an int >= 1 or None, got {records!r}")
        self._watermark_every = records
        return self

    def get_watermark_every(self) -> int | None:
        return self._watermark_every

    def set_task_buffer(self, entries: int | None) -> ExecutionConfig:
        """Bound what a task holds: a split reads, and a stage subtask (on Spark, also a
        streaming micro-batch) processes and ships, at most about ``entries`` exchanged
        entries at a time, whatever the round or batch size. ``None``: the runner's default
        (65,536 on the local runtime; 16,384 on Spark, where every task runs in a Python worker
        of its own). Smaller uses less memory per worker and ships more, smaller chunks.

        >>> ExecutionConfig().set_task_buffer(10_000).get_task_buffer()
        10000
        """
        if entries is not None and (type(entries) is not int or entries < 1):
            raise ValueError(f"entries must be an int >= 1 or None, got {entries!r}")
        self._task_buffer = entries
        return self

    def get_task_buffer(self) -> int | None:
        return self._task_buffer

    def use_simulated_processing_time(
        self, start: int = 0, advance_per_round: int | None = None
    ) -> ExecutionConfig:
        """Run processing time on a simulated clock: ``start`` ms, advancing each round by
        ``advance_per_round`` ms (default: the auto-watermark interval). Processing-time timers
        then fire deterministically at round boundaries."""
        if type(start) is not int:
            raise TypeError(f"start must be an int (ms), got {type(start).__name__}")
        if advance_per_round is not None and (
            type(advance_per_round) is not int or advance_per_round < 0
        ):
            raise ValueError(f"advance_per_round must be an int >= 0, got {advance_per_round!r}")
        self._simulated_clock = (start, advance_per_round)
        return self

    def use_system_processing_time(self) -> ExecutionConfig:
        self._simulated_clock = None
        return self

    def get_simulated_processing_time(self) -> tuple[int, int] | None:
        if self._simulated_clock is None:
            return None
        start, step = self._simulated_clock
        return start, self._auto_watermark_interval if step is None else step

    def set_global_job_parameters(self, params: dict[str, str]) -> ExecutionConfig:
        self._job_parameters = dict(params)
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._job_parameters)

    def set_progress_listener(self, listener: Any) -> ExecutionConfig:
        """Call ``listener(done, total)`` as a job runs on Spark: completed and total Spark
        tasks (source splits and stage subtasks), from Spark's status tracker, whenever they
        change. The local runtime runs in the caller's thread and does not call it (a source
        can report its own progress there). ``None`` removes it."""
        if listener is not None and not callable(listener):
            raise TypeError(
                "listener must be a callable taking (done, total) or None, got "
                f"{type(listener).__name__}"
            )
        self._progress_listener = listener
        return self

    def get_progress_listener(self) -> Any:
        return self._progress_listener

    def get_configuration(self) -> Configuration:
        """sparktide's execution options of the job (``sparktide.execution.*``, e.g.
        :data:`~sparktide.common.config_options.COLUMNAR_EXECUTION`), as Flink's job
        configuration: ``env.configure({...})`` sets them, or ``set_string`` on this object.

        >>> config = ExecutionConfig()
        >>> _ = config.get_configuration().set_string("sparktide.execution.columnar", "off")
        >>> config.get_configuration().to_dict()
        {'sparktide.execution.columnar': 'off'}
        """
        return self._configuration

    def enable_object_reuse(self) -> ExecutionConfig:
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        return self

    def is_object_reuse_enabled(self) -> bool:
        """Records are never reused between calls here (each is a Python object)."""
        return False
