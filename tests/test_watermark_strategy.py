"""WatermarkStrategy, timestamp assigners and the built-in watermark generators."""

from __future__ import annotations

import pickle
from datetime import timedelta

import numpy as np
import pytest

from sparktide.common.time import Duration, Time
from sparktide.common.watermark_strategy import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    ClockContext,
    IngestionTimeAssigner,
    ListWatermarkOutput,
    NoWatermarksGenerator,
    PunctuatedWatermarks,
    RecordTimestampAssigner,
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
    WatermarksWithIdleness,
    check_extracted_timestamp,
    watermark_timestamp,
)
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark, WatermarkStatus
from sparktide.runtime.processing_time import ManualProcessingTimeService

IDLE, ACTIVE = WatermarkStatus.IDLE, WatermarkStatus.ACTIVE


class Clock:
    """A manual clock: ``clock()`` returns ``clock.now``."""

    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def feed(generator: WatermarkGenerator, *timestamps: int, out: ListWatermarkOutput) -> None:
    for ts in timestamps:
        generator.on_event(None, ts, out)


# ------------------------------------------------------------------------ built-in generators


class TestBoundedOutOfOrderness:
    def test_initial_max_and_initial_watermark_is_min(self):
        g = BoundedOutOfOrdernessWatermarks(10)
        assert g.max_timestamp == MIN_TIMESTAMP + 10 + 1
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP]

    def test_watermark_is_max_minus_d_minus_1(self):
        g = BoundedOutOfOrdernessWatermarks(10)
        out = ListWatermarkOutput()
        feed(g, 100, 120, 90, out=out)
        assert out.events == []  # periodic: nothing from on_event
        g.on_periodic_emit(out)
        assert out.events == [120 - 10 - 1]
        assert g.max_timestamp == 120

    def test_late_record_does_not_lower_the_max(self):
        g = BoundedOutOfOrdernessWatermarks(5)
        out = ListWatermarkOutput()
        feed(g, 50, 10, out=out)
        g.on_periodic_emit(out)
        feed(g, 20, out=out)
        g.on_periodic_emit(out)
        assert out.events == [44, 44]  # the generator repeats; the output filters

    def test_zero_out_of_orderness(self):
        g = BoundedOutOfOrdernessWatermarks(0)
        out = ListWatermarkOutput()
        feed(g, 7, out=out)
        g.on_periodic_emit(out)
        assert out.events == [6]

    def test_timestamps_below_the_initial_max_change_nothing(self):
        g = BoundedOutOfOrdernessWatermarks(3)
        out = ListWatermarkOutput()
        feed(g, MIN_TIMESTAMP, MIN_TIMESTAMP + 2, out=out)
        g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP]

    def test_huge_bound_never_goes_below_min(self):
        g = BoundedOutOfOrdernessWatermarks(MAX_TIMESTAMP)
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)
        feed(g, 0, out=out)
        g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP, MIN_TIMESTAMP]

    @pytest.mark.parametrize("d", [-1, -100])
    def test_negative_bound_is_refused(self, d):
        with pytest.raises(ValueError, match="max_out_of_orderness_ms must be >= 0"):
            BoundedOutOfOrdernessWatermarks(d)

    def test_non_int_bound_is_refused(self):
        with pytest.raises(TypeError, match="max_out_of_orderness_ms"):
            BoundedOutOfOrdernessWatermarks(1.5)  # type: ignore[arg-type]


def test_ascending_is_max_minus_one():
    g = AscendingTimestampsWatermarks()
    out = ListWatermarkOutput()
    assert g.max_out_of_orderness == 0
    assert g.max_timestamp == MIN_TIMESTAMP + 1
    g.on_periodic_emit(out)
    feed(g, 5, 9, 8, out=out)
    g.on_periodic_emit(out)
    assert out.events == [MIN_TIMESTAMP, 8]


def test_no_watermarks_generator_emits_nothing():
    g = NoWatermarksGenerator()
    out = ListWatermarkOutput()
    feed(g, 1, 2, MAX_TIMESTAMP, out=out)
    g.on_periodic_emit(out)
    assert out.events == []


