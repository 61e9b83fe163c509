"""``sparktide savepoint CHECKPOINT PATH [--version V]``: take a savepoint of a streaming job's
checkpoint and print what it wrote.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="sparktide")
>>> add_savepoint_command(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["savepoint", "ckpt", "sp", "--version", "3"])
>>> args.checkpoint, args.path, args.version
('ckpt', 'sp', 3)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_savepoint_command", "run_savepoint_command"]

EXIT_USAGE = 2


def add_savepoint_command(commands: Any) -> None:
    """Add the ``savepoint`` command to the subparsers ``commands`` of the ``sparktide``
    parser."""
    savepoint = commands.add_parser(
        "savepoint",
        help="take a savepoint (a portable copy of one committed version) of a checkpoint",
        description=(
            "Copy a committed version of a sparktide streaming checkpoint (heap or RocksDB) "
            "into PATH as a backend-neutral savepoint, with what each source has read; a job "
            "started with execute(..., from_savepoint=PATH) continues from it. PATH must be "
            "absent or empty. Safe while the job runs (committed versions do not change)."
        ),
    )
    add = savepoint.add_argument
    add("checkpoint", metavar="CHECKPOINT", help="the checkpoint location")
    add("path", metavar="PATH", help="where to write the savepoint (absent or empty)")
    add("--version", type=int, default=None, help="the committed version (default: the last)")


def run_savepoint_command(args: argparse.Namespace) -> int:
    """Run ``sparktide savepoint``; returns the exit code (2 with the message when the
    checkpoint cannot be read or the savepoint not written)."""
    from sparktide.spark.checkpoint import CheckpointError
    from sparktide.state_api.savepoint import summarize_savepoint, write_savepoint

    try:
        write_savepoint(args.checkpoint, args.path, args.version)
        summary = summarize_savepoint(args.path)
    except (CheckpointError, OSError) as exc:
        print(f"sparktide: error: no savepoint of {args.checkpoint!r}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(summary.lines(args.path)))
    return 0
