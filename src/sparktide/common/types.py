"""``Row`` and ``RowKind``: PyFlink's ``pyflink.common.types``.

A :class:`Row` holds values in a fixed field order, optionally with field names, and carries the
:class:`RowKind` of the change it describes. Its ``repr`` (which is also its ``str``, and so what
``print`` shows for a row) is exactly PyFlink's: named rows print as ``Row(name='Alice', age=11)``,
rows without field names as ``<Row(1, 'a')>``.

>>> Row(name="Alice", age=11)
Row(name='Alice', age=11)
>>> Row(1, "a")
<Row(1, 'a')>

A row keeps its values in one tuple. All rows with the same field names share one
:class:`RowLayout` (the names, the position of each, made once per names and reused) and one class
whose fields are attributes, so ``row.price`` reads a position without a search. Code that already
has the values of many rows in field order builds them through :meth:`RowLayout.maker`:

>>> make = row_layout(("id", "info")).maker()
>>> make((1, "a")), make((2, "b")) == Row(id=2, info="b")
(Row(id=1, info='a'), True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, ClassVar

from sparktide.common.row_kind import RowKind

__all__ = [
    "Row",
    "RowKind",
    "RowLayout",
    "is_row_class",
    "row_field_names",
    "row_layout",
    "row_maker",
    "row_values",
]

_MISSING = object()
_INSERT = RowKind.INSERT
_new = object.__new__
_LAYOUTS_CACHED = 4096


def _create_row(
    fields: Sequence[str] | None, values: Iterable[Any], row_kind: RowKind | None = None
) -> Row:
    """Builds a row from field names (or ``None``), values and a kind; what pickles call (rows
    pickled by every earlier version too)."""
    return _build(Row, fields, tuple(values), RowKind.INSERT if row_kind is None else row_kind)


def _sorted_key(names: tuple[str, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]] | None:
    """A function giving the values ordered by field name (``None`` when already so ordered)."""
    order = sorted(range(len(names)), key=names.__getitem__)
    if order == list(range(len(names))):
        return None
    if len(order) == 1:  # pragma: no cover - one name is always in order
        return None
    return itemgetter(*order)


class RowLayout:
    """The field names of one row schema, the position of each, and how rows of it are built.

    One layout exists per tuple of names (:func:`row_layout`), shared by all rows with these
    names.

    >>> layout = row_layout(("name", "age"))
    >>> layout.names, layout.positions["age"], layout is row_layout(["name", "age"])
    (('name', 'age'), 1, True)
    """

    __slots__ = ("distinct", "names", "positions", "sorted_key")

    names: tuple[str, ...]
    positions: dict[str, int]
    distinct: bool
    sorted_key: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        positions: dict[str, int] = {}
        for i, name in enumerate(names):
            positions.setdefault(name, i)
        self.positions = positions
        self.distinct = len(positions) == len(names)
        self.sorted_key = _sorted_key(names) if self.distinct else None

    def maker(self, row_kind: RowKind | None = None) -> Callable[[tuple[Any, ...]], Row]:
        """A function building a row of this layout from a tuple of its values in field order
        (no per-field checks; the tuple is kept, not copied).

        >>> row_layout(("a", "b")).maker(RowKind.DELETE)((1, 2)).get_row_kind()
        <RowKind.DELETE: 3>
        """
        return _maker(_row_class(Row, self.names, len(self.names)), row_kind)

    def __repr__(self) -> str:
        return f"RowLayout({self.names!r})"


def row_layout(names: Iterable[str]) -> RowLayout:
    """The layout of rows named ``names``, the same object for equal names."""
    names = tuple(names)
    try:
        return _cached_layout(names)
    except TypeError:  # a name that cannot be hashed: a layout of its own
        return RowLayout(names)


@lru_cache(maxsize=_LAYOUTS_CACHED)
def _cached_layout(names: tuple[str, ...]) -> RowLayout:
    return RowLayout(names)


def row_maker(
    field_names: Sequence[str] | None, row_kind: RowKind | None = None
) -> Callable[[tuple[Any, ...]], Row]:
    """A function building rows named ``field_names`` (``None``: unnamed rows) of kind
    ``row_kind`` from tuples of their values in field order; the fast way to build many rows.

    >>> make = row_maker(None)
    >>> make((1, "a")), row_maker(["x"])((2,))
    (<Row(1, 'a')>, Row(x=2))
    """
    if field_names is None:
        return _maker(Row, row_kind)
    return row_layout(field_names).maker(row_kind)


def _maker(cls: type[Row], row_kind: RowKind | None) -> Callable[[tuple[Any, ...]], Row]:
    new = object.__new__
    kind = RowKind.INSERT if row_kind is None else row_kind

    def make(values: tuple[Any, ...]) -> Row:
        row = new(cls)
        row._values = values
        row._row_kind = kind
        return row

    return make


def row_field_names(row: Row | type[Row]) -> tuple[str, ...] | None:
    """The field names of ``row`` or of the rows of a row class (``None`` when there are none),
    without a copy.

    >>> row_field_names(Row(a=1, b=2)), row_field_names(Row(1, 2))
    (('a', 'b'), None)
    """
    layout = row._layout
    return None if layout is None else layout.names


row_values: Callable[[Row], tuple[Any, ...]] = attrgetter("_values")
"""The values of a row as a tuple, without a copy: ``row_values(Row(a=1)) == (1,)``."""


def is_row_class(cls: type) -> bool:
    """Whether ``cls`` is a class of plain rows: :class:`Row` itself or the class of its rows of
    one layout (not a subclass of ``Row`` made by a user).

    >>> is_row_class(type(Row(a=1))), is_row_class(Row), is_row_class(tuple)
    (True, True, False)
    """
    return getattr(cls, "_family", None) is Row


def _field_property(name: str, position: int) -> property:
    def read(row: Row) -> Any:
        return row._values[position]

    def write(row: Row, value: Any) -> None:
        raise AttributeError(
            f"{name}: Row fields cannot be set as attributes; use row[{name!r}] = value"
        )

    return property(read, write, doc=f"The field {name!r}.")


def _row_class(family: type[Row], names: tuple[Any, ...], arity: int) -> type[Row]:
    """The class of ``family``'s rows named ``names`` holding ``arity`` values."""
    try:
        if arity == len(names):  # the common case: one dict lookup
            cls = family._classes.get(names)
            if cls is not None:
                return cls
        cls = _cached_row_class(family, names, arity)  # type: ignore[arg-type]
    except TypeError:  # a name that cannot be hashed
        return _new_row_class(family, row_layout(names), arity)
    if arity == len(names) and len(family._classes) < _LAYOUTS_CACHED:
        family._classes[names] = cls
    return cls


