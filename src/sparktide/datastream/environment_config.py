"""The Flink configuration keys an environment takes (``get_execution_environment(config)``
or ``env.configure(config)``), besides the state backend keys of
:func:`sparktide.core.state_backend.state_backend_from_config`:

==================================================== ==========================================
key                                                  effect
==================================================== ==========================================
``parallelism.default``                              ``set_parallelism``
``pipeline.max-parallelism``                         ``set_max_parallelism``
``execution.runtime-mode``                           ``set_runtime_mode`` (STREAMING, BATCH,
                                                     AUTOMATIC)
``pipeline.auto-watermark-interval``                 ``get_config().set_auto_watermark_interval``
``execution.checkpointing.interval``                 ``enable_checkpointing``
``execution.checkpointing.mode``                     ``CheckpointConfig.set_checkpointing_mode``
``execution.checkpointing.timeout``                  ``...set_checkpoint_timeout``
``execution.checkpointing.min-pause``                ``...set_min_pause_between_checkpoints``
``execution.checkpointing.max-concurrent-checkpoints`` ``...set_max_concurrent_checkpoints``
``execution.checkpointing.externalized-checkpoint-   ``...set_externalized_checkpoint_retention``
retention``
``execution.checkpointing.dir``,                     ``...set_checkpoint_storage_dir``: the
``state.checkpoints.dir``                            default ``checkpoint_location``
``python.executable``                                ``set_python_executable``
``python.files`` (``;``-separated)                   ``add_python_file`` for each
``python.archives`` (``path#dir;...``)               ``add_python_archive`` for each
``python.requirements`` (``file#cache_dir``)         ``set_python_requirements``
``sparktide.execution.columnar``                     the job's execution path on Spark: ``auto``,
                                                     ``python`` or ``off``
``sparktide.execution.window-fast-path``             window operators' fast path: ``true`` or
                                                     ``false``
==================================================== ==========================================

The ``sparktide.execution.*`` options go to ``get_config().get_configuration()`` (checked
now), where the job's path choice reads them (:mod:`sparktide.runtime.execution.path`; see
docs/architecture.md, "Execution paths").

Durations are Flink's: ``"200"`` or ``"200 ms"``, ``"5 s"``, ``"1 min"``, ``"2 h"``.

>>> parse_duration_ms("pipeline.auto-watermark-interval", "5 s")
5000
>>> parse_duration_ms("x", "soon")
Traceback (most recent call last):
...
ValueError: configuration key 'x': 'soon' is no duration; write e.g. '200 ms', '5 s' or '1 min'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING

from sparktide.common.config_options import (
    CHUNKED_RECORDS,
    COLUMNAR_EXECUTION,
    MAP_BATCHES_SIZE,
    STREAM_SINKS_ONE_PASS,
    WINDOW_FAST_PATH,
    ConfigOption,
)
from sparktide.common.configuration import Configuration
from sparktide.datastream.checkpoint_config import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from sparktide.datastream.execution_mode import RuntimeExecutionMode

if TYPE_CHECKING:
    from sparktide.datastream.environment import StreamExecutionEnvironment

__all__ = ["apply_configuration", "parse_duration_ms"]

_UNITS = {
    "": 1,
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}
EXECUTION_PREFIX = "sparktide.execution."
EXECUTION_OPTIONS: Mapping[str, ConfigOption[object]] = MappingProxyType(
    {
        o.key(): o  # type: ignore[misc]
        for o in (
            COLUMNAR_EXECUTION,
            WINDOW_FAST_PATH,
            MAP_BATCHES_SIZE,
            CHUNKED_RECORDS,
            STREAM_SINKS_ONE_PASS,
        )
    }
)
"""sparktide's execution options, by key."""

_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


