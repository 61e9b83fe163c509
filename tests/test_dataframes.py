"""Spark DataFrames in and out of streams: ``env.from_dataframe`` and ``DataStream.to_dataframe``
on both runtimes, typed columns, side outputs, and the errors for bad input."""

from __future__ import annotations

import datetime as dt
import random
import threading

import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark import session as spark_session
from sparktide.spark.session import SparkUnavailableError

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
LATE = OutputTag("late", EVENT)


def _rows(n: int = 300, keys: int = 6, seed: int = 5) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    return [(f"k{rng.randrange(keys)}", i * 100 + rng.randrange(0, 4_000), i) for i in range(n)]


@pytest.fixture(scope="module")
def events(spark):
    return spark.createDataFrame(_rows(), "key string, ts long, v long").repartition(3).cache()


def _env(runtime: str, parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(40)
    return env


def _windowed(env, df):
    stream = env.from_dataframe(
        df,
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1_500)),
        timestamp_column="ts",
    )
    return (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.seconds(2)))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )


class Alarm(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1_000)

    def on_timer(self, timestamp, ctx):
        yield Row(key=ctx.get_current_key(), at=timestamp, count=self.count.value())


ALARM = Types.ROW_NAMED(["key", "at", "count"], [Types.STRING(), Types.LONG(), Types.LONG()])


def _timers(env, df):
    stream = env.from_dataframe(
        df,
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)),
        timestamp_column="ts",
        split_by="key",
        num_splits=4,
        order_by="v",
    )
    return stream.key_by(lambda r: r.key).process(Alarm(), output_type=ALARM)


def _collect(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


# ------------------------------------------------------------------------------ in and out


def test_rows_come_as_named_typed_rows(spark) -> None:
    df = spark.createDataFrame([("a", 1, 2.5, True)], "name string, n long, x double, ok boolean")
    env = _env("local", 1)
    stream = env.from_dataframe(df)
    fields = [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN()]
    assert str(stream.get_type()) == str(Types.ROW_NAMED(["name", "n", "x", "ok"], fields))
    [row] = stream.execute_and_collect(limit=5)
    assert (row.name, row.n, row.x, row.ok) == ("a", 1, 2.5, True)


def test_timestamp_columns_give_event_time(spark) -> None:
    df = spark.createDataFrame(
        [(dt.datetime(2024, 1, 1, 0, 0, 1), 1), (dt.datetime(2024, 1, 1, 0, 0, 3), 2)],
        "at timestamp, v long",
    )
    env = _env("local", 1)
    stamps = (
        env.from_dataframe(df, timestamp_column="at")
        .process(_Stamp(), output_type=Types.LONG())
        .execute_and_collect(limit=5)
    )
    base = int(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert stamps == [base + 1_000, base + 3_000]


class _Stamp:
    def open(self, runtime_context):
        pass

    def close(self):
        pass

    def process_element(self, value, ctx):
        yield ctx.timestamp()


@pytest.mark.parametrize("parallelism", [1, 2, 4])
@pytest.mark.parametrize("job", [_windowed, _timers])
def test_dataframe_job_same_on_both_runtimes(events, job, parallelism) -> None:
    local = _collect(job(_env("local", 1), events).to_dataframe())
    on_spark = _collect(job(_env("spark", parallelism), events).to_dataframe())
    assert local and on_spark == local


def test_side_output_is_its_own_dataframe(events) -> None:
    results = {}
    for runtime in ("local", "spark"):
        windows = _windowed(_env(runtime, 2), events)
        late = windows.get_side_output(LATE).to_dataframe()
        assert late.columns == ["key", "ts", "v"]
        results[runtime] = (_collect(windows.to_dataframe()), _collect(late))
    main, late_rows = results["spark"]
    assert late_rows, "the input has late records"
    assert results["local"] == results["spark"]
    # every input record is counted once: in a window or as late
    assert sum(r[2] for r in main) + sum(r[2] for r in late_rows) == sum(v for *_, v in _rows())


def test_a_side_output_has_its_tags_type_not_the_operators(events) -> None:
    results = {}
    for runtime in ("local", "spark"):
        env = _env(runtime, 2)
        counts = (
            env.from_dataframe(
                events,
                WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1_500)),
                timestamp_column="ts",
            )
            .key_by("key")
            .window(TumblingEventTimeWindows.of(Time.seconds(2)))
            .side_output_late_data(LATE)
            .count()
        )
        assert counts.get_side_output(OutputTag("late")).get_type() is None  # untyped: pickled
        late = counts.get_side_output(LATE).to_dataframe()
        assert late.columns == ["key", "ts", "v"]
        main = counts.to_dataframe()
        assert main.columns == ["key", "window_start", "window_end", "count"]
        results[runtime] = (_collect(main), _collect(late))
    main, late_rows = results["spark"]
    assert late_rows, "the input has late records"
    assert results["local"] == results["spark"]
    assert sum(r[3] for r in main) + len(late_rows) == len(_rows())


