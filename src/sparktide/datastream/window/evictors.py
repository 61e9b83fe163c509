"""Evictors (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.evictors` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> CountEvictor.of(2)
CountEvictor(2, do_evict_after=False)
"""

from sparktide.core.window.evictors import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.evictors import __all__ as __all__
