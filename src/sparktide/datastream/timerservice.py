"""The timer service and time domains (PyFlink's ``pyflink.datastream.timerservice``).

Defined in :mod:`sparktide.core.timerservice` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TimeDomain.EVENT_TIME.name
'EVENT_TIME'
"""

from sparktide.core.timerservice import TimeDomain, TimerService

__all__ = ["TimeDomain", "TimerService"]