class TestPunctuated:
    def test_emits_the_field_when_present(self):
        g = PunctuatedWatermarks(lambda e: e.get("wm"))
        out = ListWatermarkOutput()
        for e in ({"v": 1}, {"wm": 10}, {"v": 2}, {"wm": 8}, {"wm": Watermark(30)}):
            g.on_event(e, 0, out)
        g.on_periodic_emit(out)  # nothing periodic
        assert out.events == [10, 8, 30]  # filtering lower ones is the output's job

    def test_watermark_of_must_be_callable(self):
        with pytest.raises(TypeError, match="watermark_of must be a callable"):
            PunctuatedWatermarks(5)  # type: ignore[arg-type]


class TestWatermarksWithIdleness:
    def make(self, timeout=100, start=0):
        clock = Clock(start)
        return WatermarksWithIdleness(AscendingTimestampsWatermarks(), timeout, clock), clock

    def test_activity_keeps_it_active_and_delegates(self):
        g, clock = self.make()
        out = ListWatermarkOutput()
        for t in range(0, 1000, 50):
            clock.now = t
            feed(g, t + 1, out=out)
            g.on_periodic_emit(out)
        assert IDLE not in out.events
        assert out.events[-1] == 950  # max 951 - 1

    def test_idle_after_more_than_timeout_from_first_quiet_check(self):
        g, clock = self.make(timeout=100, start=1000)
        out = ListWatermarkOutput()
        feed(g, 5, out=out)
        g.on_periodic_emit(out)  # activity since last check: delegate, reset
        clock.now = 1010
        g.on_periodic_emit(out)  # first quiet check: timer starts at 1010, delegates
        clock.now = 1110
        g.on_periodic_emit(out)  # exactly 100: not more than the timeout
        assert out.events == [4, 4, 4]
        assert not g.is_idle()
        clock.now = 1111
        g.on_periodic_emit(out)
        assert out.events == [4, 4, 4, IDLE]
        assert g.is_idle()

    def test_idle_is_marked_once_and_inner_is_not_asked_while_idle(self):
        g, clock = self.make(timeout=10)
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)  # quiet from the start: timer starts at 0
        clock.now = 11
        for _ in range(3):
            g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP, IDLE]

    def test_a_record_marks_active_again_and_restarts_the_timer(self):
        g, clock = self.make(timeout=10)
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)
        clock.now = 20
        g.on_periodic_emit(out)
        assert out.events[-1] is IDLE
        feed(g, 30, out=out)
        assert out.events[-1] is ACTIVE
        feed(g, 31, out=out)  # only one ACTIVE
        assert out.events.count(ACTIVE) == 1
        g.on_periodic_emit(out)  # activity: delegates
        assert out.events[-1] == 30
        clock.now = 25
        g.on_periodic_emit(out)  # quiet: timer restarts at 25
        clock.now = 35
        g.on_periodic_emit(out)
        assert out.events[-1] == 30
        clock.now = 36
        g.on_periodic_emit(out)
        assert out.events[-1] is IDLE

    def test_clock_value_zero_is_a_valid_start(self):
        g, clock = self.make(timeout=5, start=0)
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)  # starts the timer at 0
        clock.now = 6
        g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP, IDLE]

    @pytest.mark.parametrize("timeout", [0, -5])
    def test_timeout_must_be_positive(self, timeout):
        with pytest.raises(ValueError, match="idle_timeout_ms must be a positive duration"):
            WatermarksWithIdleness(AscendingTimestampsWatermarks(), timeout, Clock())

    def test_validates_generator_and_clock(self):
        with pytest.raises(TypeError, match="generator must be a WatermarkGenerator"):
            WatermarksWithIdleness(object(), 10, Clock())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="clock must be a callable"):
            WatermarksWithIdleness(AscendingTimestampsWatermarks(), 10, 5)  # type: ignore[arg-type]


def test_custom_generator_only_needs_on_event():
    class EveryEvent(WatermarkGenerator):
        def on_event(self, event, event_timestamp, output):
            output.emit_watermark(event_timestamp)

    g = EveryEvent()
    out = ListWatermarkOutput()
    feed(g, 3, out=out)
    g.on_periodic_emit(out)  # the default periodic hook does nothing
    assert out.events == [3]


