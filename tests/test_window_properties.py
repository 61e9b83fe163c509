"""Property tests: window results on random out-of-order input equal a naive batch computation.

Two regimes: the watermark comes only at the end (each window fires exactly once), or
watermarks are interleaved and the allowed lateness exceeds the disorder (a window may fire
several times; its last firing holds everything).
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.datastream.window import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

MAX = MAX_TIMESTAMP
EXAMPLES = int(os.environ.get("SPARKTIDE_WINDOW_EXAMPLES", "100"))  # more: a deeper search


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield key, w.start, w.end, sum(e[1] for e in elements), len(list(elements))


def _sum(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1])


records = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(1, 9), st.integers(-200, 200)),
    min_size=1,
    max_size=60,
)


def run_operator(
    assigner: Any,
    elements: list[tuple[str, int, int]],
    *,
    kind: str,
    lateness: int = 0,
    watermark_every: int | None = None,
) -> list[tuple[Any, ...]]:
    b = WindowOperatorBuilder(assigner)
    b.set_allowed_lateness(lateness)
    op = b.process(Describe()) if kind == "process" else b.reduce(_sum, Describe())
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0])
    h.open()
    max_ts = None
    for i, (key, value, ts) in enumerate(elements):
        h.process_element((key, value, ts), ts)
        max_ts = ts if max_ts is None else max(max_ts, ts)
        if watermark_every and i % watermark_every == watermark_every - 1:
            h.process_watermark(max_ts - 1)
    h.process_watermark(MAX)
    assert h.operator.num_late_records_dropped == 0
    assert h.num_keyed_state_entries() == 0 and h.num_event_time_timers() == 0
    return [r.value for r in h.get_output() if isinstance(r, StreamRecord)]


def last_firing_per_window(outputs: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], Any]:
    last: dict[tuple[Any, ...], Any] = {}
    for key, start, end, total, _count in outputs:
        last[(key, start, end)] = total
    return last


def naive_fixed(elements: Any, size: int, slide: int, offset: int) -> dict[Any, int]:
    out: dict[Any, int] = defaultdict(int)
    for key, value, ts in elements:
        start = ts - (ts - offset) % slide
        while start > ts - size:
            out[(key, start, start + size)] += value
            start -= slide
    return dict(out)


def naive_sessions(elements: Any, gap_of: Any) -> dict[Any, int]:
    by_key: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for key, value, ts in elements:
        by_key[key].append((ts, ts + gap_of((key, value, ts)), value))
    out = {}
    for key, windows in by_key.items():
        windows.sort()
        start, end, total = windows[0]
        for s, e, v in windows[1:]:
            if s <= end:
                end, total = max(end, e), total + v
            else:
                out[(key, start, end)] = total
                start, end, total = s, e, v
        out[(key, start, end)] = total
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(records, st.integers(1, 50), st.data(), st.sampled_from(["reduce", "process"]))
def test_tumbling_matches_batch(elements: Any, size: int, data: Any, kind: str) -> None:
    offset = data.draw(st.integers(-size + 1, size - 1))
    outputs = run_operator(TumblingEventTimeWindows.of(size, offset), elements, kind=kind)
    assert len(outputs) == len(set(o[:3] for o in outputs)), "a window fired twice"
    assert last_firing_per_window(outputs) == naive_fixed(elements, size, size, offset)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    records,
    st.integers(1, 40),
    st.integers(1, 40),
    st.data(),
    st.sampled_from(["reduce", "process"]),
)
def test_sliding_matches_batch(elements: Any, size: int, slide: int, data: Any, kind: str) -> None:
    offset = data.draw(st.integers(-slide + 1, slide - 1))
    assigner = SlidingEventTimeWindows.of(size, slide, offset)
    outputs = run_operator(assigner, elements, kind=kind)
    assert len(outputs) == len(set(o[:3] for o in outputs))
    assert last_firing_per_window(outputs) == naive_fixed(elements, size, slide, offset)


@settings(max_examples=EXAMPLES, deadline=None)
@given(records, st.integers(1, 60), st.sampled_from(["reduce", "process"]))
def test_sessions_match_batch(elements: Any, gap: int, kind: str) -> None:
    outputs = run_operator(EventTimeSessionWindows.with_gap(gap), elements, kind=kind)
    assert len(outputs) == len(set(o[:3] for o in outputs))
    assert last_firing_per_window(outputs) == naive_sessions(elements, lambda e: gap)


@settings(max_examples=EXAMPLES, deadline=None)
@given(records)
def test_dynamic_sessions_match_batch(elements: Any) -> None:
    def gap_of(e: Any) -> int:
        return e[1] * 5

    outputs = run_operator(
        DynamicEventTimeSessionWindows.with_dynamic_gap(gap_of), elements, kind="process"
    )
    assert last_firing_per_window(outputs) == naive_sessions(elements, gap_of)


def without_superseded(outputs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Session firings of windows that later merged into a larger one are superseded."""
    spans = {(o[0], o[1], o[2]) for o in outputs}
    return [
        o
        for o in outputs
        if not any(
            k == o[0] and s <= o[1] and o[2] <= e and (s, e) != (o[1], o[2]) for k, s, e in spans
        )
    ]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    records,
    st.sampled_from(["tumbling", "sliding", "session"]),
    st.integers(1, 30),
    st.integers(0, 60),
    st.integers(1, 5),
    st.data(),
)
def test_interleaved_watermarks_with_enough_lateness(
    elements: Any, kind: str, size: int, disorder: int, every: int, data: Any
) -> None:
    delays = data.draw(
        st.lists(st.integers(0, disorder), min_size=len(elements), max_size=len(elements))
    )
    order = sorted(range(len(elements)), key=lambda i: (elements[i][2] + delays[i], i))
    ordered = [elements[i] for i in order]
    assigner = {
        "tumbling": TumblingEventTimeWindows.of(size),
        "sliding": SlidingEventTimeWindows.of(size * 2, size),
        "session": EventTimeSessionWindows.with_gap(size),
    }[kind]
    # each watermark trails the largest timestamp seen by 1 ms: an element is at most
    # `disorder` behind it, which the allowed lateness covers
    outputs = run_operator(
        assigner, ordered, kind="reduce", lateness=disorder + 1, watermark_every=every
    )
    if kind == "session":
        outputs = without_superseded(outputs)
        expected = naive_sessions(elements, lambda e: size)
    elif kind == "tumbling":
        expected = naive_fixed(elements, size, size, 0)
    else:
        expected = naive_fixed(elements, 2 * size, size, 0)
    assert last_firing_per_window(outputs) == expected


def test_a_late_element_extends_a_fired_session() -> None:
    elements = [("a", 1, 0), ("a", 1, 20), ("a", 1, 5)]
    outputs = run_operator(
        EventTimeSessionWindows.with_gap(10),
        elements,
        kind="reduce",
        lateness=100,
        watermark_every=1,
    )
    assert outputs == [("a", 0, 10, 1, 1), ("a", 0, 15, 2, 1), ("a", 20, 30, 1, 1)]
    assert without_superseded(outputs) == outputs[1:]
