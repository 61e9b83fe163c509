"""Key groups: the unit of keyed state, timers and rescaling.

``key_group = murmur_hash(java_hash(key)) % max_parallelism``. For ``str`` and ``int`` keys the
hash is Java's ``String.hashCode`` / ``Long.hashCode``, so the key group equals Flink's for the same
Java key. Keys equal in Python (``1 == 1.0 == True``) always get the same key group, because keyed
state treats them as one key.

>>> assign_to_key_group("hello", 128) == assign_to_key_group("hello", 128)
True
>>> compute_key_group_range_for_operator_index(128, 3, 0)
KeyGroupRange(start=0, end=42)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

__all__ = [
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "UPPER_BOUND_MAX_PARALLELISM",
    "KeyGroupRange",
    "assign_key_to_parallel_operator",
    "assign_to_key_group",
    "compute_default_max_parallelism",
    "compute_key_group_for_key_hash",
    "compute_key_group_range_for_operator_index",
    "compute_operator_index_for_key_group",
    "java_long_hash",
    "java_string_hash",
    "key_hash",
    "murmur_hash",
]

DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128
UPPER_BOUND_MAX_PARALLELISM = 32768

_M32 = 0xFFFFFFFF
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _to_signed32(x: int) -> int:
    x &= _M32
    return x - 0x100000000 if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int.

    >>> java_string_hash("hello")
    99162322
    """
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | (data[i + 1] << 8))) & _M32
    return _to_signed32(h)


def java_long_hash(v: int) -> int:
    """Java's ``Long.hashCode``: ``(int)(v ^ (v >>> 32))``.

    >>> java_long_hash(-1)
    0
    """
    u = v & 0xFFFFFFFFFFFFFFFF
    return _to_signed32(u ^ (u >> 32))


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit mix of ``code``."""
    code = (code * 0xCC9E2D51) & _M32
    code = _rotl32(code, 15)
    code = (code * 0x1B873593) & _M32
    code = _rotl32(code, 13)
    code = (code * 5 + 0xE6546B64) & _M32
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _M32
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _M32
    code ^= code >> 16
    signed = _to_signed32(code)
    if signed >= 0:
        return signed
    if signed != -(2**31):
        return -signed
    return 0


def _canonical(key: Any, out: bytearray) -> None:
    """Append a canonical, type-tagged encoding of ``key`` that respects Python equality."""
    t = type(key)
    if key is None:
        out += b"N"
    elif t is bool or t is int or (isinstance(key, int) and not isinstance(key, bool)):
        v = int(key)
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
        out += b"I" + len(raw).to_bytes(4, "big") + raw
    elif t is float:
        if key.is_integer():
            _canonical(int(key), out)
        else:
            out += b"F" + key.hex().encode("ascii") + b";"
    elif t is str:
        raw = key.encode("utf-8", "surrogatepass")
        out += b"S" + len(raw).to_bytes(4, "big") + raw
    elif t is bytes or t is bytearray:
        out += b"B" + len(key).to_bytes(4, "big") + bytes(key)
    elif isinstance(key, tuple):
        out += b"T" + len(key).to_bytes(4, "big")
        for item in key:
            _canonical(item, out)
    else:
        raise TypeError(
            f"unsupported key type {t.__name__} ({key!r}): keys must be None, bool, int, float, "
            "str, bytes or tuples of these; key by a tuple of the object's fields instead"
        )


def _bytes_hash(data: bytes) -> int:
    """Java's ``Arrays.hashCode(byte[])`` (signed bytes), as a signed 32-bit int."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & _M32
    return _to_signed32(h)


def _key_hash_uncached(key: Any) -> int:
    t = type(key)
    if t is str:
        return java_string_hash(key)
    if t is int or t is bool:
        v = int(key)
        if _LONG_MIN <= v <= _LONG_MAX:
            return java_long_hash(v)
    elif t is float and key.is_integer() and _LONG_MIN <= key <= _LONG_MAX:
        return java_long_hash(int(key))
    out = bytearray()
    _canonical(key, out)
    return _bytes_hash(bytes(out))


_key_hash_cached = lru_cache(maxsize=1 << 16, typed=True)(_key_hash_uncached)


def key_hash(key: Any) -> int:
    """The stable 32-bit hash of a key (never Python's salted ``hash()``).

    >>> key_hash("hello") == java_string_hash("hello")
    True
    """
    try:
        return _key_hash_cached(key)
    except TypeError:
        # unhashable keys (lists, dicts, ...) fail in the cache: give the canonical error
        return _key_hash_uncached(key)


def compute_key_group_for_key_hash(key_hash_value: int, max_parallelism: int) -> int:
    return murmur_hash(key_hash_value) % max_parallelism


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    """The key group of ``key`` for ``max_parallelism`` key groups.

    >>> 0 <= assign_to_key_group(42, 128) < 128
    True
    """
    return murmur_hash(key_hash(key)) % max_parallelism


def compute_operator_index_for_key_group(
    max_parallelism: int, parallelism: int, key_group: int
) -> int:
    """The subtask that owns ``key_group``: ``key_group * parallelism // max_parallelism``."""
    return key_group * parallelism // max_parallelism


def assign_key_to_parallel_operator(key: Any, max_parallelism: int, parallelism: int) -> int:
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism)
    )


def compute_default_max_parallelism(parallelism: int) -> int:
    """``min(max(next_pow2(p + p // 2), 128), 32768)``.

    >>> compute_default_max_parallelism(4), compute_default_max_parallelism(200)
    (128, 512)
    """
    n = parallelism + parallelism // 2
    pow2 = 1 if n <= 1 else 1 << (n - 1).bit_length()
    return min(max(pow2, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


@dataclass(frozen=True)
class KeyGroupRange:
    """An inclusive range ``[start, end]`` of key groups; empty when ``end < start``."""

    start: int
    end: int

    @classmethod
    def of(cls, start: int, end: int) -> KeyGroupRange:
        return cls(start, end)

    @classmethod
    def empty(cls) -> KeyGroupRange:
        return cls(0, -1)

    def contains(self, key_group: int) -> bool:
        return self.start <= key_group <= self.end

    __contains__ = contains

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end + 1))

    def intersection(self, other: KeyGroupRange) -> KeyGroupRange:
        start, end = max(self.start, other.start), min(self.end, other.end)
        return KeyGroupRange(start, end) if start <= end else KeyGroupRange.empty()


def compute_key_group_range_for_operator_index(
    max_parallelism: int, parallelism: int, operator_index: int
) -> KeyGroupRange:
    """The key groups owned by subtask ``operator_index`` of ``parallelism``."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return KeyGroupRange(start, end)
