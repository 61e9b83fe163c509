"""PyFlink's ``NumberSequenceSource``: the longs ``start, start + 1, ..., end`` (both included).

The range is cut into ``num_splits`` contiguous splits (sizes differ by at most one), each
generated as it is read, never materialized: a split of 10^12 numbers costs what a ``range``
costs. The records are typed ``Types.LONG()``. Split ids are ``"0"``, ``"1"``, ...; the output of
a job is the same at any parallelism, on the local runtime and on Spark (each split is read in
order, as every split is).

>>> from sparktide.common.watermark_strategy import WatermarkStrategy
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment()
>>> numbers = env.from_source(
...     NumberSequenceSource(1, 5), WatermarkStrategy.no_watermarks(), "numbers"
... )
>>> list(numbers.map(lambda n: n * n).execute_and_collect())
[1, 4, 9, 16, 25]
>>> src = NumberSequenceSource(0, 10**12, num_splits=3)
>>> [s.payload for s in src.get_splits()]
[(0, 333333333334), (333333333334, 666666666668), (666666666668, 1000000000001)]
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterator

from sparktide.common.typeinfo import Types
from sparktide.core.source import Source, SourceSplit, range_splits

__all__ = ["NumberSequenceSource"]

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _long(value: object, name: str) -> int:
    if type(value) is not int:
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} ({reprlib.repr(value)}); "
            "pass a whole number"
        )
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(
            f"{name} must fit a Java long [{_LONG_MIN}, {_LONG_MAX}], got {value}; the "
            "sequence is of longs, as in Flink"
        )
    return value


class NumberSequenceSource(Source):
    """The numbers from ``start`` to ``end``, both included, in ``num_splits`` splits.

    >>> NumberSequenceSource(5, 3)
    Traceback (most recent call last):
    ...
    ValueError: start must be <= end, got start=5 > end=3; swap them, or use start == end for \
one number
    """

    def __init__(self, start: int, end: int, *, num_splits: int = 1) -> None:
        self.start = _long(start, "start")
        self.end = _long(end, "end")
        if self.start > self.end:
            raise ValueError(
                f"start must be <= end, got start={start} > end={end}; swap them, or use "
                "start == end for one number"
            )
        if type(num_splits) is not int or num_splits < 1:
            raise ValueError(
                f"num_splits must be an int >= 1, got {reprlib.repr(num_splits)}; pass how many "
                "splits (each with its own watermark generator) to read the range in"
            )
        self.num_splits = num_splits
        self.type_info = Types.LONG()

    def get_from(self) -> int:
        """The first number (Flink's ``getFrom``)."""
        return self.start

    def get_to(self) -> int:
        """The last number (Flink's ``getTo``)."""
        return self.end

    def get_splits(self) -> list[SourceSplit]:
        return range_splits(self.start, self.end - self.start + 1, self.num_splits)

    def read_split(self, split: SourceSplit) -> Iterator[int]:
        first, stop = split.payload
        return iter(range(first, stop))

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end}, num_splits={self.num_splits})"
