"""Kill points: named internal functions of the streaming runner that a fault suite run arms
to act on their ``n``-th call (counted across the driver and its Python workers):

* ``kill-job``: ``SIGKILL`` to the driver's process group (the driver and its JVM), then to
  the calling process: the machine died (a driver process of its own, see ``driver.py``);
* ``kill-worker``: ``SIGKILL`` to the calling Python worker only: Spark loses the task, the
  batch fails, the driver lives on;
* ``raise``: :class:`InjectedFault` in the calling process (the batch fails there).

No production hook: every process whose ``sys.path`` holds ``tests/faults/workers`` at start
(the suite's driver processes put it there, Spark's Python workers inherit it) and has
:data:`CONTROL_VAR` set wraps the functions of :data:`POINTS` when it starts (see
``workers/sitecustomize.py``); :func:`arm` writes what to do into the control directory, and
each call reads it (a fault run only).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTROL_VAR = "SPARKTIDE_FAULTS_CONTROL"
"""The control directory: ``armed.json`` (what to do, when) and a counter per point."""
DRIVER_VAR = "SPARKTIDE_FAULTS_DRIVER"
"""The pid of a driver process of the suite (the leader of its process group)."""
ACTIONS = ("kill-job", "kill-worker", "raise")


class InjectedFault(RuntimeError):
    """The failure a ``raise`` point raises."""


@dataclass(frozen=True)
class KillPoint:
    """A method of the runner (``module``, ``qualname``) and where it runs."""

    name: str
    module: str
    qualname: str
    where: str  # "driver" or "worker"
    what: str

    def target(self) -> tuple[Any, str]:
        """The class that holds the method, and the method's name."""
        owner_name, attr = self.qualname.rsplit(".", 1)
        owner: Any = importlib.import_module(self.module)
        for part in owner_name.split("."):
            owner = getattr(owner, part)
        return owner, attr


POINTS = {
    p.name: p
    for p in (
        KillPoint(
            "state-write",
            "sparktide.spark.checkpoint",
            "CheckpointStore.write_subtask",
            "worker",
            "a stage subtask writes its state file (heap snapshot or native reference)",
        ),
        KillPoint(
            "native-upload",
            "sparktide.runtime.state.rocksdb_checkpoint",
            "RocksDBCheckpointStorage.upload_file",
            "worker",
            "a subtask uploads a file of its native RocksDB checkpoint",
        ),
        KillPoint(
            "sink-write",
            "sparktide.spark.stream_sinks",
            "ForeachBatchSink.write_batch",
            "driver",
            "the driver writes the batch's output to the sink",
        ),
        KillPoint(
            "commit",
            "sparktide.spark.checkpoint",
            "CheckpointStore.commit",
            "driver",
            "the driver commits the batch (after the sink wrote it)",
        ),
        KillPoint(
            "native-complete",
            "sparktide.runtime.state.rocksdb_checkpoint",
            "RocksDBCheckpointStorage.complete",
            "driver",
            "the driver completes a native RocksDB checkpoint (after the commit)",
        ),
        KillPoint(
            "after-commit",
            "sparktide.spark.streaming",
            "_StreamRunner._report",
            "driver",
            "after sparktide's commit, before Spark logs the micro-batch as done",
        ),
    )
}


def _call_number(counter: Path) -> int:
    """The number of this call across processes: the first free ``<counter>/<n>``."""
    counter.mkdir(exist_ok=True)
    n = 1
    while True:
        try:
            os.close(os.open(counter / str(n), os.O_CREAT | os.O_EXCL))
            return n
        except FileExistsError:
            n += 1


def _act(action: str, point: str, n: int) -> None:
    if action == "raise":
        raise InjectedFault(f"fault injected at {point} (call {n})")
    driver = os.environ.get(DRIVER_VAR)
    if action == "kill-job" and driver:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(driver), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _on_call(control: Path, point: str) -> None:
    """What an armed point does on a call: count it, and act on the armed call."""
    try:
        armed = json.loads((control / "armed.json").read_text())
    except FileNotFoundError:
        return
    if armed["point"] != point:
        return
    n = _call_number(control / f"calls-{point}")
    if n == armed["call"]:
        _act(armed["action"], point, n)


def install(where: str) -> None:
    """Wrap the points that run ``where`` (``driver`` or ``worker``) for the life of this
    process (a driver process of the suite, or a Spark Python worker), when
    :data:`CONTROL_VAR` is set."""
    control = os.environ.get(CONTROL_VAR)
    if control:
        for point in POINTS.values():
            if point.where == where:
                _wrap(point, Path(control))


@contextlib.contextmanager
def installed(control: Path) -> Iterator[None]:
    """The driver points wrapped in this process while the block runs (an attempt in the
    suite's own session)."""
    undo = [_wrap(p, control) for p in POINTS.values() if p.where == "driver"]
    try:
        yield
    finally:
        for u in reversed(undo):
            u()


def _wrap(point: KillPoint, control: Path) -> Callable[[], None]:
    """Wrap ``point``; returns the undo."""
    owner, attr = point.target()
    original: Callable[..., Any] = getattr(owner, attr)

    def armed(*args: Any, **kwargs: Any) -> Any:
        _on_call(control, point.name)
        return original(*args, **kwargs)

    setattr(owner, attr, armed)
    return lambda: setattr(owner, attr, original)


@contextlib.contextmanager
def arm(control: Path, point: str, call: int, action: str) -> Iterator[None]:
    """Arm ``point`` to ``action`` on its ``call``-th call from now until the block ends."""
    if point not in POINTS or action not in ACTIONS:
        raise ValueError(f"unknown point {point!r} or action {action!r}")
    counter = control / f"calls-{point}"
    for old in counter.glob("*") if counter.is_dir() else ():
        old.unlink()
    armed = control / "armed.json"
    armed.write_text(json.dumps({"point": point, "call": call, "action": action}))
    try:
        yield
    finally:
        armed.unlink()


def calls(control: Path, point: str) -> int:
    """How many calls of ``point`` were counted since it was armed."""
    counter = control / f"calls-{point}"
    return len(list(counter.iterdir())) if counter.is_dir() else 0
