"""A bounded source of the rows of an Arrow table, in contiguous splits.

>>> import pyarrow as pa
>>> from sparktide.common.typeinfo import Types
>>> table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
>>> source = TableSource(table, Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()]), 2)
>>> [list(source.read_split(s)) for s in source.get_splits()]
[[Row(a=1, b='x'), Row(a=2, b='y')], [Row(a=3, b='z')]]
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from sparktide.common.arrow_rows import BatchRows, RecordChunks, batch_rows
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.core.source import Source, SourceSplit, range_splits

__all__ = ["TableSource"]

_BATCH = 8_192


class TableSource(Source):
    """The rows of ``table`` as named :class:`Row` records typed ``type_info``, read in
    ``splits`` contiguous splits (sizes differ by at most one row)."""

    def __init__(self, table: pa.Table, type_info: TypeInformation, splits: int = 1) -> None:
        if type(splits) is not int or splits < 1:
            raise ValueError(
                f"splits must be an int >= 1, got {splits!r}; pass how many source splits "
                "to read the table in"
            )
        self.table = table
        self.type_info = type_info
        self.splits = splits

    def get_splits(self) -> list[SourceSplit]:
        return range_splits(0, self.table.num_rows, self.splits)

    def read_split(self, split: SourceSplit) -> RecordChunks:
        """The rows of ``split``, a chunk per Arrow batch (:class:`RecordChunks`)."""
        return RecordChunks(self._chunks(split))

    def _chunks(self, split: SourceSplit) -> Iterator[BatchRows]:
        first, stop = split.payload
        names = self.table.column_names
        for batch in self.table.slice(first, stop - first).to_batches(_BATCH):
            yield batch_rows(batch, names)

    def __repr__(self) -> str:
        return f"TableSource({self.table.num_rows} rows, splits={self.splits})"