@lru_cache(maxsize=_LAYOUTS_CACHED)
def _cached_row_class(family: type[Row], names: tuple[Any, ...], arity: int) -> type[Row]:
    return _new_row_class(family, row_layout(names), arity)


def _new_row_class(family: type[Row], layout: RowLayout, arity: int) -> type[Row]:
    """A subclass of ``family`` whose field names (those that are strings, do not start with
    ``_`` and are no attribute of ``family``) are properties reading a position."""
    namespace: dict[str, Any] = {
        "__slots__": (),
        "__module__": family.__module__,
        "__qualname__": family.__qualname__,
        "__doc__": family.__doc__,
        "_layout": layout,
        "_family": family,
        "_exact": layout.distinct and arity == len(layout.names),
    }
    for name, position in layout.positions.items():
        if (
            isinstance(name, str)
            and position < arity
            and not name.startswith("_")
            and not hasattr(family, name)
        ):
            namespace[name] = _field_property(name, position)
    return type(family.__name__, (family,), namespace)


def _build(
    family: type[Row], names: Sequence[Any] | None, values: tuple[Any, ...], row_kind: RowKind
) -> Row:
    """A row of ``family`` (no per-field checks): ``values`` named ``names`` (or unnamed)."""
    if names is None:
        cls = family
    else:
        names = tuple(names)
        cls = _row_class(family, names, len(values))
    row = _new(cls)
    row._values = values
    row._row_kind = row_kind
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

    Values can be replaced by position or name (``row[0] = 5``, ``row['age'] = 5``), not as
    attributes.
    """

    __slots__ = ("_row_kind", "_values")

    _values: tuple[Any, ...]
    _row_kind: RowKind
    # Set per class: the layout of its rows' names (None: rows without names), the class users
    # name (Row or their subclass of it), and whether rows compare position by position.
    _layout: ClassVar[RowLayout | None] = None
    _family: ClassVar[type[Row]]
    _exact: ClassVar[bool] = False
    # Per family: the class of its rows by field names (as many values as names), interned.
    _classes: ClassVar[dict[tuple[Any, ...], type[Row]]]

    if TYPE_CHECKING:  # fields read as attributes (properties of the class of each layout)

        def __getattr__(self, name: str) -> Any: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_family" not in cls.__dict__:  # a user's subclass, not the class of a layout
            cls._family = cls
            cls._layout = None
            cls._exact = False
            cls._classes = {}

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if args and kwargs:
            raise ValueError(
                "Row takes either positional values or keyword fields, not both; got "
                f"{len(args)} positional and {sorted(kwargs)} keyword arguments. Use "
                "Row(name='a', age=1) or Row('a', 1)"
            )
        family = cls._family
        if kwargs:
            names = tuple(kwargs)
            cls = family._classes.get(names) or _row_class(family, names, len(names))
            row = _new(cls)
            row._values = tuple(kwargs.values())
        else:
            row = _new(family)
            row._values = args
        row._row_kind = _INSERT
        return row

    @classmethod
    def of_values(
        cls, values: Sequence[Any], field_names: Sequence[str] | None = None, row_kind: Any = None
    ) -> Row:
        """A row of ``values`` named by ``field_names`` (fast: no per-field checks).

        >>> Row.of_values([1, 'a'], ['id', 'info'])
        Row(id=1, info='a')
        """
        kind = RowKind.INSERT if row_kind is None else row_kind
        return _build(cls._family, field_names, tuple(values), kind)

    # ------------------------------------------------------------------ PyFlink's methods

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The fields as a dict by name; ``recursive=True`` also turns nested rows into dicts.

        >>> Row(key=1, value=Row(name='a', age=2)).as_dict(recursive=True)
        {'key': 1, 'value': {'name': 'a', 'age': 2}}
        """
        layout = self._layout
        if layout is None:
            raise TypeError(
                "Cannot convert a Row class into dict: this row has no field names; create it "
                "with keyword arguments (Row(name=..., ...)) or call set_field_names(...) first"
            )
        if not recursive:
            return dict(zip(layout.names, self._values, strict=False))

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        return {name: conv(value) for name, value in zip(layout.names, self._values, strict=False)}

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
        self._retype(field_names, len(self._values))

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        """The values of the fields ``names``, in that order.

        >>> Row(a=1, b=2).get_fields_by_names(['b', 'a'])
        [2, 1]
        """
        layout = self._layout
        if layout is None or tuple(names) == layout.names:
            return list(self._values)
        missing = [name for name in names if name not in layout.positions]
        if missing:
            raise ValueError(
                f"Field names {missing} do not exist in {list(layout.names)}; ask for names of "
                "this row"
            )
        values, positions = self._values, layout.positions
        return [values[positions[name]] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """A row of the given kind.

        >>> Row.of_kind(RowKind.UPDATE_AFTER, 1, 2).get_row_kind()
        <RowKind.UPDATE_AFTER: 2>
        """
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    @property
    def _fields(self) -> list[str] | None:
        """The field names as PyFlink keeps them (a new list), ``None`` for a row without."""
        layout = self._layout
        return None if layout is None else list(layout.names)

    @_fields.setter
    def _fields(self, field_names: Sequence[str] | None) -> None:
        self._retype(field_names, len(self._values))

    def _retype(self, field_names: Sequence[str] | None, arity: int) -> None:
        """Moves this row to the class of ``field_names`` and ``arity`` values."""
        family = self._family
        cls = family if field_names is None else _row_class(family, tuple(field_names), arity)
        if type(self) is not cls:
            self.__class__ = cls

    # ------------------------------------------------------------------ container protocol

    def __contains__(self, item: Any) -> bool:
        layout = self._layout
        if layout is not None:
            return item in layout.names
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
        if isinstance(item, int):
            return self._values[item]
        if isinstance(item, slice):
            return list(self._values[item])
        return self._values[self._position_of(item)]

    def __setitem__(self, key: Any, value: Any) -> None:
        if not isinstance(key, (int, slice)):
            key = self._position_of(key)
        values = list(self._values)
        values[key] = value
        arity = len(self._values)
        self._values = tuple(values)
        if len(values) != arity:  # a slice assignment of another length
            self._retype(row_field_names(self), len(values))

    def _position_of(self, name: Any) -> int:
        layout = self._layout
        if layout is None:
            raise ValueError(
                f"this Row has no field names, so field {name!r} cannot be looked up by name; "
                "index it by position or create it with Row(name=value, ...)"
            )
        try:
            return layout.positions[name]
        except (KeyError, TypeError):
            raise ValueError(name) from None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    # ------------------------------------------------------------------ value semantics

    def __reduce__(self) -> tuple[Any, ...]:
        return _create_row, (self._fields, self._values, self._row_kind)

    def __repr__(self) -> str:
        layout = self._layout
        if layout is not None:
            return "Row({})".format(
                ", ".join(f"{k}={v!r}" for k, v in zip(layout.names, self._values, strict=False))
            )
        return "<Row({})>".format(", ".join(repr(v) for v in self._values))

    def _by_sorted_name(self) -> tuple[Any, ...]:
        """The values ordered by field name (``_MISSING`` for a name without a value)."""
        layout = self._layout
        if self._exact:
            key = layout.sorted_key  # type: ignore[union-attr]
            return self._values if key is None else key(self._values)
        names = () if layout is None else layout.names
        by_name = dict(zip(names, self._values, strict=False))
        return tuple(by_name.get(name, _MISSING) for name in sorted(names))

    def __eq__(self, other: object) -> bool:
        if type(self) is type(other):  # same family, names and number of values
            if self._row_kind is not other._row_kind:
                return False
            if self._exact or self._layout is None:
                return self._values == other._values
            return self._by_sorted_name() == other._by_sorted_name()
        if not isinstance(other, Row) or self._family is not other._family:
            return False
        if self._row_kind != other._row_kind:
            return False
        mine, theirs = self._layout, other._layout
        if mine is None or theirs is None:
            return mine is theirs and self._values == other._values
        if sorted(mine.names) != sorted(theirs.names):
            return False
        return self._by_sorted_name() == other._by_sorted_name()

    def __hash__(self) -> int:
        if self._layout is not None:
            return hash(self._by_sorted_name())
        return hash(self._values)


Row._family = Row
Row._classes = {}
