"""A tumbling window aggregate in Spark's own engine, when no record can be late.

The columnar path (:mod:`sparktide.spark.columnar_job`) sorts a split's records into
**normal** ones, whose earliest window ends after the split's own watermark when they are read
(neither late nor firing a window on arrival), and the rest, which need the window operator's
per-record rules. When *every* record of a bounded job is normal, nothing depends on when a
window fires: each (key, window) fires exactly once, with the aggregate of all its records, and
the output is Spark's own ``groupBy(key, window)`` over the source. This module checks that,
then builds that query:

1. one small Spark job reads the timestamp column and, per split (source partition) and round
   (``watermark_every`` rows), the lowest and highest timestamp and the null counts;
2. the driver replays each split's periodic watermarks over those rounds, exactly as
   :class:`~sparktide.runtime.columnar.split.SplitAggregator` emits them, and tests the lowest
   timestamp of every round against the watermark before it;
3. if every round is normal (and no value the per-record path refuses is null), the result is a
   lazy ``groupBy`` of the source: codegen, Spark's partial aggregation, no Python worker.

Otherwise :func:`sql_frame` returns ``None`` and the job keeps the columnar path. Flink's record
(``sum``/``min``/``max(field)``) is the window's first record by position
``(round, split, row)``, the per-record path's arrival order, with the field aggregated.

Only unordered output is built here (``to_dataframe(ordered=False)``): a row's position is when
its window fires, which this query does not compute. Tumbling windows over integer timestamps
and fields qualify, with the columnar path's integer or string keys (float sums depend on their
order; sliding windows run faster on the columnar path's panes than in Spark's exploded
windows). The option ``sparktide.execution.columnar`` = ``python`` keeps every job on the
columnar path in Python (the path choice, :mod:`sparktide.runtime.execution.path`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sparktide.runtime.columnar.spec import AggregateKind, OutputForm, WindowAggregateSpec
from sparktide.runtime.columnar.split import SplitPlan
from sparktide.runtime.elements import MIN_TIMESTAMP

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.group import GroupedData
    from pyspark.sql.types import StructType

__all__ = ["SPLIT_ROWS", "RoundStats", "all_normal", "sql_frame"]

SPLIT_ROWS = 33
"""Bits of a row's index within its partition in ``monotonically_increasing_id()``."""

_POSITION_ROUNDS = 1 << 30
"""Rounds × splits below this: a position ``(round, split, row)`` fits one ``long``."""


@dataclass(frozen=True)
class RoundStats:
    """One round of one split: its lowest and highest timestamp."""

    split: int
    round: int
    min_ts: int
    max_ts: int


def all_normal(plan: SplitPlan, rounds: list[RoundStats]) -> bool:
    """Whether every record of every round is normal: its earliest window's ``max_timestamp``
    lies after the split's watermark when the round is read (the periodic watermarks of the
    split's earlier rounds, as :class:`~sparktide.runtime.columnar.split.SplitAggregator`
    emits them).

    >>> from sparktide.runtime.columnar.windows import WindowGeometry
    >>> plan = SplitPlan(WindowGeometry(10, 10, 0), "k", "ts", (), ("k", "ts"), 2, 3, 1, 128)
    >>> all_normal(plan, [RoundStats(0, 0, 0, 25), RoundStats(0, 1, 20, 30)])
    True
    >>> all_normal(plan, [RoundStats(0, 0, 0, 25), RoundStats(0, 1, 19, 30)])  # [10, 20) fired
    False
    """
    if plan.bound is None:  # no watermarks: nothing is ever late
        return True
    by_split: dict[int, list[RoundStats]] = {}
    for stats in rounds:
        by_split.setdefault(stats.split, []).append(stats)
    for split_rounds in by_split.values():
        split_rounds.sort(key=lambda s: s.round)
        emitted = MIN_TIMESTAMP
        high = MIN_TIMESTAMP + plan.bound + 1
        lows: list[int] = []
        marks: list[int] = []
        for stats in split_rounds:
            lows.append(stats.min_ts)
            marks.append(emitted)
            high = max(high, stats.max_ts)  # every round but the last is full: it emits
            emitted = max(emitted, high - plan.bound - 1)
        earliest = plan.geometry.earliest_max_timestamps(np.asarray(lows, np.int64))
        if not bool((earliest > np.asarray(marks, np.int64)).all()):
            return False
    return True


