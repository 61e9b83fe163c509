"""The columnar window aggregates on Spark against the per-record path: the same job
(``key_by("k")``, a built-in aggregate) run with ``SPARKTIDE_COLUMNAR`` on and off gives the
same records in the same order, main and late side output, on random splits (some empty), rounds
(``watermark_every``), out-of-orderness, allowed lateness, null fields and parallelism 1/2/4.
The DataFrame has columns ``k`` (key), ``v`` (a long), ``x`` (a double) and ``ts`` (epoch ms)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, Time, Types, WatermarkStrategy
from sparktide.common.env_overrides import COLUMNAR as SWITCH
from sparktide.core.output_tag import OutputTag

SCHEMA = "k string, v long, x double, ts long"
LATE = OutputTag(
    "late",
    Types.ROW_NAMED(
        ["k", "v", "x", "ts"], [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.LONG()]
    ),
)
RECORD_FORMS = ("sum", "min", "max", "min_by", "max_by")
NAMES = ["key", "window_start", "window_end", "n", "total", "low", "high", "mean"]


@dataclass(frozen=True)
class Job:
    size: int
    slide: int
    bound: int | None  # None: no watermarks
    lateness: int = 0
    late_output: bool = False
    every: int | None = None
    parallelism: int = 2
    form: str = "agg"  # agg, count, or Flink's record: sum, min, max, min_by, max_by


@contextmanager
def switched(value: str) -> Iterator[None]:
    """``SPARKTIDE_COLUMNAR`` set to ``value`` while inside."""
    saved = os.environ.get(SWITCH)
    os.environ[SWITCH] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[SWITCH]
        else:
            os.environ[SWITCH] = saved


def columnar(on: bool) -> AbstractContextManager[None]:
    return switched("on" if on else "off")


def windowed(df: Any, job: Any, key: str = "k") -> Any:
    """The keyed, windowed stream of ``job`` (``size``, ``slide``, ``bound``, ``every``,
    ``parallelism``, ``lateness``) on ``df`` on Spark."""
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
    source = env.from_dataframe(df, strategy, timestamp_column="ts")
    stream = source.key_by(key).window(assigner)
    return stream.allowed_lateness(job.lateness) if job.lateness else stream


def build(df: Any, job: Job) -> tuple[Any, Any]:
    """``(main stream, late stream or None)`` of the job on ``df``."""
    from sparktide.datastream.window import Agg

    stream = windowed(df, job)
    if job.late_output:
        stream = stream.side_output_late_data(LATE)
    if job.form == "count":
        out = stream.count()
    elif job.form in RECORD_FORMS:
        out = getattr(stream, job.form)("v" if job.form in ("sum", "min", "max_by") else "x")
    else:
        out = stream.agg(
            n=Agg.count(),
            total=Agg.sum("v"),
            low=Agg.min("v"),
            high=Agg.max("x"),
            mean=Agg.avg("x"),
        )
    return out, out.get_side_output(LATE) if job.late_output else None


# ---------------------------------------------------------------------- the tests


KEYS = ("a", "b", "ü", "日本", "a\x00")  # "a\x00": another key than "a", on another subtask
GEOMETRIES = ((10, 10), (20, 20), (10, 5), (20, 5), (15, 10))

record = st.tuples(
    st.sampled_from(KEYS),
    st.one_of(st.none(), st.integers(-5, 5)),
    st.one_of(st.none(), st.integers(-4, 4).map(float)),  # integral: exact sums in any order
    st.integers(0, 70),
)
splits = st.lists(st.lists(record, max_size=8), min_size=1, max_size=3)
jobs = st.builds(
    lambda geometry, bound, lateness, late_output, every, parallelism, form: Job(
        geometry[0], geometry[1], bound, lateness, late_output, every, parallelism, form
    ),
    st.sampled_from(GEOMETRIES),
    st.sampled_from((None, 0, 3)),
    st.sampled_from((0, 5)),
    st.booleans(),
    st.sampled_from((None, 1, 2, 3)),
    st.sampled_from((1, 2, 4)),
    st.sampled_from(("agg", "count", *RECORD_FORMS)),
)


def frame_of(spark: Any, rows_per_split: list[list[tuple[Any, ...]]], schema: str = SCHEMA) -> Any:
    """A DataFrame of ``schema`` whose partition ``i`` holds ``rows_per_split[i]`` in order."""
    rdd = spark.sparkContext.parallelize(rows_per_split, len(rows_per_split))
    return spark.createDataFrame(rdd.flatMap(_rows), schema)


def _rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return rows


def outputs(df: Any, job: Job, on: bool) -> tuple[list[Any], list[Any] | None, dict[str, int]]:
    """The main output, the late side output (if the job has one) and the metrics of the run
    that collected the main output."""
    from sparktide.spark.executor import SparkExecutor

    metrics: list[dict[str, int]] = []
    run = SparkExecutor.run

    def spy(self: Any) -> dict[str, int]:
        result = run(self)
        metrics.append(result)
        return result

    SparkExecutor.run = spy  # type: ignore[method-assign]
    try:
        with columnar(on):
            main, late = build(df, job)
            got = list(main.execute_and_collect())
            late_got = None if late is None else list(late.execute_and_collect())
    finally:
        SparkExecutor.run = run  # type: ignore[method-assign]
    return got, late_got, metrics[0]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=splits, job=jobs)
def test_columnar_path_equals_the_per_record_path(spark: Any, rows: Any, job: Job) -> None:
    if job.form in RECORD_FORMS:  # Flink's field aggregates cannot aggregate nulls
        rows = [[(k, v or 0, x or 0.0, ts) for k, v, x, ts in split] for split in rows]
    df = frame_of(spark, rows)
    assert outputs(df, job, True) == outputs(df, job, False)


def test_late_records_and_lateness_in_rounds(spark: Any) -> None:
    """Records late for some windows, re-firing windows within the lateness, late side
    output, an empty split and a watermark every record."""
    rows = [
        [
            ("a", 1, 1.0, 5),
            ("b", 2, 2.0, 12),
            ("a", 3, 0.5, 3),
            ("a", 4, 1.0, 25),
            ("a", 5, 2.5, 1),
        ],
        [],
        [("b", 7, 1.0, 8), ("a", 8, 3.0, 30), ("a", 9, 1.0, 2), ("ü", 1, 1.0, 31)],
    ]
    df = frame_of(spark, rows)
    for job in (
        Job(10, 10, 2, 5, True, 1),
        Job(10, 5, 0, 3, True, 2, 4),
        Job(20, 5, 1, 0, False, 1),
    ):
        got = outputs(df, job, True)
        assert got == outputs(df, job, False)
        assert got[0]  # windows fired


def test_the_columnar_path_is_taken_only_when_switched_on(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sparktide.spark.columnar_job as cj

    runs: list[int] = []
    original = cj.ColumnarJob.run

    def run(self: Any) -> dict[str, int]:
        runs.append(1)
        return original(self)

    monkeypatch.setattr(cj.ColumnarJob, "run", run)
    df = frame_of(spark, [[("a", 1, 1.0, 5), ("a", 2, 2.0, 15)]])
    on = outputs(df, Job(10, 10, 0), True)
    assert runs == [1]
    off = outputs(df, Job(10, 10, 0), False)
    assert runs == [1]
    assert on == off
    assert [r["n"] for r in on[0]] == [1, 1]


def test_to_dataframe_gives_the_rows_in_order(spark: Any) -> None:
    rows = [[("a", 1, 1.0, 5), ("b", 2, 2.0, 15), ("a", 3, 1.0, 7)], [("b", 4, 1.0, 3)]]
    df = frame_of(spark, rows)
    job = Job(10, 5, 2, every=1)
    with columnar(True):
        main, _ = build(df, job)
        frame = main.to_dataframe()
        got = [tuple(r) for r in frame.collect()]
    expected = [tuple(r) for r in outputs(df, job, False)[0]]
    assert got == expected
    assert frame.columns == NAMES


@pytest.mark.parametrize("form", RECORD_FORMS)
def test_flink_records_in_rounds_with_ties(spark: Any, form: str) -> None:
    """Flink's record: the first record with the field aggregated, or the first record holding
    the extreme (ties: equal values in several splits and rounds)."""
    rows = [
        [("a", 1, 1.0, 5), ("a", 3, 2.0, 6), ("a", 1, 2.0, 15), ("b", 0, 0.5, 3)],
        [("a", 3, 1.0, 4), ("a", 1, 2.0, 7), ("b", 0, 0.5, 2), ("a", 3, 2.0, 1)],
    ]
    df = frame_of(spark, rows)
    for job in (Job(10, 10, 1, 5, True, 1, 2, form), Job(10, 5, None, 0, False, None, 1, form)):
        got = outputs(df, job, True)
        assert got == outputs(df, job, False)
        assert got[0]


def test_a_null_in_a_flink_record_field_is_an_error(spark: Any) -> None:
    df = frame_of(spark, [[("a", None, 1.0, 5), ("a", 2, 1.0, 6)]])
    with pytest.raises(Exception, match="holds null"):
        outputs(df, Job(10, 10, 0, form="sum"), True)


def test_keys_differing_after_a_nul_character_stay_apart(spark: Any) -> None:
    """``"a"`` and ``"a\\x00"`` are two keys in two key groups (of two subtasks at parallelism
    2): the columnar path neither merges them nor gives one the other's key group."""
    rows = [[("a", 1, 1.0, 5), ("a\x00", 2, 2.0, 6), ("b\x00x", 3, 1.0, 7)], [("b", 4, 1.0, 3)]]
    df = frame_of(spark, rows)
    job = Job(10, 10, 0, form="count")
    got = outputs(df, job, True)
    assert got == outputs(df, job, False)
    assert sorted(r[0] for r in got[0]) == ["a", "a\x00", "b", "b\x00x"]


