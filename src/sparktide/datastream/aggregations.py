"""``sum``/``min``/``max``/``min_by``/``max_by`` over a field, as PyFlink defines them (the
reduce function lives in :mod:`sparktide.core.window.field_aggregator`).

>>> FieldAggregator(1, "sum").reduce(("a", 1), ("a", 2))
('a', 3)
"""

from sparktide.core.window.field_aggregator import KINDS, FieldAggregator

__all__ = ["KINDS", "FieldAggregator"]
