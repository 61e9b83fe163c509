"""Composite declared types: tuples, rows, arrays, lists and maps.

A composite type builds the coercers of its fields once (:meth:`TypeInformation.coercer`), so a
value whose parts already have the right shape costs one exact type check per part:

>>> from sparktide.common.typeinfo import Types
>>> Types.TUPLE([Types.STRING(), Types.LONG()]).coerce(('k', 1))
('k', 1)
>>> Types.TUPLE([Types.STRING(), Types.INT()]).format_for_print(('hi', 5))
'(hi,5)'
>>> Types.ROW([Types.INT(), Types.STRING()]).format_for_print((1, 'a'))
'+I[1,a]'
>>> Types.MAP(Types.STRING(), Types.INT()).format_for_print({'b': 2, 'a': 1})
'{a=1, b=2}'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from sparktide.common.java_format import java_hash_map_order
from sparktide.common.row_kind import RowKind
from sparktide.common.typeinfo_base import (
    Coercer,
    TypeInformation,
    check_type_info,
    got,
    set_slot,
    show,
)
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo
from sparktide.common.types import (
    Row,
    RowLayout,
    is_row_class,
    row_field_names,
    row_layout,
    row_values,
)

__all__ = [
    "BasicArrayTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "TupleTypeInfo",
]

_INSERT = RowKind.INSERT


def _fields_coercer(coercers: tuple[Coercer, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function that coerces the fields of a sequence with exactly ``len(coercers)`` values
    into a tuple (a shorter or longer one raises ValueError). Unrolled for up to four fields,
    the common case, where it saves the cost of a loop."""
    n = len(coercers)
    if n == 1:
        (c0,) = coercers

        def one(value: Any) -> tuple[Any, ...]:
            (a,) = value
            return (c0(a),)

        return one
    if n == 2:
        c0, c1 = coercers

        def two(value: Any) -> tuple[Any, ...]:
            a, b = value
            return (c0(a), c1(b))

        return two
    if n == 3:
        c0, c1, c2 = coercers

        def three(value: Any) -> tuple[Any, ...]:
            a, b, c = value
            return (c0(a), c1(b), c2(c))

        return three
    if n == 4:
        c0, c1, c2, c3 = coercers

        def four(value: Any) -> tuple[Any, ...]:
            a, b, c, d = value
            return (c0(a), c1(b), c2(c), c3(d))

        return four

    def many(value: Any) -> tuple[Any, ...]:
        if len(value) != n:
            raise ValueError("arity")
        return tuple([c(v) for c, v in zip(coercers, value, strict=False)])

    return many


