"""User functions with PyFlink's names (``pyflink.datastream.functions``).

Defined in :mod:`sparktide.core.functions` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> class Double(MapFunction):
...     def map(self, value):
...         return value * 2
>>> Double().map(21)
42
"""

# async I/O (PyFlink keeps these in pyflink.datastream.functions too)
from sparktide.core.async_function import (
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
)
from sparktide.core.functions import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.functions import __all__ as __all__

__all__ = [
    *__all__,
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
]
