"""Built-in window aggregates: what ``WindowedStream.agg(...)`` computes, by name.

``Agg.count()``, ``Agg.sum(field)``, ``Agg.min(field)``, ``Agg.max(field)`` and
``Agg.avg(field)`` describe one aggregate each; ``windowed.agg(n=Agg.count(), total=...)``
names them, and every window then emits ``Row(key, window_start, window_end, n, total, ...)``.
A field is a position (tuple, list, Row) or a Row field name; on a plain value (a stream of
numbers) field 0 is the value itself.

Null handling is SQL's: ``count`` counts the window's records; ``sum``, ``min``, ``max`` and
``avg`` ignore ``None`` values and give ``None`` when the window has no other value.

>>> Agg.sum("price")
Agg.sum('price')
>>> aggs = named_aggregates({"n": Agg.count(), "mean": Agg.avg("price")})
>>> [(a.name, a.kind.value, a.field) for a in aggs]
[('n', 'count', None), ('mean', 'avg', 'price')]
>>> named_aggregates({"key": Agg.count()})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: aggregate name 'key' clashes with the output field 'key' (the output is ...
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from sparktide.common.types import Row

__all__ = [
    "RESERVED_FIELDS",
    "Agg",
    "Aggregate",
    "AggregateKind",
    "NamedAggregate",
    "check_field",
    "named_aggregates",
    "read_field",
]

RESERVED_FIELDS = ("key", "window_start", "window_end")
"""The fields every named-aggregate row starts with (aggregate names must differ)."""


class AggregateKind(Enum):
    """One named aggregate over a column (``count`` takes no column)."""

    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def check_field(field: object, parameter: str = "field") -> int | str:
    """``field`` if it selects a field: an int position >= 0 or a str name (not a bool).

    >>> check_field(2), check_field("price")
    (2, 'price')
    >>> check_field(True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: field must be an int position or a str field name, got bool True; e.g. ...
    """
    if isinstance(field, bool) or not isinstance(field, (int, str)):
        raise TypeError(
            f"{parameter} must be an int position or a str field name, got "
            f"{type(field).__name__} {field!r}; e.g. key_by(0) or key_by('user')"
        )
    if isinstance(field, int) and field < 0:
        raise ValueError(f"{parameter} must be a position >= 0, got {field}; count fields from 0")
    if isinstance(field, str) and not field:
        raise ValueError(f"{parameter} must be a non-empty field name, got ''")
    return field


def read_field(value: object, field: int | str, where: str) -> object:
    """Field ``field`` of ``value`` (a tuple, list, dict or Row); on a plain value field 0 is
    the value itself. ``where`` names the call in errors.

    >>> read_field(Row(user="a", n=2), "n", "Agg.sum('n')"), read_field(7, 0, "key_by(0)")
    (2, 7)
    >>> read_field(("a", 1), "user", "key_by('user')")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: key_by('user') cannot read field 'user' of tuple ('a', 1): a tuple has ...
    """
    if isinstance(value, (tuple, list, dict, Row)):
        try:
            return value[field]  # type: ignore[index]
        except (TypeError, KeyError, IndexError, ValueError) as e:
            raise _field_error(value, field, where, e) from e
    if field == 0:
        return value
    raise _field_error(value, field, where, None)


def _field_error(value: object, field: int | str, where: str, error: Exception | None) -> TypeError:
    kind = type(value).__name__
    if error is None:
        why = (
            f"a {kind} is a plain value, only field 0 (the value itself) can be selected; "
            "select 0 or use a function"
        )
    elif isinstance(field, str) and isinstance(value, (tuple, list)):
        why = (
            f"a {kind} has positions only; select a position (e.g. 0) or use Rows with named fields"
        )
    else:
        why = f"{type(error).__name__}: {error}"
    return TypeError(f"{where} cannot read field {field!r} of {kind} {value!r}: {why}")


@dataclass(frozen=True)
class Aggregate:
    """One aggregate, not yet named: ``kind`` over ``field`` (``None`` for ``COUNT``).
    Create it with :class:`Agg`."""

    kind: AggregateKind
    field: int | str | None

    def __repr__(self) -> str:
        arg = "" if self.field is None else repr(self.field)
        return f"Agg.{self.kind.value}({arg})"


@dataclass(frozen=True)
class NamedAggregate:
    """``kind`` over ``field`` (``None`` for ``COUNT``), emitted as the output field ``name``."""

    kind: AggregateKind
    field: int | str | None
    name: str

    def __post_init__(self) -> None:
        if (self.field is None) != (self.kind is AggregateKind.COUNT):
            raise ValueError(
                f"aggregate {self.name!r}: {self.kind.value} "
                + ("takes no field" if self.kind is AggregateKind.COUNT else "needs a field")
                + f", got field {self.field!r}; build aggregates with Agg.count(), "
                "Agg.sum(field), Agg.min(field), Agg.max(field) or Agg.avg(field)"
            )


class Agg:
    """The built-in aggregates of ``WindowedStream.agg(name=Agg..., ...)``.

    >>> Agg.count(), Agg.min(1), Agg.avg("delay")
    (Agg.count(), Agg.min(1), Agg.avg('delay'))
    """

    @staticmethod
    def count() -> Aggregate:
        """The number of records in the window (LONG)."""
        return Aggregate(AggregateKind.COUNT, None)

    @staticmethod
    def sum(field: int | str) -> Aggregate:
        """The sum of ``field`` (nulls ignored; None if the window has no value). Integer
        fields give LONG, others keep their type."""
        return Aggregate(AggregateKind.SUM, check_field(field))

    @staticmethod
    def min(field: int | str) -> Aggregate:
        """The smallest value of ``field`` (nulls ignored), of the field's type."""
        return Aggregate(AggregateKind.MIN, check_field(field))

    @staticmethod
    def max(field: int | str) -> Aggregate:
        """The largest value of ``field`` (nulls ignored), of the field's type."""
        return Aggregate(AggregateKind.MAX, check_field(field))

    @staticmethod
    def avg(field: int | str) -> Aggregate:
        """The mean of ``field``'s non-null values (DOUBLE; None if there is none)."""
        return Aggregate(AggregateKind.AVG, check_field(field))


def named_aggregates(aggregates: Mapping[str, object]) -> tuple[NamedAggregate, ...]:
    """The aggregates of ``agg(**aggregates)`` in the given order, with their names checked:
    at least one, each an :class:`Aggregate`, each name a Python identifier that is not one
    of :data:`RESERVED_FIELDS` (keyword arguments cannot repeat a name)."""
    if not aggregates:
        raise ValueError(
            "agg() needs at least one named aggregate, e.g. agg(n=Agg.count(), "
            "total=Agg.sum('price'))"
        )
    out = []
    for name, aggregate in aggregates.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(
                f"aggregate name {name!r} is not a Python identifier; name each aggregate with "
                "letters, digits and underscores, not starting with a digit"
            )
        if name in RESERVED_FIELDS:
            raise ValueError(
                f"aggregate name {name!r} clashes with the output field {name!r} (the output is "
                f"Row(key, window_start, window_end, <aggregates>)); choose another name, e.g. "
                f"'{name}_{getattr(getattr(aggregate, 'kind', None), 'value', 'agg')}'"
            )
        if not isinstance(aggregate, Aggregate):
            raise TypeError(
                f"aggregate {name!r} must be an aggregate made by Agg (Agg.count(), "
                f"Agg.sum(field), Agg.min/max/avg(field)), got {type(aggregate).__name__}"
            )
        out.append(NamedAggregate(aggregate.kind, aggregate.field, name))
    return tuple(out)