def parse_duration_ms(key: str, value: object) -> int:
    match = _DURATION.match(str(value).lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(
            f"configuration key {key!r}: {value!r} is no duration; write e.g. '200 ms', '5 s' or "
            "'1 min'"
        )
    return int(match.group(1)) * _UNITS[match.group(2)]


def _enum(key: str, value: object, enum: type[Enum]) -> object:
    name = str(value).strip().upper().replace("-", "_")
    try:
        return enum[name]
    except KeyError:
        choices = [m.name for m in enum]
        raise ValueError(
            f"configuration key {key!r} must be one of {choices}, got {value!r}"
        ) from None


def _int(key: str, value: object) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"configuration key {key!r} must be an integer, got {value!r}") from None


def apply_configuration(env: StreamExecutionEnvironment, options: Mapping[str, object]) -> None:
    """Apply the keys of the table above that ``options`` holds to ``env``."""
    config = Configuration.from_dict(options)
    get = config.to_dict()
    if "parallelism.default" in get:
        env.set_parallelism(_int("parallelism.default", get["parallelism.default"]))
    if "pipeline.max-parallelism" in get:
        env.set_max_parallelism(_int("pipeline.max-parallelism", get["pipeline.max-parallelism"]))
    if "execution.runtime-mode" in get:
        mode = _enum("execution.runtime-mode", get["execution.runtime-mode"], RuntimeExecutionMode)
        env.set_runtime_mode(mode)  # type: ignore[arg-type]
    key = "pipeline.auto-watermark-interval"
    if key in get:
        env.get_config().set_auto_watermark_interval(parse_duration_ms(key, get[key]))
    checkpoints = env.get_checkpoint_config()
    prefix = "execution.checkpointing."
    if prefix + "interval" in get:
        checkpoints.set_checkpoint_interval(
            parse_duration_ms(prefix + "interval", get[prefix + "interval"])
        )
    if prefix + "mode" in get:
        mode = _enum(prefix + "mode", get[prefix + "mode"], CheckpointingMode)
        checkpoints.set_checkpointing_mode(mode)  # type: ignore[arg-type]
    if prefix + "timeout" in get:
        checkpoints.set_checkpoint_timeout(
            parse_duration_ms(prefix + "timeout", get[prefix + "timeout"])
        )
    if prefix + "min-pause" in get:
        checkpoints.set_min_pause_between_checkpoints(
            parse_duration_ms(prefix + "min-pause", get[prefix + "min-pause"])
        )
    key = prefix + "max-concurrent-checkpoints"
    if key in get:
        checkpoints.set_max_concurrent_checkpoints(_int(key, get[key]))
    key = prefix + "externalized-checkpoint-retention"
    if key in get:
        retention = _enum(key, get[key], ExternalizedCheckpointRetention)
        checkpoints.set_externalized_checkpoint_retention(retention)  # type: ignore[arg-type]
    for key in (prefix + "dir", "state.checkpoints.dir"):
        if key in get:
            checkpoints.set_checkpoint_storage_dir(get[key])
    if "python.executable" in get:
        env.set_python_executable(get["python.executable"])
    for path in Configuration.parse_list_value(get.get("python.files", "")):
        env.add_python_file(path)
    for item in Configuration.parse_list_value(get.get("python.archives", "")):
        path, _, target = item.partition("#")
        env.add_python_archive(path, target or None)
    if "python.requirements" in get:
        path, _, cache = get["python.requirements"].partition("#")
        env.set_python_requirements(path, cache or None)
    _apply_execution_options(env, get)


def _apply_execution_options(env: StreamExecutionEnvironment, get: Mapping[str, str]) -> None:
    """The ``sparktide.execution.*`` options of ``get``, checked, into the job's configuration."""
    chosen = {k: v for k, v in get.items() if k.startswith(EXECUTION_PREFIX)}
    if not chosen:
        return
    unknown = sorted(set(chosen) - set(EXECUTION_OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown configuration key(s) {unknown}; the {EXECUTION_PREFIX}* options are "
            f"{sorted(EXECUTION_OPTIONS)}"
        )
    for key, value in chosen.items():
        EXECUTION_OPTIONS[key].read({key: value})  # an invalid value fails here, naming the key
        env.get_config().get_configuration().set_string(key, value)
