"""The subtask side of a columnar window aggregate: merge partials, apply raw records, fire.

A subtask receives, for its key groups, what the splits shipped (:mod:`.split`): partial
aggregates of normal records, raw records, and every split's watermarks. It replays the rounds
as :class:`~sparktide.runtime.operators.window.WindowOperator` behind a
:class:`~sparktide.runtime.valve.StatusWatermarkValve` would see them, in position order:

1. **Records of round r** meet the operator watermark ``W`` of the end of round ``r - 1``. The
   partials of round ``r`` are merged into the open windows (a pane into each of its windows);
   none of their windows can be late or fire on arrival (see :mod:`.split`), and none of the
   windows a raw record fires on arrival can hold a partial of the same round. Raw records are
   then applied one at a time with the per-record rules: late windows are skipped; a record in
   no window that is itself late goes to the late side output (or is counted as dropped); a
   window whose ``max_timestamp <= W`` fires at once with its updated contents, at the record's
   position; any other window registers its timer.
2. **Watermarks of round r** (periodic, then ends of input; split order): each one updates its
   channel; when the minimum over channels rises, the windows whose timer is due fire, ordered
   as the timer queue pops them (key group, then time, then registration order: the position
   of the first record that registered the timer) and numbered per key group; windows whose
   cleanup time (``max_timestamp + allowed_lateness``) has passed are dropped.

Counts and integer aggregates are exact; float sums are added in another order than record by
record, so their last bits may differ from the per-record path's (compare with a relative
tolerance of 1e-9).

>>> import pyarrow as pa
>>> from sparktide.runtime.columnar.split import SplitAggregator, SplitPlan
>>> from sparktide.runtime.columnar.windows import WindowGeometry
>>> g = WindowGeometry(10, 10, 0)
>>> agg = SplitAggregator(SplitPlan(g, "k", "ts", (), ("k", "ts"), 0, None, 1, 128), split=0)
>>> shipped = pa.concat_tables([*agg.feed(pa.table({"k": [1, 1, 2], "ts": [3, 5, 14]})),
...     agg.finish()], promote_options="default")
>>> out = WindowEngine(EnginePlan(g, 0, 1, 0)).run(shipped)
>>> out.fired.select(["key", "start", "count"]).to_pylist()
[{'key': 1, 'start': 0, 'count': 2}, {'key': 2, 'start': 10, 'count': 1}]
>>> out.fired_positions.tolist()[0]  # the end of input of split 0, timers, key group 86
[0, 2, 0, 3, 1, 0, 1, 86, 0]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.runtime.columnar.merge import merge_round
from sparktide.runtime.columnar.replay import replay_partials
from sparktide.runtime.columnar.split import (
    AGGREGATES,
    Kind,
    field_column,
    key_codes,
    row_column,
)
from sparktide.runtime.columnar.windows import WindowGeometry
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP
from sparktide.runtime.execution.protocol import PAD, Mark, Phase, RoundPhase

__all__ = [
    "NO_REGISTRATION",
    "NO_TIMER",
    "POSITION_WIDTH",
    "RESTORED_ROUND",
    "WINDOW_COLUMNS",
    "EngineOutput",
    "EnginePlan",
    "EngineState",
    "WindowEngine",
]

I64 = npt.NDArray[np.int64]

POSITION_WIDTH = 9
"""Columns of an output position: a source watermark's 6, then (phase, key group, n); a record's
output has 8 (5 + (phase, channel, n)) and is padded with :data:`PAD`."""

_MERGE: Mapping[str, np.ufunc] = MappingProxyType(
    {"nn": np.add, "sum": np.add, "min": np.minimum, "max": np.maximum}
)
_Update = Callable[[float, float], float]
_UPDATE: Mapping[str, _Update] = MappingProxyType({"sum": operator.add, "min": min, "max": max})
_NO_REG = np.iinfo(np.int64).max
NO_REGISTRATION = _NO_REG
"""``reg_*`` of a window without a pending trigger timer."""
NO_TIMER = -1
"""``clean_seq`` of a window whose cleanup timer was not restored (registered in this run)."""
RESTORED_ROUND = -1
"""``reg_r`` / ``first_r`` of a restored window: before every round of this run, so restored
timers fire before new ones of the same time, in their sequence order (``reg_seq``)."""
_READ = int(RoundPhase.READ)
_RECORD = int(Mark.RECORD)
_WM_MARK = int(Mark.WATERMARK)
_TIMERS = int(Phase.EVENT_TIMERS)
_RECORD_PHASE = int(Phase.RECORD)


@dataclass(frozen=True)
class EnginePlan:
    """The windows, the allowed lateness, how many splits (valve channels) there are, how many
    fields are aggregated, and whether late records go to a side output."""

    geometry: WindowGeometry
    lateness: int
    splits: int
    fields: int
    late_side_output: bool = False
    # Flink's record over field 0: the first record with the field aggregated, or with
    # ``by`` ("min" / "max") the first record holding the extreme
    records: bool = False
    by: str | None = None
    aggregate: str = "sum"  # without ``by``: what replaces the field (sum, min or max)
    field_name: str = ""  # the aggregated source column
    # per field, what its partials hold (SplitPlan.aggregates; empty: all of AGGREGATES)
    aggregates: tuple[tuple[str, ...], ...] = ()
    key_name: str = ""  # Flink's record: the key's source column (the ``key`` column holds it)
    columns: tuple[str, ...] = ()  # Flink's record: the source columns, in order

    @property
    def held(self) -> list[tuple[int, str]]:
        """``(field, aggregate)`` of every aggregate column the partials hold."""
        return [
            (i, what)
            for i in range(self.fields)
            for what in (self.aggregates[i] if self.aggregates else AGGREGATES)
        ]


@dataclass
class EngineOutput:
    """What a subtask emits: fired windows (``key``, ``start``, ``count``, the field
    aggregates) with their positions, late records (indexes into the raw rows, with their
    positions) and the subtask's metrics."""

    fired: pa.Table
    fired_positions: I64
    late_rows: pa.Table
    late_positions: I64
    metrics: dict[str, int] = field(default_factory=dict)
    records: pa.Table | None = None  # Flink's record per fired window (source columns)


