"""Unordered window aggregates in Spark's own engine (:mod:`sparktide.spark.columnar_sql`)
against the columnar path in Python and the per-record path: the same job's
``to_dataframe(ordered=False)`` holds the same rows (as a multiset: an unordered DataFrame has
no order) with ``SPARKTIDE_COLUMNAR`` ``on``, ``python`` and ``off``, on random splits, rounds,
out-of-orderness (records late or not), null fields, empty keys, parallelism 1/2/4. The tests also
check which path ran: Spark's engine exactly when no record can be late."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import test_columnar_differential as differential
from sparktide.spark import columnar_sql
from test_columnar_differential import switched

SCHEMA = "k string, v long, w int, ts long"
RECORD_FORMS = ("sum", "min", "max", "min_by", "max_by")
EXTREME_RECORDS = ("min_by", "max_by")  # the columnar path keeps these


@dataclass(frozen=True)
class Job:
    size: int
    slide: int
    bound: int | None  # None: no watermarks
    every: int | None = None
    parallelism: int = 2
    form: str = "agg"  # agg, count, or Flink's record: sum, min, max, min_by, max_by
    lateness: int = 0
    key: str = "k"


def unordered(df: Any, job: Job, switch: str, ordered: bool = False) -> Counter[tuple[Any, ...]]:
    """The rows of the job's ``to_dataframe(ordered=ordered)`` with ``SPARKTIDE_COLUMNAR`` set
    to ``switch``."""
    from sparktide.datastream.window import Agg

    with switched(switch):
        windowed = differential.windowed(df, job, job.key)
        if job.form == "count":
            out = windowed.count()
        elif job.form in RECORD_FORMS:
            out = getattr(windowed, job.form)("v" if job.form != "max" else "w")
        else:
            out = windowed.agg(
                n=Agg.count(),
                total=Agg.sum("v"),
                low=Agg.min("w"),
                high=Agg.max("v"),
                mean=Agg.avg("w"),
            )
        return Counter(tuple(r) for r in out.to_dataframe(ordered=ordered).collect())


@contextmanager
def counting_sql_frames() -> Iterator[list[bool]]:
    """Whether each call of ``sql_frame`` built Spark's query (``True``) or declined."""
    from sparktide.spark import columnar_job

    calls: list[bool] = []
    real = columnar_sql.sql_frame

    def spy(*args: Any) -> Any:
        frame = real(*args)
        calls.append(frame is not None)
        return frame

    columnar_job.sql_frame = spy  # type: ignore[assignment]
    try:
        yield calls
    finally:
        columnar_job.sql_frame = real  # type: ignore[assignment]


def frame_of(spark: Any, rows_per_split: list[list[tuple[Any, ...]]]) -> Any:
    return differential.frame_of(spark, rows_per_split, SCHEMA)


def _normal(rows: list[list[tuple[Any, ...]]], job: Job) -> bool:
    """Whether the splits' records can all be aggregated before any window fires, computed
    record by record (the split's watermark after each full round of ``every``)."""
    if job.bound is None:
        return True
    for split in rows:
        high, mark = None, None
        for i, (_k, _v, _w, ts) in enumerate(split):
            if mark is not None and ts - ts % job.size + job.size - 1 <= mark:
                return False
            high = ts if high is None else max(high, ts)
            if job.every is not None and (i + 1) % job.every == 0:
                value = high - job.bound - 1
                mark = value if mark is None else max(mark, value)
    return True


# ---------------------------------------------------------------------- the tests

KEYS = ("a", "b", "ü", "")

record = st.tuples(
    st.sampled_from(KEYS),
    st.integers(-5, 5),
    st.one_of(st.none(), st.integers(-3, 3)),
    st.integers(0, 70),
)
split_rows = st.tuples(st.lists(record, max_size=9), st.booleans()).map(
    lambda rows_sorted: (
        sorted(rows_sorted[0], key=lambda r: r[3]) if rows_sorted[1] else rows_sorted[0]
    )
)
jobs = st.builds(
    Job,
    st.sampled_from((10, 20)),
    st.just(0),
    st.sampled_from((None, 0, 3, 30)),
    st.sampled_from((None, 1, 2, 3)),
    st.sampled_from((1, 2, 4)),
    st.sampled_from(("agg", "count", *RECORD_FORMS)),
    st.sampled_from((0, 5)),
).map(lambda j: Job(j.size, j.size, j.bound, j.every, j.parallelism, j.form, j.lateness))


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=st.lists(split_rows, min_size=1, max_size=3), job=jobs)
def test_spark_engine_equals_the_columnar_and_per_record_paths(
    spark: Any, rows: Any, job: Job
) -> None:
    if job.form in RECORD_FORMS:  # Flink's field aggregates cannot aggregate nulls
        rows = [[(k, v, w or 0, ts) for k, v, w, ts in split] for split in rows]
    df = frame_of(spark, rows)
    with counting_sql_frames() as calls:
        got = unordered(df, job, "on")
    assert calls == [_normal(rows, job) and job.form not in EXTREME_RECORDS]
    assert got == unordered(df, job, "python") == unordered(df, job, "off")


