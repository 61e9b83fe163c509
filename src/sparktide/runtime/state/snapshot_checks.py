"""Validation of a canonical keyed-state snapshot, shared by every backend's ``restore_state``,
and the TTL purge plan of ``snapshot_state``.

A snapshot is ``(meta, per_key_group)``: ``meta[name] = {"kind": ..., "ttl": bool}`` and
``per_key_group[kg][name] = [(key, namespace, raw_value)]``. The checks here are independent of
where a backend keeps its entries; a backend locates an entry (its key group and the handle it
stores it under) through the ``locate`` callable it passes to :func:`check_entry`.

>>> kinds = check_meta({"count": {"kind": "value", "ttl": False}}, {})
>>> kinds
{'count': ('value', False)}
>>> groups = entry_groups({3: {"count": [("k", None, 1)]}}, kinds, 128, 0, 63)
>>> [(g.key_group, g.name) for g in groups]
[(3, 'count')]
>>> check_entry(("k", None, 1), "e", 3, "value", False, 128, lambda k, ns: (3, (k, ns)))
('k', None, 1, ('k', None))
>>> check_meta({"count": {"kind": "bag"}}, {})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: meta['count'] must be {'kind': one of value, list, map, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypedDict, TypeVar, cast

from sparktide.runtime.state.backend_checks import RegisteredState
from sparktide.runtime.state.heap import KINDS, check_raw, describe_kind
from sparktide.runtime.state.state_types import StateTypes, check_state_types

__all__ = [
    "EntryGroup",
    "StateMeta",
    "TypedState",
    "check_entry",
    "check_meta",
    "checked_group",
    "duplicate_entry",
    "entry_groups",
    "full_snapshot_ttls",
    "merged_meta",
    "recorded_types",
    "state_meta",
]

L = TypeVar("L")


class EntryGroup(NamedTuple):
    """The entries of one state in one key group of a snapshot, their container checked."""

    key_group: int
    name: str
    where: str
    """Where they stand, for errors: ``per_key_group[kg]['name']``."""
    kind: str
    ttl: bool
    entries: Sequence[object]


def check_meta(meta: object, states: Mapping[str, RegisteredState]) -> dict[str, tuple[str, bool]]:
    """``{name: (kind, ttl)}`` of a snapshot's ``meta``; ValueError when it is malformed or a
    state of ``states`` (the backend's) has another kind or TTL setting."""
    if not isinstance(meta, Mapping):
        raise ValueError(
            f"meta must be a dict {{state_name: {{'kind': ..., 'ttl': bool}}}}, got "
            f"{type(meta).__name__}"
        )
    kinds: dict[str, tuple[str, bool]] = {}
    for name, info in meta.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"meta has state name {name!r}; names are non-empty str")
        kind = info.get("kind") if isinstance(info, Mapping) else None
        ttl = info.get("ttl") if isinstance(info, Mapping) else None
        if kind not in KINDS or not isinstance(ttl, bool):
            raise ValueError(
                f"meta[{name!r}] must be {{'kind': one of {', '.join(KINDS)}, 'ttl': bool}}, "
                f"got {info!r}"
            )
        state = states.get(name)
        if state is not None and (state.kind != kind or state.ttl != ttl):
            raise ValueError(
                f"state {name!r} is a {state.describe()} here, but the snapshot holds a "
                f"{describe_kind(kind, ttl)}; restore it into a state of the same kind and "
                "TTL setting (or rename one of them)"
            )
        kinds[name] = (kind, ttl)
    return kinds


class TypedState(RegisteredState, Protocol):
    """A backend's record of one state with the types it declares or was restored with."""

    types: StateTypes | None


class _StateKind(TypedDict):
    kind: str
    ttl: bool


class StateMeta(_StateKind, total=False):
    """What a snapshot records of one state: its kind (one of ``KINDS``), TTL setting and,
    where known, its declared types (plain JSON, :meth:`StateTypes.to_json`)."""

    types: dict[str, Any]


def state_meta(state: TypedState) -> StateMeta:
    """What a snapshot's ``meta`` records of ``state`` (a :class:`StateMeta`)."""
    meta = StateMeta(kind=state.kind, ttl=state.ttl)
    if state.types is not None:
        meta["types"] = state.types.to_json()
    return meta


