"""Rows of keyed state and timers (the shape :mod:`sparktide.state_api.rows` gives) back into
the backend-neutral entries of a snapshot: the inverse of reading, for writing a savepoint.

Two steps, so that a Spark job can run them on either side of a shuffle:

1. :func:`decode_state_rows` / :func:`decode_timer_rows`: a table's columns checked against the
   state's declared types and turned into :data:`Decoded` rows ``(key_group, order, key,
   namespace, payload)``; a value that does not fit raises :class:`StateWriteError` naming the
   operator, the state, the row and the column;
2. :func:`group_state` / :func:`group_timers`: decoded rows (of one or more key groups, in key
   group then row order) gathered into entries ``{key_group: [(key, namespace, raw)]}`` (a
   list state's elements in ``list_index`` order, a map state's entries in a dict) and timers
   ``{key_group: {service: (event, processing)}}``.

Columns: ``key``; the namespace, where there is one (``window_start`` and ``window_end``: a
``TimeWindow``; ``namespace``: its pickle); ``value`` (value, reducing, aggregating state),
``list_element`` with an optional ``list_index`` (list state: one row per element),
``user_map_key`` and ``user_map_value`` (map state: one row per entry); timers: ``timestamp``,
``domain`` (``event``/``processing``) and an optional ``service`` (``user-timers`` when
absent). ``key_group`` is optional: when given it must be the key group of the key.

>>> import pyarrow as pa
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.core.state import ListStateDescriptor
>>> target = StateTarget.of("count", ListStateDescriptor("seen", Types.LONG()), Types.STRING())
>>> rows = pa.table({"key": ["a", "a"], "list_index": [1, 0], "list_element": [8, 7]})
>>> decoded = decode_state_rows(target, rows, 128)
>>> group_state(target, sorted(decoded, key=lambda d: (d[0], d[1])), 0)
{81: [('a', None, [7, 8])]}
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from sparktide.common.arrow_rows import python_column
from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.keygroups import assign_to_key_group
from sparktide.runtime.state.backend_checks import kind_of, ttl_enabled
from sparktide.runtime.state.state_types import StateTypes, declared_or_none, describe_declared

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.core.state import StateDescriptor
    from sparktide.runtime.state.backend import StateEntry, StateMeta
    from sparktide.runtime.timers.manager import TimerSnapshot

__all__ = [
    "DEFAULT_TIMER_SERVICE",
    "Decoded",
    "StateTarget",
    "StateWriteError",
    "TimerTarget",
    "check_columns",
    "decode_state_rows",
    "decode_timer_rows",
    "group_state",
    "group_timers",
]

DEFAULT_TIMER_SERVICE = "user-timers"
"""The timer service of a timer row without ``service`` (a process function's timers)."""

Decoded = tuple[int, int, object, object, tuple[Any, ...]]
"""``(key_group, order, key, namespace, payload)``: one row, decoded; ``order`` is the row's
place in its input (its row number, or a Spark row id)."""

_WINDOW = ("window_start", "window_end")


class StateWriteError(ValueError):
    """Rows given to the savepoint writer do not fit what they are written as; the message
    names the operator, the state, the row and the column."""


@dataclass(frozen=True)
class StateTarget:
    """One keyed state to write: its operator ``uid``, name, kind, TTL setting, declared
    types and the operator's declared key type (``None``: undeclared, pickled)."""

    uid: str
    name: str
    kind: str
    ttl: bool
    types: StateTypes
    key_type: TypeInformation | None

    @classmethod
    def of(
        cls, uid: str, descriptor: StateDescriptor, key_type: TypeInformation | None
    ) -> StateTarget:
        """The target of the state ``descriptor`` describes, of operator ``uid``."""
        kind = kind_of(descriptor)
        return cls(uid, descriptor.name, kind, ttl_enabled(descriptor), StateTypes.of(descriptor),
                   declared_or_none(key_type))  # fmt: skip

    def meta(self) -> StateMeta:
        """What a snapshot records of the state (kind, TTL setting, declared types)."""
        return {"kind": self.kind, "ttl": self.ttl, "types": self.types.to_json()}

    def where(self) -> str:
        return f"operator uid {self.uid!r}, state {self.name!r}"

    def value_columns(self) -> tuple[tuple[str, TypeInformation | None], ...]:
        """The value columns of a row and their declared types."""
        if self.kind == "list":
            return (("list_element", self.types.value),)
        if self.kind == "map":
            return (("user_map_key", self.types.map_key), ("user_map_value", self.types.value))
        return (("value", self.types.value),)

    def columns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(required, optional)`` columns besides the namespace's."""
        optional = ("key_group", "list_index") if self.kind == "list" else ("key_group",)
        return ("key", *(n for n, _ in self.value_columns())), optional


@dataclass(frozen=True)
class TimerTarget:
    """The timers of operator ``uid``, keyed by ``key_type`` (``None``: pickled keys)."""

    uid: str
    key_type: TypeInformation | None

    def where(self) -> str:
        return f"operator uid {self.uid!r}, timers"

    def columns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return ("key", "timestamp", "domain"), ("key_group", "service")


def check_columns(target: StateTarget | TimerTarget, names: Sequence[str]) -> None:
    """Raise :class:`StateWriteError` unless ``names`` are the columns rows of ``target``
    may have (the required ones, some optional ones, at most one kind of namespace)."""
    required, optional = target.columns()
    namespace = [n for n in names if n in (*_WINDOW, "namespace")]
    allowed = {*required, *optional, *namespace}
    missing = [n for n in required if n not in names]
    extra = [n for n in names if n not in allowed]
    bad_ns = namespace and sorted(namespace) not in (sorted(_WINDOW), ["namespace"])
    if missing or extra or bad_ns or len(set(names)) != len(names):
        raise StateWriteError(
            f"{target.where()}: the rows have columns {list(names)}; they must have "
            f"{list(required)}, may have {list(optional)}, and a namespace as "
            "'window_start' and 'window_end' (a TimeWindow) or 'namespace' (its pickle), as "
            "SavepointReader gives them"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {extra}" if extra else "")
        )


# ---------------------------------------------------------------------------------------------
# step 1: decode


def _converter(
    type_info: TypeInformation | None, where: str, column: str, nullable: bool
) -> Callable[[object, int], object]:
    """A function making a column value the Python value stored (a declared type's coerced
    value; an undeclared one unpickled; ``nullable``: a null stays ``None``, as a map state
    may hold it), raising :class:`StateWriteError` naming the row."""

    def fail(row: int, why: str) -> StateWriteError:
        return StateWriteError(
            f"{where}, row {row}, column {column!r} ({describe_declared(type_info)}): {why}"
        )

    if type_info is None:

        def unpickle(value: object, row: int) -> object:
            if value is None and nullable:
                return None
            if not isinstance(value, bytes):
                raise fail(row, f"an undeclared value must be its pickle (bytes), got {value!r}")
            try:
                return pickle.loads(value)
            except Exception as exc:
                raise fail(row, f"not a pickle: {exc!r}") from None

        return unpickle
    coerce = type_info.coerce

    def coerced(value: object, row: int) -> object:
        if value is None:
            if nullable:
                return None
            raise fail(row, "null; a stored value is never null (no value: leave the row out)")
        try:
            return coerce(value, column)
        except (TypeError, ValueError) as exc:
            raise fail(row, str(exc)) from None

    return coerced


def _column(
    table: pa.Table, name: str, type_info: TypeInformation | None, where: str, order: Sequence[int]
) -> list[object]:
    convert = _converter(type_info, where, name, name == "user_map_value")
    return [convert(v, row) for v, row in zip(python_column(table[name]), order, strict=True)]


def _namespaces(table: pa.Table, where: str, order: Sequence[int]) -> list[object]:
    names = table.column_names
    if "namespace" in names:
        return _column(table, "namespace", None, where, order)
    if "window_start" not in names:
        return [None] * table.num_rows
    starts = cast("list[int]", _column(table, "window_start", _long(), where, order))
    ends = cast("list[int]", _column(table, "window_end", _long(), where, order))
    return [TimeWindow(s, e) for s, e in zip(starts, ends, strict=True)]


def _long() -> TypeInformation:
    from sparktide.common.typeinfo import Types

    return Types.LONG()


def _key_groups(
    table: pa.Table, keys: Sequence[object], maxp: int, where: str, order: Sequence[int]
) -> list[int]:
    groups = [assign_to_key_group(k, maxp) for k in keys]
    if "key_group" in table.column_names:
        given = python_column(table["key_group"])
        for g, kg, row in zip(given, groups, order, strict=True):
            if g is not None and g != kg:
                raise StateWriteError(
                    f"{where}, row {row}, column 'key_group': {g} is not the key group of its "
                    f"key ({kg} with max_parallelism {maxp}); leave the column out (it is "
                    "computed) or write with the max_parallelism the rows were read with"
                )
    return groups


def _rows(table: pa.Table, order: Sequence[int] | None) -> Sequence[int]:
    return range(table.num_rows) if order is None else order


def decode_state_rows(
    target: StateTarget, table: pa.Table, maxp: int, order: Sequence[int] | None = None
) -> list[Decoded]:
    """The rows of ``table`` (state ``target``) decoded; ``order``: each row's place in its
    input (``None``: its row number). The payload: the value; a list element's index and the
    element; a map entry's key and value."""
    check_columns(target, table.column_names)
    where, rows = target.where(), _rows(table, order)
    keys = _column(table, "key", target.key_type, where, rows)
    namespaces = _namespaces(table, where, rows)
    values = [_column(table, n, t, where, rows) for n, t in target.value_columns()]
    if target.kind == "list":
        index = (python_column(table["list_index"]) if "list_index" in table.column_names
                 else [None] * table.num_rows)  # fmt: skip
        values = [list(index), *values]
    groups = _key_groups(table, keys, maxp, where, rows)
    payloads = list(zip(*values, strict=True))
    return list(zip(groups, rows, keys, namespaces, payloads, strict=True))


def decode_timer_rows(
    target: TimerTarget, table: pa.Table, maxp: int, order: Sequence[int] | None = None
) -> list[Decoded]:
    """The timer rows of ``table`` decoded; the payload: ``(timestamp, domain, service)``."""
    check_columns(target, table.column_names)
    where, rows = target.where(), _rows(table, order)
    keys = _column(table, "key", target.key_type, where, rows)
    namespaces = _namespaces(table, where, rows)
    stamps = _column(table, "timestamp", _long(), where, rows)
    domains = python_column(table["domain"])
    for d, row in zip(domains, rows, strict=True):
        if d not in ("event", "processing"):
            raise StateWriteError(
                f"{where}, row {row}, column 'domain': {d!r}; a timer's domain is 'event' or "
                "'processing'"
            )
    services = (python_column(table["service"]) if "service" in table.column_names
                else [None] * table.num_rows)  # fmt: skip
    services = [DEFAULT_TIMER_SERVICE if s is None else str(s) for s in services]
    groups = _key_groups(table, keys, maxp, where, rows)
    payloads = list(zip(stamps, domains, services, strict=True))
    return list(zip(groups, rows, keys, namespaces, payloads, strict=True))


# ---------------------------------------------------------------------------------------------
# step 2: group


def _twice(target: StateTarget, row: int, what: str) -> StateWriteError:
    return StateWriteError(f"{target.where()}, row {row}: {what} is given twice; give each once")


def _entry(target: StateTarget, now: int, raw: object) -> object:
    return (raw, now) if target.ttl else raw


def group_state(
    target: StateTarget, decoded: Iterable[Decoded], now: int
) -> dict[int, list[StateEntry]]:
    """Per key group, the entries ``(key, namespace, raw)`` of decoded rows given in key
    group then row order (the entries in the order of their first row). ``now``: the last
    access time of a state with TTL (ms)."""
    out: dict[int, dict[tuple[object, object], Any]] = {}
    for kg, row, key, ns, payload in decoded:
        per = out.setdefault(kg, {})
        slot = (key, ns)
        if target.kind == "list":
            per.setdefault(slot, []).append((payload[0], row, payload[1]))
        elif target.kind == "map":
            entries = per.setdefault(slot, {})
            if payload[0] in entries:
                raise _twice(target, row, f"map key {payload[0]!r} of key {key!r}")
            entries[payload[0]] = _entry(target, now, payload[1])
        else:
            if slot in per:
                raise _twice(target, row, f"key {key!r}" + ("" if ns is None else f" in {ns!r}"))
            per[slot] = _entry(target, now, payload[0])
    if target.kind == "list":
        return {kg: [(k, ns, _elements(target, now, e)) for (k, ns), e in per.items()]
                for kg, per in out.items()}  # fmt: skip
    return {kg: [(k, ns, raw) for (k, ns), raw in per.items()] for kg, per in out.items()}


def _elements(target: StateTarget, now: int, elements: list[tuple[Any, int, object]]) -> list:
    """A list's elements by ``list_index`` (rows without one: in row order, after)."""
    indexed = sorted(elements, key=lambda e: (e[0] is None, e[0] or 0, e[1]))
    seen: set[int] = set()
    for index, row, _ in indexed:
        if index is not None and index in seen:
            raise _twice(target, row, f"list_index {index}")
        seen.add(index)
    return [_entry(target, now, e[2]) for e in indexed]


def group_timers(target: TimerTarget, decoded: Iterable[Decoded]) -> TimerSnapshot:
    """Per key group and service, the ``(event, processing)`` timers of decoded rows given in
    key group then row order, numbered in that order (their order among timers of one
    timestamp)."""
    out: TimerSnapshot = {}
    seen: set[tuple[object, ...]] = set()
    for seq, (kg, row, key, ns, (ts, domain, service)) in enumerate(decoded):
        timer = (key, ns, ts, domain, service)
        if timer in seen:
            raise StateWriteError(
                f"{target.where()}, row {row}: the {domain} timer of key {key!r} at {ts} "
                f"({service}) is given twice; give each once"
            )
        seen.add(timer)
        event, proc = out.setdefault(kg, {}).setdefault(service, ([], []))
        (event if domain == "event" else proc).append((ts, seq, key, ns, kg))
    return out
