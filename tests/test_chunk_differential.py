"""Chunks against records: a source reading Arrow batches hands its records on a batch at a time
through the chained map / filter / flat_map / assign_timestamps_and_watermarks
(``sparktide.execution.chunks``, on by default);
with the option off they go record by record. Random tables (late records, null fields, empty
splits), random chains (typed and untyped steps, flat_maps giving ``None`` or 0..3 outputs),
rounds and parallelism 1, 2, 4 give the same output in the same order, collected right after
the chain and after a ``key_by`` + event-time window with a late-data side output, on the local
runtime and on Spark; failures raise the same error with the same context."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chunk_jobs import ROW, table_of, windowed
from sparktide.common import Duration, Row, WatermarkStrategy
from sparktide.common.typeinfo import Types
from sparktide.core.output_tag import OutputTag
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.functions import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessFunction,
)
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.nexmark.table_source import TableSource
from sparktide.runtime.elements import WatermarkStatus
from sparktide.runtime.execution.wiring import HashChunks
from sparktide.runtime.failures import format_user_frames, notes
from sparktide.runtime.operators import process as process_ops
from sparktide.runtime.operators.simple import StreamFilter, StreamFlatMap, StreamMap
from sparktide.runtime.operators.timestamps import TimestampsAndWatermarksOperator

CHUNKS = "sparktide.execution.chunks"


@dataclass(frozen=True)
class Step:
    kind: str  # map, filter, flat_map, timestamps (assign_timestamps_and_watermarks)
    a: int
    typed: bool  # declares ROW as its output type (a map then returns tuples, coerced)


@dataclass(frozen=True)
class Job:
    steps: tuple[Step, ...]
    bound: int | None  # None: a generator of its own (per record even with chunks)
    every: int | None
    parallelism: int


# ---------------------------------------------------------------------- the steps (closures:
# Spark pickles them by value)


def _mapper(step: Step) -> Any:
    a = step.a
    if step.typed:
        return lambda r: (r.k, r.v + a, r.x, r.ts)
    return lambda r: Row(k=r.k, v=r.v * a % 11, x=r.x, ts=r.ts)


def _filter(step: Step) -> Any:
    a = step.a
    return lambda r: (r.v + a) % 3 != 0


def _spreader(step: Step) -> Any:
    a = step.a

    def spread(r: Any) -> Any:
        n = (r.v + a) % 5
        if n == 4:
            return None  # no outputs
        return [Row(k=r.k, v=r.v + i, x=r.x, ts=r.ts) for i in range(n)]

    return spread


def _restamped(step: Step) -> WatermarkStrategy:
    """New timestamps (some later, so that some records are late); ``a`` picks the generator:
    bounded out-of-orderness of 1 or 2 ms, punctuated (it needs every record), monotonous."""
    a = step.a
    if a == 3:
        base = strategy(None)
    elif a == 4:
        base = WatermarkStrategy.for_monotonous_timestamps()
    else:
        base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(a))
    return base.with_timestamp_assigner(lambda r, _: r.ts + (r.v % 3) * 7 * a)


def chained(stream: Any, steps: tuple[Step, ...]) -> Any:
    for step in steps:
        if step.kind == "timestamps":
            stream = stream.assign_timestamps_and_watermarks(_restamped(step))
        elif step.kind == "map":
            stream = stream.map(_mapper(step), output_type=ROW if step.typed else None)
        elif step.kind == "filter":
            stream = stream.filter(_filter(step))
        else:
            stream = stream.flat_map(_spreader(step), output_type=ROW if step.typed else None)
    return stream


def strategy(bound: int | None) -> WatermarkStrategy:
    if bound is None:
        from sparktide.common.watermark_strategy import PunctuatedWatermarks

        base = WatermarkStrategy.for_generator(
            lambda ctx: PunctuatedWatermarks(lambda r: r.ts - 5 if r.v % 7 == 0 else None)
        )
    else:
        base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(bound))
    return base.with_timestamp_assigner(lambda r, _: r.ts)


def environment(runtime: str, job: Job, chunks: bool) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(job.parallelism)
    env.get_config().set_watermark_every(job.every)
    env.configure({CHUNKS: str(chunks).lower()})
    return env


# ---------------------------------------------------------------------- local runtime


def run_local(table: pa.Table, splits: int, job: Job, chunks: bool, window: bool) -> list[Any]:
    env = environment("local", job, chunks)
    source = env.from_source(TableSource(table, ROW, splits), strategy(job.bound), "events")
    out = chained(source, job.steps)
    return list((windowed(out) if window else out).execute_and_collect())


record = st.tuples(
    st.sampled_from(("a", "b", "ü", "日本")),
    st.integers(-6, 20),
    st.one_of(st.none(), st.integers(-4, 4).map(float)),
    st.integers(0, 60),  # out of order by up to 60 ms: late records with small bounds
)
step = st.builds(
    Step,
    st.sampled_from(("map", "filter", "flat_map", "timestamps")),
    st.integers(1, 4),
    st.booleans(),
)
jobs = st.builds(
    Job,
    st.lists(step, max_size=4).map(tuple),
    st.sampled_from((None, 0, 3)),
    st.sampled_from((None, 1, 5)),
    st.sampled_from((1, 2, 4)),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(st.lists(record, max_size=40), st.integers(1, 3), jobs)
def test_chunks_give_the_records_output_locally(rows, splits, job) -> None:
    table = table_of(rows)
    for window in (False, True):
        on = run_local(table, splits, job, True, window)
        off = run_local(table, splits, job, False, window)
        assert on == off


def test_chunks_go_through_the_chain(monkeypatch) -> None:
    """With chunks on, each step takes the split's batch in one call (a real chunk path)."""
    sizes: dict[str, list[int]] = {"map": [], "filter": [], "flat_map": []}
    for name, cls in (("map", StreamMap), ("filter", StreamFilter), ("flat_map", StreamFlatMap)):
        original = cls.process_chunk

        def spy(self, seqs, values, timestamps, _name=name, _original=original):
            sizes[_name].append(len(values))
            return _original(self, seqs, values, timestamps)

        monkeypatch.setattr(cls, "process_chunk", spy)
    rows = [("a", i, None, i) for i in range(30)]
    job = Job(
        (Step("map", 2, True), Step("flat_map", 1, False), Step("filter", 1, False)), 0, None, 1
    )
    on = run_local(table_of(rows), 1, job, True, False)
    assert sizes["map"] == [30] and len(sizes["flat_map"]) == 1 and len(sizes["filter"]) == 1
    assert on == run_local(table_of(rows), 1, job, False, False)
    assert len(sizes["map"]) == 1  # off: no chunks


