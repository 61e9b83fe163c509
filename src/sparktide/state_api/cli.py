"""``sparktide state CHECKPOINT``: a checkpoint's operators, one operator's keyed state or
timers, or the split watermarks, printed as a table or written to Parquet.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="sparktide")
>>> add_state_command(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["state", "ckpt", "--uid", "count", "--state", "n"])
>>> args.uid, args.state, args.trusted
('count', 'n', False)
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from sparktide.common.typeinfo_base import TypeInformation

__all__ = ["add_state_command", "run_state_command"]

EXIT_USAGE = 2


def _type_name(text: str) -> TypeInformation:
    """A basic declared type by its ``Types`` name (``STRING``, ``LONG``, ``Types.INT()``)."""
    from sparktide.common.typeinfo_json import type_from_json

    name = text.removeprefix("Types.").removesuffix("()").upper()
    try:
        return type_from_json({"type": name}, f"type {text!r}")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a basic type; give a Types name such as STRING, LONG, INT, "
            "DOUBLE, BOOLEAN"
        ) from None


def add_state_command(commands: Any) -> None:
    """Add the ``state`` command to the subparsers ``commands`` of the ``sparktide`` parser."""
    state = commands.add_parser(
        "state",
        help="read a streaming job's checkpoint as tables: operators, keyed state, timers",
        description=(
            "Read a committed version of a sparktide checkpoint without running the job. "
            "Without --uid: its operators and their states (kinds, declared types). With "
            "--uid and --state: that keyed state as rows; with --uid and --timers: the pending "
            "timers; --splits: the split watermarks. Keyed state and timers are pickled in the "
            "checkpoint: reading them runs code stored there, so they need --trusted."
        ),
    )
    add = state.add_argument
    add("checkpoint", metavar="CHECKPOINT", help="the checkpoint location")
    add("--version", type=int, default=None, help="the committed version (default: the last)")
    add("--uid", help="the operator: its uid, else its name or identity as `inspect` shows")
    add("--state", help="the keyed state to read (with --uid)")
    add("--timers", action="store_true", help="read the operator's pending timers (with --uid)")
    add("--splits", action="store_true", help="read the split watermarks")
    add("--trusted", action="store_true", help="allow unpickling keyed state and timers")
    add("--key-type", type=_type_name, help="read undeclared keys as this type (e.g. STRING)")
    add("--value-type", type=_type_name, help="read undeclared values as this type")
    add("--out", metavar="FILE", help="write the whole table to this Parquet file")
    add("--limit", type=int, default=50, help="rows printed (default 50)")


def _table(args: argparse.Namespace) -> pa.Table:
    from sparktide.state_api.reader import SavepointReader

    reader = SavepointReader.read(args.checkpoint, args.version, trusted=args.trusted)
    if args.splits:
        return reader.split_watermarks()
    if args.uid is None:
        return reader.operators()
    if args.timers:
        return reader.timers(args.uid, key_type=args.key_type)
    if args.state is None:
        raise ValueError("--uid needs --state NAME or --timers: which of its tables to read")
    return reader.keyed_state(
        args.uid, args.state, key_type=args.key_type, value_type=args.value_type
    )


def run_state_command(args: argparse.Namespace) -> int:
    """Run ``sparktide state``; returns the exit code (2 with a message on a bad request)."""
    from sparktide.spark.checkpoint import CheckpointError

    try:
        table = _table(args)
    except (CheckpointError, OSError, ValueError) as exc:
        print(f"sparktide: error: cannot read {args.checkpoint!r}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.out is not None:
        import pyarrow.parquet as pq

        pq.write_table(table, args.out)
        print(f"wrote {table.num_rows} rows to {args.out}")
        return 0
    shown = table.slice(0, max(args.limit, 0)).to_pandas()
    print(shown.to_string(index=False) if len(shown) else f"(no rows) {table.schema.names}")
    if table.num_rows > len(shown):
        print(f"... {table.num_rows - len(shown)} more rows (--out FILE writes them all)")
    return 0