def test_typed_columns_and_pickled_column(spark) -> None:
    env = _env("spark", 2)
    numbers = env.from_collection(list(range(5)))
    typed = numbers.map(lambda v: (f"n{v}", v * 1.5), Types.TUPLE([Types.STRING(), Types.DOUBLE()]))
    frame = typed.to_dataframe()
    assert frame.schema.simpleString() == "struct<f0:string,f1:double>"
    assert _collect(frame) == [(f"n{v}", v * 1.5) for v in range(5)]
    pickled = numbers.map(lambda v: {"v": v}, Types.PICKLED_BYTE_ARRAY()).to_dataframe()
    assert pickled.schema.simpleString() == "struct<value:binary>"  # asked for: pickles
    import pickle

    assert [pickle.loads(r.value) for r in pickled.collect()] == [{"v": v} for v in range(5)]


def _untyped_jobs(env: StreamExecutionEnvironment) -> dict[str, object]:
    numbers = env.from_collection(list(range(6)))
    keyed = numbers.key_by(lambda v: v % 2)
    return {
        "rows": numbers.map(lambda v: Row(word=f"w{v}", n=v, half=v / 2)),
        "tuples": keyed.map(lambda v: (v % 2, None if v == 0 else str(v), [v, v + 1])),
        "primitives": keyed.reduce(lambda a, b: a + b),
        "dicts": numbers.map(lambda v: {f"k{v % 3}": v * 1.5}),
    }


SCHEMAS = {
    "rows": "struct<word:string,n:bigint,half:double>",
    "tuples": "struct<f0:bigint,f1:string,f2:array<bigint>>",
    "primitives": "struct<value:bigint>",
    "dicts": "struct<value:map<string,double>>",
}


@pytest.mark.parametrize("job", list(SCHEMAS))
def test_untyped_stream_columns_are_inferred_from_its_records(spark, job) -> None:
    frames = {r: _untyped_jobs(_env(r, 2))[job].to_dataframe() for r in ("local", "spark")}
    for frame in frames.values():
        assert frame.schema.simpleString() == SCHEMAS[job]
    assert _collect(frames["spark"]) == _collect(frames["local"])
    assert len(_collect(frames["spark"])) == 6


class _Opaque:
    def __repr__(self) -> str:
        return "_Opaque()"


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_records_that_fix_no_columns_ask_for_output_type(spark, runtime) -> None:
    env = _env(runtime, 2)
    numbers = env.from_collection([1, 2, 3])
    cases = {
        r"the records: both int and str": numbers.map(lambda v: v if v < 3 else str(v)),
        r"field 'f1': both str and float": numbers.map(lambda v: (v, "x" if v < 2 else 0.5)),
        r"field 'b': only None": numbers.map(lambda v: Row(a=v, b=None)),
        r"the records: a _Opaque \(_Opaque\(\)\), which has no column type": numbers.map(
            lambda v: _Opaque()
        ),
        r"it has no records to infer them from": numbers.filter(lambda v: v > 5),
    }
    for reason, stream in cases.items():
        with pytest.raises(
            TypeError,
            match=r"to_dataframe\(\): cannot infer the columns of a stream without a declared "
            rf"type: {reason}; declare the type .*output_type=Types\.PICKLED_BYTE_ARRAY\(\)",
        ):
            _collect(stream.to_dataframe())


def test_batch_sinks_write_inferred_columns_not_pickles(spark, tmp_path) -> None:
    from sparktide.spark.stream_sinks import ParquetBatchSink

    env = _env("spark", 2)
    env.from_collection([1, 2, 3]).map(lambda v: Row(id=v, name=f"n{v}")).sink_to(
        ParquetBatchSink(str(tmp_path / "out"))
    )
    env.execute()
    back = spark.read.parquet(str(tmp_path / "out"))
    assert back.schema.simpleString() == "struct<id:bigint,name:string,batch:int>"
    assert sorted(_collect(back)) == [(1, "n1", 0), (2, "n2", 0), (3, "n3", 0)]


def test_streaming_batch_sink_of_an_untyped_stream_is_refused_at_start(spark, tmp_path) -> None:
    from sparktide.spark.stream_sinks import ParquetBatchSink

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("v\n1\n2\n", encoding="utf-8")
    rows = spark.readStream.schema("v long").option("header", True).csv(str(tmp_path / "in"))
    env = _env("spark", 1)
    env.from_stream(rows).map(lambda r: r.v).sink_to(ParquetBatchSink(str(tmp_path / "o")))
    refused = (
        r"ParquetBatchSink\) writes each micro-batch in the columns of its input's type, but "
        "that stream has no declared type"
    )
    with pytest.raises(TypeError, match=refused):
        env.execute(checkpoint_location=str(tmp_path / "ck"), trigger="available_now")
    assert not (tmp_path / "o").exists()


def test_to_dataframe_runs_only_its_part_of_the_job(spark, capsys) -> None:
    env = _env("spark", 1)
    numbers = env.from_collection([1, 2, 3], Types.INT())
    numbers.print()
    assert _collect(numbers.map(lambda v: v + 1, Types.INT()).to_dataframe()) == [(2,), (3,), (4,)]
    assert capsys.readouterr().out == ""  # the print sink belongs to the next execute()
    env.execute()
    assert capsys.readouterr().out.split() == ["1", "2", "3"]


