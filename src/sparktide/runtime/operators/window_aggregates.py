"""Built-in window aggregates on the general path: the reference every runner can run.

``count()``/``agg(...)`` (named aggregates) and ``sum``/``min``/``max``/``min_by``/``max_by``
(Flink's record) become a window operator here, in one place, whether the job came with a
declarative key or a lambda: :func:`build_window_aggregate` for a configured builder,
:func:`general_operator` for a :class:`~sparktide.runtime.columnar.spec.WindowAggregateSpec`
(a columnar runner's fallback runs exactly this). :func:`aggregate_spec` decides whether the
window may also run on columns (tumbling or sliding event time, the default trigger, no
evictor, a :class:`FieldKey`).

Named aggregates accumulate all values in one list (:class:`NamedAggregatesFunction`); the
window function (:class:`NamedRowFunction`) emits ``Row(key, window_start, window_end, ...)``.

>>> from sparktide.core.window.aggregates import Agg, named_aggregates
>>> f = NamedAggregatesFunction(named_aggregates(
...     {"n": Agg.count(), "total": Agg.sum(1), "lo": Agg.min(1), "mean": Agg.avg(1)}))
>>> acc = f.create_accumulator()
>>> for v in [("a", 3), ("a", None), ("a", 1)]:
...     acc = f.add(v, acc)
>>> f.get_result(acc)
(3, 4, 1, 2.0)
>>> f.get_result(f.add(("a", None), f.create_accumulator()))
(1, None, None, None)
"""

from __future__ import annotations

from collections.abc import Sequence

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo
from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from sparktide.common.types import Row
from sparktide.core.functions import AggregateFunction
from sparktide.core.window.aggregates import (
    RESERVED_FIELDS,
    AggregateKind,
    NamedAggregate,
    read_field,
)
from sparktide.core.window.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from sparktide.core.window.field_aggregator import KINDS, FieldAggregator
from sparktide.core.window.triggers import EventTimeTrigger
from sparktide.core.window.windows import Window
from sparktide.runtime.columnar.spec import (
    FieldAggregate,
    FieldKey,
    OutputForm,
    WindowAggregateSpec,
)
from sparktide.runtime.operators.window import WindowOperator
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.runtime.operators.window_functions import (
    InternalWindowFunction,
    Results,
    WindowProcessContext,
)

__all__ = [
    "FLINK_RECORD_KINDS",
    "NamedAggregatesFunction",
    "NamedRowFunction",
    "aggregate_spec",
    "build_window_aggregate",
    "field_type",
    "general_operator",
    "named_row_type",
]

FLINK_RECORD_KINDS = KINDS  # Flink's field aggregates (FieldAggregate.kind)

_INTEGERS = frozenset(
    {BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG, BasicType.BIG_INT}
)
_NUMBERS = _INTEGERS | {BasicType.FLOAT, BasicType.DOUBLE, BasicType.BIG_DEC}


# ---------------------------------------------------------------------------------- types


def field_type(
    stream_type: TypeInformation | None, field: int | str, where: str
) -> TypeInformation | None:
    """The type of ``field`` in a stream of ``stream_type`` (None when the stream's type does
    not say), or a clear error when the type shows there is no such field.

    >>> row = Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.INT()])
    >>> field_type(row, "n", "key_by"), field_type(row, 0, "key_by"), field_type(None, 3, "x")
    (Integer, String, None)
    >>> field_type(row, "price", "Agg.sum('price')")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Agg.sum('price'): the stream's type RowTypeInfo(user: String, n: Integer) ...
    """
    if isinstance(stream_type, RowTypeInfo):
        types = stream_type.get_field_types()
        if isinstance(field, str):
            index = stream_type.get_field_index(field)
            if index < 0:
                raise ValueError(
                    f"{where}: the stream's type {stream_type!r} has no field {field!r}; its "
                    f"fields are {stream_type.get_field_names()}"
                )
            return types[index]
        return _positional(stream_type, types, field, where)
    if isinstance(stream_type, TupleTypeInfo):
        types = stream_type.get_field_types()
        if isinstance(field, str):
            raise ValueError(
                f"{where}: the stream's type {stream_type!r} is a tuple, whose fields have "
                f"positions, not names; select a position 0..{len(types) - 1}"
            )
        return _positional(stream_type, types, field, where)
    if isinstance(stream_type, BasicTypeInfo):
        if field != 0:
            raise ValueError(
                f"{where}: the stream's type {stream_type!r} is a plain value, only field 0 "
                "(the value itself) can be selected"
            )
        return stream_type
    return None


def _positional(
    stream_type: TypeInformation, types: Sequence[TypeInformation], field: int, where: str
) -> TypeInformation:
    if field >= len(types):
        raise ValueError(
            f"{where}: position {field} is out of range for the stream's type {stream_type!r} "
            f"({len(types)} fields, positions 0..{len(types) - 1})"
        )
    return types[field]


