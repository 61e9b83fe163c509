"""The fault suite as a script: every scenario (or those named) on each backend, then the
table scenarios x backends with the rows lost, duplicated or wrong, or the refusal.

    python -m tests.faults [--backends hashmap,rocksdb] [--scenarios all|ci|NAME,...] [--keep]

Exits 0 when every cell is correct, 1 otherwise. Each scenario runs in a temporary folder of
its own (in ``/dev/shm`` where there is one), deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from faults.kill import CONTROL_VAR
from faults.outcome import Outcome, table
from faults.scenarios import BACKENDS, SCENARIOS, Scenario
from faults.trial import Trial

WORKERS = Path(__file__).with_name("workers")
SCRATCH = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None


@contextmanager
def trial_of(scenario: Scenario, backend: str, spark: Any, keep: bool = False) -> Iterator[Trial]:
    """A :class:`Trial` of ``scenario`` on ``backend`` in a fresh folder."""
    root = Path(tempfile.mkdtemp(prefix="sparktide-faults-", dir=SCRATCH))
    trial = Trial(root, scenario.job, backend, spark)
    try:
        yield trial
    finally:
        trial.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def play(scenario: Scenario, backend: str, spark: Any, keep: bool = False) -> Outcome:
    """Run ``scenario`` on ``backend``."""
    with trial_of(scenario, backend, spark, keep) as trial:
        return scenario.play(trial)


def cell_of(scenario: Scenario, backend: str, spark: Any, keep: bool = False) -> Outcome | str:
    """The table's cell of ``scenario`` on ``backend``: its outcome, or the error of the
    suite itself that stopped it (the other scenarios still run)."""
    try:
        return play(scenario, backend, spark, keep)
    except Exception as exc:
        return f"FAIL | suite error: {type(exc).__name__}: {exc}"


def selected(names: str) -> list[Scenario]:
    if names == "all":
        return list(SCENARIOS.values())
    if names == "ci":
        return [s for s in SCENARIOS.values() if s.ci]
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    return [SCENARIOS[n] for n in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--scenarios", default="all")
    parser.add_argument("--keep", action="store_true", help="keep the scenarios' folders")
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            raise SystemExit(f"unknown backend {b!r}; known: {', '.join(BACKENDS)}")
    scenarios = selected(args.scenarios)
    workers_tmp = tempfile.mkdtemp(prefix="sparktide-faults-workers-", dir=SCRATCH)
    os.environ["TMPDIR"] = workers_tmp  # the session's workers keep their RocksDB copies here
    tempfile.tempdir = None
    # the session's Python workers start with their kill points wrapped (see kill.py)
    control = Path(workers_tmp) / "control"
    control.mkdir()
    os.environ[CONTROL_VAR] = str(control)
    sys.path.insert(0, str(WORKERS))
    from sparktide.spark.session import get_spark

    started = time.monotonic()
    spark = get_spark("local[2]")
    rows: list[tuple[str, str, Outcome | str]] = []
    try:
        for scenario in scenarios:
            for backend in backends:
                if backend not in scenario.backends:
                    rows.append((scenario.name, backend, "n/a"))
                    continue
                t = time.monotonic()
                outcome = play(scenario, backend, spark, args.keep)
                rows.append((scenario.name, backend, outcome))
                print(
                    f"{scenario.name} [{backend}] {time.monotonic() - t:.0f}s: {outcome.cell()}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        spark.stop()
        shutil.rmtree(workers_tmp, ignore_errors=True)
    print(table(rows, backends))
    print(f"\n{len(rows)} cells in {time.monotonic() - started:.0f} s")
    correct = [o == "n/a" or (isinstance(o, Outcome) and o.correct) for _, _, o in rows]
    return 0 if all(correct) else 1
