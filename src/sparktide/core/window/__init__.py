"""Window contracts: windows, assigners, triggers, evictors and window functions (one module
each). Programs import them from :mod:`sparktide.datastream.window`.

>>> from sparktide.core.window.assigners import TumblingEventTimeWindows
>>> TumblingEventTimeWindows.of(10).assign_windows("x", 23, None)
(TimeWindow(start=20, end=30),)
"""