@dataclass
class EngineState:
    """What a subtask carries from one micro-batch of a streaming run to the next: its open
    windows (the columns of :class:`_Windows`, without ``code``, and their ``keys``), the
    watermark of every channel (split) and the operator's watermark.

    A restored window's timers keep their order: ``reg_r``/``first_r`` are
    :data:`RESTORED_ROUND` and ``reg_seq`` the sequence number of its trigger timer (when
    ``pending``); ``clean_seq`` is that of its cleanup timer."""

    keys: pa.Array
    windows: dict[str, npt.NDArray[np.generic]]
    channels: I64
    watermark: int
    # Flink's record: each window's record so far (``first_row``/``ext_row`` index it), in the
    # source's columns (named with ``row_column``)
    rows: pa.Table | None = None


WINDOW_COLUMNS = (
    "code",
    "kg",
    "start",
    "count",
    "pending",
    "reg_r",
    "reg_s",
    "reg_seq",
    # the first record (row id, position) and the extreme record (min_by / max_by)
    "first_row",
    "first_r",
    "first_s",
    "first_seq",
    "ext_row",
    "ext_r",
    "ext_s",
    "ext_seq",
    # the sequence number of a restored cleanup timer (NO_TIMER: none restored)
    "clean_seq",
)
"""The columns of an open window (integers; ``pending``: whether its timer is set)."""


class _Windows:
    """The open windows, as columns."""

    names = WINDOW_COLUMNS

    def __init__(self, held: list[tuple[int, str]], dtypes: list[np.dtype[np.generic]]) -> None:
        self.cols: dict[str, npt.NDArray[np.generic]] = {
            name: np.zeros(0, np.bool_ if name == "pending" else np.int64) for name in self.names
        }
        for i, what in held:
            self.cols[field_column(what, i)] = np.zeros(0, np.int64 if what == "nn" else dtypes[i])

    def __len__(self) -> int:
        return len(self.cols["code"])

    def take(self, index: npt.NDArray[np.intp] | npt.NDArray[np.bool_]) -> None:
        self.cols = {k: v[index] for k, v in self.cols.items()}


