"""A subtask's rounds in one pass, when only partials travelled.

When no split shipped a raw record, a subtask starts with no open window and the allowed
lateness is 0, the round-by-round replay of
:class:`~sparktide.runtime.columnar.engine.WindowEngine` comes down to this: every window holds
all of its partials (a partial only carries records whose windows have not fired, see
:mod:`.split`), and it fires at the first rise of the operator watermark to its
``max_timestamp`` or beyond, then is dropped. :func:`replay_partials` computes that for every
window at once: one sort of the window rows, one binary search into the watermark's rises,
instead of a merge and a scan of the open windows per round. It checks that every window's
last partial came in before the rise that fires it, and gives ``None`` otherwise (the caller
replays round by round).

>>> import numpy as np
>>> one = lambda *v: np.array(v, np.int64)
>>> rows = {"code": one(0, 0, 1), "kg": one(3, 3, 5), "start": one(0, 0, 10),
...         "count": one(2, 1, 4), "pending": np.ones(3, np.bool_), "reg_r": one(0, 1, 0),
...         "reg_s": one(0, 0, 1), "reg_seq": one(1, 9, 4), "clean_seq": one(-1, -1, -1)}
>>> marks = {"r": one(0, 1, 1), "phase": one(1, 2, 2), "s": one(0, 0, 1),
...          "seq": one(5, 9, 8), "time": one(50, 2**63 - 1, 2**63 - 1)}
>>> out = replay_partials(rows, marks, splits=2, size=10, combine=[])
>>> out.fired["code"].tolist(), out.fired["count"].tolist(), out.fired["position"][:, 7].tolist()
([0, 1], [3, 4], [3, 5])
>>> out.watermark == 2**63 - 1, len(out.open["code"])
(True, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparktide.runtime.elements import MIN_TIMESTAMP
from sparktide.runtime.execution.protocol import Mark, Phase

__all__ = ["Replay", "replay_partials"]

Columns = dict[str, npt.NDArray[np.generic]]
I64 = npt.NDArray[np.int64]

_WM_MARK = int(Mark.WATERMARK)
_TIMERS = int(Phase.EVENT_TIMERS)


@dataclass
class Replay:
    """What the rounds gave: the fired windows in firing order (their columns and
    ``position``), the windows still open (sorted by ``(code, start)``), every channel's
    watermark, the operator's, and how many timers fired."""

    fired: Columns
    open: Columns
    channels: I64
    watermark: int
    timers_fired: int


def replay_partials(
    rows: Columns, marks: Columns, splits: int, size: int, combine: Sequence[tuple[str, np.ufunc]]
) -> Replay | None:
    """Fire the windows of ``rows`` (one row per partial and window, in the engine's window
    columns; ``reg_r`` is the partial's round) at the watermarks of ``marks`` (the shipped
    watermark rows: ``r``, ``phase``, ``s``, ``seq``, ``time``) over ``splits`` channels;
    ``combine``: each aggregate column and its ufunc. ``None``: a window would take a partial
    after it fired (the caller replays round by round)."""
    channels = np.full(splits, MIN_TIMESTAMP, np.int64)
    watermark = MIN_TIMESTAMP
    rises: list[int] = []
    where: list[list[int]] = []
    order = np.lexsort((marks["s"], marks["phase"], marks["r"]))
    for r, phase, s, seq, value in zip(
        *(marks[k][order].tolist() for k in ("r", "phase", "s", "seq", "time")), strict=True
    ):
        if value > channels[s]:
            channels[s] = value
        combined = int(channels.min())
        if combined > watermark:
            watermark = combined
            rises.append(combined)
            where.append([r, phase, s, seq, _WM_MARK, 0])
    first, windows = _windows(rows, combine)
    max_ts = _i64(windows["start"]) + (size - 1)
    rise = np.searchsorted(np.asarray(rises, np.int64), max_ts, side="left")
    fires = rise < len(rises)
    rise_round = np.asarray([w[0] for w in where], np.int64)
    if bool((_i64(windows["last_r"])[fires] > rise_round[rise[fires]]).any()):
        return None
    due = np.flatnonzero(fires)
    kg = _i64(windows["kg"])[due]
    batch = rise[due] * (1 << 32) + kg  # one timer batch: a rise, a key group
    reg = [_i64(windows[k])[due] for k in ("reg_r", "reg_s", "reg_seq")]
    registered = _packed(*reg)
    keys: tuple[I64, ...] = tuple(reversed(reg)) if registered is None else (registered,)
    order = due[np.lexsort((*keys, max_ts[due], batch))]
    fired = {k: v[order] for k, v in windows.items() if k in _FIRED or k in combine_names(combine)}
    fired.update({k: v[first[order]] for k, v in rows.items() if k in _FIRED and k not in fired})
    batch = rise[order] * (1 << 32) + _i64(fired["kg"])
    heads = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1]])
    position = np.empty((len(order), 9), np.int64)
    if len(order):
        position[:, :6] = np.asarray(where, np.int64)[rise[order]]
    position[:, 6] = _TIMERS
    position[:, 7] = fired["kg"]
    position[:, 8] = np.arange(len(order)) - np.repeat(heads, np.diff(np.r_[heads, len(order)]))
    fired["position"] = position
    still = np.flatnonzero(~fires)
    opened = {k: v[first[still]] for k, v in rows.items()}
    opened.update({k: v[still] for k, v in windows.items() if k != "last_r"})
    return Replay(fired, opened, channels, watermark, len(order))


