"""One scenario on one backend: its folders, its attempts (in this process's Spark session,
or killed in a driver process of their own) and the comparison with the reference."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faults import kill
from faults.jobs import (
    Job,
    Record,
    file_name,
    read_output,
    records,
    reference,
    run_stream,
    write_file,
)
from faults.outcome import Outcome, compare, error_line

DRIVER = Path(__file__).with_name("driver.py")
ATTEMPT_TIMEOUT = 300.0
"""Seconds a driver process may take before it counts as hung (and is killed)."""


@dataclass(frozen=True)
class Attempt:
    """How an attempt ended: killed at its kill point, stopped by an error (its first line),
    or run to the end."""

    killed: bool = False
    error: str | None = None


class Trial:
    """The folders of a scenario on ``backend`` under ``root``: ``in`` (the input files),
    ``ckpt``, ``out`` (the Parquet sink), ``tmp`` (the driver processes' temporary
    directory, where RocksDB keeps their local copies)."""

    def __init__(self, root: Path, job: Job, backend: str, spark: Any) -> None:
        self.root, self.job, self.backend, self.spark = root, job, backend, spark
        self.files: list[list[Record]] = records()
        self.inp, self.ckpt, self.out = root / "in", root / "ckpt", root / "out"
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.attempts = 0

    # ------------------------------------------------------------------ input

    def add_files(self, indexes: Sequence[int] | None = None) -> None:
        """Write input files ``indexes`` (default: every one not written yet)."""
        for i in range(len(self.files)) if indexes is None else indexes:
            path = self.inp / self.file_name(i)
            if indexes is not None or not path.exists():
                write_file(self.inp, i, self.files[i], self.job.fmt)

    def file_name(self, index: int) -> str:
        return file_name(index, self.job.fmt)

    # ------------------------------------------------------------------ workers

    def worker_tempdir(self) -> Path:
        """The temporary directory of the session's Python workers."""

        def where(batches: Iterator[object]) -> Iterator[object]:
            import pyarrow as pa

            for _ in batches:
                pass
            yield pa.RecordBatch.from_pydict({"tmp": [tempfile.gettempdir()]})

        return Path(self.spark.range(1).mapInArrow(where, "tmp string").collect()[0]["tmp"])

    def local_copies(self) -> Path:
        """Where the session's workers keep the local RocksDB copies of this checkpoint."""
        from sparktide.runtime.state.rocksdb_local import SubtaskSlot

        digest = Path(SubtaskSlot(str(self.ckpt), "x", 0).relative_dir()).parts[0]
        return self.worker_tempdir() / "sparktide-rocksdb" / digest

    def close(self) -> None:
        """Make the session's workers close the databases of this trial and delete its
        local copies."""
        from test_stream_rocksdb_native import _forget_local_databases

        if self.attempts:
            _forget_local_databases(self.spark, delete_copies=False)
            shutil.rmtree(self.local_copies(), ignore_errors=True)

    # ------------------------------------------------------------------ attempts

    def run(
        self, parallelism: int = 2, *, ckpt: Path | None = None, out: Path | None = None
    ) -> Attempt:
        """An attempt in this process's Spark session, cold: the Python workers first forget
        the state and databases they hold, as new workers would."""
        from test_stream_rocksdb_native import _forget_local_databases

        if self.attempts:
            _forget_local_databases(self.spark, delete_copies=False)
        self.attempts += 1
        try:
            run_stream(
                self.spark,
                self.job,
                self.backend,
                str(self.inp),
                str(ckpt or self.ckpt),
                str(out or self.out),
                parallelism,
            )
        except Exception as exc:
            return Attempt(error=error_line(f"{type(exc).__name__}: {exc}"))
        return Attempt()

    def run_faulty(self, point: str, call: int, parallelism: int = 2) -> Attempt:
        """An attempt in this process's session whose ``call``-th call of ``point`` fails:
        a driver point raises (the batch stops there, as a crash would leave it), a worker
        point ``SIGKILL``s the Python worker that runs it (Spark loses the task). Worker
        points need workers started with the suite's control directory (see ``run.py``)."""
        kill_point = kill.POINTS[point]
        control = os.environ.get(kill.CONTROL_VAR)
        if kill_point.where == "worker" and not control:
            return Attempt(
                error=f"cannot arm worker point {point}: the session's workers "
                f"were started without {kill.CONTROL_VAR}"
            )
        folder = Path(control) if control else self.root / "control"
        folder.mkdir(exist_ok=True)
        action = "raise" if kill_point.where == "driver" else "kill-worker"
        with kill.installed(folder), kill.arm(folder, point, call, action):
            attempt = self.run(parallelism)
        happened = kill.calls(folder, point) >= call and attempt.error is not None
        return Attempt(killed=happened, error=attempt.error)

    def run_killed(self, point: str, call: int, parallelism: int = 2) -> Attempt:
        """An attempt in a driver process of its own that ``SIGKILL`` ends (the driver and
        its JVM) at the ``call``-th call of kill point ``point`` (see ``kill.py``)."""
        self.attempts += 1
        control = self.root / f"control-{self.attempts}"
        control.mkdir()
        result = self.root / f"result-{self.attempts}.json"
        env = {**os.environ, kill.CONTROL_VAR: str(control), "TMPDIR": str(self.tmp)}
        args = [
            self.job.name,
            self.backend,
            str(self.inp),
            str(self.ckpt),
            str(self.out),
            str(parallelism),
            str(result),
        ]
        with (
            kill.arm(control, point, call, "kill-job"),
            open(self.root / f"driver-{self.attempts}.log", "w") as log,
        ):
            proc = subprocess.Popen(
                [sys.executable, str(DRIVER), *args],
                start_new_session=True,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            hung = False
            try:
                proc.wait(ATTEMPT_TIMEOUT)
            except subprocess.TimeoutExpired:
                hung = True
            finally:
                _end_session(proc.pid)
                proc.wait()
        if hung:
            return Attempt(error=f"the driver did not finish in {ATTEMPT_TIMEOUT:.0f} s")
        if proc.returncode == -signal.SIGKILL:
            return Attempt(killed=True)
        if result.exists():
            error = json.loads(result.read_text())["error"]
            if error is not None:
                return Attempt(error=error_line(f"{error['type']}: {error['message']}"))
            return Attempt()
        return Attempt(error=f"driver exited with {proc.returncode} (see its log)")

    # ------------------------------------------------------------------ verdict

    def expected(self, files: Sequence[Sequence[Record]] | None = None) -> list[Record]:
        return reference(self.job, self.files if files is None else files)

    def outcome(
        self,
        attempt: Attempt,
        culprit: str | None = None,
        note: str = "",
        failed_check: bool = False,
        out: Path | None = None,
    ) -> Outcome:
        """The verdict on the last ``attempt``: its refusal (correct when it names
        ``culprit``), else the sink's rows against the reference."""
        return compare(
            read_output(out or self.out),
            self.expected(),
            attempt.error,
            culprit,
            note,
            failed_check,
        )


def _end_session(session: int) -> None:
    """Kill what is left of a driver's session (its JVM, Spark's Python daemon and workers,
    which run in a process group of their own): every process whose session id is
    ``session``, by pid."""
    for _ in range(3):
        left = [pid for pid in _pids() if _session_of(pid) == session]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _pids() -> Iterator[int]:
    return (int(name) for name in os.listdir("/proc") if name.isdigit())


def _session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # fields after the command (in parentheses): state ppid pgrp session ...
    return int(stat.rsplit(")", 1)[1].split()[3])
