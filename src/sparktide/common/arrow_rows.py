"""Arrow batches to Python records, a batch at a time: the one conversion every Arrow-backed
source uses (the NEXMark table source, the Spark DataFrame source).

A column becomes a Python list once per batch. A dictionary-encoded column decodes its
dictionary once and indexes it (``to_pylist`` on a dictionary array converts every value through
the dictionary: several times slower); integer and float columns without nulls go through
NumPy; zone-aware timestamps become zone-less UTC, structs become rows, maps become dicts.
:class:`RecordChunks` hands a split's records out as one list per batch, which the split reader
takes a chunk at a time (and anything else iterates record by record). A source's chunk is a
:class:`BatchRows`: its rows are built when something first reads them (the split reader builds
them as it takes the chunk, unless its chain starts with a step that takes the columns).

>>> import pyarrow as pa
>>> batch = pa.record_batch({"id": [1, 2], "tag": pa.array(["x", "y"]).dictionary_encode()})
>>> python_column(batch.column("tag")), rows_of_batch(batch, ["tag", "id"])
(['x', 'y'], [Row(tag='x', id=1), Row(tag='y', id=2)])
>>> lazy = batch_rows(batch, ["id"])
>>> len(lazy), lazy.built, list(lazy), lazy.built
(2, False, [Row(id=1), Row(id=2)], True)
>>> chunks = RecordChunks(iter([[1, 2], [3]]))
>>> list(chunks)
[1, 2, 3]
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

import pyarrow as pa

from sparktide.common.types import Row, row_maker

__all__ = [
    "BatchRows",
    "RecordChunks",
    "RowChunk",
    "batch_rows",
    "cut",
    "python_column",
    "rows_of_batch",
]


class RecordChunks:
    """A split's records as chunks (lists, in order): iterating gives the records one by one,
    :meth:`chunks` the lists themselves (one pass either way, whichever is taken first)."""

    __slots__ = ("_chunks",)

    def __init__(self, chunks: Iterable[list[Any] | BatchRows]) -> None:
        self._chunks = chunks

    def chunks(self) -> Iterator[list[Any] | BatchRows]:
        """The chunks, in order (empty ones included)."""
        return iter(self._chunks)

    def __iter__(self) -> Iterator[Any]:
        return chain.from_iterable(self._chunks)


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t))


def python_column(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The Python values of an Arrow column, as a stream holds them."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if pa.types.is_dictionary(t):
        return _decoded(column)
    if _numeric(t) and column.null_count == 0:
        return column.to_numpy().tolist()  # type: ignore[no-any-return]
    if pa.types.is_timestamp(t) and t.tz is not None:
        column = column.cast(pa.timestamp(t.unit))
    values: list[Any] = column.to_pylist()
    if pa.types.is_struct(t) or pa.types.is_map(t) or pa.types.is_list(t):
        return [_python_value(v, t) for v in values]
    return values


def _decoded(column: pa.DictionaryArray) -> list[Any]:
    """A dictionary column: the dictionary converted once, then indexed."""
    dictionary = column.dictionary
    indices = column.indices
    if indices.null_count == 0 and (
        pa.types.is_string(dictionary.type) or pa.types.is_large_string(dictionary.type)
    ):
        # one NumPy take of the decoded strings (the str objects are shared)
        return dictionary.to_numpy(zero_copy_only=False)[indices.to_numpy()].tolist()  # type: ignore[no-any-return]
    values = python_column(dictionary)
    if indices.null_count == 0:
        return list(map(values.__getitem__, indices.to_pylist()))
    return [None if i is None else values[i] for i in indices.to_pylist()]


def _python_value(value: Any, t: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return Row.of_values(
            [_python_value(value[f.name], f.type) for f in fields], [f.name for f in fields]
        )
    if pa.types.is_map(t):
        return {_python_value(k, t.key_type): _python_value(v, t.item_type) for k, v in value}
    if pa.types.is_list(t):
        return [_python_value(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t) and t.tz is not None:
        return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return value


class RowChunk(list):
    """The rows of one Arrow batch, with its columns in the rows' field order: ``names``,
    ``arrays`` (the Arrow arrays) and ``columns`` (their Python lists), for what reads a field of
    every row (a timestamp column) or takes the batch as it is (``map_batches``)."""

    __slots__ = ("arrays", "columns", "names")

    arrays: list[pa.Array]
    columns: list[list[Any]]
    names: tuple[str, ...]

    @classmethod
    def of(
        cls,
        rows: Iterable[Any],
        names: Sequence[str],
        arrays: list[pa.Array],
        columns: list[list[Any]],
    ) -> RowChunk:
        """The chunk of ``rows`` made from the columns ``names`` (``arrays``, ``columns``)."""
        chunk = cls(rows)
        chunk.names = tuple(names)
        chunk.arrays = arrays
        chunk.columns = columns
        return chunk

    def cut(self, start: int, stop: int) -> RowChunk:
        """The rows ``start:stop``, with their columns."""
        return RowChunk.of(
            self[start:stop],
            self.names,
            [a.slice(start, stop - start) for a in self.arrays],
            [c[start:stop] for c in self.columns],
        )

    def column(self, index: int) -> list[Any]:
        """The Python values of column ``index``."""
        return self.columns[index]


class BatchRows(Sequence[Any]):
    """The rows of one Arrow batch (columns ``names``: ``arrays``), built on first read:
    :meth:`rows` (iterating reads them); ``len`` and the columns do not build them. What takes
    the batch as columns (``map_batches``, :meth:`BatchColumns.of_chunk
    <sparktide.runtime.operators.batch_columns.BatchColumns.of_chunk>`) reads ``names`` and
    ``arrays`` only."""

    __slots__ = ("_columns", "_n", "_rows", "arrays", "names")

    def __init__(self, names: tuple[str, ...], arrays: list[pa.Array], n: int) -> None:
        self.names = names
        self.arrays = arrays
        self._n = n
        self._columns: list[list[Any] | None] = [None] * len(arrays)
        self._rows: RowChunk | None = None

    @property
    def built(self) -> bool:
        """Whether the rows were built."""
        return self._rows is not None

    def rows(self) -> RowChunk:
        """The rows (built once), a :class:`RowChunk` with the columns."""
        rows = self._rows
        if rows is None:
            columns = [self.column(i) for i in range(len(self.arrays))]
            made = map(row_maker(self.names), zip(*columns, strict=True))
            rows = self._rows = RowChunk.of(made, self.names, self.arrays, columns)
        return rows

    def column(self, index: int) -> list[Any]:
        """The Python values of column ``index`` (converted once)."""
        values = self._columns[index]
        if values is None:
            values = self._columns[index] = python_column(self.arrays[index])
        return values

    def cut(self, start: int, stop: int) -> BatchRows:
        """The rows ``start:stop`` (not built; ``stop`` past the end: to the end)."""
        stop = min(stop, self._n)
        arrays = [a.slice(start, stop - start) for a in self.arrays]
        return BatchRows(self.names, arrays, stop - start)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            if step == 1:
                return self.cut(start, max(start, stop))
        return self.rows()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows())

    def __repr__(self) -> str:
        return f"BatchRows({self._n} rows of {list(self.names)}, built={self.built})"


def cut(chunk: list[Any], start: int, stop: int) -> list[Any]:
    """``chunk[start:stop]``, a :class:`RowChunk` or :class:`BatchRows` with its columns when
    ``chunk`` is one."""
    kind: type = type(chunk)
    if kind is RowChunk or kind is BatchRows:
        if start == 0 and stop == len(chunk):
            return chunk
        return chunk.cut(start, stop)  # type: ignore[attr-defined,no-any-return]
    return chunk[start:stop]


def rows_of_batch(batch: pa.RecordBatch, names: Sequence[str]) -> RowChunk:
    """The rows of ``batch`` named ``names`` (the columns kept, in that order)."""
    arrays = [batch.column(name) for name in names]
    columns = [python_column(array) for array in arrays]
    return RowChunk.of(map(row_maker(names), zip(*columns, strict=True)), names, arrays, columns)


def batch_rows(batch: pa.RecordBatch, names: Sequence[str]) -> BatchRows:
    """The rows of ``batch`` named ``names`` (the columns kept, in that order), built on first
    read (:class:`BatchRows`)."""
    return BatchRows(tuple(names), [batch.column(name) for name in names], batch.num_rows)
