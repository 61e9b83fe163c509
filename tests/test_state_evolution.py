"""State schema evolution, one test per row of the compatibility table of
docs/state_evolution.md, on both backends: a state restored with the same declared type is
read as it is; a compatible change (a wider number, a ``Row`` gaining fields, either inside a
row, tuple, list or map) is migrated once as the state registers, and the next snapshot
records the new type; anything else is refused naming the operator, the state, both types and
the way out. Untyped (pickled) state restores as Python's pickle does. The manifest's record
of each operator's state types is read back (test_state_types_stream.py restarts a streaming
job on Spark with a migrated state, on both backends)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from sparktide.common import Row, Types
from sparktide.common.typeinfo_json import declaration, type_to_json
from sparktide.core.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.datastream import KeyedProcessFunction
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.recorded_types import OperatorStateTypes, check_recorded_key_types
from sparktide.runtime.state.state_types import IncompatibleStateTypeError
from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.spark.checkpoint_meta import Chain, CommitManifest
from test_state_types import _GETTERS, BACKENDS, opened_count
from test_state_types import _run as _run_subtask


class Evolve(KeyedProcessFunction):
    """Registers ``descriptor`` in open; per record, emits what the state holds (``read``)
    and writes the record's value into it (``write``)."""

    def __init__(
        self,
        descriptor: StateDescriptor,
        read: Callable[[Any], Any],
        write: Callable[[Any, Any], None],
    ) -> None:
        self.descriptor, self.read, self.write = descriptor, read, write

    def open(self, runtime_context: Any) -> None:
        self.state = getattr(runtime_context, _GETTERS[type(self.descriptor)])(self.descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield self.read(self.state)
        if value[1] is not None:
            self.write(self.state, value[1])


@dataclass(frozen=True)
class Row_:
    """One row of the table: a state declared with ``old`` then ``new`` (``make(type)``), a
    value written with ``old`` and what the job with ``new`` reads back (``None``: refused)."""

    make: Callable[[Any], StateDescriptor]
    old: Any
    new: Any
    written: Any
    read_back: Any
    read: Callable[[Any], Any] = lambda s: s.value()
    write: Callable[[Any, Any], None] = lambda s, v: s.update(v)


def _ttl(descriptor: StateDescriptor) -> StateDescriptor:
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(60_000).build())
    return descriptor


def _value(t: Any) -> StateDescriptor:
    return ValueStateDescriptor("s", t)


def _list(t: Any) -> StateDescriptor:
    return ListStateDescriptor("s", t)


def _map_values(t: Any) -> StateDescriptor:
    return _ttl(MapStateDescriptor("s", Types.STRING(), t))


def _map_keys(t: Any) -> StateDescriptor:
    return MapStateDescriptor("s", t, Types.STRING())


def _reducing(t: Any) -> StateDescriptor:
    return ReducingStateDescriptor("s", max, t)


def _items(s: Any) -> list[Any]:
    return sorted(s.items())


NAMED = Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.INT()])
GAINED = Types.ROW_NAMED(["note", "id", "n"], [Types.STRING(), Types.STRING(), Types.INT()])