def _nullable_fields_coercer(coercers: tuple[Coercer, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """As :func:`_fields_coercer`, for fields that may be None (a row's)."""
    n = len(coercers)
    if n == 1:
        (c0,) = coercers

        def one(value: Any) -> tuple[Any, ...]:
            (a,) = value
            return (None if a is None else c0(a),)

        return one
    if n == 2:
        c0, c1 = coercers

        def two(value: Any) -> tuple[Any, ...]:
            a, b = value
            return (None if a is None else c0(a), None if b is None else c1(b))

        return two
    if n == 3:
        c0, c1, c2 = coercers

        def three(value: Any) -> tuple[Any, ...]:
            a, b, c = value
            return (
                None if a is None else c0(a),
                None if b is None else c1(b),
                None if c is None else c2(c),
            )

        return three
    if n == 4:
        c0, c1, c2, c3 = coercers

        def four(value: Any) -> tuple[Any, ...]:
            a, b, c, d = value
            return (
                None if a is None else c0(a),
                None if b is None else c1(b),
                None if c is None else c2(c),
                None if d is None else c3(d),
            )

        return four

    def many(value: Any) -> tuple[Any, ...]:
        if len(value) != n:
            raise ValueError("arity")
        return tuple([None if v is None else c(v) for c, v in zip(coercers, value, strict=False)])

    return many


_MAX_COMPILED_FIELDS = 8


def _field_tests(field_types: tuple[TypeInformation, ...]) -> tuple[list[str], list[str]] | None:
    """The local names ``v0, v1, ...`` of a compiled coercer's fields and each field type's
    :meth:`~TypeInformation.exact_test` of its name; None when there are too many fields or a
    field type has no such test."""
    n = len(field_types)
    if not 0 < n <= _MAX_COMPILED_FIELDS:
        return None
    names = [f"v{i}" for i in range(n)]
    tests = [t.exact_test(name) for t, name in zip(field_types, names, strict=True)]
    if any(test is None for test in tests):
        return None
    return names, cast("list[str]", tests)


def _compiled(source: str, name: str, what: str, namespace: dict[str, Any]) -> Coercer:
    """The function ``name`` that ``source`` defines, its globals ``namespace``."""
    exec(compile(source, f"<coercer of {what}>", "exec"), namespace)
    coercer: Coercer = namespace[name]
    return coercer


def _compiled_tuple_coercer(
    field_types: tuple[TypeInformation, ...], general: Coercer
) -> Coercer | None:
    """A coercer that returns a tuple whose fields all pass their type's
    :meth:`~TypeInformation.exact_test` as it is (one compiled check, no call per field) and
    hands anything else to ``general``; None when a field type has no such test."""
    fields = _field_tests(field_types)
    if fields is None:
        return None
    names, tests = fields
    n = len(names)
    source = (
        "def coerce_tuple(value, path='value'):\n"
        f"    if type(value) is tuple and len(value) == {n}:\n"
        f"        {', '.join(names)}, = value\n"
        f"        if {' and '.join(f'({test})' for test in tests)}:\n"
        "            return value\n"
        "    return general(value, path)\n"
    )
    return _compiled(source, "coerce_tuple", f"{n}-tuples", {"general": general})


def _compiled_row_coercer(
    field_types: tuple[TypeInformation, ...],
    make: Callable[[tuple[Any, ...]], Row],
    row_class: type[Row],
    general: Coercer,
) -> Coercer | None:
    """As :func:`_compiled_tuple_coercer`, for rows (fields may be ``None``): a row of
    ``row_class`` (the declared names) passing the tests is returned as it is, a tuple
    passing them becomes ``make(value)``."""
    fields = _field_tests(field_types)
    if fields is None:
        return None
    names, tests = fields
    n = len(names)
    unpack = f"{', '.join(names)},"
    exact = " and ".join(
        f"({name} is None or {test})" for name, test in zip(names, tests, strict=True)
    )
    source = (
        "def coerce_row(value, path='value'):\n"
        "    kind = type(value)\n"
        "    if kind is row_class:\n"
        f"        {unpack} = row_values(value)\n"
        f"        if {exact}:\n"
        "            return value\n"
        f"    elif kind is tuple and len(value) == {n}:\n"
        f"        {unpack} = value\n"
        f"        if {exact}:\n"
        "            return make(value)\n"
        "    return general(value, path)\n"
    )
    namespace = {"general": general, "make": make, "row_class": row_class, "row_values": row_values}
    return _compiled(source, "coerce_row", f"{n}-field rows", namespace)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


class _FieldsTypeInfo(TypeInformation):
    """Shared by ``TupleTypeInfo`` and ``RowTypeInfo``: a fixed list of field types."""

    __slots__ = ("_arity", "_coercers", "_field_types", "_fields_coercer")
    _arity: int
    _coercers: tuple[Coercer, ...]
    _field_types: tuple[TypeInformation, ...]
    _fields_coercer: Callable[[Any], tuple[Any, ...]]

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        if isinstance(field_types, (str, bytes)) or not isinstance(field_types, Sequence):
            raise TypeError(
                f"field_types must be a list of TypeInformation, got {got(field_types)}; "
                "e.g. [Types.STRING(), Types.INT()]"
            )
        types = tuple(check_type_info(t, f"field_types[{i}]") for i, t in enumerate(field_types))
        set_slot(self, "_field_types", types)
        coercers = tuple(t.coercer() for t in types)
        set_slot(self, "_coercers", coercers)
        set_slot(self, "_fields_coercer", _fields_coercer(coercers))
        set_slot(self, "_arity", len(types))

    def get_field_types(self) -> list[TypeInformation]:
        """The field types, in field order."""
        return list(self._field_types)

    def get_arity(self) -> int:
        """The number of fields."""
        return self._arity

    def _check_arity(self, values: Sequence[Any], path: str, value: Any) -> None:
        if len(values) != self._arity:
            raise ValueError(
                f"{path}: {self._decl()} has {self._arity} fields, got "
                f"{len(values)} values in {got(value)}; emit exactly one value per declared "
                "field or change the declaration"
            )


class TupleTypeInfo(_FieldsTypeInfo):
    """``Types.TUPLE([...])``: a ``tuple`` whose fields have the declared types (never None).

    Printed as Java's ``Tuple.toString()``: ``(a,1,1.0E-5)``, no spaces, no quotes.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.TUPLE([Types.STRING(), Types.FLOAT()]).coerce(('Alice', 110.1))
    ('Alice', 110.0999984741211)
    >>> Types.TUPLE([Types.STRING(), Types.FLOAT()]).coerce(('Alice', None))
    Traceback (most recent call last):
    ...
    TypeError: value[1]: Types.FLOAT() does not accept None (Flink cannot serialize a null \
here); replace the None, or declare the field inside a Types.ROW(...), whose fields may be \
None
    """

    __slots__ = ()

    def _args(self) -> tuple[Any, ...]:
        return (list(self._field_types),)

    def _key(self) -> tuple[Any, ...]:
        return ("TupleTypeInfo", self._field_types)

    def _decl(self) -> str:
        return "Types.TUPLE([{}])".format(", ".join(t._decl() for t in self._field_types))

    def __repr__(self) -> str:
        return "TupleTypeInfo({})".format(", ".join(str(t) for t in self._field_types))

    def to_arrow_type(self) -> pa.DataType:
        return pa.struct(
            [
                pa.field(f"f{i}", t.to_arrow_type(), nullable=False)
                for i, t in enumerate(self._field_types)
            ]
        )

    def coercer(self) -> Coercer:
        """:meth:`coerce`, behind one compiled check that lets a tuple whose fields already
        have their declared types through unchanged (when every field type has such a check).

        >>> from sparktide.common.typeinfo import Types
        >>> coerce = Types.TUPLE([Types.STRING(), Types.LONG()]).coercer()
        >>> value = ("k", 5)
        >>> coerce(value) is value, coerce(["k", 5])
        (True, ('k', 5))
        >>> coerce(("k", 5.0))
        Traceback (most recent call last):
        ...
        TypeError: value[1]: Types.LONG() holds an int, got float 5.0; round it explicitly with \
int(...) (PyFlink would truncate it silently)
        """
        compiled = _compiled_tuple_coercer(self._field_types, self.coerce)
        return self.coerce if compiled is None else compiled

    def coerce(self, value: Any, path: str = "value") -> tuple[Any, ...]:
        kind = type(value)
        if kind is tuple or kind is list:
            try:
                return self._fields_coercer(value)
            except (TypeError, ValueError):
                pass  # redone below, to name the field (or the arity) in the error
        if not isinstance(value, (tuple, list, Row)):
            raise self._wrong(value, path, "a tuple", "emit a tuple (or list) of the fields")
        values = list(value)
        self._check_arity(values, path, value)
        return tuple(
            [
                c(v, f"{path}[{i}]")
                for i, (c, v) in enumerate(zip(self._coercers, values, strict=False))
            ]
        )

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        fields = ",".join(t.java_string(v) for t, v in zip(self._field_types, value, strict=False))
        return f"({fields})"

    def java_hash_code(self, value: Any) -> int | None:
        """``Tuple.hashCode()``: ``31 * h + field.hashCode()`` over the fields."""
        h = 0
        for t, v in zip(self._field_types, value, strict=False):
            field = 0 if v is None else t.java_hash_code(v)
            if field is None:
                return None
            h = _int32(31 * h + field)
        return h


class RowTypeInfo(_FieldsTypeInfo):
    """``Types.ROW([...])`` / ``Types.ROW_NAMED(names, [...])``: a :class:`Row`.

    Fields may be ``None``. A named row is matched to the declaration by field name, a tuple,
    list or unnamed row by position, a dict by key; the result is named after the declaration
    (``f0``, ``f1``, ... when unnamed) and keeps the row kind.

    ``print()`` shows the row kind and Python's ``str`` of each field (PyFlink formats rows in
    Python): ``+I[1,a,None]``; a row nested in a Java-printed value shows as Java's
    ``Row.toString()``: ``+I[1, a, null]``.

    >>> from sparktide.common.typeinfo import Types
    >>> info = Types.ROW_NAMED(['id', 'info'], [Types.INT(), Types.STRING()])
    >>> info, info.get_field_names(), info.get_field_types()
    (RowTypeInfo(id: Integer, info: String), ['id', 'info'], [Integer, String])
    >>> info.coerce(Row(info='a', id=1)), Types.ROW([Types.INT()]).coerce((7,))
    (Row(id=1, info='a'), Row(f0=7))
    >>> info.format_for_print(Row(1, None)), info.java_string(Row(1, None))
    ('+I[1,None]', '+I[1, null]')
    """

    __slots__ = ("_field_names", "_layout", "_make_insert", "_names", "_row_coercer")
    _field_names: tuple[str, ...] | None
    _names: list[str]
    _layout: RowLayout
    _make_insert: Callable[[tuple[Any, ...]], Row]
    _row_coercer: Callable[[Any], tuple[Any, ...]]

    def __init__(
        self, field_types: Sequence[TypeInformation], field_names: Sequence[str] | None = None
    ) -> None:
        super().__init__(field_types)
        names: tuple[str, ...] | None = None
        if field_names is not None:
            if isinstance(field_names, (str, bytes)) or not isinstance(field_names, Sequence):
                raise TypeError(
                    f"field_names must be a list of str, got {got(field_names)}; "
                    "e.g. ['id', 'name']"
                )
            names = tuple(field_names)
            for i, name in enumerate(names):
                if not isinstance(name, str):
                    raise TypeError(
                        f"field_names[{i}] must be a str, got {got(name)}; name every field"
                    )
            if len(names) != self._arity:
                raise ValueError(
                    f"field_names has {len(names)} names but field_types has "
                    f"{self._arity} types; give one name per type"
                )
            if len(set(names)) != len(names):
                dupes = sorted({n for n in names if names.count(n) > 1})
                raise ValueError(
                    f"field_names must be unique, {dupes} occur more than once; rename them"
                )
        set_slot(self, "_field_names", names)
        set_slot(self, "_row_coercer", _nullable_fields_coercer(self._coercers))
        effective = names if names is not None else tuple(f"f{i}" for i in range(self._arity))
        set_slot(self, "_names", list(effective))
        set_slot(self, "_layout", row_layout(effective))
        set_slot(self, "_make_insert", self._layout.maker())

    def get_field_names(self) -> list[str]:
        """The field names (Flink's defaults ``f0``, ``f1``, ... when none were given)."""
        return list(self._names)

    def get_field_index(self, field_name: str) -> int:
        """The position of ``field_name``, or -1 if there is no such field."""
        names = self._names
        return names.index(field_name) if field_name in names else -1

    def _args(self) -> tuple[Any, ...]:
        names = None if self._field_names is None else list(self._field_names)
        return (list(self._field_types), names)

    def _key(self) -> tuple[Any, ...]:
        return ("RowTypeInfo", self._field_types)

    def _decl(self) -> str:
        types = ", ".join(t._decl() for t in self._field_types)
        if self._field_names is None:
            return f"Types.ROW([{types}])"
        return f"Types.ROW_NAMED({list(self._field_names)!r}, [{types}])"

    def __repr__(self) -> str:
        if self._field_names:
            return "RowTypeInfo({})".format(
                ", ".join(
                    f"{n}: {t}" for n, t in zip(self._field_names, self._field_types, strict=True)
                )
            )
        return "RowTypeInfo({})".format(", ".join(str(t) for t in self._field_types))

    def to_arrow_type(self) -> pa.DataType:
        return pa.struct(
            [
                pa.field(n, t.to_arrow_type(), nullable=True)
                for n, t in zip(self._names, self._field_types, strict=True)
            ]
        )

    def _by_name(self, present: Sequence[str], lookup: Any, path: str, value: Any) -> list[Any]:
        names = self._names
        missing = [n for n in names if n not in present]
        extra = [n for n in present if n not in names]
        if missing or extra:
            raise ValueError(
                f"{path}: {self._decl()} has the fields {names}, got {got(value)} "
                f"(missing {missing}, not declared {extra}); emit the declared fields, or a "
                "tuple / unnamed Row to match them by position"
            )
        return [lookup(n) for n in names]

    def _make_row(self, values: tuple[Any, ...], kind: RowKind | None) -> Row:
        if kind is None or kind is RowKind.INSERT:
            return self._make_insert(values)
        return Row.of_values(values, self._names, kind)

    def coercer(self) -> Coercer:
        """:meth:`coerce`, behind one compiled check (when every field type has one, see
        :meth:`~TypeInformation.exact_test`): a row of the declared names whose fields already
        have their declared types (or are ``None``) is returned as it is, a tuple of such
        fields becomes the row without a call per field; anything else goes to :meth:`coerce`.

        >>> from sparktide.common.typeinfo import Types
        >>> info = Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()])
        >>> coerce = info.coercer()
        >>> row = info.coerce(("a", 1))
        >>> coerce(row) is row, coerce(("b", None)), coerce(Row(n=2, k="c"))
        (True, Row(k='b', n=None), Row(k='c', n=2))
        >>> coerce(("b", 1.5))
        Traceback (most recent call last):
        ...
        TypeError: value.n: Types.LONG() holds an int, got float 1.5; round it explicitly with \
int(...) (PyFlink would truncate it silently)
        """
        compiled = _compiled_row_coercer(
            self._field_types, self._make_insert, type(self._make_insert(self._nones)), self.coerce
        )
        return self.coerce if compiled is None else compiled

    @property
    def _nones(self) -> tuple[None, ...]:
        return (None,) * self._arity

    def coerce(self, value: Any, path: str = "value") -> Row:
        kind = type(value)
        values: Sequence[Any] | None = None
        row_kind = None
        if kind is tuple or kind is list:
            values = value
        elif is_row_class(kind):
            row_kind = value.get_row_kind()
            names = row_field_names(value)
            if names is None or names is self._layout.names:  # the declared order
                values = row_values(value)
            else:
                try:  # the values in declared order, if the row's names are the declared ones
                    values = value.get_fields_by_names(self._names)
                except ValueError:
                    values = None
                if values is not None and len(values) != len(value):
                    values = None
        if values is not None:
            try:
                out = self._row_coercer(values)
            except (TypeError, ValueError):
                pass  # redone below, to name the field (or the arity) in the error
            else:
                return self._make_row(out, row_kind)
        return self._coerce_general(value, path)

    def _coerce_general(self, value: Any, path: str) -> Row:
        kind = None
        if isinstance(value, Row):
            kind = value.get_row_kind()
            try:
                by_name: dict[str, Any] | None = value.as_dict()
            except TypeError:  # a Row without field names: matched by position
                by_name = None
            if by_name is None or list(by_name) == self._names:
                values = list(value)
            else:
                values = self._by_name(list(by_name), by_name.__getitem__, path, value)
        elif isinstance(value, (tuple, list)):
            values = list(value)
        elif isinstance(value, Mapping):
            values = self._by_name(list(value), value.__getitem__, path, value)
        else:
            raise self._wrong(value, path, "a Row", "emit a Row (or a tuple, list or dict)")
        self._check_arity(values, path, value)
        sep = "." if self._field_names is not None else None
        out: list[Any] = []
        for i, (name, c, v) in enumerate(zip(self._names, self._coercers, values, strict=True)):
            if v is None:
                out.append(None)
            else:
                out.append(c(v, f"{path}{sep}{name}" if sep else f"{path}[{i}]"))
        return self._make_row(tuple(out), kind)

    def format_for_print(self, value: Any) -> str:
        kind = value.get_row_kind() if isinstance(value, Row) else _INSERT
        return f"{kind.short_string()}[{','.join(str(v) for v in value)}]"

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        kind = value.get_row_kind() if isinstance(value, Row) else _INSERT
        fields = ", ".join(t.java_string(v) for t, v in zip(self._field_types, value, strict=False))
        return f"{kind.short_string()}[{fields}]"


_PRIMITIVE = (
    BasicType.BOOLEAN,
    BasicType.BYTE,
    BasicType.SHORT,
    BasicType.INT,
    BasicType.LONG,
    BasicType.FLOAT,
    BasicType.DOUBLE,
    BasicType.CHAR,
)


def _basic_element(
    element_type: TypeInformation, allowed: tuple[BasicType, ...], what: str
) -> BasicTypeInfo:
    check_type_info(element_type, "element_type")
    if type(element_type) is not BasicTypeInfo or element_type.basic_type not in allowed:
        names = ", ".join(f"Types.{b.name}()" for b in allowed)
        raise ValueError(
            f"element_type of {what} must be one of {names}, got {element_type!r}; use "
            "Types.OBJECT_ARRAY(...) or Types.LIST(...) for other element types"
        )
    return element_type


class _ElementsTypeInfo(TypeInformation):
    """Shared by the array and list types: a sequence of one element type."""

    __slots__ = ("_element_coercer", "_element_type")
    _element_coercer: Coercer
    _element_type: TypeInformation
    _nullable_elements = False
    _factory = ""
    _java = ""

    def __init__(self, element_type: TypeInformation) -> None:
        element = check_type_info(element_type, "element_type")
        set_slot(self, "_element_type", element)
        set_slot(self, "_element_coercer", element.coercer())

    @property
    def element_type(self) -> TypeInformation:
        """The type of the elements."""
        return self._element_type

    def _args(self) -> tuple[Any, ...]:
        return (self._element_type,)

    def _decl(self) -> str:
        return f"Types.{self._factory}({self._element_type._decl()})"

    def __repr__(self) -> str:
        return f"{self._java}<{self._element_type}>"

    def to_arrow_type(self) -> pa.DataType:
        element = self._element_type.to_arrow_type()
        return pa.list_(pa.field("item", element, nullable=self._nullable_elements))

    def coerce(self, value: Any, path: str = "value") -> Any:
        kind = type(value)
        if kind is list or kind is tuple:
            c = self._element_coercer
            try:
                if self._nullable_elements:
                    return [None if v is None else c(v) for v in value]
                return [c(v) for v in value]
            except (TypeError, ValueError):
                pass  # redone below, to name the element in the error
        if not isinstance(value, (list, tuple)):
            raise self._wrong(value, path, "a list", "emit a list of the elements")
        c = self._element_coercer
        out: list[Any] = []
        for i, v in enumerate(value):
            if v is None and self._nullable_elements:
                out.append(None)
            else:
                out.append(c(v, f"{path}[{i}]"))
        return out

    def java_string(self, value: Any) -> str:
        """``Arrays.toString`` / ``List.toString``: ``[1, 2, null]``."""
        if value is None:
            return "null"
        element = self._element_type
        return "[" + ", ".join(element.java_string(v) for v in value) + "]"


class PrimitiveArrayTypeInfo(_ElementsTypeInfo):
    """``Types.PRIMITIVE_ARRAY(t)``: a ``list`` of non-null primitives (``bytes`` for BYTE).

    >>> from sparktide.common.typeinfo import Types
    >>> Types.PRIMITIVE_ARRAY(Types.INT()).coerce((1, 2))
    [1, 2]
    >>> Types.PRIMITIVE_ARRAY(Types.BYTE()).coerce(bytearray(b'ab'))
    b'ab'
    >>> Types.PRIMITIVE_ARRAY(Types.BYTE()).java_string(b'a\\xff')
    '[97, -1]'
    """

    __slots__ = ()
    _factory = "PRIMITIVE_ARRAY"
    _java = "PrimitiveArrayTypeInfo"
    _element_type: BasicTypeInfo  # checked by __init__

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(_basic_element(element_type, _PRIMITIVE, "PRIMITIVE_ARRAY"))

    def _is_bytes(self) -> bool:
        return self._element_type.basic_type is BasicType.BYTE

    def to_arrow_type(self) -> pa.DataType:
        return pa.binary() if self._is_bytes() else super().to_arrow_type()

    def coerce(self, value: Any, path: str = "value") -> Any:
        if self._is_bytes():
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            raise self._wrong(value, path, "bytes", "emit bytes (or a bytearray)")
        return super().coerce(value, path)

    def java_string(self, value: Any) -> str:
        if value is not None and self._is_bytes():  # Java's bytes are signed
            return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(value)) + "]"
        return super().java_string(value)


class BasicArrayTypeInfo(_ElementsTypeInfo):
    """``Types.BASIC_ARRAY(t)``: a ``list`` of boxed basic values; elements may be None.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.BASIC_ARRAY(Types.STRING()).coerce(['a', None])
    ['a', None]
    """

    __slots__ = ()
    _nullable_elements = True
    _factory = "BASIC_ARRAY"
    _java = "BasicArrayTypeInfo"

    def __init__(self, element_type: TypeInformation) -> None:
        allowed = (*_PRIMITIVE, BasicType.STRING)
        super().__init__(_basic_element(element_type, allowed, "BASIC_ARRAY"))


class ObjectArrayTypeInfo(_ElementsTypeInfo):
    """``Types.OBJECT_ARRAY(t)``: a ``list`` of values of any type; elements may be None.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.OBJECT_ARRAY(Types.TUPLE([Types.INT()])).coerce([(1,), None])
    [(1,), None]
    """

    __slots__ = ()
    _nullable_elements = True
    _factory = "OBJECT_ARRAY"
    _java = "ObjectArrayTypeInfo"


class ListTypeInfo(_ElementsTypeInfo):
    """``Types.LIST(t)``: a ``list`` of non-null values, printed as Java's ``[1, 2, 3]``.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.LIST(Types.DOUBLE()), Types.LIST(Types.DOUBLE()).coerce([1, 2.5])
    (ListTypeInfo<Double>, [1.0, 2.5])
    >>> Types.LIST(Types.DOUBLE()).format_for_print([1.0, 1e-05])
    '[1.0, 1.0E-5]'
    """

    __slots__ = ()
    _factory = "LIST"
    _java = "ListTypeInfo"

    @property
    def elem_type(self) -> TypeInformation:
        """The type of the elements (PyFlink's attribute name)."""
        return self._element_type

    def java_hash_code(self, value: Any) -> int | None:
        """``List.hashCode()``: ``31 * h + element.hashCode()``, from 1."""
        h = 1
        for v in value:
            element = 0 if v is None else self._element_type.java_hash_code(v)
            if element is None:
                return None
            h = _int32(31 * h + element)
        return h


class MapTypeInfo(TypeInformation):
    """``Types.MAP(k, v)``: a ``dict``; keys are never None, values may be.

    Printed as a ``java.util.HashMap``: ``{k=v, ...}`` in the map's bucket order, which for keys
    of the basic, date and time types, tuples and lists is computed exactly from Java's hash
    codes; keys of other types keep their insertion order.

    >>> from sparktide.common.typeinfo import Types
    >>> Types.MAP(Types.STRING(), Types.FLOAT()).coerce({'a': 0.1, 'b': None})
    {'a': 0.10000000149011612, 'b': None}
    >>> Types.MAP(Types.INT(), Types.STRING()).format_for_print({17: 'q', 3: 'c', 1: 'a'})
    '{17=q, 1=a, 3=c}'
    """

    __slots__ = ("_key_coercer", "_key_type_info", "_value_coercer", "_value_type_info")
    _key_coercer: Coercer
    _key_type_info: TypeInformation
    _value_coercer: Coercer
    _value_type_info: TypeInformation

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        key = check_type_info(key_type_info, "key_type_info")
        value = check_type_info(value_type_info, "value_type_info")
        set_slot(self, "_key_type_info", key)
        set_slot(self, "_value_type_info", value)
        set_slot(self, "_key_coercer", key.coercer())
        set_slot(self, "_value_coercer", value.coercer())

    @property
    def key_type_info(self) -> TypeInformation:
        """The type of the keys."""
        return self._key_type_info

    @property
    def value_type_info(self) -> TypeInformation:
        """The type of the values."""
        return self._value_type_info

    def _args(self) -> tuple[Any, ...]:
        return (self._key_type_info, self._value_type_info)

    def _decl(self) -> str:
        return f"Types.MAP({self._key_type_info._decl()}, {self._value_type_info._decl()})"

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info}, {self._value_type_info}>"

    def to_arrow_type(self) -> pa.DataType:
        return pa.map_(self._key_type_info.to_arrow_type(), self._value_type_info.to_arrow_type())

    def coerce(self, value: Any, path: str = "value") -> dict[Any, Any]:
        if type(value) is dict:
            kc, vc = self._key_coercer, self._value_coercer
            try:
                return {kc(k): None if v is None else vc(v) for k, v in value.items()}
            except (TypeError, ValueError):
                pass  # redone below, to name the entry in the error
        if not isinstance(value, Mapping):
            raise self._wrong(value, path, "a dict", "emit a dict")
        kc, vc = self._key_coercer, self._value_coercer
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = kc(k, f"a key of {path}")
            out[key] = None if v is None else vc(v, f"{path}[{show(k)}]")
        return out

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        keys = list(value)
        key_type, value_type = self._key_type_info, self._value_type_info
        hashes = [key_type.java_hash_code(k) for k in keys]
        known = [h for h in hashes if h is not None]
        if len(known) == len(hashes):
            keys = [keys[i] for i in java_hash_map_order(known)]
        entries = (f"{key_type.java_string(k)}={value_type.java_string(value[k])}" for k in keys)
        return "{" + ", ".join(entries) + "}"
