"""Sources (PyFlink's ``SourceFunction``, and split-aware bounded sources).

The contracts (:class:`Source`, :class:`SourceSplit`, :class:`SourceFunction`,
:class:`SourceContext`) live in :mod:`sparktide.core.source`; the runtime's readers
(:class:`SplitReader`, :class:`SourceFunctionDriver`) in :mod:`sparktide.runtime.source_reader`.
This module adds the ready-made bounded sources and keeps every name at its PyFlink-style path.

>>> from sparktide.common.watermark_strategy import WatermarkStrategy
>>> from sparktide.runtime.output import CollectingOutput
>>> source = CollectionSource([("a", 1), ("b", 5), ("c", 3), ("d", 9)], num_splits=2)
>>> strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
...     lambda value, _: value[1]
... )
>>> out = CollectingOutput()
>>> for split in source.get_splits():
...     reader = SplitReader(source.read_split(split), strategy, None, out)
...     reader.read_up_to(10)
...     reader.emit_periodic()  # the end of a round
...     reader.finish()  # the split is exhausted
2
2
>>> out.elements[:4]
[StreamRecord(('a', 1), 1), StreamRecord(('b', 5), 5), Watermark(4), \
Watermark(9223372036854775807)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from sparktide.common.arrow_rows import RecordChunks
from sparktide.core.source import (
    Source,
    SourceContext,
    SourceFunction,
    SourceSplit,
    range_splits,
)
from sparktide.runtime.source_reader import SourceFunctionDriver, SplitReader

__all__ = [
    "CollectionSource",
    "GeneratorSource",
    "Source",
    "SourceContext",
    "SourceFunction",
    "SourceFunctionDriver",
    "SourceSplit",
    "SplitReader",
]


def _check_num_splits(num_splits: Any) -> int:
    if type(num_splits) is not int:
        raise TypeError(
            f"num_splits must be an int, got {type(num_splits).__name__} ({num_splits!r})"
        )
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    return num_splits


class CollectionSource(Source):
    """The values of a collection, cut into ``num_splits`` contiguous chunks.

    Chunk sizes differ by at most one (the first ``len % num_splits`` chunks are one longer);
    with more splits than values some splits are empty. Split ids are ``"0"``, ``"1"``, ...

    >>> src = CollectionSource(range(5), num_splits=2)
    >>> [(s.split_id, list(src.read_split(s))) for s in src.get_splits()]
    [('0', [0, 1, 2]), ('1', [3, 4])]
    """

    def __init__(self, values: Iterable[Any], num_splits: int = 1) -> None:
        self.values: Sequence[Any] = list(values)
        self.num_splits = _check_num_splits(num_splits)

    def get_splits(self) -> list[SourceSplit]:
        return range_splits(0, len(self.values), self.num_splits)

    def read_split(self, split: SourceSplit) -> Iterable[Any]:
        """The values of ``split``, as one chunk (:class:`~sparktide.common.arrow_rows.
        RecordChunks`: a reader may hand them on together)."""
        start, end = split.payload
        values = self.values[start:end]  # a copy
        return RecordChunks([values if isinstance(values, list) else list(values)])

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.values)} values, num_splits={self.num_splits})"


class GeneratorSource(Source):
    """Records produced by ``fn(split_index)`` for each of ``num_splits`` splits.

    ``fn`` must return an iterable and be deterministic (a replay must yield the same records).

    >>> src = GeneratorSource(lambda i: range(i * 10, i * 10 + 2), num_splits=2)
    >>> [list(src.read_split(s)) for s in src.get_splits()]
    [[0, 1], [10, 11]]
    """

    def __init__(self, fn: Callable[[int], Iterable[Any]], num_splits: int = 1) -> None:
        if not callable(fn):
            raise TypeError(
                f"fn must be a callable split_index -> iterable of records, got {type(fn).__name__}"
            )
        self.fn = fn
        self.num_splits = _check_num_splits(num_splits)

    def get_splits(self) -> list[SourceSplit]:
        return [SourceSplit(str(i), i) for i in range(self.num_splits)]

    def read_split(self, split: SourceSplit) -> Iterator[Any]:
        records = self.fn(split.payload)
        try:
            return iter(records)
        except TypeError:
            raise TypeError(
                f"fn({split.payload}) must return an iterable of records, got "
                f"{type(records).__name__}"
            ) from None

    def __repr__(self) -> str:
        return f"GeneratorSource({self.fn!r}, num_splits={self.num_splits})"
