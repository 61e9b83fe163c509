"""Jobs for the columnar tests: the same window aggregate run by the columnar path and by the
per-record path (``SPARKTIDE_COLUMNAR=off``), on a DataFrame with columns ``k`` (key), ``v``
(a long) , ``x`` (a double) and ``ts`` (epoch ms)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sparktide.common import Duration, Time, Types, WatermarkStrategy
from sparktide.common.types import Row
from sparktide.core.functions import AggregateFunction
from sparktide.core.output_tag import OutputTag
from sparktide.core.window.functions import ProcessWindowFunction
from sparktide.runtime.columnar.spec import (
    AggregateKind,
    FieldKey,
    NamedAggregate,
    OutputForm,
    WindowAggregateSpec,
)
from sparktide.spark.columnar_job import SWITCH

SCHEMA = "k string, v long, x double, ts long"
LATE = OutputTag(
    "late",
    Types.ROW_NAMED(
        ["k", "v", "x", "ts"], [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.LONG()]
    ),
)

AGGREGATES = (
    NamedAggregate(AggregateKind.COUNT, None, "n"),
    NamedAggregate(AggregateKind.SUM, "v", "total"),
    NamedAggregate(AggregateKind.MIN, "v", "low"),
    NamedAggregate(AggregateKind.MAX, "x", "high"),
    NamedAggregate(AggregateKind.AVG, "x", "mean"),
)
OUTPUT = Types.ROW_NAMED(
    ["key", "window_start", "window_end", "n", "total", "low", "high", "mean"],
    [
        Types.STRING(),
        Types.LONG(),
        Types.LONG(),
        Types.LONG(),
        Types.LONG(),
        Types.LONG(),
        Types.DOUBLE(),
        Types.DOUBLE(),
    ],
)


class _Acc(AggregateFunction):  # type: ignore[misc]
    def create_accumulator(self) -> list[Any]:
        return [0, 0, None, None, 0.0]

    def add(self, value: Any, acc: list[Any]) -> list[Any]:
        n, total, low, high, xs = acc
        return [
            n + 1,
            total + value["v"],
            value["v"] if low is None else min(low, value["v"]),
            value["x"] if high is None else max(high, value["x"]),
            xs + value["x"],
        ]

    def get_result(self, acc: list[Any]) -> list[Any]:
        return acc

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:  # pragma: no cover
        raise NotImplementedError


class _Emit(ProcessWindowFunction):  # type: ignore[misc]
    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Row]:
        n, total, low, high, xs = next(iter(elements))
        w = context.window()
        yield Row(
            key=key,
            window_start=w.start,
            window_end=w.end,
            n=n,
            total=total,
            low=low,
            high=high,
            mean=xs / n,
        )


@dataclass(frozen=True)
class Job:
    size: int
    slide: int
    bound: int | None  # None: no watermarks
    lateness: int = 0
    late_output: bool = False
    every: int | None = None
    parallelism: int = 2


@contextmanager
def columnar(on: bool) -> Iterator[None]:
    saved = os.environ.get(SWITCH)
    os.environ[SWITCH] = "on" if on else "off"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[SWITCH]
        else:
            os.environ[SWITCH] = saved


def build(df: Any, job: Job) -> tuple[Any, Any]:
    """``(main stream, late stream or None)`` of the job on ``df``."""
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(job.parallelism)
    env.get_config().set_watermark_every(job.every)
    strategy = (
        WatermarkStrategy.no_watermarks()
        if job.bound is None
        else WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(job.bound))
    )
    assigner = (
        TumblingEventTimeWindows.of(Time.milliseconds(job.size))
        if job.slide == job.size
        else SlidingEventTimeWindows.of(Time.milliseconds(job.size), Time.milliseconds(job.slide))
    )
    key = FieldKey("k")
    windowed = env.from_dataframe(df, strategy, timestamp_column="ts").key_by(key).window(assigner)
    if job.lateness:
        windowed = windowed.allowed_lateness(job.lateness)
    if job.late_output:
        windowed = windowed.side_output_late_data(LATE)
    out = windowed.aggregate(_Acc(), _Emit(), output_type=OUTPUT)
    out._node.window_aggregate = WindowAggregateSpec(
        key,
        job.size,
        job.slide,
        0,
        job.lateness,
        LATE if job.late_output else None,
        OutputForm.NAMED_ROW,
        None,
        AGGREGATES,
        OUTPUT,
    )
    return out, out.get_side_output(LATE) if job.late_output else None
