"""TimestampsAndWatermarksOperator and WatermarkEmitter, driven by the operator test harness."""

from __future__ import annotations

import numpy as np
import pytest

from sparktide.common.time import Duration
from sparktide.common.watermark_strategy import (
    BoundedOutOfOrdernessWatermarks,
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)
from sparktide.runtime.elements import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    StreamRecord,
    Watermark,
    WatermarkStatus,
)
from sparktide.runtime.operators.timestamps import (
    TimestampsAndWatermarksOperator,
    WatermarkEmitter,
)
from sparktide.runtime.output import CollectingOutput
from sparktide.testing import OneInputStreamOperatorTestHarness

IDLE, ACTIVE = WatermarkStatus.IDLE, WatermarkStatus.ACTIVE


def by_field(value, record_timestamp):
    return value[1]


def harness(strategy, **kwargs) -> OneInputStreamOperatorTestHarness:
    processing_time = kwargs.pop("processing_time", 0)
    op = TimestampsAndWatermarksOperator(strategy, **kwargs)
    h = OneInputStreamOperatorTestHarness(op, processing_time=processing_time)
    h.open()
    return h


def watermarks(h) -> list[int]:
    return [e.timestamp for e in h.get_output() if isinstance(e, Watermark)]


BOUNDED = WatermarkStrategy.for_bounded_out_of_orderness(10).with_timestamp_assigner(by_field)


# ------------------------------------------------------------------------ the emitter


class TestWatermarkEmitter:
    def test_only_strictly_increasing_watermarks(self):
        out = CollectingOutput()
        e = WatermarkEmitter(out)
        for ts in (5, 5, 3, 8, MIN_TIMESTAMP, 8, 9):
            e.emit_watermark(ts)
        assert out.elements == [Watermark(5), Watermark(8), Watermark(9)]
        assert e.current_watermark == 9

    def test_min_is_never_emitted(self):
        out = CollectingOutput()
        WatermarkEmitter(out).emit_watermark(MIN_TIMESTAMP)
        assert out.elements == []

    def test_statuses_only_on_change(self):
        out = CollectingOutput()
        e = WatermarkEmitter(out)
        e.mark_active()  # already active
        e.mark_idle()
        e.mark_idle()
        e.mark_active()
        e.mark_active()
        assert out.elements == [IDLE, ACTIVE]

    def test_a_watermark_while_idle_emits_active_first(self):
        out = CollectingOutput()
        e = WatermarkEmitter(out)
        e.mark_idle()
        e.emit_watermark(1)
        assert out.elements == [IDLE, ACTIVE, Watermark(1)]

    def test_a_lower_watermark_while_idle_keeps_it_idle(self):
        out = CollectingOutput()
        e = WatermarkEmitter(out)
        e.emit_watermark(10)
        e.mark_idle()
        e.emit_watermark(5)
        assert out.elements == [Watermark(10), IDLE]
        assert e.idle

    def test_accepts_watermarks_and_numpy_ints(self):
        out = CollectingOutput()
        e = WatermarkEmitter(out)
        e.emit_watermark(Watermark(3))
        e.emit_watermark(np.int64(4))
        assert out.elements == [Watermark(3), Watermark(4)]

    @pytest.mark.parametrize("bad", [1.0, "7", None])
    def test_refuses_non_int_watermarks(self, bad):
        with pytest.raises(TypeError, match="watermark must be an int"):
            WatermarkEmitter(CollectingOutput()).emit_watermark(bad)


# ------------------------------------------------------------------------ timer mode


