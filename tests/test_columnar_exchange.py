"""The keyed exchange by columns against the general path: a split's chunk crosses a hash
exchange as runs of columns (``ExchangeBuffer``/``RecordRun``, packed by ``pack_run``), and a
stage subtask takes its input as chunks of columns (on Spark ``unpack_chunk`` and
``ChunkMerge``, locally ``ExchangeBuffer.take_chunks``; ``SubtaskSession.process_chunks``).
With ``sparktide.execution.chunks`` off every record goes through the exchange one by one as
an entry. Random tables (late records, several splits, rounds of a few records: periodic
watermarks between a split's chunks; a union with records that go one by one, as entries
beside the runs), parallelism 1, 2, 4, small task buffers: the same output in the same order
(order per key included) as the general path, on the local runtime and on Spark, through a
keyed process function with state and timers, a second keyed exchange behind it and a keyed
window with a late-data side output."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunk_jobs import ROW, table_of, windowed
from sparktide.common import Duration, Row, Types, WatermarkStrategy
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.nexmark.table_source import TableSource
from sparktide.runtime.elements import StreamRecord, Watermark
from sparktide.runtime.execution.exchange_buffer import ExchangeBuffer, RecordRun
from sparktide.runtime.execution.protocol import pack_entries, unpack_chunk

CHUNKS = "sparktide.execution.chunks"


class Running(KeyedProcessFunction):
    """Per key: a running count in state, an output per record carrying it and the watermark
    seen, and an event-time timer per record whose firing reports the count then."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 7)
        watermark = ctx.timer_service().current_watermark()
        yield Row(k=value.k, v=n, x=float(watermark % 97), ts=value.ts)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield Row(k=ctx.get_current_key(), v=-(self.count.value() or 0), x=None, ts=timestamp)


def _strategy(bound: int | None) -> WatermarkStrategy:
    if bound is None:  # a generator of its own: the split's records go one by one, as entries
        from sparktide.common.watermark_strategy import PunctuatedWatermarks

        base = WatermarkStrategy.for_generator(
            lambda ctx: PunctuatedWatermarks(lambda r: r.ts - 4 if r.v % 5 == 0 else None)
        )
    else:
        base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(bound))
    return base.with_timestamp_assigner(lambda r, _: r.ts)


def _keyed(source: Any, parallelism: int) -> Any:
    """Keyed state and timers, then a second keyed exchange into a window (late data tagged)."""
    running = (
        source.key_by(lambda r: r.k)
        .process(Running(), output_type=ROW)
        .set_parallelism(parallelism)
    )
    return windowed(running)


def _environment(runtime: str, chunks: bool, every: int | None, buffer: int | None) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.get_config().set_watermark_every(every)
    if buffer is not None:
        env.get_config().set_task_buffer(buffer)
    env.configure({CHUNKS: str(chunks).lower()})
    return env


def _local(
    rows: list[Any],
    splits: int,
    parallelism: int,
    bound: int | None,
    every: int | None,
    *,
    chunks: bool,
    buffer: int | None = None,
    mixed: bool = False,
) -> list[Any]:
    env = _environment("local", chunks, every, buffer)
    env.set_parallelism(parallelism)
    source = env.from_source(TableSource(table_of(rows), ROW, splits), _strategy(bound), "events")
    if mixed:  # records as entries beside the runs in the same buffers
        other = env.from_source(TableSource(table_of(rows[::2]), ROW, 2), _strategy(None), "other")
        source = source.union(other)
    return list(_keyed(source, parallelism).execute_and_collect())


record = st.tuples(
    st.sampled_from(("a", "b", "c", "ü", "日本")),
    st.integers(-6, 20),
    st.one_of(st.none(), st.integers(-4, 4).map(float)),
    st.integers(0, 60),  # out of order by up to 60 ms: late records
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    st.lists(record, max_size=60),
    st.integers(1, 3),
    st.sampled_from((0, 3, 10)),
    st.sampled_from((None, 1, 7)),
    st.sampled_from((None, 1, 5)),
    st.booleans(),
)
def test_columns_give_the_general_paths_output_locally(
    rows, splits, bound, every, buffer, mixed
) -> None:
    general = _local(rows, splits, 1, bound, every, chunks=False, mixed=mixed)
    for parallelism in (1, 2, 4):
        by_columns = _local(
            rows, splits, parallelism, bound, every, chunks=True, buffer=buffer, mixed=mixed
        )
        assert by_columns == general