def sql_frame(
    prepared: DataFrame,
    plan: SplitPlan,
    spec: WindowAggregateSpec,
    slots: tuple[int, ...],
    output: pa.Schema,
    parallelism: int,
) -> DataFrame | None:
    """The job's main output as Spark's own aggregate of ``prepared`` (the source's
    DataFrame), or ``None`` when some record may be late or the job does not qualify (see the
    module docstring); ``slots[j]``: the field of ``plan`` that named aggregate ``j`` reads.
    Runs the small Spark job of step 1. Both aggregates run their reduce side in
    ``parallelism`` tasks (the window operator's subtasks), whatever
    ``spark.sql.shuffle.partitions`` is: the session keeps coalescing off, and 200 tasks of a
    few rows each would cost more than the aggregate."""
    from pyspark.sql import functions as F

    schema = prepared.schema
    if not _qualifies(schema, plan, spec, output):
        return None
    ts = _col(plan.timestamp)
    refused = [plan.timestamp, plan.key] + (list(plan.fields) if plan.records else [])
    refused = [c for c in dict.fromkeys(refused) if schema[c].nullable]
    round_ = F.expr(f"_i div {plan.every}") if plan.every else F.lit(0)
    nulls = [F.count(F.lit(1)).alias("n")] if refused else []
    nulls += [F.count(_col(c)).alias(f"nn{i}") for i, c in enumerate(refused)]
    stats = (
        _indexed(prepared.select(ts, *map(_col, refused)))
        .groupBy("_s", round_.alias("_r"))
        .agg(F.min(ts).alias("lo"), F.max(ts).alias("hi"), *nulls)
        .coalesce(parallelism)
        .collect()
    )
    if any(row[f"nn{i}"] != row["n"] for row in stats for i in range(len(refused))):
        return None  # the columnar path names the null value
    rounds = [RoundStats(row["_s"], row["_r"], row["lo"], row["hi"]) for row in stats]
    if not all_normal(plan, rounds):
        return None
    start = ts - F.pmod(ts - F.lit(spec.offset_ms), F.lit(spec.size_ms))
    if spec.form is OutputForm.NAMED_ROW:
        grouped = prepared.groupBy(_col(plan.key).alias("_k"), start.alias("_w"))
        return _named(grouped, plan, spec, slots, output).coalesce(parallelism)
    splits = 1 + max((r.split for r in rounds), default=0)
    most = 1 + max((r.round for r in rounds), default=0)
    if most * splits >= _POSITION_ROUNDS:
        return None
    position = (round_ * splits + F.col("_s")) * F.lit(1 << SPLIT_ROWS) + F.col("_i")
    grouped = _indexed(prepared).groupBy(_col(plan.key).alias("_k"), start.alias("_w"))
    return _record(grouped, plan, spec, output, position).coalesce(parallelism)


def _indexed(frame: DataFrame) -> DataFrame:
    """``frame`` with each row's split ``_s`` (its partition) and index ``_i`` in it."""
    from pyspark.sql import functions as F

    index = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << SPLIT_ROWS) - 1))
    return frame.select("*", F.spark_partition_id().alias("_s"), index.alias("_i"))


def _aggregate(kind: str, column: Column) -> Column:
    """SQL's ``sum``, ``min`` or ``max`` of ``column``."""
    from pyspark.sql import functions as F

    functions: dict[str, Callable[[Column], Column]] = {"sum": F.sum, "min": F.min, "max": F.max}
    return functions[kind](column)


def _qualifies(
    schema: StructType, plan: SplitPlan, spec: WindowAggregateSpec, output: pa.Schema
) -> bool:
    """Tumbling windows, integer timestamps and fields; Flink's record
    only for ``sum``/``min``/``max`` (``min_by``/``max_by`` order by a value and a position,
    which Spark's hash aggregate cannot hold) and with fixed-width columns."""
    from pyspark.sql import types as T

    if spec.sliding:
        return False
    names = set(schema.fieldNames())
    integral = [plan.timestamp, *plan.fields]
    if plan.key not in names or any(c not in names for c in integral):
        return False
    if not all(isinstance(schema[c].dataType, T.IntegralType) for c in integral):
        return False
    if spec.field_aggregate is None:
        return True
    fixed = (T.NumericType, T.BooleanType, T.DateType, T.TimestampType)
    carried = [f.name for f in output if f.name not in (plan.key, plan.fields[0])]
    return spec.field_aggregate.kind in ("sum", "min", "max") and all(
        c in names and isinstance(schema[c].dataType, fixed) for c in carried
    )


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"`{name}`")


def _named(
    grouped: GroupedData,
    plan: SplitPlan,
    spec: WindowAggregateSpec,
    slots: tuple[int, ...],
    output: pa.Schema,
) -> DataFrame:
    """``Row(key, window_start, window_end, <aggregates>)``: an aggregate over no value that
    is not null is null, as SQL's."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    aggregates = []
    for agg, slot in zip(spec.aggregates, slots, strict=True):
        if agg.kind is AggregateKind.COUNT:
            aggregates.append(F.count(F.lit(1)))
            continue
        field = _col(plan.fields[slot])
        if agg.kind is AggregateKind.AVG:
            total, present = F.sum(field).cast("double"), F.count(field).cast("double")
            aggregates.append(F.try_divide(total, present))  # no value: null
        else:
            aggregates.append(_aggregate(agg.kind.value, field))
    frame = grouped.agg(*[a.alias(f"_a{j}") for j, a in enumerate(aggregates)])
    values = [
        F.col("_k"),
        F.col("_w"),
        F.col("_w") + F.lit(spec.size_ms),
        *[F.col(f"_a{j}") for j in range(len(aggregates))],
    ]
    return frame.select(
        *[
            v.cast(from_arrow_type(f.type)).alias(f.name)
            for v, f in zip(values, output, strict=True)
        ]
    )


def _record(
    grouped: GroupedData,
    plan: SplitPlan,
    spec: WindowAggregateSpec,
    output: pa.Schema,
    position: Column,
) -> DataFrame:
    """Flink's record (``sum``/``min``/``max``): the window's first record with the field
    aggregated. Every other column is its value at the lowest position (``min_by`` over a
    fixed-width value keeps Spark's hash aggregate), the key the group's."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    field = plan.fields[0]
    kind = spec.field_aggregate.kind if spec.field_aggregate is not None else "sum"
    carried = [f.name for f in output if f.name not in (field, plan.key)]
    frame = grouped.agg(
        _aggregate(kind, _col(field)).alias("_v"),
        *[F.min_by(_col(c), position).alias(f"_c{j}") for j, c in enumerate(carried)],
    )
    value = {plan.key: F.col("_k"), field: F.col("_v")}  # keyed by the field: its aggregate
    value.update({c: F.col(f"_c{j}") for j, c in enumerate(carried)})
    return frame.select(
        *[value[f.name].cast(from_arrow_type(f.type)).alias(f.name) for f in output]
    )
