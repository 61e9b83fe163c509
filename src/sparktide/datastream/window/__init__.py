"""Windows with PyFlink's names (``pyflink.datastream.window`` → ``sparktide.datastream.window``):
windows, assigners, triggers, evictors and window functions, plus :class:`Agg`, the built-in
aggregates of ``WindowedStream.agg(...)``.

>>> from sparktide.datastream.window import TumblingEventTimeWindows, TimeWindow
>>> TumblingEventTimeWindows.of(10).assign_windows("x", 23, None)
(TimeWindow(start=20, end=30),)
"""

from sparktide.common.not_provided import module_getattr
from sparktide.core.window.aggregates import Agg
from sparktide.core.window.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    WindowStagger,
)
from sparktide.core.window.evictors import (
    CountEvictor,
    DeltaEvictor,
    DeltaFunction,
    Evictor,
    TimeEvictor,
    TimestampedValue,
)
from sparktide.core.window.functions import (
    AllWindowFunction,
    KeyedStateStore,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from sparktide.core.window.global_windows import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    GlobalWindows,
)
from sparktide.core.window.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from sparktide.core.window.windows import CountWindow, GlobalWindow, TimeWindow, Window

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = [
    "Agg",
    "AllWindowFunction",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountEvictor",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "DeltaEvictor",
    "DeltaFunction",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "Evictor",
    "GlobalWindow",
    "GlobalWindows",
    "KeyedStateStore",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessAllWindowFunction",
    "ProcessWindowFunction",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeEvictor",
    "TimeWindow",
    "TimestampedValue",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowStagger",
]
