"""The byte layout of state and timers in RocksDB: equal keys give equal bytes, round trips keep
values and their types, no prefix aliases, timestamps and key groups sort as numbers."""

from __future__ import annotations

import enum
import math
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.row_kind import RowKind
from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.core.window.windows import CountWindow, GlobalWindow, TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state.rocksdb_layout import (
    NamespaceKind,
    decode_timestamp,
    encode_timestamp,
    key_codec,
    key_group_bounds,
    key_group_of,
    key_group_prefix,
    namespace_codec,
    state_key,
    value_codec,
)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
GENERIC = key_codec(None)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2]),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5]),
    st.text(max_size=6),
    st.binary(max_size=6),
)
keys = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=6)


def same_shape(a: object, b: object) -> bool:
    """Equal, with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)


@settings(max_examples=400, deadline=None)
@given(keys, keys)
def test_key_bytes_are_equal_exactly_for_keys_python_treats_as_equal(a, b):
    ka, kb = GENERIC.key_bytes(a), GENERIC.key_bytes(b)
    assert (ka == kb) == (a == b)
    if ka == kb:
        assert assign_to_key_group(a, 128) == assign_to_key_group(b, 128)
    else:  # self-delimiting: one key's bytes never start another's
        assert not kb.startswith(ka) and not ka.startswith(kb)


@settings(max_examples=300, deadline=None)
@given(keys)
def test_undeclared_keys_round_trip_with_their_types(key):
    assert same_shape(GENERIC.decode_value(GENERIC.value_bytes(key)), key)
    assert GENERIC.decode_key(GENERIC.key_bytes(key)) == key
    # a value's bytes are self-delimiting too: decoding stops where they end
    data = GENERIC.value_bytes(key) + b"tail"
    _, end = GENERIC.decode_value_from(data, 0)
    assert data[end:] == b"tail"


class Color(enum.IntEnum):
    RED = 1


class Name(str):
    __slots__ = ()


Point = namedtuple("Point", "x y")


def test_the_equal_keys_the_heap_merges_give_one_encoding():
    groups = [
        [1, 1.0, True, Color.RED, np.int64(1), np.float32(1.0), np.bool_(True)],
        [0, 0.0, -0.0, False],
        ["a", Name("a"), np.str_("a")],
        [(1, "a"), (1.0, "a"), Point(1, "a"), (True, Name("a"))],
    ]
    for group in groups:
        assert len({GENERIC.key_bytes(k) for k in group}) == 1, group
        for k in group:  # and each comes back as the object it was
            assert same_shape(GENERIC.decode_value(GENERIC.value_bytes(k)), k)
    assert GENERIC.key_bytes(math.nan) == GENERIC.key_bytes(float("nan"))
    assert GENERIC.key_bytes(0.5) != GENERIC.key_bytes(0.25)
    assert GENERIC.key_bytes((1,)) != GENERIC.key_bytes(1)
    assert GENERIC.key_bytes("1") != GENERIC.key_bytes(1)
    assert GENERIC.key_bytes(b"a") != GENERIC.key_bytes("a")


def test_unsupported_keys_are_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"unsupported key type list .* tuple\(key\)"):
        GENERIC.key_bytes([1, 2])
    with pytest.raises(TypeError, match="declare the key's type information"):
        GENERIC.key_bytes({"a": 1})
    with pytest.raises(TypeError, match="type_info must be a TypeInformation"):
        key_codec("LONG")  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.integers(LONG_MIN, LONG_MAX), st.integers(LONG_MIN, LONG_MAX))
def test_timestamps_sort_as_numbers(a, b):
    ea, eb = encode_timestamp(a), encode_timestamp(b)
    assert len(ea) == 8
    assert (ea < eb) == (a < b)
    assert decode_timestamp(ea) == a
    assert key_codec(Types.LONG()).key_bytes(a) == ea  # a LONG key is a timestamp's layout


def test_timestamps_outside_a_long_are_refused():
    for bad in (2**63, LONG_MIN - 1, 1.5, None, True):
        with pytest.raises(ValueError, match="Java long"):
            encode_timestamp(bad)


@pytest.mark.parametrize(
    ("type_info", "values"),
    [
        (Types.BYTE(), [-128, -1, 0, 127]),
        (Types.SHORT(), [-(2**15), -3, 0, 2**15 - 1]),
        (Types.INT(), [-(2**31), -1, 0, 7, 2**31 - 1]),
        (Types.LONG(), [LONG_MIN, -1, 0, 1, LONG_MAX]),
        (Types.DOUBLE(), [-math.inf, -2.5, 0.0, 1.0, 3.25, math.inf]),
        (Types.FLOAT(), [-1.5, 0.0, 2.5]),
        (Types.BOOLEAN(), [False, True]),
        (Types.STRING(), ["", "a", "ab", "b", "\ud800", "\U0001f600"]),
        (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("a", 2), ("b", -1)]),
    ],
    ids=str,
)
def test_declared_types_round_trip_and_are_self_delimiting(type_info, values):
    codec = key_codec(type_info)
    encoded = [codec.key_bytes(v) for v in values]
    assert len(set(encoded)) == len(values)
    for v, data in zip(values, encoded, strict=True):
        assert same_shape(codec.decode_value(data), v)
        assert codec.decode_value_from(data + b"tail", 0)[1] == len(data)
        assert codec.value_bytes(v) == data
    for a in encoded:
        for b in encoded:
            assert a == b or not b.startswith(a)


def test_declared_numbers_merge_the_values_python_treats_as_equal():
    double = key_codec(Types.DOUBLE())
    assert double.key_bytes(0.0) == double.key_bytes(-0.0)
    assert double.key_bytes(1) == double.key_bytes(1.0)
    assert double.key_bytes(math.nan) == double.key_bytes(-math.nan)
    with pytest.raises(TypeError, match="holds an int, got bool"):
        key_codec(Types.LONG()).key_bytes(True)  # PyFlink refuses it too


def test_rows_keep_names_kind_and_nulls():
    row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    codec = key_codec(row_type)
    row = Row(id=1, name=None)
    back = codec.decode_value(codec.key_bytes(row))
    assert back == row and back.as_dict() == {"id": 1, "name": None}
    deleted = Row.of_kind(RowKind.DELETE, 1, None)
    deleted.set_field_names(["id", "name"])
    assert codec.key_bytes(deleted) != codec.key_bytes(row)
    assert codec.decode_value(codec.key_bytes(deleted)).get_row_kind() is RowKind.DELETE


def test_values_without_a_layout_are_pickled():
    for type_info in (None, Types.PICKLED_BYTE_ARRAY(), Types.LIST(Types.INT())):
        codec = value_codec(type_info)
        assert codec.decode_value(codec.value_bytes({"a": [1, 2]})) == {"a": [1, 2]}
    assert value_codec(Types.LONG()).value_bytes(5) == key_codec(Types.LONG()).key_bytes(5)
    # keys of such types fall back to the canonical encoding, never to a pickle
    assert key_codec(Types.PICKLED_BYTE_ARRAY()).key_bytes(1.0) == GENERIC.key_bytes(True)


def test_namespaces_have_fixed_bytes():
    tw = namespace_codec(NamespaceKind.TIME_WINDOW)
    windows = [TimeWindow(-10, -5), TimeWindow(-10, 0), TimeWindow(0, 5), TimeWindow(3, 4)]
    encoded = [tw.key_bytes(w) for w in windows]
    assert encoded == sorted(encoded) and {len(e) for e in encoded} == {16}
    assert [type(tw.decode_value(e)) for e in encoded] == [TimeWindow] * 4
    assert namespace_codec(NamespaceKind.GLOBAL_WINDOW).key_bytes(GlobalWindow()) == b""
    assert namespace_codec(NamespaceKind.VOID).key_bytes(None) == b""
    cw = namespace_codec(NamespaceKind.COUNT_WINDOW)
    assert cw.decode_value(cw.key_bytes(CountWindow(7))) == CountWindow(7)
    anyns = namespace_codec()
    for ns in (None, TimeWindow(1, 2), GlobalWindow(), CountWindow(3), "CLEANUP_LEFT"):
        data = anyns.key_bytes(ns)
        assert anyns.decode_value(data) == ns and type(anyns.decode_value(data)) is type(ns)
    with pytest.raises(TypeError, match="namespace must be a TimeWindow, got tuple"):
        tw.key_bytes((1, 2))
    with pytest.raises(TypeError, match="keep state with other namespaces on the heap"):
        anyns.key_bytes(("custom",))
    with pytest.raises(TypeError, match=r"kind must be a NamespaceKind, got str .*TIME_WINDOW"):
        namespace_codec("time_window")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**15 - 1), keys, st.sampled_from([None, TimeWindow(0, 5)])),
        max_size=30,
    ),
    st.integers(0, 2**15 - 1),
    st.integers(0, 2**15 - 1),
)
def test_a_key_group_range_is_one_contiguous_range_of_store_keys(entries, a, b):
    ns = namespace_codec()
    store = sorted(state_key(kg, GENERIC.key_bytes(k), ns.key_bytes(n)) for kg, k, n in entries)
    assert [key_group_of(s) for s in store] == sorted(kg for kg, _, _ in entries)
    rng = KeyGroupRange.of(min(a, b), max(a, b))
    begin, end = key_group_bounds(rng)
    inside = [s for s in store if begin <= s < end]
    assert inside == [s for s in store if key_group_of(s) in rng]
    # the entries of one key in one key group are contiguous too
    for kg, k, _ in entries:
        prefix = key_group_prefix(kg) + GENERIC.key_bytes(k)
        hits = [i for i, s in enumerate(store) if s.startswith(prefix)]
        assert hits == list(range(hits[0], hits[-1] + 1))


def test_key_group_prefix_is_checked():
    assert key_group_prefix(32767) == b"\x7f\xff"
    assert key_group_bounds(KeyGroupRange(0, 32767)) == (b"\x00\x00", b"\x80\x00")
    with pytest.raises(ValueError, match=r"key_group must be an int in \[0, 32768\)"):
        key_group_prefix(32768)


ROW_TYPE = Types.ROW_NAMED(
    ["id", "name", "score", "ok"], [Types.LONG(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN()]
)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(LONG_MIN, LONG_MAX),
    st.none() | st.text(max_size=5),
    st.floats(allow_nan=False),
    st.booleans(),
)
def test_declared_tuples_and_rows_round_trip(id_, name, score, ok):
    row = Row(id=id_, name=name, score=score, ok=ok)
    codec = key_codec(ROW_TYPE)
    data = codec.key_bytes(row)
    assert codec.decode_value(data) == row
    assert codec.decode_value_from(data + b"ns", 0)[1] == len(data)
    pair = key_codec(Types.TUPLE([Types.LONG(), Types.DOUBLE()]))
    assert same_shape(pair.decode_value(pair.key_bytes((id_, score))), (id_, score))
    # Python-equal tuples give equal bytes: the double field takes ints and -0.0 as the float
    assert pair.key_bytes((id_, float(int(score)) if math.isfinite(score) else score)) == (
        pair.key_bytes((id_, int(score) if math.isfinite(score) else score))
    )
