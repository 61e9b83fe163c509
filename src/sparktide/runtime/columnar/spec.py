"""Declarative keys and window aggregates: what a runner may execute on columns.

A job written with ``key_by("field")`` (or ``key_by(index)``) and a built-in window aggregate
(``count()``, ``sum``/``min``/``max``/``min_by``/``max_by(field)``, or several named aggregates
at once) says *what* it computes, not *how*: the builders record it as a
:class:`WindowAggregateSpec` on the window operator's node (``Node.window_aggregate``). Every
runner can run the node's general operator (a ``WindowOperator`` built from the spec, one record
at a time); a runner that can read the key and the aggregated fields as columns may instead
run the spec on Arrow arrays, with exactly the general operator's output.

>>> key = FieldKey("airport")
>>> from sparktide.common.types import Row
>>> key.get_key(Row(airport="JFK", delay=3))
'JFK'
>>> FieldKey(0).get_key(("a", 1))
'a'
>>> spec = NamedAggregate(AggregateKind.AVG, "delay", "mean_delay")
>>> spec.name, spec.kind.value
('mean_delay', 'avg')
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from enum import Enum
from typing import TYPE_CHECKING

from sparktide.common.types import is_row_class, row_field_names, row_layout, row_values
from sparktide.core.window.aggregates import (
    AggregateKind,
    NamedAggregate,
    check_field,
    read_field,
)

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.core.output_tag import OutputTag

__all__ = [
    "AggregateKind",
    "FieldAggregate",
    "FieldKey",
    "NamedAggregate",
    "OutputForm",
    "WindowAggregateSpec",
]


_ROW_CLASSES_REMEMBERED = 64
"""Row classes (one per schema) whose field position a :class:`FieldKey` remembers."""


@dataclass(frozen=True)
class FieldKey:
    """A key selector that reads one field: a position (tuple, list, Row) or a Row field
    name. Unlike a lambda, a runner can read it as a column. On a plain value (not a tuple,
    list or Row) field 0 is the value itself, as for ``sum(0)``.

    >>> FieldKey("user").get_key(("a", 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: key_by('user') cannot read field 'user' of tuple ('a', 1): a tuple has ...
    """

    field: int | str
    # row class -> the field's position in its rows' values: the selector runs per record
    _positions: dict[type, int] = dataclass_field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        check_field(self.field, "key_by's field")

    def get_key(self, value: object) -> object:
        """The key of ``value``: its field (read once per row class by position)."""
        position = self._positions.get(type(value))
        if position is not None:
            return row_values(value)[position]  # type: ignore[arg-type]
        return self._read(value)

    def _read(self, value: object) -> object:
        """The key of ``value`` through :func:`read_field` (which names a wrong field); a plain
        Row class's position of the field is remembered."""
        key = read_field(value, self.field, f"key_by({self.field!r})")
        cls = type(value)
        if is_row_class(cls) and len(self._positions) < _ROW_CLASSES_REMEMBERED:
            names = row_field_names(cls)  # type: ignore[arg-type]
            field = self.field
            if isinstance(field, int):
                position: int | None = field
            else:
                position = None if names is None else row_layout(names).positions.get(field)
            if position is not None and position < len(row_values(value)):  # type: ignore[arg-type]
                self._positions[cls] = position
        return key

    __call__ = get_key

    def __reduce__(self) -> tuple[type[FieldKey], tuple[int | str]]:
        return (FieldKey, (self.field,))  # without the remembered positions (row classes)


class OutputForm(Enum):
    """What a window emits."""

    # Flink's sum/min/max/min_by/max_by: the window's first record with the field aggregated
    # (min_by/max_by: the first record holding the extreme)
    FLINK_RECORD = "flink_record"
    # Row(key, window_start, window_end, <one field per NamedAggregate>), typed ROW_NAMED
    NAMED_ROW = "named_row"


@dataclass(frozen=True)
class FieldAggregate:
    """Flink's field aggregate: ``kind`` (``sum``, ``min``, ``max``, ``min_by``, ``max_by``)
    over ``field``."""

    kind: str
    field: int | str


@dataclass(frozen=True)
class WindowAggregateSpec:
    """A keyed event-time window aggregate with the default trigger and no evictor.

    ``size_ms``/``slide_ms``/``offset_ms`` are the assigner's (tumbling: ``slide_ms ==
    size_ms``). ``form`` says which of ``field_aggregate`` (``FLINK_RECORD``) or
    ``aggregates`` (``NAMED_ROW``) applies. ``late_tag``: the late-data side output, if any.
    ``output_type``: the type of what the window emits (``ROW_NAMED`` for ``NAMED_ROW``).
    Builders make it (``WindowedStream``); a spec that contradicts itself is a ValueError.

    >>> count = NamedAggregate(AggregateKind.COUNT, None, "count")
    >>> spec = WindowAggregateSpec(FieldKey("user"), 3_600_000, 300_000, 0, 0, None,
    ...                            OutputForm.NAMED_ROW, None, (count,), None)
    >>> spec.sliding, spec.panes_per_window
    (True, 12)
    >>> WindowAggregateSpec(FieldKey(0), 10, 10, 0, 0, None, OutputForm.FLINK_RECORD, None,
    ...                     (), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: a FLINK_RECORD spec needs a field_aggregate and no named aggregates, ...
    """

    key: FieldKey
    size_ms: int
    slide_ms: int
    offset_ms: int
    allowed_lateness_ms: int
    late_tag: OutputTag | None
    form: OutputForm
    field_aggregate: FieldAggregate | None
    aggregates: tuple[NamedAggregate, ...]
    output_type: TypeInformation | None

    def __post_init__(self) -> None:
        if not isinstance(self.key, FieldKey):
            raise TypeError(f"key must be a FieldKey, got {type(self.key).__name__}")
        for name in ("size_ms", "slide_ms"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ValueError(f"{name} must be an int > 0, got {value!r}")
        if type(self.offset_ms) is not int or abs(self.offset_ms) >= self.slide_ms:
            raise ValueError(
                f"offset_ms must be an int with abs(offset_ms) < slide_ms ({self.slide_ms}), "
                f"got {self.offset_ms!r}"
            )
        if type(self.allowed_lateness_ms) is not int or self.allowed_lateness_ms < 0:
            raise ValueError(
                f"allowed_lateness_ms must be an int >= 0, got {self.allowed_lateness_ms!r}"
            )
        if self.form is OutputForm.FLINK_RECORD:
            if self.field_aggregate is None or self.aggregates:
                raise ValueError(
                    "a FLINK_RECORD spec needs a field_aggregate and no named aggregates, got "
                    f"{self.field_aggregate!r} and {self.aggregates!r}"
                )
        elif self.field_aggregate is not None or not self.aggregates:
            raise ValueError(
                "a NAMED_ROW spec needs named aggregates and no field_aggregate, got "
                f"{self.aggregates!r} and {self.field_aggregate!r}"
            )

    @property
    def sliding(self) -> bool:
        """Whether windows overlap or leave gaps (``slide_ms != size_ms``)."""
        return self.slide_ms != self.size_ms

    @property
    def panes_per_window(self) -> int:
        """How many slides a window spans when the slide divides the size (Flink's panes:
        pre-aggregate per slide, combine this many per window); 0 when it does not."""
        whole, rest = divmod(self.size_ms, self.slide_ms)
        return whole if rest == 0 else 0
