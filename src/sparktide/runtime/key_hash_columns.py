"""Key hashes by columns: the murmur-mixed hashes of many ``str`` or ``int`` keys at once.

:func:`murmur_key_hashes` gives, for a list of keys, what
:func:`~sparktide.runtime.keygroups.assign_to_key_group` mixes before taking the key group
(``MathUtils.murmurHash`` of Java's ``String.hashCode`` or ``Long.hashCode``), computed with numpy
over all keys at once instead of a few dozen Python operations per key; for a key it cannot take
(another type, a non-ASCII or long string, an int outside a Java long) it gives ``-1``, and the
caller hashes that key alone. A hash exchange computes the key groups of the new keys of a chunk
this way (:meth:`~sparktide.runtime.keygroups.KeyGroupCache.groups`).

>>> murmur_key_hashes(["hello", 7, b"x", ""])
[1715862179, 1343918321, -1, 593689054]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

__all__ = ["murmur_key_hashes"]

_M32 = np.uint64(0xFFFFFFFF)
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_MAX_STRING = 64  # longer strings: hashed one by one (the weights table stays small)
_POW31 = np.array([pow(31, k, 1 << 32) for k in range(_MAX_STRING)], np.uint64)


def _string_hashes(strings: Sequence[str], lengths: np.ndarray, joined: str) -> np.ndarray:
    """Java's ``String.hashCode`` (mod 2**32) of non-empty ASCII strings of at most
    ``_MAX_STRING`` characters (``lengths`` theirs, ``joined`` them joined):
    ``sum(c[i] * 31**(n-1-i))``, a weight per character."""
    ends = np.cumsum(lengths)
    chars = np.frombuffer(joined.encode("ascii"), np.uint8).astype(np.uint64)
    exponents = np.repeat(ends, lengths) - 1 - np.arange(len(chars), dtype=np.int64)
    weighted = (chars * _POW31[exponents]) & _M32
    # uint64 sums of at most 64 terms below 2**32 do not overflow
    result: np.ndarray = np.add.reduceat(weighted, ends - lengths) & _M32
    return result


def _long_hashes(values: list[int] | np.ndarray) -> np.ndarray:
    """Java's ``Long.hashCode`` (mod 2**32): ``v ^ (v >>> 32)``."""
    u = np.asarray(values, np.int64).view(np.uint64)
    result: np.ndarray = (u ^ (u >> np.uint64(32))) & _M32
    return result


def _murmur(codes: np.ndarray) -> np.ndarray:
    """``MathUtils.murmurHash`` of 32-bit codes (uint64 holding values below 2**32; products
    wrap modulo 2**64, which keeps their low 32 bits exact)."""
    c = (codes * np.uint64(0xCC9E2D51)) & _M32
    c = (((c << np.uint64(15)) | (c >> np.uint64(17))) * np.uint64(0x1B873593)) & _M32
    c = ((c << np.uint64(13)) | (c >> np.uint64(19))) & _M32
    c = (c * np.uint64(5) + np.uint64(0xE6546B64)) & _M32
    c ^= np.uint64(4)
    c = ((c ^ (c >> np.uint64(16))) * np.uint64(0x85EBCA6B)) & _M32
    c = ((c ^ (c >> np.uint64(13))) * np.uint64(0xC2B2AE35)) & _M32
    c ^= c >> np.uint64(16)
    # Java negates a negative int (c - 2**32); Integer.MIN_VALUE maps to 0
    high = c >= np.uint64(0x80000000)
    c[high] = (np.uint64(0x100000000) - c[high]) & np.uint64(0x7FFFFFFF)
    return c


def murmur_key_hashes(keys: Sequence[object]) -> list[int]:
    """The murmur hash of each key's Java hash, ``-1`` for a key to hash alone (see the module
    docstring)."""
    same = _all_strings(keys) if keys and type(keys[0]) is str else _all_longs(keys)
    if same is not None:
        return same
    out = [-1] * len(keys)
    strings: list[str] = []
    at_s: list[int] = []
    longs: list[int] = []
    at_l: list[int] = []
    for i, key in enumerate(keys):
        if type(key) is str:
            if 0 < len(key) <= _MAX_STRING and key.isascii():
                strings.append(key)
                at_s.append(i)
            elif not key:
                longs.append(0)  # "" hashes as 0, as the long 0
                at_l.append(i)
        elif type(key) is int and _LONG_MIN <= key <= _LONG_MAX:
            longs.append(key)
            at_l.append(i)
    if strings:
        lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        _fill(out, at_s, _string_hashes(strings, lengths, "".join(strings)))
    if longs:
        _fill(out, at_l, _long_hashes(longs))
    return out


def _all_strings(keys: Sequence[object]) -> list[int] | None:
    """The hashes of ``keys`` when they are all strings the columns take (the common case:
    checked in C, no loop per key in Python), else ``None``."""
    if not keys or set(map(type, keys)) != {str}:
        return None
    strings = cast("Sequence[str]", keys)
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    joined = "".join(strings)
    if lengths.min() < 1 or lengths.max() > _MAX_STRING or not joined.isascii():
        return None
    hashes: list[int] = _murmur(_string_hashes(strings, lengths, joined)).tolist()
    return hashes


def _all_longs(keys: Sequence[object]) -> list[int] | None:
    """The hashes of ``keys`` when they are all ints of a Java long (checked in C), else
    ``None``."""
    if not keys or set(map(type, keys)) != {int}:
        return None
    try:
        values = np.array(keys, np.int64)
    except OverflowError:
        return None
    hashes: list[int] = _murmur(_long_hashes(values)).tolist()
    return hashes


def _fill(out: list[int], at: list[int], codes: np.ndarray) -> None:
    for i, h in zip(at, _murmur(codes).tolist(), strict=True):
        out[i] = h
