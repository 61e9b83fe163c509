"""Window functions (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.functions` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> issubclass(ProcessWindowFunction, WindowFunction)
False
"""

from sparktide.core.window.functions import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.functions import __all__ as __all__
