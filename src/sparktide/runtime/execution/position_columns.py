"""The positions of a chunk of entries as int64 columns, not one pickled tuple per entry.

A chunk of entries (:func:`~sparktide.runtime.execution.protocol.pack_entries`) carries the
positions of its entries as the columns of their padded matrix (:func:`padded`): the
components ``i`` of all positions, padded with :data:`PAD` where a position is shorter. A column
whose components are all equal (the round, the phase, the split, the mark, ...: the prefix a
run of entries shares) is that one int; the others (``seq``, ``n``) are int64 bytes. The
receiving side gets the positions back as tuples, or the matrix whose row order is the tuple
order (:meth:`PositionColumns.matrix`) to sort a stage's input without a tuple per entry.

>>> positions = [(0, 0, 1, 5, 0, 0), (0, 0, 1, 5, 0, 1), (0, 0, 1, 6, 0, 0)]
>>> block = PositionColumns.of(positions)
>>> block.columns[:3], len(block)
((0, 0, 1), 3)
>>> list(block.positions()) == positions
True
>>> mixed = [(0, 1), (0, 1, 0), (1,)]  # a prefix sorts before its extensions
>>> list(PositionColumns.of(mixed).positions()) == mixed
True
>>> PositionColumns.of(mixed).matrix(4).tolist()[0] == [0, 1, PAD, PAD]
True
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PAD", "PaddedPositions", "PositionColumns", "int64_bytes", "int_column", "padded"]

PAD = -(1 << 63)
"""Pads a position to a fixed width without changing its order (:func:`padded`): below every
real component (they are all >= -1)."""

_LITTLE = sys.byteorder == "little"


def padded(position: tuple[int, ...], width: int) -> tuple[int, ...]:
    """``position`` at a fixed ``width`` (a row of a chunk's int64 position matrix): padded
    with :data:`PAD`, so padded rows compare as the positions do.

    >>> a, b = (0, 1), (0, 1, 0)
    >>> (a < b) == (padded(a, 4) < padded(b, 4))
    True
    """
    return (*position, *(PAD,) * (width - len(position)))


def int64_bytes(values: Sequence[int]) -> bytes:
    """``values`` as little-endian int64 bytes."""
    column = array("q", values)
    if not _LITTLE:
        column.byteswap()
    return column.tobytes()


def int_column(values: Sequence[int]) -> int | bytes:
    """A column of a :class:`PositionColumns`: ``values`` (at least one) as their one int when
    they are all equal, else as :func:`int64_bytes`.

    >>> int_column([4, 4]), int_column([4, 5]) == int64_bytes([4, 5])
    (4, True)
    """
    first = values[0]
    return first if values.count(first) == len(values) else int64_bytes(values)


def _int64_list(data: bytes) -> list[int]:
    column = array("q")
    column.frombytes(data)
    if not _LITTLE:
        column.byteswap()
    return column.tolist()


class PositionColumns:
    """The positions of a chunk by columns (see the module docstring); pickles as its ints
    and bytes.

    ``columns[i]``: component ``i`` of every position (padded), one int when all are equal,
    else int64 bytes. ``lengths``: the positions' length, one int when all are equal, else
    one byte per position."""

    __slots__ = ("columns", "lengths", "n")

    def __init__(self, n: int, lengths: int | bytes, columns: tuple[int | bytes, ...]) -> None:
        self.n = n
        self.lengths = lengths
        self.columns = columns

    def __reduce__(self) -> tuple[object, ...]:
        return PositionColumns, (self.n, self.lengths, self.columns)

    def __len__(self) -> int:
        return self.n

    @classmethod
    def of(cls, positions: Sequence[tuple[int, ...]]) -> PositionColumns:
        """The columns of ``positions`` (a chunk's, at least one)."""
        n = len(positions)
        sizes = set(map(len, positions))
        lengths: int | bytes
        if len(sizes) == 1:
            lengths = sizes.pop()
            rows: Sequence[tuple[int, ...]] = positions
        else:
            width = max(sizes)
            lengths = bytes(map(len, positions))
            rows = [padded(p, width) for p in positions]
        columns = tuple(map(int_column, zip(*rows, strict=True)))
        return cls(n, lengths, columns)

    def positions(self) -> Iterator[tuple[int, ...]]:
        """The positions, as tuples, in the chunk's order."""
        n = self.n
        columns: list[Iterable[int]] = [
            repeat(c, n) if type(c) is int else _int64_list(cast(bytes, c)) for c in self.columns
        ]
        rows = zip(*columns, strict=False)
        lengths = self.lengths
        if type(lengths) is int:
            return rows
        return (row[:size] for row, size in zip(rows, cast(bytes, lengths), strict=True))

    def matrix(self, width: int) -> np.ndarray:
        """The padded positions as an ``n x width`` int64 matrix (``width`` at least the
        longest position): its rows in lexicographic order are the positions in tuple order."""
        import numpy as np

        matrix = np.full((self.n, max(width, len(self.columns))), PAD, dtype=np.int64)
        for i, column in enumerate(self.columns):
            if type(column) is int:
                matrix[:, i] = column
            else:
                matrix[:, i] = np.frombuffer(column, dtype="<i8")  # type: ignore[arg-type]
        return matrix

    @property
    def width(self) -> int:
        """The length of the longest position."""
        return len(self.columns)


class PaddedPositions:
    """Positions as their padded matrix (what a merge keeps of the positions it has already
    read: :class:`~sparktide.runtime.execution.merge.ChunkMerge`); read like
    :class:`PositionColumns`."""

    __slots__ = ("_matrix", "width")

    def __init__(self, matrix: np.ndarray) -> None:
        self._matrix = matrix
        self.width: int = matrix.shape[1]

    def __len__(self) -> int:
        return len(self._matrix)

    def matrix(self, width: int) -> np.ndarray:
        """The positions as an ``n x width`` int64 matrix (``width`` at least :attr:`width`)."""
        import numpy as np

        if width <= self.width:
            return self._matrix
        pad = np.full((len(self._matrix), width - self.width), PAD, dtype=np.int64)
        return np.concatenate([self._matrix, pad], axis=1)
