"""State time-to-live: the config builder, the TTL matrix per state kind, cleanup strategies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.time import Duration, Time
from sparktide.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state.heap import HeapValueState
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
from sparktide.runtime.state.rocksdb_states import RocksDBValueState
from state_backends import Backend, BackendFactory, BackendUnderTest

MAXP = 128
TTL = 10
UpdateType = StateTtlConfig.UpdateType
Visibility = StateTtlConfig.StateVisibility


class Clock:
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


# Every test runs on both backends (the ``make_backend`` fixture of conftest.py) unless it
# inspects the heap backend's internals: those are listed here with the reason.
HEAP_ONLY: dict[str, str] = {}
UNDER_TEST = BackendUnderTest(HEAP_ONLY)


@pytest.fixture(autouse=True)
def _each_backend(request: pytest.FixtureRequest, make_backend: BackendFactory) -> Iterator[None]:
    yield from UNDER_TEST.use(request, make_backend)


def make(clock: Clock, key_group_range: KeyGroupRange | None = None) -> Backend:
    """A backend of the kind under test (heap or RocksDB)."""
    return UNDER_TEST(key_group_range, MAXP, clock)


def config(
    update: Any = UpdateType.OnCreateAndWrite,
    visibility: Any = Visibility.NeverReturnExpired,
    ttl: Any = TTL,
    background: bool = False,
    full_snapshot: bool = False,
    incremental: tuple[int, bool] | None = None,
) -> StateTtlConfig:
    b = StateTtlConfig.new_builder(ttl).set_update_type(update).set_state_visibility(visibility)
    if not background:
        b.disable_cleanup_in_background()
    if full_snapshot:
        b.cleanup_full_snapshot()
    if incremental:
        b.cleanup_incrementally(*incremental)
    return b.build()


def with_ttl(descriptor, cfg: StateTtlConfig):
    descriptor.enable_time_to_live(cfg)
    return descriptor


class Sum:
    def create_accumulator(self):
        return 0

    def add(self, value, acc):
        return acc + value

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return a + b


# ------------------------------------------------------------------------------ config


def test_builder_defaults_are_flinks():
    cfg = StateTtlConfig.new_builder(Time.seconds(1)).build()
    assert cfg.get_update_type() is UpdateType.OnCreateAndWrite
    assert cfg.get_state_visibility() is Visibility.NeverReturnExpired
    assert cfg.get_ttl_time_characteristic() is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    assert cfg.get_ttl() == Time.seconds(1)
    assert cfg.is_enabled()
    strategies = cfg.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background()
    assert not strategies.in_full_snapshot()
    inc = strategies.get_incremental_cleanup_strategy()
    assert (inc.get_cleanup_size(), inc.run_cleanup_for_every_record()) == (5, False)
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None


def test_builder_setters_and_getters():
    cfg = (
        StateTtlConfig.new_builder(Duration.of_seconds(5))
        .update_ttl_on_read_and_write()
        .return_expired_if_not_cleaned_up()
        .use_processing_time()
        .cleanup_full_snapshot()
        .cleanup_incrementally(7, True)
        .cleanup_in_rocksdb_compact_filter(1000, Time.hours(1))
        .disable_cleanup_in_background()
        .set_ttl(timedelta(seconds=2))
        .build()
    )
    assert cfg.get_update_type() is UpdateType.OnReadAndWrite
    assert cfg.get_state_visibility() is Visibility.ReturnExpiredIfNotCleanedUp
    assert cfg.get_ttl().to_milliseconds() == 2000
    s = cfg.get_cleanup_strategies()
    assert s.in_full_snapshot() and not s.is_cleanup_in_background()
    inc = s.get_incremental_cleanup_strategy()
    assert (inc.get_cleanup_size(), inc.run_cleanup_for_every_record()) == (7, True)
    rocks = s.get_rocksdb_compact_filter_cleanup_strategy()
    assert rocks.get_query_time_after_num_entries() == 1000
    assert rocks.get_periodic_compaction_time() == Time.hours(1)
    b = StateTtlConfig.new_builder(100).update_ttl_on_read_and_write()
    assert b.update_ttl_on_create_and_write().never_return_expired().build() == config(
        ttl=100, background=True
    )
    assert (
        StateTtlConfig.new_builder(1)
        .disable_cleanup_in_background()
        .build()
        .get_cleanup_strategies()
        .get_incremental_cleanup_strategy()
        is None
    )


def test_update_type_disabled_means_no_ttl():
    cfg = StateTtlConfig.new_builder(10).set_update_type(UpdateType.Disabled).build()
    assert not cfg.is_enabled()
    b = make(Clock())
    s = b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), cfg))
    assert type(s) is (
        RocksDBValueState if isinstance(b, RocksDBKeyedStateBackend) else HeapValueState
    )
    undeclared = {"format_version": 1, "value": None, "map_key": None}
    assert b.snapshot_state()[0] == {"v": {"kind": "value", "ttl": False, "types": undeclared}}


@pytest.mark.parametrize("ttl", [0, -5, Time.milliseconds(0), timedelta(0)])
def test_ttl_must_be_positive(ttl):
    with pytest.raises(ValueError, match="ttl must be a positive duration"):
        StateTtlConfig.new_builder(ttl)
    with pytest.raises(ValueError, match="ttl"):
        StateTtlConfig.new_builder(5).set_ttl(ttl)


def test_config_validation_names_the_parameter():
    with pytest.raises(TypeError, match="ttl must be a Duration"):
        StateTtlConfig.new_builder("1s")
    with pytest.raises(TypeError, match="update_type must be one of"):
        StateTtlConfig.new_builder(5).set_update_type("OnReadAndWrite")
    with pytest.raises(TypeError, match="state_visibility must be one of"):
        StateTtlConfig.new_builder(5).set_state_visibility(UpdateType.Disabled)
    with pytest.raises(TypeError, match="ttl_time_characteristic"):
        StateTtlConfig.new_builder(5).set_ttl_time_characteristic("EventTime")
    with pytest.raises(ValueError, match="cleanup_size must be a positive int"):
        StateTtlConfig.new_builder(5).cleanup_incrementally(0, False)
    with pytest.raises(TypeError, match="run_cleanup_for_every_record"):
        StateTtlConfig.new_builder(5).cleanup_incrementally(1, "yes")
    with pytest.raises(ValueError, match="query_time_after_num_entries"):
        StateTtlConfig.new_builder(5).cleanup_in_rocksdb_compact_filter(-1)


def test_config_is_immutable_and_comparable():
    a, b = config(), config()
    assert a == b and hash(a) == hash(b)
    assert a != config(ttl=11) and a != config(full_snapshot=True)
    assert a != config(update=UpdateType.OnReadAndWrite)
    with pytest.raises(AttributeError, match="immutable"):
        a.ttl = 5
    assert a == b and a.get_ttl() == b.get_ttl()  # unchanged
    assert "StateTtlConfig(" in repr(a)


def test_registering_another_ttl_config_under_the_same_name_fails():
    b = make(Clock())
    b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), config()))
    b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), config()))  # equal: fine
    with pytest.raises(ValueError, match="'v' is registered with TTL config"):
        b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), config(ttl=99)))


# ------------------------------------------------------------------------------ the TTL matrix

MATRIX = [
    (u, v)
    for u in (UpdateType.OnCreateAndWrite, UpdateType.OnReadAndWrite)
    for v in (Visibility.NeverReturnExpired, Visibility.ReturnExpiredIfNotCleanedUp)
]


@pytest.mark.parametrize(("update", "visibility"), MATRIX)
def test_value_state_matrix(update, visibility):
    clock = Clock(0)
    b = make(clock)
    s = b.get_partitioned_state(
        with_ttl(ValueStateDescriptor("v", None), config(update, visibility))
    )
    on_read = update is UpdateType.OnReadAndWrite
    returns_expired = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    b.set_current_key("k")
    s.update("x")
    clock.now = 5
    assert s.value() == "x"  # alive; refreshes ts to 5 on read-and-write
    clock.now = 9
    assert s.value() == "x"  # refreshes to 9 on read-and-write
    clock.now = 12
    if on_read:
        assert s.value() == "x"  # 9 + 10 > 12
        clock.now = 22  # last access 12 -> expired at 22
    assert b.num_entries() == 1
    assert s.value() == ("x" if returns_expired else None)
    assert b.num_entries() == 0  # removed on access either way
    assert s.value() is None
    # writing refreshes under both update types
    s.update("y")
    clock.now += 9
    s.update("z")
    clock.now += 9
    assert s.value() == "z"


@pytest.mark.parametrize("now_offset", [TTL - 1, TTL])
def test_expired_exactly_at_last_access_plus_ttl(now_offset):
    clock = Clock(100)
    b = make(clock)
    s = b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), config()))
    b.set_current_key("k")
    s.update(1)
    clock.now = 100 + now_offset
    assert s.value() == (1 if now_offset < TTL else None)


def test_ttl_state_is_scoped_by_key_and_namespace():
    clock = Clock(0)
    b = make(clock)
    d = with_ttl(ValueStateDescriptor("v", None), config())
    s, sw = b.get_partitioned_state(d), b.get_partitioned_state(d, "w")
    b.set_current_key("a")
    s.update(1)
    clock.now = 5
    sw.update(2)
    b.set_current_key("b")
    s.update(3)
    clock.now = 10
    assert s.value() == 3
    b.set_current_key("a")
    assert (s.value(), sw.value()) == (None, 2)
    s.update(None)
    sw.clear()
    assert b.num_entries() == 1


@pytest.mark.parametrize(("update", "visibility"), MATRIX)
def test_list_state_expires_per_element(update, visibility):
    clock = Clock(0)
    b = make(clock)
    s = b.get_partitioned_state(
        with_ttl(ListStateDescriptor("l", None), config(update, visibility))
    )
    on_read = update is UpdateType.OnReadAndWrite
    returns_expired = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    b.set_current_key("k")
    s.add("a")  # ts 0
    clock.now = 5
    s.add_all(["b", "c"])  # ts 5
    clock.now = 8
    assert list(s.get()) == ["a", "b", "c"]  # read-and-write refreshes all to 8
    clock.now = 12
    if on_read:
        assert list(s.get()) == ["a", "b", "c"]  # refreshed to 12
        clock.now = 22
        assert list(s.get()) == (["a", "b", "c"] if returns_expired else [])
        assert list(s.get()) == [] and b.num_entries() == 0
        return
    assert list(s.get()) == (["a", "b", "c"] if returns_expired else ["b", "c"])
    assert list(s.get()) == ["b", "c"]  # "a" was cleaned up
    clock.now = 15
    assert list(s) == (["b", "c"] if returns_expired else [])
    assert list(s.get()) == [] and b.num_entries() == 0


def test_list_update_and_iteration_with_ttl():
    clock = Clock(0)
    b = make(clock)
    s = b.get_partitioned_state(with_ttl(ListStateDescriptor("l", None), config()))
    b.set_current_key("k")
    s.add(1)
    clock.now = 9
    s.update([2, 3])  # all fresh at 9
    clock.now = 15
    assert list(s.get()) == [2, 3]
    s.update([])
    assert b.num_entries() == 0
    s.add_all([])
    assert b.num_entries() == 0
    with pytest.raises(ValueError, match="None"):
        s.add(None)
    s.add(4)
    s.clear()
    assert list(s.get()) == []


@pytest.mark.parametrize(("update", "visibility"), MATRIX)
def test_map_state_expires_per_entry(update, visibility):
    clock = Clock(0)
    b = make(clock)
    m = b.get_partitioned_state(
        with_ttl(MapStateDescriptor("m", None, None), config(update, visibility))
    )
    on_read = update is UpdateType.OnReadAndWrite
    ret = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    b.set_current_key("k")
    m.put("x", 1)  # ts 0
    m.put("n", None)  # None values are values
    clock.now = 5
    m.put_all({"y": 2})  # ts 5
    clock.now = 8
    assert m.get("x") == 1  # read-and-write: x refreshed to 8
    assert m.contains("n")  # read-and-write: n refreshed to 8
    clock.now = 10  # (on create-and-write: x and n expired, y alive until 15)
    if on_read:
        assert sorted(m.keys(), key=str) == ["n", "x", "y"]  # all refreshed to 10
        assert not m.is_empty()
        clock.now = 20
        assert m.get("x") == (1 if ret else None)
        assert m.contains("x") is False
        assert sorted(m.items(), key=str) == ([("n", None), ("y", 2)] if ret else [])
        assert m.is_empty() and b.num_entries() == 0
        return
    assert m.get("x") == (1 if ret else None)
    assert m.get("x") is None  # cleaned up by the previous access
    assert m.contains("n") is ret
    assert not m.contains("n")
    assert list(m.items()) == [("y", 2)]
    assert list(m.values()) == [2] and list(m) == ["y"]
    clock.now = 15
    assert m.is_empty() == (not ret)
    assert list(m.keys()) == (["y"] if ret else [])
    assert m.is_empty() and b.num_entries() == 0


def test_map_remove_and_clear_with_ttl():
    clock = Clock(0)
    b = make(clock)
    m = b.get_partitioned_state(with_ttl(MapStateDescriptor("m", None, None), config()))
    b.set_current_key("k")
    m["a"] = 1
    m["b"] = 2
    del m["a"]
    m.remove("zz")
    assert list(m) == ["b"] and "b" in m and m["b"] == 2
    m.remove("b")
    assert b.num_entries() == 0
    m.put_all({"c": 3})
    m.clear()
    assert m.is_empty()
    m.put_all({})
    assert b.num_entries() == 0
    with pytest.raises(TypeError, match="dict_value"):
        m.put_all(None)


@pytest.mark.parametrize(
    "visibility", [Visibility.NeverReturnExpired, Visibility.ReturnExpiredIfNotCleanedUp]
)
def test_reducing_state_with_ttl(visibility):
    clock = Clock(0)
    b = make(clock)
    s = b.get_partitioned_state(
        with_ttl(
            ReducingStateDescriptor("r", lambda x, y: x + y, None),
            config(visibility=visibility),
        )
    )
    b.set_current_key("k")
    s.add(1)
    clock.now = 5
    s.add(2)  # (3, ts 5)
    clock.now = 14
    assert s.get() == 3
    clock.now = 16
    s.add(4)  # the expired 3 takes part only when expired values are returned
    ret = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    assert s.get() == (7 if ret else 4)
    s.add(None)
    assert s.get() is None and b.num_entries() == 0
    s.add(1)
    clock.now = 100
    assert s.get() == (1 if ret else None)
    assert s.get() is None


@pytest.mark.parametrize("update", [UpdateType.OnCreateAndWrite, UpdateType.OnReadAndWrite])
def test_aggregating_state_with_ttl(update):
    clock = Clock(0)
    b = make(clock)
    s = b.get_partitioned_state(
        with_ttl(AggregatingStateDescriptor("a", Sum(), None), config(update=update))
    )
    b.set_current_key("k")
    s.add(2)
    clock.now = 9
    assert s.get() == 2  # read-and-write refreshes to 9
    clock.now = 12
    assert s.get() == (2 if update is UpdateType.OnReadAndWrite else None)
    s.add(5)
    assert s.get() == (7 if update is UpdateType.OnReadAndWrite else 5)
    s.add(None)
    assert s.get() is None
    s.add(1)
    s.clear()
    assert s.get() is None and b.num_entries() == 0


def test_merge_namespaces_with_ttl():
    clock = Clock(0)
    b = make(clock)
    lst = b.get_internal_state(with_ttl(ListStateDescriptor("l", None), config()))
    red = b.get_internal_state(with_ttl(ReducingStateDescriptor("r", max, None), config()))
    agg = b.get_internal_state(with_ttl(AggregatingStateDescriptor("a", Sum(), None), config()))
    b.set_current_key("k")
    for ns, t in [("t", 0), ("s1", 3), ("s2", 6)]:
        clock.now = t
        for s in (lst, red, agg):
            s.set_current_namespace(ns)
            s.add(t + 1)
    clock.now = 11  # "t" (ts 0) expired, s1 (ts 3) and s2 (ts 6) alive
    for s in (lst, red, agg):
        s.merge_namespaces("t", ["s1", "s2"])
        s.set_current_namespace("t")
    assert list(lst.get()) == [4, 7]  # elements keep their own timestamps
    assert red.get() == 7
    assert agg.get() == 11
    clock.now = 14  # s1's element expires; the merged reducing/aggregating values were
    assert list(lst.get()) == [7]  # written at 11
    assert (red.get(), agg.get()) == (7, 11)
    # all sources expired: nothing left
    clock.now = 100
    for s in (red, agg):
        s.set_current_namespace("u")
        s.add(1)
    clock.now = 200
    for s in (red, agg):
        s.merge_namespaces("t", ["u"])
        s.set_current_namespace("t")
        assert s.get() is None
    b.check_invariants()


# ------------------------------------------------------------------------------ snapshots


def test_snapshot_raw_format_with_ttl():
    clock = Clock(7)
    b = make(clock)
    ds = {
        "value": ValueStateDescriptor("value", None),
        "list": ListStateDescriptor("list", None),
        "map": MapStateDescriptor("map", None, None),
        "reducing": ReducingStateDescriptor("reducing", max, None),
        "aggregating": AggregatingStateDescriptor("aggregating", Sum(), None),
    }
    states = {n: b.get_partitioned_state(with_ttl(d, config())) for n, d in ds.items()}
    b.set_current_key("k")
    states["value"].update("v")
    states["list"].add("e")
    states["map"].put("mk", "mv")
    states["reducing"].add(3)
    states["aggregating"].add(4)
    meta, per_kg = b.snapshot_state()
    undeclared = {"format_version": 1, "value": None, "map_key": None}
    assert meta == {n: {"kind": n, "ttl": True, "types": undeclared} for n in sorted(ds)}
    by_name = per_kg[assign_to_key_group("k", MAXP)]
    assert by_name == {
        "aggregating": [("k", None, (4, 7))],
        "list": [("k", None, [("e", 7)])],
        "map": [("k", None, {"mk": ("mv", 7)})],
        "reducing": [("k", None, (3, 7))],
        "value": [("k", None, ("v", 7))],
    }
    # round trip keeps the timestamps
    clock2 = Clock(16)
    fresh = make(clock2)
    fresh.restore_state(meta, per_kg)
    fresh.set_current_key("k")
    restored = {n: fresh.get_partitioned_state(with_ttl(d, config())) for n, d in ds.items()}
    assert restored["value"].value() == "v"
    assert list(restored["list"].get()) == ["e"]
    clock2.now = 17
    assert restored["map"].get("mk") is None
    assert restored["reducing"].get() is None
    assert fresh.num_entries() == 3


@pytest.mark.parametrize("full_snapshot", [True, False])
def test_cleanup_full_snapshot_leaves_out_expired_values(full_snapshot):
    clock = Clock(0)
    b = make(clock)
    cfg = config(full_snapshot=full_snapshot)
    v = b.get_partitioned_state(with_ttl(ValueStateDescriptor("v", None), cfg))
    lst = b.get_partitioned_state(with_ttl(ListStateDescriptor("l", None), cfg))
    m = b.get_partitioned_state(with_ttl(MapStateDescriptor("m", None, None), cfg))
    plain = b.get_partitioned_state(ValueStateDescriptor("plain", None))
    b.set_current_key("old")
    v.update(1)
    lst.add("old")
    m.put("old", 1)
    plain.update("kept")
    clock.now = 5
    b.set_current_key("new")
    v.update(2)
    lst.add("new")
    b.set_current_key("old")
    lst.add("new")
    m.put("new", 2)
    clock.now = 10
    _, per_kg = b.snapshot_state()
    got = {
        (name, key): raw
        for by_name in per_kg.values()
        for name, entries in by_name.items()
        for key, _, raw in entries
    }
    if full_snapshot:
        assert got == {
            ("v", "new"): (2, 5),
            ("l", "new"): [("new", 5)],
            ("l", "old"): [("new", 5)],
            ("m", "old"): {"new": (2, 5)},
            ("plain", "old"): "kept",
        }
    else:
        assert got[("v", "old")] == (1, 0) and got[("l", "old")] == [("old", 0), ("new", 5)]
        assert len(got) == 6
    assert b.num_entries() == 6  # snapshots never change the state


# ------------------------------------------------------------------------------ incremental


def _populate(b: Backend, d, n: int) -> Any:
    s = b.get_partitioned_state(d)
    for i in range(n):
        b.set_current_key(i)
        s.update(i)
    return s


def test_incremental_cleanup_on_state_access():
    clock = Clock(0)
    b = make(clock)
    s = _populate(b, with_ttl(ValueStateDescriptor("v", None), config(incremental=(5, False))), 200)
    assert b.num_entries() == 200
    clock.now = 10
    b.set_current_key("reader")
    for _ in range(200 // 5 + 2 * 16):  # 5 entries per access, checked in batches of 16
        s.value()
    assert b.num_entries() == 0


def test_default_background_cleanup_is_incremental():
    clock = Clock(0)
    b = make(clock)
    cfg = StateTtlConfig.new_builder(TTL).build()
    s = _populate(b, with_ttl(ValueStateDescriptor("v", None), cfg), 100)
    clock.now = 10
    b.set_current_key("reader")
    for _ in range(100):
        s.value()
    assert b.num_entries() == 0


def test_no_background_cleanup_keeps_expired_values_until_accessed():
    clock = Clock(0)
    b = make(clock)
    s = _populate(b, with_ttl(ValueStateDescriptor("v", None), config()), 50)
    clock.now = 10
    b.set_current_key("reader")
    for _ in range(500):
        s.value()
    assert b.num_entries() == 50
    b.set_current_key(3)
    assert s.value() is None and b.num_entries() == 49


def test_incremental_cleanup_for_every_record():
    clock = Clock(0)
    b = make(clock)
    _populate(b, with_ttl(ValueStateDescriptor("v", None), config(incremental=(4, True))), 100)
    lst = b.get_partitioned_state(with_ttl(ListStateDescriptor("l", None), config()))
    b.set_current_key("x")
    lst.add(1)
    clock.now = 10
    for i in range(100):  # no state access at all: only key selection
        b.set_current_key_and_group(i, assign_to_key_group(i, MAXP))
    assert b.num_entries() == 1  # the list state has no incremental cleanup


@pytest.mark.parametrize("kind", ["list", "map"])
def test_incremental_cleanup_purges_elements(kind):
    clock = Clock(0)
    b = make(clock)
    cfg = config(incremental=(1, True))
    if kind == "list":
        s = b.get_partitioned_state(with_ttl(ListStateDescriptor("s", None), cfg))
    else:
        s = b.get_partitioned_state(with_ttl(MapStateDescriptor("s", None, None), cfg))
    for i in range(20):
        b.set_current_key(i)
        if kind == "list":
            s.add("old")
        else:
            s.put("old", 1)
    clock.now = 5
    for i in range(10):
        b.set_current_key(i)
        if kind == "list":
            s.add("new")
        else:
            s.put("new", 2)
    clock.now = 12
    for _ in range(300):
        b.set_current_key("reader")
    assert b.num_entries() == 10
    _, per_kg = b.snapshot_state()
    raws = [raw for by_name in per_kg.values() for _, _, raw in by_name["s"]]
    assert raws == [[("new", 5)]] * 10 if kind == "list" else raws == [{"new": (2, 5)}] * 10
    b.check_invariants()


def test_incremental_cleanup_handles_large_key_groups_and_restores():
    clock = Clock(0)
    kg = assign_to_key_group("reader", MAXP)
    b = make(clock, KeyGroupRange(kg, kg))  # one key group with many entries
    d = with_ttl(ValueStateDescriptor("v", None), config(incremental=(2, True)))
    s = b.get_partitioned_state(d)
    for i in range(300):
        b.set_current_key_and_group(("k", i), kg)  # not hashed: fine for this test
        s.update(i)
    clock.now = 9
    for _ in range(200):
        b.set_current_key("reader")
    assert b.num_entries() == 300  # nothing expired yet
    clock.now = 10
    for _ in range(16 * 300):
        b.set_current_key("reader")
    assert b.num_entries() == 0
    # entries restored later are old: cleanup must look at them again
    b.restore_state(
        {"v": {"kind": "value", "ttl": True}},
        {kg: {"v": [("reader", None, ("old", 0))]}},
    )
    for _ in range(64):
        b.set_current_key("reader")
    assert b.num_entries() == 0


def test_incremental_cleanup_survives_a_clock_going_back():
    clock = Clock(100)
    b = make(clock)
    s = _populate(b, with_ttl(ValueStateDescriptor("v", None), config(incremental=(5, True))), 5)
    for _ in range(64):
        b.set_current_key("reader")  # learns: nothing expires before 110
    clock.now = 50
    s2 = b.get_partitioned_state(ValueStateDescriptor("plain", None))
    b.set_current_key(1)
    s.update("young")  # ts 50, expires at 60
    s2.update(0)
    clock.now = 61
    for _ in range(64):
        b.set_current_key("reader")
    b.set_current_key(1)
    assert b.num_entries() == 1 + 4  # the young value was dropped, the others (ts 100) kept


# ------------------------------------------------------------------------------ property test

TTL_OPS = st.one_of(
    st.tuples(st.just("tick"), st.integers(0, 6), st.none()),
    st.tuples(st.just("put"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("get"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("remove"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("items"), st.integers(0, 5), st.none()),
    st.tuples(st.just("touch"), st.integers(0, 5), st.none()),
    st.tuples(st.just("roundtrip"), st.none(), st.none()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(TTL_OPS, max_size=60), st.booleans())
def test_ttl_map_state_matches_a_model(ops, on_read):
    ttl = 8
    clock = Clock(0)
    cfg = config(
        update=UpdateType.OnReadAndWrite if on_read else UpdateType.OnCreateAndWrite,
        ttl=ttl,
        incremental=(1, True),
    )
    d = with_ttl(MapStateDescriptor("m", None, None), cfg)
    vd = with_ttl(ValueStateDescriptor("v", None), cfg)
    b = make(clock)
    model: dict[int, dict[int, tuple[int, int]]] = {}  # key -> map key -> (value, ts)
    values: dict[int, tuple[int, int]] = {}  # key -> (last put, ts) of the value state

    def alive(key: int) -> dict[int, tuple[int, int]]:
        entries = model.setdefault(key, {})
        for mk in [mk for mk, (_, ts) in entries.items() if ts + ttl <= clock.now]:
            del entries[mk]
        return entries

    for step, (op, key, arg) in enumerate(ops):
        if op == "tick":
            clock.now += key
            continue
        if op == "roundtrip":
            meta, per_kg = b.snapshot_state()
            b = make(clock)
            b.restore_state(meta, per_kg)
            continue
        b.set_current_key(key)
        m = b.get_partitioned_state(d)
        v = b.get_partitioned_state(vd)
        entries = alive(key)
        if key in values and values[key][1] + ttl <= clock.now:
            del values[key]
        if op == "put":
            m.put(arg, step)
            entries[arg] = (step, clock.now)
            v.update(step)
            values[key] = (step, clock.now)
        elif op == "get":
            expected = entries.get(arg)
            assert m.get(arg) == (None if expected is None else expected[0])
            if expected is not None and on_read:
                entries[arg] = (expected[0], clock.now)
            expected = values.get(key)
            assert v.value() == (None if expected is None else expected[0])
            if expected is not None and on_read:
                values[key] = (expected[0], clock.now)
        elif op == "remove":
            m.remove(arg)
            entries.pop(arg, None)
        elif op == "items":
            assert dict(m.items()) == {mk: v for mk, (v, _) in entries.items()}
            if on_read:
                for mk, (v, _) in list(entries.items()):
                    entries[mk] = (v, clock.now)
        b.check_invariants()
        # nothing alive is ever lost, and stored timestamps are the model's
        _, per_kg = b.snapshot_state()
        stored = {k: raw for by_name in per_kg.values() for k, _, raw in by_name.get("m", [])}
        stored_values = {
            k: raw for by_name in per_kg.values() for k, _, raw in by_name.get("v", [])
        }
        for k in model:
            for mk, pair in alive(k).items():
                assert stored[k][mk] == pair
        for k, pair in values.items():
            if pair[1] + ttl > clock.now:
                assert stored_values[k] == pair
