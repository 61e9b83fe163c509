"""Which partition Spark's hash partitioning sends a long to, computed without Spark.

``repartition(n, col)`` puts a row in partition ``pmod(hash(col), n)``, where ``hash`` is Spark's
Murmur3 (x86, 32-bit, seed 42). The runner and the file reader tag rows with a *placement key*,
a long whose partition is the one they want: :func:`placement_keys`.

>>> [placement_keys(n) for n in (1, 2, 3)]
[[0], [2, 0], [3, 0, 1]]
>>> spark_hash_long(0), spark_hash_long(1)
(-1670924195, -1712319331)
"""

from __future__ import annotations

from functools import cache

__all__ = ["placement_keys", "spark_hash_long"]

_MASK = 0xFFFFFFFF
_SEED = 42  # the seed of Spark's hash() and of its hash partitioning


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _MASK
    k1 = ((k1 << 15) | (k1 >> 17)) & _MASK
    return (k1 * 0x1B873593) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = ((h1 << 13) | (h1 >> 19)) & _MASK
    return (h1 * 5 + 0xE6546B64) & _MASK


def spark_hash_long(value: int) -> int:
    """Spark's ``hash()`` of a long (Murmur3 x86 32-bit, seed 42), as a signed int."""
    h1 = _mix_h1(_SEED, _mix_k1(value & _MASK))
    h1 = _mix_h1(h1, _mix_k1((value >> 32) & _MASK))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


@cache
def _placement_keys(n: int) -> tuple[int, ...]:
    """For each partition ``i < n``: the smallest long that Spark's ``repartition(n, key)``
    sends to partition ``i``."""
    keys: dict[int, int] = {}
    candidate = 0
    while len(keys) < n:
        keys.setdefault(spark_hash_long(candidate) % n, candidate)
        candidate += 1
    return tuple(keys[i] for i in range(n))


def placement_keys(n: int) -> list[int]:
    """For each partition ``i < n``: the smallest long that Spark's ``repartition(n, key)``
    sends to partition ``i``."""
    if type(n) is not int or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    return list(_placement_keys(n))
