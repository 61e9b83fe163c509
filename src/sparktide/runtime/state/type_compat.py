"""Which changes of a state's declared type a restore accepts, and how restored values are
converted to the new type (state schema evolution).

:func:`type_migration` compares the type a checkpoint recorded for a state (its value, list
element, accumulator or map key) with the type the job declares now, as Flink's
``TypeSerializerSchemaCompatibility`` does, with three outcomes:

- compatible as is: the same type; restored values are read as they are;
- compatible after migration: every restored value is converted once, at restore
  (:attr:`TypeMigration.convert`; ``None`` when the Python values stay as they are and only
  the stored bytes of a RocksDB state change);
- incompatible: refused, with the reason (:attr:`TypeMigration.reason`).

The changes migrated (anything else is incompatible):

- a wider number: ``BYTE`` -> ``SHORT`` -> ``INT`` -> ``LONG`` (any step up), ``FLOAT`` ->
  ``DOUBLE``;
- a ``Row`` that gains fields (every field may be ``None``; a new field is ``None`` in
  restored rows): fields are matched by name (``f0``, ``f1``, ... for an unnamed row), so
  fields may also be reordered; a field may not be removed;
- any of these changes inside a ``Row`` or ``TUPLE`` field, a ``LIST`` or array element, or a
  ``MAP``'s keys or values (a ``TUPLE`` keeps its arity: its fields are never ``None``).

>>> from sparktide.common.typeinfo import Types
>>> type_migration(Types.INT(), Types.LONG()).compatibility.value
'compatible_after_migration'
>>> old = Types.ROW_NAMED(["id", "n"], [Types.STRING(), Types.INT()])
>>> new = Types.ROW_NAMED(["id", "n", "note"], [Types.STRING(), Types.LONG(), Types.STRING()])
>>> m = type_migration(old, new)
>>> m.compatibility.value, m.convert(old.coerce(("a", 3)))
('compatible_after_migration', Row(id='a', n=3, note=None))
>>> print(type_migration(new, old).reason)
field 'note' of Types.ROW_NAMED(['id', 'n', 'note'], [Types.STRING(), Types.LONG(), \
Types.STRING()]) is removed
>>> type_migration(Types.LONG(), Types.INT()).compatibility.value
'incompatible'
>>> print(type_migration(Types.LIST(old), Types.LIST(Types.ROW_NAMED(["id", "n"],
...     [Types.STRING(), Types.SHORT()]))).reason)
element: field 'n': Types.INT() -> Types.SHORT()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo
from sparktide.common.typeinfo_composite import (
    MapTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    _ElementsTypeInfo,
)
from sparktide.common.typeinfo_json import declaration, type_to_json
from sparktide.common.types import Row, row_field_names, row_values

__all__ = [
    "Convert",
    "TypeCompatibility",
    "TypeMigration",
    "field_names",
    "raw_migration",
    "same_type",
    "type_migration",
]

Convert = Callable[[Any], Any]
"""Converts one restored value (never ``None``: a ``None`` inside a value stays ``None``)."""


class TypeCompatibility(Enum):
    """Whether values written with one declared type can be read with another."""

    COMPATIBLE_AS_IS = "compatible_as_is"
    """The same type: restored values are read as they are."""
    COMPATIBLE_AFTER_MIGRATION = "compatible_after_migration"
    """Readable once every restored value is converted (:func:`type_migration`)."""
    INCOMPATIBLE = "incompatible"
    """Not readable with the new type."""


@dataclass(frozen=True)
class TypeMigration:
    """How values of one declared type become values of another."""

    compatibility: TypeCompatibility
    convert: Convert | None = None
    """Converts a restored value (``None``: the Python value stays as it is)."""
    reason: str | None = None
    """Why the change is incompatible, where more than the two types tell it (a field of a
    row removed or changed, ...; ``None`` otherwise)."""


AS_IS = TypeMigration(TypeCompatibility.COMPATIBLE_AS_IS)
_SAME_VALUES = TypeMigration(TypeCompatibility.COMPATIBLE_AFTER_MIGRATION)

_WIDER: MappingProxyType[BasicType, frozenset[BasicType]] = MappingProxyType(
    {
        BasicType.BYTE: frozenset({BasicType.SHORT, BasicType.INT, BasicType.LONG}),
        BasicType.SHORT: frozenset({BasicType.INT, BasicType.LONG}),
        BasicType.INT: frozenset({BasicType.LONG}),
        BasicType.FLOAT: frozenset({BasicType.DOUBLE}),
    }
)


_REFUSED = TypeMigration(TypeCompatibility.INCOMPATIBLE)


def _refused(reason: str) -> TypeMigration:
    return TypeMigration(TypeCompatibility.INCOMPATIBLE, reason=reason)


def same_type(restored: TypeInformation | None, declared: TypeInformation | None) -> bool:
    """Whether two declared types are the same, field names of rows included (type
    information compares rows by their field types only).

    >>> from sparktide.common.typeinfo import Types
    >>> a = Types.ROW_NAMED(["x", "y"], [Types.INT(), Types.INT()])
    >>> b = Types.ROW_NAMED(["y", "x"], [Types.INT(), Types.INT()])
    >>> a == b, same_type(a, b), same_type(a, a)
    (True, False, True)
    """
    if restored != declared:
        return False
    return restored is None or declared is None or type_to_json(restored) == type_to_json(declared)


def field_names(type_info: TypeInformation | None) -> tuple[object, ...]:
    """The field names of the rows in ``type_info`` (``f0``, ``f1``, ... for an unnamed row),
    nested rows and tuples of rows included, which type information leaves out when it
    compares rows (two rows of the same field types are equal).

    >>> from sparktide.common.typeinfo import Types
    >>> field_names(Types.TUPLE([Types.ROW_NAMED(["a"], [Types.INT()]), Types.LONG()]))
    ((('a',), ((),)), ())
    """
    if isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        nested = tuple(field_names(t) for t in type_info.get_field_types())
        if isinstance(type_info, RowTypeInfo):
            return (tuple(type_info.get_field_names()), nested)
        return nested
    return ()


def _describe(type_info: TypeInformation | None) -> str:
    return "undeclared (pickled)" if type_info is None else declaration(type_info)


def type_migration(
    restored: TypeInformation | None, declared: TypeInformation | None
) -> TypeMigration:
    """How values recorded with the declared type ``restored`` (``None``: undeclared, pickled)
    are read with ``declared``: as they are, after a migration, or not at all."""
    if same_type(restored, declared):
        return AS_IS
    if restored is None or declared is None:
        return _REFUSED
    if type(restored) is BasicTypeInfo and type(declared) is BasicTypeInfo:
        if declared.basic_type in _WIDER.get(restored.basic_type, frozenset()):
            return _SAME_VALUES  # a Python int (float) holds both: only stored bytes change
        return _REFUSED
    if isinstance(restored, RowTypeInfo) and isinstance(declared, RowTypeInfo):
        return _row_migration(restored, declared)
    if type(restored) is TupleTypeInfo and type(declared) is TupleTypeInfo:
        return _tuple_migration(restored, declared)
    if isinstance(restored, _ElementsTypeInfo) and type(restored) is type(declared):
        return _elements_migration(restored, declared)
    if isinstance(restored, MapTypeInfo) and isinstance(declared, MapTypeInfo):
        return _map_migration(restored, declared)
    return _REFUSED


def _fields(
    pairs: Sequence[tuple[str, TypeInformation | None, TypeInformation | None]],
) -> list[Convert | None] | TypeMigration:
    """The converter of each field ``(label, restored, declared)`` (``None``: as it is), or
    the refusal of the first incompatible one."""
    converts: list[Convert | None] = []
    for label, old, new in pairs:
        m = AS_IS if old is None and new is None else type_migration(old, new)
        if m.compatibility is TypeCompatibility.INCOMPATIBLE:
            why = f"{_describe(old)} -> {_describe(new)}" if m.reason is None else m.reason
            return _refused(f"{label}: {why}")
        converts.append(m.convert)
    return converts


def _nullable(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda v: None if v is None else convert(v)


def _row_migration(restored: RowTypeInfo, declared: RowTypeInfo) -> TypeMigration:
    old_names, new_names = restored.get_field_names(), declared.get_field_names()
    removed = [n for n in old_names if n not in new_names]
    if removed:
        return _refused(f"field {removed[0]!r} of {_describe(restored)} is removed")
    old_types = dict(zip(old_names, restored.get_field_types(), strict=True))
    pairs = [
        (f"field {n!r}", old_types.get(n, t), t)
        for n, t in zip(new_names, declared.get_field_types(), strict=True)
    ]
    converts = _fields(pairs)
    if isinstance(converts, TypeMigration):
        return converts
    sources = [old_names.index(n) if n in old_types else None for n in new_names]
    steps = tuple(zip(sources, [_nullable(c) for c in converts], strict=True))

    def convert(value: Any) -> Row:
        kind = value.get_row_kind() if isinstance(value, Row) else None
        if isinstance(value, Row) and row_field_names(value) is not None:
            by_name = dict(zip(row_field_names(value) or (), row_values(value), strict=True))
            values = [by_name.get(old_names[i]) if i is not None else None for i, _ in steps]
        else:  # a tuple or an unnamed row: by position
            values = [value[i] if i is not None else None for i, _ in steps]
        out = [v if c is None else c(v) for v, (_, c) in zip(values, steps, strict=True)]
        return Row.of_values(out, new_names, kind)

    return TypeMigration(TypeCompatibility.COMPATIBLE_AFTER_MIGRATION, convert)


def _tuple_migration(restored: TupleTypeInfo, declared: TupleTypeInfo) -> TypeMigration:
    old, new = restored.get_field_types(), declared.get_field_types()
    if len(old) != len(new):
        return _refused(f"a tuple's arity changes from {len(old)} to {len(new)}")
    converts = _fields(
        [(f"field {i}", o, n) for i, (o, n) in enumerate(zip(old, new, strict=True))]
    )
    if isinstance(converts, TypeMigration):
        return converts
    if all(c is None for c in converts):
        return _SAME_VALUES
    steps = tuple(_nullable(c) for c in converts)

    def convert(value: Any) -> tuple[Any, ...]:
        return tuple(v if c is None else c(v) for v, c in zip(value, steps, strict=True))

    return TypeMigration(TypeCompatibility.COMPATIBLE_AFTER_MIGRATION, convert)


def _elements_migration(restored: _ElementsTypeInfo, declared: _ElementsTypeInfo) -> TypeMigration:
    converts = _fields([("element", restored.element_type, declared.element_type)])
    if isinstance(converts, TypeMigration):
        return converts
    (element,) = converts
    if element is None:
        return _SAME_VALUES
    each = _nullable(element) or _same

    def convert(value: Any) -> list[Any]:
        return [each(v) for v in value]

    return TypeMigration(TypeCompatibility.COMPATIBLE_AFTER_MIGRATION, convert)


def _map_migration(restored: MapTypeInfo, declared: MapTypeInfo) -> TypeMigration:
    converts = _fields(
        [
            ("map key", restored.key_type_info, declared.key_type_info),
            ("map value", restored.value_type_info, declared.value_type_info),
        ]
    )
    if isinstance(converts, TypeMigration):
        return converts
    key, value = converts
    if key is None and value is None:
        return _SAME_VALUES
    k, v = _nullable(key) or _same, _nullable(value) or _same

    def convert(mapping: Any) -> dict[Any, Any]:
        return {k(a): v(b) for a, b in mapping.items()}

    return TypeMigration(TypeCompatibility.COMPATIBLE_AFTER_MIGRATION, convert)


def _same(value: Any) -> Any:
    return value


def _opt(convert: Convert, value: Any) -> Any:
    """``convert(value)``, or ``None`` for ``None`` (a map state may hold ``None`` values)."""
    return None if value is None else convert(value)


def raw_migration(
    kind: str, ttl: bool, value: Convert | None, map_key: Convert | None = None
) -> Convert | None:
    """Converts one raw value of a state of ``kind`` as the backends keep it (a value, a list
    of elements, a dict of map values; with TTL each value as a ``(value, timestamp)`` pair)
    with the converters of its value (element, accumulator) and map key; ``None`` when both
    are ``None`` (nothing to convert).

    >>> raw_migration("list", True, lambda v: v * 10)([(1, 5), (2, 6)])
    [(10, 5), (20, 6)]
    >>> raw_migration("map", False, None, str)({1: "a"})
    {'1': 'a'}
    """
    if value is None and map_key is None:
        return None
    one = value or _same
    single = (lambda p: (one(p[0]), p[1])) if ttl else one
    if kind == "list":
        return lambda raw: [single(e) for e in raw]
    if kind == "map":
        key = map_key or _same
        if ttl:
            return lambda raw: {key(a): (_opt(one, b[0]), b[1]) for a, b in raw.items()}
        return lambda raw: {key(a): _opt(one, b) for a, b in raw.items()}
    return single
