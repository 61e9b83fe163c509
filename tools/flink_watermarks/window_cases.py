"""Window jobs that run identically on PyFlink and on sparktide, with per-record watermarks.

Each case is a keyed event-time window job over a small randomized, out-of-order input (fixed
seed): an assigner (tumbling, sliding, session), a function (reduce, aggregate, process, apply,
reduce/aggregate + process), an allowed lateness and optionally a late side output. The
watermark after every record is ``max_ts - delay - 1``: on PyFlink from
``PerRecordWatermarks.java`` (built by ``build.py`` next to this file and loaded with
``env.add_jars``), on sparktide from an equivalent punctuated Python generator. With parallelism
1 and ``python.fn-execution.bundle.size`` 1, Flink's output then depends only on the input, so
it is an oracle: every firing (key, window, result, watermark, record timestamp) and every late
record must be the same on sparktide, per key and in order.

PyFlink 2.3 deviates from Flink's Java WindowOperator in three places, which the cases and the
comparison allow for (sparktide follows the Java operator):

- results of a late firing (an element within the allowed lateness re-fires its window from
  ``process_element``) carry that element's timestamp instead of ``window.max_timestamp``;
- late side-output records carry no timestamp (see :func:`group`);
- in thread mode, merging session windows' ReducingState/AggregatingState overwrites the merge
  target with the merged sources (losing the target's elements when a record bridges two
  sessions) and merges ``get_result()`` values instead of accumulators; session cases with
  reduce/aggregate therefore get input where no record can bridge two sessions ("bursts").

The job code (:data:`JOB`) is one template, formatted with ``pyflink`` or ``sparktide`` as the
package; only the watermark strategy differs. All cases run as independent pipelines of one
PyFlink job (one JVM start); keys are prefixed with the case id, and every output element
becomes a JSON line ``[kind, payload, ts]``.

Usage (stdlib only; any Python 3.10+)::

    python tools/flink_watermarks/window_cases.py --runs 2    # run PyFlink twice, compare runs,
                                                              # write tests/data/flink_windows/
    python tools/flink_watermarks/window_cases.py --check     # compare with the recording

``tests/test_window_flink_differential.py`` imports this module.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RECORDING = REPO / "tests" / "data" / "flink_windows" / "window_cases.json"
DEFAULT_PYTHON = REPO / ".venv-flink" / "bin" / "python"
TIMEOUT_S = 900

# ------------------------------------------------------------------------------------------------
# Cases

# name -> configuration. assigner: ["tumbling", size, offset] | ["sliding", size, slide, offset]
# | ["session", gap]; function: reduce | aggregate | process | apply | reduce+process |
# aggregate+process. Input (see generate): n records over KEYS, base time advancing by 0..step
# per record from `start`, each record moved back by 0..disorder ms, and with probability `late`
# by up to another 4 * disorder ms (late records); or, with "bursts", session-shaped input.
CONFIGS: dict[str, dict[str, Any]] = {
    "tumbling_reduce_window_fn": {
        "assigner": ["tumbling", 10, 0], "function": "reduce+process", "lateness": 0,
        "late_tag": True, "delay": 2, "start": 0, "step": 3, "disorder": 6, "late": 0.1,
    },
    "tumbling_offset_reduce": {
        "assigner": ["tumbling", 10, 3], "function": "reduce", "lateness": 0,
        "late_tag": False, "delay": 0, "start": -40, "step": 3, "disorder": 4, "late": 0.05,
    },
    "tumbling_lateness_process": {
        "assigner": ["tumbling", 10, 0], "function": "process", "lateness": 6,
        "late_tag": True, "delay": 1, "start": 5, "step": 3, "disorder": 8, "late": 0.15,
    },
    "tumbling_apply_lateness": {
        "assigner": ["tumbling", 7, 0], "function": "apply", "lateness": 3,
        "late_tag": True, "delay": 0, "start": 0, "step": 2, "disorder": 5, "late": 0.1,
    },
    "sliding_aggregate": {
        "assigner": ["sliding", 15, 5, 0], "function": "aggregate", "lateness": 0,
        "late_tag": True, "delay": 3, "start": 0, "step": 3, "disorder": 6, "late": 0.1,
    },
    "sliding_aggregate_window_fn_lateness": {
        "assigner": ["sliding", 20, 10, -3], "function": "aggregate+process", "lateness": 8,
        "late_tag": True, "delay": 2, "start": -25, "step": 3, "disorder": 10, "late": 0.1,
    },
    "sliding_process": {
        "assigner": ["sliding", 12, 4, 1], "function": "process", "lateness": 0,
        "late_tag": True, "delay": 4, "start": 0, "step": 2, "disorder": 7, "late": 0.1,
    },
    "session_process": {
        "assigner": ["session", 6], "function": "process", "lateness": 0,
        "late_tag": True, "delay": 2, "start": 0, "step": 4, "disorder": 5, "late": 0.1,
    },
    "session_process_lateness": {
        "assigner": ["session", 5], "function": "process", "lateness": 10,
        "late_tag": True, "delay": 1, "start": 0, "step": 4, "disorder": 8, "late": 0.15,
    },
    "session_apply_lateness": {
        "assigner": ["session", 4], "function": "apply", "lateness": 2,
        "late_tag": True, "delay": 0, "start": -30, "step": 3, "disorder": 4, "late": 0.15,
    },
    # Session windows with reduce/aggregate get session-shaped input ("bursts"), where no record
    # can bridge two existing sessions: PyFlink 2.3's Python ReducingState/AggregatingState
    # merge_namespaces (thread mode) overwrites the merge target's state with the merged sources
    # instead of merging it in, so a bridging record makes PyFlink lose the target's elements.
    "session_reduce_window_fn_lateness": {
        "assigner": ["session", 6], "function": "reduce+process", "lateness": 10,
        "late_tag": True, "delay": 2, "start": 0, "bursts": [5, 3, 8], "late": 0.15,
    },
    "session_aggregate_lateness_dropped": {
        "assigner": ["session", 8], "function": "aggregate", "lateness": 4,
        "late_tag": False, "delay": 3, "start": -20, "bursts": [7, 3, 8], "late": 0.15,
    },
}  # fmt: skip
SEEDS = (1, 2, 3)
RECORDS = 70
KEYS = "abc"


def generate(config: dict[str, Any], seed: int, n: int = RECORDS) -> list[list[Any]]:
    """``n`` records ``[key, ts, value]`` for ``config``, from ``random.Random(seed)``.

    With ``"bursts": [span, min, max]`` (session windows, span < gap): bursts of min..max records
    with timestamps anywhere in ``[B, B + span)``, burst starts 3..4 gaps apart, and with
    probability ``late`` a record inside one of the two previous bursts instead. Every record's
    session window then overlaps at most one existing session of its key.
    """
    rnd = random.Random(seed)
    if "bursts" in config:
        return _bursts(config, rnd, n)
    base = config["start"]
    disorder = config["disorder"]
    data = []
    for _ in range(n):
        base += rnd.randint(0, config["step"])
        back = rnd.randint(0, disorder)
        if rnd.random() < config["late"]:
            back += rnd.randint(disorder, 4 * disorder)
        data.append([rnd.choice(KEYS), base - back, rnd.randint(1, 9)])
    return data


def _bursts(config: dict[str, Any], rnd: random.Random, n: int) -> list[list[Any]]:
    gap = config["assigner"][1]
    span, low, high = config["bursts"]
    if not 0 < span < gap:
        raise ValueError(f"bursts: span must be in (0, gap={gap}), got {span}")
    starts = [config["start"]]
    left = rnd.randint(low, high)
    data = []
    for _ in range(n):
        if left == 0:
            starts.append(starts[-1] + rnd.randint(3 * gap, 4 * gap))
            left = rnd.randint(low, high)
        left -= 1
        start = starts[-1]
        if len(starts) > 1 and rnd.random() < config["late"]:
            start = rnd.choice(starts[-3:-1])
        data.append([rnd.choice(KEYS), start + rnd.randint(0, span - 1), rnd.randint(1, 9)])
    return data


def make_cases() -> list[dict[str, Any]]:
    """Every configuration with every seed: ``{"id", "seed", "data", **config}``."""
    cases = []
    for name, config in CONFIGS.items():
        for seed in SEEDS:
            case = {"id": f"{name}-{seed}", "seed": seed, **config}
            case["data"] = generate(config, seed)
            cases.append(case)
    return cases


# ------------------------------------------------------------------------------------------------
# The job (formatted with pkg = pyflink or sparktide)

JOB = textwrap.dedent(
    """
    import json
    from {pkg}.common import Time, Types, WatermarkStrategy
    from {pkg}.datastream import (
        AggregateFunction, OutputTag, ProcessFunction, ProcessWindowFunction, ReduceFunction,
        WindowFunction)
    from {pkg}.datastream.window import (
        EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows)

    def row_type():
        # a fresh one each time: PyFlink caches the Java type in it, which cannot be pickled
        return Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])

    class SumReduce(ReduceFunction):
        def reduce(self, a, b):
            return (a[0], a[1], a[2] + b[2])

    class Average(AggregateFunction):
        # accumulator (key, sum, count); result (key, sum, count, average). The result is a
        # valid accumulator too: PyFlink 2.3 in thread mode merges session windows' aggregating
        # state by merging get_result() values instead of accumulators.
        def create_accumulator(self):
            return (None, 0, 0)

        def add(self, value, acc):
            return (value[0], acc[1] + value[2], acc[2] + 1)

        def get_result(self, acc):
            return (acc[0], acc[1], acc[2], acc[1] / acc[2])

        def merge(self, a, b):
            return (a[0] if a[0] is not None else b[0], a[1] + b[1], a[2] + b[2])

    class Describe(ProcessWindowFunction):
        # (key, start, end, count, sum, min ts, max ts, watermark) over all elements
        def process(self, key, context, elements):
            w = context.window()
            items = list(elements)
            yield (key, w.start, w.end, len(items), sum(e[2] for e in items),
                   min(e[1] for e in items), max(e[1] for e in items),
                   context.current_watermark())

    class DescribeOne(ProcessWindowFunction):
        # after reduce/aggregate: (key, start, end, [the pre-aggregated value], watermark)
        def process(self, key, context, elements):
            w = context.window()
            yield (key, w.start, w.end, list(elements), context.current_watermark())

    class DescribeApply(WindowFunction):
        def apply(self, key, window, inputs):
            items = list(inputs)
            yield (key, window.start, window.end, len(items), sum(e[2] for e in items))

    class Tag(ProcessFunction):
        # every output element as a JSON line [kind, payload, record timestamp]
        def __init__(self, kind):
            self.kind = kind

        def process_element(self, value, ctx):
            yield json.dumps([self.kind, value, ctx.timestamp()])

    def assigner_of(spec):
        ms = Time.milliseconds
        if spec[0] == "tumbling":
            return TumblingEventTimeWindows.of(ms(spec[1]), ms(spec[2]))
        if spec[0] == "sliding":
            return SlidingEventTimeWindows.of(ms(spec[1]), ms(spec[2]), ms(spec[3]))
        return EventTimeSessionWindows.with_gap(ms(spec[1]))

    def pipeline(env, case, strategy_of):
        # (results, late records or None) of one case; keys are "<case id>:<key>", so every
        # output names its case
        data = [(case["id"] + ":" + r[0], r[1], r[2]) for r in case["data"]]
        windowed = (env.from_collection(data, type_info=row_type())
                    .assign_timestamps_and_watermarks(strategy_of(case["delay"]))
                    .key_by(lambda v: v[0], key_type=Types.STRING())
                    .window(assigner_of(case["assigner"])))
        if case["lateness"]:
            windowed = windowed.allowed_lateness(case["lateness"])
        tag = OutputTag("late-" + case["id"], row_type()) if case["late_tag"] else None
        if tag is not None:
            windowed = windowed.side_output_late_data(tag)
        fn = case["function"]
        out = Types.PICKLED_BYTE_ARRAY()  # one type for all results, so they can be united
        if fn == "reduce":
            result = windowed.reduce(SumReduce(), output_type=out)
        elif fn == "reduce+process":
            result = windowed.reduce(SumReduce(), DescribeOne(), output_type=out)
        elif fn == "aggregate":
            result = windowed.aggregate(Average(), output_type=out)
        elif fn == "aggregate+process":
            result = windowed.aggregate(Average(), DescribeOne(), output_type=out)
        elif fn == "process":
            result = windowed.process(Describe(), out)
        else:
            result = windowed.apply(DescribeApply(), out)
        return result, None if tag is None else result.get_side_output(tag)

    def collect(env, cases, strategy_of):
        # one job; all results through one Tag operator, all late records through another
        mains, lates = [], []
        for case in cases:
            main, late = pipeline(env, case, strategy_of)
            mains.append(main)
            if late is not None:
                lates.append(late)
        outs = [s[0].union(*s[1:]).process(Tag(kind), Types.STRING())
                for kind, s in (("main", mains), ("late", lates)) if s]
        both = outs[0].union(*outs[1:]) if len(outs) > 1 else outs[0]
        return list(both.execute_and_collect())
    """
)

SPARKTIDE_STRATEGY = textwrap.dedent(
    """
    from sparktide.common.watermark_strategy import TimestampAssigner, WatermarkGenerator

    class PerRecordWatermarks(WatermarkGenerator):
        # PerRecordWatermarks.java: max_ts - delay - 1 after every record
        def __init__(self, delay):
            self.delay = delay
            self.max_ts = -2**63 + delay + 1

        def on_event(self, event, event_timestamp, output):
            self.max_ts = max(self.max_ts, event_timestamp)
            output.emit_watermark(self.max_ts - self.delay - 1)

        def on_periodic_emit(self, output):
            pass

    class FieldTimestamp(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    def strategy_of(delay):
        return (WatermarkStrategy.for_generator(lambda: PerRecordWatermarks(delay))
                .with_timestamp_assigner(FieldTimestamp()))
    """
)

PYFLINK_MAIN = textwrap.dedent(
    """
    import sys
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.java_gateway import get_gateway

    def strategy_of(delay):
        # watermarks and timestamps (field 1) in Java: PerRecordWatermarks.java
        jvm = get_gateway().jvm
        return WatermarkStrategy(jvm.sparktide.flink.PerRecordWatermarks.withTimestampField(
            delay, 1))

    jar, cases_file = sys.argv[1], sys.argv[2]
    with open(cases_file, encoding="utf-8") as f:
        cases = json.load(f)
    cfg = Configuration()
    cfg.set_string("python.execution-mode", "thread")
    cfg.set_string("python.executable", sys.executable)
    cfg.set_string("python.fn-execution.bundle.size", "1")
    cfg.set_string("python.fn-execution.bundle.time", "1")
    env = StreamExecutionEnvironment.get_execution_environment(cfg)
    env.set_parallelism(1)
    env.add_jars(jar)
    lines = collect(env, cases, strategy_of)
    print("BEGIN-OUTPUT")
    for line in lines:
        print(line)
    print("END-OUTPUT")
    """
)


def group(lines: Iterable[str]) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """JSON output lines -> ``{case: {"main": {key: [[payload, ts], ...]}, "late": {key:
    [record, ...]}}}``, each key's list in output order (the order of firings per key is
    deterministic in Flink; the interleaving of keys is not specified).

    Late records are compared without their timestamp: Flink's WindowOperator keeps the
    record's timestamp on the late side output (and so does sparktide), but PyFlink 2.3's Python
    window operator emits late records without one (``ctx.timestamp()`` reads ``Long.MIN_VALUE``
    downstream)."""
    out: dict[str, dict[str, dict[str, list[Any]]]] = {}
    for line in lines:
        kind, payload, ts = json.loads(line)
        case, key = payload[0].split(":", 1)
        payload = _unprefix(payload, case + ":")
        per_kind = out.setdefault(case, {"main": {}, "late": {}})[kind]
        per_kind.setdefault(key, []).append(payload if kind == "late" else [payload, ts])
    return out


def _unprefix(value: Any, prefix: str) -> Any:
    """``value`` with ``prefix`` removed from every string in it (the case id of the keys)."""
    if isinstance(value, str):
        return value[len(prefix) :] if value.startswith(prefix) else value
    if isinstance(value, list):
        return [_unprefix(v, prefix) for v in value]
    return value


def run_sparktide(
    cases: list[dict[str, Any]], parallelism: int = 1, watermark_every: int | None = None
) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """Run ``cases`` on sparktide's local runtime (in this process) and group the output."""
    from sparktide.datastream import StreamExecutionEnvironment

    ns: dict[str, Any] = {}
    exec(JOB.format(pkg="sparktide") + SPARKTIDE_STRATEGY, ns)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(watermark_every)
    result = group(ns["collect"](env, cases, ns["strategy_of"]))
    for case in cases:
        result.setdefault(case["id"], {"main": {}, "late": {}})
    return result