def _aggregate_type(
    aggregate: NamedAggregate, stream_type: TypeInformation | None
) -> TypeInformation:
    kind = aggregate.kind
    if aggregate.field is None:  # COUNT, the one kind without a field (NamedAggregate checks)
        return Types.LONG()
    where = f"Agg.{kind.value}({aggregate.field!r}) (as {aggregate.name!r})"
    of_field = field_type(stream_type, aggregate.field, where)
    basic = of_field.basic_type if isinstance(of_field, BasicTypeInfo) else None
    numeric = kind in (AggregateKind.SUM, AggregateKind.AVG)
    if numeric and of_field is not None and basic not in _NUMBERS:
        raise TypeError(
            f"{where}: field {aggregate.field!r} is {of_field!r}, not a number; "
            f"{kind.value} needs a numeric field (min/max/count work on any type)"
        )
    if kind is AggregateKind.AVG:
        return Types.DOUBLE()
    if of_field is None:
        return Types.PICKLED_BYTE_ARRAY()
    if basic in _INTEGERS:
        return Types.LONG()
    return of_field


def named_row_type(
    aggregates: Sequence[NamedAggregate],
    key_type: TypeInformation | None,
    stream_type: TypeInformation | None,
) -> RowTypeInfo:
    """``ROW_NAMED(["key", "window_start", "window_end", <names>], ...)``: the key's type
    (``PICKLED_BYTE_ARRAY`` if unknown), LONG window bounds, then per aggregate: count LONG,
    avg DOUBLE, sum/min/max the field's type (integer fields: LONG).

    >>> from sparktide.core.window.aggregates import Agg, named_aggregates
    >>> row = Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.INT()])
    >>> named_row_type(named_aggregates({"c": Agg.count(), "s": Agg.sum("n")}),
    ...                Types.STRING(), row)
    RowTypeInfo(key: String, window_start: Long, window_end: Long, c: Long, s: Long)
    """
    names = [*RESERVED_FIELDS, *(a.name for a in aggregates)]
    types = [
        key_type if key_type is not None else Types.PICKLED_BYTE_ARRAY(),
        Types.LONG(),
        Types.LONG(),
        *(_aggregate_type(a, stream_type) for a in aggregates),
    ]
    return Types.ROW_NAMED(names, types)


# ---------------------------------------------------------------------------------- functions


class NamedAggregatesFunction(AggregateFunction):
    """The accumulator of named aggregates: ``[records, slot, ...]``, one slot per aggregate
    (two for ``avg``: sum and count of non-null values). ``get_result`` gives one value per
    aggregate, in order. Nulls are skipped (SQL); an aggregate with no value gives None."""

    def __init__(self, aggregates: Sequence[NamedAggregate]) -> None:
        # (kind, field, slot) per aggregate over a field; each field is read once per record
        plan: list[tuple[AggregateKind, int | str, int]] = []
        results: list[tuple[AggregateKind, int]] = []
        slot = 1
        for a in aggregates:
            if a.field is None:  # COUNT, the one kind without a field (NamedAggregate checks)
                results.append((a.kind, 0))
                continue
            plan.append((a.kind, a.field, slot))
            results.append((a.kind, slot))
            slot += 2 if a.kind is AggregateKind.AVG else 1
        fields = list(dict.fromkeys(f for _, f, _ in plan))
        self._fields = tuple((f, f"agg() over field {f!r}") for f in fields)
        self._plan = tuple((k, fields.index(f), s) for k, f, s in plan)
        self._results = tuple(results)
        self._slots = slot
        self._avg_slots = tuple(s for k, _, s in plan if k is AggregateKind.AVG)

    def create_accumulator(self) -> list[object]:
        acc: list[object] = [None] * self._slots
        acc[0] = 0
        for s in self._avg_slots:
            acc[s + 1] = 0
        return acc

    def add(self, value: object, accumulator: list[object]) -> list[object]:
        acc = accumulator
        acc[0] += 1  # type: ignore[operator]
        if not self._plan:
            return acc
        values = [read_field(value, field, where) for field, where in self._fields]
        for kind, index, slot in self._plan:
            v = values[index]
            if v is None:
                continue
            old = acc[slot]
            if kind is AggregateKind.SUM or kind is AggregateKind.AVG:
                acc[slot] = v if old is None else old + v  # type: ignore[operator]
                if kind is AggregateKind.AVG:
                    acc[slot + 1] += 1  # type: ignore[operator]
            elif kind is AggregateKind.MIN:
                if old is None or v < old:  # type: ignore[operator]
                    acc[slot] = v
            elif old is None or v > old:  # type: ignore[operator]
                acc[slot] = v
        return acc

    def get_result(self, accumulator: list[object]) -> tuple[object, ...]:
        acc = accumulator
        out: list[object] = []
        for kind, slot in self._results:
            if kind is AggregateKind.AVG:
                n = acc[slot + 1]
                out.append(None if not n else acc[slot] / n)  # type: ignore[operator]
            else:
                out.append(acc[slot])
        return tuple(out)

    def merge(self, acc_a: list[object], acc_b: list[object]) -> list[object]:
        out = list(acc_a)
        out[0] = acc_a[0] + acc_b[0]  # type: ignore[operator]
        for kind, _, slot in self._plan:
            a, b = acc_a[slot], acc_b[slot]
            if b is None:
                continue
            if a is None:
                out[slot] = b
            elif kind is AggregateKind.SUM or kind is AggregateKind.AVG:
                out[slot] = a + b  # type: ignore[operator]
            elif kind is AggregateKind.MIN:
                out[slot] = b if b < a else a  # type: ignore[operator]
            else:
                out[slot] = b if b > a else a  # type: ignore[operator]
            if kind is AggregateKind.AVG:
                out[slot + 1] = acc_a[slot + 1] + acc_b[slot + 1]  # type: ignore[operator]
        return out