def test_list_output_is_a_watermark_output():
    out = ListWatermarkOutput()
    assert isinstance(out, WatermarkOutput)
    out.emit_watermark(Watermark(1))
    out.mark_active()
    out.emit_watermark(np.int64(2))
    assert out.events == [1, ACTIVE, 2]
    assert out.watermarks() == [1, 2]


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_watermark_timestamp_refuses_non_ints(bad):
    with pytest.raises(TypeError, match="watermark must be an int"):
        watermark_timestamp(bad)


# ------------------------------------------------------------------------ assigners


class FieldAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value["ts"]


def test_record_and_ingestion_assigners():
    assert RecordTimestampAssigner().extract_timestamp("x", 12) == 12
    clock = Clock(77)
    assert IngestionTimeAssigner(clock).extract_timestamp("x", MIN_TIMESTAMP) == 77


@pytest.mark.parametrize(
    ("returned", "type_name"),
    [(1.5, "float"), ("100", "str"), (None, "NoneType"), (True, "bool")],
)
def test_check_extracted_timestamp_names_value_and_type(returned, type_name):
    with pytest.raises(TypeError) as info:
        check_extracted_timestamp(returned, FieldAssigner())
    message = str(info.value)
    assert type_name in message
    assert repr(returned) in message
    assert "timestamp assigner" in message and "FieldAssigner" in message


def test_check_extracted_timestamp_accepts_numpy_and_refuses_overflow():
    result = check_extracted_timestamp(np.int32(9), "a")
    assert result == 9 and type(result) is int
    with pytest.raises(ValueError, match="64-bit signed long"):
        check_extracted_timestamp(2**63, "a")


# ------------------------------------------------------------------------ the strategy


def gen(strategy, context=None):
    return strategy.create_watermark_generator(context)


class TestStrategyConstructors:
    def test_monotonous(self):
        g = gen(WatermarkStrategy.for_monotonous_timestamps())
        assert isinstance(g, AscendingTimestampsWatermarks)

    @pytest.mark.parametrize(
        "bound",
        [Duration.of_seconds(2), Time.seconds(2), timedelta(seconds=2), 2000, np.int64(2000)],
    )
    def test_bounded_accepts_every_span(self, bound):
        g = gen(WatermarkStrategy.for_bounded_out_of_orderness(bound))
        assert isinstance(g, BoundedOutOfOrdernessWatermarks)
        assert g.max_out_of_orderness == 2000

    def test_bounded_zero_is_allowed(self):
        g = gen(WatermarkStrategy.for_bounded_out_of_orderness(Duration.zero()))
        out = ListWatermarkOutput()
        g.on_event(None, 10, out)
        g.on_periodic_emit(out)
        assert out.events == [9]

    @pytest.mark.parametrize("bound", [-1, Duration.of_millis(-5), timedelta(seconds=-1)])
    def test_bounded_negative_names_the_parameter(self, bound):
        with pytest.raises(ValueError, match="max_out_of_orderness must be >= 0"):
            WatermarkStrategy.for_bounded_out_of_orderness(bound)

    def test_bounded_wrong_type_names_the_parameter(self):
        with pytest.raises(TypeError, match="max_out_of_orderness must be a Duration"):
            WatermarkStrategy.for_bounded_out_of_orderness("5s")  # type: ignore[arg-type]

    def test_no_watermarks(self):
        assert isinstance(gen(WatermarkStrategy.no_watermarks()), NoWatermarksGenerator)

    def test_punctuated(self):
        g = gen(WatermarkStrategy.for_punctuated(lambda e: e))
        out = ListWatermarkOutput()
        g.on_event(42, 0, out)
        assert out.events == [42]
        with pytest.raises(TypeError, match="watermark_of"):
            WatermarkStrategy.for_punctuated("field")  # type: ignore[arg-type]

    def test_each_create_returns_a_fresh_generator(self):
        s = WatermarkStrategy.for_bounded_out_of_orderness(1)
        assert gen(s) is not gen(s)