class TestTimerMode:
    def test_periodic_timer_every_interval(self):
        h = harness(BOUNDED, auto_watermark_interval=200)
        h.process_element(("a", 100))
        h.process_element(("b", 130))
        assert watermarks(h) == []
        h.set_processing_time(199)
        assert watermarks(h) == []
        h.set_processing_time(200)
        assert watermarks(h) == [119]
        h.process_element(("c", 150))
        h.set_processing_time(400)
        assert watermarks(h) == [119, 139]
        assert h.processing_time_service.num_registered_timers() == 1

    def test_records_are_forwarded_before_their_watermarks(self):
        h = harness(BOUNDED)
        h.process_element(("a", 100))
        h.set_processing_time(200)
        h.process_element(("b", 90))
        assert h.get_output() == [
            StreamRecord(("a", 100), 100),
            Watermark(89),
            StreamRecord(("b", 90), 90),
        ]

    def test_lower_or_equal_watermarks_are_never_forwarded(self):
        h = harness(BOUNDED, auto_watermark_interval=100)
        for now, ts in ((100, 50), (200, 40), (300, 50), (400, 60), (500, 10)):
            h.process_element(("x", ts))
            h.set_processing_time(now)
        assert watermarks(h) == [39, 49]

    def test_initial_periodic_emit_of_min_is_not_forwarded(self):
        h = harness(BOUNDED)
        h.set_processing_time(1000)
        assert h.get_output() == []

    def test_interval_is_measured_from_when_the_timer_fired(self):
        h = harness(BOUNDED, auto_watermark_interval=Duration.of_millis(50), processing_time=10)
        h.process_element(("a", 100))
        h.set_processing_time(59)
        assert watermarks(h) == []
        h.set_processing_time(60)
        assert watermarks(h) == [89]
        h.process_element(("b", 200))
        h.set_processing_time(130)  # a late clock: fires the timer at 110, next at 180
        assert watermarks(h) == [89, 189]

    def test_zero_interval_disables_periodic_emission(self):
        h = harness(BOUNDED, auto_watermark_interval=0)
        assert h.processing_time_service.num_registered_timers() == 0
        h.process_element(("a", 100))
        h.set_processing_time(10_000)
        assert watermarks(h) == []
        h.operator.emit_periodic()  # still possible on demand
        assert watermarks(h) == [89]

    def test_close_cancels_the_timer(self):
        h = harness(BOUNDED)
        assert h.processing_time_service.num_registered_timers() == 1
        h.close()
        assert h.processing_time_service.num_registered_timers() == 0


# ------------------------------------------------------------------------ external mode


class TestExternalMode:
    def test_no_timer_and_emit_periodic_drives(self):
        h = harness(BOUNDED, periodic="external")
        assert h.processing_time_service.num_registered_timers() == 0
        h.process_element(("a", 100))
        h.set_processing_time(100_000)
        assert watermarks(h) == []
        h.operator.emit_periodic()
        h.process_element(("b", 120))
        h.process_element(("c", 105))
        h.operator.emit_periodic()
        h.operator.emit_periodic()
        assert h.get_output() == [
            StreamRecord(("a", 100), 100),
            Watermark(89),
            StreamRecord(("b", 120), 120),
            StreamRecord(("c", 105), 105),
            Watermark(109),
        ]

    def test_emit_periodic_before_open_is_a_clear_error(self):
        op = TimestampsAndWatermarksOperator(BOUNDED, periodic="external")
        with pytest.raises(RuntimeError, match="open"):
            op.emit_periodic()


# ------------------------------------------------------------------------ timestamps


