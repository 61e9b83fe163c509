"""Ready-made process functions from Flink's SQL runtime, written on the public API."""

from sparktide.recipes.deduplicate import ProcTimeDeduplicateKeepLastRowFunction
from sparktide.recipes.over_aggregate import (
    CountAggregate,
    ProcTimeRangeBoundedPrecedingFunction,
    RetractableAggregate,
    SumAggregate,
)

__all__ = [
    "CountAggregate",
    "ProcTimeDeduplicateKeepLastRowFunction",
    "ProcTimeRangeBoundedPrecedingFunction",
    "RetractableAggregate",
    "SumAggregate",
]
