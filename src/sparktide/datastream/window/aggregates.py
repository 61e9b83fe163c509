"""Built-in window aggregates (see :mod:`sparktide.datastream.window`): ``Agg`` for
``WindowedStream.agg(...)``.

Defined in :mod:`sparktide.core.window.aggregates` and re-exported here, next to the other
window contracts.

>>> Agg.count(), Agg.sum("price")
(Agg.count(), Agg.sum('price'))
"""

from sparktide.core.window.aggregates import *  # noqa: F403  (the same objects, one path up)
from sparktide.core.window.aggregates import __all__ as __all__