class TestTimestamps:
    def test_assigner_sees_previous_timestamp_or_min(self):
        seen = []

        def assign(value, record_timestamp):
            seen.append(record_timestamp)
            return 7

        h = harness(WatermarkStrategy.no_watermarks().with_timestamp_assigner(assign))
        h.process_element("a", 5)
        h.process_element("b")
        assert seen == [5, MIN_TIMESTAMP]
        assert [r.timestamp for r in h.get_records()] == [7, 7]

    def test_timestamp_assigner_class(self):
        class Doubling(TimestampAssigner):
            def extract_timestamp(self, value, record_timestamp):
                return record_timestamp * 2

        h = harness(WatermarkStrategy.no_watermarks().with_timestamp_assigner(Doubling()))
        h.process_element("a", 21)
        assert h.get_records() == [StreamRecord("a", 42)]

    def test_without_assigner_records_keep_their_timestamps_even_none(self):
        h = harness(WatermarkStrategy.for_monotonous_timestamps(), periodic="external")
        h.process_element("a", 30)
        h.process_element("b")  # no timestamp: stays None, the generator sees MIN
        h.operator.emit_periodic()
        assert h.get_output() == [StreamRecord("a", 30), StreamRecord("b", None), Watermark(29)]

    @pytest.mark.parametrize(
        ("returned", "type_name"),
        [(1.5, "float"), ("12", "str"), (None, "NoneType"), (False, "bool")],
    )
    def test_assigner_returning_a_non_int_is_a_type_error(self, returned, type_name):
        h = harness(
            WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, t: returned)
        )
        with pytest.raises(TypeError) as info:
            h.process_element("a")
        assert type_name in str(info.value) and repr(returned) in str(info.value)
        assert h.get_output() == []  # nothing was forwarded

    def test_assigner_returning_numpy_int_is_converted(self):
        h = harness(
            WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, t: np.int64(v))
        )
        h.process_element(12)
        (record,) = h.get_records()
        assert record.timestamp == 12 and type(record.timestamp) is int

    def test_assigner_returning_out_of_range_is_a_value_error(self):
        h = harness(WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, t: 2**64))
        with pytest.raises(ValueError, match="64-bit signed long"):
            h.process_element("a")

    def test_ingestion_time_uses_the_operator_clock(self):
        h = harness(WatermarkStrategy.for_ingestion_time(), periodic="external", processing_time=50)
        h.process_element("a", 999)
        h.set_processing_time(70)
        h.process_element("b")
        h.operator.emit_periodic()
        assert h.get_output() == [StreamRecord("a", 50), StreamRecord("b", 70), Watermark(69)]


# ------------------------------------------------------------------------ upstream & end


class TestUpstreamAndEnd:
    def test_upstream_watermarks_are_ignored(self):
        h = harness(BOUNDED, periodic="external")
        h.process_watermark(1000)
        h.process_element(("a", 50))
        h.process_watermark(Watermark(2000))
        assert h.get_output() == [StreamRecord(("a", 50), 50)]

    def test_upstream_statuses_are_ignored(self):
        h = harness(BOUNDED, periodic="external")
        h.operator.process_watermark_status(IDLE)
        h.operator.process_watermark_status(ACTIVE)
        assert h.get_output() == []

    def test_max_is_forwarded_once_and_finish_emits_nothing_after_it(self):
        # as in Flink: MAX goes out at once; finish()'s last periodic emission is then dropped
        h = harness(BOUNDED)
        h.process_element(("a", 50))
        h.process_watermark(MAX_TIMESTAMP)
        h.process_watermark(MAX_TIMESTAMP)
        h.operator.finish()
        assert h.get_output() == [StreamRecord(("a", 50), 50), Watermark.MAX]
        assert h.operator.current_watermark() == MAX_TIMESTAMP
        assert h.operator.current_output_watermark() == MAX_TIMESTAMP

    def test_max_stops_the_periodic_timer(self):
        h = harness(BOUNDED)
        h.process_watermark(MAX_TIMESTAMP)
        assert h.processing_time_service.num_registered_timers() == 0
        h.set_processing_time(10_000)
        assert h.get_output() == [Watermark.MAX]

    def test_finish_emits_a_last_periodic_watermark(self):
        h = harness(BOUNDED, periodic="external")
        h.process_element(("a", 50))
        h.operator.finish()
        assert watermarks(h) == [39]

    def test_max_with_no_watermarks_strategy(self):
        h = harness(WatermarkStrategy.no_watermarks())
        h.process_element("a", 1)
        h.process_watermark(MAX_TIMESTAMP)
        assert h.get_output() == [StreamRecord("a", 1), Watermark.MAX]


