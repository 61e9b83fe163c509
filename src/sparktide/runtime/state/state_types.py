"""The declared types of keyed state as a checkpoint records them, and whether state restored
from a checkpoint can be read with the types declared now.

Every backend records, per state, the types its descriptor declared (:class:`StateTypes`: the
value type, the element type of a list, the accumulator type of an aggregating state, and for
a map state its map-key type too) in plain JSON with a format version, and, for a keyed
operator, the key type of its keyed stream. When a restored state meets its descriptor (the
first registration after a restore), :func:`state_compatibility` compares the recorded types
with the declared ones, one part at a time through
:func:`~sparktide.runtime.state.type_compat.type_migration`: equal types are read as they are,
a compatible change (a wider number, a ``Row`` gaining fields) gives the converters the backend
applies once to the restored values (:meth:`Compatibility.raw_converter`), and anything else is
refused with :class:`IncompatibleStateTypeError` (the same error and message on every backend,
:func:`incompatible_state`), before the operator processes a record. A key type is never
migrated (:func:`type_compatibility`). A state recorded without types (a checkpoint of an
older sparktide) is restored as before, without a check.

>>> from sparktide.common.typeinfo import Types
>>> from sparktide.core.state import MapStateDescriptor
>>> old = StateTypes.of(MapStateDescriptor("m", Types.STRING(), Types.INT()))
>>> StateTypes.from_json(old.to_json(), "state 'm'") == old
True
>>> wider = StateTypes.of(MapStateDescriptor("m", Types.STRING(), Types.LONG()))
>>> state_compatibility("map", old, wider).compatibility
<TypeCompatibility.COMPATIBLE_AFTER_MIGRATION: 'compatible_after_migration'>
>>> new = StateTypes.of(MapStateDescriptor("m", Types.STRING(), Types.STRING()))
>>> result = state_compatibility("map", old, new)
>>> result.compatibility, [c.part for c in result.changes]
(<TypeCompatibility.INCOMPATIBLE: 'incompatible'>, ['value'])
>>> print(incompatible_state("operator 'Count'", "m", "map state", result))  # doctest: +ELLIPSIS
operator 'Count': state 'm' (map state) cannot be restored: its value type was Types.INT() \
in the checkpoint and is Types.STRING() now; ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import PickledBytesTypeInfo
from sparktide.common.typeinfo_json import (
    TYPE_FORMAT_VERSION,
    declaration,
    type_from_json,
    type_to_json,
)
from sparktide.core.state import MapStateDescriptor, StateDescriptor
from sparktide.runtime.state.type_compat import (
    Convert,
    TypeCompatibility,
    field_names,
    raw_migration,
    same_type,
    type_migration,
)

__all__ = [
    "Compatibility",
    "IncompatibleStateTypeError",
    "StateTypes",
    "TypeChange",
    "TypeCompatibility",
    "check_key_type",
    "check_state_types",
    "declared_or_none",
    "describe_declared",
    "describe_operator",
    "incompatible_key_type",
    "incompatible_state",
    "state_compatibility",
    "type_compatibility",
]


class IncompatibleStateTypeError(ValueError):
    """State (or keys) restored from a checkpoint cannot be read with the types declared now;
    the message names the operator, the state, both types and what to do."""


def declared_or_none(type_info: object) -> TypeInformation | None:
    """The declared type of a descriptor's type information: ``None`` for none, for
    ``Types.PICKLED_BYTE_ARRAY()`` and for anything that is not type information (values are
    then pickled, as undeclared ones are).

    >>> from sparktide.common.typeinfo import Types
    >>> declared_or_none(Types.INT()), declared_or_none(Types.PICKLED_BYTE_ARRAY())
    (Integer, None)
    """
    if isinstance(type_info, TypeInformation) and not isinstance(type_info, PickledBytesTypeInfo):
        return type_info
    return None


def describe_declared(type_info: TypeInformation | None) -> str:
    """A declared type as a user writes it, for messages.

    >>> describe_declared(None)
    'undeclared (pickled)'
    """
    return "undeclared (pickled)" if type_info is None else declaration(type_info)


def describe_operator(name: str, uid: str | None) -> str:
    """How an error names a keyed operator: its name, and its uid when it has one.

    >>> describe_operator("Count", "count-1"), describe_operator("Count", None)
    ("operator 'Count' (uid 'count-1')", "operator 'Count'")
    """
    return f"operator {name!r}" if uid is None else f"operator {name!r} (uid {uid!r})"


def type_compatibility(
    restored: TypeInformation | None, declared: TypeInformation | None
) -> TypeCompatibility:
    """Whether keys written with the declared key type ``restored`` (``None``: undeclared,
    pickled) can be read with ``declared``: as they are when the types are equal, else not
    (a key type never migrates: the stored keys and timers are laid out by it; state values
    migrate, :func:`state_compatibility`). Rows are equal with the same field names too (a
    key's fields are read by name).

    >>> from sparktide.common.typeinfo import Types
    >>> a = Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.INT()])
    >>> b = Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()])
    >>> type_compatibility(a, a).value, type_compatibility(a, b).value
    ('compatible_as_is', 'incompatible')
    >>> type_compatibility(Types.ROW([Types.INT()]), Types.ROW_NAMED(["f0"], [Types.INT()])).value
    'compatible_as_is'
    """
    if restored == declared and field_names(restored) == field_names(declared):
        return TypeCompatibility.COMPATIBLE_AS_IS
    return TypeCompatibility.INCOMPATIBLE


@dataclass(frozen=True)
class TypeChange:
    """One declared type of a state (or the key type) that differs from the checkpoint's."""

    part: str
    """Which type: ``"value"``, ``"element"``, ``"accumulator"``, ``"map key"`` or ``"key"``."""
    restored: TypeInformation | None
    declared: TypeInformation | None
    compatibility: TypeCompatibility
    reason: str | None = None
    """Why the change is incompatible, where a rule says more than the two types."""


