"""The scenarios of the fault suite, in one place for its script (``python -m tests.faults``)
and its pytest form (``test_faults.py``).

A scenario plays attempts of one job (see ``jobs.py``) on one state backend through a
:class:`~faults.trial.Trial` and returns an :class:`~faults.outcome.Outcome`: the rows the
sink holds at the end against the bounded run of the same job over all input, or the refusal
the last attempt stopped with (correct only where the scenario expects one and it names
``culprit``: what is wrong). Kill scenarios must always restart and finish: a checkpoint
sparktide committed must restore.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from faults.jobs import JOBS, Job, write_file
from faults.outcome import Outcome
from faults.trial import Trial

FIRST = (0, 1)
"""The files of a first attempt that is not killed (the rest come before the restart)."""

BACKENDS = ("hashmap", "rocksdb")


@dataclass(frozen=True)
class Scenario:
    """``play`` runs the scenario on a trial; ``backends``: where it applies (a damaged
    local RocksDB copy has no heap counterpart); ``ci``: part of the pytest form."""

    name: str
    job: Job
    what: str
    play: Callable[[Trial], Outcome]
    backends: tuple[str, ...] = BACKENDS
    ci: bool = False


# ------------------------------------------------------------------------------ plays


def uninterrupted(trial: Trial) -> Outcome:
    trial.add_files()
    return trial.outcome(trial.run())


def restarted(parallelism: int) -> Callable[[Trial], Outcome]:
    """Two files, stop; the rest added; a cold restart at ``parallelism``."""

    def play(trial: Trial) -> Outcome:
        trial.add_files(FIRST)
        first = trial.run()
        if first.error is not None:
            return trial.outcome(first, note="first attempt")
        trial.add_files()
        return trial.outcome(trial.run(parallelism))

    return play


def killed(point: str, call: int, parallelism: int = 2) -> Callable[[Trial], Outcome]:
    """A driver process killed at the ``call``-th call of ``point``, then a restart (at
    ``parallelism``) that must finish with the reference output."""

    def play(trial: Trial) -> Outcome:
        trial.add_files()
        first = trial.run_killed(point, call)
        if not first.killed:
            what = first.error or "it ran to the end"
            return trial.outcome(first, note=f"not killed: {what}", failed_check=True)
        return trial.outcome(trial.run(parallelism))

    return play


def failed_at(point: str, call: int) -> Callable[[Trial], Outcome]:
    """The ``call``-th call of ``point`` fails in the suite's own session (a Python worker
    killed, or the driver's batch failing there), then a restart that must finish with the
    reference output."""

    def play(trial: Trial) -> Outcome:
        trial.add_files()
        first = trial.run_faulty(point, call)
        if not first.killed:
            what = first.error or "it ran to the end"
            return trial.outcome(first, note=f"no fault: {what}", failed_check=True)
        return trial.outcome(trial.run())

    return play


def damaged(damage: Callable[[Trial], str]) -> Callable[[Trial], Outcome]:
    """Two files; ``damage`` (returns the damaged file's path in the checkpoint, which a
    refusal must name); the rest added; a restart."""

    def play(trial: Trial) -> Outcome:
        trial.add_files(FIRST)
        first = trial.run()
        if first.error is not None:
            return trial.outcome(first, note="first attempt")
        culprit = damage(trial)
        trial.add_files()
        return trial.outcome(trial.run(), culprit=culprit)

    return play


def input_replaced(change: Callable[[Trial, int], None]) -> Callable[[Trial], Outcome]:
    """Batch 1 reads file 1 and fails before its commit; ``change`` deletes or rewrites
    the file; the restart replays batch 1: it must read what the first attempt read, or
    refuse naming the file."""

    def play(trial: Trial) -> Outcome:
        trial.add_files()
        first = trial.run_faulty("commit", 2)
        if not first.killed:
            return trial.outcome(first, note="the fault did not happen", failed_check=True)
        change(trial, 1)
        return trial.outcome(trial.run(), culprit=trial.file_name(1))

    return play


def unwritable(which: str) -> Callable[[Trial], Outcome]:
    """The checkpoint location (``which="ckpt"``) or the sink's folder (``"out"``) below a
    regular file: no one, root included, can create it."""

    def play(trial: Trial) -> Outcome:
        trial.add_files()
        blocker = trial.root / "not-a-directory"
        blocker.write_text("a file where a directory should be\n")
        place = {which: blocker / which}
        attempt = trial.run(**place)  # type: ignore[arg-type]
        return trial.outcome(attempt, culprit=str(blocker), out=place.get("out"))

    return play


def on_small_disk(fault: str) -> Callable[[Trial], Outcome]:
    """The checkpoint and the output on a tmpfs of their own; after two files the file
    system is made read-only (``fault="readonly"``) or filled (``"full"``); the next attempt
    must fail without a partial commit, naming the path; once the disk is back, a restart
    finishes with the reference output."""

    def play(trial: Trial) -> Outcome:
        mount = trial.root / "disk"
        with tmpfs(mount) as mounted:
            if not mounted:
                return Outcome(skipped="cannot mount a tmpfs here")
            trial.ckpt, trial.out = mount / "ckpt", mount / "out"
            trial.add_files(FIRST)
            first = trial.run()
            if first.error is not None:
                return trial.outcome(first, note="first attempt")
            trial.add_files()
            with disk_fault(mount, fault):
                second = trial.run()
            refused = Outcome(refused=second.error, culprit=str(mount))
            last = trial.run()
            note = f"while {fault}: {refused.cell()}"
            return trial.outcome(last, note=note, failed_check=not refused.correct)

    return play


# ------------------------------------------------------------------------------ damage


def _last_version(trial: Trial) -> int:
    return max(int(p.stem) for p in (trial.ckpt / "commits").glob("*.json"))


def _state_file(trial: Trial) -> Path:
    """The file of stage 0's subtask 0 at the last committed version: a full snapshot
    (``.bin``, on RocksDB the native reference) or a changelog (``.log``)."""
    folder = trial.ckpt / "state" / str(_last_version(trial)) / "stage-0"
    return sorted(folder.glob("sub-0.*"))[0]


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _relative(trial: Trial, path: Path) -> str:
    return str(path.relative_to(trial.ckpt))


def flip_state_file(trial: Trial) -> str:
    path = _state_file(trial)
    _flip(path)
    return _relative(trial, path)


def truncate_commit(trial: Trial) -> str:
    path = trial.ckpt / "commits" / f"{_last_version(trial)}.json"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return _relative(trial, path)


def delete_state(trial: Trial) -> str:
    """Delete a file the last commit needs: a native checkpoint's newest shared SST on
    RocksDB, the state file on the heap backend."""
    ssts = sorted((trial.ckpt / "state" / "rocksdb").glob("*/*/shared/*.sst"))
    path = max(ssts, key=lambda p: p.stat().st_mtime_ns) if ssts else _state_file(trial)
    path.unlink()
    return _relative(trial, path)


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.sst"))
    }


def damaged_local_copy(trial: Trial) -> Outcome:
    """Two files; a byte flipped in an SST of a worker's local copy of the last checkpoint
    (in place when its mode lets a writer in, else by replacing the file); the rest added;
    a restart in the same workers (which reopen their local copies). It must give the
    reference output (the copy is rejected, the checkpoint's files are used) or refuse, and
    the flip must not reach the checkpoint's files."""
    trial.add_files(FIRST)
    first = trial.run()
    if first.error is not None:
        return trial.outcome(first, note="first attempt")
    base = trial.local_copies()
    copies = sorted(base.glob(f"*/*/v{_last_version(trial)}/*.sst"))
    if not copies:
        return Outcome(note=f"no local copy under {base}", failed_check=True)
    before = _digests(trial.ckpt)
    target = copies[0]
    if target.stat().st_mode & 0o222:
        with open(target, "r+b") as f:  # a stray write through the copy's path
            f.seek(target.stat().st_size // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x40]))
    else:  # a read-only copy: the disk damaged it
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x40
        target.unlink()
        target.write_bytes(bytes(data))
    leaked = _digests(trial.ckpt) != before
    trial.add_files()
    last = trial.run()
    note = "the flip changed the checkpoint's own file" if leaked else ""
    return trial.outcome(last, culprit=target.name, note=note, failed_check=leaked)


def delete_file(trial: Trial, index: int) -> None:
    (trial.inp / trial.file_name(index)).unlink()


def change_file(trial: Trial, index: int) -> None:
    rows = [(k, key, ts, v + 1_000) for k, key, ts, v in trial.files[index]]
    write_file(trial.inp, index, rows, trial.job.fmt)


@contextlib.contextmanager
def tmpfs(mount: Path, size: str = "64m") -> Iterator[bool]:
    """A tmpfs of ``size`` at ``mount`` (yields False where mounting is not allowed)."""
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    try:
        yield done.returncode == 0
    finally:
        if done.returncode == 0:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


@contextlib.contextmanager
def disk_fault(mount: Path, fault: str) -> Iterator[None]:
    """The tmpfs at ``mount`` read-only, or full, until the block ends."""
    if fault == "readonly":
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        try:
            yield
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        return
    filler = mount / "filler"
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * (1 << 20))
            f.flush()
    try:
        yield
    finally:
        filler.unlink()


# ------------------------------------------------------------------------------ the list

U, K = JOBS["union"], JOBS["keyed"]
_ROCKSDB = ("rocksdb",)

SCENARIOS = {
    s.name: s
    for s in (
        Scenario("union/none", U, "an uninterrupted run", uninterrupted),
        Scenario(
            "union/restart",
            U,
            "stop after two files, restart cold with the rest",
            restarted(2),
            ci=True,
        ),
        Scenario("keyed/none", K, "an uninterrupted run", uninterrupted),
        Scenario(
            "keyed/kill-state-write",
            K,
            "job killed as a subtask writes its state file (batch 1)",
            killed("state-write", 6),
        ),
        Scenario(
            "keyed/kill-sink-write",
            K,
            "job killed as the driver writes batch 1 to the sink",
            killed("sink-write", 2),
        ),
        Scenario(
            "keyed/kill-commit",
            K,
            "job killed before batch 1's commit (sink written)",
            killed("commit", 2),
        ),
        Scenario(
            "keyed/kill-native-complete",
            K,
            "job killed completing batch 1's native checkpoints (after its commit)",
            killed("native-complete", 6),
            backends=_ROCKSDB,
        ),
        Scenario(
            "keyed/kill-after-commit",
            K,
            "job killed after batch 1's commit, before Spark logs it done",
            killed("after-commit", 2),
        ),
        Scenario(
            "keyed/worker-killed-state-write",
            K,
            "a Python worker killed as it writes a state file (batch 1)",
            failed_at("state-write", 6),
        ),
        Scenario(
            "keyed/worker-killed-native-upload",
            K,
            "a Python worker killed as it uploads a native checkpoint file (batch 1)",
            failed_at("native-upload", 50),
            backends=_ROCKSDB,
        ),
        Scenario(
            "broadcast/rescale",
            JOBS["broadcast"],
            "broadcast state: stop after two files, restart at parallelism 3",
            restarted(3),
        ),
        Scenario(
            "async/rescale",
            JOBS["async"],
            "async I/O: stop after two files, restart at parallelism 3",
            restarted(3),
        ),
        Scenario(
            "failed/rescale",
            JOBS["failed"],
            "failed-records side output (Parquet "
            "input): stop after two files, restart at parallelism 3",
            restarted(3),
        ),
        Scenario(
            "keyed/ckpt-byte-flipped",
            K,
            "a byte flipped in the last state file",
            damaged(flip_state_file),
        ),
        Scenario(
            "keyed/ckpt-commit-truncated",
            K,
            "the last commit manifest cut in half",
            damaged(truncate_commit),
        ),
        Scenario(
            "keyed/ckpt-file-deleted",
            K,
            "a file of the last checkpoint deleted (an SST on RocksDB)",
            damaged(delete_state),
        ),
        Scenario(
            "keyed/local-copy-byte-flipped",
            K,
            "a byte flipped in a worker's local RocksDB copy",
            damaged_local_copy,
            backends=_ROCKSDB,
        ),
        Scenario(
            "keyed/input-deleted",
            K,
            "batch 1 fails before its commit; its file is deleted; restart",
            input_replaced(delete_file),
            ci=True,
        ),
        Scenario(
            "keyed/input-changed",
            K,
            "batch 1 fails before its commit; its file is rewritten; restart",
            input_replaced(change_file),
        ),
        Scenario(
            "keyed/ckpt-not-writable",
            K,
            "the checkpoint location below a regular file",
            unwritable("ckpt"),
            ci=True,
        ),
        Scenario(
            "keyed/sink-not-writable",
            K,
            "the sink's folder below a regular file",
            unwritable("out"),
            ci=True,
        ),
        Scenario(
            "keyed/fs-read-only",
            K,
            "the checkpoint's file system turns read-only between attempts",
            on_small_disk("readonly"),
        ),
        Scenario(
            "keyed/fs-full",
            K,
            "the checkpoint's file system fills between attempts",
            on_small_disk("full"),
        ),
    )
}