TABLE: dict[str, Row_] = {
    "the same type": Row_(_value, NAMED, NAMED, Row(id="a", n=3), Row(id="a", n=3)),
    "INT -> LONG": Row_(_value, Types.INT(), Types.LONG(), 2**31 - 1, 2**31 - 1),
    "BYTE -> SHORT": Row_(_value, Types.BYTE(), Types.SHORT(), -7, -7),
    "FLOAT -> DOUBLE": Row_(
        _reducing,
        Types.FLOAT(),
        Types.DOUBLE(),
        1.5,
        1.5,
        read=lambda s: s.get(),
        write=lambda s, v: s.add(v),
    ),
    "a named Row gains a field (and reorders)": Row_(
        _value, NAMED, GAINED, ("a", 3), Row(note=None, id="a", n=3)
    ),
    "an unnamed Row gains a last field": Row_(
        _value,
        Types.ROW([Types.INT()]),
        Types.ROW([Types.INT(), Types.DOUBLE()]),
        Row(4),
        Row(f0=4, f1=None),
    ),
    "a field widened inside a Row (map state with TTL)": Row_(
        _map_values,
        NAMED,
        Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.LONG()]),
        Row(id="a", n=3),
        [("k", Row(id="a", n=3))],
        read=_items,
        write=lambda s, v: s.put("k", v),
    ),
    "a list's Row elements gain a field": Row_(
        _list,
        NAMED,
        GAINED,
        Row(id="a", n=3),
        [Row(note=None, id="a", n=3)],
        read=lambda s: list(s.get()),
        write=lambda s, v: s.add(v),
    ),
    "a map state's keys widened": Row_(
        _map_keys,
        Types.INT(),
        Types.LONG(),
        7,
        [(7, "x")],
        read=_items,
        write=lambda s, v: s.put(v, "x"),
    ),
    "a field widened inside a TUPLE, a LIST and a MAP": Row_(
        _value,
        Types.MAP(Types.STRING(), Types.LIST(Types.TUPLE([Types.SHORT(), NAMED]))),
        Types.MAP(Types.STRING(), Types.LIST(Types.TUPLE([Types.LONG(), GAINED]))),
        {"x": [(1, Row(id="a", n=3))]},
        {"x": [(1, Row(note=None, id="a", n=3))]},
    ),
    "a narrower number (LONG -> INT)": Row_(_value, Types.LONG(), Types.INT(), 5, None),
    "another number kind (INT -> DOUBLE)": Row_(_value, Types.INT(), Types.DOUBLE(), 5, None),
    "a Row loses a field": Row_(_value, GAINED, NAMED, ("x", "a", 3), None),
    "a Row field is renamed": Row_(
        _value, NAMED, Types.ROW_NAMED(["id", "m"], [Types.STRING(), Types.INT()]), ("a", 3), None
    ),
    "a Row field changes type": Row_(
        _list,
        NAMED,
        Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.STRING()]),
        Row(id="a", n=3),
        None,
        read=lambda s: list(s.get()),
        write=lambda s, v: s.add(v),
    ),
    "a TUPLE gains a field": Row_(
        _value, Types.TUPLE([Types.INT()]), Types.TUPLE([Types.INT(), Types.INT()]), (1,), None
    ),
    "a declared type becomes undeclared": Row_(_value, Types.INT(), None, 5, None),
}

REASONS = {
    "a Row loses a field": (
        "(field 'note' of Types.ROW_NAMED(['note', 'id', 'n'], [Types.STRING(), "
        "Types.STRING(), Types.INT()]) is removed)"
    ),
    "a Row field changes type": "(field 'n': Types.INT() -> Types.STRING())",
    "a Row field is renamed": (
        "(field 'n' of Types.ROW_NAMED(['id', 'n'], [Types.STRING(), Types.INT()]) is removed)"
    ),
    "a TUPLE gains a field": "(a tuple's arity changes from 1 to 2)",
}


def _subtask(backend: str, row: Row_, type_info: Any, snapshot: bytes | None = None) -> Any:
    """An opened subtask of operator 'Count' (uid 'count') with the state of ``row`` declared
    as ``type_info``, restored from ``snapshot``."""
    return opened_count(Evolve(row.make(type_info), row.read, row.write), backend, snapshot)


def _recorded(snapshot: bytes) -> Any:
    return KeyedOperatorSnapshot.from_bytes(snapshot).state_meta["s"]["types"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [c for c, r in TABLE.items() if r.read_back is not None])
def test_a_compatible_change_restores_migrated(backend, case) -> None:
    row = TABLE[case]
    _, snapshot = _run_subtask(_subtask(backend, row, row.old), [("a", row.written)])
    out, again = _run_subtask(_subtask(backend, row, row.new, snapshot), [("a", None)])
    assert repr(out) == repr([row.read_back])
    # the next snapshot records the new type and restores as it is, with the migrated values
    recorded = _recorded(again)
    part = "map_key" if row.make is _map_keys else "value"
    assert recorded[part] == type_to_json(row.new)
    out, _ = _run_subtask(_subtask(backend, row, row.new, again), [("a", None)])
    assert repr(out) == repr([row.read_back])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", [c for c, r in TABLE.items() if r.read_back is None])
