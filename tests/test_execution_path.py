"""The path choice (:mod:`sparktide.runtime.execution.path`): for each path, the execution plan
shows it with its reason, and the job takes it (the builder of that path runs; the other paths'
builders do not), on the local runtime and on Spark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from sparktide.common import Configuration, Time, Types, WatermarkStrategy
from sparktide.common.config_options import ColumnarExecution
from sparktide.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from sparktide.datastream.window import CountTrigger, TumblingEventTimeWindows
from sparktide.runtime.execution.path import ExecutionPath, PathOptions, Request
from sparktide.runtime.operators import window as window_module
from sparktide.runtime.operators.window_fast import FastWindowPath
from sparktide.runtime.operators.window_path import FAST_PATH_OFF

DATA = [("a", 1, 1), ("b", 2, 4), ("a", 3, 12), ("b", 4, 15), ("a", 5, 27)]
SUMS = [("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5)]


def _plan_nodes(env: Any) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = json.loads(env.get_execution_plan())["nodes"]
    for node in nodes:  # Flink's fields stay
        assert {"id", "type", "pact", "contents", "parallelism"} <= set(node)
    return nodes


def _window_node(env: Any) -> dict[str, Any]:
    (node,) = [n for n in _plan_nodes(env) if "Window" in n["type"]]
    return node


@pytest.fixture
def fast_paths_built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many window operators built the window fast path."""
    built: list[int] = []
    build = FastWindowPath.build

    def counting(*args: Any) -> FastWindowPath | None:
        fast = build(*args)
        built.append(int(fast is not None))
        return fast

    monkeypatch.setattr(window_module.FastWindowPath, "build", staticmethod(counting))
    yield built


class Sums(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key, sum(e[1] for e in elements)


def _local_job(options: dict[str, str] | None = None, how: str = "reduce") -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(2)
    if options:
        env.configure(options)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, ts: v[2]
    )
    windowed = (
        env.from_collection(DATA)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
    )
    if how == "trigger":
        windowed = windowed.trigger(CountTrigger.of(1))
    if how == "process":
        return env, windowed.process(Sums())
    return env, windowed.reduce(lambda a, b: (a[0], a[1] + b[1], a[2])).map(lambda v: v[:2])


# ---------------------------------------------------------------------- the local runtime


def test_per_record_with_the_window_fast_path(fast_paths_built: list[int]) -> None:
    env, out = _local_job()
    out.print()
    node = _window_node(env)
    assert node["execution_path"] == ExecutionPath.PER_RECORD.value
    assert node["window_fast_path"] is True
    assert node["reason"].startswith("the local runtime runs every job per record")
    assert "tumbling event-time window with the default trigger" in node["reason"]
    assert sorted(out.execute_and_collect()) == sorted(SUMS)
    assert fast_paths_built == [1, 1]  # both subtasks


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("process", "the window keeps every element (apply/process), not a reduced value"),
        ("trigger", "the trigger is not the default (EventTimeTrigger)"),
    ],
)
def test_per_record_without_the_window_fast_path(
    fast_paths_built: list[int], how: str, why: str
) -> None:
    env, out = _local_job(how=how)
    out.print()
    node = _window_node(env)
    assert node["execution_path"] == "per-record"
    assert node["window_fast_path"] is False
    assert node["reason"].endswith(f"window fast path: {why}")
    # one element per key and window: the count trigger fires each once, as the default would
    assert sorted(out.execute_and_collect()) == sorted(SUMS)
    assert fast_paths_built == []


def test_the_window_fast_path_option_off(fast_paths_built: list[int]) -> None:
    env, out = _local_job({"sparktide.execution.window-fast-path": "false"})
    out.print()
    node = _window_node(env)
    assert node["window_fast_path"] is False
    assert node["reason"].endswith(FAST_PATH_OFF)
    assert sorted(out.execute_and_collect()) == sorted(SUMS)
    assert fast_paths_built == []


def test_options_are_checked_when_configured() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    with pytest.raises(ValueError, match=r"sparktide.execution.columnar must be one of auto"):
        env.configure({"sparktide.execution.columnar": "fast"})
    with pytest.raises(ValueError, match=r"sparktide.execution.window-fast-path must be"):
        env.configure(Configuration().set_string("sparktide.execution.window-fast-path", "1"))
    with pytest.raises(ValueError, match=r"unknown configuration key\(s\).*columnr"):
        env.configure({"sparktide.execution.columnr": "off"})


def test_the_job_option_wins_over_the_environment_override(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "off")
    assert PathOptions.of(None) == PathOptions(
        ColumnarExecution.OFF, True, "SPARKTIDE_COLUMNAR=off"
    )
    chosen = PathOptions.of({"sparktide.execution.columnar": "python"})
    assert chosen.columnar is ColumnarExecution.PYTHON
    assert chosen.columnar_origin == "sparktide.execution.columnar = python"
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "on")
    assert PathOptions.of({}).columnar is ColumnarExecution.AUTO


# ---------------------------------------------------------------------- Spark


SCHEMA = "k string, v long, ts long"
ROWS = [("a", 1, 1), ("b", 2, 4), ("a", 3, 12), ("b", 4, 15), ("a", 5, 27)]
COUNTS = [("a", 0, 10, 1), ("b", 0, 10, 1), ("a", 10, 20, 1), ("b", 10, 20, 1), ("a", 20, 30, 1)]


