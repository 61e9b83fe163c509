"""Source interfaces: SourceFunction + SourceFunctionDriver, splits, SplitReader."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.time import Duration
from sparktide.common.watermark_strategy import (
    BoundedOutOfOrdernessWatermarks,
    ListWatermarkOutput,
    WatermarkStrategy,
)
from sparktide.datastream.source import (
    CollectionSource,
    GeneratorSource,
    Source,
    SourceContext,
    SourceFunction,
    SourceFunctionDriver,
    SourceSplit,
    SplitReader,
)
from sparktide.runtime.elements import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    StreamRecord,
    Watermark,
    WatermarkStatus,
)
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.valve import StatusWatermarkValve
from sparktide.runtime.watermark_multiplexer import WatermarkOutputMultiplexer

IDLE, ACTIVE = WatermarkStatus.IDLE, WatermarkStatus.ACTIVE


class Scripted(SourceFunction):
    """Runs ``script(ctx)``."""

    def __init__(self, script):
        self.script = script
        self.cancelled = False

    def run(self, ctx):
        self.script(ctx)

    def cancel(self):
        self.cancelled = True


def drive(script) -> list:
    out = CollectingOutput()
    SourceFunctionDriver(Scripted(script), out).run()
    return out.elements


# ------------------------------------------------------------------------ SourceFunction


class TestSourceFunctionDriver:
    def test_collect_without_timestamp_gives_none(self):
        assert drive(lambda ctx: ctx.collect("a")) == [StreamRecord("a", None), Watermark.MAX]

    def test_collect_with_timestamp(self):
        def script(ctx):
            ctx.collect_with_timestamp("a", 5)
            ctx.collect_with_timestamp("b", np.int64(3))

        elements = drive(script)
        assert elements[:2] == [StreamRecord("a", 5), StreamRecord("b", 3)]
        assert type(elements[1].timestamp) is int

    @pytest.mark.parametrize("bad", [1.5, "5", None, True])
    def test_collect_with_a_non_int_timestamp_is_a_type_error(self, bad):
        with pytest.raises(TypeError, match="timestamp must be an int"):
            drive(lambda ctx: ctx.collect_with_timestamp("a", bad))

    def test_emit_watermark_forwards_increasing_only(self):
        def script(ctx):
            for ts in (5, 3, 5, Watermark(9), 7):
                ctx.emit_watermark(ts)

        assert drive(script) == [Watermark(5), Watermark(9), Watermark.MAX]

    def test_idle_then_a_record_emits_active_first(self):
        def script(ctx):
            ctx.collect_with_timestamp("a", 1)
            ctx.mark_as_temporarily_idle()
            ctx.mark_as_temporarily_idle()
            ctx.collect_with_timestamp("b", 2)

        assert drive(script) == [
            StreamRecord("a", 1),
            IDLE,
            ACTIVE,
            StreamRecord("b", 2),
            Watermark.MAX,
        ]

    def test_idle_then_a_watermark_emits_active_even_if_not_higher(self):
        def script(ctx):
            ctx.emit_watermark(10)
            ctx.mark_as_temporarily_idle()
            ctx.emit_watermark(4)

        assert drive(script) == [Watermark(10), IDLE, ACTIVE, Watermark.MAX]

    def test_idle_at_the_end_becomes_active_for_max(self):
        assert drive(lambda ctx: ctx.mark_as_temporarily_idle()) == [IDLE, ACTIVE, Watermark.MAX]

    def test_checkpoint_lock_is_a_reusable_no_op(self):
        def script(ctx):
            with ctx.get_checkpoint_lock():
                ctx.collect("a")
            with ctx.get_checkpoint_lock():
                ctx.collect("b")

        assert [e.value for e in drive(script)[:2]] == ["a", "b"]

    def test_cancel_stops_and_skips_max(self):
        out = CollectingOutput()
        started = threading.Event()

        class Endless(SourceFunction):
            def __init__(self):
                self.running = True

            def run(self, ctx):
                i = 0
                while self.running:
                    ctx.collect_with_timestamp(i, i)
                    i += 1
                    started.set()

            def cancel(self):
                self.running = False

        driver = SourceFunctionDriver(Endless(), out)
        thread = threading.Thread(target=driver.run)
        thread.start()
        started.wait(5)
        driver.cancel()
        thread.join(5)
        assert not thread.is_alive()
        assert driver.is_cancelled()
        assert Watermark.MAX not in out.elements
        assert all(isinstance(e, StreamRecord) for e in out.elements)

    def test_function_errors_propagate_without_max(self):
        out = CollectingOutput()

        def script(ctx):
            ctx.collect("a")
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            SourceFunctionDriver(Scripted(script), out).run()
        assert out.elements == [StreamRecord("a", None)]

    def test_rejects_non_source_functions(self):
        with pytest.raises(TypeError, match="function must be a SourceFunction"):
            SourceFunctionDriver(lambda ctx: None, CollectingOutput())  # type: ignore[arg-type]

    def test_source_context_is_abstract(self):
        with pytest.raises(TypeError):
            SourceContext()  # type: ignore[abstract]


class TestSourceFunctionDriverPullMode:
    def script(self, ctx):
        ctx.emit_watermark(0)
        ctx.collect_with_timestamp("a", 1)
        ctx.emit_watermark(1)
        ctx.mark_as_temporarily_idle()
        ctx.collect_with_timestamp("b", 5)
        ctx.collect_with_timestamp("c", 3)
        ctx.emit_watermark(5)

    def test_pulled_output_equals_pushed_output(self):
        pushed = drive(self.script)
        out = CollectingOutput()
        d = SourceFunctionDriver(Scripted(self.script), out, ManualProcessingTimeService())
        assert d.read_next() is True
        # the first record comes with what was emitted before it and up to the next record
        assert out.elements == [Watermark(0), StreamRecord("a", 1), Watermark(1), IDLE, ACTIVE]
        assert d.read_up_to(10) == 2
        assert d.exhausted and d.records_read == 3
        assert d.read_next() is False
        d.emit_periodic()  # nothing: the function emits its own watermarks
        d.finish()
        d.finish()
        assert out.elements == pushed
        assert out.elements[-2:] == [Watermark(5), Watermark.MAX]

    def test_function_without_records(self):
        out = CollectingOutput()
        d = SourceFunctionDriver(Scripted(lambda ctx: ctx.emit_watermark(3)), out)
        assert d.read_next() is False
        d.finish()
        assert out.elements == [Watermark(3), Watermark.MAX]

    def test_finish_without_reading(self):
        out = CollectingOutput()
        d = SourceFunctionDriver(Scripted(self.script), out)
        d.finish()
        assert out.elements == [Watermark.MAX]  # the function never ran

    def test_finish_before_the_end_cancels_an_endless_source(self):
        class Endless(SourceFunction):
            def __init__(self):
                self.running = True

            def run(self, ctx):
                i = 0
                while self.running:
                    ctx.collect_with_timestamp(i, i)
                    i += 1

            def cancel(self):
                self.running = False

        out = CollectingOutput()
        function = Endless()
        d = SourceFunctionDriver(function, out)
        before = set(threading.enumerate())
        assert d.read_up_to(3) == 3
        (thread,) = [
            t for t in set(threading.enumerate()) - before if t.name == "sparktide-source-function"
        ]
        d.finish()
        assert d.is_cancelled() and not function.running
        assert not thread.is_alive()
        assert out.elements == [StreamRecord(i, i) for i in range(3)]  # no MAX

    def test_the_function_never_runs_while_the_reader_does(self):
        state = {"reading": False, "overlaps": 0}

        class Probe(SourceFunction):
            def run(self, ctx):
                for i in range(50):
                    if state["reading"]:
                        state["overlaps"] += 1
                    ctx.collect(i)

            def cancel(self):
                pass

        class SlowOutput(CollectingOutput):
            def collect(self, record):
                state["reading"] = True
                time.sleep(0.0005)
                super().collect(record)
                state["reading"] = False

        out = SlowOutput()
        d = SourceFunctionDriver(Probe(), out)
        while d.read_next():
            pass
        assert state["overlaps"] == 0
        assert [e.value for e in out.elements] == list(range(50))

    def test_errors_are_raised_in_the_reading_thread(self):
        def script(ctx):
            ctx.collect("a")
            ctx.collect("b")
            raise RuntimeError("boom")

        out = CollectingOutput()
        d = SourceFunctionDriver(Scripted(script), out)
        assert d.read_next() is True
        with pytest.raises(RuntimeError, match="boom"):
            d.read_next()  # delivers "b", then reports the failure
        assert [e.value for e in out.elements] == ["a", "b"]

    def test_timestamp_errors_surface_when_reading(self):
        d = SourceFunctionDriver(
            Scripted(lambda ctx: ctx.collect_with_timestamp("a", None)), CollectingOutput()
        )
        with pytest.raises(TypeError, match=r"use collect\(element\)"):
            d.read_next()

    def test_run_after_pulling_is_refused(self):
        d = SourceFunctionDriver(Scripted(self.script), CollectingOutput())
        d.read_next()
        with pytest.raises(RuntimeError, match="do not also run"):
            d.run()
        d.finish()

    def test_read_up_to_delivers_exactly_n_and_keeps_the_rest(self):
        def script(ctx):
            for i in range(10):
                ctx.collect_with_timestamp(i, i)
                ctx.emit_watermark(i)

        out = CollectingOutput()
        d = SourceFunctionDriver(Scripted(script), out)
        assert d.read_up_to(4) == 4
        assert out.elements[-2:] == [StreamRecord(3, 3), Watermark(3)]
        assert d.read_up_to(100) == 6
        d.finish()
        assert out.elements == drive(script)

    def test_read_up_to_validation(self):
        d = SourceFunctionDriver(Scripted(self.script), CollectingOutput())
        with pytest.raises(ValueError, match="n must be an int >= 0"):
            d.read_up_to(-1)


# ------------------------------------------------------------------------ splits & sources


class TestSplitsAndSources:
    def test_source_split_is_frozen_and_checked(self):
        split = SourceSplit("3", {"offset": 0})
        with pytest.raises(AttributeError):
            split.split_id = "4"  # type: ignore[misc]
        with pytest.raises(TypeError, match="split_id must be a str"):
            SourceSplit(3)  # type: ignore[arg-type]
        assert SourceSplit("a") == SourceSplit("a", None)

    @pytest.mark.parametrize(
        ("n_values", "n_splits", "sizes"),
        [(10, 1, [10]), (10, 3, [4, 3, 3]), (10, 4, [3, 3, 2, 2]), (2, 4, [1, 1, 0, 0])],
    )
    def test_collection_source_contiguous_chunks(self, n_values, n_splits, sizes):
        src = CollectionSource(range(n_values), num_splits=n_splits)
        splits = src.get_splits()
        assert [s.split_id for s in splits] == [str(i) for i in range(n_splits)]
        chunks = [list(src.read_split(s)) for s in splits]
        assert [len(c) for c in chunks] == sizes
        assert [v for c in chunks for v in c] == list(range(n_values))
        assert src.get_splits() == splits  # deterministic

    def test_collection_source_materializes_iterators(self):
        src = CollectionSource(iter([1, 2, 3]), num_splits=2)
        assert [list(src.read_split(s)) for s in src.get_splits()] == [[1, 2], [3]]
        assert [list(src.read_split(s)) for s in src.get_splits()] == [[1, 2], [3]]

    @pytest.mark.parametrize(
        ("bad", "error"), [(0, ValueError), (-1, ValueError), (2.0, TypeError)]
    )
    def test_num_splits_is_checked(self, bad, error):
        with pytest.raises(error, match="num_splits"):
            CollectionSource([1], num_splits=bad)
        with pytest.raises(error, match="num_splits"):
            GeneratorSource(lambda i: [], num_splits=bad)

    def test_generator_source(self):
        src = GeneratorSource(lambda i: (f"{i}-{j}" for j in range(2)), num_splits=3)
        assert [s.split_id for s in src.get_splits()] == ["0", "1", "2"]
        assert [list(src.read_split(s)) for s in src.get_splits()] == [
            ["0-0", "0-1"],
            ["1-0", "1-1"],
            ["2-0", "2-1"],
        ]

    def test_generator_source_errors(self):
        with pytest.raises(TypeError, match="fn must be a callable"):
            GeneratorSource([1, 2])  # type: ignore[arg-type]
        src = GeneratorSource(lambda i: 5)
        with pytest.raises(TypeError, match=r"fn\(0\) must return an iterable"):
            src.read_split(src.get_splits()[0])

    def test_source_is_abstract(self):
        with pytest.raises(TypeError):
            Source()  # type: ignore[abstract]


# ------------------------------------------------------------------------ SplitReader


BY_VALUE = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
BY_VALUE = BY_VALUE.with_timestamp_assigner(lambda v, ts: v)


class TestSplitReader:
    def test_assigns_timestamps_and_emits_periodic_watermarks(self):
        out = CollectingOutput()
        r = SplitReader([100, 120, 110], BY_VALUE, None, out, split_id="0")
        assert r.read_up_to(2) == 2
        r.emit_periodic()
        assert r.read_up_to(10) == 1
        assert r.exhausted
        r.emit_periodic()
        r.finish()
        assert out.elements == [
            StreamRecord(100, 100),
            StreamRecord(120, 120),
            Watermark(114),
            StreamRecord(110, 110),
            Watermark.MAX,
        ]
        assert r.records_read == 3
        assert r.is_finished()

    def test_read_next_until_exhausted(self):
        out = CollectingOutput()
        r = SplitReader(iter([1, 2]), BY_VALUE, None, out)
        assert [r.read_next() for _ in range(4)] == [True, True, False, False]
        assert r.exhausted and r.records_read == 2

    def test_read_up_to_zero_and_validation(self):
        r = SplitReader([1], BY_VALUE, None, CollectingOutput())
        assert r.read_up_to(0) == 0
        with pytest.raises(ValueError, match="n must be an int >= 0"):
            r.read_up_to(-1)

    def test_finish_is_idempotent_and_stops_reading(self):
        out = CollectingOutput()
        r = SplitReader([1, 2, 3], BY_VALUE, None, out)
        r.read_next()
        r.finish()
        r.finish()
        r.emit_periodic()
        assert r.read_next() is False and r.read_up_to(5) == 0
        assert out.elements == [StreamRecord(1, 1), Watermark.MAX]

    def test_finish_emits_only_max(self):
        # as in Flink: a finished split stops holding the watermark back, no last periodic one
        out = CollectingOutput()
        r = SplitReader([50], BY_VALUE, None, out)
        r.read_up_to(10)
        r.finish()
        assert out.elements == [StreamRecord(50, 50), Watermark.MAX]

    def test_without_assigner_records_have_no_timestamp(self):
        out = CollectingOutput()
        r = SplitReader(["a", "b"], WatermarkStrategy.for_monotonous_timestamps(), None, out)
        r.read_next()
        r.read_up_to(5)
        r.emit_periodic()
        assert out.elements == [StreamRecord("a", None), StreamRecord("b", None)]

    def test_punctuated_watermarks_follow_their_record(self):
        strategy = WatermarkStrategy.for_punctuated(lambda v: v[1]).with_timestamp_assigner(
            lambda v, ts: v[0]
        )
        out = CollectingOutput()
        r = SplitReader([(1, None), (5, 4), (6, None), (9, 8)], strategy, None, out)
        r.read_up_to(100)
        assert out.elements == [
            StreamRecord((1, None), 1),
            StreamRecord((5, 4), 5),
            Watermark(4),
            StreamRecord((6, None), 6),
            StreamRecord((9, 8), 9),
            Watermark(8),
        ]

    @pytest.mark.parametrize(
        ("returned", "type_name"), [(1.5, "float"), ("1", "str"), (None, "NoneType")]
    )
    def test_bad_assigner_result_is_a_type_error(self, returned, type_name):
        strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, t: returned)
        for read in (lambda r: r.read_next(), lambda r: r.read_up_to(3)):
            r = SplitReader([1, 2], strategy, None, CollectingOutput())
            with pytest.raises(TypeError, match=type_name):
                read(r)
            assert r.records_read == 1  # counted: the record was consumed from the split

    def test_numpy_timestamps_are_converted(self):
        strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(
            lambda v, t: np.int64(v)
        )
        out = CollectingOutput()
        r = SplitReader([3], strategy, None, out)
        r.read_up_to(1)
        assert type(out.elements[0].timestamp) is int

    def test_each_reader_has_its_own_generator(self):
        a = SplitReader([], BY_VALUE, None, CollectingOutput())
        b = SplitReader([], BY_VALUE, None, CollectingOutput())
        assert a.generator is not b.generator
        assert isinstance(a.generator, BoundedOutOfOrdernessWatermarks)

    def test_idleness_with_a_manual_clock(self):
        service = ManualProcessingTimeService()
        out = CollectingOutput()
        r = SplitReader(iter([10, 20]), BY_VALUE.with_idleness(100), service, out)
        r.read_next()
        r.emit_periodic()  # activity
        service.advance(50)
        r.emit_periodic()  # quiet: timer starts at 50
        service.advance(101)
        r.emit_periodic()  # 101 > 100: idle
        r.read_next()
        r.emit_periodic()
        assert out.elements == [
            StreamRecord(10, 10),
            Watermark(4),
            IDLE,
            StreamRecord(20, 20),
            ACTIVE,
            Watermark(14),
        ]

    def test_ingestion_time_stamps_with_the_context_clock(self):
        service = ManualProcessingTimeService(start=1000)
        out = CollectingOutput()
        r = SplitReader(["a", "b"], WatermarkStrategy.for_ingestion_time(), service, out)
        r.read_next()
        service.advance(7)
        r.read_next()
        r.emit_periodic()
        assert out.elements == [StreamRecord("a", 1000), StreamRecord("b", 1007), Watermark(1006)]

    def test_no_strategy_means_no_timestamps_and_no_watermarks(self):
        out = CollectingOutput()
        r = SplitReader(["a"], None, None, out)
        r.read_up_to(5)
        r.emit_periodic()
        r.finish()
        assert out.elements == [StreamRecord("a", None), Watermark.MAX]

    def test_validation(self):
        with pytest.raises(TypeError, match="strategy must be a WatermarkStrategy"):
            SplitReader([], "bounded", None, CollectingOutput())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="records must be an iterable"):
            SplitReader(5, BY_VALUE, None, CollectingOutput())  # type: ignore[arg-type]

    def test_repr(self):
        r = SplitReader([], BY_VALUE, None, CollectingOutput(), split_id="7")
        assert repr(r) == "SplitReader(split_id='7', read=0, reading)"


# ------------------------------------------------------------------------ putting it together


class ValveChannel:
    """An Output feeding records to a list and watermarks/statuses to one valve channel."""

    def __init__(self, valve, channel, downstream):
        self.valve, self.channel, self.downstream = valve, channel, downstream

    def collect(self, record):
        self.downstream.collect(record)

    def emit_watermark(self, watermark):
        self.valve.input_watermark(watermark.timestamp, self.channel, self.downstream)

    def emit_watermark_status(self, status):
        self.valve.input_watermark_status(status, self.channel, self.downstream)


def test_splits_combined_by_a_valve_in_rounds():
    """A slow split holds the combined watermark back instead of its records turning late."""
    fast = [(t, "fast") for t in range(0, 100, 10)]
    slow = [(t, "slow") for t in range(0, 20, 2)]
    source = CollectionSource(fast + slow, num_splits=2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, ts: v[0]
    )
    splits = source.get_splits()
    valve = StatusWatermarkValve(len(splits))
    downstream = CollectingOutput()
    readers = [
        SplitReader(source.read_split(s), strategy, None, ValveChannel(valve, i, downstream))
        for i, s in enumerate(splits)
    ]
    while not all(r.exhausted for r in readers):  # rounds of 3 records per split
        for r in readers:
            r.read_up_to(3)
        for r in readers:
            r.emit_periodic()
        valve.check_invariants()
    for r in readers:
        r.finish()
    marks = [e.timestamp for e in downstream.elements if isinstance(e, Watermark)]
    assert marks == [3, 9, 15, 17, MAX_TIMESTAMP]  # held back by the slow split
    late = []
    current = MIN_TIMESTAMP
    for e in downstream.elements:
        if isinstance(e, Watermark):
            current = e.timestamp
        elif e.timestamp <= current:
            late.append(e)
    assert late == []


def test_reader_with_several_splits_uses_the_multiplexer():
    underlying = ListWatermarkOutput()
    mux = WatermarkOutputMultiplexer(underlying)
    out = CollectingOutput()
    source = CollectionSource([5, 9, 50, 60], num_splits=2)
    readers = {}
    for split in source.get_splits():
        mux.register_new_output(split.split_id)
        readers[split.split_id] = SplitReader(
            source.read_split(split),
            BY_VALUE,
            None,
            out,
            split_id=split.split_id,
            watermark_output=mux.get_deferred_output(split.split_id),
        )
    for r in readers.values():
        r.read_up_to(10)
        r.emit_periodic()
    mux.on_periodic_emit()
    assert underlying.events == [3]  # min(9 - 5 - 1, 60 - 5 - 1)
    readers["0"].finish()
    mux.unregister_output("0")  # the finished split leaves the min at the next update
    assert underlying.events == [3]
    mux.on_periodic_emit()
    assert underlying.events == [3, 54]
    assert [e.timestamp for e in out.elements] == [5, 9, 50, 60]


_EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("collect"), st.integers(0, 50)),
        st.tuples(st.just("collect_ts"), st.integers(0, 50)),
        st.tuples(st.just("watermark"), st.integers(0, 50)),
        st.tuples(st.just("idle"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(_EVENTS, st.lists(st.integers(1, 5), min_size=1, max_size=10))
def test_pulling_in_any_chunks_equals_pushing(events, chunks):
    def script(ctx):
        for kind, value in events:
            if kind == "collect":
                ctx.collect(value)
            elif kind == "collect_ts":
                ctx.collect_with_timestamp(value, value)
            elif kind == "watermark":
                ctx.emit_watermark(value)
            else:
                ctx.mark_as_temporarily_idle()

    out = CollectingOutput()
    d = SourceFunctionDriver(Scripted(script), out)
    total, i = 0, 0
    while not d.exhausted:
        total += d.read_up_to(chunks[i % len(chunks)])
        i += 1
    d.finish()
    assert total == sum(1 for kind, _ in events if kind.startswith("collect"))
    assert out.elements == drive(script)
