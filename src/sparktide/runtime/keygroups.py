"""Key groups: the unit of keyed state, timers and rescaling.

``key_group = murmur_hash(java_hash(key)) % max_parallelism``. For ``str`` keys the hash is Java's
``String.hashCode`` and for ``int`` keys in the range of a Java ``long`` it is ``Long.hashCode``, so
the key group equals Flink's for the same ``String`` / ``Long`` key. Keys equal in Python
(``1 == 1.0 == True``, ``0.0 == -0.0``, ``(1, "a") == (1.0, "a")``) always get the same key group,
because keyed state treats them as one key. Other keys (``None``, ``bytes``, non-integral floats,
ints beyond the long range, tuples) are hashed from a canonical, type-tagged byte encoding, so their
key groups are stable across processes too (Python's salted ``hash()`` is never used).

Subclasses of the supported types (``IntEnum``, ``StrEnum``, named tuples) and NumPy scalars are
hashed as the plain value they are equal to.

>>> assign_to_key_group("hello", 128)
35
>>> assign_to_key_group(1, 128) == assign_to_key_group(1.0, 128) == assign_to_key_group(True, 128)
True
>>> compute_key_group_range_for_operator_index(128, 3, 0)
KeyGroupRange(start=0, end=42)
>>> compute_operator_index_for_key_group(128, 3, 35)
0
"""

from __future__ import annotations

import numbers
import operator
import reprlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sparktide.runtime.key_hash_columns import murmur_key_hashes

