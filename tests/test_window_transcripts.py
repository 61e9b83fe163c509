"""Window transcripts (``tests/data/windows/*.txt``) run through the operator harness, once
plainly and once with a snapshot and restore into a fresh operator after every step.

A transcript configures a window operator, feeds it elements, watermarks and processing time
through ``KeyedOneInputStreamOperatorTestHarness``, and lists after each step what that step
must emit. Format (one item per line, ``#`` starts a comment)::

    assigner: TumblingEventTimeWindows.of(10)      # Python expressions over the window API
    trigger: CountTrigger.of(2)                    # optional; also evictor:, lateness:
    late-tag: yes                                  # optional: side-output late data
    all: yes                                       # optional: window_all (no key)
    function: reduce(SUM, Describe())              # a builder call; several lines = several
    function: process(Describe())                  # runs that must all give the same output

    element ('a', 1) @ 3                           # a literal value @ int ms (or none)
    watermark 9
    processing-time 100
    > ('a', 0, 10, 1) @ 9                          # main output of the step before
    late> ('a', 1) @ 3                             # late side output of the step before
    dropped 1                                      # late records dropped so far
    entries 0                                      # keyed state entries now
    timers 0                                       # pending timers now

``Describe`` emits ``(key, *window_fields, total)`` with the window's ``(start, end)`` (or
``('global', None)``, ``('count', id)``) and the sum of the elements' field 1.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sparktide.common import Duration, Time
from sparktide.datastream import AggregateFunction, OutputTag
from sparktide.datastream import window as W
from sparktide.datastream.window import (
    AllWindowFunction,
    CountWindow,
    GlobalWindow,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    TimeWindow,
    WindowFunction,
)
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

DATA = Path(__file__).resolve().parent / "data" / "windows"
LATE = OutputTag("late")


def fields(window: Any) -> tuple[Any, Any]:
    if isinstance(window, TimeWindow):
        return window.start, window.end
    if isinstance(window, CountWindow):
        return "count", window.id
    if isinstance(window, GlobalWindow):
        return "global", None
    return "window", repr(window)


def total(elements: Iterable[Any]) -> Any:
    return sum(v[1] if isinstance(v, tuple) else v for v in elements)


def SUM(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1])


class SumAgg(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + value[1]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        yield (key, *fields(context.window()), total(elements))


class DescribeApply(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        return [(key, *fields(window), total(inputs))]


class ListProcess(ProcessWindowFunction):
    """Emits the elements' field 1 in window order."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        yield (key, *fields(context.window()), [v[1] for v in elements])


class AllDescribe(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[Any]) -> Any:
        yield ("*", *fields(context.window()), total(elements))


class AllDescribeApply(AllWindowFunction):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Any:
        yield ("*", *fields(window), total(inputs))


NAMESPACE: dict[str, Any] = {name: getattr(W, name) for name in W.__all__}
NAMESPACE.update(
    Time=Time,
    Duration=Duration,
    SUM=SUM,
    SumAgg=SumAgg,
    Describe=Describe,
    DescribeApply=DescribeApply,
    ListProcess=ListProcess,
    AllDescribe=AllDescribe,
    AllDescribeApply=AllDescribeApply,
    delta=lambda old, new: abs(new[1] - old[1]),
    gap_of=lambda v: v[2],
)


@dataclass
class Step:
    kind: str  # element | watermark | processing-time
    arg: Any
    ts: int | None = None
    line: int = 0
    main: list[tuple[Any, Any]] = field(default_factory=list)
    late: list[tuple[Any, Any]] = field(default_factory=list)
    checks: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Transcript:
    name: str
    config: dict[str, str]
    functions: list[str]
    steps: list[Step]


def _ts(text: str) -> int | None:
    text = text.strip()
    return None if text == "none" else int(text)


def _value_at(text: str) -> tuple[Any, int | None]:
    value, _, ts = text.rpartition("@")
    return ast.literal_eval(value.strip()), _ts(ts)


_COMMENT = re.compile(r"\s+#[^'\"]*$")


def parse(path: Path) -> Transcript:
    config: dict[str, str] = {}
    functions: list[str] = []
    steps: list[Step] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = _COMMENT.sub("", raw).strip()
        if not line or line.startswith("#"):
            continue
        try:
            if m := re.fullmatch(r"([a-z-]+):\s*(.+)", line):
                key, value = m.groups()
                if key == "function":
                    functions.append(value)
                else:
                    config[key] = value
            elif line.startswith("element "):
                value, ts = _value_at(line[len("element ") :])
                steps.append(Step("element", value, ts, n))
            elif line.startswith("watermark "):
                steps.append(Step("watermark", int(line.split()[1]), line=n))
            elif line.startswith("processing-time "):
                steps.append(Step("processing-time", int(line.split()[1]), line=n))
            elif line.startswith("late>"):
                steps[-1].late.append(_value_at(line[len("late>") :]))
            elif line.startswith(">"):
                steps[-1].main.append(_value_at(line[1:]))
            elif m := re.fullmatch(r"(dropped|entries|timers)\s+(\d+)", line):
                steps[-1].checks.append((m.group(1), int(m.group(2))))
            else:
                raise ValueError("unknown line")
        except Exception as exc:
            raise ValueError(f"{path.name}:{n}: cannot parse {raw!r}: {exc}") from exc
    if "assigner" not in config or not functions:
        raise ValueError(f"{path.name}: needs an assigner: and at least one function: line")
    return Transcript(path.stem, config, functions, steps)


