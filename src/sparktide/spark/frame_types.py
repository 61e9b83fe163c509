"""The columns of a stream without a declared type, inferred from its records.

``to_dataframe()`` and Spark's writers need typed columns. When a stream has no declared type
(no ``output_type``/``type_info``), its records decide: :func:`shape_of` describes one value,
:func:`merge` combines descriptions (so each Spark partition describes its own records and the
driver merges them), :func:`type_of_shape` turns the result into ``Types``:

===========================================  ================================================
records                                      type
===========================================  ================================================
``bool`` / ``int`` / ``float`` / ``str``     ``Types.BOOLEAN() / LONG() / DOUBLE() / STRING()``
``int`` and ``float`` mixed                  ``Types.DOUBLE()``
``bytes``, ``Decimal``                       ``Types.PRIMITIVE_ARRAY(Types.BYTE())``,
                                             ``Types.BIG_DEC()``
``datetime`` / ``date``                      ``Types.LOCAL_DATE_TIME() / LOCAL_DATE()``
``Row(name=...)`` / ``Row(...)``             ``Types.ROW_NAMED(...)`` / ``Types.ROW(...)``
a named tuple / a tuple                      ``Types.ROW_NAMED(...)`` / ``Types.TUPLE(...)``
``list`` / ``dict``                          ``Types.LIST(...)`` / ``Types.MAP(...)``
===========================================  ================================================

``None`` fits any type. What cannot be inferred -- no records at all, a field that holds only
``None``, one field holding a ``str`` in one record and an ``int`` in another, a value of another
class -- is a :class:`TypeError` that names it and asks for the type to be declared (or for
``Types.PICKLED_BYTE_ARRAY()``, a column of pickled values, when that is what is wanted).

>>> from sparktide.common.types import Row
>>> type_of_values([Row(word="a", n=1), Row(word="b", n=2.5)], "to_dataframe")
RowTypeInfo(word: String, n: Double)
>>> type_of_values([(1, "x"), (2, None)], "to_dataframe")
TupleTypeInfo(Long, String)
>>> type_of_values([{"a": 1}], "to_dataframe")
MapTypeInfo<String, Long>
>>> type_of_values([1, "x"], "to_dataframe")
Traceback (most recent call last):
...
TypeError: to_dataframe: cannot infer the columns of a stream without a declared type: the \
records: both int and str; declare the type where the stream is made (e.g. \
.map(f, output_type=Types.ROW_NAMED(['id', 'name'], [Types.LONG(), Types.STRING()]))), or \
output_type=Types.PICKLED_BYTE_ARRAY() for a column of pickled values
"""

from __future__ import annotations

import datetime as _dt
import decimal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.types import Row, row_field_names

__all__ = [
    "NotInferableError",
    "Shape",
    "merge",
    "shape_of",
    "shape_of_values",
    "type_of_shape",
    "type_of_shapes",
    "type_of_values",
]

_SCALARS: tuple[tuple[type, str], ...] = (
    # bool before int, datetime before date: subclasses first
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
    (bytes, "bytes"),
    (bytearray, "bytes"),
    (decimal.Decimal, "decimal"),
    (_dt.datetime, "datetime"),
    (_dt.date, "date"),
)
_SCALAR_TYPES: Mapping[str, Callable[[], TypeInformation]] = MappingProxyType(
    {
        "bool": Types.BOOLEAN,
        "int": Types.LONG,
        "float": Types.DOUBLE,
        "str": Types.STRING,
        "bytes": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
        "decimal": Types.BIG_DEC,
        "datetime": Types.LOCAL_DATE_TIME,
        "date": Types.LOCAL_DATE,
    }
)


class NotInferableError(TypeError):
    """What cannot be inferred; the message says where and why."""


@dataclass(frozen=True)
class Shape:
    """What the values seen so far have in common: a scalar ``kind`` (``"int"``, ``"str"``,
    ...), or ``"row"``/``"tuple"``/``"list"``/``"map"`` with the shapes of the ``items``
    (fields, the element, key and value; ``None`` where only ``None`` was seen) and, for named
    rows, the field ``names``."""

    kind: str
    items: tuple[Shape | None, ...] = ()
    names: tuple[str, ...] | None = None


def _describe(shape: Shape) -> str:
    if shape.kind == "row" and shape.names is not None:
        return f"Row({', '.join(shape.names)})"
    return shape.kind


