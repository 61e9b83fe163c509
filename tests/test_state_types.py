"""A state restored with declared types changed incompatibly since the checkpoint (a change
that is not migrated: test_state_evolution.py has those) is refused, the same way on both
backends: when the restored state meets its descriptor (the operator's open, before
any record), with an ``IncompatibleStateTypeError`` naming the operator, the state, the type in
the checkpoint, the type declared now and what to do. Every kind of state (and its TTL variant)
is checked, an undeclared state becoming declared and back too, and the key type of the keyed
stream; unchanged types restore as before, and so does a snapshot recorded without types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sparktide.common import Types
from sparktide.common.typeinfo_json import declaration
from sparktide.core.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sparktide.core.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)
from sparktide.datastream import KeyedProcessFunction
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.operators.process import KeyedProcessOperator
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.state_types import IncompatibleStateTypeError

BACKENDS: dict[str, Callable[[], StateBackend]] = {
    "heap": HashMapStateBackend,
    "rocksdb": EmbeddedRocksDBStateBackend,
}


class Sum:
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, acc: int) -> int:
        return acc + value

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def _ttl(descriptor: StateDescriptor) -> StateDescriptor:
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(60_000).build())
    return descriptor


def _write(kind: str) -> Callable[[Any, Any], None]:
    """How the function writes a record's value into a state of ``kind``."""
    return {
        "value": lambda s, v: s.update(v),
        "list": lambda s, v: s.add(v),
        "map": lambda s, v: s.put("k", v),
        "reducing": lambda s, v: s.add(v),
        "aggregating": lambda s, v: s.add(v),
    }[kind]


def _read(kind: str) -> Callable[[Any], Any]:
    return {
        "value": lambda s: s.value(),
        "list": lambda s: list(s.get()),
        "map": lambda s: dict(s.items()),
        "reducing": lambda s: s.get(),
        "aggregating": lambda s: s.get(),
    }[kind]


_GETTERS = {
    ValueStateDescriptor: "get_state",
    ListStateDescriptor: "get_list_state",
    MapStateDescriptor: "get_map_state",
    ReducingStateDescriptor: "get_reducing_state",
    AggregatingStateDescriptor: "get_aggregating_state",
}


