"""The rows of keyed state and timers, as Arrow record batches of typed columns.

A subtask's keyed state in the backend-neutral form (``state[key_group][name] = [(key,
namespace, raw value), ...]``, :class:`~sparktide.runtime.snapshot.KeyedOperatorSnapshot`)
becomes rows whose columns follow the state's declared types:

- ``key``: the key, typed by the keyed stream's declared key type (``key_by(...,
  key_type=...)``);
- the namespace, where the state has one: a window (``TimeWindow``) as ``window_start`` and
  ``window_end`` (epoch milliseconds), any other namespace (``GlobalWindow``, a custom window)
  as ``namespace``, its pickle; a state without namespaces has no such column;
- the value: ``value`` for a value, reducing or aggregating state (the accumulator);
  ``list_index`` and ``list_element`` for a list state, one row per element; ``user_map_key``
  and ``user_map_value`` for a map state, one row per entry (Spark's state data source with
  ``flattenCollectionTypes``);
- ``key_group``: the key group of the key.

A declared ``Types.ROW``/``ROW_NAMED``/``TUPLE`` value is one struct column of its fields (so
that no field can collide with the columns above; ``select("value.*")`` spreads it); an
undeclared (pickled) key or value is a ``binary`` column holding ``pickle.dumps(value)``,
unless the reader is given the type to read it as. A state with TTL gives its values without
their last-access timestamps (entries expired but not cleaned up yet included).

>>> from sparktide.common.typeinfo import Types
>>> spec = StateRowsSpec("n", "list", False, Types.STRING(), Types.LONG())
>>> batch = state_batch(spec, [(5, "a", None, [7, 8])])
>>> batch.to_pylist()  # doctest: +NORMALIZE_WHITESPACE
[{'key': 'a', 'list_index': 0, 'list_element': 7, 'key_group': 5},
 {'key': 'a', 'list_index': 1, 'list_element': 8, 'key_group': 5}]
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparktide.common.typeinfo_composite import MapTypeInfo, _ElementsTypeInfo, _FieldsTypeInfo
from sparktide.core.window.windows import TimeWindow
from sparktide.state_api.checkpoint_view import StateReadError

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot

__all__ = [
    "BATCH_ROWS",
    "NamespaceKind",
    "StateEntry",
    "StateRowsSpec",
    "TimerRowsSpec",
    "entry_batches",
    "namespace_kind",
    "state_batch",
    "state_batches",
    "timer_batches",
]

BATCH_ROWS = 65_536
"""The most rows of one record batch."""

StateEntry = tuple[int, object, object, object]
"""``(key_group, key, namespace, raw value)``."""

StateRow = tuple[int, object, object, int, tuple[object, ...]]
"""``(key_group, key, namespace, list index, values of the value columns)``."""


class NamespaceKind(Enum):
    """What the namespaces of a state (or of timers) are, which fixes their columns."""

    NONE = "none"
    """No namespace: no column."""
    WINDOW = "window"
    """``TimeWindow``: ``window_start`` and ``window_end``."""
    PICKLED = "pickled"
    """Anything else: ``namespace``, the pickle."""


def namespace_kind(namespaces: Iterable[object]) -> NamespaceKind | None:
    """The kind of the first namespace (``None``: there is none, no entries). Every entry of
    a state has the same kind of namespace (a window operator's windows, or none).

    >>> namespace_kind([TimeWindow(0, 5)]), namespace_kind([None]), namespace_kind([])
    (<NamespaceKind.WINDOW: 'window'>, <NamespaceKind.NONE: 'none'>, None)
    """
    for ns in namespaces:
        if ns is None:
            return NamespaceKind.NONE
        return NamespaceKind.WINDOW if isinstance(ns, TimeWindow) else NamespaceKind.PICKLED
    return None


# ---------------------------------------------------------------------------------------------
# columns


def _pickled(value: object) -> bytes | None:
    return None if value is None else pickle.dumps(value, protocol=5)


def _plain(type_info: TypeInformation) -> Callable[[Any], Any] | None:
    """A function making a value of ``type_info`` what ``pa.array`` takes (rows as tuples,
    nested too), or ``None`` when values are taken as they are."""
    if isinstance(type_info, _FieldsTypeInfo):
        fields = [_plain(t) for t in type_info.get_field_types()]
        if not any(fields):
            return lambda v: None if v is None else tuple(v)
        pairs = list(enumerate(fields))
        return lambda v: (
            None if v is None else tuple(v[i] if f is None else f(v[i]) for i, f in pairs)
        )
    if isinstance(type_info, _ElementsTypeInfo):
        element = _plain(type_info.element_type)
        if element is None:
            return None
        return lambda v: None if v is None else [element(x) for x in v]
    if isinstance(type_info, MapTypeInfo):
        k, val = _plain(type_info.key_type_info), _plain(type_info.value_type_info)
        if k is None and val is None:
            return None
        return lambda v: (
            None
            if v is None
            else [(x if k is None else k(x), y if val is None else val(y)) for x, y in v.items()]
        )
    return None


def arrow_type(type_info: TypeInformation | None) -> pa.DataType:
    """The Arrow type of a column of values of ``type_info`` (``None``: pickles)."""
    return pa.binary() if type_info is None else type_info.to_arrow_type()


def column(
    values: Sequence[object], type_info: TypeInformation | None, name: str, state: str
) -> pa.Array:
    """The Arrow column ``name`` of ``values``; a value that does not fit its type raises
    :class:`StateReadError` naming the state, the column and the value."""
    if type_info is None:
        return pa.array([_pickled(v) for v in values], pa.binary())
    plain = _plain(type_info)
    data = values if plain is None else [plain(v) for v in values]
    try:
        return pa.array(data, type_info.to_arrow_type())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise StateReadError(
            f"state {state!r}: column {name!r} is read as {type_info} but holds a value that "
            f"does not fit: {exc}; read it with the type the values have (or without one: "
            "undeclared values are read as pickles)"
        ) from None


def _namespace_fields(kind: NamespaceKind) -> list[pa.Field]:
    if kind is NamespaceKind.WINDOW:
        return [pa.field("window_start", pa.int64()), pa.field("window_end", pa.int64())]
    if kind is NamespaceKind.PICKLED:
        return [pa.field("namespace", pa.binary())]
    return []


def _namespace_columns(
    kind: NamespaceKind, namespaces: Sequence[object], state: str
) -> list[pa.Array]:
    if kind is NamespaceKind.PICKLED:
        return [pa.array([_pickled(ns) for ns in namespaces], pa.binary())]
    if kind is NamespaceKind.NONE:
        return []
    for ns in namespaces:
        if not isinstance(ns, TimeWindow):
            raise StateReadError(
                f"{state}: a namespace is {ns!r} where the others are windows (TimeWindow); "
                "the state mixes namespaces of several kinds and cannot be read as one table"
            )
    return [
        pa.array([ns[0] for ns in namespaces], pa.int64()),  # type: ignore[index]
        pa.array([ns[1] for ns in namespaces], pa.int64()),  # type: ignore[index]
    ]


# ---------------------------------------------------------------------------------------------
# keyed state


@dataclass(frozen=True)
class StateRowsSpec:
    """How the entries of one state become rows: the state's name, kind, TTL setting, the
    types of its key, value (a list's element, an aggregating state's accumulator) and map key
    (``None``: pickled), and the kind of its namespaces."""

    state: str
    kind: str
    ttl: bool
    key_type: TypeInformation | None
    value_type: TypeInformation | None
    map_key_type: TypeInformation | None = None
    namespace: NamespaceKind = NamespaceKind.NONE

    def value_columns(self) -> list[tuple[str, TypeInformation | None]]:
        if self.kind == "list":
            return [("list_element", self.value_type)]
        if self.kind == "map":
            return [("user_map_key", self.map_key_type), ("user_map_value", self.value_type)]
        return [("value", self.value_type)]

    def schema(self) -> pa.Schema:
        fields = [pa.field("key", arrow_type(self.key_type))]
        fields += _namespace_fields(self.namespace)
        if self.kind == "list":
            fields.append(pa.field("list_index", pa.int64()))
        fields += [pa.field(n, arrow_type(t)) for n, t in self.value_columns()]
        fields.append(pa.field("key_group", pa.int32()))
        return pa.schema(fields)

    def rows(self, entry: StateEntry) -> Iterator[StateRow]:
        """``(key_group, key, namespace, index, values)`` per row of one entry."""
        kg, key, ns = entry[:3]
        raw: Any = entry[3]
        if self.kind == "list":
            for i, elem in enumerate(raw):
                yield kg, key, ns, i, (elem[0] if self.ttl else elem,)
        elif self.kind == "map":
            for k, v in raw.items():
                yield kg, key, ns, 0, (k, v[0] if self.ttl else v)
        else:
            yield kg, key, ns, 0, (raw[0] if self.ttl else raw,)


def state_batch(spec: StateRowsSpec, entries: Iterable[StateEntry]) -> pa.RecordBatch:
    """The rows of ``entries`` (of ``spec.state``) as one record batch."""
    rows = [row for entry in entries for row in spec.rows(entry)]
    where = spec.state
    arrays = [column([r[1] for r in rows], spec.key_type, "key", where)]
    arrays += _namespace_columns(spec.namespace, [r[2] for r in rows], f"state {where!r}")
    if spec.kind == "list":
        arrays.append(pa.array([r[3] for r in rows], pa.int64()))
    for i, (name, t) in enumerate(spec.value_columns()):
        arrays.append(column([r[4][i] for r in rows], t, name, where))
    arrays.append(pa.array([r[0] for r in rows], pa.int32()))
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema())


def state_entries(snapshot: KeyedOperatorSnapshot, state: str) -> Iterator[StateEntry]:
    """The entries of ``state`` in ``snapshot``, by key group."""
    for kg in sorted(snapshot.state):
        for key, ns, raw in snapshot.state[kg].get(state, ()):
            yield kg, key, ns, raw


def state_batches(
    spec: StateRowsSpec, snapshot: KeyedOperatorSnapshot, rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The rows of ``spec.state`` in ``snapshot``, in batches of about ``rows`` entries."""
    return entry_batches(spec, state_entries(snapshot, spec.state), rows)


def entry_batches(
    spec: StateRowsSpec, entries: Iterator[StateEntry], rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The rows of ``entries`` (of ``spec.state``), in batches of about ``rows`` entries."""
    return _chunked(entries, rows, lambda c: state_batch(spec, c))


def _chunked(
    items: Iterator[Any], size: int, make: Callable[[list[Any]], pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield make(chunk)
            chunk = []
    if chunk:
        yield make(chunk)


# ---------------------------------------------------------------------------------------------
# timers


@dataclass(frozen=True)
class TimerRowsSpec:
    """How pending timers become rows: the key type and the kind of their namespaces."""

    key_type: TypeInformation | None
    namespace: NamespaceKind = NamespaceKind.NONE

    def schema(self) -> pa.Schema:
        fields = [pa.field("key", arrow_type(self.key_type))]
        fields += _namespace_fields(self.namespace)
        fields += [
            pa.field("timestamp", pa.int64()),
            pa.field("domain", pa.string()),
            pa.field("service", pa.string()),
            pa.field("key_group", pa.int32()),
        ]
        return pa.schema(fields)


TimerEntry = tuple[int, str, str, int, object, object]
"""``(key_group, service, domain, timestamp, key, namespace)``."""


def timer_entries(snapshot: KeyedOperatorSnapshot) -> Iterator[TimerEntry]:
    """The pending timers of ``snapshot``, by key group, service and domain, in firing order."""
    for kg in sorted(snapshot.timers):
        for service, pair in sorted(snapshot.timers[kg].items()):
            for domain, entries in zip(("event", "processing"), pair, strict=False):
                for ts, _seq, key, ns, *_ in sorted(entries, key=lambda e: (e[0], e[1])):
                    yield kg, service, domain, ts, key, ns


def timer_batch(spec: TimerRowsSpec, entries: Sequence[TimerEntry]) -> pa.RecordBatch:
    arrays = [column([e[4] for e in entries], spec.key_type, "key", "timers")]
    arrays += _namespace_columns(spec.namespace, [e[5] for e in entries], "timers")
    arrays += [
        pa.array([e[3] for e in entries], pa.int64()),
        pa.array([e[2] for e in entries], pa.string()),
        pa.array([e[1] for e in entries], pa.string()),
        pa.array([e[0] for e in entries], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema())


def timer_batches(
    spec: TimerRowsSpec, snapshot: KeyedOperatorSnapshot, rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The pending timers of ``snapshot`` as rows, in batches of ``rows``."""
    return _chunked(timer_entries(snapshot), rows, lambda c: timer_batch(spec, c))