class TestForGenerator:
    def test_zero_arg_factory_and_class(self):
        s = WatermarkStrategy.for_generator(lambda: BoundedOutOfOrdernessWatermarks(4))
        assert gen(s).max_out_of_orderness == 4
        assert isinstance(
            gen(WatermarkStrategy.for_generator(NoWatermarksGenerator)), NoWatermarksGenerator
        )

    def test_factory_taking_a_context_sees_the_clock(self):
        seen = []

        def factory(ctx):
            seen.append(ctx.current_processing_time())
            return NoWatermarksGenerator()

        s = WatermarkStrategy.for_generator(factory)
        gen(s, ClockContext(lambda: 5))
        gen(s, ManualProcessingTimeService(start=9))  # a service works as context
        assert seen == [5, 9]

    def test_factory_reading_the_clock_without_context_gets_a_clear_error(self):
        s = WatermarkStrategy.for_generator(lambda ctx: ctx.current_processing_time())
        with pytest.raises(ValueError, match="context is None"):
            gen(s)

    def test_factory_with_optional_parameter_is_zero_arg(self):
        s = WatermarkStrategy.for_generator(lambda d=3: BoundedOutOfOrdernessWatermarks(d))
        assert gen(s).max_out_of_orderness == 3

    def test_factory_with_two_required_arguments_is_refused(self):
        with pytest.raises(TypeError, match="factory must be callable with no argument"):
            WatermarkStrategy.for_generator(lambda a, b: None)

    def test_non_callable_factory_is_refused(self):
        with pytest.raises(TypeError, match="factory must be a callable"):
            WatermarkStrategy.for_generator(AscendingTimestampsWatermarks())  # type: ignore

    def test_factory_returning_something_else_fails_at_create(self):
        s = WatermarkStrategy.for_generator(lambda: 42)
        with pytest.raises(TypeError, match="must be a WatermarkGenerator"):
            gen(s)

    def test_duck_typed_generator_is_accepted(self):
        class Duck:
            def on_event(self, event, ts, output):
                pass

            def on_periodic_emit(self, output):
                output.emit_watermark(1)

        assert isinstance(gen(WatermarkStrategy.for_generator(Duck)), Duck)


class TestIdleness:
    def test_with_idleness_wraps_with_the_context_clock(self):
        clock = Clock(0)
        s = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(50))
        g = gen(s, ClockContext(clock))
        assert isinstance(g, WatermarksWithIdleness)
        assert g.idle_timeout == 50
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)
        clock.now = 51
        g.on_periodic_emit(out)
        assert out.events == [MIN_TIMESTAMP, IDLE]

    def test_with_idleness_uses_a_processing_time_service(self):
        service = ManualProcessingTimeService(start=100)
        g = gen(WatermarkStrategy.no_watermarks().with_idleness(10), service)
        out = ListWatermarkOutput()
        g.on_periodic_emit(out)
        service.advance(11)
        g.on_periodic_emit(out)
        assert out.events == [IDLE]

    @pytest.mark.parametrize("timeout", [0, -1, Duration.zero(), timedelta(0)])
    def test_idle_timeout_must_be_positive(self, timeout):
        with pytest.raises(ValueError, match="idle_timeout must be a positive duration"):
            WatermarkStrategy.for_monotonous_timestamps().with_idleness(timeout)

    def test_idleness_without_context_is_a_clear_error(self):
        s = WatermarkStrategy.for_monotonous_timestamps().with_idleness(10)
        with pytest.raises(ValueError, match=r"with_idleness.*context is None"):
            gen(s)


