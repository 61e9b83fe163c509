"""``TriggerTestHarness`` (Flink's): trigger results per element, firings per advance, timers and
state per window; and the operator harness's watermark and per-namespace counts."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.datastream import KeyedProcessFunction
from sparktide.datastream.window import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    TimeWindow,
    TumblingEventTimeWindows,
)
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing import (
    KeyedOneInputStreamOperatorTestHarness,
    TriggerFiring,
    TriggerTestHarness,
    for_keyed_process_function,
)
from sparktide.testing.trigger_harness import TriggerResult

CONTINUE, FIRE = TriggerResult.CONTINUE, TriggerResult.FIRE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE
W1, W2 = TimeWindow(0, 2), TimeWindow(2, 4)


def harness(trigger: object) -> TriggerTestHarness[TimeWindow]:
    return TriggerTestHarness(trigger)  # type: ignore[arg-type]


def test_clock_and_watermark_start_at_min_as_flinks() -> None:
    h = harness(EventTimeTrigger.create())
    assert h.get_processing_time() == MIN_TIMESTAMP
    assert h.get_current_watermark() == MIN_TIMESTAMP
    h.advance_watermark(5)
    assert h.get_current_watermark() == 5


def test_event_time_trigger_timers_per_window_and_firing(state_backend: str) -> None:
    # Flink's EventTimeTriggerTest.testWindowSeparationAndFiring
    h = harness(EventTimeTrigger.create())
    assert h.process_element(1, W1, timestamp=0) is CONTINUE
    assert h.process_element(1, W1, timestamp=0) is CONTINUE
    assert h.process_element(1, W2, timestamp=2) is CONTINUE
    assert h.process_element(1, W2, timestamp=2) is CONTINUE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (0, 0)
    assert h.num_event_time_timers() == 2
    assert (h.num_event_time_timers(W1), h.num_event_time_timers(W2)) == (1, 1)
    assert h.advance_watermark(2, W1) == [TriggerFiring(W1, FIRE)]
    assert (h.num_event_time_timers(), h.num_event_time_timers(W1)) == (1, 0)
    assert h.advance_watermark(4, W2) == [TriggerFiring(W2, FIRE)]
    assert h.num_event_time_timers() == 0
    # a window whose end the watermark has passed fires at once and registers no timer
    assert h.process_element(1, TimeWindow(0, 3), timestamp=1) is FIRE
    assert h.num_event_time_timers() == 0
    h.close()


def test_clear_removes_the_windows_timer() -> None:
    h = harness(EventTimeTrigger.create())
    h.process_element(1, W1, timestamp=0)
    h.process_element(1, W2, timestamp=2)
    h.clear_trigger_state(W1)
    assert (h.num_event_time_timers(W1), h.num_event_time_timers(W2)) == (0, 1)
    assert h.advance_watermark(10) == [TriggerFiring(W2, FIRE)]


def test_count_trigger_keeps_its_count_per_window(state_backend: str) -> None:
    h = harness(CountTrigger.of(3))
    assert [h.process_element(v, W1).name for v in "ab"] == ["CONTINUE", "CONTINUE"]
    assert h.process_element("x", W2) is CONTINUE
    assert (h.num_state_entries(), h.num_state_entries(W1), h.num_state_entries(W2)) == (2, 1, 1)
    assert h.process_element("c", W1) is FIRE
    assert h.process_element("d", W1) is CONTINUE  # the count restarted
    h.clear_trigger_state(W1)
    assert (h.num_state_entries(W1), h.num_state_entries(W2)) == (0, 1)
    assert (h.num_event_time_timers(), h.num_processing_time_timers()) == (0, 0)
    h.close()


def test_purging_trigger_turns_fire_into_fire_and_purge() -> None:
    h = harness(PurgingTrigger.of(EventTimeTrigger.create()))
    h.process_element(1, W1, timestamp=0)
    assert h.advance_watermark(1, W1) == [TriggerFiring(W1, FIRE_AND_PURGE)]


def test_processing_time_trigger_fires_by_the_clock(state_backend: str) -> None:
    h = harness(ProcessingTimeTrigger.create())
    assert h.process_element(1, W1) is CONTINUE
    assert h.process_element(1, W2) is CONTINUE
    assert (h.num_processing_time_timers(W1), h.num_processing_time_timers(W2)) == (1, 1)
    assert h.num_event_time_timers() == 0
    assert h.advance_processing_time(0) == []
    assert h.advance_processing_time(1, W1) is not None
    assert h.num_processing_time_timers() == 1
    assert h.advance_processing_time(10) == [TriggerFiring(W2, FIRE)]
    h.close()


def test_expecting_one_firing_for_a_window_reports_what_fired() -> None:
    h = harness(EventTimeTrigger.create())
    h.process_element(1, W1, timestamp=0)
    h.process_element(1, W2, timestamp=2)
    with pytest.raises(AssertionError, match="expected exactly one firing"):
        h.advance_watermark(10, W1)
    assert h.process_element(1, TimeWindow(20, 22), timestamp=20) is CONTINUE
    with pytest.raises(
        AssertionError, match=r"fired: \[TriggerFiring\(window=TimeWindow\(start=20"
    ):
        h.advance_watermark(30, W1)


def test_continuous_trigger_re_registers_inside_the_same_advance() -> None:
    # ContinuousEventTimeTrigger(2) over [0, 10): timers at 2 and 9 (the end); each interval
    # timer registers the next one (4, 6, 8) inside the same advance, as in the window operator
    h = harness(ContinuousEventTimeTrigger.of(2))
    window = TimeWindow(0, 10)
    h.process_element(1, window, timestamp=1)
    assert h.timer_service.event_time_timers_of(window) == [2, 9]
    assert h.advance_watermark(9) == [TriggerFiring(window, FIRE)] * 5  # at 2, 4, 6, 8, 9
    assert h.num_event_time_timers() == 0
    h.process_element(1, TimeWindow(10, 20), timestamp=11)
    assert h.advance_watermark(13) == [TriggerFiring(TimeWindow(10, 20), FIRE)]  # at 12
    assert h.timer_service.event_time_timers_of(TimeWindow(10, 20)) == [14, 19]


def test_merging_windows_merges_trigger_state_and_clears_the_merged() -> None:
    h = harness(CountTrigger.of(10))
    a, b, merged = TimeWindow(0, 3), TimeWindow(2, 5), TimeWindow(0, 5)
    for _ in range(2):
        h.process_element("x", a)
    for _ in range(3):
        h.process_element("y", b)
    h.merge_windows(merged, [a, b])
    assert (h.num_state_entries(a), h.num_state_entries(b), h.num_state_entries(merged)) == (
        0,
        0,
        1,
    )
    results = [h.process_element("z", merged) for _ in range(5)]
    assert results[-1] is FIRE and results[:-1] == [CONTINUE] * 4  # 2 + 3 + 5 = 10


def test_bad_input_is_named() -> None:
    with pytest.raises(TypeError, match="trigger must be a Trigger"):
        TriggerTestHarness("not a trigger")  # type: ignore[arg-type]
    h = harness(EventTimeTrigger.create())
    with pytest.raises(TypeError, match="time"):
        h.advance_watermark("soon")  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("element"), st.integers(0, 5), st.integers(0, 60)),
            st.tuples(st.just("watermark"), st.integers(0, 70), st.just(0)),
        ),
        max_size=30,
    )
)
def test_event_time_trigger_matches_a_naive_model(ops: list[tuple[str, int, int]]) -> None:
    # windows [10 i, 10 i + 10); each pending window fires once when the watermark passes its end
    h = harness(EventTimeTrigger.create())
    watermark = MIN_TIMESTAMP
    pending: dict[TimeWindow, int] = {}
    for kind, a, b in ops:
        if kind == "element":
            window = TimeWindow(10 * a, 10 * a + 10)
            result = h.process_element("v", window, timestamp=b)
            if window.max_timestamp() <= watermark:
                assert result is FIRE
            else:
                assert result is CONTINUE
                pending.setdefault(window, len(pending))
        else:
            watermark = a  # as set (Flink's harness does not check the order either)
            due = sorted(
                (w for w in pending if w.max_timestamp() <= watermark),
                key=lambda w: (w.max_timestamp(), pending[w]),
            )
            assert h.advance_watermark(a) == [TriggerFiring(w, FIRE) for w in due]
            for w in due:
                del pending[w]
        assert h.num_event_time_timers() == len(pending)
        for w in pending:
            assert h.num_event_time_timers(w) == 1


# ----------------------------------------------------------------------------- operator harness


def _tumbling_sum() -> object:
    return WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    )


def test_operator_harness_counts_timers_and_state_per_window(state_backend: str) -> None:
    h = KeyedOneInputStreamOperatorTestHarness(
        _tumbling_sum(),  # type: ignore[arg-type]
        lambda v: v[0],
    )
    h.open()
    assert h.get_current_watermark() == MIN_TIMESTAMP
    for value, ts in [(("a", 1), 3), (("b", 2), 4), (("a", 3), 15)]:
        h.process_element(value, ts)
    w0, w1 = TimeWindow(0, 10), TimeWindow(10, 20)
    assert (h.num_event_time_timers(w0), h.num_event_time_timers(w1)) == (2, 1)
    assert (h.num_keyed_state_entries(w0), h.num_keyed_state_entries(w1)) == (2, 1)
    assert h.num_keyed_state_entries() == 3
    h.process_watermark(9)
    assert h.get_current_watermark() == 9
    assert (h.num_event_time_timers(w0), h.num_keyed_state_entries(w0)) == (0, 0)
    assert (h.num_event_time_timers(), h.num_processing_time_timers(w1)) == (1, 0)
    h.close()


def test_operator_harness_counts_a_process_functions_timers_under_none() -> None:
    class Timers(KeyedProcessFunction):
        def process_element(self, value: object, ctx: KeyedProcessFunction.Context) -> Iterable:
            ctx.timer_service().register_event_time_timer(100)
            ctx.timer_service().register_processing_time_timer(7)
            return []

    h = for_keyed_process_function(Timers(), lambda v: v)
    h.process_element("a", 1)
    h.process_element("b", 1)
    assert h.num_event_time_timers(None) == h.num_event_time_timers() == 2
    assert h.num_processing_time_timers(None) == 2
    assert h.num_event_time_timers(TimeWindow(0, 10)) == 0