__all__ = [
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "UPPER_BOUND_MAX_PARALLELISM",
    "KeyGroupCache",
    "KeyGroupRange",
    "assign_key_to_parallel_operator",
    "assign_to_key_group",
    "assign_to_key_groups",
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
"""The smallest default max parallelism (Flink's ``DEFAULT_LOWER_BOUND_MAX_PARALLELISM``)."""

UPPER_BOUND_MAX_PARALLELISM = 32768
"""The largest parallelism and max parallelism (Flink's ``UPPER_BOUND_MAX_PARALLELISM``)."""

_M32 = 0xFFFFFFFF
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_M64 = 0xFFFFFFFFFFFFFFFF

# ``String.hashCode`` and ``Arrays.hashCode`` evaluate a polynomial in 31 over the code units.
# For speed it is evaluated in C by ``int(digits, 31)``: ``bytes.translate`` turns every byte
# ``b = 31 * q + r`` into the base-31 digits ``q`` and ``r``, and the two numbers add up as
# ``R + 31 * Q``. ``int()`` refuses more than ``sys.get_int_max_str_digits()`` (>= 640) digits and
# is quadratic in their number, so long inputs go in chunks of ``_CHUNK`` digits.
_DIGITS = b"0123456789abcdefghijklmnopqrstu"
_LOW_DIGIT = bytes(_DIGITS[b % 31] for b in range(256))
_HIGH_DIGIT = bytes(_DIGITS[b // 31] for b in range(256))
# the digits of ``signed(b) + 128 == b ^ 0x80`` (Java's bytes are signed)
_LOW_SIGNED_DIGIT = bytes(_DIGITS[(b ^ 0x80) % 31] for b in range(256))
_HIGH_SIGNED_DIGIT = bytes(_DIGITS[(b ^ 0x80) // 31] for b in range(256))
_CHUNK = 512

Key = bool | int | float | str | bytes | tuple | None
"""The key types with a stable key group (tuples may nest and mix them)."""


# --------------------------------------------------------------------------------------------
# Java's hash functions
# --------------------------------------------------------------------------------------------


def _base31(digits: bytes) -> int:
    """``int(digits, 31) mod 2**32`` for a base-31 digit string of any length."""
    n = len(digits)
    if n <= _CHUNK:
        return int(digits, 31) & _M32 if n else 0
    h = 0
    for start in range(0, n, _CHUNK):
        chunk = digits[start : start + _CHUNK]
        h = (h * pow(31, len(chunk), 1 << 32) + int(chunk, 31)) & _M32
    return h


def _poly31(data: bytes) -> int:
    """``(data[0] * 31**(n-1) + ... + data[n-1]) mod 2**32`` with ``n = len(data)``."""
    return (_base31(data.translate(_LOW_DIGIT)) + 31 * _base31(data.translate(_HIGH_DIGIT))) & _M32


def _string_hash(s: str) -> int:
    """``String.hashCode`` of an exact ``str`` (no type check: the hot path)."""
    if s.isascii():
        if not s:
            return 0
        data = s.encode("ascii")
        if len(data) <= _CHUNK:
            h = (
                int(data.translate(_LOW_DIGIT), 31) + 31 * int(data.translate(_HIGH_DIGIT), 31)
            ) & _M32
        else:
            h = _poly31(data)
    else:
        # Java hashes UTF-16 code units ``256 * hi + lo``: a character outside the BMP counts as
        # its surrogate pair, and lone surrogates (legal in both languages) pass through unchanged.
        data = s.encode("utf-16-be", "surrogatepass")
        hi, lo = data[0::2], data[1::2]
        if len(hi) <= _CHUNK:
            h = (
                256 * int(hi.translate(_LOW_DIGIT), 31)
                + 7936 * int(hi.translate(_HIGH_DIGIT), 31)  # 7936 = 256 * 31
                + int(lo.translate(_LOW_DIGIT), 31)
                + 31 * int(lo.translate(_HIGH_DIGIT), 31)
            ) & _M32
        else:
            h = (256 * _poly31(hi) + _poly31(lo)) & _M32
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int.

    >>> java_string_hash("hello")
    99162322
    >>> java_string_hash("")
    0
    >>> java_string_hash("\\U0001F600")  # one character outside the BMP = two UTF-16 code units
    1772899
    """
    if type(s) is not str:
        if not isinstance(s, str):
            raise TypeError(
                f"s must be a str, got {type(s).__name__} ({reprlib.repr(s)}); "
                "use key_hash() for keys of other types"
            )
        s = str.__str__(s)
    return _string_hash(s)


def _long_hash(v: int) -> int:
    """``Long.hashCode`` of an int already known to fit a Java long."""
    u = v & _M64
    h = (u ^ (u >> 32)) & _M32
    return h - 0x100000000 if h & 0x80000000 else h


def java_long_hash(v: int) -> int:
    """Java's ``Long.hashCode``: ``(int)(v ^ (v >>> 32))``, as a signed 32-bit int.

    ``v`` must fit a Java long (``-2**63 <= v < 2**63``).

    >>> java_long_hash(-1)
    0
    >>> java_long_hash(2**32)
    1
    """
    if not isinstance(v, int):
        raise TypeError(
            f"v must be an int, got {type(v).__name__} ({reprlib.repr(v)}); "
            "use key_hash() for keys of other types"
        )
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise ValueError(
            f"v must fit a Java long [{_LONG_MIN}, {_LONG_MAX}], got {v}; "
            "use key_hash() for larger ints"
        )
    return _long_hash(int(v))


def _murmur(code: int) -> int:
    """``MathUtils.murmurHash`` without argument checks (the hot path)."""
    code = (code * 0xCC9E2D51) & _M32
    code = (((code << 15) | (code >> 17)) * 0x1B873593) & _M32  # rotl 15, then multiply
    code = ((((code << 13) | (code >> 19)) * 5 + 0xE6546B64) & _M32) ^ 4  # rotl 13; ^ length 4
    code = ((code ^ (code >> 16)) * 0x85EBCA6B) & _M32  # fmix32
    code = ((code ^ (code >> 13)) * 0xC2B2AE35) & _M32
    code ^= code >> 16
    if code < 0x80000000:
        return code
    # Java negates the negative int (code - 2**32); Integer.MIN_VALUE maps to 0
    return 0x100000000 - code if code != 0x80000000 else 0


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit mix of ``code``.

    ``code`` is taken modulo 2**32, like Java's ``(int)`` cast.

    >>> murmur_hash(0)
    593689054
    >>> murmur_hash(-2**31)
    1718298732
    """
    if not isinstance(code, int):
        raise TypeError(
            f"code must be an int (a 32-bit hash), got {type(code).__name__} "
            f"({reprlib.repr(code)}); hash the key with key_hash() first"
        )
    return _murmur(int(code))


# --------------------------------------------------------------------------------------------
# Key hashing
# --------------------------------------------------------------------------------------------

_SUPPORTED = "None, bool, int, float, str, bytes or (nested) tuples of these"

# The hashing helpers below take ``key: Any``: they dispatch on ``type(key) is ...`` once (the
# fastest test), which the type checker cannot narrow through; public functions take ``object``.


def _unsupported(key: object, root: object) -> TypeError:
    """The TypeError for a key (or a member ``key`` of the tuple key ``root``) of a bad type."""
    name = type(key).__name__
    if isinstance(key, list):
        fix = "convert it to a tuple, e.g. tuple(key)"
    elif isinstance(key, dict):
        fix = "key by a tuple of its items, e.g. tuple(sorted(key.items()))"
    elif isinstance(key, (set, frozenset)):
        fix = "key by a sorted tuple of its members, e.g. tuple(sorted(key))"
    elif isinstance(key, (numbers.Number, memoryview)):
        fix = "convert it to an int, float or bytes first"
    else:
        fix = "key by a tuple of the fields that identify it, e.g. (obj.id, obj.name)"
    where = "" if root is None or root is key else f" inside the tuple key {reprlib.repr(root)}"
    return TypeError(
        f"unsupported key type {name} ({reprlib.repr(key)}){where}: keys must be {_SUPPORTED}; "
        f"{fix}"
    )


def _plain(key: Any, root: object) -> Key:
    """The plain builtin value (``int``, ``float``, ``str``, ``bytes`` or ``tuple``) equal to
    ``key``, a subclass instance or NumPy scalar of a supported type; TypeError otherwise."""
    if isinstance(key, int):  # IntEnum, IntFlag (bool is final, never reaches here)
        return int.__int__(key)
    if isinstance(key, float):  # numpy.float64
        return float.__float__(key)
    if isinstance(key, str):  # StrEnum, numpy.str_
        return str.__str__(key)
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, tuple):  # named tuples
        return tuple(key)
    if type(key).__module__ == "numpy" and hasattr(key, "item"):
        value: object = key.item()  # numpy.int64 -> int, numpy.bool_ -> bool, float32 -> float
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return value
    elif isinstance(key, numbers.Integral):
        return operator.index(key)
    raise _unsupported(key, root)


def _canonical(key: Any, out: bytearray, root: object) -> None:
    """Append a canonical, type-tagged encoding of ``key`` that respects Python equality."""
    t = type(key)
    if t is int or t is bool:
        v = int(key)
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
        out += b"I" + len(raw).to_bytes(4, "big") + raw
    elif t is str:
        raw = key.encode("utf-8", "surrogatepass")
        out += b"S" + len(raw).to_bytes(4, "big") + raw
    elif t is float:
        if key.is_integer():
            _canonical(int(key), out, root)
        else:
            out += b"F" + key.hex().encode("ascii") + b";"
    elif t is tuple:
        out += b"T" + len(key).to_bytes(4, "big")
        for item in key:
            _canonical(item, out, root)
    elif t is bytes:
        out += b"B" + len(key).to_bytes(4, "big") + key
    elif key is None:
        out += b"N"
    else:
        _canonical(_plain(key, root), out, root)


def _bytes_hash(data: bytes) -> int:
    """Java's ``Arrays.hashCode(byte[])`` (signed bytes), as a signed 32-bit int."""
    # 31**n + sum(signed_i * 31**(n-1-i)) with signed_i = (data[i] ^ 0x80) - 128, where
    # sum(128 * 31**k for k < n) = 128 * (31**n - 1) / 30: one pow() modulo 30 * 2**32 gives both
    # 31**n mod 2**32 and (31**n - 1) / 30 mod 2**32.
    n = len(data)
    if 0 < n <= _CHUNK:
        poly = int(data.translate(_LOW_SIGNED_DIGIT), 31) + 31 * int(
            data.translate(_HIGH_SIGNED_DIGIT), 31
        )
    else:
        poly = _base31(data.translate(_LOW_SIGNED_DIGIT)) + 31 * _base31(
            data.translate(_HIGH_SIGNED_DIGIT)
        )
    p = pow(31, n, 30 << 32)
    h = (p - 128 * ((p - 1) // 30) + poly) & _M32
    return h - 0x100000000 if h & 0x80000000 else h


def _key_hash_uncached(key: Any) -> int:
    t = type(key)
    if t is str:
        return _string_hash(key)
    if t is int or t is bool:
        if _LONG_MIN <= key <= _LONG_MAX:
            return _long_hash(key)
    elif t is float:
        if key.is_integer() and _LONG_MIN <= key <= _LONG_MAX:
            return _long_hash(int(key))
    elif t is not tuple and t is not bytes and key is not None:
        return _key_hash_uncached(_plain(key, key))
    out = bytearray()
    _canonical(key, out, key)
    return _bytes_hash(bytes(out))


def _hashes_uncached(key: object) -> tuple[int, int]:
    h = _key_hash_uncached(key)
    return h, _murmur(h)


# (key hash, murmur hash) per key. typed=True keeps 1, 1.0 and True apart in the cache (their
# results are equal anyway) so that a cached entry always comes from a key of the same type.
# 2**17 entries (at most ~35 MiB) hold the working set of jobs with up to ~10^5 active keys: a
# working set larger than an LRU cache misses on every lookup, and a miss costs ~20x a hit.
_hashes_cached = lru_cache(maxsize=1 << 17, typed=True)(_hashes_uncached)


def _hashes(key: object) -> tuple[int, int]:
    try:
        return _hashes_cached(key)
    except TypeError:
        pass  # unhashable (bytearray, list, ...) or unsupported: no cache, the canonical error
    return _hashes_uncached(key)


def key_hash(key: object) -> int:
    """The stable 32-bit hash of a key (never Python's salted ``hash()``).

    Equals Java's ``hashCode`` of the same ``String`` or ``Long`` key; raises ``TypeError`` for keys
    of other types than ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes`` and tuples.

    >>> key_hash("hello") == java_string_hash("hello")
    True
    >>> key_hash(7) == key_hash(7.0) == java_long_hash(7)
    True
    >>> key_hash([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: unsupported key type list ([1, 2]): keys must be None, bool, int, float, str, bytes \
or (nested) tuples of these; convert it to a tuple, e.g. tuple(key)
    """
    return _hashes(key)[0]


# --------------------------------------------------------------------------------------------
# Key groups and operator indexes
# --------------------------------------------------------------------------------------------


def _parallelism(value: object, name: str) -> int:
    """``value`` as an int in ``[1, 32768]``, else an error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} ({reprlib.repr(value)}); "
            "pass a whole number"
        )
    value = operator.index(value)
    if not 1 <= value <= UPPER_BOUND_MAX_PARALLELISM:
        hint = (
            "use compute_default_max_parallelism(parallelism) or a value in that range"
            if name == "max_parallelism"
            else "pass a value in that range"
        )
        raise ValueError(
            f"{name} must be in [1, {UPPER_BOUND_MAX_PARALLELISM}], got {value}; {hint}"
        )
    return value


def _check_parallelisms(max_parallelism: object, parallelism: object) -> tuple[int, int]:
    max_parallelism = _parallelism(max_parallelism, "max_parallelism")
    parallelism = _parallelism(parallelism, "parallelism")
    if parallelism > max_parallelism:
        raise ValueError(
            f"parallelism must not exceed max_parallelism, got parallelism={parallelism} > "
            f"max_parallelism={max_parallelism}; raise max_parallelism or lower parallelism"
        )
    return max_parallelism, parallelism


def _index(value: object, name: str, bound: int, bound_name: str) -> int:
    """``value`` as an int in ``[0, bound)``, else an error naming ``name`` and ``bound_name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} ({reprlib.repr(value)}); "
            "pass a whole number"
        )
    value = operator.index(value)
    if not 0 <= value < bound:
        raise ValueError(
            f"{name} must be in [0, {bound_name}) = [0, {bound}), got {value}; "
            "pass a value in that range"
        )
    return value


def compute_key_group_for_key_hash(key_hash_value: int, max_parallelism: int) -> int:
    """The key group of a key whose :func:`key_hash` is ``key_hash_value``.

    ``max_parallelism`` must be an int in ``[1, 32768]``.

    >>> compute_key_group_for_key_hash(key_hash("hello"), 128) == assign_to_key_group("hello", 128)
    True
    """
    if type(max_parallelism) is not int or not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        max_parallelism = _parallelism(max_parallelism, "max_parallelism")
    return murmur_hash(key_hash_value) % max_parallelism


def assign_to_key_group(key: object, max_parallelism: int) -> int:
    """The key group of ``key`` for ``max_parallelism`` key groups (Flink's ``assignToKeyGroup``).

    ``max_parallelism`` must be an int in ``[1, 32768]``; ``key`` must be a supported key (see
    :func:`key_hash`).

    >>> assign_to_key_group("hello", 128), assign_to_key_group(42, 128)
    (35, 29)
    >>> assign_to_key_group(("user", 7), 128) == assign_to_key_group(("user", 7.0), 128)
    True
    """
    if type(max_parallelism) is not int or not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        max_parallelism = _parallelism(max_parallelism, "max_parallelism")
    try:
        hashes = _hashes_cached(key)
    except TypeError:
        hashes = None  # unhashable (bytearray, list, ...) or unsupported: see below
    if hashes is None:
        hashes = _hashes_uncached(key)
    return hashes[1] % max_parallelism


def assign_to_key_groups(keys: Sequence[object], max_parallelism: int) -> list[int]:
    """``[assign_to_key_group(k, max_parallelism) for k in keys]``, the hashes of the strings
    and ints among them computed together
    (:func:`~sparktide.runtime.key_hash_columns.murmur_key_hashes`): for many keys seen once,
    as a restore checks them. Raises what :func:`assign_to_key_group` raises for the first key
    that fails.

    >>> assign_to_key_groups(["hello", 42, ("user", 7)], 128)
    [35, 29, 42]
    """
    maxp = _parallelism(max_parallelism, "max_parallelism")
    hashes = murmur_key_hashes(keys)
    if not hashes or min(hashes) >= 0:  # every key hashed by columns
        return list(map(maxp.__rmod__, hashes))
    return [
        h % maxp if h >= 0 else assign_to_key_group(k, maxp)
        for k, h in zip(keys, hashes, strict=True)
    ]


class KeyGroupCache(dict[object, int]):
    """``cache[key]``: the key group of ``key`` for ``max_parallelism`` key groups, computed on
    the first lookup (:func:`assign_to_key_group`) and kept: a hit is one dict lookup, a miss
    no exception. At most ``size`` keys are kept (the cache is emptied when full). An
    unhashable key raises ``TypeError`` as a dict does; an unsupported key the TypeError of
    :func:`key_hash`.

    >>> cache = KeyGroupCache(128)
    >>> cache["hello"], len(cache)
    (35, 1)
    """

    __slots__ = ("_max_parallelism", "_size")

    def __init__(self, max_parallelism: int, size: int = 1 << 17) -> None:
        super().__init__()
        self._max_parallelism = _parallelism(max_parallelism, "max_parallelism")
        self._size = size

    def group_of(self, key: object) -> int:
        """The key group of ``key``, computed (not cached): what a miss stores."""
        return _hashes_cached(key)[1] % self._max_parallelism

    def __missing__(self, key: object) -> int:
        kg = self.group_of(key)  # (hashable: the dict hashed it)
        if len(self) >= self._size:
            self.clear()
        self[key] = kg
        return kg

    def groups(self, keys: Sequence[object]) -> list[int]:
        """``[self[k] for k in keys]``, the groups of the keys not cached yet computed together
        (:func:`~sparktide.runtime.key_hash_columns.murmur_key_hashes`): as fast as one lookup
        per key when the keys are known, a fraction of a miss each when many are new. Raises
        what ``self[k]`` raises for the first key that fails.

        >>> KeyGroupCache(128).groups(["hello", 7, "hello", (1, 2)])
        [35, 113, 35, 11]
        """
        get = self.get
        groups = [get(k, -1) for k in keys]
        if -1 not in groups:
            return groups
        new = list(dict.fromkeys([k for k, g in zip(keys, groups, strict=True) if g == -1]))
        maxp, group_of = self._max_parallelism, self.group_of
        found = {
            k: h % maxp if h >= 0 else group_of(k)
            for k, h in zip(new, murmur_key_hashes(new), strict=True)
        }
        if len(self) + len(found) > self._size:
            self.clear()
        if len(found) <= self._size:
            self.update(found)
        return [g if g >= 0 else found[k] for k, g in zip(keys, groups, strict=True)]


def compute_operator_index_for_key_group(
    max_parallelism: int, parallelism: int, key_group: int
) -> int:
    """The subtask that owns ``key_group``: ``key_group * parallelism // max_parallelism``.

    Requires ``1 <= parallelism <= max_parallelism <= 32768`` and
    ``0 <= key_group < max_parallelism``.

    >>> [compute_operator_index_for_key_group(128, 3, kg) for kg in (0, 42, 43, 127)]
    [0, 0, 1, 2]
    """
    if (
        type(key_group) is not int
        or type(parallelism) is not int
        or type(max_parallelism) is not int
        or not 0 <= key_group < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
        or not 0 < parallelism <= max_parallelism
    ):
        max_parallelism, parallelism = _check_parallelisms(max_parallelism, parallelism)
        key_group = _index(key_group, "key_group", max_parallelism, "max_parallelism")
    return key_group * parallelism // max_parallelism


def assign_key_to_parallel_operator(key: object, max_parallelism: int, parallelism: int) -> int:
    """The subtask (of ``parallelism``) that owns ``key`` (Flink's ``assignKeyToParallelOperator``).

    >>> assign_key_to_parallel_operator("hello", 128, 3)
    0
    """
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism)
    )


def compute_default_max_parallelism(parallelism: int) -> int:
    """``min(max(next_pow2(p + p // 2), 128), 32768)`` for ``parallelism`` p in ``[1, 32768]``.

    >>> compute_default_max_parallelism(4), compute_default_max_parallelism(200)
    (128, 512)
    """
    p = _parallelism(parallelism, "parallelism")
    n = p + p // 2
    pow2 = 1 << (n - 1).bit_length()
    return min(max(pow2, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


@dataclass(frozen=True)
class KeyGroupRange:
    """An inclusive range ``[start, end]`` of key groups; the empty range is ``(0, -1)``.

    >>> r = KeyGroupRange(0, 42)
    >>> len(r), 42 in r, 43 in r
    (43, True, False)
    >>> r.intersection(KeyGroupRange(40, 50))
    KeyGroupRange(start=40, end=42)
    >>> KeyGroupRange.of(5, 3) == KeyGroupRange.empty()
    True
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if type(value) is not int:
                raise TypeError(
                    f"KeyGroupRange.{name} must be an int, got {type(value).__name__} "
                    f"({reprlib.repr(value)}); pass a whole number"
                )
        if self.start < 0 or (self.end < self.start and (self.start, self.end) != (0, -1)):
            raise ValueError(
                f"KeyGroupRange needs 0 <= start <= end, got start={self.start}, end={self.end}; "
                "use KeyGroupRange.of(start, end), which gives the empty range when start > end"
            )

    @classmethod
    def of(cls, start: int, end: int) -> KeyGroupRange:
        """The range ``[start, end]``, or the empty range when ``start > end``.

        >>> KeyGroupRange.of(3, 7)
        KeyGroupRange(start=3, end=7)
        """
        return cls(start, end) if start <= end else cls.empty()

    @classmethod
    def empty(cls) -> KeyGroupRange:
        """The range without key groups.

        >>> len(KeyGroupRange.empty())
        0
        """
        return cls(0, -1)

    def contains(self, key_group: int) -> bool:
        """Whether ``key_group`` is in the range.

        >>> KeyGroupRange(3, 7).contains(7)
        True
        """
        return self.start <= key_group <= self.end

    __contains__ = contains

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end + 1))

    def intersection(self, other: KeyGroupRange) -> KeyGroupRange:
        """The key groups in both ranges (possibly the empty range).

        >>> KeyGroupRange(0, 9).intersection(KeyGroupRange(10, 20)) == KeyGroupRange.empty()
        True
        """
        start, end = max(self.start, other.start), min(self.end, other.end)
        return KeyGroupRange(start, end) if start <= end else KeyGroupRange.empty()


def compute_key_group_range_for_operator_index(
    max_parallelism: int, parallelism: int, operator_index: int
) -> KeyGroupRange:
    """The key groups owned by subtask ``operator_index`` of ``parallelism``.

    ``start = (i * maxp + p - 1) // p``, ``end = ((i + 1) * maxp - 1) // p``; requires
    ``1 <= parallelism <= max_parallelism <= 32768`` and ``0 <= operator_index < parallelism``.

    >>> [compute_key_group_range_for_operator_index(10, 3, i) for i in range(3)]
    [KeyGroupRange(start=0, end=3), KeyGroupRange(start=4, end=6), KeyGroupRange(start=7, end=9)]
    """
    max_parallelism, parallelism = _check_parallelisms(max_parallelism, parallelism)
    operator_index = _index(operator_index, "operator_index", parallelism, "parallelism")
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return KeyGroupRange(start, end)
