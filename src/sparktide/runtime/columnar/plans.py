"""The plans of a columnar window aggregate, from its spec and its source's columns: what each
split reads and pre-aggregates (:class:`~sparktide.runtime.columnar.split.SplitPlan`) and what
each subtask merges and fires (:class:`~sparktide.runtime.columnar.engine.EnginePlan`). Bounded
and streaming runs build them here.

>>> column_of(["k", "ts", "v"], 2), column_of(["k", "ts", "v"], "w")
('v', None)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from sparktide.runtime.columnar.engine import EnginePlan
from sparktide.runtime.columnar.spec import AggregateKind, WindowAggregateSpec
from sparktide.runtime.columnar.split import AGGREGATES, SplitPlan
from sparktide.runtime.columnar.windows import WindowGeometry

__all__ = ["ColumnarPlans", "column_of", "held_aggregates"]


def column_of(columns: Sequence[str], field: int | str | None) -> str | None:
    """The source column a field selects (a name or a position), or None."""
    if isinstance(field, str):
        return field if field in columns else None
    if isinstance(field, int) and 0 <= field < len(columns):
        return columns[field]
    return None


def held_aggregates(
    spec: WindowAggregateSpec, fields: tuple[str, ...], slots: tuple[int, ...], by: str | None
) -> tuple[tuple[str, ...], ...]:
    """Per aggregated field, what its partials must hold (see ``AGGREGATES``): Flink's record
    needs its one aggregate (nulls fail there); named aggregates count the values that are not
    null, and add the sum (``sum``, ``avg``), minimum or maximum they read."""
    record = spec.field_aggregate
    if record is not None:
        return ((by or record.kind,),)
    wanted: list[set[str]] = [{"nn"} for _ in fields]
    for agg, slot in zip(spec.aggregates, slots, strict=True):
        if slot >= 0:
            kind = agg.kind.value
            wanted[slot].add("sum" if kind in ("sum", "avg") else kind)
    return tuple(tuple(a for a in AGGREGATES if a in held) for held in wanted)


@dataclass(frozen=True)
class ColumnarPlans:
    """The aggregated ``fields``, each aggregate's index into them (``slots``; ``-1`` for
    ``count``), the source ``columns`` the splits read, and the two plans."""

    fields: tuple[str, ...]
    slots: tuple[int, ...]
    columns: tuple[str, ...]
    split: SplitPlan
    engine: EnginePlan

    @classmethod
    def of(
        cls,
        spec: WindowAggregateSpec,
        source_columns: Sequence[str],
        timestamp: str,
        *,
        bound: int | None,
        every: int | None,
        parallelism: int,
        max_parallelism: int,
        splits: int,
        late_rows: bool,
        source: str = "from_dataframe",
        operator: str = "Window",
    ) -> ColumnarPlans:
        """The plans of ``spec`` over a source of ``source_columns``; ``late_rows``: a sink
        reads the late side output (whole rows travel then)."""
        fields: list[str] = []
        slots: list[int] = []
        for agg in spec.aggregates:
            name = column_of(source_columns, agg.field)
            if agg.kind is AggregateKind.COUNT or name is None:
                slots.append(-1)
                continue
            if name not in fields:
                fields.append(name)
            slots.append(fields.index(name))
        record = spec.field_aggregate  # Flink's record: one field
        if record is not None:
            fields = [cast(str, column_of(source_columns, record.field))]
        by = record.kind[:3] if record is not None and record.kind.endswith("_by") else None
        aggregates = held_aggregates(spec, tuple(fields), tuple(slots), by)
        key = column_of(source_columns, spec.key.field) or ""
        # whole rows travel only for Flink's record and the late side output; otherwise the
        # splits read just the key, the timestamp and the aggregated fields
        whole = record is not None or late_rows
        wanted = {key, timestamp, *fields}
        columns = tuple(c for c in source_columns if whole or c in wanted)
        geometry = WindowGeometry(spec.size_ms, spec.slide_ms, spec.offset_ms)
        split = SplitPlan(
            geometry,
            key,
            timestamp,
            tuple(fields),
            columns,
            bound,
            every,
            parallelism,
            max_parallelism,
            records=record is not None,
            by=by,
            aggregates=aggregates,
            source=source,
            operator=operator,
        )
        engine = EnginePlan(
            geometry,
            spec.allowed_lateness_ms,
            splits,
            len(fields),
            spec.late_tag is not None,  # counted as side output even when unread
            records=record is not None,
            by=by,
            aggregate=record.kind if record is not None and by is None else "sum",
            field_name=fields[0] if record is not None else "",
            aggregates=aggregates,
            key_name=key,
            columns=columns,
        )
        return cls(tuple(fields), tuple(slots), columns, split, engine)