def build_operator(t: Transcript, function: str) -> Any:
    ns = dict(NAMESPACE)
    keyed = t.config.get("all") != "yes"
    builder = WindowOperatorBuilder(eval(t.config["assigner"], ns), keyed=keyed)
    if "trigger" in t.config:
        builder.set_trigger(eval(t.config["trigger"], ns))
    if "evictor" in t.config:
        builder.set_evictor(eval(t.config["evictor"], ns))
    if "lateness" in t.config:
        builder.set_allowed_lateness(int(t.config["lateness"]))
    if t.config.get("late-tag") == "yes":
        builder.set_late_data_output_tag(LATE)
    ns["b"] = builder
    return eval("b." + function, ns)


def _key_selector(t: Transcript) -> Any:
    if t.config.get("all") == "yes":
        return lambda v: 0
    return lambda v: v[0]


def new_harness(
    t: Transcript, function: str, processing_time: int = 0
) -> KeyedOneInputStreamOperatorTestHarness:
    harness = KeyedOneInputStreamOperatorTestHarness(
        build_operator(t, function), _key_selector(t), processing_time=processing_time
    )
    return harness


def run(t: Transcript, function: str, *, restore_after_each_step: bool = False) -> list[str]:
    """Run the transcript; return the mismatches (empty when it passes)."""
    harness = new_harness(t, function)
    harness.open()
    dropped_before = 0
    watermark: int | None = None
    errors: list[str] = []
    for step in t.steps:
        harness.clear_output()
        if step.kind == "element":
            harness.process_element(step.arg, step.ts)
        elif step.kind == "watermark":
            harness.process_watermark(step.arg)
            watermark = step.arg
        else:
            harness.set_processing_time(step.arg)
        main = [(r.value, r.timestamp) for r in harness.get_output() if isinstance(r, StreamRecord)]
        late = [(r.value, r.timestamp) for r in harness.get_side_output(LATE)]
        where = f"{t.name}:{step.line} [{function}]"
        if main != step.main:
            errors.append(f"{where}: main output {main} != expected {step.main}")
        if late != step.late:
            errors.append(f"{where}: late output {late} != expected {step.late}")
        for what, expected in step.checks:
            if what == "dropped":
                actual = dropped_before + harness.operator.num_late_records_dropped
            elif what == "entries":
                actual = harness.num_keyed_state_entries()
            else:
                actual = harness.num_event_time_timers() + harness.num_processing_time_timers()
            if actual != expected:
                errors.append(f"{where}: {what} is {actual}, expected {expected}")
        if restore_after_each_step:
            snapshot = harness.snapshot()
            dropped_before += harness.operator.num_late_records_dropped
            now = harness.get_processing_time()
            harness.close()
            harness = new_harness(t, function, processing_time=now)
            harness.initialize_state(snapshot)
            harness.open()
            if watermark is not None:  # the watermark is not operator state: upstream resends it
                harness.process_watermark(watermark)
                if [r for r in harness.get_output() if isinstance(r, StreamRecord)]:
                    errors.append(f"{t.name}:{step.line}: resending the watermark emitted records")
    return errors


def transcripts() -> list[Transcript]:
    return [parse(p) for p in sorted(DATA.glob("*.txt"))]


CASES = [(t, f) for t in transcripts() for f in t.functions]


def _id(case: tuple) -> str:
    t, f = case
    return f"{t.name}[{f}]"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
@pytest.mark.usefixtures("state_backend")
def test_transcript(case: tuple) -> None:
    t, function = case
    errors = run(t, function)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
@pytest.mark.usefixtures("state_backend")
def test_transcript_with_restore_after_every_step(case: tuple) -> None:
    t, function = case
    errors = run(t, function, restore_after_each_step=True)
    assert not errors, "\n".join(errors)


def test_transcripts_cover_every_assigner_and_trigger() -> None:
    text = " ".join(" ".join([*t.config.values(), *t.functions]) for t in transcripts())
    for name in [
        "TumblingEventTimeWindows",
        "TumblingProcessingTimeWindows",
        "SlidingEventTimeWindows",
        "SlidingProcessingTimeWindows",
        "EventTimeSessionWindows",
        "ProcessingTimeSessionWindows",
        "DynamicEventTimeSessionWindows",
        "DynamicProcessingTimeSessionWindows",
        "GlobalWindows",
        "CountTumblingWindowAssigner",
        "CountSlidingWindowAssigner",
        "ContinuousEventTimeTrigger",
        "ContinuousProcessingTimeTrigger",
        "CountTrigger",
        "PurgingTrigger",
        "CountEvictor",
        "TimeEvictor",
        "DeltaEvictor",
        "reduce(",
        "aggregate(",
        "apply(",
        "process(",
    ]:
        assert name in text, f"no transcript uses {name}"