class TestAssignerConfiguration:
    def test_default_keeps_the_record_timestamp(self):
        a = WatermarkStrategy.for_monotonous_timestamps().create_timestamp_assigner(None)
        assert isinstance(a, RecordTimestampAssigner)

    def test_assigner_instance_and_callable(self):
        s = WatermarkStrategy.for_monotonous_timestamps()
        inst = FieldAssigner()
        assert s.with_timestamp_assigner(inst).create_timestamp_assigner() is inst
        a = s.with_timestamp_assigner(lambda v, ts: v * 2).create_timestamp_assigner()
        assert isinstance(a, TimestampAssigner)
        assert a.extract_timestamp(21, MIN_TIMESTAMP) == 42

    def test_duck_typed_assigner(self):
        class Duck:
            def extract_timestamp(self, value, record_timestamp):
                return 1

        duck = Duck()
        s = WatermarkStrategy.no_watermarks().with_timestamp_assigner(duck)
        assert s.create_timestamp_assigner() is duck

    def test_bad_assigner_names_the_parameter(self):
        with pytest.raises(TypeError, match="timestamp_assigner must be a TimestampAssigner"):
            WatermarkStrategy.no_watermarks().with_timestamp_assigner(5)  # type: ignore

    def test_ingestion_time_stamps_with_processing_time(self):
        service = ManualProcessingTimeService(start=1000)
        s = WatermarkStrategy.for_ingestion_time()
        assert s.is_ingestion_time
        a = s.create_timestamp_assigner(service)
        assert a.extract_timestamp("x", MIN_TIMESTAMP) == 1000
        service.advance(5)
        assert a.extract_timestamp("x", 7) == 1005
        assert isinstance(gen(s), AscendingTimestampsWatermarks)

    def test_ingestion_time_without_context_is_a_clear_error(self):
        with pytest.raises(ValueError, match=r"for_ingestion_time.*context is None"):
            WatermarkStrategy.for_ingestion_time().create_timestamp_assigner(None)

    def test_explicit_assigner_replaces_ingestion_stamping(self):
        s = WatermarkStrategy.for_ingestion_time().with_timestamp_assigner(lambda v, ts: 3)
        assert not s.is_ingestion_time
        assert s.create_timestamp_assigner(None).extract_timestamp("x", 0) == 3


class TestImmutability:
    def test_with_methods_return_new_strategies(self):
        base = WatermarkStrategy.for_monotonous_timestamps()
        with_assigner = base.with_timestamp_assigner(lambda v, ts: 1)
        with_idle = with_assigner.with_idleness(Duration.of_seconds(1))
        assert base.timestamp_assigner is None and base.idle_timeout is None
        assert with_assigner.timestamp_assigner is not None and with_assigner.idle_timeout is None
        assert with_idle.idle_timeout == 1000
        assert with_idle.timestamp_assigner is with_assigner.timestamp_assigner

    def test_attributes_cannot_be_set(self):
        s = WatermarkStrategy.no_watermarks()
        with pytest.raises(AttributeError, match="immutable"):
            s.idle_timeout = 5  # type: ignore[misc]
        with pytest.raises(AttributeError, match="immutable"):
            del s.timestamp_assigner
        assert s.idle_timeout is None and s.timestamp_assigner is None

    def test_pickles(self):
        s = (
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(3))
            .with_timestamp_assigner(FieldAssigner())
            .with_idleness(Duration.of_minutes(1))
        )
        s2 = pickle.loads(pickle.dumps(s))
        assert repr(s2) == repr(s)
        g = gen(s2, ClockContext(lambda: 0))
        assert isinstance(g, WatermarksWithIdleness) and g.idle_timeout == 60_000
        for built_in in (
            WatermarkStrategy.no_watermarks(),
            WatermarkStrategy.for_monotonous_timestamps(),
            WatermarkStrategy.for_ingestion_time(),
            WatermarkStrategy.for_generator(NoWatermarksGenerator),
        ):
            assert repr(pickle.loads(pickle.dumps(built_in))) == repr(built_in)

    def test_repr_describes_the_chain(self):
        s = WatermarkStrategy.for_bounded_out_of_orderness(Time.seconds(1)).with_idleness(5)
        assert repr(s) == (
            "WatermarkStrategy.for_bounded_out_of_orderness(1000 ms).with_idleness(5 ms)"
        )


def test_watermark_alignment_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="remove the call"):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
            "group", Duration.of_seconds(20)
        )


def test_bad_context_is_refused():
    with pytest.raises(TypeError, match="context must have current_processing_time"):
        gen(WatermarkStrategy.no_watermarks(), object())
