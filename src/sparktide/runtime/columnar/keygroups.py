"""Key groups of a whole column at once, equal bit for bit to
:func:`sparktide.runtime.keygroups.assign_to_key_group`.

Integer keys (an int64 column) are hashed with numpy: Java's ``Long.hashCode``, then Flink's
``MathUtils.murmurHash``, in unsigned 32-bit arithmetic. Any other key (strings, floats, ``None``,
...) is hashed once per distinct value with the scalar function: :func:`key_groups` factorizes
the column first, so a column of a thousand distinct strings costs a thousand scalar hashes
whatever its length.

>>> import numpy as np
>>> from sparktide.runtime.keygroups import assign_to_key_group
>>> values = np.array([0, 42, -1, 2**63 - 1, -2**63], dtype=np.int64)
>>> long_key_groups(values, 128).tolist() == [assign_to_key_group(int(v), 128) for v in values]
True
>>> key_groups(["JFK", "LGA", "JFK", None], 128).tolist() == [
...     assign_to_key_group(k, 128) for k in ["JFK", "LGA", "JFK", None]]
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sparktide.runtime.keygroups import assign_to_key_group

__all__ = ["factorize", "java_long_hashes", "key_groups", "long_key_groups", "murmur_hashes"]

_U32 = np.uint32


def _rotl(x: npt.NDArray[np.uint32], r: int) -> npt.NDArray[np.uint32]:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def java_long_hashes(values: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """Java's ``Long.hashCode`` of every value, as the unsigned bits of the 32-bit result."""
    u = values.astype(np.int64, copy=False).view(np.uint64)
    return ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def murmur_hashes(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]:
    """Flink's ``MathUtils.murmurHash`` of 32-bit hash codes (non-negative results)."""
    with np.errstate(over="ignore"):
        c = codes.astype(np.uint32) * _U32(0xCC9E2D51)
        c = _rotl(c, 15) * _U32(0x1B873593)
        c = (_rotl(c, 13) * _U32(5) + _U32(0xE6546B64)) ^ _U32(4)
        c = (c ^ (c >> _U32(16))) * _U32(0x85EBCA6B)
        c = (c ^ (c >> _U32(13))) * _U32(0xC2B2AE35)
        c = c ^ (c >> _U32(16))
    wide = c.astype(np.int64)
    # Java negates a negative int (code - 2**32); Integer.MIN_VALUE maps to 0
    negative = wide >= 0x80000000
    out = np.where(negative, 0x100000000 - wide, wide)
    out[wide == 0x80000000] = 0
    return out


def long_key_groups(values: npt.NDArray[np.int64], max_parallelism: int) -> npt.NDArray[np.int64]:
    """The key group of every int64 key for ``max_parallelism`` key groups."""
    return murmur_hashes(java_long_hashes(values)) % max_parallelism


def factorize(
    values: Sequence[object] | npt.NDArray[np.generic],
) -> tuple[npt.NDArray[np.int64], list[object]]:
    """``(codes, uniques)``: ``values[i] == uniques[codes[i]]``, uniques in order of first
    appearance; ``None`` is a value of its own. Values are told apart by Python's equality, as
    keyed state tells keys apart: two strings differing after a NUL character stay two values.

    >>> factorize(["", "\\x000", None, ""])
    (array([0, 1, 2, 0]), ['', '\\x000', None])
    """
    index: dict[object, int] = {}
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
    )
    return codes, list(index)


def key_groups(
    values: Sequence[object] | npt.NDArray[np.generic], max_parallelism: int
) -> npt.NDArray[np.int64]:
    """The key group of every key: vectorized for an int64 array, else one scalar hash per
    distinct value."""
    if isinstance(values, np.ndarray) and values.dtype == np.int64:
        return long_key_groups(values.astype(np.int64, copy=False), max_parallelism)
    codes, uniques = factorize(values)
    groups = np.array([assign_to_key_group(u, max_parallelism) for u in uniques], dtype=np.int64)
    return groups[codes] if len(codes) else np.zeros(0, dtype=np.int64)