def merged_meta(name: str, first: StateMeta | None, other: StateMeta) -> StateMeta:
    """The meta of state ``name`` restored from several snapshots (rescaling): ``first`` (so
    far; ``None``: none yet) and ``other`` must agree on kind and TTL setting, and on the
    declared types where both record them.

    >>> merged_meta("n", {"kind": "value", "ttl": False}, {"kind": "value", "ttl": False,
    ...     "types": {"format_version": 1, "value": None, "map_key": None}})["types"]["value"]
    >>> merged_meta("n", {"kind": "value", "ttl": False}, {"kind": "list", "ttl": False})
    Traceback (most recent call last):
    ...
    ValueError: state 'n' is {'kind': 'value', 'ttl': False} in one snapshot and \
{'kind': 'list', 'ttl': False} in another
    """
    if first is None:
        return other
    kinds = (first["kind"], first["ttl"]) == (other["kind"], other["ttl"])
    types_a, types_b = first.get("types"), other.get("types")
    if not kinds or (types_a is not None and types_b is not None and types_a != types_b):
        raise ValueError(f"state {name!r} is {first} in one snapshot and {other} in another")
    return first if types_b is None else other


def recorded_types(
    meta: Mapping[str, Mapping[str, object]],
    states: Mapping[str, TypedState],
    operator: str,
) -> dict[str, StateTypes | None]:
    """``{name: declared types}`` a snapshot's ``meta`` (checked by :func:`check_meta`)
    records (``None``: none recorded, e.g. a snapshot of an older sparktide); ValueError for a
    malformed record. A state of ``states`` (the backend's) registered already with other
    types raises :class:`~sparktide.runtime.state.state_types.IncompatibleStateTypeError`
    naming ``operator``."""
    out: dict[str, StateTypes | None] = {}
    for name, info in meta.items():
        raw = info.get("types")
        types = None if raw is None else StateTypes.from_json(raw, f"meta[{name!r}]['types']")
        state = states.get(name)
        if state is not None and types is not None and state.types is not None:
            if state.registered:
                described = state.describe()
                if check_state_types(operator, name, described, state.kind, types, state.types):
                    raise ValueError(
                        f"{operator}: state {name!r} ({described}) is registered already with "
                        f"types {state.types} and restored with {types}: its values would "
                        "need a migration, which runs as the state registers; restore the "
                        "snapshot before the state registers (before the operator opens)"
                    )
            elif state.types != types:
                raise ValueError(
                    f"state {name!r} is restored with other declared types than before "
                    f"({state.types} and {types}); restore each state from snapshots of one job"
                )
        out[name] = types
    return out


def entry_groups(
    per_key_group: object,
    kinds: Mapping[str, tuple[str, bool]],
    max_parallelism: int,
    start: int,
    end: int,
) -> Iterator[EntryGroup]:
    """The entry lists of ``per_key_group`` in the key groups ``[start, end]`` (others are
    skipped), each with its state's kind and TTL setting from ``kinds``; ValueError names the
    first malformed container or unknown state."""
    if not isinstance(per_key_group, Mapping):
        raise ValueError(
            f"per_key_group must be a dict {{key_group: {{state_name: [entries]}}}}, got "
            f"{type(per_key_group).__name__}"
        )
    for kg, by_name in per_key_group.items():
        if type(kg) is not int or not 0 <= kg < max_parallelism:
            raise ValueError(
                f"per_key_group has key group {kg!r}; key groups are ints in "
                f"[0, {max_parallelism - 1}] for max_parallelism="
                f"{max_parallelism} (was the snapshot taken with another one?)"
            )
        if not start <= kg <= end:
            continue
        if not isinstance(by_name, Mapping):
            raise ValueError(
                f"per_key_group[{kg}] must be a dict {{state_name: [entries]}}, got "
                f"{type(by_name).__name__}"
            )
        for name, entries in by_name.items():
            where = f"per_key_group[{kg}][{name!r}]"
            if name not in kinds:
                raise ValueError(
                    f"{where}: state {name!r} is missing from meta; pass the meta "
                    "of the same snapshot"
                )
            kind, ttl = kinds[name]
            if not isinstance(entries, (list, tuple)):
                raise ValueError(
                    f"{where} must be a list of (key, namespace, raw_value), got "
                    f"{type(entries).__name__}"
                )
            yield EntryGroup(kg, name, where, kind, ttl, entries)


