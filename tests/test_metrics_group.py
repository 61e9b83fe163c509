"""``RuntimeContext.get_metrics_group()``: user counters, gauges, meters and distributions,
combined over subtasks into the job's metrics on both runtimes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Types
from sparktide.core.metrics import Counter, Meter, MetricGroup, MetricsReport
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext


class Instrumented(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        group = runtime_context.get_metrics_group().add_group("words")
        self.seen = group.counter("seen")
        self.long = group.meter("long")
        self.lengths = group.distribution("lengths")
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.last = 0
        runtime_context.get_metrics_group().gauge("last_length", lambda: self.last)

    def map(self, value: str) -> int:
        self.seen.inc()
        self.lengths.update(len(value))
        if len(value) > 3:
            self.long.mark_event()
        self.last = len(value)
        return len(value)


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.per_key = runtime_context.get_metrics_group().counter("records")

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.per_key.inc()
        yield value


WORDS = ["a", "tree", "is", "growing", "here", "x"]


def run(runtime: str, parallelism: int) -> dict[str, Any]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    stream = env.from_collection(WORDS, Types.STRING()).rebalance()
    lengths = stream.map(Instrumented(), Types.INT()).name("Lengths")
    lengths.key_by(lambda n: n % 2).process(CountPerKey(), Types.INT()).name("Keyed").print()
    return env.execute().metrics


def check(metrics: dict[str, Any], parallelism: int) -> None:
    assert metrics["Lengths.words.seen"] == len(WORDS)
    assert metrics["Lengths.words.long"] == sum(len(w) > 3 for w in WORDS)
    assert metrics["Lengths.words.lengths"] == {
        "count": 6,
        "sum": sum(map(len, WORDS)),
        "min": 1,
        "max": 7,
        "mean": sum(map(len, WORDS)) / 6,
    }
    assert metrics["Keyed.records"] == len(WORDS)
    gauge = metrics["Lengths.last_length"]
    assert sorted(gauge) == list(range(parallelism))  # one value per subtask
    assert set(gauge.values()) <= {0, *map(len, WORDS)}


@pytest.mark.parametrize("parallelism", [1, 3])
def test_user_metrics_appear_in_the_local_jobs_metrics(parallelism: int) -> None:
    check(run("local", parallelism), parallelism)


def test_user_metrics_appear_in_the_spark_jobs_metrics(spark: Any) -> None:
    check(run("spark", 2), 2)


def test_a_name_is_one_metric() -> None:
    group = MetricGroup("Op", 0, clock=lambda: 0)
    assert group.counter("c") is group.counter("c")
    with pytest.raises(ValueError, match=r"'Op\.c' is a counter already"):
        group.meter("c")
    with pytest.raises(TypeError, match="a gauge needs a callable"):
        group.gauge("g", 3)  # type: ignore[arg-type]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=50)
@given(st.lists(st.lists(st.integers(-5, 5), max_size=6), min_size=1, max_size=4))
def test_reports_combine_as_one_subtask_would(per_subtask: list[list[int]]) -> None:
    """Counters and distributions of several subtasks combine, in any grouping, into what one
    subtask that saw every value reports."""
    reports = []
    for index, values in enumerate(per_subtask):
        group = MetricGroup("Op", index, clock=lambda: 0)
        counter, dist = group.counter("n"), group.distribution("d")
        for v in values:
            counter.inc(v)
            dist.update(v)
        reports.append(MetricsReport.of(group))
    combined = MetricsReport()
    for report in reversed(reports):
        combined.merge(report)
    single = MetricGroup("Op", 0, clock=lambda: 0)
    c, d = single.counter("n"), single.distribution("d")
    for v in (v for values in per_subtask for v in values):
        c.inc(v)
        d.update(v)
    assert combined.as_dict() == MetricsReport.of(single).as_dict()


def test_meter_rate_follows_the_operators_clock() -> None:
    now = [0]
    meter = Meter(10, clock=lambda: now[0])
    for t in range(0, 20_000, 1000):
        now[0] = t
        meter.mark_event(2)
    now[0] = 20_000
    assert meter.get_count() == 40
    assert meter.get_rate() == pytest.approx(2.0)  # the last 10 s: 2 events a second
    assert isinstance(MetricGroup("x", 0, lambda: 0).counter("c"), Counter)


def test_user_metrics_of_a_streaming_job_add_up_over_micro_batches(
    spark: Any, tmp_path: Any
) -> None:
    from sparktide.common import WatermarkStrategy

    folder = tmp_path / "in"
    folder.mkdir()
    for i, words in enumerate([WORDS[:4], WORDS[4:]]):
        (folder / f"{i}.json").write_text(
            "".join(f'{{"w": "{w}", "ts": {n}}}\n' for n, w in enumerate(words)), encoding="utf-8"
        )
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema("w string, ts long").option("maxFilesPerTrigger", 1)
    stream = env.from_stream(
        frame.json(str(folder)), WatermarkStrategy.no_watermarks(), timestamp_column="ts"
    )
    words = stream.map(lambda row: row["w"], Types.STRING()).rebalance()
    lengths = words.map(Instrumented(), Types.INT()).name("Lengths")
    lengths.key_by(lambda n: n % 2).process(CountPerKey(), Types.INT()).name("Keyed").foreach_batch(
        lambda df, batch_id: None
    )
    metrics = env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert metrics.metrics["rounds"] == 2  # two micro-batches
    check(metrics.metrics, 2)