def test_timestamps_take_whole_chunks(monkeypatch) -> None:
    """An assigner in the chain takes the chunk in one call when its generator only keeps the
    largest timestamp, and goes record by record otherwise (a punctuated generator)."""
    calls = {"chunk": 0, "record": 0}
    chunk, element = (
        TimestampsAndWatermarksOperator.process_chunk,
        (TimestampsAndWatermarksOperator.process_element),
    )

    def on_chunk(self, seqs, values, timestamps):
        calls["chunk"] += 1
        return chunk(self, seqs, values, timestamps)

    def on_record(self, record):
        calls["record"] += 1
        return element(self, record)

    monkeypatch.setattr(TimestampsAndWatermarksOperator, "process_chunk", on_chunk)
    monkeypatch.setattr(TimestampsAndWatermarksOperator, "process_element", on_record)
    rows = [("a", i, None, i) for i in range(30)]
    for a, records in ((2, 0), (3, 30)):
        calls.update(chunk=0, record=0)
        job = Job((Step("timestamps", a, False), Step("map", 1, False)), 0, None, 1)
        on = run_local(table_of(rows), 1, job, True, True)
        assert calls == {"chunk": 1, "record": records}
        assert on == run_local(table_of(rows), 1, job, False, True)


# ---------------------------------------------------------------------- failures


def _fail_map(r: Any) -> Any:
    if r.v == 5:
        raise ValueError(f"bad v {r.v}")
    return r


def _fail_flat_map(r: Any) -> Any:
    yield r
    if r.v == 5:
        raise ValueError("half way")
    yield r


FAILURES = {
    "map": lambda s: s.map(_fail_map),
    "filter": lambda s: s.filter(lambda r: 1 / (r.v - 5) > -9),
    "flat_map": lambda s: s.flat_map(_fail_flat_map),
    "coercion": lambda s: s.map(lambda r: (r.k, 1.5 if r.v == 5 else r.v, r.x, r.ts), ROW),
    "key selector": lambda s: s.map(lambda r: r).key_by(lambda r: 1 / (r.v - 5)).map(str),
    "null key": lambda s: s.map(lambda r: r).key_by(lambda r: None if r.v == 5 else r.k).map(str),
    "sink": lambda s: s.map(lambda r: r).add_sink(_FailingSink()) and None,
    "timestamp assigner": lambda s: s.map(lambda r: r),
    "timestamps operator": lambda s: s.map(lambda r: r).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            lambda r, _: r.ts // (r.v - 5)
        )
    ),
}


