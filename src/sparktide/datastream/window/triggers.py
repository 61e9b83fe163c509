"""Triggers (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.triggers` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TriggerResult.FIRE.is_fire()
True
"""

from sparktide.core.window.triggers import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.window.triggers import __all__ as __all__
