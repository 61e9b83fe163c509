"""Common types shared by every API, with PyFlink's names (``pyflink.common`` →
``sparktide.common``): time spans, type information, rows, the watermark strategy, the
configuration, (de)serialization schemas and what describes a job and its result."""

from sparktide.common.config_options import ConfigOption, ConfigOptions
from sparktide.common.configuration import Configuration
from sparktide.common.execution_config import (
    ExecutionConfig,
    InputDependencyConstraint,
    RestartStrategies,
    RestartStrategyConfiguration,
)
from sparktide.common.job import (
    CompletableFuture,
    JobClient,
    JobExecutionResult,
    JobID,
    JobStatus,
)
from sparktide.common.not_provided import module_getattr
from sparktide.common.row_kind import RowKind
from sparktide.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
    TypeSerializer,
)
from sparktide.common.time import Duration, Instant, Time
from sparktide.common.typeinfo import TypeInformation, Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import (
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = [
    "ByteArraySchema",
    "CompletableFuture",
    "ConfigOption",
    "ConfigOptions",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "InputDependencyConstraint",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "TypeSerializer",
    "Types",
    "WatermarkGenerator",
    "WatermarkStrategy",
]
