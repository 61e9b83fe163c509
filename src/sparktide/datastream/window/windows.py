"""Windows (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.windows` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TimeWindow(0, 10).max_timestamp()
9
"""

from sparktide.core.window.windows import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.windows import __all__ as __all__
