"""Keyed state without TTL: descriptors, every state kind, scoping, merging, snapshot/restore."""

from __future__ import annotations

import doctest
import pickle
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparktide.datastream.state as public_state
import sparktide.runtime.state as runtime_state_pkg
import sparktide.runtime.state.backend as backend_mod
import sparktide.runtime.state.cleanup as cleanup_mod
import sparktide.runtime.state.heap as heap_mod
import sparktide.runtime.state.ttl as ttl_mod
from sparktide.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import (
    KeyGroupRange,
    assign_to_key_group,
    compute_key_group_range_for_operator_index,
)
from sparktide.runtime.state import HeapKeyedStateBackend
from state_backends import Backend, BackendFactory, BackendUnderTest

MAXP = 128


# Every test runs on both backends (the ``make_backend`` fixture of conftest.py) unless it
# inspects the heap backend's internals: those are listed here with the reason.
HEAP_ONLY = {
    "test_doctests": "runs the heap modules' doctests (the RocksDB ones run in their own tests)",
}
UNDER_TEST = BackendUnderTest(HEAP_ONLY)


@pytest.fixture(autouse=True)
def _each_backend(request: pytest.FixtureRequest, make_backend: BackendFactory) -> Iterator[None]:
    yield from UNDER_TEST.use(request, make_backend)


def make_backend(
    key_group_range: KeyGroupRange | None = None, maxp: int = MAXP, now: int = 0
) -> Backend:
    """A backend of the kind under test (heap or RocksDB)."""
    return UNDER_TEST(key_group_range, maxp, now)


class Avg:
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Concat:
    def reduce(self, a, b):
        return a + b


def add(a, b):
    return a + b


def all_descriptors() -> dict[str, Any]:
    return {
        "value": ValueStateDescriptor("value", None),
        "list": ListStateDescriptor("list", None),
        "map": MapStateDescriptor("map", None, None),
        "reducing": ReducingStateDescriptor("reducing", add, None),
        "aggregating": AggregatingStateDescriptor("aggregating", Avg(), None),
    }


def fill(backend: Backend, keys: list[Any], namespaces=(None, "w1")) -> None:
    """Write every state kind for every key and namespace."""
    ds = all_descriptors()
    for ns in namespaces:
        v = backend.get_partitioned_state(ds["value"], ns)
        lst = backend.get_partitioned_state(ds["list"], ns)
        m = backend.get_partitioned_state(ds["map"], ns)
        r = backend.get_partitioned_state(ds["reducing"], ns)
        a = backend.get_partitioned_state(ds["aggregating"], ns)
        for i, key in enumerate(keys):
            backend.set_current_key(key)
            v.update((key, ns))
            lst.add_all([i, i + 1])
            m.put("k", i)
            m.put(("t", i), [i])
            r.add(i)
            r.add(1)
            a.add(i)


# ------------------------------------------------------------------------------ doctests


