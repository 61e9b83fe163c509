"""Type information as plain JSON: what a checkpoint records of a declared type (a RocksDB
state file's key type) without a pickle.

:func:`type_info_to_json` describes a :class:`~sparktide.common.typeinfo_base.TypeInformation`
built by a ``Types.*`` factory (every one of them: basic, temporal, pickled, tuples, rows
named or not, arrays, lists and maps, nested) as ``{"format_version": 1, "type": ...}``, each
type ``{"class": <name>, "args": [...]}`` with its constructor arguments (nested types, enum
members by name, field names); :func:`type_info_from_json` builds it back from a fixed table of
classes, validating every field: reading a description never imports or runs anything else.

>>> from sparktide.common.typeinfo import Types
>>> t = Types.ROW_NAMED(["id", "tags"], [Types.LONG(), Types.LIST(Types.STRING())])
>>> type_info_to_json(t)["type"]["class"]
'RowTypeInfo'
>>> type_info_from_json(type_info_to_json(t), "f") == t
True
>>> type_info_from_json({"format_version": 1, "type": {"class": "os.system", "args": []}}, "f")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: f: 'os.system' is not a type information class sparktide describes (...); ...
"""

from __future__ import annotations

from enum import Enum
from typing import Any

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
)
from sparktide.common.typeinfo_temporal import (
    DateTypeInfo,
    LocalTimeTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)

__all__ = ["TYPE_INFO_JSON_VERSION", "type_info_from_json", "type_info_to_json"]

TYPE_INFO_JSON_VERSION = 1
"""The format version of a type description (another version is refused)."""

_CLASSES: dict[str, type[TypeInformation]] = {
    c.__name__: c
    for c in (
        BasicTypeInfo,
        InstantTypeInfo,
        PickledBytesTypeInfo,
        TupleTypeInfo,
        RowTypeInfo,
        PrimitiveArrayTypeInfo,
        BasicArrayTypeInfo,
        ObjectArrayTypeInfo,
        ListTypeInfo,
        MapTypeInfo,
        DateTypeInfo,
        TimeTypeInfo,
        TimestampTypeInfo,
        LocalTimeTypeInfo,
    )
}
_ENUMS: dict[str, type[Enum]] = {"BasicType": BasicType, "TimeType": LocalTimeTypeInfo.TimeType}
_FIX = (
    "the checkpoint is corrupt or was not written by this sparktide: restore the directory "
    "from a backup or start from an empty one"
)


def type_info_to_json(type_info: TypeInformation) -> dict[str, Any]:
    """The JSON description of ``type_info`` (a TypeError for a type no ``Types.*`` factory
    builds, e.g. a subclass of one)."""
    return {"format_version": TYPE_INFO_JSON_VERSION, "type": _describe(type_info)}


def _describe(type_info: TypeInformation) -> dict[str, Any]:
    cls = type(type_info)
    if _CLASSES.get(cls.__name__) is not cls:
        raise TypeError(
            f"the type information {type_info!r} ({cls.__module__}.{cls.__qualname__}) cannot "
            "be recorded in a checkpoint as data; declare the key type with a Types.* factory "
            "(e.g. Types.STRING(), Types.TUPLE([...]), Types.ROW_NAMED([...], [...]))"
        )
    args = type_info.__reduce__()[1]
    return {"class": cls.__name__, "args": [_arg(a) for a in args]}


def _arg(value: object) -> object:
    if isinstance(value, TypeInformation):
        return {"type": _describe(value)}
    if isinstance(value, Enum):
        return {"enum": type(value).__name__, "name": value.name}
    if isinstance(value, (list, tuple)):
        return {"list": [_arg(v) for v in value]}
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"cannot describe the type information argument {value!r} as JSON")


def type_info_from_json(raw: object, where: str) -> TypeInformation:
    """The type information ``raw`` (a :func:`type_info_to_json` description read from
    ``where``) describes; a ValueError naming ``where`` and the fix for anything else."""
    if not isinstance(raw, dict) or raw.get("format_version") != TYPE_INFO_JSON_VERSION:
        version = raw.get("format_version") if isinstance(raw, dict) else None
        raise ValueError(
            f"{where}: not a type description of format version {TYPE_INFO_JSON_VERSION} "
            f"(format_version {version!r}); resume with the sparktide version that wrote it, "
            f"or {_FIX.split(': ', 1)[1]}"
        )
    return _build(raw.get("type"), where)


def _build(raw: object, where: str) -> TypeInformation:
    if not isinstance(raw, dict) or not isinstance(raw.get("args"), list):
        raise ValueError(
            f"{where}: a type description must be {{class, args}}, got {raw!r:.80}; {_FIX}"
        )
    name = raw.get("class")
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(
            f"{where}: {name!r} is not a type information class sparktide describes "
            f"({', '.join(sorted(_CLASSES))}); {_FIX}"
        )
    args = [_value(a, where) for a in raw["args"]]
    try:
        return cls(*args)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: {name}{tuple(args)!r} is not a valid type ({exc}); {_FIX}"
        ) from None


def _value(raw: object, where: str) -> object:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and "type" in raw:
        return _build(raw["type"], where)
    if isinstance(raw, dict) and isinstance(raw.get("list"), list):
        return [_value(v, where) for v in raw["list"]]
    if isinstance(raw, dict) and raw.get("enum") in _ENUMS:
        members = _ENUMS[str(raw["enum"])].__members__
        member = members.get(str(raw.get("name")))
        if member is not None:
            return member
    raise ValueError(f"{where}: {raw!r:.80} is not a type description argument; {_FIX}")
