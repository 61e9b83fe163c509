"""Keyed state with PyFlink's names (``pyflink.datastream.state``): state interfaces,
descriptors and ``StateTtlConfig``.

Defined in :mod:`sparktide.core.state` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> from sparktide.common.typeinfo import Types
>>> ValueStateDescriptor("count", Types.LONG()).get_name()
'count'
"""

from sparktide.core.broadcast import BroadcastState, OperatorStateStore, ReadOnlyBroadcastState
from sparktide.core.state import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.state import __all__ as _state_all

__all__ = [*_state_all, "BroadcastState", "OperatorStateStore", "ReadOnlyBroadcastState"]
