"""The DataStream API, with PyFlink's names (``pyflink.datastream`` → ``sparktide.datastream``)."""

import importlib
from typing import Any

from sparktide.datastream.failed_records import FailedRecord
from sparktide.datastream.functions import (
    AggregateFunction,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoGroupFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    JoinFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ProcessJoinFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
)
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.timerservice import TimeDomain, TimerService
from sparktide.datastream.window import (
    AllWindowFunction,
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
    WindowFunction,
)

# The stream and environment classes import the runtime, whose operators import the function
# classes above: load them on first use so that either side can be imported first.
_LAZY = {
    "AllWindowedStream": "sparktide.datastream.windowed_stream",
    "WindowedStream": "sparktide.datastream.windowed_stream",
    "CoGroupedStreams": "sparktide.datastream.join",
    "IntervalJoin": "sparktide.datastream.join",
    "IntervalJoined": "sparktide.datastream.join",
    "JoinedStreams": "sparktide.datastream.join",
    "CloseableIterator": "sparktide.datastream.data_stream",
    "ConnectedStreams": "sparktide.datastream.data_stream",
    "BroadcastConnectedStream": "sparktide.datastream.broadcast_stream",
    "BroadcastStream": "sparktide.datastream.broadcast_stream",
    "DataStream": "sparktide.datastream.data_stream",
    "DataStreamSink": "sparktide.datastream.data_stream",
    "KeyedStream": "sparktide.datastream.data_stream",
    "ExecutionConfig": "sparktide.datastream.environment",
    "JobExecutionResult": "sparktide.datastream.environment",
    "RuntimeExecutionMode": "sparktide.datastream.environment",
    "StreamExecutionEnvironment": "sparktide.datastream.environment",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sparktide.datastream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoGroupedStreams",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "ExecutionConfig",
    "FailedRecord",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "GlobalWindow",
    "IntervalJoin",
    "IntervalJoined",
    "JobExecutionResult",
    "JoinFunction",
    "JoinedStreams",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MergingWindowAssigner",
    "OutputTag",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
