"""User functions with PyFlink's names (``pyflink.datastream.functions``).

Defined in :mod:`sparktide.core.functions` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> class Double(MapFunction):
...     def map(self, value):
...         return value * 2
>>> Double().map(21)
42
"""

# async I/O and broadcast state (PyFlink keeps these in pyflink.datastream.functions too)
from sparktide.core.async_function import (
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
)
from sparktide.core.broadcast import (
    BaseBroadcastProcessFunction,
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
)
from sparktide.core.functions import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.functions import __all__ as _core_names
from sparktide.core.source import SourceFunction
from sparktide.core.timerservice import TimerService
from sparktide.datastream.partitioner import Partitioner
from sparktide.datastream.window import (
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)

__all__ = [
    *_core_names,
    "AllWindowFunction",
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "KeyedBroadcastProcessFunction",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessWindowFunction",
    "SourceFunction",
    "TimerService",
    "WindowFunction",
]