class _FailingSink:
    def invoke(self, value: Any, context: Any) -> None:
        if value.v == 5:
            raise ValueError("sink refuses 5")


def _failure(kind: str, chunks: bool, assigner_fails: bool) -> BaseException:
    job = Job((), 0, 3, 1)
    env = environment("local", job, chunks)
    rows = [("a", v, None, v) for v in range(12)]

    assigner_fails = assigner_fails or kind == "timestamp assigner"

    def stamp(r: Any, _: int) -> int:
        if assigner_fails and r.v == 7:
            raise KeyError("no time")
        return r.ts

    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(stamp)
    source = env.from_source(TableSource(table_of(rows), ROW, 1), strategy, "events")
    stream = FAILURES[kind](source)
    with pytest.raises(Exception) as caught:
        if stream is None:
            env.execute("failing")
        else:
            stream.execute_and_collect()
    return caught.value


@pytest.mark.parametrize("assigner_fails", [False, True])
@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_a_failure_in_a_chunk_is_the_records_failure(kind, assigner_fails) -> None:
    on = _failure(kind, True, assigner_fails)
    off = _failure(kind, False, assigner_fails)
    assert type(on) is type(off) and str(on) == str(off)
    assert notes(on) == notes(off) and notes(on)
    assert format_user_frames(on) == format_user_frames(off)


# ---------------------------------------------------------------------- Spark


SPARK_JOB = (
    Step("map", 3, True),
    Step("timestamps", 2, False),
    Step("flat_map", 2, False),
    Step("filter", 1, False),
)


def _spark_rows() -> list[tuple[str, int, float | None, int]]:
    rng = random.Random(7)
    return [
        (
            rng.choice("abcde"),
            rng.randrange(-5, 30),
            rng.choice((None, 1.0, 2.5)),
            i + rng.randrange(0, 40),
        )
        for i in range(300)
    ]


def _frame_job(runtime: str, df: Any, parallelism: int, chunks: bool) -> list[Any]:
    job = Job(SPARK_JOB, 5, 25, parallelism)
    env = environment(runtime, job, chunks)
    bounded = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    source = env.from_dataframe(df, bounded, timestamp_column="ts")  # timestamps by column
    out = chained(source, job.steps)
    keyed = [
        processed(stream, False, False).map(
            lambda e: Row(k=f"{e[0]} {e[1][0]}", v=e[1][1], x=None, ts=e[2]), ROW
        )
        for stream in (source, out)  # out: a flat_map's outputs cross the keyed exchange
    ]
    return list(
        out.union(
            windowed(out).map(lambda t: Row(k=t[0], v=0, x=None, ts=0), ROW), *keyed
        ).execute_and_collect()
    )


def test_chunks_give_the_records_output_on_spark(spark) -> None:
    """Chunks, and the outputs of a keyed process function handed on by the operator (see
    :func:`test_keyed_process_outputs_are_the_general_paths`), straight from the source and
    after a flat_map, on Spark: the records of the general path on the local runtime, at
    parallelism 1, 2 and 4."""
    df = spark.createDataFrame(_spark_rows(), "k string, v long, x double, ts long").repartition(3)
    with pytest.MonkeyPatch.context() as patch:
        _general_emitter(patch)
        expected = _frame_job("local", df, 2, False)
        assert _frame_job("local", df, 1, True) == expected
    assert len(expected) > 300
    for parallelism in (1, 2, 4):
        assert _frame_job("spark", df, parallelism, True) == expected
    assert _frame_job("spark", df, 2, False) == expected


# ---------------------------------------------------------------------- the split reader


class _ChunkOutput:
    """Records every element; a chunk as the records it holds (its items, in order)."""

    def __init__(self) -> None:
        self.elements: list[Any] = []
        self.chunks = 0

    def collect(self, record: Any) -> None:
        self.elements.append(("record", record.value, record.timestamp))

    def collect_chunk(self, values: list[Any], timestamps: list[Any]) -> None:
        self.chunks += 1
        self.elements.extend(("record", v, t) for v, t in zip(values, timestamps, strict=True))

    def emit_watermark(self, watermark: Any) -> None:
        self.elements.append(("watermark", watermark.timestamp))

    def emit_watermark_status(self, status: Any) -> None:
        self.elements.append(("status", status))