def test_integer_and_null_keys_and_a_timestamp_column(spark: Any) -> None:
    """Keyed by a long column (vectorized key groups), event time from a Spark timestamp
    column; a null key is refused, as Flink does, by every path (the columnar path by the key
    column's null count, naming the first record)."""
    import datetime as dt

    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.window import Agg, TumblingEventTimeWindows

    epoch = dt.datetime(2024, 1, 1)
    rows = [
        [(v, epoch + dt.timedelta(milliseconds=ms)) for v, ms in [(1, 5), (7, 7), (2**40, 12)]],
        [(v, epoch + dt.timedelta(milliseconds=ms)) for v, ms in [(1, 3), (None, 18), (-1, 40)]],
    ]
    df = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 2).flatMap(_rows), "v long, t timestamp"
    )

    def run(on: bool) -> list[Any]:
        with columnar(on):
            env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
            env.set_parallelism(2)
            env.get_config().set_watermark_every(1)
            strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2))
            out = (
                env.from_dataframe(df, strategy, timestamp_column="t")
                .key_by("v")
                .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
                .agg(n=Agg.count(), top=Agg.max("v"))
            )
            return list(out.execute_and_collect())

    for on in (True, False):
        with pytest.raises(Exception, match="Assigned key must not be null!") as failure:
            run(on)
        assert "record" in str(failure.value) + "".join(getattr(failure.value, "__notes__", []))
    df = df.where("v is not null")
    got = run(True)
    assert got == run(False)
    assert {r["key"] for r in got} == {1, 7, 2**40, -1}
