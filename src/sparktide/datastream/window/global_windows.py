"""Assigners of global and count windows (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.global_windows` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> GlobalWindows.create().get_default_trigger()
NeverTrigger()
"""

from sparktide.core.window.global_windows import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.global_windows import __all__ as __all__