class NamedRowFunction(InternalWindowFunction):
    """Emits ``Row(key, window_start, window_end, *results)`` for a window's aggregated
    results (a window without bounds, such as ``GlobalWindow``, gives None for both; a
    non-keyed window, ``window_all``, has the key None)."""

    __slots__ = ("_keyed", "_names")

    def __init__(self, aggregates: Sequence[NamedAggregate], *, keyed: bool = True) -> None:
        super().__init__(None)
        self._names = [*RESERVED_FIELDS, *(a.name for a in aggregates)]
        self._keyed = keyed

    def process(
        self, key: object, window: Window, ctx: WindowProcessContext, contents: object
    ) -> Results:
        start = getattr(window, "start", None)
        end = getattr(window, "end", None)
        values = contents if isinstance(contents, tuple) else (contents,)
        row = [key if self._keyed else None, start, end, *values]
        return (Row.of_values(row, self._names),)


# ---------------------------------------------------------------------------------- building


def build_window_aggregate(
    builder: WindowOperatorBuilder,
    form: OutputForm,
    field_aggregate: FieldAggregate | None,
    aggregates: Sequence[NamedAggregate],
) -> WindowOperator:
    """The general window operator of a built-in aggregate (the one place it is built):
    Flink's record (``FLINK_RECORD``: the ``FieldAggregator`` reduce) or the named row
    (``NAMED_ROW``: :class:`NamedAggregatesFunction` + :class:`NamedRowFunction`)."""
    if form is OutputForm.FLINK_RECORD:
        if field_aggregate is None:
            raise ValueError("a FLINK_RECORD aggregate needs its field_aggregate")
        return builder.reduce(FieldAggregator(field_aggregate.field, field_aggregate.kind))
    return builder.aggregate_with(
        NamedAggregatesFunction(aggregates), NamedRowFunction(aggregates, keyed=builder.keyed)
    )


def general_operator(spec: WindowAggregateSpec) -> WindowOperator:
    """The general (per-record) window operator of ``spec``: what a runner runs when it does
    not run the spec on columns, and the reference a columnar run must equal.

    >>> from sparktide.core.window.aggregates import Agg, named_aggregates
    >>> aggs = named_aggregates({"n": Agg.count()})
    >>> spec = WindowAggregateSpec(FieldKey(0), 10, 10, 0, 0, None, OutputForm.NAMED_ROW,
    ...                            None, aggs, named_row_type(aggs, None, None))
    >>> type(general_operator(spec)).__name__
    'WindowOperator'
    """
    if spec.slide_ms == spec.size_ms:
        assigner: object = TumblingEventTimeWindows.of(spec.size_ms, spec.offset_ms)
    else:
        assigner = SlidingEventTimeWindows.of(spec.size_ms, spec.slide_ms, spec.offset_ms)
    builder = WindowOperatorBuilder(assigner)  # type: ignore[arg-type]
    builder.set_allowed_lateness(spec.allowed_lateness_ms)
    if spec.late_tag is not None:
        builder.set_late_data_output_tag(spec.late_tag)
    return build_window_aggregate(builder, spec.form, spec.field_aggregate, spec.aggregates)


def aggregate_spec(
    builder: WindowOperatorBuilder,
    key: object,
    form: OutputForm,
    field_aggregate: FieldAggregate | None,
    aggregates: Sequence[NamedAggregate],
    output_type: TypeInformation | None,
) -> WindowAggregateSpec | None:
    """The spec of a built-in aggregate when a runner may run it on columns: a tumbling or
    sliding event-time assigner, the default trigger (``EventTimeTrigger``), no evictor and a
    :class:`FieldKey`; None otherwise (the general operator runs)."""
    assigner = builder.assigner
    if not isinstance(key, FieldKey) or not builder.keyed or builder.evictor is not None:
        return None
    if type(builder.trigger) is not EventTimeTrigger:
        return None
    if type(assigner) is TumblingEventTimeWindows:
        size = slide = assigner.get_size()
        offset = assigner.get_offset()
    elif type(assigner) is SlidingEventTimeWindows:
        size, slide, offset = assigner.get_size(), assigner.get_slide(), assigner.get_offset()
    else:
        return None
    return WindowAggregateSpec(
        key=key,
        size_ms=size,
        slide_ms=slide,
        offset_ms=offset,
        allowed_lateness_ms=builder.allowed_lateness,
        late_tag=builder.late_data_output_tag,
        form=form,
        field_aggregate=field_aggregate,
        aggregates=tuple(aggregates),
        output_type=output_type,
    )
