"""``map_batches`` on columns against ``map_batches`` on records: in a split's chain, a chunk made
from an Arrow batch of exactly the step's input columns is handed to the function as that batch,
and its output goes on as the function's columns (to a typed frame) or as records keeping them;
with ``sparktide.execution.chunks`` off everything goes record by record and through Python.
Random tables (late records, null fields, dictionary-encoded or plain text), random steps before
it (filters, flat_maps giving several outputs per record), one or two vectorized steps, batch
sizes cutting through a record's outputs, rounds and parallelism 1, 2, 4 give the same output
in the same order, right after the steps and after a ``key_by`` + event-time window with a
late-data side output, on the local runtime and on Spark."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunk_jobs import NAMES, ROW, windowed
from sparktide.common import Duration, Row, WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.nexmark.table_source import TableSource
from sparktide.runtime.operators.batch_columns import BatchColumns

CHUNKS = "sparktide.execution.chunks"
SIZE = "sparktide.execution.map-batches.size"


@dataclass(frozen=True)
class Job:
    before: str  # "" (none), "filter" or "flat_map" (0..3 outputs per record)
    steps: int  # vectorized steps, 1 or 2
    size: int  # the batch size
    bound: int  # the watermark bound
    every: int | None
    parallelism: int


def shifted(a: int) -> Any:
    """A vectorized step: ``k`` upper-cased, ``v + a``, ``x * a`` (nulls stay null)."""

    def shift(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch(
            {
                "k": pc.utf8_upper(batch.column("k")),
                "v": pc.add(batch.column("v"), a),
                "x": pc.multiply(batch.column("x"), float(a)),
                "ts": batch.column("ts"),
            }
        )

    return shift


def _spread(r: Any) -> Any:
    n = (r.ts + (r.v or 0)) % 4
    return [Row(k=r.k, v=None if r.v is None else r.v + i, x=r.x, ts=r.ts) for i in range(n)]


def stepped(stream: Any, job: Job) -> Any:
    if job.before == "filter":
        stream = stream.filter(lambda r: r.ts % 3 != 0)
    elif job.before == "flat_map":
        stream = stream.flat_map(_spread, output_type=ROW)
    for a in range(1, job.steps + 1):
        stream = stream.map_batches(shifted(a), ROW)
    return stream


def environment(runtime: str, job: Job, chunks: bool) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(job.parallelism)
    env.get_config().set_watermark_every(job.every)
    env.configure({CHUNKS: str(chunks).lower(), SIZE: str(job.size)})
    return env


def bounded(job: Job) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(job.bound))


# ---------------------------------------------------------------------- local runtime


def table_of(rows: list[tuple[str, int | None, float | None, int]], dictionary: bool) -> pa.Table:
    k, v, x, ts = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    keys = pa.array(k, pa.string())
    return pa.table(
        {
            "k": keys.dictionary_encode() if dictionary else keys,
            "v": pa.array(v, pa.int64()),
            "x": pa.array(x, pa.float64()),
            "ts": pa.array(ts, pa.int64()),
        }
    )


def run_local(table: pa.Table, splits: int, job: Job, chunks: bool, window: bool) -> list[Any]:
    env = environment("local", job, chunks)
    strategy = bounded(job).with_timestamp_assigner(lambda r, _: r.ts)
    source = env.from_source(TableSource(table, ROW, splits), strategy, "events")
    out = stepped(source, job)
    return list((windowed(out) if window else out).execute_and_collect())


record = st.tuples(
    st.sampled_from(("a", "b", "ü", "日本")),
    st.one_of(st.none(), st.integers(-6, 20)),
    st.one_of(st.none(), st.integers(-4, 4).map(float)),
    st.integers(0, 60),  # out of order by up to 60 ms: late records with small bounds
)
jobs = st.builds(
    Job,
    st.sampled_from(("", "filter", "flat_map")),
    st.sampled_from((1, 2)),
    st.sampled_from((1, 3, 4096)),
    st.sampled_from((0, 3)),
    st.sampled_from((None, 1, 5)),
    st.sampled_from((1, 2, 4)),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(st.lists(record, max_size=40), st.integers(1, 3), st.booleans(), jobs)
def test_columns_give_the_records_output_locally(rows, splits, dictionary, job) -> None:
    table = table_of(rows, dictionary)
    for window in (False, True):
        on = run_local(table, splits, job, True, window)
        off = run_local(table, splits, job, False, window)
        assert on == off


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_batches_ending_within_a_records_outputs_keep_their_order(parallelism) -> None:
    """Batches of 3 after a flat_map of 0..3 outputs per record: a batch often ends between two
    outputs of one record; they keep their places (in a window's reduce too)."""
    rng = random.Random(parallelism)
    for every in (None, 5):
        rows = [
            (rng.choice("ab"), rng.choice((None, rng.randrange(20))), None, rng.randrange(60))
            for _ in range(40)
        ]
        table = table_of(rows, False)
        job = Job("flat_map", 1, 3, 3, every, parallelism)
        for window in (False, True):
            assert run_local(table, 2, job, True, window) == run_local(table, 2, job, False, window)


def test_a_batch_of_the_input_columns_is_handed_over_as_it_is(monkeypatch) -> None:
    """Columns of the declared types (or dictionary-encoded with values of them): no records
    become columns, in either step; an Arrow type of another kind goes through the records."""
    built: list[int] = []
    original = BatchColumns.batch

    def spy(self: BatchColumns, values: Any, where: str) -> pa.RecordBatch:
        built.append(len(values))
        return original(self, values, where)

    monkeypatch.setattr(BatchColumns, "batch", spy)
    rows = [("a", i, None, i) for i in range(30)]
    job = Job("", 2, 4096, 0, None, 1)
    on = run_local(table_of(rows, False), 1, job, True, False)
    assert built == [] and [r.v for r in on] == [i + 3 for i in range(30)]
    assert on == run_local(table_of(rows, True), 1, job, True, False)
    assert built == []
    wide = table_of(rows, False)
    wide = wide.set_column(1, "v", wide.column("v").cast(pa.int32()))
    assert on == run_local(wide, 1, job, True, False)
    assert built == [30]  # the first step's batch; the second gets the first's columns
    assert on == run_local(table_of(rows, False), 1, job, False, False)


# ---------------------------------------------------------------------- Spark


def _spark_rows() -> list[tuple[str, int | None, float | None, int]]:
    rng = random.Random(11)
    return [
        (
            rng.choice("abcde"),
            rng.choice((None, rng.randrange(-5, 30))),
            rng.choice((None, 1.0, 2.5)),
            i + rng.randrange(0, 40),
        )
        for i in range(300)
    ]


def _frame_job(runtime: str, df: Any, job: Job, chunks: bool, how: str) -> list[Any]:
    """``how``: "window" (the records and the windows after them, in order), "records" (in
    order), "frame" (written to a typed frame from the step's columns, sorted), "ordered" (to
    an ordered typed frame, in its order) or "ordered window" (the records and the windows
    after them in an ordered typed frame)."""
    env = environment(runtime, job, chunks)
    source = env.from_dataframe(df, bounded(job), timestamp_column="ts")  # timestamps by column
    out = stepped(source, job)
    if how == "frame":
        return sorted((tuple(r) for r in out.to_dataframe(ordered=False).collect()), key=repr)
    if how.endswith("window"):
        out = out.union(windowed(out).map(lambda t: Row(k=t[0], v=0, x=None, ts=0), ROW))
    if how.startswith("ordered"):
        return [tuple(r) for r in out.to_dataframe().collect()]
    return list(out.execute_and_collect())


def test_columns_give_the_records_output_on_spark(spark) -> None:
    df = spark.createDataFrame(_spark_rows(), "k string, v long, x double, ts long").repartition(3)
    for parallelism, before in ((1, ""), (2, "flat_map"), (4, "filter")):
        job = Job(before, 2, 7, 5, 25, parallelism)
        expected = _frame_job("local", df, job, False, "window")
        assert len(expected) > 100
        assert _frame_job("spark", df, job, True, "window") == expected
        records = sorted(map(tuple, _frame_job("local", df, job, False, "records")), key=repr)
        assert _frame_job("spark", df, job, True, "frame") == records


def _late_rows(seed: int) -> list[tuple[str, int | None, float | None, int]]:
    """Rows out of order by up to 40 ms (late ones with a bound of 5 ms), nulls among them."""
    rng = random.Random(seed)
    return [
        (
            rng.choice("abcd"),
            rng.choice((None, rng.randrange(-5, 30))),
            rng.choice((None, 0.5, 2.0)),
            i + rng.randrange(0, 40),
        )
        for i in range(rng.randrange(150, 250))
    ]


def test_an_ordered_frame_from_columns_gives_the_records_order_on_spark(spark) -> None:
    """An ordered typed frame fed by ``map_batches`` takes its output columns with their
    positions: the frame holds what the general path gives (records through Python, chunks off,
    on the local runtime), in its order, also with a keyed window's records among them and
    batches cutting through a record's outputs."""
    schema = "k string, v long, x double, ts long"
    cases = ((1, "", 4096, False), (2, "flat_map", 7, True), (4, "filter", 3, True))
    for seed, (parallelism, before, size, window) in enumerate(cases):
        df = spark.createDataFrame(_late_rows(seed), schema).repartition(3)
        job = Job(before, 1 + seed % 2, size, 5, 25, parallelism)
        general = _frame_job("local", df, job, False, "window" if window else "records")
        expected = [tuple(r) for r in general]
        assert len(expected) > 100
        ordered = _frame_job("spark", df, job, True, "ordered window" if window else "ordered")
        assert ordered == expected, parallelism


def test_an_ordered_frame_is_written_from_the_steps_columns(spark, monkeypatch) -> None:
    """The task of an ordered frame fed by ``map_batches`` (run here, in this process, on the
    source's Arrow batches) makes no record of the step's output: its rows are the function's
    columns and the positions the records would get."""
    from sparktide.spark import spark_job
    from sparktide.spark.frame_rows import FrameRows

    tasks: list[Any] = []
    original = spark_job.SparkJob.frame_source_task

    def spy(self: Any, first_split: int, node_id: int) -> Any:
        tasks.append((self, original(self, first_split, node_id)))
        return tasks[-1][1]

    monkeypatch.setattr(spark_job.SparkJob, "frame_source_task", spy)
    rows = _late_rows(7)
    df = spark.createDataFrame(rows, "k string, v long, x double, ts long").coalesce(1)
    job = Job("", 1, 16, 5, 25, 1)
    env = environment("spark", job, True)
    source = env.from_dataframe(df, bounded(job), timestamp_column="ts")
    expected = [tuple(r) for r in stepped(source, job).to_dataframe().collect()]
    sparkjob, task = tasks[-1]
    made: list[int] = []  # records made of the step's output, records written to the frame
    monkeypatch.setattr(
        BatchColumns, "records_of", lambda self, batch: made.append(batch.num_rows) or []
    )
    monkeypatch.setattr(
        "sparktide.spark.frame_rows.to_record_batch", lambda values, t: made.append(len(values))
    )
    batches = df.toArrow().to_batches(max_chunksize=50)
    out = pa.Table.from_batches(list(task(iter(batches))))
    assert made == []
    frame_rows: FrameRows = sparkjob.frame_rows
    (target,) = frame_rows.targets
    assert target.ordered
    written = frame_rows.table(
        out.filter(pc.equal(out.column("target"), target.node_id)), target.node_id
    )
    assert [tuple(r.values()) for r in written.to_pylist()] == expected
    assert len(expected) == len(rows)


def test_a_value_collector_counts_the_records_it_holds_as_columns() -> None:
    """What a task holds for shipping counts each record of a batch of columns (the task ships
    once it holds its buffer's worth)."""
    from sparktide.runtime.operators.simple import ColumnValues, ValueCollector

    collector = ValueCollector([], 3)
    collector.collect_values([1, 2])
    collector.collect_columns(ColumnValues(pa.record_batch({"value": [3, 4, 5]})))
    assert collector.held == 5 and len(collector.out) == 3
    collector.clear()
    assert collector.held == 0 and collector.out == []


# ---------------------------------------------------------------------- rows built on first read


def test_a_sources_rows_are_built_only_where_something_reads_them(monkeypatch) -> None:
    """A chain starting with ``map_batches`` takes the source's batches without building their
    rows; one starting with ``map`` builds each batch's rows once; both give the records
    output."""
    from sparktide.common.arrow_rows import BatchRows

    built: list[int] = []
    original = BatchRows.rows

    def spy(self: BatchRows) -> Any:
        if not self.built:
            built.append(len(self))
        return original(self)

    monkeypatch.setattr(BatchRows, "rows", spy)
    rng = random.Random(5)
    rows = [(rng.choice("abc"), rng.randrange(9), None, rng.randrange(60)) for _ in range(50)]
    table = table_of(rows, True)

    def run(chunks: bool, first: str) -> list[Any]:
        env = environment("local", Job("", 1, 7, 0, None, 1), chunks)
        source = env.from_source(TableSource(table, ROW, 2), WatermarkStrategy.no_watermarks(), "s")
        if first == "map":
            source = source.map(lambda r: r, ROW)
        return list(source.map_batches(shifted(2), ROW).execute_and_collect())

    expected = run(False, "map_batches")
    assert len(expected) == 50 and built == [25, 25]  # record by record: the rows, once
    built.clear()
    assert run(True, "map_batches") == expected
    assert built == []
    assert run(True, "map") == expected
    assert built == [25, 25]


def test_batch_rows_read_like_their_rows() -> None:
    from sparktide.common.arrow_rows import BatchRows, batch_rows, cut, rows_of_batch

    batch = pa.record_batch({"k": pa.array(["x", "y", "z"]).dictionary_encode(), "v": [1, 2, 3]})
    lazy = batch_rows(batch, ["v", "k"])
    rows = rows_of_batch(batch, ["v", "k"])
    assert len(lazy) == 3 and not lazy.built
    part = cut(lazy, 1, 9)  # past the end: to the end, as a list slice
    assert type(part) is BatchRows and len(part) == 2 and not lazy.built
    assert len(lazy[1:]) == len(part[:]) == 2 and not lazy.built
    assert list(part) == rows[1:] and list(lazy[1:]) == rows[1:]
    assert lazy.column(1) == ["x", "y", "z"] and not lazy.built
    assert lazy[2] == rows[2] and list(lazy) == rows and lazy.rows() is lazy.rows()
    assert cut(lazy, 0, 3) is lazy and lazy.rows().columns == rows.columns


def test_a_batch_mixing_records_and_unbuilt_rows_builds_them() -> None:
    """Records one by one and a chunk of unbuilt rows in one batch: the batch is made from the
    records, the chunk's rows built from its columns."""
    from sparktide.common.arrow_rows import batch_rows
    from sparktide.runtime.elements import StreamRecord
    from sparktide.runtime.operators.map_batches import BatchFormat, MapBatchesOperator
    from sparktide.testing import OneInputStreamOperatorTestHarness

    columns = BatchColumns.of(ROW)
    op = MapBatchesOperator(shifted(1), columns, columns, BatchFormat.PYARROW, 4)
    chunks: list[Any] = []
    op.chunk_output = lambda seqs, values, ts: chunks.append((list(seqs), list(values), ts))
    op.chunk_at = lambda seq: None
    h = OneInputStreamOperatorTestHarness(op)
    h.open()
    h.process_element(StreamRecord(Row(k="a", v=1, x=None, ts=5), 5))
    batch = table_of([("b", 2, 1.5, 6), ("c", None, None, 7), ("d", 4, None, 8)], True)
    op.process_chunk([1, 2, 3], batch_rows(batch.to_batches()[0], NAMES), [6, 7, 8])
    assert [r.value for r in h.get_output()] == [Row(k="A", v=2, x=None, ts=5)]
    assert chunks == [
        (
            [1, 2, 3],
            [
                Row(k="B", v=3, x=1.5, ts=6),
                Row(k="C", v=None, x=None, ts=7),
                Row(k="D", v=5, x=None, ts=8),
            ],
            [6, 7, 8],
        )
    ]