class Keep(KeyedProcessFunction):
    """Registers ``descriptor`` in open; per record, emits what the state held and writes
    the record's value into it."""

    def __init__(self, descriptor: StateDescriptor, kind: str) -> None:
        self.descriptor = descriptor
        self.kind = kind

    def open(self, runtime_context: Any) -> None:
        getter = getattr(runtime_context, _GETTERS[type(self.descriptor)])
        self.state = getter(self.descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield _read(self.kind)(self.state)
        _write(self.kind)(self.state, value[1])


def _subtask(
    backend: str,
    descriptor: StateDescriptor,
    kind: str,
    snapshot: bytes | None = None,
    key_type: Any = None,
) -> KeyedProcessOperator:
    """An opened subtask of operator 'Count' (uid 'count') restored from ``snapshot``."""
    return opened_count(Keep(descriptor, kind), backend, snapshot, key_type)


def opened_count(
    function: Any, backend: str, snapshot: bytes | None = None, key_type: Any = None
) -> KeyedProcessOperator:
    """A keyed process operator 'Count' (uid 'count') of ``function`` keyed by a record's first
    field, restored from ``snapshot`` and opened."""
    op = KeyedProcessOperator(function)
    setup = OperatorSetup(
        name="Count", uid="count", state_backend=BACKENDS[backend](), key_type=key_type
    )
    op.setup(CollectingOutput(), ManualProcessingTimeService(0), setup, lambda r: r[0])
    try:
        if snapshot is not None:
            op.initialize_state([snapshot])
        op.open()
    except BaseException:
        op.close()
        raise
    return op


def _run(op: KeyedProcessOperator, records: list[tuple[Any, Any]]) -> tuple[list[Any], bytes]:
    out = op.output
    for r in records:
        op.process_element(StreamRecord(r, 0))
    snapshot = op.snapshot_state().to_bytes()
    op.close()
    assert isinstance(out, CollectingOutput)
    return [e.value for e in out.elements if isinstance(e, StreamRecord)], snapshot


def _refusal(
    backend: str, old: StateDescriptor, new: StateDescriptor, kind: str, value: Any
) -> str:
    _, snapshot = _run(_subtask(backend, old, kind), [("a", value)])
    with pytest.raises(IncompatibleStateTypeError) as caught:
        _subtask(backend, new, kind, snapshot)
    return str(caught.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_value_type_is_refused_naming_operator_state_and_types(backend) -> None:
    message = _refusal(
        backend,
        ValueStateDescriptor("total", Types.INT()),
        ValueStateDescriptor("total", Types.STRING()),
        "value",
        5,
    )
    assert message.startswith(
        "operator 'Count' (uid 'count'): state 'total' (value state) cannot be restored: its "
        "value type was Types.INT() in the checkpoint and is Types.STRING() now"
    )
    for remedy in (
        "Declare the state with its old types again (value: Types.INT())",
        "give the state a new name to start it empty",
        "start the job from a new checkpoint location",
    ):
        assert remedy in message


def test_the_refusal_is_the_same_on_both_backends() -> None:
    messages = {
        backend: _refusal(
            backend,
            MapStateDescriptor("m", Types.STRING(), Types.INT()),
            MapStateDescriptor("m", Types.LONG(), Types.STRING()),
            "map",
            5,
        )
        for backend in BACKENDS
    }
    assert messages["heap"] == messages["rocksdb"]
    assert (
        "its map key type was Types.STRING() in the checkpoint and is Types.LONG() now; its "
        "value type was Types.INT() in the checkpoint and is Types.STRING() now"
    ) in messages["heap"]


CHANGES: dict[str, tuple[Callable[[Any], StateDescriptor], Any, Any, str, Any]] = {
    # name: (descriptor of a type, old type, new type, kind, a value of the old type)
    "value": (lambda t: ValueStateDescriptor("s", t), Types.INT(), Types.STRING(), "value", 5),
    "list": (lambda t: ListStateDescriptor("s", t), Types.LONG(), Types.INT(), "list", 5),
    "map value": (
        lambda t: MapStateDescriptor("s", Types.STRING(), t),
        Types.INT(),
        Types.DOUBLE(),
        "map",
        5,
    ),
    "map key": (
        lambda t: MapStateDescriptor("s", t, Types.INT()),
        Types.STRING(),
        Types.CHAR(),
        "map",
        5,
    ),
    "reducing": (
        lambda t: ReducingStateDescriptor("s", lambda a, b: a + b, t),
        Types.DOUBLE(),
        Types.FLOAT(),
        "reducing",
        5,
    ),
    "aggregating": (
        lambda t: AggregatingStateDescriptor("s", Sum(), t),
        Types.LONG(),
        Types.TUPLE([Types.LONG()]),
        "aggregating",
        5,
    ),
    "value with TTL": (
        lambda t: _ttl(ValueStateDescriptor("s", t)),
        Types.INT(),
        Types.STRING(),
        "value",
        5,
    ),
    "list with TTL": (
        lambda t: _ttl(ListStateDescriptor("s", t)),
        Types.STRING(),
        Types.INT(),
        "list",
        "x",
    ),
    "map with TTL": (
        lambda t: _ttl(MapStateDescriptor("s", Types.STRING(), t)),
        Types.ROW([Types.INT(), Types.STRING()]),
        Types.ROW([Types.INT()]),
        "map",
        (5, "x"),
    ),
    "reducing with TTL": (
        lambda t: _ttl(ReducingStateDescriptor("s", max, t)),
        Types.INT(),
        Types.FLOAT(),
        "reducing",
        5,
    ),
    "aggregating with TTL": (
        lambda t: _ttl(AggregatingStateDescriptor("s", Sum(), t)),
        Types.INT(),
        None,
        "aggregating",
        5,
    ),
    "undeclared becomes declared": (
        lambda t: ValueStateDescriptor("s", t),
        None,
        Types.INT(),
        "value",
        5,
    ),
    "declared becomes undeclared": (
        lambda t: ListStateDescriptor("s", t),
        Types.INT(),
        None,
        "list",
        5,
    ),
    "pickled becomes declared": (
        lambda t: ValueStateDescriptor("s", t),
        Types.PICKLED_BYTE_ARRAY(),
        Types.INT(),
        "value",
        5,
    ),
}


def _text(type_info: Any) -> str:
    if type_info is None or type_info == Types.PICKLED_BYTE_ARRAY():
        return "undeclared (pickled)"
    return declaration(type_info)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change", CHANGES)
def test_every_kind_of_state_refuses_a_changed_type(backend, change) -> None:
    make, old, new, kind, value = CHANGES[change]
    message = _refusal(backend, make(old), make(new), kind, value)
    part = "map key" if change == "map key" else _PARTS.get(kind, "value")
    described = f"{kind} state with TTL" if "TTL" in change else f"{kind} state"
    assert message.startswith(
        f"operator 'Count' (uid 'count'): state 's' ({described}) cannot be restored: its "
        f"{part} type was {_text(old)} in the checkpoint and is {_text(new)} now"
    )


_PARTS = {"list": "element", "aggregating": "accumulator"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change", CHANGES)
def test_the_same_types_restore_as_they_are(backend, change) -> None:
    make, old, _, kind, value = CHANGES[change]
    records = [("a", value), ("b", value), ("a", value)]
    uninterrupted, _ = _run(_subtask(backend, make(old), kind), records)
    first, snapshot = _run(_subtask(backend, make(old), kind), records[:1])
    then, _ = _run(_subtask(backend, make(old), kind, snapshot), records[1:])
    assert first + then == uninterrupted
    assert then[1] != then[0]  # key 'a' found what the first run stored


@pytest.mark.parametrize("backend", BACKENDS)
def test_undeclared_and_pickled_types_are_the_same_type(backend) -> None:
    _, snapshot = _run(_subtask(backend, ValueStateDescriptor("s", None), "value"), [("a", 5)])
    pickled = ValueStateDescriptor("s", Types.PICKLED_BYTE_ARRAY())
    out, _ = _run(_subtask(backend, pickled, "value", snapshot), [("a", 6)])
    assert out == [5]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_snapshot_without_recorded_types_restores_without_a_check(backend) -> None:
    descriptor = ValueStateDescriptor("s", Types.INT())
    _, snapshot = _run(_subtask(backend, descriptor, "value"), [("a", 5)])
    old = KeyedOperatorSnapshot.from_bytes(snapshot)
    meta = {n: {"kind": m["kind"], "ttl": m["ttl"]} for n, m in old.state_meta.items()}
    older = KeyedOperatorSnapshot(
        old.operator, old.max_parallelism, old.key_group_range, meta, old.state, old.timers
    )
    out, again = _run(_subtask(backend, descriptor, "value", older.to_bytes()), [("a", 6)])
    assert out == [5]
    # the next snapshot records the types again
    assert KeyedOperatorSnapshot.from_bytes(again).state_meta["s"]["types"]["value"] == {
        "type": "INT"
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_key_type_is_refused(backend) -> None:
    descriptor = ValueStateDescriptor("s", Types.INT())
    op = _subtask(backend, descriptor, "value", key_type=Types.STRING())
    _, snapshot = _run(op, [("a", 5)])
    with pytest.raises(IncompatibleStateTypeError) as caught:
        _subtask(backend, descriptor, "value", snapshot, key_type=Types.CHAR())
    assert str(caught.value).startswith(
        "operator 'Count' (uid 'count'): its keyed state cannot be restored: its key type was "
        "Types.STRING() in the checkpoint and is Types.CHAR() now (the key_type of key_by)"
    )
    assert "Use key_by(..., key_type=Types.STRING()) again" in str(caught.value)
    out, _ = _run(
        _subtask(backend, descriptor, "value", snapshot, key_type=Types.STRING()), [("a", 6)]
    )
    assert out == [5]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_row_key_type_with_other_field_names_is_refused(backend) -> None:
    descriptor = ValueStateDescriptor("s", Types.INT())
    old = Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.INT()])
    renamed = Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()])
    _, snapshot = _run(_subtask(backend, descriptor, "value", key_type=old), [(("a", 1), 5)])
    with pytest.raises(IncompatibleStateTypeError) as caught:
        _subtask(backend, descriptor, "value", snapshot, key_type=renamed)
    assert str(caught.value).startswith(
        f"operator 'Count' (uid 'count'): its keyed state cannot be restored: its key type was "
        f"{declaration(old)} in the checkpoint and is {declaration(renamed)} now"
    )
    if backend == "heap":  # RocksDB does not restore row keys from a snapshot (not the check)
        same = Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.INT()])
        op = _subtask(backend, descriptor, "value", snapshot, key_type=same)
        assert _run(op, [(("a", 1), 6)])[0] == [5]


def test_malformed_recorded_types_are_refused_naming_them(make_backend) -> None:
    backend = make_backend()
    meta = {"s": {"kind": "value", "ttl": False, "types": {"format_version": 9, "value": None}}}
    with pytest.raises(ValueError, match=r"^meta\['s'\]\['types'\]: the declared types must be"):
        backend.restore_state(meta, {})
    assert backend.get_state_names() == []
