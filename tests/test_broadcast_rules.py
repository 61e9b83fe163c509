"""A broadcast-rules job against PyFlink: the same program, only its imports changed.

Rules (added and removed over time) are broadcast to a keyed stream of events. The keyed side
keeps each event in keyed state and registers an event-time timer at its timestamp; the timer
checks the event against the rules valid at that time (read-only broadcast state) and emits an
alert per rule it breaks, or sends the event to a side output when it breaks none. The broadcast
side writes the rules, marks removed ones, and drops rules whose removal the watermark has
passed; it also emits a line per rule change, which every parallel instance emits, so those lines
appear once per subtask, as in Flink.

Flink interleaves the two inputs of the operator as they arrive, so the job reads the rules only
where the result does not depend on that interleaving: a timer at ``t`` fires once both inputs'
watermarks passed ``t``, when every rule up to ``t`` is in the broadcast state, and it only uses
the rules valid at ``t`` (added at or before ``t``, not removed before). Above parallelism 1,
PyFlink runs the timestamp assigners at the job's parallelism behind a round-robin exchange, so
a rule's removal may reach the operator before its addition; the job keeps both times whatever
comes first. The output is then the same multiset on PyFlink in every run, and sparktide gives
it on the local runtime and on Spark at parallelism 1, 2 and 4.

PyFlink's lines are recorded in ``tests/data/broadcast/rules_p<N>.txt`` (normalized as
``tools/pyflink_oracle/record.py`` does: ``"N> "`` prefixes removed, sorted); when a Python with
apache-flink is at hand (``$SPARKTIDE_PYFLINK_PYTHON``), the job also runs live on PyFlink.
"""

from __future__ import annotations

import functools
import os
import random
import runpy
import sys
import tempfile
from pathlib import Path

import pytest

from tool_modules import load_tool

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "broadcast"
PARALLELISMS = (1, 2, 4)


oracle = load_tool("pyflink_oracle/record.py")


def _inputs() -> tuple[list[tuple[str, int, int]], list[tuple[int, str, str, int]]]:
    """Events ``(key, ts, amount)`` and rules ``(ts, rule id, "add" | "remove", threshold)``,
    each in timestamp order, with a fixed seed."""
    rng = random.Random(17)
    events = [(f"k{rng.randrange(5)}", 1000 + 7 * i, rng.randrange(100)) for i in range(60)]
    rules: list[tuple[int, str, str, int]] = []
    live: dict[str, int] = {}
    ts = 990
    for n in range(14):
        ts += rng.randrange(5, 40)
        if live and rng.random() < 0.4:
            rid = sorted(live)[rng.randrange(len(live))]
            rules.append((ts, rid, "remove", live.pop(rid)))
        else:
            rid = f"r{n}"
            live[rid] = rng.randrange(30, 95)
            rules.append((ts, rid, "add", live[rid]))
    return events, rules


JOB = """
import sys

from {api}.common import Types, WatermarkStrategy
from {api}.common.watermark_strategy import TimestampAssigner
from {api}.datastream import OutputTag, StreamExecutionEnvironment
from {api}.datastream.functions import KeyedBroadcastProcessFunction
from {api}.datastream.state import ListStateDescriptor, MapStateDescriptor

EVENTS = {events!r}
RULES_IN = {rules!r}
RULES = MapStateDescriptor("rules", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
UNMATCHED = OutputTag("unmatched", Types.STRING())


class EventTime(TimestampAssigner):
    def __init__(self, field):
        self.field = field

    def extract_timestamp(self, value, record_timestamp):
        return value[self.field]


class ApplyRules(KeyedBroadcastProcessFunction):
    def open(self, runtime_context):
        self.pending = runtime_context.get_list_state(
            ListStateDescriptor("pending", Types.PICKLED_BYTE_ARRAY())
        )

    def process_element(self, value, ctx):
        self.pending.add(value)
        ctx.timer_service().register_event_time_timer(value[1])

    def on_timer(self, timestamp, ctx):
        rules = ctx.get_broadcast_state(RULES)
        valid = sorted(
            (rid, r[0])
            for rid, r in rules.items()
            if r[0] is not None and r[1] <= timestamp and (r[2] is None or timestamp < r[2])
        )
        keep = []
        for event in self.pending.get():
            if event[1] != timestamp:
                keep.append(event)
                continue
            broken = [rid for rid, limit in valid if event[2] > limit]
            what = "%s t=%d" % (ctx.get_current_key(), timestamp)
            for rid in broken:
                yield "alert %s %s amount=%d" % (what, rid, event[2])
            if not broken:
                yield UNMATCHED, "%s amount=%d" % (what, event[2])
        self.pending.update(keep)

    def process_broadcast_element(self, value, ctx):
        ts, rid, op, limit = value
        rules = ctx.get_broadcast_state(RULES)
        old = rules.get(rid) or (None, None, None)  # a removal may come first (see below)
        if op == "add":
            rules.put(rid, (limit, ts, old[2]))
        else:
            rules.put(rid, (old[0], old[1], ts))
        watermark = ctx.current_watermark()
        for gone in [k for k, r in rules.items() if r[2] is not None and r[2] <= watermark]:
            rules.remove(gone)
        yield "rule %s %s %d" % (op, rid, limit)


def main(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    rules = env.from_collection(RULES_IN).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime(0))
    )
    events = env.from_collection(EVENTS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime(1))
    )
    alerts = (
        events.key_by(lambda e: e[0])
        .connect(rules.broadcast(RULES))
        .process(ApplyRules(), Types.STRING())
    )
    alerts.print()
    alerts.get_side_output(UNMATCHED).map(lambda s: "unmatched " + s, Types.STRING()).print()
    env.execute("broadcast rules")


if __name__ == "__main__":
    main(int(sys.argv[1]))
"""