def _read(strategy: WatermarkStrategy, chunked: bool, reads: list[int]) -> tuple[Any, Any]:
    """Rounds of ``reads`` records (the clock 10 ms on per round) from chunks of 4, 0 and 3
    records; the elements emitted and the generator's state at the end."""
    from sparktide.common.arrow_rows import RecordChunks
    from sparktide.common.watermark_strategy import snapshot_generator_state
    from sparktide.runtime.processing_time import ManualProcessingTimeService
    from sparktide.runtime.source_reader import SplitReader

    clock = ManualProcessingTimeService()
    chunks = [[5, 3, 9, 8], [], [12, 10, 11]] * 3
    out = _ChunkOutput()
    reader = SplitReader(RecordChunks(iter(chunks)), strategy, clock, out, chunked=chunked)
    assert reader.chunked is chunked
    for n in reads:
        clock.set_current_time(clock.get_current_processing_time() + 10)
        if n == 1:
            reader.read_next()
        else:
            reader.read_up_to(n)
        reader.emit_periodic()
    reader.finish()
    assert chunked == (out.chunks > 0)
    return out.elements, snapshot_generator_state(reader.generator)


STRATEGIES = {
    "bounded": WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)),
    "monotonous": WatermarkStrategy.for_monotonous_timestamps(),
    "idleness": WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_idleness(
        Duration.of_millis(15)
    ),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_chunked_reader_emits_what_a_record_reader_does(name) -> None:
    strategy = STRATEGIES[name].with_timestamp_assigner(lambda v, _: v)
    reads = [2, 0, 0, 0, 5, 1, 0, 0, 0, 9, 30]  # idle rounds between reads
    chunked = _read(strategy, True, reads)
    assert chunked == _read(strategy, False, reads)
    if name == "idleness":
        assert ("status", WatermarkStatus.IDLE) in chunked[0]


# ---------------------------------------------------------------------- timestamps by column


COLUMNS = {
    "long": pa.array([5, -3, 2**40], pa.int64()),
    "int": pa.array([7, 0, -1], pa.int32()),
    "ms": pa.array([1, -1, 10**12], pa.timestamp("ms")),
    "us": pa.array([1500, -1, -1000, 10**15 + 999], pa.timestamp("us")),
    "us UTC": pa.array([1500, -2500], pa.timestamp("us", tz="UTC")),
    "us Tokyo": pa.array([1500, -2500], pa.timestamp("us", tz="Asia/Tokyo")),
}
REFUSED = {
    "null": pa.array([1, None], pa.int64()),
    "null timestamp": pa.array([None, 1], pa.timestamp("us")),
    "double": pa.array([1.0, 2.0]),
    "string": pa.array(["2024-01-01"]),
    "seconds": pa.array([1, 2], pa.timestamp("s")),
}


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_timestamps_by_column_are_those_of_the_rows(name) -> None:
    from sparktide.common.arrow_rows import rows_of_batch
    from sparktide.spark.frames import ColumnTimestampAssigner

    rows = rows_of_batch(
        pa.record_batch({"v": range(len(COLUMNS[name])), "ts": COLUMNS[name]}), ["v", "ts"]
    )
    assigner = ColumnTimestampAssigner(1, "ts")
    by_row = [assigner.extract_timestamp(r, 0) for r in rows]
    by_column = assigner.column_timestamps(rows)
    assert by_column == by_row and all(type(t) is int for t in by_column)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_timestamps_by_column_leave_the_rest_to_the_rows(name) -> None:
    from sparktide.common.arrow_rows import rows_of_batch
    from sparktide.spark.frames import ColumnTimestampAssigner

    rows = rows_of_batch(pa.record_batch({"ts": REFUSED[name]}), ["ts"])
    assert ColumnTimestampAssigner(0, "ts").column_timestamps(rows) is None
    assert ColumnTimestampAssigner(0, "ts").column_timestamps(list(rows)) is None


def test_a_null_timestamp_by_column_is_the_rows_error(spark) -> None:
    rows = [("a", 1, None, 5), ("a", 2, None, None), ("b", 3, None, 9)]
    df = spark.createDataFrame(rows, "k string, v long, x double, ts long").coalesce(1)
    errors = []
    for chunks in (True, False):
        env = environment("local", Job((), 0, None, 1), chunks)
        bounded = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
        stream = env.from_dataframe(df, bounded, timestamp_column="ts").map(lambda r: r)
        with pytest.raises(ValueError, match="holds null") as caught:
            stream.execute_and_collect()
        errors.append((str(caught.value), notes(caught.value)))
    assert errors[0] == errors[1]