def test_an_incompatible_change_is_refused_naming_both_types(backend, case) -> None:
    row = TABLE[case]
    _, snapshot = _run_subtask(_subtask(backend, row, row.old), [("a", row.written)])
    with pytest.raises(IncompatibleStateTypeError) as caught:
        _subtask(backend, row, row.new, snapshot)
    message = str(caught.value)
    kind = "list" if row.make is _list else "value"
    part = "element" if kind == "list" else "value"
    new = "undeclared (pickled)" if row.new is None else declaration(row.new)
    assert message.startswith(
        f"operator 'Count' (uid 'count'): state 's' ({kind} state) cannot be restored: its "
        f"{part} type was {declaration(row.old)} in the checkpoint and is {new} now"
        + (f" {REASONS[case]}" if case in REASONS else "")
        + "; this change of a state's type is not migrated"
    ), message
    assert "migrate the state by hand" in message
    # the snapshot is intact: with the old type the state restores as it was
    out, _ = _run_subtask(_subtask(backend, row, row.old, snapshot), [("a", None)])
    assert len(out) == 1 and out[0] not in (None, [])


class Point:
    """A user class kept pickled in an undeclared state."""

    def __init__(self, x: int) -> None:
        self.x = x


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_undeclared_state_restores_a_changed_class_as_pickle_does(backend, monkeypatch) -> None:
    row = Row_(_value, None, None, Point(3), None)
    _, snapshot = _run_subtask(_subtask(backend, row, None), [("a", row.written)])

    class Point3D:  # the class as the changed job defines it: a new field with a default
        z = 0

        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    Point3D.__qualname__ = "Point"
    monkeypatch.setattr(sys.modules[__name__], "Point", Point3D)
    (restored,), _ = _run_subtask(_subtask(backend, row, None, snapshot), [("a", None)])
    # pickle restores the old attributes into the new class, without calling __init__: a
    # field the class gained is missing unless the class gives it a default
    assert type(restored) is Point3D and vars(restored) == {"x": 3}
    assert restored.z == 0 and not hasattr(restored, "y")


def _record(states: dict[str, Any], key_type: Any = None) -> OperatorStateTypes:
    """A record of operator 'Totals' keyed by ``key_type`` (default: ``Types.STRING()``)."""
    return OperatorStateTypes.of("Totals", "totals", key_type or Types.STRING(), states)


def test_the_manifest_records_state_types_per_operator_and_reads_one_without_them() -> None:
    total = {
        "kind": "value",
        "ttl": False,
        "types": {"format_version": 1, "value": None, "map_key": None},
    }
    seen = {"kind": "map", "ttl": True}
    joined = OperatorStateTypes.join(
        [("uid:totals", _record({"total": total})), ("uid:totals", _record({"seen": seen}))]
    )
    assert joined == {"uid:totals": _record({"total": total, "seen": seen})}
    manifest = CommitManifest(
        version=3,
        processing_time=0,
        parallelism={0: 2},
        chains={0: (Chain(3),) * 2},
        files={},
        fingerprint=None,
        state_types=joined,
    )
    raw = json.loads(json.dumps(manifest.to_json()))
    assert raw["state_types"]["uid:totals"]["format_version"] == 1
    assert CommitManifest.from_json(raw, "commits/3.json") == manifest
    # a manifest written before the record existed: nothing recorded, nothing checked
    del raw["state_types"]
    older = CommitManifest.from_json(raw, "commits/3.json")
    assert older.state_types == {}
    check_recorded_key_types(older.state_types, {"uid:totals": Types.LONG()})
    raw["state_types"] = {"uid:totals": {"format_version": 9}}
    with pytest.raises(CheckpointError, match=r"^commits/3.json: state_types.uid:totals: the "):
        CommitManifest.from_json(raw, "commits/3.json")


def test_recorded_key_types_are_checked_per_operator_identity() -> None:
    recorded = {"uid:totals": _record({}), "uid:gone": _record({}, Types.INT())}
    check_recorded_key_types(recorded, {"uid:totals": Types.STRING()})  # 'gone': not checked
    with pytest.raises(
        IncompatibleStateTypeError,
        match=r"key type was Types\.STRING\(\) in the checkpoint and is undeclared",
    ):
        check_recorded_key_types(recorded, {"uid:totals": None})


def test_a_migration_into_a_state_registered_already_is_refused(make_backend) -> None:
    backend = make_backend()
    backend.get_partitioned_state(ValueStateDescriptor("s", Types.LONG()))
    types = {"format_version": 1, "value": {"type": "INT"}, "map_key": None}
    meta = {"s": {"kind": "value", "ttl": False, "types": types}}
    with pytest.raises(ValueError, match=r"restore the snapshot before the state registers"):
        backend.restore_state(meta, {})
