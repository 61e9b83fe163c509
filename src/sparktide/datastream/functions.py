"""User functions with PyFlink's names (``pyflink.datastream.functions``).

Defined in :mod:`sparktide.core.functions` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> class Double(MapFunction):
...     def map(self, value):
...         return value * 2
>>> Double().map(21)
42
"""

from sparktide.core.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoGroupFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    JoinFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeyedStateStore,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ProcessJoinFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
)

__all__ = [
    "AggregateFunction",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "JoinFunction",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
]