def job_source(api: str) -> str:
    events, rules = _inputs()
    return JOB.format(api=api, events=events, rules=rules)


def _sparktide_lines(
    tmp_path: Path, runtime: str, parallelism: int, monkeypatch: pytest.MonkeyPatch, capsys
) -> list[str]:
    script = tmp_path / f"rules_{runtime}_{parallelism}.py"
    script.write_text(job_source("sparktide"), encoding="utf-8")
    monkeypatch.setenv("SPARKTIDE_RUNTIME", runtime)
    monkeypatch.setattr(sys, "argv", [str(script), str(parallelism)])
    capsys.readouterr()
    runpy.run_path(str(script), run_name="__main__")
    return oracle.normalize(capsys.readouterr().out)  # type: ignore[no-any-return]


def _recorded(parallelism: int) -> list[str]:
    return (DATA / f"rules_p{parallelism}.txt").read_text(encoding="utf-8").splitlines()


def _live_pyflink(parallelism: int) -> list[str] | None:
    """The job's lines on PyFlink (None: no Python with apache-flink here)."""
    runs = _live_pyflink_runs()
    return None if runs is None else runs[parallelism]


@functools.cache
def _live_pyflink_runs() -> dict[int, list[str]] | None:
    """The job at each parallelism, run in one PyFlink process (one gateway JVM)."""
    python = oracle.pyflink_python()
    if python is None:
        return None
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="broadcast-rules-") as folder:
        scripts = {p: Path(folder) / f"rules_job_p{p}.py" for p in PARALLELISMS}
        for p, script in scripts.items():  # the job reads its parallelism from sys.argv[1]
            script.write_text(f"import sys\nsys.argv[1:] = ['{p}']\n" + job_source("pyflink"))
        runs = oracle.run_in_one_process(python, list(scripts.values()), env)
    lines = {}
    for p, script in scripts.items():
        run = runs[str(script)]
        if run["error"] is not None:
            raise RuntimeError(f"the job at parallelism {p} failed on PyFlink:\n{run['error']}")
        lines[p] = oracle.normalize(run["stdout"] or "")
    return lines


def test_the_inputs_exercise_the_rules() -> None:
    events, rules = _inputs()
    ops = [r[2] for r in rules]
    assert "add" in ops and "remove" in ops
    assert [e[1] for e in events] == sorted(e[1] for e in events)
    assert [r[0] for r in rules] == sorted(r[0] for r in rules)
    recorded = _recorded(1)
    assert any(line.startswith("alert ") for line in recorded)
    assert any(line.startswith("unmatched ") for line in recorded)
    assert any(line.startswith("rule remove ") for line in recorded)


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_local_runtime_prints_what_pyflink_printed(
    parallelism: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    lines = _sparktide_lines(tmp_path, "local", parallelism, monkeypatch, capsys)
    assert lines == _recorded(parallelism)


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_live_pyflink_prints_the_recording(parallelism: int) -> None:
    live = _live_pyflink(parallelism)
    if live is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    assert live == _recorded(parallelism)


def test_spark_prints_what_pyflink_printed_at_parallelism_1_2_4(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for parallelism in PARALLELISMS:
        lines = _sparktide_lines(tmp_path, "spark", parallelism, monkeypatch, capsys)
        assert lines == _recorded(parallelism), f"parallelism {parallelism}"


if __name__ == "__main__":  # record PyFlink's output: python tests/test_broadcast_rules.py
    DATA.mkdir(parents=True, exist_ok=True)
    for p in PARALLELISMS:
        lines = _live_pyflink(p)
        if lines is None:
            raise SystemExit("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
        (DATA / f"rules_p{p}.txt").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        print(f"parallelism {p}: {len(lines)} lines")
