"""Grouping rows by an integer group key without sorting them: counts, first members, sums,
minima and maxima per group.

Dense keys (at most a few times as many distinct values as rows) are counted with
``np.bincount``; sparse ones fall back to ``np.unique``. Sums use ``np.bincount`` too (integers
only while every partial sum is exact in a double), minima and maxima ``ufunc.at``.

>>> import numpy as np
>>> g = Groups.of(np.array([7, 3, 7, 7, 3]))
>>> g.count.tolist(), g.first.tolist()
([2, 3], [1, 0])
>>> g.sum(np.array([1, 2, 3, 4, 5])).tolist(), g.min(np.array([1.0, 2, 3, 4, 5])).tolist()
([7, 8], [2.0, 1.0])
>>> g = Groups.of(np.array([0, 0]))
>>> g.sum(np.array([2**62, 2**62 - 1])).tolist()  # beyond 2^53: ufunc.at, exact
[9223372036854775807]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, cast

import numpy as np
import numpy.typing as npt

__all__ = ["Groups", "Numbers"]

I64 = npt.NDArray[np.int64]
Numbers: TypeAlias = npt.NDArray[np.int64] | npt.NDArray[np.float64]

_DENSE = 4  # key range per row up to which groups are counted densely


@dataclass(frozen=True)
class Groups:
    """Rows in groups: ``ids[i]`` is row ``i``'s group (``0 .. len(count) - 1``, ascending
    group key), ``first[j]`` the first row of group ``j`` and ``count[j]`` its size."""

    ids: I64
    first: I64
    count: I64

    @classmethod
    def of(cls, keys: I64) -> Groups:
        """Group rows by ``keys`` (non-negative when dense; any int64 otherwise)."""
        n = len(keys)
        if not n:
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty)
        low, high = int(keys.min()), int(keys.max())
        if low >= 0 and high < _DENSE * n + 1024:
            counts = np.bincount(keys, minlength=high + 1)
            present = np.flatnonzero(counts)
            rank = np.cumsum(counts > 0) - 1
            first = np.full(high + 1, n, np.int64)
            np.minimum.at(first, keys, np.arange(n, dtype=np.int64))
            return cls(
                rank[keys].astype(np.int64), first[present], counts[present].astype(np.int64)
            )
        _, first, ids, count = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        return cls(ids.astype(np.int64), first.astype(np.int64), count.astype(np.int64))

    def __len__(self) -> int:
        return len(self.count)

    def sum(self, values: Numbers) -> Numbers:
        """Per group, the sum (exact for integers; floats are added in row order)."""
        if values.dtype.kind == "f":
            sums = np.bincount(self.ids, weights=values, minlength=len(self))
            return cast("Numbers", sums.astype(np.float64))
        if len(values) and _exact_in_doubles(values):
            sums = np.bincount(self.ids, weights=values, minlength=len(self))
            return sums.astype(np.int64)
        out = np.zeros(len(self), np.int64)
        np.add.at(out, self.ids, values)
        return out

    def min(self, values: Numbers) -> Numbers:
        out = np.full(len(self), _top(values), values.dtype)
        np.minimum.at(out, self.ids, values)
        return cast("Numbers", out)

    def max(self, values: Numbers) -> Numbers:
        out = np.full(len(self), _bottom(values), values.dtype)
        np.maximum.at(out, self.ids, values)
        return cast("Numbers", out)


def _exact_in_doubles(values: Numbers) -> bool:
    """Whether every partial sum of ``values`` is an integer a double holds exactly (below
    2^53 in magnitude), so that ``np.bincount`` adds them without rounding."""
    bound = max(abs(int(values.min())), abs(int(values.max())))
    return bound * len(values) < 1 << 53


def _top(values: Numbers) -> float | int:
    return np.inf if values.dtype.kind == "f" else int(np.iinfo(np.int64).max)


def _bottom(values: Numbers) -> float | int:
    return -np.inf if values.dtype.kind == "f" else int(np.iinfo(np.int64).min)
