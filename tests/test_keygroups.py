"""Key groups: Flink's own vectors, equality-respecting hashing, ranges and error messages.

``data/flink_key_groups.json`` is produced by ``tools/flink_oracle/generate.sh`` from Flink's
``KeyGroupRangeAssignment`` and ``MathUtils.murmurHash``; Python ``str`` keys are compared with Java
``String`` keys and Python ``int`` keys with Java ``Long`` keys.
"""

from __future__ import annotations

import enum
import itertools
import json
import math
import os
import pickle
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sparktide.runtime import keygroups
from sparktide.runtime.key_hash_columns import murmur_key_hashes
from sparktide.runtime.keygroups import (
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    KeyGroupCache,
    KeyGroupRange,
    assign_key_to_parallel_operator,
    assign_to_key_group,
    assign_to_key_groups,
    compute_default_max_parallelism,
    compute_key_group_for_key_hash,
    compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
    java_long_hash,
    java_string_hash,
    key_hash,
    murmur_hash,
)

ORACLE_PATH = Path(__file__).parent / "data" / "flink_key_groups.json"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    with ORACLE_PATH.open(encoding="utf-8") as f:
        return json.load(f)


# --------------------------------------------------------------------------------------------
# Flink's vectors
# --------------------------------------------------------------------------------------------


def test_oracle_covers_the_interesting_keys(oracle: dict[str, Any]) -> None:
    strings = [row[0] for row in oracle["string_keys"]]
    longs = {row[0] for row in oracle["long_keys"]}
    assert len(strings) >= 300 and len(longs) >= 300
    assert "" in strings
    assert any("\0" in s for s in strings)
    assert any(len(s) >= 1000 for s in strings)
    assert any(any("\u00c0" <= c <= "\u024f" for c in s) for s in strings)  # accented Latin
    assert any(any("\u4e00" <= c <= "\u9fff" for c in s) for s in strings)  # CJK
    assert any(any(ord(c) > 0xFFFF for c in s) for s in strings)  # surrogate pairs in Java
    assert any(any("\ud800" <= c <= "\udfff" for c in s) for s in strings)  # lone surrogates
    assert {0, 1, -1, INT_MIN, INT_MAX, INT_MIN - 1, INT_MAX + 1} <= longs
    assert {2**32, -(2**32), LONG_MIN, LONG_MAX} <= longs
    assert {1, 128, 256, 4096, 32768} <= set(oracle["max_parallelisms"])
    assert any(p % 2 for p in oracle["max_parallelisms"] if p > 1)


def _key_mismatches(oracle: dict[str, Any], section: str, java_hash: Any) -> list[str]:
    max_parallelisms = oracle["max_parallelisms"]
    pairs = oracle["operator_pairs"]
    bad = []
    for key, hash_code, murmured, groups, operators in oracle[section]:
        got = (
            java_hash(key),
            key_hash(key),
            murmur_hash(hash_code),
            [assign_to_key_group(key, p) for p in max_parallelisms],
            [compute_key_group_for_key_hash(hash_code, p) for p in max_parallelisms],
            [assign_key_to_parallel_operator(key, mp, p) for mp, p in pairs],
        )
        want = (hash_code, hash_code, murmured, groups, groups, operators)
        if got != want:
            bad.append(f"{key!r:.60}: got {got}, Flink {want}")
    return bad


def test_string_keys_match_flink(oracle: dict[str, Any]) -> None:
    assert _key_mismatches(oracle, "string_keys", java_string_hash) == []


def test_long_keys_match_flink(oracle: dict[str, Any]) -> None:
    assert _key_mismatches(oracle, "long_keys", java_long_hash) == []


def test_murmur_hash_matches_flink(oracle: dict[str, Any]) -> None:
    bad = [(code, murmur_hash(code), want) for code, want in oracle["murmur"]]
    assert [row for row in bad if row[1] != row[2]] == []
    assert len(bad) >= 100


def test_ranges_and_operator_indexes_match_flink(oracle: dict[str, Any]) -> None:
    checked = 0
    for case in oracle["ranges"]:
        maxp, p = case["max_parallelism"], case["parallelism"]
        got = [
            [r.start, r.end]
            for r in (compute_key_group_range_for_operator_index(maxp, p, i) for i in range(p))
        ]
        assert got == case["ranges"], (maxp, p)
        for key_group, operator_index in case["operator_index"]:
            assert compute_operator_index_for_key_group(maxp, p, key_group) == operator_index
            checked += 1
    assert checked > 1000