# ------------------------------------------------------------------------ generators


class TestGenerators:
    def test_punctuated_watermark_follows_its_record(self):
        strategy = WatermarkStrategy.for_punctuated(lambda e: e.get("wm")).with_timestamp_assigner(
            lambda e, t: e["ts"]
        )
        h = harness(strategy, periodic="external")
        events = [{"ts": 1}, {"ts": 5, "wm": 4}, {"ts": 3, "wm": 2}, {"ts": 9, "wm": 8}]
        for e in events:
            h.process_element(e)
        assert [type(x).__name__ for x in h.get_output()] == [
            "StreamRecord",
            "StreamRecord",
            "Watermark",
            "StreamRecord",
            "StreamRecord",
            "Watermark",
        ]
        assert watermarks(h) == [4, 8]

    def test_custom_generator_from_a_factory(self):
        class EveryThird(WatermarkGenerator):
            def __init__(self):
                self.n = 0

            def on_event(self, event, event_timestamp, output):
                self.n += 1
                if self.n % 3 == 0:
                    output.emit_watermark(Watermark(event_timestamp))

        h = harness(WatermarkStrategy.for_generator(EveryThird), periodic="external")
        for ts in range(1, 8):
            h.process_element("x", ts)
        assert watermarks(h) == [3, 6]

    def test_each_operator_gets_its_own_generator(self):
        s = WatermarkStrategy.for_generator(lambda: BoundedOutOfOrdernessWatermarks(0))
        h1, h2 = harness(s, periodic="external"), harness(s, periodic="external")
        assert h1.operator.watermark_generator is not h2.operator.watermark_generator


# ------------------------------------------------------------------------ idleness


class TestIdleness:
    def test_idle_then_active_on_the_next_record(self):
        strategy = BOUNDED.with_idleness(Duration.of_millis(300))
        h = harness(strategy, auto_watermark_interval=100)
        h.process_element(("a", 100))
        h.set_processing_time(100)  # activity: watermark 89
        h.set_processing_time(200)  # quiet: the inactivity timer starts at 200
        h.set_processing_time(500)  # 300 ms: not more than the timeout
        assert IDLE not in h.get_output()
        h.set_processing_time(600)  # 400 ms > 300: idle
        h.set_processing_time(900)  # stays idle, marked once
        h.process_element(("b", 200))
        h.set_processing_time(1000)
        assert h.get_output() == [
            StreamRecord(("a", 100), 100),
            Watermark(89),
            IDLE,
            StreamRecord(("b", 200), 200),
            ACTIVE,
            Watermark(189),
        ]

    def test_idleness_in_external_mode_uses_the_processing_time(self):
        h = harness(BOUNDED.with_idleness(50), periodic="external")
        h.operator.emit_periodic()  # quiet from the start: timer starts at 0
        h.set_processing_time(51)
        h.operator.emit_periodic()
        assert h.get_output() == [IDLE]


# ------------------------------------------------------------------------ validation


class TestValidation:
    def test_strategy_type(self):
        with pytest.raises(TypeError, match="strategy must be a WatermarkStrategy"):
            TimestampsAndWatermarksOperator(BoundedOutOfOrdernessWatermarks(1))  # type: ignore

    def test_negative_interval(self):
        with pytest.raises(ValueError, match="auto_watermark_interval must be >= 0"):
            TimestampsAndWatermarksOperator(BOUNDED, auto_watermark_interval=-1)

    def test_interval_type(self):
        with pytest.raises(TypeError, match="auto_watermark_interval"):
            TimestampsAndWatermarksOperator(BOUNDED, auto_watermark_interval=0.5)

    def test_periodic_mode(self):
        with pytest.raises(ValueError, match="periodic must be 'timer'"):
            TimestampsAndWatermarksOperator(BOUNDED, periodic="sometimes")
