"""Window assigners (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.assigners` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TumblingEventTimeWindows.of(10).assign_windows("x", 23, None)
(TimeWindow(start=20, end=30),)
"""

from sparktide.core.window.assigners import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.assigners import __all__ as __all__