class WindowEngine:
    """Replays one subtask's rounds (see the module docstring)."""

    def __init__(self, plan: EnginePlan) -> None:
        self.plan = plan
        self.late_dropped = 0
        self.late_side = 0
        self.timers_fired = 0

    def run(self, shipped: pa.Table, state: EngineState | None = None) -> EngineOutput:
        """Replay ``shipped``'s rounds; ``state``: where a streaming run's previous
        micro-batch left the subtask (then :meth:`state` gives where this one leaves it)."""
        plan = self.plan
        kind = np.asarray(shipped.column("kind").to_numpy(zero_copy_only=False))
        partials = shipped.filter(pa.array(kind == Kind.PARTIAL))
        raws = shipped.filter(pa.array(kind == Kind.RAW))
        marks = shipped.filter(pa.array(kind == Kind.WATERMARK))
        key_type = shipped.schema.field("key").type
        restored = [] if state is None else [state.keys.cast(key_type)]
        keys = pa.chunked_array(
            [*restored, *partials.column("key").chunks, *raws.column("key").chunks],
            type=key_type,
        )
        codes, self.uniques = key_codes(keys)
        restored_rows = 0 if state is None else len(state.keys)
        p_codes = codes[restored_rows : restored_rows + partials.num_rows]
        r_codes = codes[restored_rows + partials.num_rows :]
        dtypes: list[np.dtype[np.generic]] = [np.dtype(np.int64)] * plan.fields
        for i, what in plan.held:
            if what != "nn":
                column = shipped.schema.field(field_column(what, i))
                dtypes[i] = np.dtype(column.type.to_pandas_dtype())
        self.windows = _Windows(plan.held, dtypes)
        # the order-free merge (merge_round) adds in another order: not for float sums
        self._combine: list[tuple[str, np.ufunc]] = [
            (field_column(what, i), _MERGE[what]) for i, what in plan.held
        ]
        self._exact = all(what != "sum" or dtypes[i].kind != "f" for i, what in plan.held)
        self.fired: list[dict[str, npt.NDArray[np.generic]]] = []
        self.late: list[tuple[list[int], int]] = []  # (position, raw row)
        self.channels = np.full(plan.splits, MIN_TIMESTAMP, np.int64)
        self.watermark = MIN_TIMESTAMP
        if state is not None:
            cols = self.windows.cols
            for name in cols:
                if name != "code":
                    cols[name] = np.asarray(state.windows[name], dtype=cols[name].dtype)
            cols["code"] = codes[:restored_rows]
            self.channels = np.asarray(state.channels, np.int64).copy()
            self.watermark = state.watermark

        p = _columns(partials, plan.held)
        p["code"] = p_codes
        r = _columns(raws, plan.held)
        r["code"] = r_codes
        # row ids: the restored windows' records, then partials, then raws
        self.restored = state.rows if state is not None else None
        held_rows = 0 if self.restored is None else self.restored.num_rows
        p["row"] = np.arange(partials.num_rows, dtype=np.int64) + held_rows
        r["row"] = np.arange(raws.num_rows, dtype=np.int64)
        r["id"] = r["row"] + partials.num_rows + held_rows
        self.partials, self.raws = partials, raws
        zeros = np.zeros(partials.num_rows, np.int64)
        p["ext_seq"] = _int_column(partials, "ext_seq") if plan.records else zeros
        r["ext_seq"] = r["seq"]
        w = _columns(marks, [])
        if state is None and not raws.num_rows and self._replays():
            done = replay_partials(
                self._window_rows(p), w, plan.splits, plan.geometry.size, self._combine
            )
            if done is not None:
                self.windows.cols = done.open
                self.fired = [done.fired] if len(done.fired["code"]) else []
                self.channels, self.watermark = done.channels, done.watermark
                self.timers_fired += done.timers_fired
                return self._output(partials, raws)
        rounds = np.unique(np.concatenate([p["r"], r["r"], w["r"]]))
        p_round = _by_round(p, ("r",))
        r_round = _by_round(r, ("r", "s", "seq"))
        w_round = _by_round(w, ("r", "phase", "s"))
        for rnd in rounds.tolist():
            self._merge(p_round(rnd))
            self._raws(r_round(rnd))
            self._watermarks(w_round(rnd))
        return self._output(partials, raws)

    def _replays(self) -> bool:
        """Whether :func:`replay_partials` may replace the rounds when only partials came:
        one window per pane (sliding windows would hold every pane's rows for all of its
        windows at once, many times what a round holds), no lateness (a fired window is
        dropped), no extreme record to pick, and no float sum (it adds in another order)."""
        plan = self.plan
        return (
            plan.geometry.windows_per_pane == 1
            and plan.lateness == 0
            and plan.by is None
            and self._exact
        )

    # ------------------------------------------------------------------ records

    def _merge(self, part: dict[str, npt.NDArray[np.generic]]) -> None:
        """Add a round's partials to their windows (panes into every window holding them)."""
        if not len(part["code"]):
            return
        new = self._window_rows(part)
        if not len(new["code"]):
            return  # panes in no window (the slide is larger than the size)
        if self.plan.by is None and self._exact:
            merged = merge_round(self.windows.cols, new, self._combine)
            if merged is not None:
                self.windows.cols = merged
                return
        self._merge_sorted(new)

    def _window_rows(
        self, part: dict[str, npt.NDArray[np.generic]]
    ) -> dict[str, npt.NDArray[np.generic]]:
        """One row per partial and window holding its pane, in the open windows' columns."""
        g = self.plan.geometry
        rows, starts = g.windows_of_panes(part["time"].astype(np.int64))
        n = len(rows)
        if g.windows_per_pane == 1 and n == len(part["code"]):  # rows is every partial once

            def take(column: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
                return column

        else:

            def take(column: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
                return column[rows]

        new = {
            "code": take(part["code"]),
            "kg": take(part["kg"]),
            "start": starts,
            "count": take(part["count"]),
            "pending": np.ones(n, np.bool_),
            "reg_r": take(part["r"]),
            "reg_s": take(part["s"]),
            "reg_seq": take(part["seq"]),
            "first_row": take(part["row"]),
            "first_r": take(part["r"]),
            "first_s": take(part["s"]),
            "first_seq": take(part["seq"]),
            "ext_row": take(part["row"]),
            "ext_r": take(part["r"]),
            "ext_s": take(part["s"]),
            "ext_seq": take(part["ext_seq"]),
            "clean_seq": np.full(n, NO_TIMER, np.int64),
        }
        for i, what in self.plan.held:
            name = field_column(what, i)
            new[name] = take(part[name])
        return new

    def _merge_sorted(self, new: dict[str, npt.NDArray[np.generic]]) -> None:
        """Merge window rows into the open windows by sorting them all (the general case)."""
        cols = {k: np.concatenate([v, new[k]]) for k, v in self.windows.cols.items()}
        order = np.lexsort(
            (cols["reg_seq"], cols["reg_s"], cols["reg_r"], cols["start"], cols["code"])
        )
        cols = {k: v[order] for k, v in cols.items()}
        same = (cols["code"][1:] == cols["code"][:-1]) & (cols["start"][1:] == cols["start"][:-1])
        heads = np.flatnonzero(np.r_[True, ~same])
        merged = {k: v[heads] for k, v in cols.items()}  # the first (lowest registration)
        merged["count"] = np.add.reduceat(cols["count"], heads)
        merged["pending"] = np.logical_or.reduceat(cols["pending"], heads)
        merged["clean_seq"] = np.maximum.reduceat(cols["clean_seq"], heads)
        for i, what in self.plan.held:
            name = field_column(what, i)
            merged[name] = _MERGE[what].reduceat(cols[name], heads)
        if self.plan.by is not None:  # the extreme's first holder: lowest value, then position
            value = cols[field_column(self.plan.by, 0)]
            group = np.repeat(np.arange(len(heads)), np.diff(np.r_[heads, len(value)]))
            order = np.lexsort(
                (
                    cols["ext_seq"],
                    cols["ext_s"],
                    cols["ext_r"],
                    value if self.plan.by == "min" else -value,
                    group,
                )
            )
            best = order[np.r_[True, group[order][1:] != group[order][:-1]]]
            for name in ("ext_row", "ext_r", "ext_s", "ext_seq"):
                merged[name] = cols[name][best]
        self.windows.cols = merged

    def _raws(self, raw: dict[str, npt.NDArray[np.generic]]) -> None:
        """Apply a round's raw records one at a time (the per-record window rules)."""
        n = len(raw["code"])
        if not n:
            return
        plan = self.plan
        g = plan.geometry
        size, lateness, w = g.size, plan.lateness, self.watermark
        win = {k: v.tolist() for k, v in self.windows.cols.items()}
        at = {(c, s): i for i, (c, s) in enumerate(zip(win["code"], win["start"], strict=True))}
        names = [field_column(what, i) for i, what in plan.held]
        by = plan.by
        by_column = field_column(by or "min", 0)
        updates = _raw_updates(plan)
        fired: dict[str, list[object]] = {k: [] for k in win}
        positions: list[list[int]] = []
        rows = {k: v.tolist() for k, v in raw.items()}
        for j in range(n):
            code, ts, rid = rows["code"][j], rows["time"][j], rows["id"][j]
            r, s, seq = rows["r"][j], rows["s"][j], rows["seq"][j]
            out = 0
            skipped = True
            for start in g.window_starts(ts):
                max_ts = start + size - 1
                if min(max_ts + lateness, MAX_TIMESTAMP) <= w:
                    continue  # the window is late
                skipped = False
                i = at.get((code, start))
                if i is None:
                    i = at[code, start] = len(win["code"])
                    for column, value in (
                        ("code", code),
                        ("kg", rows["kg"][j]),
                        ("start", start),
                        ("count", 0),
                        ("pending", False),
                        ("reg_r", _NO_REG),
                        ("reg_s", _NO_REG),
                        ("reg_seq", _NO_REG),
                        ("first_row", rid),
                        ("first_r", r),
                        ("first_s", s),
                        ("first_seq", seq),
                        ("ext_row", rid),
                        ("ext_r", r),
                        ("ext_s", s),
                        ("ext_seq", seq),
                        ("clean_seq", NO_TIMER),
                    ):
                        win[column].append(value)
                    for name in names:
                        win[name].append(rows[name][j])
                else:
                    here = (r, s, seq)
                    if here < (win["first_r"][i], win["first_s"][i], win["first_seq"][i]):
                        win["first_row"][i] = rid
                        win["first_r"][i], win["first_s"][i], win["first_seq"][i] = here
                    if by is not None:
                        v, best = rows[by_column][j], win[by_column][i]
                        held = (win["ext_r"][i], win["ext_s"][i], win["ext_seq"][i])
                        if (v < best if by == "min" else v > best) or (v == best and here < held):
                            win["ext_row"][i] = rid
                            win["ext_r"][i], win["ext_s"][i], win["ext_seq"][i] = here
                    for nn, source, ops in updates:
                        if nn is not None:
                            if not rows[nn][j]:
                                continue  # a null value: aggregates skip it
                            win[nn][i] += 1
                        if source is not None:
                            v = rows[source][j]
                            for name, op in ops:
                                win[name][i] = op(win[name][i], v)
                win["count"][i] += 1
                if max_ts <= w:  # EventTimeTrigger fires on arrival
                    for k in win:
                        fired[k].append(win[k][i])
                    positions.append([r, _READ, s, seq, _RECORD, _RECORD_PHASE, s, out, PAD])
                    out += 1
                elif not win["pending"][i] or (r, s, seq) < (
                    win["reg_r"][i],
                    win["reg_s"][i],
                    win["reg_seq"][i],
                ):
                    win["pending"][i] = True
                    win["reg_r"][i], win["reg_s"][i], win["reg_seq"][i] = r, s, seq
            if skipped and ts + lateness <= w:
                if plan.late_side_output:
                    self.late_side += 1
                    self.late.append(
                        ([r, _READ, s, seq, _RECORD, _RECORD_PHASE, s, 0, PAD], rows["row"][j])
                    )
                else:
                    self.late_dropped += 1
        cols = self.windows.cols
        self.windows.cols = {k: np.asarray(win[k], dtype=cols[k].dtype) for k in cols}
        if positions:
            chunk = {k: np.asarray(fired[k], dtype=cols[k].dtype) for k in cols}
            chunk["position"] = np.asarray(positions, dtype=np.int64)
            self.fired.append(chunk)

    # ------------------------------------------------------------------ watermarks

    def _watermarks(self, marks: dict[str, npt.NDArray[np.generic]]) -> None:
        for r, phase, s, seq, value in zip(
            marks["r"].tolist(),
            marks["phase"].tolist(),
            marks["s"].tolist(),
            marks["seq"].tolist(),
            marks["time"].tolist(),
            strict=True,
        ):
            if value > self.channels[s]:
                self.channels[s] = value
            combined = int(self.channels.min())
            if combined > self.watermark:
                self.watermark = combined
                self._advance(combined, [r, phase, s, seq, _WM_MARK, 0])

    def _advance(self, w: int, position: list[int]) -> None:
        """The operator watermark rises to ``w`` at ``position``: due timers fire."""
        cols = self.windows.cols
        if not len(cols["code"]):
            return
        size, lateness = self.plan.geometry.size, self.plan.lateness
        max_ts = cols["start"].astype(np.int64) + (size - 1)
        due = np.flatnonzero(cols["pending"].astype(np.bool_) & (max_ts <= w))
        if len(due):
            kg = cols["kg"][due]
            order = due[
                np.lexsort(
                    (cols["reg_seq"][due], cols["reg_s"][due], cols["reg_r"][due], max_ts[due], kg)
                )
            ]
            kg = cols["kg"][order]
            heads = np.flatnonzero(np.r_[True, kg[1:] != kg[:-1]])
            n = np.arange(len(order)) - np.repeat(heads, np.diff(np.r_[heads, len(order)]))
            pos = np.empty((len(order), POSITION_WIDTH), np.int64)
            pos[:, :6] = position
            pos[:, 6] = _TIMERS
            pos[:, 7] = kg
            pos[:, 8] = n
            chunk = {k: v[order] for k, v in cols.items()}
            chunk["position"] = pos
            self.fired.append(chunk)
            cols["pending"][due] = False
            self.timers_fired += len(due)
        cleanup = np.minimum(max_ts, MAX_TIMESTAMP - lateness) + lateness
        gone = (cleanup <= w) & (cleanup < MAX_TIMESTAMP)
        if lateness:
            self.timers_fired += int(gone.sum())
        if gone.any():
            self.windows.take(~gone)

    # ------------------------------------------------------------------ output

    def state(self) -> EngineState:
        """Where this run leaves the subtask (after :meth:`run`): its open windows, the
        channels' and the operator's watermarks."""
        cols = {k: v for k, v in self.windows.cols.items() if k != "code"}
        keys = self.uniques.take(pa.array(self.windows.cols["code"], pa.int64()))
        rows = None
        if self.plan.records:  # each open window's record, which its row ids now index
            rows = self._records(self.partials, self.raws, self.windows.cols)
            cols["first_row"] = cols["ext_row"] = np.arange(len(keys), dtype=np.int64)
        return EngineState(keys, cols, self.channels.copy(), self.watermark, rows)

    def _output(self, partials: pa.Table, raws: pa.Table) -> EngineOutput:
        names = ["code", "start", "count", "first_row", "ext_row"] + [
            field_column(what, i) for i, what in self.plan.held
        ]
        if self.fired:
            cols = {k: np.concatenate([c[k] for c in self.fired]) for k in [*names, "position"]}
        else:
            cols = {k: self.windows.cols[k][:0] for k in names}
            cols["position"] = np.zeros((0, POSITION_WIDTH), np.int64)
        fired = {"key": self.uniques.take(pa.array(cols["code"]))}
        for k in names[1:]:
            fired[k] = pa.array(cols[k])
        late_index = pa.array([row for _, row in self.late], pa.int64())
        row_names = [c for c in raws.column_names if c.startswith(row_column(""))]
        late_rows = raws.select(row_names).take(late_index)
        late_positions = np.asarray([p for p, _ in self.late], dtype=np.int64).reshape(
            -1, POSITION_WIDTH
        )
        return EngineOutput(
            pa.table(fired),
            cols["position"],
            late_rows,
            late_positions,
            {
                "late_records_dropped": self.late_dropped,
                "late_records_side_output": self.late_side,
                "timers_fired": self.timers_fired,
            },
            self._records(partials, raws, cols) if self.plan.records else None,
        )

    def _records(
        self, partials: pa.Table, raws: pa.Table, cols: dict[str, npt.NDArray[np.generic]]
    ) -> pa.Table:
        """Flink's record of each fired window, in the source's columns (named with
        :func:`row_column`): its first record with the field aggregated, or the record holding
        the extreme (``min_by``/``max_by``). Partials do not carry the key (nor the field
        replaced by its aggregate): those come from the window."""
        plan = self.plan
        names = [row_column(c) for c in plan.columns]
        tables = [partials.select(names), raws.select(names)]
        if self.restored is not None:
            tables.insert(0, self.restored.select(names).cast(tables[0].schema))
        rows = pa.concat_tables(tables)
        taken = rows.take(pa.array(cols["ext_row" if plan.by is not None else "first_row"]))
        replaced = {plan.key_name: self.uniques.take(pa.array(cols["code"]))}
        if plan.by is None:
            replaced[plan.field_name] = pa.array(cols[field_column(plan.aggregate, 0)])
        for name, values in replaced.items():
            at = names.index(row_column(name))
            taken = taken.set_column(at, names[at], values.cast(taken.schema.field(at).type))
        return taken


def _int_column(table: pa.Table, name: str) -> I64:
    column = pc.fill_null(table.column(name), 0).cast(pa.int64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _raw_updates(
    plan: EnginePlan,
) -> list[tuple[str | None, str | None, list[tuple[str, _Update]]]]:
    """Per field, how a raw record updates a window: ``(nn, source, [(column, op)])``, the
    count of values that are not null (if held), the raw column holding the value and the
    aggregate columns it updates."""
    out = []
    for i in range(plan.fields):
        held = [what for j, what in plan.held if j == i]
        nn = field_column("nn", i) if "nn" in held else None
        ops = [(field_column(w, i), _UPDATE[w]) for w in held if w != "nn"]
        out.append((nn, ops[0][0] if ops else None, ops))
    return out


def _columns(table: pa.Table, held: list[tuple[int, str]]) -> dict[str, npt.NDArray[np.generic]]:
    names = ["kg", "r", "phase", "s", "seq", "time", "count"] + [
        field_column(what, i) for i, what in held
    ]
    return {
        name: np.asarray(table.column(name).to_numpy(zero_copy_only=False))
        if name not in ("kg", "r", "phase", "s", "seq", "time", "count")
        else np.asarray(
            pc.cast(table.column(name), pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64
        )
        for name in names
    }


def _by_round(cols: dict[str, npt.NDArray[np.generic]], order_by: tuple[str, ...]) -> _RoundSlicer:
    return _RoundSlicer(cols, order_by)


class _RoundSlicer:
    """The rows of one round at a time, in ``order_by`` order."""

    def __init__(self, cols: dict[str, npt.NDArray[np.generic]], order_by: tuple[str, ...]) -> None:
        order = np.lexsort(tuple(cols[k] for k in reversed(order_by)))
        self.cols = {k: v[order] for k, v in cols.items()}
        self.rounds = self.cols["r"]

    def __call__(self, rnd: int) -> dict[str, npt.NDArray[np.generic]]:
        lo, hi = np.searchsorted(self.rounds, [rnd, rnd + 1])
        return {k: v[lo:hi] for k, v in self.cols.items()}