def check_entry(
    entry: object,
    where: str,
    kg: int,
    kind: str,
    ttl: bool,
    max_parallelism: int,
    locate: Callable[[object, object], tuple[int, L]],
) -> tuple[object, object, object, L] | None:
    """``(key, namespace, raw_value, handle)`` of one snapshot entry, ``None`` for an empty
    value (nothing to restore); ValueError when it is malformed or its key is not in key group
    ``kg``. ``locate(key, namespace)`` gives the key group of the key and the backend's handle
    of the entry; a TypeError it raises means the key or namespace is not usable."""
    if not isinstance(entry, (tuple, list)) or len(entry) != 3:
        raise ValueError(f"{where} must be a (key, namespace, raw_value) triple, got {entry!r}")
    key, ns, raw = entry
    try:
        hash((key, ns))
        actual, handle = locate(key, ns)
    except TypeError as e:
        raise ValueError(f"{where}: key {key!r} / namespace {ns!r} is not usable: {e}") from None
    if actual != kg:
        raise ValueError(
            f"{where}: key {key!r} belongs to key group {actual}, not {kg}; the snapshot was "
            f"taken with another max_parallelism than {max_parallelism} or is corrupt"
        )
    raw = check_raw(kind, ttl, raw, where)
    return None if raw is None else (key, ns, raw, handle)


def checked_group(
    group: EntryGroup, groups: Callable[[list[object]], list[int]]
) -> dict[tuple[object, object], object] | None:
    """The entries of ``group`` by ``(key, namespace)``, raw values as to store (empty ones
    left out), when every entry is well formed, in the group's key group and there once;
    ``None`` otherwise, where the entry by entry checks (:func:`check_entry`) find and name
    what is wrong. ``groups(keys)``: the key groups of ``keys``, computed together
    (:func:`~sparktide.runtime.keygroups.assign_to_key_groups`): a restore checks the key
    group of every key at a fraction of the cost of one lookup each.

    >>> from functools import partial
    >>> from sparktide.runtime.keygroups import assign_to_key_groups
    >>> groups = partial(assign_to_key_groups, max_parallelism=128)
    >>> checked_group(EntryGroup(35, "n", "e", "value", False, [("hello", None, 1)]), groups)
    {('hello', None): 1}
    >>> checked_group(EntryGroup(3, "n", "e", "value", False, [("hello", None, 1)]), groups)
    """
    entries = group.entries
    if not all(type(e) is tuple and len(e) == 3 for e in entries):
        return None
    triples = cast("Sequence[tuple[object, object, object]]", entries)
    kg = group.key_group
    try:
        if any(g != kg for g in groups([e[0] for e in triples])):
            return None
        if group.kind == "value" and not group.ttl:  # raw values as they are, never None
            out = {(key, ns): raw for key, ns, raw in triples}
            empty = None in out.values()
        else:
            kind, ttl, where = group.kind, group.ttl, group.where
            out = {(key, ns): check_raw(kind, ttl, raw, where) for key, ns, raw in triples}
            empty = False
    except (TypeError, ValueError):  # a key not usable, a raw value that does not fit
        return None
    if empty or len(out) != len(triples):  # a None value; an entry there twice
        return None
    return {entry: raw for entry, raw in out.items() if raw is not None}


def duplicate_entry(where: str, name: str, key: object, ns: object) -> ValueError:
    """The error of a snapshot entry whose (state, key, namespace) is restored already."""
    return ValueError(
        f"{where}: state {name!r} already has an entry for key {key!r} and "
        f"namespace {ns!r}; restore each key group from one snapshot only"
    )


def full_snapshot_ttls(
    states: Mapping[str, RegisteredState], names: Sequence[str]
) -> dict[str, int]:
    """``{name: ttl_ms}`` of the states among ``names`` whose TTL config cleans up in full
    snapshots (their expired values are left out of a snapshot)."""
    purge: dict[str, int] = {}
    for n in names:
        cfg = states[n].ttl_config
        if cfg is not None and cfg.get_cleanup_strategies().in_full_snapshot():
            purge[n] = cfg.get_ttl().to_milliseconds()
    return purge