_FIRED = ("code", "start", "count", "first_row", "ext_row", "kg")
"""The columns of a fired window the engine's output reads (and its key group)."""


def _i64(column: npt.NDArray[np.generic]) -> I64:
    """An integer column as int64 (no copy when it is one)."""
    return np.asarray(column, dtype=np.int64)


def combine_names(combine: Sequence[tuple[str, np.ufunc]]) -> set[str]:
    """The aggregate columns of ``combine``."""
    return {name for name, _ in combine}


def _packed(*columns: I64) -> I64 | None:
    """The columns (most significant first) packed into one int64 that sorts as they do
    together, or ``None`` when their ranges do not fit in 62 bits."""
    out = np.zeros(len(columns[0]), np.int64)
    if not len(out):
        return out
    total = 1
    for column in columns:
        low = int(column.min())
        span = int(column.max()) - low + 1
        total *= span
        if total >= 1 << 62:
            return None
        out = out * span + (column - low)
    return out


def _windows(rows: Columns, combine: Sequence[tuple[str, np.ufunc]]) -> tuple[I64, Columns]:
    """Per window, sorted by ``(code, start)``: its first registered row (an index into
    ``rows``) and the columns that row does not give alone: ``code``, ``start``, ``kg`` and
    the registration, counts and aggregates combined, and ``last_r``, its last partial's
    round."""
    window = _packed(_i64(rows["code"]), _i64(rows["start"]))
    registered = _packed(*(_i64(rows[k]) for k in ("reg_r", "reg_s", "reg_seq")))
    if window is None or registered is None:
        order = np.lexsort(
            (rows["reg_seq"], rows["reg_s"], rows["reg_r"], rows["start"], rows["code"])
        )
        code, start = rows["code"][order], rows["start"][order]
        same = (code[1:] == code[:-1]) & (start[1:] == start[:-1])
    else:
        order = np.lexsort((registered, window))
        packed = window[order]
        same = packed[1:] == packed[:-1]
    heads = np.flatnonzero(np.r_[True, ~same]) if len(order) else np.zeros(0, np.intp)
    first = order[heads]
    out = {k: rows[k][first] for k in ("code", "start", "kg", "reg_r", "reg_s", "reg_seq")}
    if not len(order):
        out["last_r"] = rows["reg_r"][:0]
        out["count"], out["clean_seq"] = rows["count"][:0], rows["clean_seq"][:0]
        for name, _ in combine:
            out[name] = rows[name][:0]
        return first, out
    out["count"] = np.add.reduceat(rows["count"][order], heads)
    out["clean_seq"] = np.maximum.reduceat(rows["clean_seq"][order], heads)
    for name, op in combine:
        out[name] = op.reduceat(rows[name][order], heads)
    out["last_r"] = np.maximum.reduceat(rows["reg_r"][order], heads)
    return first, out