@pytest.fixture
def columnar_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each Spark run built: ``python`` (a columnar job ran), ``sql`` (a DataFrame in
    Spark's engine), and the paths the executor chose."""
    from sparktide.spark import columnar_job
    from sparktide.spark.executor import SparkExecutor

    seen: list[str] = []
    run, sql, path = columnar_job.ColumnarJob.run, columnar_job.sql_frame, SparkExecutor.path

    def spy_run(self: Any) -> dict[str, int]:
        seen.append("python")
        return run(self)

    def spy_sql(*args: Any) -> Any:
        frame = sql(*args)
        seen.append("sql" if frame is not None else "sql declined")
        return frame

    def spy_path(self: Any, request: Request) -> Any:
        choice = path(self, request)
        seen.append(choice.path.value)
        return choice

    monkeypatch.setattr(columnar_job.ColumnarJob, "run", spy_run)
    monkeypatch.setattr(columnar_job, "sql_frame", spy_sql)
    monkeypatch.setattr(SparkExecutor, "path", spy_path)
    return seen


def _spark_job(spark: Any, options: dict[str, str] | None = None) -> tuple[Any, Any]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    if options:
        env.configure(options)
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(1)
    source = env.from_dataframe(df, WatermarkStrategy.no_watermarks(), timestamp_column="ts")
    out = source.key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10))).count()
    return env, out


def _run_to_sink(env: Any, out: Any) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """The explained window node, then the rows a Spark-written sink received."""
    from sparktide.spark.stream_sinks import ForeachBatchSink

    rows: list[tuple[Any, ...]] = []
    out.sink_to(ForeachBatchSink(lambda df, _: rows.extend(tuple(r) for r in df.collect())))
    node = _window_node(env)
    env.execute()
    return node, sorted(rows)


def test_columnar_in_python(spark: Any, columnar_runs: list[str]) -> None:
    node, rows = _run_to_sink(*_spark_job(spark))
    assert node["execution_path"] == "columnar-python"
    assert node["reason"].startswith("a built-in window aggregate keyed by a field runs on Arrow")
    assert "window_fast_path" not in node  # no per-record window operator runs
    assert rows == sorted(COUNTS)
    assert columnar_runs == ["columnar-python", "python"]


def test_columnar_in_sparks_engine(spark: Any, columnar_runs: list[str]) -> None:
    env, out = _spark_job(spark)
    node, _ = _run_to_sink(env, out)
    # an unordered to_dataframe() of the aggregate runs in Spark's engine (no record is late)
    assert "an unordered to_dataframe() of its output: columnar-sql" in node["reason"]
    del columnar_runs[:]
    rows = sorted(tuple(r) for r in out.to_dataframe(ordered=False).collect())
    assert rows == sorted(COUNTS)
    assert columnar_runs == ["columnar-sql", "sql"]


def test_columnar_python_option_keeps_spark_engine_out(
    spark: Any, columnar_runs: list[str]
) -> None:
    env, out = _spark_job(spark, {"sparktide.execution.columnar": "python"})
    node, _ = _run_to_sink(env, out)
    assert node["execution_path"] == "columnar-python"
    assert "columnar-sql" not in node["reason"]
    del columnar_runs[:]
    rows = sorted(tuple(r) for r in out.to_dataframe(ordered=False).collect())
    assert rows == sorted(COUNTS)
    assert columnar_runs == ["columnar-python"]  # no sql_frame call


def test_columnar_option_off(spark: Any, columnar_runs: list[str]) -> None:
    node, rows = _run_to_sink(*_spark_job(spark, {"sparktide.execution.columnar": "off"}))
    assert node["execution_path"] == "per-record"
    assert node["reason"].startswith(
        "columnar execution is off (sparktide.execution.columnar = off)"
    )
    assert node["window_fast_path"] is True  # the per-record operator qualifies
    assert rows == sorted(COUNTS)
    assert set(columnar_runs) == {"per-record"}  # chosen (the run, its tasks); nothing columnar


def test_columnar_environment_override(
    spark: Any, columnar_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "off")
    node, rows = _run_to_sink(*_spark_job(spark))
    assert node["execution_path"] == "per-record"
    assert node["reason"].startswith("columnar execution is off (SPARKTIDE_COLUMNAR=off)")
    assert rows == sorted(COUNTS)
    assert set(columnar_runs) == {"per-record"}
    del columnar_runs[:]
    # the job's own option wins over the override
    node, rows = _run_to_sink(*_spark_job(spark, {"sparktide.execution.columnar": "auto"}))
    assert node["execution_path"] == "columnar-python"
    assert rows == sorted(COUNTS)
    assert columnar_runs == ["columnar-python", "python"]


def test_a_job_of_another_shape_runs_per_record_on_spark(
    spark: Any, columnar_runs: list[str]
) -> None:
    env, out = _spark_job(spark)
    keyed = out.map(lambda r: (r[0], r[3]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    node, rows = _run_to_sink(env, keyed)
    assert node["execution_path"] == "per-record"
    assert "follows the window (the columnar paths feed sinks only)" in node["reason"]
    assert rows == sorted((k, n) for k, _, _, n in COUNTS)
    assert set(columnar_runs) == {"per-record"}


def test_columnar_streaming_is_explained(spark: Any, tmp_path: Any) -> None:
    from sparktide.spark.stream_sinks import ForeachBatchSink

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    source = env.from_stream(frame, WatermarkStrategy.no_watermarks(), timestamp_column="ts")
    out = source.key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10))).count()
    out.sink_to(ForeachBatchSink(lambda df, batch_id: None))
    node = _window_node(env)
    assert node["execution_path"] == "columnar-stream"
    assert node["reason"] == (
        "a built-in window aggregate keyed by a field runs each micro-batch on columns"
    )
    env.configure({"sparktide.execution.columnar": "off"})
    assert _window_node(env)["execution_path"] == "per-record"