def test_dataframe_sinks_write_with_spark(spark, tmp_path) -> None:
    class ParquetWriter:
        def create_operator(self, type_info):  # the local runtime's writer
            raise AssertionError("not used on Spark")

        def write_dataframe(self, df):
            df.write.parquet(str(tmp_path / "out"))

    env = _env("spark", 2)
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    pairs = env.from_collection([("a", 1), ("b", 2), ("a", 3)], pair)
    pairs.key_by(lambda p: p[0]).sum(1).sink_to(ParquetWriter())
    env.execute()
    back = sorted(_collect(spark.read.parquet(str(tmp_path / "out"))))
    assert back == [("a", 1), ("a", 4), ("b", 2)]


# ------------------------------------------------------------------------------ bad input


def test_missing_timestamp_column_lists_the_columns(events) -> None:
    env = _env("local", 1)
    with pytest.raises(ValueError, match=r"no column 'time'.*\['key', 'ts', 'v'\]"):
        env.from_dataframe(events, timestamp_column="time")
    with pytest.raises(ValueError, match=r"split_by: the DataFrame has no column 'id'"):
        env.from_dataframe(events, split_by="id")
    with pytest.raises(ValueError, match="num_splits needs split_by"):
        env.from_dataframe(events, num_splits=3)
    with pytest.raises(TypeError, match=r"df must be a pyspark\.sql\.DataFrame, got list"):
        env.from_dataframe([1, 2])


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_value_not_fitting_output_type_names_the_field(spark, runtime) -> None:
    env = _env(runtime, 1)
    bad = env.from_collection([1, 2]).map(
        lambda v: Row(name="x", count="many" if v == 2 else v),
        Types.ROW_NAMED(["name", "count"], [Types.STRING(), Types.LONG()]),
    )
    with pytest.raises(Exception, match=r"count.*str") as info:
        _collect(bad.to_dataframe())
    assert "many" in str(info.value)


def test_unpicklable_function_is_named(spark) -> None:
    lock = threading.Lock()

    def guarded(value):
        with lock:
            return value

    env = _env("spark", 1)
    env.from_collection([1]).map(guarded).print()
    with pytest.raises(TypeError, match=r"function .*guarded of operator 'Map' cannot be pickled"):
        env.execute()


def test_no_java_says_what_is_missing(monkeypatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(spark_session.shutil, "which", lambda _name: None)
    with pytest.raises(SparkUnavailableError, match=r"Java was not found.*runtime=\"local\""):
        StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    assert env.from_collection([1, 2]).execute_and_collect(limit=2) == [1, 2]


def test_spark_is_the_default_runtime(monkeypatch) -> None:
    monkeypatch.delenv("SPARKTIDE_RUNTIME", raising=False)
    assert StreamExecutionEnvironment.get_execution_environment().get_runtime() == "spark"
    monkeypatch.setenv("SPARKTIDE_RUNTIME", "local")
    assert StreamExecutionEnvironment.get_execution_environment().get_runtime() == "local"


def test_several_sources_in_one_job(spark) -> None:
    first = spark.createDataFrame([(i,) for i in range(7)], "x long").repartition(3)
    second = spark.createDataFrame([(i,) for i in range(100, 104)], "x long").repartition(2)
    results = {}
    for runtime in ("local", "spark"):
        env = _env(runtime, 2)
        a = env.from_dataframe(first).map(lambda r: r.x, Types.LONG())
        b = env.from_dataframe(second).map(lambda r: r.x, Types.LONG())
        c = env.from_collection([1000, 1001], Types.LONG())
        results[runtime] = _collect(c.union(a, b).to_dataframe())
    assert sorted(v for (v,) in results["spark"]) == [*range(7), *range(100, 104), 1000, 1001]
    assert results["spark"] == results["local"]


def test_to_dataframe_runs_each_function_once(spark, tmp_path) -> None:
    calls = tmp_path / "calls.txt"

    def noted(value):
        with open(calls, "a", encoding="utf-8") as out:  # a side effect per call
            out.write(f"{value}\n")
        return value

    env = _env("spark", 2)
    numbers = env.from_collection(list(range(20)), Types.INT()).map(noted, Types.INT())
    summed = numbers.key_by(lambda v: v % 3).reduce(lambda a, b: a + b)
    assert len(_collect(summed.to_dataframe())) == 20
    assert sorted(int(line) for line in calls.read_text().split()) == list(range(20))
    # without a declared type the records are looked at first: still one call per record
    calls.unlink()
    untyped = env.from_collection(list(range(20))).map(noted).key_by(lambda v: v % 3)
    frame = untyped.reduce(lambda a, b: a + b).to_dataframe()
    assert frame.columns == ["value"] and len(_collect(frame)) == 20
    assert sorted(int(line) for line in calls.read_text().split()) == list(range(20))