@pytest.mark.parametrize("form", ["count", "sum"])
def test_spark_s_aggregate_runs_in_the_window_operator_s_subtasks(spark: Any, form: str) -> None:
    """Its reduce side has the operator's parallelism whatever ``spark.sql.shuffle.partitions``
    says (the session keeps coalescing off: 200 tasks of a few rows each, 200 files written)."""
    rows = [[("a", 1, 1, 3), ("b", 2, 2, 1)], [("a", 3, 3, 12), ("c", 4, 4, 25)]]
    job = Job(10, 10, 5, every=2, parallelism=3, form=form)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    df = frame_of(spark, rows)
    try:
        with switched("on"), counting_sql_frames() as calls:
            windowed = differential.windowed(df, job, job.key)
            out = windowed.sum("v") if form == "sum" else windowed.count()
            frame = out.to_dataframe(ordered=False)
        assert calls == [True]
        assert frame.rdd.getNumPartitions() == 3
        assert Counter(tuple(r) for r in frame.collect()) == unordered(df, job, "off")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def test_in_order_records_run_in_spark_and_a_late_one_does_not(spark: Any) -> None:
    """Disorder within the bound keeps every record normal; one record behind a window that
    fired in an earlier round sends the job to the columnar path, with the same rows as the
    per-record path (the late record dropped)."""
    in_order = [
        [("a", 1, 1, 3), ("b", 2, 2, 1), ("a", 3, 3, 12), ("a", 4, 4, 9), ("b", 5, 5, 25)],
        [("a", 6, 6, 5), ("b", 7, 7, 14), ("a", 8, 8, 11)],
    ]
    late = [in_order[0] + [("b", 0, 0, 26), ("a", 9, 9, 2)], in_order[1]]
    job = Job(10, 10, 5, every=2, form="agg")
    for rows, sql in ((in_order, True), (late, False)):
        df = frame_of(spark, rows)
        with counting_sql_frames() as calls:
            got = unordered(df, job, "on")
        assert calls == [sql]
        assert got == unordered(df, job, "off")
    assert ("a", 0, 10, 3, 11, 1, 6, 11 / 3) in got  # the late (9, 9, 2) dropped


@pytest.mark.parametrize("form", RECORD_FORMS)
def test_flink_records_take_the_first_record_by_position(spark: Any, form: str) -> None:
    """Ties across splits and rounds: the first record is the earliest round, then the lower
    split, then the earlier row, as the per-record path meets them."""
    rows = [
        [("a", 1, 1, 5), ("a", 3, 2, 6), ("a", 3, 2, 8), ("a", 1, 2, 7)],
        [("a", 3, 1, 4), ("a", 1, 2, 7), ("a", 1, 1, 9), ("a", 3, 2, 1)],
    ]
    df = frame_of(spark, rows)
    for every in (1, 2, None):
        job = Job(10, 10, 10, every=every, form=form)
        with counting_sql_frames() as calls:
            got = unordered(df, job, "on")
        assert calls == [form not in EXTREME_RECORDS]
        assert got == unordered(df, job, "off")


def test_a_record_keyed_by_its_aggregated_field_holds_the_aggregate(spark: Any) -> None:
    rows = [[(7, 2, 1, 3), (8, 2, 2, 4)], [(9, 2, 3, 5), (10, 1, 4, 6)]]
    df = differential.frame_of(spark, rows, "k long, v long, w int, ts long")
    job = Job(10, 10, 0, form="sum", key="v")
    with counting_sql_frames() as calls:
        got = unordered(df, job, "on")
    assert calls == [True]
    assert got == unordered(df, job, "off")
    assert (7, 6, 1, 3) in got  # the first record of key 2, its v the sum 2 + 2 + 2


def test_a_window_without_values_aggregates_to_null(spark: Any) -> None:
    df = frame_of(spark, [[("a", 1, None, 3), ("a", 2, None, 4), ("b", 3, 5, 6)]])
    with counting_sql_frames() as calls:
        got = unordered(df, Job(10, 10, 0), "on")
    assert calls == [True]
    assert got == unordered(df, Job(10, 10, 0), "off")
    assert ("a", 0, 10, 2, 3, None, 2, None) in got


def test_sliding_windows_and_ordered_output_stay_on_the_columnar_path(spark: Any) -> None:
    df = frame_of(spark, [[("a", 1, 1, 3), ("a", 2, 2, 12)]])
    with counting_sql_frames() as calls:
        got = unordered(df, Job(10, 5, 0), "on")
        in_order = unordered(df, Job(10, 10, 0), "on", ordered=True)
    assert calls == [False]  # the sliding job declined; the ordered one never asked
    assert got == unordered(df, Job(10, 5, 0), "off")
    assert in_order == unordered(df, Job(10, 10, 0), "off", ordered=True)


def test_a_null_in_a_flink_record_field_is_still_an_error(spark: Any) -> None:
    df = frame_of(spark, [[("a", 1, None, 5), ("a", 2, 1, 6)]])
    with counting_sql_frames() as calls, pytest.raises(Exception, match="holds null"):
        unordered(df, Job(10, 10, 0, form="max"), "on")
    assert calls == [False]
