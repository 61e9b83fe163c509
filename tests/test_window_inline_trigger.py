"""The window operator runs ``EventTimeTrigger.on_element`` inline; a subclass of the trigger
(which the operator calls like any trigger) must give the same outputs, late side outputs,
pending timers and snapshots on random out-of-order input with lateness."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.output_tag import OutputTag
from sparktide.core.window.triggers import EventTimeTrigger
from sparktide.datastream.window import (
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

LATE = OutputTag("late")


class CalledEventTimeTrigger(EventTimeTrigger):
    """EventTimeTrigger itself, but not inlined: the operator calls its methods."""

    __slots__ = ()


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield key, w.start, w.end, sorted(e[1] for e in elements), context.current_watermark()


def _run(trigger: EventTimeTrigger, assigner: Any, kind: str, lateness: int, steps: Any) -> Any:
    b = WindowOperatorBuilder(assigner)
    b.set_trigger(trigger)
    b.set_allowed_lateness(lateness)
    b.set_late_data_output_tag(LATE)
    op = (
        b.process(Describe())
        if kind == "process"
        else b.reduce(lambda a, c: (a[0], a[1] + c[1], max(a[2], c[2])), Describe())
    )
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0])
    h.open()
    snapshots, timers = [], []
    for key, value, ts, watermark in steps:
        h.process_element((key, value, ts), ts)
        if watermark is not None:
            h.process_watermark(watermark)
            timers.append(h.num_event_time_timers())
    snapshots.append(h.snapshot())
    h.process_watermark(MAX_TIMESTAMP)
    out = [(r.value, r.timestamp) for r in h.get_output() if isinstance(r, StreamRecord)]
    late = [(r.value, r.timestamp) for r in h.get_side_output(LATE)]
    return out, late, timers, snapshots, h.operator.num_late_records_side_output


steps = st.lists(
    st.tuples(
        st.sampled_from("abc"),
        st.integers(1, 9),
        st.integers(-20, 150),
        # watermarks often at a window's max_timestamp (ends are multiples of 15 and 30)
        st.one_of(st.none(), st.integers(-1, 10).map(lambda i: 15 * i - 1), st.integers(-20, 150)),
    ),
    min_size=1,
    max_size=50,
)


@settings(max_examples=150, deadline=None)
@given(
    steps=steps,
    sliding=st.booleans(),
    kind=st.sampled_from(["process", "reduce"]),
    lateness=st.sampled_from([0, 0, 20, 100]),
)
def test_inline_event_time_trigger_equals_calling_it(
    steps: Any, sliding: bool, kind: str, lateness: int
) -> None:
    def assigner() -> Any:
        if sliding:
            return SlidingEventTimeWindows.of(40, 15)
        return TumblingEventTimeWindows.of(30)

    inline = _run(EventTimeTrigger.create(), assigner(), kind, lateness, steps)
    called = _run(CalledEventTimeTrigger(), assigner(), kind, lateness, steps)
    assert inline == called
