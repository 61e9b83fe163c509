"""The declared types of one keyed operator's state as a checkpoint's metadata records them,
readable without running the job or opening a state file.

:class:`OperatorStateTypes` is one record per keyed operator (its name and uid): the key type
of its keyed stream and, per state name, the state's kind, TTL setting and declared types
(:class:`~sparktide.runtime.state.state_types.StateTypes`), in plain JSON with a format version
(:data:`RECORD_FORMAT_VERSION`), kept as that JSON until a type is needed (reading a manifest
builds no type information). Every subtask reports the record of its operator after a
checkpoint is taken; :meth:`OperatorStateTypes.merged` joins the subtasks' records (a state
registered by some subtasks only is recorded too). A restore reads the record before it runs
anything (:func:`check_recorded_key_types`); tools that read or rewrite a checkpoint's state
read the types of its values from it.

>>> from sparktide.common.typeinfo import Types
>>> from sparktide.core.state import ValueStateDescriptor
>>> from sparktide.runtime.state.state_types import StateTypes
>>> types = StateTypes.of(ValueStateDescriptor("total", Types.LONG())).to_json()
>>> record = OperatorStateTypes("Count", "count", versioned_type(Types.STRING()),
...     {"total": {"kind": "value", "ttl": False, "types": types}})
>>> OperatorStateTypes.from_json(record.to_json(), "commits/3.json") == record
True
>>> record.declared_key_type()
String
>>> check_recorded_key_types({"uid:count": record}, {"uid:count": Types.LONG()})
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.runtime.state.state_types.IncompatibleStateTypeError: operator 'Count' (uid 'count'): \
its keyed state cannot be restored: its key type was Types.STRING() in the checkpoint and is \
Types.LONG() now ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_json import TYPE_FORMAT_VERSION, type_from_versioned, versioned_type
from sparktide.runtime.state.heap import KINDS
from sparktide.runtime.state.snapshot_checks import StateMeta
from sparktide.runtime.state.state_types import check_key_type, describe_operator

__all__ = ["RECORD_FORMAT_VERSION", "OperatorStateTypes", "check_recorded_key_types"]

RECORD_FORMAT_VERSION = 1
"""The format of an :class:`OperatorStateTypes` record (a later form is told apart by it)."""


@dataclass(frozen=True)
class OperatorStateTypes:
    """The declared types of a keyed operator's state: its key type (as
    :func:`~sparktide.common.typeinfo_json.versioned_type` records it) and per state name its
    :class:`~sparktide.runtime.state.snapshot_checks.StateMeta` (kind, TTL setting and, where
    declared, ``types``: :meth:`~sparktide.runtime.state.state_types.StateTypes.to_json`)."""

    name: str
    uid: str | None
    key_type: Mapping[str, Any]
    states: Mapping[str, StateMeta]

    @classmethod
    def of(
        cls,
        name: str,
        uid: str | None,
        key_type: TypeInformation | None,
        states: Mapping[str, StateMeta],
    ) -> OperatorStateTypes:
        """The record of operator ``name`` keyed by ``key_type`` (``None``: undeclared)."""
        return cls(name, uid, versioned_type(key_type), states)

    def declared_key_type(self) -> TypeInformation | None:
        """The recorded key type (``None``: undeclared); ValueError for a malformed one."""
        return type_from_versioned(self.key_type, f"{self.describe()}: key_type")

    def describe(self) -> str:
        """How errors name the operator (``operator 'Count' (uid 'count')``)."""
        return describe_operator(self.name, self.uid)

    def merged(self, other: OperatorStateTypes) -> OperatorStateTypes:
        """This record with the states of ``other`` (another subtask's) it lacks."""
        if other.states.keys() <= self.states.keys():
            return self
        return OperatorStateTypes(
            self.name, self.uid, self.key_type, {**other.states, **self.states}
        )

    @staticmethod
    def join(records: Iterable[tuple[str, OperatorStateTypes]]) -> dict[str, OperatorStateTypes]:
        """Per operator identity, the :meth:`merged` records of its subtasks."""
        out: dict[str, OperatorStateTypes] = {}
        for identity, record in records:
            known = out.get(identity)
            out[identity] = record if known is None else known.merged(record)
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"format_version", "name", "uid", "key_type", "states"}`` (the key type as
        :func:`~sparktide.common.typeinfo_json.versioned_type` writes it)."""
        return {
            "format_version": RECORD_FORMAT_VERSION,
            "name": self.name,
            "uid": self.uid,
            "key_type": dict(self.key_type),
            "states": {name: dict(meta) for name, meta in sorted(self.states.items())},
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> OperatorStateTypes:
        """The record of :meth:`to_json`; ValueError naming ``where`` for another format
        version or a malformed record."""
        if (
            not isinstance(raw, dict)
            or raw.get("format_version") != RECORD_FORMAT_VERSION
            or not isinstance(raw.get("name"), str)
            or not (raw.get("uid") is None or isinstance(raw.get("uid"), str))
            or not isinstance(raw.get("states"), dict)
            or not isinstance(raw.get("key_type"), dict)
            or raw["key_type"].get("format_version") != TYPE_FORMAT_VERSION
        ):
            raise ValueError(
                f"{where}: the state types of an operator must be recorded as "
                f"{{'format_version': {RECORD_FORMAT_VERSION}, 'name': str, 'uid': str or null, "
                f"'key_type': ..., 'states': {{...}}}}, got {raw!r}; it was written by another "
                "version of sparktide or the metadata is corrupt"
            )
        states = {
            str(name): _state_meta(meta, f"{where}: state {name!r}")
            for name, meta in raw["states"].items()
        }
        return cls(raw["name"], raw["uid"], raw["key_type"], states)


def _state_meta(raw: object, where: str) -> StateMeta:
    types = raw.get("types") if isinstance(raw, dict) else None
    if (
        not isinstance(raw, dict)
        or raw.get("kind") not in KINDS
        or not isinstance(raw.get("ttl"), bool)
        or not (
            types is None
            or (isinstance(types, dict) and types.get("format_version") == TYPE_FORMAT_VERSION)
        )
    ):
        raise ValueError(
            f"{where}: must be {{'kind': one of {', '.join(KINDS)}, 'ttl': bool, 'types': ...}}, "
            f"got {raw!r}; the metadata is corrupt"
        )
    return cast(StateMeta, dict(raw))


def check_recorded_key_types(
    recorded: Mapping[str, OperatorStateTypes],
    declared: Mapping[str, TypeInformation | None],
) -> None:
    """Raise :class:`~sparktide.runtime.state.state_types.IncompatibleStateTypeError` for the
    first keyed operator whose ``recorded`` key type (per operator identity) is not the one
    this job ``declared`` for it (operators only one of them has are not checked). Runs once,
    before the job starts, from the checkpoint's metadata: no state file is read."""
    for identity, record in recorded.items():
        if identity in declared:
            check_key_type(record.describe(), record.declared_key_type(), declared[identity])