def test_a_splits_chunks_cross_by_columns(monkeypatch) -> None:
    """The local differential above runs the columnar exchange: the splits' chunks reach the
    hash exchange as runs of columns."""
    added: list[int] = []
    add = RecordRun.add

    def counted(run: RecordRun, seqs: Any, *columns: Any) -> None:
        added.append(len(seqs))
        add(run, seqs, *columns)

    monkeypatch.setattr(RecordRun, "add", counted)
    rows = [("ab"[i % 2], i, None, i * 7 % 50) for i in range(40)]
    assert _local(rows, 2, 2, 3, 5, chunks=True) == _local(rows, 2, 2, 3, 5, chunks=False)
    assert sum(added) == 40


def _spark_rows() -> list[tuple[str, int, float | None, int]]:
    rng = random.Random(11)
    return [
        (
            rng.choice("abcdefg"),
            rng.randrange(-5, 30),
            rng.choice((None, 1.0)),
            i + rng.randrange(40),
        )
        for i in range(400)
    ]


def _spark_job(runtime: str, df: Any, chunks: bool) -> list[Any]:
    """One job, three branches: the keyed steps at parallelism 1, 2 and 4 over one source."""
    env = _environment(runtime, chunks, 30, 64)  # small buffers: merges cut chunks
    env.set_parallelism(2)
    bounded = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    source = env.from_dataframe(df, bounded, timestamp_column="ts")
    branches = [_keyed(source, p).map(lambda t, p=p: (p, t)) for p in (1, 2, 4)]
    return list(branches[0].union(*branches[1:]).execute_and_collect())


def test_columns_give_the_general_paths_output_on_spark(spark) -> None:
    df = spark.createDataFrame(_spark_rows(), "k string, v long, x double, ts long").repartition(3)
    expected = _spark_job("local", df, False)
    assert any(t[0] == "late" for _, t in expected)  # late data reached the side output
    got = _spark_job("spark", df, True)
    assert got == expected
    for p in (2, 4):  # every parallelism gives parallelism 1's output, in order
        assert [t for q, t in got if q == p] == [t for q, t in got if q == 1]


def test_a_run_is_packed_as_its_entries_are() -> None:
    """A run of records packed from its columns is the chunk of its entries, and a watermark
    appended between two chunks of a split breaks the run, so the buffer's runs and entries
    follow one another in position order."""
    buffer = ExchangeBuffer()
    first = buffer.run_for((0, 0, 3), 1, 1)
    first.add([1, 1, 2], ["a", "b", "c"], [5, 5, 6], ["k", "k", "j"], [9, 9, 4])
    assert buffer.run_for((0, 0, 3), 1, 1) is first  # nothing in between: the run goes on
    buffer.append(((0, 0, 3, 2, 1), 1, 1, Watermark(5), None, None))
    second = buffer.run_for((0, 0, 3), 1, 1)
    assert second is not first
    second.add([3], ["d"], [None], ["k"], [9])
    assert buffer.held() == 5
    entries = first.entries
    assert entries == [
        ((0, 0, 3, 1, 0), 1, 1, StreamRecord("a", 5), "k", 9),
        ((0, 0, 3, 1, 0), 1, 1, StreamRecord("b", 5), "k", 9),
        ((0, 0, 3, 2, 0), 1, 1, StreamRecord("c", 6), "j", 4),
    ]
    (position, payload), *rest = list(first.packed(2, None))
    assert position == (0, 0, 3, 1, 0) and payload == pack_entries(entries[:2])
    assert [p for p, _ in rest] == [(0, 0, 3, 2, 0)]
    chunk = unpack_chunk(rest[0][1])
    assert chunk is not None and chunk.entries == entries[2:]
    taken = buffer.take(lambda e: (e[0], e[1]))
    assert [e[0] for e in taken] == [
        (0, 0, 3, 1, 0),
        (0, 0, 3, 1, 0),
        (0, 0, 3, 2, 0),
        (0, 0, 3, 2, 1),
        (0, 0, 3, 3, 0),
    ]
    assert buffer.held() == 0 and not buffer.runs