def shape_of(value: object, where: str = "the records") -> Shape | None:
    """The shape of one value (``None`` for ``None``)."""
    if value is None:
        return None
    for cls, kind in _SCALARS:
        if isinstance(value, cls):
            return Shape(kind)
    if isinstance(value, Row):
        names = row_field_names(value)
        fields = list(value)
        labels = names or [f"f{i}" for i in range(len(fields))]
        items = tuple(shape_of(v, f"field {n!r}") for n, v in zip(labels, fields, strict=True))
        return Shape("row", items, None if names is None else tuple(names))
    if isinstance(value, tuple):
        names = getattr(value, "_fields", None)  # a named tuple
        labels = names or [f"f{i}" for i in range(len(value))]
        items = tuple(shape_of(v, f"field {n!r}") for n, v in zip(labels, value, strict=True))
        if names is not None:
            return Shape("row", items, tuple(names))
        return Shape("tuple", items)
    if isinstance(value, list):
        return Shape(
            "list", (_merge_all((shape_of(v, f"elements of {where}") for v in value), where),)
        )
    if isinstance(value, dict):
        keys = _merge_all((shape_of(k, f"keys of {where}") for k in value), f"keys of {where}")
        values = _merge_all((shape_of(v, f"values of {where}") for v in value.values()), where)
        return Shape("map", (keys, values))
    raise NotInferableError(
        f"{where}: a {type(value).__name__} ({value!r:.60}), which has no column type"
    )


def merge(a: Shape | None, b: Shape | None, where: str = "the records") -> Shape | None:
    """One shape for values of shapes ``a`` and ``b``; a ``TypeError`` when they do not fit."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a.kind, b.kind} == {"int", "float"}:
        return Shape("float")
    if a.kind != b.kind or a.names != b.names or len(a.items) != len(b.items):
        raise NotInferableError(f"{where}: both {_describe(a)} and {_describe(b)}")
    if a.kind in ("row", "tuple"):
        labels = a.names or [f"f{i}" for i in range(len(a.items))]
        items = tuple(
            merge(x, y, f"field {n!r}") for n, x, y in zip(labels, a.items, b.items, strict=True)
        )
    else:
        items = tuple(merge(x, y, where) for x, y in zip(a.items, b.items, strict=True))
    return Shape(a.kind, items, a.names)


def _merge_all(shapes: Iterable[Shape | None], where: str) -> Shape | None:
    merged: Shape | None = None
    for shape in shapes:
        merged = merge(merged, shape, where)
    return merged


def shape_of_values(values: Iterable[object]) -> Shape | None:
    """The merged shape of ``values`` (``None`` when there are none, or all are ``None``)."""
    return _merge_all((shape_of(v) for v in values), "the records")


def _type(shape: Shape | None, where: str) -> TypeInformation:
    if shape is None:
        raise NotInferableError(f"{where}: only None")
    make = _SCALAR_TYPES.get(shape.kind)
    if make is not None:
        return make()
    if shape.kind in ("row", "tuple"):
        labels = shape.names or [f"f{i}" for i in range(len(shape.items))]
        fields = [_type(s, f"field {n!r}") for n, s in zip(labels, shape.items, strict=True)]
        if shape.kind == "tuple":
            return Types.TUPLE(fields)
        if shape.names is None:
            return Types.ROW(fields)
        return Types.ROW_NAMED(list(shape.names), fields)
    if shape.kind == "list":
        return Types.LIST(_type(shape.items[0], f"elements of {where}"))
    return Types.MAP(_type(shape.items[0], f"keys of {where}"), _type(shape.items[1], where))


def _advice(caller: str, reason: str) -> TypeError:
    return TypeError(
        f"{caller}: cannot infer the columns of a stream without a declared type: {reason}; "
        "declare the type where the stream is made (e.g. .map(f, output_type=Types.ROW_NAMED("
        "['id', 'name'], [Types.LONG(), Types.STRING()]))), or "
        "output_type=Types.PICKLED_BYTE_ARRAY() for a column of pickled values"
    )


def type_of_shape(shape: Shape | None, caller: str, empty: bool = False) -> TypeInformation:
    """The ``Types`` of ``shape``; ``empty``: there were no records at all."""
    if empty:
        raise _advice(caller, "it has no records to infer them from")
    try:
        return _type(shape, "the records")
    except NotInferableError as exc:
        raise _advice(caller, str(exc)) from None


def type_of_values(values: list[object], caller: str) -> TypeInformation:
    """The ``Types`` of a stream's ``values`` (see the module docstring); ``caller`` names what
    the user called, for the error."""
    try:
        shape = shape_of_values(values)
    except NotInferableError as exc:
        raise _advice(caller, str(exc)) from None
    return type_of_shape(shape, caller, empty=not values)


def type_of_shapes(
    described: Iterable[tuple[Shape | None, str | None, int]], caller: str
) -> TypeInformation:
    """The ``Types`` of a stream described in parts (a Spark partition each): per part its
    merged shape, the reason it has none (an error message of :func:`shape_of`, else None) and
    its number of records."""
    merged: Shape | None = None
    total = 0
    try:
        for shape, error, count in described:
            if error is not None:
                raise NotInferableError(error)
            merged = merge(merged, shape)
            total += count
    except NotInferableError as exc:
        raise _advice(caller, str(exc)) from None
    return type_of_shape(merged, caller, empty=total == 0)