# ---------------------------------------------------------------------- keyed exchanges


class _Both(KeyedCoProcessFunction):
    """Every record of either input, with its input, key and timestamp, in arrival order."""

    def process_element1(self, value: Any, ctx: Any) -> Any:
        yield (1, repr(ctx.get_current_key()), tuple(value), ctx.timestamp())

    def process_element2(self, value: Any, ctx: Any) -> Any:
        yield (2, repr(ctx.get_current_key()), tuple(value), ctx.timestamp())


KEYS = {
    "text": lambda r: r.k,
    "tuple": lambda r: (r.k, r.v % 3),
    "bytearray": lambda r: bytearray(r.k.encode()),  # hashed by assign_to_key_group, not cached
    "long": lambda r: (r.v - 7) * 3**40 + r.ts,  # ints over the Java long range's width
}


def _connected(table: pa.Table, job: Job, chunks: bool, key: str) -> list[Any]:
    env = environment("local", job, chunks)
    one = env.from_source(TableSource(table, ROW, 2), strategy(job.bound), "one")
    two = chained(
        env.from_source(TableSource(table, ROW, 3), strategy(job.bound), "two"), job.steps
    )
    keyed = one.connect(two).key_by(KEYS[key], lambda r: r.k)
    return list(keyed.process(_Both()).execute_and_collect())


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(st.lists(record, max_size=40), jobs, st.sampled_from(sorted(KEYS)))
def test_a_keyed_exchange_of_chunks_gives_the_records_order(rows, job, key) -> None:
    """Both inputs of a keyed two-input operator (one straight from its source, one after a
    chain) cross the exchange as chunks: the same records, keys and order per key."""
    table = table_of(rows)
    assert _connected(table, job, True, key) == _connected(table, job, False, key)


def test_a_keyed_exchange_takes_whole_chunks(monkeypatch) -> None:
    """With chunks on, a hash exchange after a chain takes the split's batch in one call, and
    a key of an unsupported type fails as record by record, naming the same key_by."""
    sizes: list[int] = []
    original = HashChunks.collect_chunk

    def spy(self, seqs, values, timestamps):
        sizes.append(len(values))
        return original(self, seqs, values, timestamps)

    monkeypatch.setattr(HashChunks, "collect_chunk", spy)
    table = table_of([("a", i, None, i) for i in range(30)])
    job = Job((Step("map", 2, True),), 0, None, 2)
    assert _connected(table, job, True, "text") == _connected(table, job, False, "text")
    assert sorted(sizes) == [10, 10, 10, 15, 15]  # a call per split (2 and 3 splits)
    errors = []
    for chunks in (True, False):
        env = environment("local", job, chunks)
        source = env.from_source(TableSource(table, ROW, 1), strategy(0), "events")
        stream = source.map(lambda r: r).key_by(lambda r: [r.k] if r.v == 9 else r.k).map(str)
        with pytest.raises(TypeError, match="unsupported key type list") as caught:
            stream.execute_and_collect()
        errors.append((str(caught.value), notes(caught.value)))
    assert errors[0] == errors[1]
    # the key is the key_by's: the note names the operator it feeds, and the record keyed
    assert "operator 'KeyedProcess' (in its key_by) for record Row(k='a', v=9," in errors[0][1][0]


# ---------------------------------------------------------------------- keyed process outputs


OUT = Types.TUPLE([Types.STRING(), Types.LONG()])
SIDE = OutputTag("side", OUT)
FAILED = OutputTag("failed")


class _Counting(KeyedProcessFunction):
    """A count per key in ValueState, an event-time timer 3 ms after each record; outputs of
    the declared type as they are and as lists (rebuilt), side outputs by ``yield`` and by
    ``ctx.output``; with ``fails``, a ValueError for ``v == 13`` and an output of the wrong
    type for ``v == 17``."""

    def __init__(self, fails: bool) -> None:
        self.fails = fails

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        c = (self.count.value() or 0) + 1
        self.count.update(c)
        ctx.timer_service().register_event_time_timer(value.ts + 3)
        if value.v % 4 == 0:
            yield SIDE, (value.k, -c)
        if value.v % 5 == 0:
            ctx.output(SIDE, (value.k, value.v))
        yield [value.k, c] if value.v % 2 else (value.k, c)
        if self.fails and value.v == 13:
            raise ValueError("thirteen")
        if self.fails and value.v == 17:
            yield value.k, 1.5  # not a LONG: the coercion's error

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), timestamp


