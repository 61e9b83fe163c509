"""The timer service and time domains (PyFlink's ``pyflink.datastream.timerservice``).

Defined in :mod:`sparktide.core.timerservice` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TimeDomain.EVENT_TIME.name
'EVENT_TIME'
"""

from sparktide.core.timerservice import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.timerservice import __all__ as __all__