def test_range_preconditions_match_flink(oracle: dict[str, Any]) -> None:
    for maxp, p in oracle["range_errors"]:
        with pytest.raises(ValueError, match="parallelism"):
            compute_key_group_range_for_operator_index(maxp, p, 0)


def test_default_max_parallelism_matches_flink(oracle: dict[str, Any]) -> None:
    rows = oracle["default_max_parallelism"]
    assert [[p, compute_default_max_parallelism(p)] for p, _ in rows] == rows
    assert len(rows) > 1000
    for p in oracle["default_max_parallelism_errors"]:
        with pytest.raises(ValueError, match=r"parallelism must be in \[1, 32768\]"):
            compute_default_max_parallelism(p)


# --------------------------------------------------------------------------------------------
# Keys equal in Python get the same key group
# --------------------------------------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1
    BLUE = 2


class Name(str):
    """A str subclass (like ``enum.StrEnum`` members)."""


Point = namedtuple("Point", "x y")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=LONG_MIN, max_value=LONG_MAX),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False),
    st.floats(min_value=-(2**70), max_value=2**70).map(math.floor),
    st.text(max_size=30),
    st.binary(max_size=30),
)
keys = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=6)


def equal_variants(key: Any) -> list[Any]:
    """Keys of other types that are equal to ``key`` in Python."""
    out: list[Any] = []
    if isinstance(key, bool):
        out += [int(key), float(key)]
    elif isinstance(key, int):
        if float(key) == key:
            out.append(float(key))
        if key in (0, 1):
            out.append(bool(key))
        if LONG_MIN <= key <= LONG_MAX:
            np = pytest.importorskip("numpy")
            out.append(np.int64(key))
    elif isinstance(key, float):
        if key.is_integer():
            out.append(int(key))
        if key == 0.0:
            out.append(-key)
        np = pytest.importorskip("numpy")
        out.append(np.float64(key))
    elif isinstance(key, str):
        out.append(Name(key))
    elif isinstance(key, bytes):
        out.append(bytearray(key))
    elif isinstance(key, tuple):
        out.append(tuple(v[-1] if (v := equal_variants(item)) else item for item in key))
        if len(key) == 2:
            out.append(Point(*key))
    return out


@given(keys, st.sampled_from([1, 7, 128, 4096, 32768]))
@settings(max_examples=300, deadline=None)
def test_equal_keys_get_the_same_key_group(key: Any, max_parallelism: int) -> None:
    expected = assign_to_key_group(key, max_parallelism)
    assert 0 <= expected < max_parallelism
    for other in equal_variants(key):
        assert other == key
        assert key_hash(other) == key_hash(key), (key, other)
        assert assign_to_key_group(other, max_parallelism) == expected, (key, other)


@pytest.mark.parametrize(
    "equal_keys",
    [
        [1, 1.0, True, Color.RED],
        [0, 0.0, -0.0, False],
        [(1, "a"), (1.0, "a"), (True, Name("a")), Point(1, "a")],
        [(0.0, b"x"), (-0.0, bytearray(b"x")), (False, b"x")],
        [2**70, float(2**70)],
        [(2**63, "big"), (float(2**63), "big")],
        [LONG_MIN, float(LONG_MIN)],
        ["é", Name("é")],
        [((1, 2), 3), ((1.0, 2.0), 3.0)],
    ],
)
def test_known_equal_keys_get_the_same_key_group(equal_keys: list[Any]) -> None:
    groups = {assign_to_key_group(k, 32768) for k in equal_keys}
    hashes = {key_hash(k) for k in equal_keys}
    assert len(groups) == 1 and len(hashes) == 1, equal_keys


@given(st.lists(keys, max_size=30), st.sampled_from([1, 7, 128, 32768]))
@settings(max_examples=100, deadline=None)
def test_key_group_cache_gives_assign_to_key_group(batch: list[Any], max_parallelism: int) -> None:
    cache = KeyGroupCache(max_parallelism, size=8)
    for key in batch + batch:  # misses, then hits (or misses again after the cache emptied)
        try:
            hash(key)
        except TypeError:
            continue
        assert cache[key] == assign_to_key_group(key, max_parallelism), key
        assert len(cache) <= 8


