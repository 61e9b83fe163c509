"""``Row`` and ``RowKind``: PyFlink's ``pyflink.common.types``.

A :class:`Row` holds values in a fixed field order, optionally with field names, and carries the
:class:`RowKind` of the change it describes. Its ``repr`` (which is also its ``str``, and so what
``print`` shows for a row) is exactly PyFlink's: named rows print as ``Row(name='Alice', age=11)``,
rows without field names as ``<Row(1, 'a')>``.

>>> Row(name="Alice", age=11)
Row(name='Alice', age=11)
>>> Row(1, "a")
<Row(1, 'a')>
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sparktide.common.row_kind import RowKind

__all__ = ["Row", "RowKind"]

_INTERNAL = frozenset({"_fields", "_values", "_from_dict", "_row_kind"})
_MISSING = object()


def _create_row(
    fields: Sequence[str] | None, values: Iterable[Any], row_kind: RowKind | None = None
) -> Row:
    """Builds a row from field names (or ``None``), values and a kind; used by pickling."""
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    if row_kind is not None:
        row.set_row_kind(row_kind)
    return row


class Row:
    """A row of values in a fixed field order, with optional field names and a :class:`RowKind`.

    Fields can be read by position (``row[0]``), by name (``row['name']``) or as attributes
    (``row.name``). Keyword arguments keep the order in which they are given. ``key in row``
    tests the field names of a named row and the values of a row without names.

    >>> row = Row(name="Alice", age=11)
    >>> row
    Row(name='Alice', age=11)
    >>> row['name'], row.age, row[1]
    ('Alice', 11, 11)
    >>> 'name' in row, 'wrong_key' in row
    (True, False)
    >>> row.as_dict()
    {'name': 'Alice', 'age': 11}

    ``Row("name", "age")`` creates a row "class" whose calls create named rows, as in PyFlink:

    >>> Person = Row("name", "age")
    >>> Person
    <Row('name', 'age')>
    >>> Person("Alice", 11)
    Row(name='Alice', age=11)

    The kind takes part in equality; it does not show in the ``repr``:

    >>> deleted = Row.of_kind(RowKind.DELETE, 1, 'a')
    >>> deleted.get_row_kind(), deleted == Row(1, 'a'), deleted
    (<RowKind.DELETE: 3>, False, <Row(1, 'a')>)
    """

    __slots__ = ("_fields", "_from_dict", "_row_kind", "_values")

    _fields: list[str] | None
    _values: list[Any]
    _from_dict: bool
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError(
                "Row takes either positional values or keyword fields, not both; got "
                f"{len(args)} positional and {sorted(kwargs)} keyword arguments. Use "
                "Row(name='a', age=1) or Row('a', 1)"
            )
        if kwargs:
            self._fields = list(kwargs)
            self._values = list(kwargs.values())
            self._from_dict = True
        else:
            self._fields = None
            self._values = list(args)
            self._from_dict = False
        self._row_kind = RowKind.INSERT

    @classmethod
    def of_values(
        cls, values: Sequence[Any], field_names: Sequence[str] | None = None, row_kind: Any = None
    ) -> Row:
        """A row of ``values`` named by ``field_names`` (fast: no per-field checks).

        >>> Row.of_values([1, 'a'], ['id', 'info'])
        Row(id=1, info='a')
        """
        row = object.__new__(cls)
        setter = object.__setattr__
        setter(row, "_values", list(values))
        setter(row, "_fields", None if field_names is None else list(field_names))
        setter(row, "_from_dict", False)
        setter(row, "_row_kind", RowKind.INSERT if row_kind is None else row_kind)
        return row

    # ------------------------------------------------------------------ PyFlink's methods

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The fields as a dict by name; ``recursive=True`` also turns nested rows into dicts.

        >>> Row(key=1, value=Row(name='a', age=2)).as_dict(recursive=True)
        {'key': 1, 'value': {'name': 'a', 'age': 2}}
        """
        if self._fields is None:
            raise TypeError(
                "Cannot convert a Row class into dict: this row has no field names; create it "
                "with keyword arguments (Row(name=..., ...)) or call set_field_names(...) first"
            )
        if not recursive:
            return dict(zip(self._fields, self._values, strict=False))

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        return {name: conv(value) for name, value in zip(self._fields, self._values, strict=False)}

    def get_row_kind(self) -> RowKind:
        """The kind of change this row describes (``RowKind.INSERT`` unless set)."""
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        """Sets the kind of change this row describes."""
        if not isinstance(row_kind, RowKind):
            raise TypeError(
                f"row_kind must be a RowKind, got {type(row_kind).__name__} ({row_kind!r}); "
                "use e.g. RowKind.UPDATE_AFTER"
            )
        self._row_kind = row_kind

    def set_field_names(self, field_names: Sequence[str]) -> None:
        """Names the fields (positionally)."""
        self._fields = list(field_names)

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        """The values of the fields ``names``, in that order.

        >>> Row(a=1, b=2).get_fields_by_names(['b', 'a'])
        [2, 1]
        """
        if self._fields is None or list(names) == self._fields:
            return self._values
        missing = [name for name in names if name not in self._fields]
        if missing:
            raise ValueError(
                f"Field names {missing} do not exist in {self._fields}; ask for names of this row"
            )
        return [self._values[self._fields.index(name)] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """A row of the given kind.

        >>> Row.of_kind(RowKind.UPDATE_AFTER, 1, 2).get_row_kind()
        <RowKind.UPDATE_AFTER: 2>
        """
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    # ------------------------------------------------------------------ container protocol

    def __contains__(self, item: Any) -> bool:
        if self._fields is not None:
            return item in self._fields
        return item in self._values

    def __call__(self, *args: Any) -> Row:
        """Creates a named row whose field names are this row's values."""
        if len(args) > len(self):
            raise ValueError(
                f"Can not create Row with fields {self!r}, expected {len(self)} values but got "
                f"{args!r}"
            )
        return _create_row(list(self._values), args, self._row_kind)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        return self._values[self._index_of(item)]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, slice)):
            self._values[key] = value
            return
        self._values[self._index_of(key)] = value

    def _index_of(self, name: Any) -> int:
        if self._fields is None:
            raise ValueError(
                f"this Row has no field names, so field {name!r} cannot be looked up by name; "
                "index it by position or create it with Row(name=value, ...)"
            )
        try:
            return self._fields.index(name)
        except ValueError:
            raise ValueError(name) from None

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        fields = self._fields
        if fields is None or item not in fields:
            raise AttributeError(item)
        index = fields.index(item)
        if index >= len(self._values):
            raise AttributeError(item)
        return self._values[index]

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in _INTERNAL:
            raise AttributeError(
                f"{key}: Row fields cannot be set as attributes; use row[{key!r}] = value"
            )
        object.__setattr__(self, key, value)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    # ------------------------------------------------------------------ value semantics

    def __reduce__(self) -> tuple[Any, ...]:
        return _create_row, (self._fields, tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        if self._fields is not None:
            return "Row({})".format(
                ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self._values, strict=False))
            )
        return "<Row({})>".format(", ".join(repr(v) for v in self._values))

    def _by_sorted_name(self) -> list[Any]:
        by_name = dict(zip(self._fields or (), self._values, strict=False))
        return [by_name.get(name, _MISSING) for name in sorted(self._fields or ())]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self.__class__ != other.__class__:
            return False
        if self._row_kind != other._row_kind:
            return False
        if self._fields is not None:
            if other._fields is None or sorted(self._fields) != sorted(other._fields):
                return False
            return self._by_sorted_name() == other._by_sorted_name()
        if other._fields is not None:
            return False
        return self._values == other._values

    def __hash__(self) -> int:
        if self._fields is not None:
            return hash(tuple(self._by_sorted_name()))
        return hash(tuple(self._values))
