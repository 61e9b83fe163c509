"""The first micro-batch after a restart: every subtask restores its state from the checkpoint.

The keyed-timer job of ``benchmarks/streaming.py`` (``KeyedProcessFunction`` with a count and an
event-time timer per key, parallelism 2, the heap state backend) runs over the warm-up and
settle files of ``--keys`` keys on an embedded local Spark; then a new process (a new Spark, so
new Python workers that keep no state) runs the same job on the same checkpoint over one more
file of ``--batch-records`` records, as after a crash or an upgrade. The table gives, for that
batch: its time, how the subtasks got their state and the seconds of those restores (the batch
metrics' ``state_restores``), and the batch time of a steady batch of the first run for
comparison. Best of ``--repeat`` restarts (each from the same checkpoint, copied).

Usage: ``python benchmarks/restart.py [--keys 1000000] [--batch-records 10000] [--repeat 2]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import load_average
from streaming import Plan, batch_state, write_files

HERE = Path(__file__).resolve().parent


def _run(files: Path, ckpt: Path, report: Path) -> None:
    """Run the job over ``files`` on ``ckpt`` in this process; per batch its figures to
    ``report`` (JSON lines)."""
    from streaming import _files, _sparktide_job

    from sparktide.spark.session import get_spark

    spark = get_spark("local[2]")
    env = _sparktide_job(
        spark,
        _files(spark, files),
        2,
        "hashmap",
        lambda df, _: df.write.format("noop").mode("overwrite").save(),
    )
    client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    lines: list[dict[str, Any]] = []

    def listen(metrics: dict[str, Any]) -> None:
        seconds = {
            outcome: float(v["seconds"])
            for outcome, v in metrics.get("state_restores", {}).items()
            if v.get("count")
        }
        lines.append(
            {
                "batch": metrics["batch_id"],
                "restores": batch_state(metrics, ckpt).restores,
                "restore_s": seconds,
            }
        )

    client.add_listener(listen)
    client.await_termination()
    durations = {p["batch_id"]: float(p["duration_ms"]) for p in client.recent_progress}
    with report.open("w") as out:
        for line in lines:
            out.write(json.dumps({**line, "ms": durations.get(line["batch"])}) + "\n")


def _in_process(files: Path, ckpt: Path, report: Path) -> list[dict[str, Any]]:
    subprocess.run(
        [sys.executable, __file__, "--run", str(files), str(ckpt), str(report)],
        check=True,
        cwd=HERE,
    )
    return [json.loads(line) for line in report.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--batch-records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--run", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        _run(*args.run)
        return
    print(f"load average at start: {load_average()}")
    work = Path(tempfile.mkdtemp(prefix="sparktide-restart-"))
    try:
        plan = Plan(args.keys, args.batch_records, 100_000, 2, 1)
        files, ckpt = work / "in", work / "ckpt"
        write_files(plan, files)
        last = files / sorted(p.name for p in files.iterdir())[-1]
        held = work / last.name
        shutil.move(last, held)  # the batch of the restart
        first = _in_process(files, ckpt, work / "first.json")
        steady = first[-1]["ms"]
        shutil.move(held, last)
        runs = []
        for i in range(args.repeat):
            copy = work / f"ckpt-{i}"
            shutil.copytree(ckpt, copy)
            runs.append(_in_process(files, copy, work / f"restart-{i}.json")[-1])
        best = min(runs, key=lambda r: r["ms"])
        print(f"\n{args.keys:,} keys, restart batch of {args.batch_records:,} records\n")
        print("| batch | ms | state | restores (s) |")
        print("|---|---:|---|---:|")
        print(f"| steady, before the restart | {steady:,.0f} | {_outcomes(first[-1])} | |")
        for run in runs:
            mark = " (best)" if run is best else ""
            print(
                f"| first after the restart{mark} | {run['ms']:,.0f} | {_outcomes(run)} "
                f"| {_seconds(run)} |"
            )
        print(f"load average at end: {load_average()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _outcomes(run: dict[str, Any]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(run["restores"].items()))


def _seconds(run: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in sorted(run["restore_s"].items()))


if __name__ == "__main__":
    main()