def test_key_groups_by_columns_match_flink(oracle: dict[str, Any]) -> None:
    """A chunk's new keys get their groups together (numpy): Flink's, for every vector key."""
    for section in ("string_keys", "long_keys"):
        rows = oracle[section]
        batch = [row[0] for row in rows]
        for i, max_parallelism in enumerate(oracle["max_parallelisms"]):
            want = [row[3][i] for row in rows]
            assert KeyGroupCache(max_parallelism).groups(batch) == want, (section, max_parallelism)


text_keys = st.text(st.characters(max_codepoint=0x7F), max_size=70) | st.text(max_size=5)
column_keys = st.one_of(
    text_keys,
    st.integers(min_value=LONG_MIN - 2, max_value=LONG_MAX + 2),
    st.sampled_from([LONG_MIN, LONG_MAX, 0, -1, True, False, None, 1.0, b"", (1, "a")]),
)


@given(st.lists(column_keys, max_size=60), st.sampled_from([1, 7, 128, 32768]), st.integers(1, 9))
@settings(max_examples=200, deadline=None)
def test_key_groups_by_columns_give_assign_to_key_group(
    batch: list[Any], max_parallelism: int, size: int
) -> None:
    """Random str (ASCII up to and beyond the length taken by columns, and not), int (inside
    and just outside a Java long) and other keys, repeated, through a small cache: the groups
    key by key, the cache no larger than its size."""
    cache = KeyGroupCache(max_parallelism, size=size)
    want = [assign_to_key_group(k, max_parallelism) for k in batch]
    for _ in range(2):  # misses, then hits (or misses again after the cache emptied)
        assert cache.groups(batch) == want
        assert len(cache) <= size
    assert assign_to_key_groups(batch, max_parallelism) == want  # no cache
    murmured = murmur_key_hashes(batch)
    taken = [(k, h) for k, h in zip(batch, murmured, strict=True) if h >= 0]
    assert [h for _, h in taken] == [murmur_hash(key_hash(k)) for k, _ in taken]
    by_columns = [
        k
        for k in batch
        if (type(k) is str and len(k) <= 64 and k.isascii())
        or (type(k) is int and LONG_MIN <= k <= LONG_MAX)
    ]
    assert [k for k, _ in taken] == by_columns