@pytest.mark.parametrize(
    "module", [public_state, runtime_state_pkg, backend_mod, heap_mod, ttl_mod, cleanup_mod]
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# ------------------------------------------------------------------------------ descriptors


@pytest.mark.parametrize("name", ["", None, 3, b"x"])
def test_descriptor_name_must_be_non_empty_str(name):
    with pytest.raises(ValueError, match="name must be a non-empty str"):
        ValueStateDescriptor(name, None)
    with pytest.raises(ValueError, match="name"):
        MapStateDescriptor(name, None, None)


def test_descriptors_store_type_infos_and_functions():
    assert ValueStateDescriptor("v", "INT").type_info == "INT"
    assert ListStateDescriptor("l", "STR").elem_type_info == "STR"
    m = MapStateDescriptor("m", "K", "V")
    assert (m.key_type_info, m.value_type_info, m.get_name()) == ("K", "V", "m")
    r = ReducingStateDescriptor("r", Concat(), "T")
    assert isinstance(r.get_reduce_function(), Concat)
    assert r.reduce("a", "b") == "ab"
    assert ReducingStateDescriptor("r", add, None).reduce(1, 2) == 3
    agg = Avg()
    assert AggregatingStateDescriptor("a", agg, None).get_agg_function() is agg
    assert repr(ValueStateDescriptor("v", None)) == "ValueStateDescriptor('v')"


def test_descriptor_validation_errors():
    with pytest.raises(TypeError, match="reduce_function"):
        ReducingStateDescriptor("r", "not callable", None)
    with pytest.raises(TypeError, match="agg_function"):
        AggregatingStateDescriptor("a", Concat(), None)
    d = ValueStateDescriptor("v", None)
    with pytest.raises(TypeError, match="ttl_config"):
        d.enable_time_to_live(1000)
    with pytest.raises(AttributeError):
        d.name = "other"


def test_descriptor_enable_time_to_live():
    d = ListStateDescriptor("l", None)
    assert d.ttl_config is None
    cfg = StateTtlConfig.new_builder(1000).build()
    assert d.enable_time_to_live(cfg) is None
    assert d.ttl_config is cfg


def test_descriptors_and_ttl_config_pickle():
    cfg = (
        StateTtlConfig.new_builder(5000)
        .update_ttl_on_read_and_write()
        .cleanup_incrementally(3, True)
        .build()
    )
    d = ReducingStateDescriptor("r", add, "T")
    d.enable_time_to_live(cfg)
    back = pickle.loads(pickle.dumps(d))
    assert back.name == "r" and back.type_info == "T" and back.reduce(2, 3) == 5
    assert back.ttl_config == cfg
    m = pickle.loads(pickle.dumps(MapStateDescriptor("m", "K", "V")))
    assert (m.key_type_info, m.value_type_info) == ("K", "V")


def test_public_state_classes_are_abstract():
    for cls in (ValueState, ListState, MapState, ReducingState, AggregatingState):
        with pytest.raises(TypeError):
            cls()


# ------------------------------------------------------------------------------ backend basics


def test_backend_constructor_validation():
    with pytest.raises(ValueError, match="max_parallelism"):
        make_backend(maxp=0)
    with pytest.raises(ValueError, match="key_group_range"):
        make_backend(KeyGroupRange(0, 200))
    with pytest.raises(TypeError, match="key_group_range"):
        HeapKeyedStateBackend(max_parallelism=8, key_group_range=(0, 7), time_provider=lambda: 0)
    with pytest.raises(TypeError, match="time_provider"):
        HeapKeyedStateBackend(
            max_parallelism=8, key_group_range=KeyGroupRange(0, 7), time_provider=0
        )
    b = make_backend(KeyGroupRange(3, 9))
    assert (b.max_parallelism, b.key_group_range) == (MAXP, KeyGroupRange(3, 9))
    assert b.time_provider() == 0


def test_set_current_key_computes_the_key_group():
    b = make_backend()
    for key in ["a", 17, ("t", 1), None, 2.5, b"x"]:
        b.set_current_key(key)
        assert b.current_key == key
        assert b.current_key_group == assign_to_key_group(key, MAXP)
    # equal keys share a key group and the state entry
    s = b.get_partitioned_state(ValueStateDescriptor("v", None))
    b.set_current_key(1)
    s.update("one")
    b.set_current_key(1.0)
    assert s.value() == "one"


def test_set_current_key_errors():
    kg_a = assign_to_key_group("a", MAXP)
    b = make_backend(KeyGroupRange(kg_a + 1, MAXP - 1) if kg_a < MAXP - 1 else KeyGroupRange(0, 0))
    with pytest.raises(ValueError, match=rf"key group {kg_a}.*range \["):
        b.set_current_key("a")
    with pytest.raises(TypeError, match="unsupported key type"):
        b.set_current_key(object())
    with pytest.raises(TypeError, match="unsupported key type"):
        b.set_current_key([1, 2])
    with pytest.raises(TypeError, match="hashable"):
        make_backend().set_current_key(bytearray(b"x"))
    with pytest.raises(ValueError, match="key_group"):
        b.set_current_key_and_group("a", kg_a)


def test_set_current_key_and_group_skips_hashing():
    b = make_backend()
    s = b.get_partitioned_state(ValueStateDescriptor("v", None))
    kg = assign_to_key_group("k", MAXP)
    b.set_current_key_and_group("k", kg)
    s.update(1)
    b.set_current_key("k")
    assert s.value() == 1
    assert (b.current_key, b.current_key_group) == ("k", kg)


def test_state_access_without_current_key_is_a_clear_error():
    b = make_backend()
    for d in all_descriptors().values():
        s = b.get_partitioned_state(d)
        with pytest.raises(RuntimeError, match="no current key"):
            s.clear()
    with pytest.raises(RuntimeError, match="no current key"):
        b.get_partitioned_state(ValueStateDescriptor("value", None)).value()
    with pytest.raises(RuntimeError, match="no current key"):
        b.get_partitioned_state(ListStateDescriptor("list", None)).add(1)
    with pytest.raises(RuntimeError, match="no current key"):
        b.get_partitioned_state(MapStateDescriptor("map", None, None)).get("x")


def test_unhashable_namespace_raises_type_error():
    b = make_backend()
    s = b.get_partitioned_state(ValueStateDescriptor("v", None), namespace=None)
    b.set_current_key("k")
    s.set_current_namespace([1])
    with pytest.raises(TypeError, match="unhashable"):
        s.update(1)


def test_get_partitioned_state_rejects_non_descriptors():
    with pytest.raises(TypeError, match="descriptor must be"):
        make_backend().get_partitioned_state("count")


def test_kind_mismatch_names_the_state_and_both_kinds():
    b = make_backend()
    b.get_partitioned_state(ValueStateDescriptor("s", None))
    with pytest.raises(ValueError, match=r"'s' is a value state.*describes a list state"):
        b.get_partitioned_state(ListStateDescriptor("s", None))
    ttl = ValueStateDescriptor("s", None)
    ttl.enable_time_to_live(StateTtlConfig.new_builder(10).build())
    with pytest.raises(ValueError, match="value state with TTL"):
        b.get_partitioned_state(ttl)
    with pytest.raises(ValueError, match="list state"):
        b.get_internal_state(ListStateDescriptor("s", None))


def test_same_name_shares_entries_and_void_state_is_cached():
    b = make_backend()
    s1 = b.get_partitioned_state(ValueStateDescriptor("v", None))
    s2 = b.get_partitioned_state(ValueStateDescriptor("v", None))
    assert s1 is s2
    internal = b.get_internal_state(ValueStateDescriptor("v", None))
    b.set_current_key("k")
    s1.update(5)
    assert internal.value() == 5
    internal.set_current_namespace("w")
    assert internal.value() is None
    assert internal.get_current_namespace() == "w"
    assert b.get_partitioned_state(ValueStateDescriptor("v", None), "w") is not s1


# ------------------------------------------------------------------------------ value state


def test_value_state_methods_and_scoping():
    b = make_backend()
    d = ValueStateDescriptor("v", None)
    s = b.get_partitioned_state(d)
    sw = b.get_partitioned_state(d, namespace="w")
    b.set_current_key("a")
    assert s.value() is None
    s.update(1)
    sw.update(2)
    b.set_current_key("b")
    assert s.value() is None and sw.value() is None
    s.update(10)
    b.set_current_key("a")
    assert (s.value(), sw.value()) == (1, 2)
    assert b.num_entries() == 3
    s.update(None)  # clears, as in Flink
    assert s.value() is None and sw.value() == 2
    sw.clear()
    sw.clear()  # clearing nothing is fine
    assert b.num_entries() == 1
    s.update(0)  # falsy values are values
    assert s.value() == 0
    assert isinstance(s, ValueState)


# ------------------------------------------------------------------------------ list state


def test_list_state_methods():
    b = make_backend()
    s = b.get_partitioned_state(ListStateDescriptor("l", None))
    assert isinstance(s, ListState)
    b.set_current_key("k")
    assert list(s.get()) == []
    s.add(1)
    s.add_all([2, 3])
    s.add_all([])
    s.add_all(x for x in (4,))
    assert list(s.get()) == [1, 2, 3, 4]
    assert list(s) == [1, 2, 3, 4]
    got = s.get()
    got.append(99)  # a copy
    assert list(s.get()) == [1, 2, 3, 4]
    s.update([7, 8])
    assert list(s.get()) == [7, 8]
    assert b.num_entries() == 1
    s.update([])
    assert list(s.get()) == [] and b.num_entries() == 0
    s.add("x")
    s.clear()
    assert list(s.get()) == [] and b.num_entries() == 0


def test_list_state_rejects_none_and_non_iterables():
    b = make_backend()
    s = b.get_partitioned_state(ListStateDescriptor("l", None))
    b.set_current_key("k")
    with pytest.raises(ValueError, match="value is None"):
        s.add(None)
    with pytest.raises(ValueError, match="values contains None"):
        s.add_all([1, None])
    with pytest.raises(ValueError, match="values contains None"):
        s.update([None])
    with pytest.raises(TypeError, match="values must be an iterable"):
        s.add_all(5)
    with pytest.raises(TypeError, match="values must be an iterable"):
        s.update("abc")
    assert b.num_entries() == 0


def test_list_state_can_be_changed_while_iterating():
    b = make_backend()
    s = b.get_partitioned_state(ListStateDescriptor("l", None))
    b.set_current_key("k")
    s.add_all([1, 2])
    for x in s.get():
        s.add(x * 10)
    assert list(s.get()) == [1, 2, 10, 20]


def test_list_merge_namespaces():
    b = make_backend()
    s = b.get_internal_state(ListStateDescriptor("l", None))
    b.set_current_key("k")
    for ns, values in [("t", [1]), ("a", [2, 3]), ("b", [4])]:
        s.set_current_namespace(ns)
        s.add_all(values)
    b.set_current_key("other")
    s.set_current_namespace("a")
    s.add(99)
    b.set_current_key("k")
    s.merge_namespaces("t", ["a", "b", "missing", "t"])
    s.set_current_namespace("t")
    assert list(s.get()) == [1, 2, 3, 4]
    for ns in ("a", "b"):
        s.set_current_namespace(ns)
        assert list(s.get()) == []
    b.set_current_key("other")
    s.set_current_namespace("a")
    assert list(s.get()) == [99]
    # into an empty target; no sources is a no-op
    b.set_current_key("k")
    s.merge_namespaces("new", ["t"])
    s.merge_namespaces("new", [])
    s.set_current_namespace("new")
    assert list(s.get()) == [1, 2, 3, 4]
    assert b.num_entries() == 2
    b.check_invariants()


# ------------------------------------------------------------------------------ map state


def test_map_state_methods():
    b = make_backend()
    m = b.get_partitioned_state(MapStateDescriptor("m", None, None))
    assert isinstance(m, MapState)
    b.set_current_key("k")
    assert m.is_empty() and m.get("x") is None and not m.contains("x")
    assert (list(m.items()), list(m.keys()), list(m.values()), list(m)) == ([], [], [], [])
    m.put("x", 1)
    m.put_all({"y": 2, "z": None})
    m.put_all({})
    assert not m.is_empty()
    assert m.get("x") == 1 and m.get("z") is None and m.contains("z") and not m.contains("w")
    assert list(m.items()) == [("x", 1), ("y", 2), ("z", None)]
    assert list(m.keys()) == ["x", "y", "z"] == list(m)
    assert list(m.values()) == [1, 2, None]
    m["w"] = 4
    assert m["w"] == 4 and "w" in m
    del m["w"]
    assert "w" not in m
    m.remove("nothing")
    for key in list(m.keys()):
        m.remove(key)  # changing while iterating a snapshot
    assert m.is_empty() and b.num_entries() == 0
    m.put("a", 1)
    m.clear()
    assert m.is_empty() and b.num_entries() == 0
    with pytest.raises(TypeError, match="dict_value"):
        m.put_all([("a", 1)])


def test_map_state_iteration_is_a_snapshot():
    b = make_backend()
    m = b.get_partitioned_state(MapStateDescriptor("m", None, None))
    b.set_current_key("k")
    m.put_all({i: i for i in range(5)})
    for k in m:
        m.put(k + 100, 0)
        m.remove(k)
    assert sorted(m.keys()) == [100, 101, 102, 103, 104]


def test_map_state_scoped_by_key_and_namespace():
    b = make_backend()
    d = MapStateDescriptor("m", None, None)
    m1 = b.get_partitioned_state(d, "n1")
    m2 = b.get_partitioned_state(d, "n2")
    b.set_current_key("a")
    m1.put("x", "a1")
    m2.put("x", "a2")
    b.set_current_key("b")
    assert m1.get("x") is None
    m1.put("x", "b1")
    b.set_current_key("a")
    assert (m1.get("x"), m2.get("x")) == ("a1", "a2")
    assert b.num_entries() == 3


# ------------------------------------------------------------------------------ reducing


@pytest.mark.parametrize("fn", [add, Concat(), lambda a, b: a + b])
def test_reducing_state(fn):
    b = make_backend()
    s = b.get_partitioned_state(ReducingStateDescriptor("r", fn, None))
    assert isinstance(s, ReducingState)
    b.set_current_key("k")
    assert s.get() is None
    s.add(1)
    s.add(2)
    s.add(3)
    assert s.get() == 6
    b.set_current_key("j")
    assert s.get() is None
    b.set_current_key("k")
    s.add(None)  # clears, as in Flink
    assert s.get() is None and b.num_entries() == 0
    s.add(5)
    s.clear()
    assert s.get() is None


def test_reduce_returning_none_is_an_error():
    b = make_backend()
    s = b.get_partitioned_state(ReducingStateDescriptor("r", lambda a, c: None, None))
    b.set_current_key("k")
    s.add(1)
    with pytest.raises(TypeError, match="returned None"):
        s.add(2)
    assert s.get() == 1


def test_reducing_merge_namespaces():
    b = make_backend()
    order = []

    def reduce(x, y):
        order.append((x, y))
        return x + y

    s = b.get_internal_state(ReducingStateDescriptor("r", reduce, None))
    b.set_current_key("k")
    for ns, v in [("t", "T"), ("a", "A"), ("b", "B")]:
        s.set_current_namespace(ns)
        s.add(v)
    s.merge_namespaces("t", ["a", "b"])
    s.set_current_namespace("t")
    assert s.get() == "TAB"
    assert order == [("A", "B"), ("T", "AB")]
    s.set_current_namespace("a")
    assert s.get() is None
    assert b.num_entries() == 1


# ------------------------------------------------------------------------------ aggregating


def test_aggregating_state():
    b = make_backend()
    s = b.get_partitioned_state(AggregatingStateDescriptor("a", Avg(), None))
    assert isinstance(s, AggregatingState)
    b.set_current_key("k")
    assert s.get() is None
    s.add(2)
    s.add(4)
    assert s.get() == 3
    s.add(None)
    assert s.get() is None and b.num_entries() == 0
    s.add(1)
    s.clear()
    assert s.get() is None


def test_aggregating_merge_namespaces():
    b = make_backend()
    s = b.get_internal_state(AggregatingStateDescriptor("a", Avg(), None))
    b.set_current_key("k")
    for ns, values in [("t", [1]), ("a", [2, 3]), ("b", [10])]:
        s.set_current_namespace(ns)
        for v in values:
            s.add(v)
    s.merge_namespaces("t", ["a", "b"])
    s.set_current_namespace("t")
    assert s.get() == 4
    assert b.num_entries() == 1


def test_aggregating_errors_name_the_fix():
    class NoMerge:
        def create_accumulator(self):
            return [0]

        def add(self, value, acc):
            acc[0] += value  # forgets to return

        def get_result(self, acc):
            return acc[0]

    b = make_backend()
    s = b.get_internal_state(AggregatingStateDescriptor("a", NoMerge(), None))
    b.set_current_key("k")
    with pytest.raises(TypeError, match="add returned None"):
        s.add(1)

    class Fine(NoMerge):
        def add(self, value, acc):
            return [acc[0] + value]

    s = b.get_internal_state(AggregatingStateDescriptor("b", Fine(), None))
    s.set_current_namespace("x")
    s.add(1)
    s.set_current_namespace("y")
    s.add(2)
    with pytest.raises(TypeError, match="no merge"):
        s.merge_namespaces("x", ["y"])


def test_value_and_map_internal_states_have_no_merge():
    b = make_backend()
    assert not hasattr(b.get_internal_state(ValueStateDescriptor("v", None)), "merge_namespaces")
    assert not hasattr(
        b.get_internal_state(MapStateDescriptor("m", None, None)), "merge_namespaces"
    )


# ------------------------------------------------------------------------------ inspection


def test_num_entries_and_get_keys():
    b = make_backend()
    keys = [f"k{i}" for i in range(20)]
    fill(b, keys)
    assert b.num_entries() == 5 * 2 * 20
    assert sorted(b.get_keys("value", None)) == sorted(keys)
    assert sorted(b.get_keys("list", "w1")) == sorted(keys)
    assert list(b.get_keys("list", "nope")) == []
    assert list(b.get_keys("unknown", None)) == []
    assert sorted(b.get_state_names()) == sorted(all_descriptors())
    lst = b.get_partitioned_state(ListStateDescriptor("list", None))
    for k in b.get_keys("list", None):  # clearing while iterating the keys is fine
        b.set_current_key(k)
        lst.clear()
    assert b.num_entries() == 5 * 2 * 20 - 20
    b.check_invariants()


def test_dispose():
    b = make_backend()
    fill(b, ["a", "b"])
    s = b.get_partitioned_state(ValueStateDescriptor("value", None))
    b.dispose()
    assert b.num_entries() == 0
    with pytest.raises(RuntimeError, match="disposed"):
        s.value()
    with pytest.raises(RuntimeError, match="disposed"):
        b.get_partitioned_state(ValueStateDescriptor("value", None))
    with pytest.raises(RuntimeError, match="disposed"):
        b.snapshot_state()
    with pytest.raises(RuntimeError, match="disposed"):
        b.set_current_key("a")
    with pytest.raises(RuntimeError, match="disposed"):
        b.set_current_key_and_group("a", 0)
    with pytest.raises(RuntimeError, match="disposed"):
        b.restore_state({}, {})


# ------------------------------------------------------------------------------ snapshots

BUILTIN = (int, float, str, bytes, bool, type(None), tuple, list, dict)


def assert_builtin(value: Any) -> None:
    assert type(value) in BUILTIN, type(value)
    if isinstance(value, (tuple, list)):
        for v in value:
            assert_builtin(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            assert_builtin(k)
            assert_builtin(v)


def entries_of(per_kg: dict) -> set:
    return {
        (kg, name, key, ns, repr(raw))
        for kg, by_name in per_kg.items()
        for name, entries in by_name.items()
        for key, ns, raw in entries
    }


def test_snapshot_format():
    b = make_backend()
    fill(b, ["a", 1])
    meta, per_kg = b.snapshot_state()
    undeclared = {"format_version": 1, "value": None, "map_key": None}
    assert meta == {
        name: {"kind": name, "ttl": False, "types": undeclared}
        for name in ["aggregating", "list", "map", "reducing", "value"]
    }
    assert list(per_kg) == sorted(per_kg)
    kg_a = assign_to_key_group("a", MAXP)
    by_name = per_kg[kg_a]
    assert list(by_name) == sorted(by_name)
    assert by_name["value"] == [("a", None, ("a", None)), ("a", "w1", ("a", "w1"))]
    assert by_name["list"][0] == ("a", None, [0, 1])
    assert by_name["map"][0] == ("a", None, {"k": 0, ("t", 0): [0]})
    assert by_name["reducing"][0] == ("a", None, 1)
    assert by_name["aggregating"][0] == ("a", None, (0, 1))
    for entries in (e for bn in per_kg.values() for e in bn.values()):
        for entry in entries:
            assert type(entry) is tuple and len(entry) == 3
            assert_builtin(entry[2])


def test_snapshot_copies_containers():
    b = make_backend()
    lst = b.get_partitioned_state(ListStateDescriptor("l", None))
    b.set_current_key("k")
    lst.add(1)
    _, per_kg = b.snapshot_state()
    lst.add(2)
    (raw,) = [e[2] for bn in per_kg.values() for e in bn["l"]]
    assert raw == [1]


def test_snapshot_round_trip_into_a_fresh_backend():
    b = make_backend()
    keys = [f"user-{i}" for i in range(50)] + list(range(30)) + [("t", 1), None]
    fill(b, keys)
    meta, per_kg = b.snapshot_state()
    fresh = make_backend()
    fresh.restore_state(meta, per_kg)
    assert fresh.num_entries() == b.num_entries()
    assert fresh.snapshot_state() == (meta, per_kg)
    fresh.check_invariants()
    # the restored values are usable through the state API
    ds = all_descriptors()
    fresh.set_current_key("user-3")
    assert fresh.get_partitioned_state(ds["value"]).value() == ("user-3", None)
    assert list(fresh.get_partitioned_state(ds["list"], "w1").get()) == [3, 4]
    assert fresh.get_partitioned_state(ds["map"]).get(("t", 3)) == [3]
    assert fresh.get_partitioned_state(ds["reducing"]).get() == 4
    assert fresh.get_partitioned_state(ds["aggregating"]).get() == 3
    fresh.get_partitioned_state(ds["list"]).add(5)
    b.get_partitioned_state(ds["list"]).add(99)
    b.set_current_key("user-3")
    assert list(fresh.get_partitioned_state(ds["list"]).get()) == [3, 4, 5]  # no sharing


def test_restore_before_and_after_registration():
    b = make_backend()
    fill(b, ["a", "b"])
    meta, per_kg = b.snapshot_state()
    early = make_backend()
    early.get_partitioned_state(ListStateDescriptor("list", None))  # registered before
    early.restore_state(meta, per_kg)
    assert early.num_entries() == b.num_entries()  # unregistered states count too
    assert early.snapshot_state() == (meta, per_kg)  # and are kept in snapshots
    early.set_current_key("b")
    assert list(early.get_partitioned_state(ListStateDescriptor("list", None)).get()) == [1, 2]
    assert early.get_partitioned_state(ValueStateDescriptor("value", None)).value() == ("b", None)


def test_restored_state_kind_is_checked_at_registration():
    b = make_backend()
    fill(b, ["a"])
    meta, per_kg = b.snapshot_state()
    fresh = make_backend()
    fresh.restore_state(meta, per_kg)
    with pytest.raises(
        ValueError, match=r"'list' is a list state \(restored.*describes a value state"
    ):
        fresh.get_partitioned_state(ValueStateDescriptor("list", None))
    ttl = MapStateDescriptor("map", None, None)
    ttl.enable_time_to_live(StateTtlConfig.new_builder(10).build())
    with pytest.raises(ValueError, match=r"'map' is a map state.*map state with TTL"):
        fresh.get_partitioned_state(ttl)
    # a state registered before restore is checked against the snapshot's meta
    other = make_backend()
    other.get_partitioned_state(MapStateDescriptor("value", None, None))
    with pytest.raises(ValueError, match=r"'value' is a map state here.*value state"):
        other.restore_state(meta, per_kg)
    assert other.num_entries() == 0 and other.get_state_names() == ["value"]


def test_rescale_1_to_3_to_1_keeps_every_entry_once():
    single = make_backend()
    keys = [f"user-{i}" for i in range(80)] + list(range(40)) + [("t", i) for i in range(10)]
    fill(single, keys)
    meta, per_kg = single.snapshot_state()
    total = single.num_entries()

    parts = []
    for i in range(3):
        part = make_backend(compute_key_group_range_for_operator_index(MAXP, 3, i))
        part.restore_state(meta, per_kg)  # takes only its own key groups
        part.check_invariants()
        parts.append(part)
    assert sum(p.num_entries() for p in parts) == total
    snaps = [p.snapshot_state() for p in parts]
    seen = [entries_of(s[1]) for s in snaps]
    assert set.union(*seen) == entries_of(per_kg)
    assert sum(len(s) for s in seen) == len(entries_of(per_kg))  # disjoint

    # every part keeps working on its own keys
    for key in keys[:10]:
        owner = next(p for p in parts if p.key_group_range.contains(assign_to_key_group(key, MAXP)))
        owner.set_current_key(key)
        assert owner.get_partitioned_state(ValueStateDescriptor("value", None)).value() == (
            key,
            None,
        )

    merged = make_backend()
    for m, kg_data in snaps:
        merged.restore_state(m, kg_data)
    assert merged.num_entries() == total
    assert merged.snapshot_state() == (meta, per_kg)
    merged.check_invariants()


def test_restore_the_same_key_group_twice_is_an_error():
    b = make_backend()
    fill(b, ["a"])
    meta, per_kg = b.snapshot_state()
    fresh = make_backend()
    fresh.restore_state(meta, per_kg)
    before = fresh.snapshot_state()
    with pytest.raises(ValueError, match="already has an entry"):
        fresh.restore_state(meta, per_kg)
    assert fresh.snapshot_state() == before
    # duplicates inside one input too
    kg = next(iter(per_kg))
    doubled = {kg: {"value": per_kg[kg]["value"] * 2}}
    with pytest.raises(ValueError, match="already has an entry"):
        make_backend().restore_state(meta, doubled)


def good_snapshot():
    b = make_backend()
    fill(b, ["a", "b", 3])
    return b.snapshot_state()


def _first(per_kg):
    kg = next(iter(per_kg))
    return kg, per_kg[kg]


BAD_INPUTS = {
    "meta not a dict": lambda m, p: ([], p, "meta must be a dict"),
    "meta bad kind": lambda m, p: ({**m, "value": {"kind": "nope", "ttl": False}}, p, "meta"),
    "meta ttl not bool": lambda m, p: ({**m, "value": {"kind": "value", "ttl": 1}}, p, "meta"),
    "meta empty name": lambda m, p: ({**m, "": {"kind": "value", "ttl": False}}, p, "meta"),
    "per_key_group not a dict": lambda m, p: (m, [1], "per_key_group must be a dict"),
    "key group out of max range": lambda m, p: (m, {**p, MAXP: {}}, "key group 128"),
    "key group not int": lambda m, p: (m, {**p, "3": {}}, "key group '3'"),
    "state missing from meta": lambda m, p: (
        {k: v for k, v in m.items() if k != "list"},
        p,
        "missing from meta",
    ),
    "entries not a list": lambda m, p: (
        m,
        {**p, _first(p)[0]: {**_first(p)[1], "value": "x"}},
        "must be a list",
    ),
    "entry not a triple": lambda m, p: (
        m,
        {**p, _first(p)[0]: {**_first(p)[1], "value": [("a", None)]}},
        "triple",
    ),
    "wrong key group": lambda m, p: (
        m,
        {**p, (_first(p)[0] + 1) % MAXP: {"value": _first(p)[1]["value"]}},
        "belongs to key group",
    ),
    "list raw not a list": lambda m, p: (
        m,
        {
            **p,
            _first(p)[0]: {
                **_first(p)[1],
                "list": [(e[0], e[1], 5) for e in _first(p)[1]["list"]],
            },
        },
        "list state must be a list",
    ),
    "map raw not a dict": lambda m, p: (
        m,
        {
            **p,
            _first(p)[0]: {
                **_first(p)[1],
                "map": [(e[0], e[1], [1]) for e in _first(p)[1]["map"]],
            },
        },
        "map state must be a dict",
    ),
    "None value": lambda m, p: (
        m,
        {
            **p,
            _first(p)[0]: {
                **_first(p)[1],
                "value": [(e[0], e[1], None) for e in _first(p)[1]["value"]],
            },
        },
        "is None",
    ),
    "None list element": lambda m, p: (
        m,
        {
            **p,
            _first(p)[0]: {
                **_first(p)[1],
                "list": [(e[0], e[1], [1, None]) for e in _first(p)[1]["list"]],
            },
        },
        "is None",
    ),
    "unhashable key": lambda m, p: (
        m,
        {**p, _first(p)[0]: {"value": [([1], None, 1)]}},
        "not usable",
    ),
    "ttl raw without timestamp": lambda m, p: (
        {**m, "value": {"kind": "value", "ttl": True}},
        p,
        "last_access_ts",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_restore_input_leaves_the_backend_unchanged(case):
    meta, per_kg = good_snapshot()
    bad_meta, bad_per_kg, message = BAD_INPUTS[case](meta, per_kg)
    # a backend holding other data: nothing may change
    b = make_backend()
    other = b.get_partitioned_state(ValueStateDescriptor("other", None))
    b.set_current_key("zzz")
    other.update(1)
    before = b.snapshot_state()
    names_before = b.get_state_names()
    with pytest.raises(ValueError, match=message):
        b.restore_state(bad_meta, bad_per_kg)
    assert b.snapshot_state() == before
    assert b.get_state_names() == names_before
    # and the good input still restores afterwards
    b.restore_state(meta, per_kg)
    assert b.num_entries() == 1 + sum(len(e) for bn in per_kg.values() for e in bn.values())


def test_restore_ignores_key_groups_outside_the_range_without_validating_them():
    meta, per_kg = good_snapshot()
    kg_a = assign_to_key_group("a", MAXP)
    b = make_backend(KeyGroupRange(kg_a, kg_a))
    junk = {kg: "garbage" for kg in range(MAXP) if kg != kg_a}
    b.restore_state(meta, {**junk, kg_a: per_kg[kg_a]})
    assert sorted(set(b.get_keys("value", None))) == ["a"]


def test_restore_accepts_lists_for_tuples():
    b = make_backend()
    d = ValueStateDescriptor("v", None)
    d.enable_time_to_live(StateTtlConfig.new_builder(100).build())
    kg = assign_to_key_group("k", MAXP)
    b.restore_state({"v": {"kind": "value", "ttl": True}}, {kg: {"v": [["k", None, ["x", 5]]]}})
    b.set_current_key("k")
    assert b.get_partitioned_state(d).value() == "x"
    assert b.snapshot_state()[1][kg]["v"] == [("k", None, ("x", 5))]


def test_restore_skips_empty_containers():
    kg = assign_to_key_group("k", MAXP)
    b = make_backend()
    b.restore_state(
        {"l": {"kind": "list", "ttl": False}, "m": {"kind": "map", "ttl": False}},
        {kg: {"l": [("k", None, [])], "m": [("k", None, {})]}},
    )
    assert b.num_entries() == 0
    assert b.snapshot_state() == (
        {"l": {"kind": "list", "ttl": False}, "m": {"kind": "map", "ttl": False}},
        {},
    )


# ------------------------------------------------------------------------------ property tests

KEYS = st.sampled_from(["a", "b", 7, ("t", 1)])
NAMESPACES = st.sampled_from([None, "w1", 2])
ELEMS = st.integers(-5, 5)

LIST_OPS = st.one_of(
    st.tuples(st.just("add"), KEYS, NAMESPACES, ELEMS),
    st.tuples(st.just("add_all"), KEYS, NAMESPACES, st.lists(ELEMS, max_size=3)),
    st.tuples(st.just("update"), KEYS, NAMESPACES, st.lists(ELEMS, max_size=3)),
    st.tuples(st.just("clear"), KEYS, NAMESPACES, st.none()),
    st.tuples(st.just("get"), KEYS, NAMESPACES, st.none()),
    st.tuples(st.just("merge"), KEYS, NAMESPACES, st.lists(NAMESPACES, max_size=3)),
    st.tuples(st.just("roundtrip"), KEYS, NAMESPACES, st.none()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(LIST_OPS, max_size=40))
def test_list_state_matches_a_model(ops):
    b = make_backend()
    d = ListStateDescriptor("l", None)
    s = b.get_internal_state(d)
    model: dict[tuple, list] = defaultdict(list)
    for op, key, ns, arg in ops:
        b.set_current_key(key)
        s.set_current_namespace(ns)
        if op == "add":
            s.add(arg)
            model[(key, ns)].append(arg)
        elif op == "add_all":
            s.add_all(arg)
            model[(key, ns)].extend(arg)
        elif op == "update":
            s.update(arg)
            model[(key, ns)] = list(arg)
        elif op == "clear":
            s.clear()
            model.pop((key, ns), None)
        elif op == "get":
            assert list(s.get()) == model.get((key, ns), [])
        elif op == "merge":
            s.merge_namespaces(ns, arg)
            merged = list(model.get((key, ns), []))
            for src in arg:
                if src != ns:
                    merged.extend(model.pop((key, src), []))
            model[(key, ns)] = merged
        elif op == "roundtrip":
            meta, per_kg = b.snapshot_state()
            b = make_backend()
            b.restore_state(meta, per_kg)
            s = b.get_internal_state(d)
        b.check_invariants()
        live = {k: v for k, v in model.items() if v}
        assert b.num_entries() == len(live)
        for (k, n), values in live.items():
            b.set_current_key(k)
            s.set_current_namespace(n)
            assert list(s.get()) == values


MAP_OPS = st.one_of(
    st.tuples(st.just("put"), KEYS, NAMESPACES, st.tuples(ELEMS, ELEMS)),
    st.tuples(st.just("put_all"), KEYS, NAMESPACES, st.dictionaries(ELEMS, ELEMS, max_size=3)),
    st.tuples(st.just("remove"), KEYS, NAMESPACES, ELEMS),
    st.tuples(st.just("get"), KEYS, NAMESPACES, ELEMS),
    st.tuples(st.just("contains"), KEYS, NAMESPACES, ELEMS),
    st.tuples(st.just("clear"), KEYS, NAMESPACES, st.none()),
    st.tuples(st.just("roundtrip"), KEYS, NAMESPACES, st.none()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(MAP_OPS, max_size=40))
def test_map_state_matches_a_model(ops):
    b = make_backend()
    d = MapStateDescriptor("m", None, None)
    model: dict[tuple, dict] = defaultdict(dict)
    for op, key, ns, arg in ops:
        b.set_current_key(key)
        s = b.get_partitioned_state(d, ns)
        m = model[(key, ns)]
        if op == "put":
            s.put(*arg)
            m[arg[0]] = arg[1]
        elif op == "put_all":
            s.put_all(arg)
            m.update(arg)
        elif op == "remove":
            s.remove(arg)
            m.pop(arg, None)
        elif op == "get":
            assert s.get(arg) == m.get(arg)
        elif op == "contains":
            assert s.contains(arg) == (arg in m)
        elif op == "clear":
            s.clear()
            m.clear()
        elif op == "roundtrip":
            meta, per_kg = b.snapshot_state()
            b = make_backend()
            b.restore_state(meta, per_kg)
        b.check_invariants()
        live = {k: v for k, v in model.items() if v}
        assert b.num_entries() == len(live)
        for (k, n), expected in model.items():
            b.set_current_key(k)
            s = b.get_partitioned_state(d, n)
            assert dict(s.items()) == expected
            assert list(s.keys()) == list(expected)
            assert list(s.values()) == list(expected.values())
            assert s.is_empty() == (not expected)