def pyflink_python(explicit: str | None = None) -> str | None:
    """A Python that can import pyflink: ``explicit``, ``$SPARKTIDE_PYFLINK_PYTHON`` or
    ``.venv-flink``; None if there is none."""
    candidates = [explicit, os.environ.get("SPARKTIDE_PYFLINK_PYTHON"), str(DEFAULT_PYTHON)]
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        probe = subprocess.run(
            [candidate, "-c", "import pyflink.datastream"], capture_output=True, timeout=120
        )
        if probe.returncode == 0:
            return candidate
    return None


def run_pyflink(
    python: str, jar: Path, cases: list[dict[str, Any]]
) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """Run ``cases`` as one PyFlink job (thread mode, parallelism 1) and group the output."""
    script = JOB.format(pkg="pyflink") + PYFLINK_MAIN
    env = dict(os.environ)
    # thread mode runs the Python functions through the `python` found on PATH
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="flink-windows-") as tmp:
        cases_file = Path(tmp) / "cases.json"
        cases_file.write_text(json.dumps(cases), encoding="utf-8")
        proc = subprocess.run(
            [python, "-c", script, jar.resolve().as_uri(), str(cases_file)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=env,
            cwd=tmp,
        )
    stdout = proc.stdout.splitlines()
    if proc.returncode != 0 or "END-OUTPUT" not in stdout:
        raise RuntimeError(
            f"the PyFlink job exited with {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}"
            f"\n--- stderr\n{proc.stderr[-6000:]}"
        )
    lines = stdout[stdout.index("BEGIN-OUTPUT") + 1 : stdout.index("END-OUTPUT")]
    result = group(lines)
    for case in cases:
        result.setdefault(case["id"], {"main": {}, "late": {}})
    return result


def flink_version(python: str) -> str:
    proc = subprocess.run(
        [python, "-c", "import pyflink.version as v; print(v.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.stdout.strip() or "unknown"


def builder() -> ModuleType:
    """``build.py`` next to this file (compiles and packs ``PerRecordWatermarks.java``)."""
    spec = importlib.util.spec_from_file_location("flink_watermarks_build", HERE / "build.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {HERE / 'build.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(python: str, out_dir: Path) -> Path:
    """The jar of ``PerRecordWatermarks.java`` for ``python``'s apache-flink, in ``out_dir``."""
    tool = builder()
    pyflink = tool.pyflink_dir(python)
    if pyflink is None:
        raise FileNotFoundError(f"{python} cannot import pyflink")
    return tool.build_jar(pyflink, out_dir)  # type: ignore[no-any-return]


def write_recording(version: str, cases: list[dict[str, Any]], outputs: dict[str, Any]) -> None:
    """One case per line: inputs, configuration and Flink's output."""
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"flink_version": version, "records": RECORDS, "seeds": list(SEEDS)})]
    for case in cases:
        lines.append(json.dumps({"case": case, "flink": outputs[case["id"]]}, sort_keys=True))
    RECORDING.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


def read_recording() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """``(header, cases, {case id: Flink's output})`` of the recording."""
    entries = json.loads(RECORDING.read_text(encoding="utf-8"))
    cases = [e["case"] for e in entries[1:]]
    return entries[0], cases, {e["case"]["id"]: e["flink"] for e in entries[1:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--python", help="a Python with apache-flink (default: .venv-flink)")
    ap.add_argument("--runs", type=int, default=1, help="PyFlink runs that must agree")
    ap.add_argument("--check", action="store_true", help="compare with the recording only")
    args = ap.parse_args(argv)
    python = pyflink_python(args.python)
    if python is None:
        ap.error("no Python with apache-flink; pass --python or set SPARKTIDE_PYFLINK_PYTHON")
    cases = make_cases()
    with tempfile.TemporaryDirectory(prefix="flink-watermarks-") as tmp:
        jar = build(python, Path(tmp))
        runs = [run_pyflink(python, jar, cases) for _ in range(max(1, args.runs))]
    for i, other in enumerate(runs[1:], start=2):
        differ = [c["id"] for c in cases if other[c["id"]] != runs[0][c["id"]]]
        print(f"run 1 vs run {i}: " + (f"DIFFER in {differ}" if differ else "identical"))
        if differ:
            return 1
    firings = sum(len(v) for o in runs[0].values() for v in o["main"].values())
    late = sum(len(v) for o in runs[0].values() for v in o["late"].values())
    print(f"{len(cases)} cases, {firings} firings, {late} late records")
    if args.check:
        _, recorded_cases, recorded = read_recording()
        same = recorded_cases == cases and recorded == {c["id"]: runs[0][c["id"]] for c in cases}
        print("matches the recording" if same else "DIFFERS from the recording")
        return 0 if same else 1
    write_recording(flink_version(python), cases, runs[0])
    print(f"wrote {RECORDING.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