@dataclass(frozen=True)
class Compatibility:
    """The compatibility of a restored state with its descriptor: the least compatible of
    its parts, and every part that is not compatible as is."""

    compatibility: TypeCompatibility
    changes: tuple[TypeChange, ...] = ()
    value: Convert | None = None
    """Converts a restored value (list element, accumulator) after a migration (``None``:
    the Python values stay as they are)."""
    map_key: Convert | None = None
    """Converts a restored map key after a migration (``None``: as it is)."""

    def raw_converter(self, kind: str, ttl: bool) -> Convert | None:
        """Converts one raw value of a state of ``kind`` as a backend keeps it (``None``:
        nothing to convert; :func:`~sparktide.runtime.state.type_compat.raw_migration`)."""
        return raw_migration(kind, ttl, self.value, self.map_key)


_VALUE_PART: Mapping[str, str] = MappingProxyType({"list": "element", "aggregating": "accumulator"})


@dataclass(frozen=True)
class StateTypes:
    """The declared types of one state's user values (``None``: undeclared, pickled):
    ``value`` (a list's elements, an aggregating state's accumulator) and, for a map state,
    ``map_key``."""

    value: TypeInformation | None
    map_key: TypeInformation | None = None

    @classmethod
    def of(cls, descriptor: StateDescriptor) -> StateTypes:
        """The types ``descriptor`` declares."""
        if isinstance(descriptor, MapStateDescriptor):
            return cls(
                declared_or_none(descriptor.value_type_info),
                declared_or_none(descriptor.key_type_info),
            )
        return cls(declared_or_none(descriptor.type_info))

    def parts(self, kind: str) -> list[tuple[str, TypeInformation | None]]:
        """``(part, type)`` of each declared type of a state of ``kind``."""
        value = (_VALUE_PART.get(kind, "value"), self.value)
        return [("map key", self.map_key), value] if kind == "map" else [value]

    def to_json(self) -> dict[str, Any]:
        """The JSON record: ``{"format_version", "value", "map_key"}`` (types in the form of
        :mod:`sparktide.common.typeinfo_json`, ``None`` when undeclared)."""
        return {
            "format_version": TYPE_FORMAT_VERSION,
            "value": None if self.value is None else type_to_json(self.value),
            "map_key": None if self.map_key is None else type_to_json(self.map_key),
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> StateTypes:
        """The types of a :meth:`to_json` record; ValueError naming ``where`` for a record of
        another format version or a malformed one."""
        if (
            not isinstance(raw, dict)
            or raw.get("format_version") != TYPE_FORMAT_VERSION
            or not {"value", "map_key"} <= raw.keys()
        ):
            raise ValueError(
                f"{where}: the declared types must be recorded as {{'format_version': "
                f"{TYPE_FORMAT_VERSION}, 'value': ..., 'map_key': ...}}, got {raw!r}; they were "
                "written by another version of sparktide or the metadata is corrupt"
            )
        value, map_key = raw["value"], raw["map_key"]
        return cls(
            None if value is None else type_from_json(value, where),
            None if map_key is None else type_from_json(map_key, where),
        )


def state_compatibility(kind: str, restored: StateTypes, declared: StateTypes) -> Compatibility:
    """The compatibility of a state of ``kind`` recorded with ``restored`` types with a
    descriptor declaring ``declared``, part by part (:func:`type_compatibility`)."""
    changes = []
    converts: dict[str, Convert | None] = {}
    worst = TypeCompatibility.COMPATIBLE_AS_IS
    for (part, old), (_, new) in zip(restored.parts(kind), declared.parts(kind), strict=True):
        m = type_migration(old, new)
        converts[part] = m.convert
        if m.compatibility is not TypeCompatibility.COMPATIBLE_AS_IS:
            changes.append(TypeChange(part, old, new, m.compatibility, m.reason))
            if worst is not TypeCompatibility.INCOMPATIBLE:
                worst = m.compatibility
    value = converts.get(_VALUE_PART.get(kind, "value"))
    return Compatibility(worst, tuple(changes), value, converts.get("map key"))


def _changed(changes: tuple[TypeChange, ...]) -> str:
    return "; ".join(
        f"its {c.part} type was {describe_declared(c.restored)} in the checkpoint and is "
        f"{describe_declared(c.declared)} now" + ("" if c.reason is None else f" ({c.reason})")
        for c in changes
        if c.compatibility is TypeCompatibility.INCOMPATIBLE
    )


def incompatible_state(
    operator: str, name: str, described: str, result: Compatibility
) -> IncompatibleStateTypeError:
    """The error of state ``name`` (a ``described`` state, e.g. ``"value state"``) of
    ``operator`` (:func:`describe_operator`) whose restored types are not compatible as is
    with its descriptor's."""
    old = ", ".join(f"{c.part}: {describe_declared(c.restored)}" for c in result.changes)
    return IncompatibleStateTypeError(
        f"{operator}: state {name!r} ({described}) cannot be restored: {_changed(result.changes)}; "
        "this change of a state's type is not migrated (a wider number or a Row gaining "
        "fields are: see docs/state_evolution.md). Declare the state with its old types again "
        f"({old}), or migrate the state by hand (read its values from the checkpoint, convert "
        "them and write them as a new state), or give the state a new name to start it empty "
        "(its old values are dropped), or start the job from a new checkpoint location"
    )


def incompatible_key_type(
    operator: str, restored: TypeInformation | None, declared: TypeInformation | None
) -> IncompatibleStateTypeError:
    """The error of a keyed ``operator`` whose checkpoint recorded keys of type ``restored``
    while its keyed stream now declares ``declared`` (``key_by(..., key_type=...)``)."""
    change = TypeChange("key", restored, declared, type_compatibility(restored, declared))
    again = (
        "key_by(...) without a key_type"
        if restored is None
        else f"key_by(..., key_type={declaration(restored)})"
    )
    return IncompatibleStateTypeError(
        f"{operator}: its keyed state cannot be restored: {_changed((change,))} (the key_type "
        "of key_by); the keys in the checkpoint cannot be read with another type. Use "
        f"{again} again, or give the operator a new uid to start its state empty, or start "
        "the job from a new checkpoint location"
    )


def check_state_types(
    operator: str,
    name: str,
    described: str,
    kind: str,
    restored: StateTypes | None,
    declared: StateTypes,
) -> Compatibility | None:
    """The migration of state ``name`` restored with the recorded types ``restored`` to
    ``declared`` (``None``: the same types, or none recorded: nothing to check or convert);
    raise :func:`incompatible_state` when its values cannot be read as ``declared``."""
    if restored is None or (
        same_type(restored.value, declared.value) and same_type(restored.map_key, declared.map_key)
    ):
        return None
    result = state_compatibility(kind, restored, declared)
    if result.compatibility is TypeCompatibility.INCOMPATIBLE:
        raise incompatible_state(operator, name, described, result)
    return result


def check_key_type(
    operator: str, restored: TypeInformation | None, declared: TypeInformation | None
) -> None:
    """Raise :func:`incompatible_key_type` when keys recorded as ``restored`` cannot be read
    as ``declared`` (both as :func:`declared_or_none` gives them)."""
    if type_compatibility(restored, declared) is not TypeCompatibility.COMPATIBLE_AS_IS:
        raise incompatible_key_type(operator, restored, declared)
