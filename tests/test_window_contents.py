"""The window operator's contents seam: ``contents_factory`` and :class:`WindowContents`."""

from __future__ import annotations

from collections import Counter

import pytest

from sparktide.datastream.state import ReducingStateDescriptor
from sparktide.datastream.window import (
    EventTimeSessionWindows,
    EventTimeTrigger,
    TumblingEventTimeWindows,
    Window,
)
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.window import WINDOW_CONTENTS, WindowOperator
from sparktide.runtime.operators.window_contents import StateContents, WindowContents
from sparktide.runtime.operators.window_functions import PassThroughFunction
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness


def _add(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return (a[0], a[1] + b[1])


DESCRIPTOR = ReducingStateDescriptor(WINDOW_CONTENTS, _add, None)
EVENTS = [(("a", 1), 1), (("b", 2), 4), (("a", 3), 8), (("a", 4), 12), (("b", 5), 19)]


class CountingContents:
    """Contents that delegate to the default state contents and count the calls."""

    def __init__(self, inner: WindowContents[object], calls: Counter[str]) -> None:
        self._inner = inner
        self.calls = calls

    def set_current_namespace(self, namespace: Window) -> None:
        self._inner.set_current_namespace(namespace)

    def add(self, value: object) -> None:
        self.calls["add"] += 1
        self._inner.add(value)

    def get(self) -> object:
        self.calls["get"] += 1
        return self._inner.get()

    def clear(self) -> None:
        self.calls["clear"] += 1
        self._inner.clear()


def _operator(calls: Counter[str] | None = None) -> WindowOperator:
    factory = None
    if calls is not None:

        def factory(backend: HeapKeyedStateBackend) -> WindowContents[object]:
            return CountingContents(StateContents(DESCRIPTOR)(backend), calls)

    return WindowOperator(
        TumblingEventTimeWindows.of(10),
        DESCRIPTOR,
        PassThroughFunction(),
        EventTimeTrigger.create(),
        contents_factory=factory,
    )


def _run(
    op: WindowOperator, events: list[tuple[tuple[str, int], int]], snapshot: bytes | None = None
) -> KeyedOneInputStreamOperatorTestHarness:
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0])
    if snapshot is not None:
        h.initialize_state(snapshot)
    h.open()
    for value, ts in events:
        h.process_element(value, ts)
    return h


def _records(h: KeyedOneInputStreamOperatorTestHarness) -> list[tuple[object, int | None]]:
    return [(r.value, r.timestamp) for r in h.get_output() if isinstance(r, StreamRecord)]


def test_a_contents_factory_receives_every_element_and_every_fire() -> None:
    calls: Counter[str] = Counter()
    h = _run(_operator(calls), EVENTS)
    h.process_watermark(30)
    expected = _run(_operator(), EVENTS)
    expected.process_watermark(30)
    want = [(("a", 4), 9), (("b", 2), 9), (("a", 4), 19), (("b", 5), 19)]
    assert _records(expected) == want
    assert _records(h) == want
    # one add per element, one get per fired window, one clear per expired window
    assert calls == Counter(add=5, get=4, clear=4)


def test_contents_kept_in_the_backend_are_snapshotted_and_restored() -> None:
    calls: Counter[str] = Counter()
    h = _run(_operator(calls), EVENTS[:3])
    snapshot = h.snapshot()
    restored = _run(_operator(Counter()), EVENTS[3:], snapshot)
    restored.process_watermark(30)
    assert _records(restored) == [(("a", 4), 9), (("b", 2), 9), (("a", 4), 19), (("b", 5), 19)]


def test_an_operator_needs_a_descriptor_or_a_factory() -> None:
    with pytest.raises(TypeError, match="contents_descriptor or contents_factory"):
        WindowOperator(
            TumblingEventTimeWindows.of(10), None, PassThroughFunction(), EventTimeTrigger()
        )


def test_merging_windows_need_mergeable_contents() -> None:
    def factory(backend: HeapKeyedStateBackend) -> WindowContents[object]:
        return CountingContents(StateContents(DESCRIPTOR)(backend), Counter())

    op = WindowOperator(
        EventTimeSessionWindows.with_gap(5),
        None,
        PassThroughFunction(),
        EventTimeTrigger.create(),
        contents_factory=factory,
    )
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0])
    with pytest.raises(TypeError, match="cannot be merged"):
        h.open()
