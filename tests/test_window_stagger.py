"""``WindowStagger`` for tumbling processing-time windows, and global windows with Flink's
end-of-stream trigger."""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.timestamps import MAX_TIMESTAMP
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import (
    GlobalWindow,
    GlobalWindows,
    TimeWindow,
    TumblingProcessingTimeWindows,
    WindowStagger,
)
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.testing import (
    KeyedOneInputStreamOperatorTestHarness,
    TriggerFiring,
    TriggerTestHarness,
)
from sparktide.testing.trigger_harness import TriggerResult


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


def _windows(assigner: TumblingProcessingTimeWindows, times: list[int]) -> list[TimeWindow]:
    return [assigner.assign_windows("x", None, Clock(t))[0] for t in times]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 1000),
    offset_fraction=st.floats(-0.99, 0.99),
    times=st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=20),
    stagger=st.sampled_from(list(WindowStagger)),
    seed=st.integers(0, 2**32),
)
def test_windows_hold_their_time_and_keep_the_phase_of_the_first_element(
    size: int, offset_fraction: float, times: list[int], stagger: WindowStagger, seed: int
) -> None:
    offset = int(size * offset_fraction)
    random.seed(seed)
    assigner = TumblingProcessingTimeWindows.of(size, offset, stagger)
    windows = _windows(assigner, times)
    random.seed(seed)
    expected_stagger = stagger.get_stagger_offset(times[0], size)
    phase = (offset + expected_stagger) % size
    for t, w in zip(times, windows, strict=True):
        assert w.start <= t < w.end and w.end - w.start == size
        assert (w.start - phase) % size == 0
    if stagger is WindowStagger.ALIGNED:
        assert windows == _windows(TumblingProcessingTimeWindows.of(size, offset), times)
    if stagger is WindowStagger.NATURAL:  # the first window starts at the first element
        assert windows[0].start == times[0] - (-offset) % size


def test_natural_stagger_starts_the_windows_at_the_first_element() -> None:
    assigner = TumblingProcessingTimeWindows.of(1000, 0, WindowStagger.NATURAL)
    assert _windows(assigner, [1_234, 2_233, 2_234, 5_000]) == [
        TimeWindow(1_234, 2_234),
        TimeWindow(1_234, 2_234),
        TimeWindow(2_234, 3_234),
        TimeWindow(4_234, 5_234),
    ]


def test_random_stagger_is_below_the_size() -> None:
    offsets = {WindowStagger.RANDOM.get_stagger_offset(0, 10) for _ in range(200)}
    assert offsets <= set(range(10)) and len(offsets) > 1


def test_every_copy_chooses_its_own_stagger_offset() -> None:
    # each subtask works on a copy of the assigner (pickled or deep-copied per instance)
    assigner = TumblingProcessingTimeWindows.of(1000, 0, WindowStagger.NATURAL)
    assert _windows(assigner, [1_100]) == [TimeWindow(1_100, 2_100)]
    for twin in (copy.deepcopy(assigner), pickle.loads(pickle.dumps(assigner))):
        assert _windows(twin, [1_700]) == [TimeWindow(1_700, 2_700)]
        assert twin.get_window_stagger() is WindowStagger.NATURAL
    assert _windows(assigner, [1_700]) == [TimeWindow(1_100, 2_100)]


def test_repr_and_bad_stagger() -> None:
    assert repr(TumblingProcessingTimeWindows.of(10)) == (
        "TumblingProcessingTimeWindows(size=10, offset=0)"
    )
    assert repr(TumblingProcessingTimeWindows.of(10, 2, WindowStagger.RANDOM)) == (
        "TumblingProcessingTimeWindows(size=10, offset=2, window_stagger=WindowStagger.RANDOM)"
    )
    with pytest.raises(TypeError, match="window_stagger must be a WindowStagger"):
        TumblingProcessingTimeWindows.of(10, 0, "NATURAL")  # type: ignore[arg-type]


def test_staggered_windows_fire_by_processing_time_in_the_operator() -> None:
    assigner = TumblingProcessingTimeWindows.of(100, 0, WindowStagger.NATURAL)
    op = WindowOperatorBuilder(assigner).reduce(lambda a, b: (a[0], a[1] + b[1]))
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0], processing_time=1_030)
    h.open()
    clock: ManualProcessingTimeService = h.processing_time_service
    h.process_element(("a", 1))  # the first element: windows start at 30 + k * 100
    h.set_processing_time(1_100)
    h.process_element(("a", 2))
    assert h.extract_output_values() == []
    h.set_processing_time(1_129)  # the end of [1030, 1130): max_timestamp 1129
    assert h.extract_output_values() == [("a", 3)]
    assert clock.get_current_processing_time() == 1_129
    h.set_processing_time(1_130)
    h.process_element(("a", 5))  # [1130, 1230)
    h.set_processing_time(1_229)
    assert h.get_records()[-1].value == ("a", 5) and h.get_records()[-1].timestamp == 1_229


# ----------------------------------------------------------------------------- end of stream


def test_end_of_stream_trigger_fires_only_at_the_end() -> None:
    h = TriggerTestHarness(GlobalWindows.create_with_end_of_stream_trigger().get_default_trigger())
    window = GlobalWindow.get()
    assert h.process_element("a", window, timestamp=5) is TriggerResult.CONTINUE
    assert h.process_element("b", window, timestamp=7) is TriggerResult.CONTINUE
    assert h.num_event_time_timers(window) == 1
    assert h.advance_watermark(MAX_TIMESTAMP - 1) == []
    assert h.advance_processing_time(10**12) == []
    assert h.advance_watermark(MAX_TIMESTAMP) == [TriggerFiring(window, TriggerResult.FIRE)]


def test_global_windows_repr_and_default_trigger() -> None:
    assert repr(GlobalWindows.create()) == "GlobalWindows()"
    eos = GlobalWindows.create_with_end_of_stream_trigger()
    assert repr(eos) == "GlobalWindows.create_with_end_of_stream_trigger()"
    assert isinstance(eos.get_default_trigger(), GlobalWindows.EndOfStreamTrigger)
    assert not eos.is_event_time()


@pytest.mark.parametrize(("runtime", "parallelism"), [("local", 1), ("local", 3), ("spark", 2)])
def test_end_of_stream_windows_give_one_result_per_key_at_the_end(
    runtime: str, parallelism: int, request: pytest.FixtureRequest
) -> None:
    if runtime == "spark":
        request.getfixturevalue("spark")  # skips without Java
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    data = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
    out = (
        env.from_collection(data)
        .key_by(lambda v: v[0])
        .window(GlobalWindows.create_with_end_of_stream_trigger())
        .reduce(lambda x, y: (x[0], x[1] + y[1]))
    )
    assert sorted(out.execute_and_collect()) == [("a", 10), ("b", 7), ("c", 4)]
