"""Declared types as plain data: the JSON form of a :class:`TypeInformation`, and back.

Metadata that names a declared type (the types of a state in a checkpoint, the key type of a
keyed stream) records it in this form, never pickled, so it can be read without running code.
A type is a JSON object whose ``"type"`` is the name of its ``Types`` factory, with the
arguments of that factory beside it::

    {"type": "INT"}                       Types.INT() (every basic, date and time type alike)
    {"type": "TUPLE", "fields": [...]}    Types.TUPLE([...])
    {"type": "ROW", "fields": [...]}      Types.ROW([...])
    {"type": "ROW_NAMED", "names": [...], "fields": [...]}
    {"type": "LIST", "element": {...}}    LIST, PRIMITIVE_ARRAY, BASIC_ARRAY, OBJECT_ARRAY
    {"type": "MAP", "key": {...}, "value": {...}}
    {"type": "PICKLED_BYTE_ARRAY"}

A record holding such types carries :data:`TYPE_FORMAT_VERSION` beside them (see
:func:`versioned_type`), so a later form can be told apart and read or refused.

>>> from sparktide.common.typeinfo import Types
>>> t = Types.MAP(Types.STRING(), Types.TUPLE([Types.INT(), Types.LOCAL_DATE()]))
>>> type_to_json(t)  # doctest: +NORMALIZE_WHITESPACE
{'type': 'MAP', 'key': {'type': 'STRING'},
 'value': {'type': 'TUPLE', 'fields': [{'type': 'INT'}, {'type': 'LOCAL_DATE'}]}}
>>> type_from_json(type_to_json(t)) == t
True
>>> declaration(t)
'Types.MAP(Types.STRING(), Types.TUPLE([Types.INT(), Types.LOCAL_DATE()]))'
>>> type_from_json({"type": "BLOB"}, "state 'n'")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: state 'n': unknown declared type {'type': 'BLOB'}; ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import (
    BasicType,
    BasicTypeInfo,
    InstantTypeInfo,
    PickledBytesTypeInfo,
)
from sparktide.common.typeinfo_composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    _ElementsTypeInfo,
)
from sparktide.common.typeinfo_temporal import (
    DateTypeInfo,
    LocalTimeTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)

__all__ = [
    "TYPE_FORMAT_VERSION",
    "TypeJson",
    "declaration",
    "type_from_json",
    "type_from_versioned",
    "type_to_json",
    "versioned_type",
]

TYPE_FORMAT_VERSION = 1
"""The version of the JSON form of declared types written by this sparktide."""

TypeJson = dict[str, Any]
"""The JSON form of one declared type (see the module docstring)."""

_ELEMENTS: dict[str, type[_ElementsTypeInfo]] = {
    "LIST": ListTypeInfo,
    "PRIMITIVE_ARRAY": PrimitiveArrayTypeInfo,
    "BASIC_ARRAY": BasicArrayTypeInfo,
    "OBJECT_ARRAY": ObjectArrayTypeInfo,
}
_ELEMENT_NAMES: dict[type[TypeInformation], str] = {cls: name for name, cls in _ELEMENTS.items()}


def _simple_types() -> dict[str, Callable[[], TypeInformation]]:
    """The types without arguments, by ``Types`` name: the basic, date and time types."""
    out: dict[str, Callable[[], TypeInformation]] = {
        "PICKLED_BYTE_ARRAY": PickledBytesTypeInfo,
        "SQL_DATE": DateTypeInfo,
        "SQL_TIME": TimeTypeInfo,
        "SQL_TIMESTAMP": TimestampTypeInfo,
        "INSTANT": InstantTypeInfo,
    }
    for basic in BasicType:
        if basic is not BasicType.INSTANT:
            out[basic.name] = partial(BasicTypeInfo, basic)
    for local in LocalTimeTypeInfo.TimeType:
        out[local.name] = partial(LocalTimeTypeInfo, local)
    return out


_SIMPLE = _simple_types()
_DESCRIBED: frozenset[type] = frozenset(
    {TupleTypeInfo, RowTypeInfo, MapTypeInfo, *_ELEMENTS.values()}
    | {type(make()) for make in _SIMPLE.values()}
)
"""The classes a JSON form describes: exactly those ``Types`` builds."""


def declaration(type_info: TypeInformation) -> str:
    """How ``type_info`` is written with ``Types`` (``"Types.INT()"``), for messages."""
    return type_info._decl()


def type_to_json(type_info: TypeInformation) -> TypeJson:
    """The JSON form of ``type_info``; TypeError for anything that is not a declared type."""
    kind = type(type_info)
    if kind not in _DESCRIBED:  # a subclass of a Types class may read values otherwise
        raise _not_described(type_info)
    if isinstance(type_info, TupleTypeInfo):
        return {"type": "TUPLE", "fields": [type_to_json(t) for t in type_info.get_field_types()]}
    if isinstance(type_info, RowTypeInfo):
        fields = [type_to_json(t) for t in type_info.get_field_types()]
        names = type_info._args()[1]  # None: unnamed (fields f0, f1, ...)
        if names is None:
            return {"type": "ROW", "fields": fields}
        return {"type": "ROW_NAMED", "names": list(names), "fields": fields}
    element_name = _ELEMENT_NAMES.get(kind)
    if element_name is not None:
        element = cast(_ElementsTypeInfo, type_info).element_type
        return {"type": element_name, "element": type_to_json(element)}
    if isinstance(type_info, MapTypeInfo):
        return {
            "type": "MAP",
            "key": type_to_json(type_info.key_type_info),
            "value": type_to_json(type_info.value_type_info),
        }
    name = type_info._decl().removeprefix("Types.").removesuffix("()")
    if name in _SIMPLE and _SIMPLE[name]() == type_info:
        return {"type": name}
    raise _not_described(type_info)


def _not_described(type_info: object) -> TypeError:
    return TypeError(
        f"cannot describe {type_info!r} ({type(type_info).__name__}) as a declared type; "
        "declare types with Types (e.g. Types.INT())"
    )


def type_from_json(raw: object, where: str = "type") -> TypeInformation:
    """The declared type whose JSON form is ``raw``; ValueError naming ``where`` when it is
    not one this sparktide knows."""
    try:
        return _from_json(raw)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(
            f"{where}: unknown declared type {raw!r}; it was written by another version of "
            "sparktide or the metadata is corrupt"
        ) from None


def _from_json(raw: object) -> TypeInformation:
    if not isinstance(raw, Mapping):
        raise TypeError(raw)
    name = raw["type"]
    if name in _SIMPLE and len(raw) == 1:
        return _SIMPLE[name]()
    if name in _ELEMENTS:
        return _ELEMENTS[name](_from_json(raw["element"]))
    if name == "MAP":
        return MapTypeInfo(_from_json(raw["key"]), _from_json(raw["value"]))
    if name in ("TUPLE", "ROW", "ROW_NAMED"):
        fields = [_from_json(f) for f in _list(raw["fields"])]
        if name == "TUPLE":
            return TupleTypeInfo(fields)
        return RowTypeInfo(fields, _list(raw["names"]) if name == "ROW_NAMED" else None)
    raise ValueError(name)


def _list(raw: object) -> list[Any]:
    if not isinstance(raw, list):
        raise TypeError(raw)
    return raw


def versioned_type(type_info: TypeInformation | None) -> TypeJson:
    """``{"format_version": ..., "type": <JSON form or None>}``: a declared type (``None``:
    undeclared) as a record of its own, e.g. the key type of a keyed stream.

    >>> from sparktide.common.typeinfo import Types
    >>> versioned_type(Types.LONG())
    {'format_version': 1, 'type': {'type': 'LONG'}}
    >>> type_from_versioned(versioned_type(None), "key type") is None
    True
    """
    spec = None if type_info is None else type_to_json(type_info)
    return {"format_version": TYPE_FORMAT_VERSION, "type": spec}


def type_from_versioned(raw: object, where: str) -> TypeInformation | None:
    """The declared type of a :func:`versioned_type` record (``None``: undeclared);
    ValueError naming ``where`` for another format version or a malformed record."""
    version = raw.get("format_version") if isinstance(raw, Mapping) else None
    if version != TYPE_FORMAT_VERSION or not isinstance(raw, Mapping) or "type" not in raw:
        raise ValueError(
            f"{where}: a declared type must be recorded as {{'format_version': "
            f"{TYPE_FORMAT_VERSION}, 'type': ...}}, got {raw!r}; it was written by another "
            "version of sparktide or the metadata is corrupt"
        )
    spec = raw["type"]
    return None if spec is None else type_from_json(spec, where)
