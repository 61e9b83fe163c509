"""The DataStream API, with PyFlink's names (``pyflink.datastream`` → ``sparktide.datastream``)."""

import importlib
from typing import Any

from sparktide.datastream.failed_records import FailedRecord
from sparktide.datastream.functions import (
    AggregateFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
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
    "AsyncDataStream": "sparktide.datastream.async_data_stream",
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
    "RuntimeExecutionMode": "sparktide.datastream.execution_mode",
    "StreamExecutionEnvironment": "sparktide.datastream.environment",
    # checkpointing, state backends, slot sharing, partitioners (PyFlink's top-level names)
    "CheckpointConfig": "sparktide.datastream.checkpoint_config",
    "CheckpointStorage": "sparktide.datastream.checkpoint_config",
    "CheckpointingMode": "sparktide.datastream.checkpoint_config",
    "CustomCheckpointStorage": "sparktide.datastream.checkpoint_config",
    "ExternalizedCheckpointRetention": "sparktide.datastream.checkpoint_config",
    "FileSystemCheckpointStorage": "sparktide.datastream.checkpoint_config",
    "JobManagerCheckpointStorage": "sparktide.datastream.checkpoint_config",
    "CustomStateBackend": "sparktide.datastream.state_backend",
    "EmbeddedRocksDBStateBackend": "sparktide.datastream.state_backend",
    "HashMapStateBackend": "sparktide.datastream.state_backend",
    "PredefinedOptions": "sparktide.datastream.state_backend",
    "StateBackend": "sparktide.datastream.state_backend",
    "MemorySize": "sparktide.datastream.slot_sharing_group",
    "SlotSharingGroup": "sparktide.datastream.slot_sharing_group",
    "Partitioner": "sparktide.datastream.partitioner",
    "SourceFunction": "sparktide.core.source",
    # when a streaming job's micro-batches start (execute(..., trigger=...))
    "StreamTrigger": "sparktide.common.stream_trigger",
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
    "AsyncDataStream",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CheckpointConfig",
    "CheckpointStorage",
    "CheckpointingMode",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoGroupedStreams",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "CustomCheckpointStorage",
    "CustomStateBackend",
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExecutionConfig",
    "ExternalizedCheckpointRetention",
    "FailedRecord",
    "FileSystemCheckpointStorage",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "GlobalWindow",
    "HashMapStateBackend",
    "IntervalJoin",
    "IntervalJoined",
    "JobExecutionResult",
    "JobManagerCheckpointStorage",
    "JoinFunction",
    "JoinedStreams",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MemorySize",
    "MergingWindowAssigner",
    "OutputTag",
    "Partitioner",
    "PredefinedOptions",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "SlotSharingGroup",
    "SourceFunction",
    "StateBackend",
    "StreamExecutionEnvironment",
    "StreamTrigger",
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
