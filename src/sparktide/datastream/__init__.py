"""The DataStream API, with PyFlink's names (``pyflink.datastream`` → ``sparktide.datastream``)."""

from sparktide.datastream.functions import (
    AggregateFunction,
    Function,
    KeyedProcessFunction,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
)
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.timerservice import TimeDomain, TimerService

__all__ = [
    "AggregateFunction",
    "Function",
    "KeyedProcessFunction",
    "OutputTag",
    "ProcessFunction",
    "ReduceFunction",
    "RuntimeContext",
    "TimeDomain",
    "TimerService",
]