class _Stamped(ProcessFunction):
    """Each value as ``(name, value, timestamp)``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield self.name, value, ctx.timestamp()


def processed(stream: Any, fails: bool, guarded: bool) -> Any:
    """``("main" | "side", value, timestamp)`` or ``("failed", v)`` of ``_Counting`` after
    ``key_by(k)``, its main output through a filter; ``guarded``: its failed records go to a
    side output."""
    main = stream.key_by(lambda r: r.k).process(_Counting(fails), OUT)
    if guarded:
        main = main.with_failed_records(FAILED)
    tail = main.filter(lambda t: t[1] % 3 != 1).process(_Stamped("main"))
    side = main.get_side_output(SIDE).process(_Stamped("side"))
    if guarded:
        side = side.union(main.get_side_output(FAILED).map(lambda f: ("failed", f.value.v)))
    return tail.union(side)


def _process_job(table: Any, job: Job, kind: str) -> list[Any]:
    env = environment("local", job, True)
    source = env.from_source(TableSource(table, ROW, 2), strategy(job.bound), "events")
    stream = processed(chained(source, job.steps), kind != "plain", kind == "guarded")
    return list(stream.execute_and_collect())


def _general_emitter(monkeypatch: Any) -> None:
    """Process operators send their results through ``emit_results`` and the node output."""
    monkeypatch.setattr(
        process_ops, "results_emitter", lambda op: partial(process_ops.emit_results, op)
    )


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    st.lists(record, min_size=10, max_size=60),
    jobs,
    st.sampled_from(("plain", "guarded", "failing")),
)
@example([("a", 17, None, 1), ("b", 4, None, 0)] * 5, Job((), 0, None, 2), "failing")
def test_keyed_process_outputs_are_the_general_paths(rows, job, kind) -> None:
    """A keyed process function's outputs coerced and handed to their one target by the
    operator (results_emitter) are those of emit_results through the node output: the same
    records, timestamps, side outputs and failed records (``guarded``), in the same order, at
    parallelism 1, 2 and 4 with late records; a function that raises or gives an output of
    the wrong type fails the same way (``failing``). (On Spark:
    :func:`test_chunks_give_the_records_output_on_spark`.)"""
    table = table_of(rows)
    made: list[str] = []
    emitter = process_ops.results_emitter

    def spy(op: Any) -> Any:
        made.append(getattr(emitter(op), "__name__", "general"))
        return emitter(op)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(process_ops, "results_emitter", spy)
        fast = _outcome(lambda: _process_job(table, job, kind))
    assert made.count("emit_coerced") == job.parallelism  # the KeyedProcess's subtasks
    with pytest.MonkeyPatch.context() as patch:
        _general_emitter(patch)
        assert _outcome(lambda: _process_job(table, job, kind)) == fast


def _counted(table: Any, job: Job, chunks: bool) -> list[Any]:
    env = environment("local", job, chunks)
    source = env.from_source(TableSource(table, ROW, 3), strategy(job.bound), "events")
    return list(processed(chained(source, job.steps), False, False).execute_and_collect())


spread_chains = st.builds(
    lambda before, a, after: (*before, Step("flat_map", a, False), *after),
    st.lists(step, max_size=2).map(tuple),
    st.integers(1, 4),
    st.lists(step, max_size=2).map(tuple),
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(st.lists(record, min_size=10, max_size=60), spread_chains, st.sampled_from((None, 0, 3)))
@example([("a", i % 7, None, i) for i in range(60)], (Step("flat_map", 2, False),), 5)
def test_a_flat_map_before_a_key_by_keeps_the_order_per_key(rows, steps, bound) -> None:
    """The outputs of one source record (a flat_map's, in the source stage) reach the keyed
    operator, and its results the collect, in the same order at parallelism 1, 2 and 4, chunks
    on and off: each output has a position of its own."""
    table = table_of(rows)
    expected = _counted(table, Job(steps, bound, 25, 1), False)
    for parallelism in (1, 2, 4):
        job = Job(steps, bound, 25, parallelism)
        for chunks in (True, False):
            assert _counted(table, job, chunks) == expected, (parallelism, chunks)


def _outcome(run: Any) -> Any:
    """What ``run()`` returns, or its error (type, message, notes)."""
    try:
        return run()
    except Exception as exc:
        return type(exc), str(exc), notes(exc)
