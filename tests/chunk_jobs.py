"""What the differential tests of the chunk path share: the rows they draw (``k``, ``v``, ``x``,
``ts``; ``v`` and ``x`` may be null), their table and the keyed window that follows the steps
under test."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparktide.common import Row, Time, Types
from sparktide.core.output_tag import OutputTag
from sparktide.datastream.window import TumblingEventTimeWindows

NAMES = ["k", "v", "x", "ts"]
ROW = Types.ROW_NAMED(NAMES, [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.LONG()])
LATE = OutputTag("late", ROW)


def windowed(stream: Any) -> Any:
    """Sums of ``v`` per key in 10 ms tumbling windows, with the late records, tagged."""
    main = (
        stream.key_by(lambda r: r.k)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: Row(k=a.k, v=(a.v or 0) + (b.v or 0), x=None, ts=max(a.ts, b.ts)))
    )
    late = main.get_side_output(LATE)
    return main.map(lambda r: ("window", tuple(r))).union(late.map(lambda r: ("late", tuple(r))))


def table_of(rows: list[tuple[str, int, float | None, int]]) -> pa.Table:
    """The rows as a table whose key column is dictionary-encoded (as NEXMark's strings)."""
    k, v, x, ts = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    return pa.table(
        {
            "k": pa.array(k, pa.string()).dictionary_encode(),
            "v": pa.array(v, pa.int64()),
            "x": pa.array(x, pa.float64()),
            "ts": pa.array(ts, pa.int64()),
        }
    )
