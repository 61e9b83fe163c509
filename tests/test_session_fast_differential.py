"""The session windows' fast form against the general path: the built-in session assigners add
a time window next to at most one in-flight window without sorting and grouping
(``MergingWindowSet``); a subclass of the assigner takes the general path. Random windows give
the same results, merge calls and mappings step by step; random session jobs with late records
(a late side output, allowed lateness) give the same output in the same order at parallelism 1,
2 and 4 on the local runtime, and on Spark."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, Time, Types, WatermarkStrategy
from sparktide.core.output_tag import OutputTag
from sparktide.core.window.assigners import EventTimeSessionWindows
from sparktide.core.window.triggers import EventTimeTrigger
from sparktide.core.window.windows import TimeWindow
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.runtime.operators.merging_window_set import MergingWindowSet


class GeneralSessions(EventTimeSessionWindows):
    """The same sessions, not one of the built-in classes: the general path."""


class GeneralTrigger(EventTimeTrigger):
    """The same trigger, not the built-in class: run through its calls, not inline."""


class _Store(dict):
    def items(self) -> Any:
        return list(super().items())

    def put_all(self, d: Any) -> None:
        self.update(d)


def _step(s: MergingWindowSet, window: TimeWindow) -> tuple[Any, list[Any], list[Any]]:
    calls: list[Any] = []
    result = s.add_window(window, lambda *args: calls.append(args))
    s.persist()
    return result, calls, sorted(s.windows())


def test_adding_windows_matches_the_general_path() -> None:
    rnd = random.Random(11)
    for _ in range(300):
        fast_store, general_store = _Store(), _Store()
        for _ in range(12):
            start = rnd.randrange(0, 60)
            window = TimeWindow(start, start + rnd.choice((1, 3, 5, 8)))
            fast = MergingWindowSet(EventTimeSessionWindows.with_gap(5), fast_store)
            general = MergingWindowSet(GeneralSessions(5), general_store)
            assert _step(fast, window) == _step(general, window)
            if rnd.random() < 0.15 and fast.windows():
                gone = rnd.choice(fast.windows())
                fast.retire_window(gone)
                general.retire_window(gone)
                fast.persist()
                general.persist()
            fast.check_invariants()
            assert fast_store == general_store


LATE = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))


def _sessions(
    runtime: str, rows: list[tuple[str, int]], parallelism: int, fast: bool, lateness: int = 2
) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(4)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(3)
    ).with_timestamp_assigner(lambda r, _: r[1])
    assigner = EventTimeSessionWindows.with_gap(5) if fast else GeneralSessions(5)
    windowed = (
        env.from_collection(rows, Types.TUPLE([Types.STRING(), Types.LONG()]))
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda r: r[0], key_type=Types.STRING())
        .window(assigner)
    )
    if not fast:
        windowed = windowed.trigger(GeneralTrigger())
    main = (
        windowed.allowed_lateness(Time.milliseconds(lateness))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    late = main.get_side_output(LATE).map(lambda r: ("late", r[0], r[1]))
    return list(main.map(lambda r: ("session", r[0], r[1])).union(late).execute_and_collect())


rows = st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 80)), max_size=40)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(rows, st.sampled_from((0, 4, 15)))
def test_session_jobs_match_the_general_path_locally(rows, lateness) -> None:
    for parallelism in (1, 2, 4):
        assert _sessions("local", rows, parallelism, True, lateness) == _sessions(
            "local", rows, parallelism, False, lateness
        )


def test_session_jobs_match_the_general_path_on_spark(spark) -> None:
    rnd = random.Random(5)
    rows = [(rnd.choice("abcd"), i // 2 + rnd.randrange(0, 12)) for i in range(120)]
    expected = _sessions("local", rows, 2, False)
    assert any(t[0] == "late" for t in expected) and any(t[0] == "session" for t in expected)
    for parallelism in (1, 2, 4):
        assert _sessions("spark", rows, parallelism, True) == expected


def test_a_session_ending_at_the_watermark_fires_on_arrival() -> None:
    """A window whose end is the watermark (not late with allowed lateness) fires as its record
    arrives, before the late record that follows (EventTimeTrigger's on_element, inline)."""
    rows = [("a", 20), ("b", 21), ("b", 22), ("b", 23), ("c", 15), ("d", 10), ("a", 60)]
    out = _sessions("local", rows, 1, True, 4)
    assert out == _sessions("local", rows, 1, False, 4)
    assert out.index(("session", "c", 15)) < out.index(("late", "d", 10))