@given(st.lists(text_keys, min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_key_hashes_of_strings_only_are_those_of_each_key(batch: list[str]) -> None:
    """A batch of strings only (hashed together when all of them can be: non-empty, ASCII, at
    most 64 characters; else as in a mixed batch)."""
    murmured = murmur_key_hashes(batch)
    for key, h in zip(batch, murmured, strict=True):
        assert h == (murmur_hash(key_hash(key)) if len(key) <= 64 and key.isascii() else -1)


@given(st.lists(st.integers(min_value=LONG_MIN - 2, max_value=LONG_MAX + 2), min_size=1))
@settings(max_examples=200, deadline=None)
def test_key_hashes_of_ints_only_are_those_of_each_key(batch: list[int]) -> None:
    """A batch of ints only (hashed together when all of them are Java longs)."""
    murmured = murmur_key_hashes(batch)
    for key, h in zip(batch, murmured, strict=True):
        assert h == (murmur_hash(key_hash(key)) if LONG_MIN <= key <= LONG_MAX else -1)


def test_key_groups_by_columns_refuse_what_the_cache_refuses() -> None:
    cache = KeyGroupCache(128)
    with pytest.raises(TypeError, match="unhashable"):
        cache.groups(["a", [1, 2]])
    with pytest.raises(TypeError, match="unsupported key type object"):
        cache.groups(["a", object()])
    with pytest.raises(TypeError, match="unsupported key type object"):
        assign_to_key_groups(["a", object()], 128)
    with pytest.raises(ValueError, match="max_parallelism"):
        assign_to_key_groups(["a"], 0)


def test_key_group_cache_refuses_what_a_dict_and_key_hash_refuse() -> None:
    cache = KeyGroupCache(128)
    with pytest.raises(TypeError, match="unhashable"):
        cache[[1, 2]]
    with pytest.raises(TypeError, match="unsupported key type object"):
        cache[object()]
    with pytest.raises(ValueError, match="max_parallelism"):
        KeyGroupCache(0)
    assert len(cache) == 0


def test_numpy_scalars_hash_like_the_python_values() -> None:
    np = pytest.importorskip("numpy")
    cases = [
        (np.int64(-5), -5),
        (np.int32(7), 7),
        (np.uint8(200), 200),
        (np.bool_(True), 1),
        (np.float64(2.5), 2.5),
        (np.float32(0.5), 0.5),
        (np.str_("k"), "k"),
        (np.bytes_(b"k"), b"k"),
    ]
    for numpy_key, plain in cases:
        assert numpy_key == plain
        assert key_hash(numpy_key) == key_hash(plain), numpy_key
        assert key_hash((numpy_key, "x")) == key_hash((plain, "x")), numpy_key


def test_str_and_int_keys_use_java_hash_codes() -> None:
    assert key_hash("hello") == java_string_hash("hello") == 99162322
    assert key_hash("\U0001f600") == 31 * 0xD83D + 0xDE00  # the surrogate pair, as in Java
    assert key_hash(2**32) == java_long_hash(2**32) == 1
    assert key_hash(-1) == 0
    assert key_hash(3.0) == java_long_hash(3)
    # outside the long range: a stable hash of the canonical encoding instead
    assert key_hash(2**63) == key_hash(float(2**63))


def test_distinct_keys_of_different_types_are_spread() -> None:
    # not a guarantee, but the canonical encoding is type-tagged: these must not all collide
    assert len({key_hash(k) for k in [None, b"", (), ("",), (None,), 0.5, b"a", ("a",)]}) == 8


@given(st.text(max_size=2000))
@settings(max_examples=200, deadline=None)
def test_java_string_hash_is_the_utf16_polynomial(s: str) -> None:
    units = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    assert java_string_hash(s) == (h - 2**32 if h >= 2**31 else h)


@given(st.integers(min_value=LONG_MIN, max_value=LONG_MAX))
def test_java_long_hash_is_xor_of_halves(v: int) -> None:
    u = v & (2**64 - 1)
    h = (u ^ (u >> 32)) & 0xFFFFFFFF
    assert java_long_hash(v) == (h - 2**32 if h >= 2**31 else h)


@given(st.integers(min_value=INT_MIN, max_value=INT_MAX))
def test_murmur_hash_is_non_negative_and_wraps_like_java(code: int) -> None:
    h = murmur_hash(code)
    assert 0 <= h <= INT_MAX
    assert murmur_hash(code + 2**32) == h  # Java's (int) cast


@given(keys, st.integers(min_value=1, max_value=UPPER_BOUND_MAX_PARALLELISM))
@settings(max_examples=300, deadline=None)
def test_key_group_is_in_range_and_stable(key: Any, max_parallelism: int) -> None:
    kg = assign_to_key_group(key, max_parallelism)
    assert 0 <= kg < max_parallelism
    assert assign_to_key_group(key, max_parallelism) == kg  # second call hits the cache
    assert compute_key_group_for_key_hash(key_hash(key), max_parallelism) == kg
    assert assign_to_key_group(pickle.loads(pickle.dumps(key)), max_parallelism) == kg


# --------------------------------------------------------------------------------------------
# Ranges and operator indexes
# --------------------------------------------------------------------------------------------


def _check_partition(max_parallelism: int, parallelism: int, all_key_groups: bool) -> None:
    ranges = [
        compute_key_group_range_for_operator_index(max_parallelism, parallelism, i)
        for i in range(parallelism)
    ]
    assert ranges[0].start == 0 and ranges[-1].end == max_parallelism - 1
    for left, right in itertools.pairwise(ranges):
        assert right.start == left.end + 1
    assert all(len(r) >= 1 for r in ranges)
    assert sum(len(r) for r in ranges) == max_parallelism
    # sizes differ by at most one key group
    assert max(map(len, ranges)) - min(map(len, ranges)) <= 1
    if all_key_groups:
        key_groups: Any = range(max_parallelism)
    else:
        key_groups = {0, max_parallelism - 1}
        for r in ranges:
            key_groups |= {r.start, r.end}
    for kg in key_groups:
        op = compute_operator_index_for_key_group(max_parallelism, parallelism, kg)
        assert kg in ranges[op], (max_parallelism, parallelism, kg, op)


@pytest.mark.parametrize("max_parallelism", [1, 2, 3, 7, 10, 128, 129, 256])
def test_ranges_partition_key_groups_for_every_parallelism(max_parallelism: int) -> None:
    for parallelism in range(1, max_parallelism + 1):
        _check_partition(max_parallelism, parallelism, all_key_groups=True)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_ranges_partition_key_groups_sampled(data: st.DataObject) -> None:
    max_parallelism = data.draw(st.integers(1, UPPER_BOUND_MAX_PARALLELISM), "max_parallelism")
    parallelism = data.draw(st.integers(1, min(max_parallelism, 1000)), "parallelism")
    _check_partition(max_parallelism, parallelism, all_key_groups=False)
    kg = data.draw(st.integers(0, max_parallelism - 1), "key_group")
    op = compute_operator_index_for_key_group(max_parallelism, parallelism, kg)
    assert kg in compute_key_group_range_for_operator_index(max_parallelism, parallelism, op)


def test_default_max_parallelism_bounds() -> None:
    assert compute_default_max_parallelism(1) == DEFAULT_LOWER_BOUND_MAX_PARALLELISM
    assert compute_default_max_parallelism(86) == 256  # 86 + 43 = 129 -> 256
    assert compute_default_max_parallelism(85) == 128  # 85 + 42 = 127 -> 128
    assert compute_default_max_parallelism(32768) == UPPER_BOUND_MAX_PARALLELISM


def test_key_group_range_value_semantics() -> None:
    r = KeyGroupRange(3, 7)
    assert list(r) == [3, 4, 5, 6, 7] and len(r) == 5
    assert 3 in r and 7 in r and 8 not in r and r.contains(5)
    assert KeyGroupRange.of(7, 3) == KeyGroupRange.empty() == KeyGroupRange(0, -1)
    assert len(KeyGroupRange.empty()) == 0 and list(KeyGroupRange.empty()) == []
    assert r.intersection(KeyGroupRange(6, 20)) == KeyGroupRange(6, 7)
    assert r.intersection(KeyGroupRange(8, 9)) == KeyGroupRange.empty()
    assert pickle.loads(pickle.dumps(r)) == r
    with pytest.raises(AttributeError):
        r.start = 0  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Stability across processes
# --------------------------------------------------------------------------------------------

STABILITY_KEYS = """[
    "", "a", "hello", "\\u00e9\\u4e2d\\U0001f600", "\\x00", "\\ud800", b"", b"bytes\\xff",
    0.5, -1.25, 1e300, float("inf"), float("-inf"), 2.0 ** 70, 3.0, 42, -7, 2 ** 64, None, True,
    (), ("a", 1),
    ("a", (b"b", 2.5, None)), ((1, 2), (3, (4, "x"))), (float("inf"), -0.0),
]"""

_STABILITY_SCRIPT = """
import json, sys
from sparktide.runtime.keygroups import assign_to_key_group, key_hash
keys = eval(sys.stdin.read())
print(json.dumps([[key_hash(k), assign_to_key_group(k, 32768)] for k in keys]))
"""


def _groups_in_subprocess(hash_seed: str) -> list[list[int]]:
    src = str(Path(keygroups.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", _STABILITY_SCRIPT],
        input=STABILITY_KEYS,
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    return json.loads(result.stdout)


def test_key_groups_are_stable_across_processes() -> None:
    local = [[key_hash(k), assign_to_key_group(k, 32768)] for k in eval(STABILITY_KEYS)]
    assert _groups_in_subprocess("1") == local
    assert _groups_in_subprocess("4242") == local


def test_canonical_hashes_are_pinned() -> None:
    # Changing these moves keyed state and timers of non-str/int keys to other key groups:
    # checkpoints taken before the change would no longer restore into the right operator.
    assert [key_hash(k) for k in [None, b"", b"ab", 0.5, ("a", 1), 2**64]] == [
        109,
        89581537,
        188516164,
        -1165141555,
        -2019767495,
        -319598160,
    ]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "type_name", "fix"),
    [
        ([1, 2], "list", "tuple(key)"),
        ({"a": 1}, "dict", "tuple(sorted(key.items()))"),
        ({1, 2}, "set", "tuple(sorted(key))"),
        (frozenset({1}), "frozenset", "tuple(sorted(key))"),
        (object(), "object", "key by a tuple of the fields"),
        (1 + 2j, "complex", "convert it to an int, float or bytes"),
    ],
)
def test_unsupported_key_types_raise(key: Any, type_name: str, fix: str) -> None:
    for call in (
        lambda: key_hash(key),
        lambda: assign_to_key_group(key, 128),
        lambda: assign_key_to_parallel_operator(key, 128, 4),
    ):
        with pytest.raises(TypeError) as info:
            call()
        message = str(info.value)
        assert f"unsupported key type {type_name} " in message
        assert fix in message
        assert "keys must be None, bool, int, float, str, bytes" in message
        assert info.value.__context__ is None  # no "during handling of ..." noise


@pytest.mark.parametrize(
    ("key", "type_name"),
    [
        ((1, [2]), "list"),
        (("a", (1, {"b": 2})), "dict"),
        ((1, (2, (3, {4}))), "set"),
        (("a", object()), "object"),
    ],
)
def test_unsupported_members_of_tuple_keys_raise(key: Any, type_name: str) -> None:
    with pytest.raises(
        TypeError, match=f"unsupported key type {type_name} .* inside the tuple key"
    ):
        assign_to_key_group(key, 128)


@pytest.mark.parametrize("max_parallelism", [0, -1, 32769])
def test_bad_max_parallelism_values(max_parallelism: int) -> None:
    with pytest.raises(ValueError, match=r"max_parallelism must be in \[1, 32768\], got"):
        assign_to_key_group("k", max_parallelism)
    with pytest.raises(ValueError, match=r"max_parallelism must be in \[1, 32768\], got"):
        compute_key_group_for_key_hash(5, max_parallelism)


@pytest.mark.parametrize("max_parallelism", [128.0, "128", None, True])
def test_bad_max_parallelism_types(max_parallelism: Any) -> None:
    with pytest.raises(TypeError, match="max_parallelism must be an int, got"):
        assign_to_key_group("k", max_parallelism)


def test_bad_operator_arguments() -> None:
    with pytest.raises(ValueError, match="parallelism must not exceed max_parallelism"):
        compute_operator_index_for_key_group(4, 8, 0)
    with pytest.raises(ValueError, match=r"key_group must be in \[0, max_parallelism\)"):
        compute_operator_index_for_key_group(128, 4, 128)
    with pytest.raises(ValueError, match=r"key_group must be in \[0, max_parallelism\)"):
        compute_operator_index_for_key_group(128, 4, -1)
    with pytest.raises(ValueError, match=r"operator_index must be in \[0, parallelism\)"):
        compute_key_group_range_for_operator_index(128, 4, 4)
    with pytest.raises(TypeError, match="parallelism must be an int"):
        compute_default_max_parallelism(2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"parallelism must be in \[1, 32768\]"):
        assign_key_to_parallel_operator("k", 128, 0)


def test_bad_arguments_of_the_java_hashes() -> None:
    with pytest.raises(TypeError, match="s must be a str, got bytes"):
        java_string_hash(b"x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="v must fit a Java long"):
        java_long_hash(2**63)
    with pytest.raises(TypeError, match="v must be an int, got str"):
        java_long_hash("1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="code must be an int"):
        murmur_hash(1.5)  # type: ignore[arg-type]


def test_bad_key_group_ranges() -> None:
    with pytest.raises(ValueError, match="KeyGroupRange needs 0 <= start <= end"):
        KeyGroupRange(5, 3)
    with pytest.raises(ValueError, match="KeyGroupRange needs 0 <= start <= end"):
        KeyGroupRange(-1, 3)
    with pytest.raises(TypeError, match=r"KeyGroupRange\.end must be an int"):
        KeyGroupRange(0, 3.0)  # type: ignore[arg-type]


@given(st.sampled_from([1, 5, 128, 32768]), st.integers())
def test_any_int_hash_maps_into_range(max_parallelism: int, code: int) -> None:
    assume(INT_MIN <= code <= INT_MAX)
    assert 0 <= compute_key_group_for_key_hash(code, max_parallelism) < max_parallelism
