"""A columnar window aggregate's state in the general ``WindowOperator``'s keyed form.

Between the micro-batches of a streaming run, a subtask's open windows
(:class:`~sparktide.runtime.columnar.engine.EngineState`) are kept exactly as the per-record
``WindowOperator`` of the same aggregate keeps them, so a checkpoint written by either path
restores with the other, rescales by key-group range and is read by the same checkpoint code:

* the window contents, state ``"window-contents"`` (aggregating): per key group, entries
  ``(key, TimeWindow(start, end), accumulator)`` with :class:`~sparktide.runtime.operators.
  window_aggregates.NamedAggregatesFunction`'s accumulator ``[records, slot, ...]``;
* the event-time timers of service ``"window-timers"``: the trigger timer at the window's
  ``max_timestamp`` while it has not fired, and with allowed lateness the cleanup timer at
  ``max_timestamp + lateness``, each ``(timestamp, seq, key, window, key_group)``. Restored
  timers keep their sequence numbers; timers registered in the batch get the next ones, in the
  order the per-record operator registers them (by the position of the record that did, a
  record's windows latest first, its trigger timer before its cleanup timer).

>>> import numpy as np, pyarrow as pa
>>> from sparktide.core.window.aggregates import Agg, named_aggregates
>>> aggs = named_aggregates({"n": Agg.count(), "mean": Agg.avg("v")})
>>> layout = AccumulatorLayout.of(aggs, (-1, 0), 1)
>>> layout.accumulators(np.array([3]), {"nn_0": np.array([2]), "sum_0": np.array([5]),
...     "min_0": np.array([1]), "max_0": np.array([4])})
[[3, 5, 2]]
>>> cols = layout.columns([[3, 5, 2], [1, None, 0]], [np.dtype(np.int64)])
>>> cols["count"].tolist(), cols["nn_0"].tolist(), cols["sum_0"].tolist()
([3, 1], [2, 0], [5, 0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sparktide.core.window.aggregates import AggregateKind, NamedAggregate, read_field
from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.columnar.engine import (
    NO_REGISTRATION,
    NO_TIMER,
    RESTORED_ROUND,
    WINDOW_COLUMNS,
    EngineState,
)
from sparktide.runtime.columnar.split import extremes, field_column
from sparktide.runtime.elements import MAX_TIMESTAMP
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.timers.manager import TimerSnapshot

__all__ = [
    "CONTENTS",
    "TIMERS",
    "AccumulatorLayout",
    "RecordLayout",
    "RestoredWindows",
    "restore_windows",
    "snapshot_windows",
]

CONTENTS = "window-contents"
"""The window operator's contents state (``WINDOW_CONTENTS``)."""
TIMERS = "window-timers"
"""The window operator's timer service (``WINDOW_TIMERS``)."""

_INDEXES = tuple(c for c in WINDOW_COLUMNS if c not in ("code", "pending"))


@dataclass(frozen=True)
class AccumulatorLayout:
    """Where :class:`~sparktide.runtime.operators.window_aggregates.NamedAggregatesFunction`
    keeps each named aggregate: ``kinds[j]`` over engine field ``fields[j]`` (``-1``: count)
    at accumulator slot ``slots[j]`` (avg: sum there, count of values in the next one)."""

    kinds: tuple[AggregateKind, ...]
    fields: tuple[int, ...]
    slots: tuple[int, ...]
    width: int
    num_fields: int

    @classmethod
    def of(
        cls, aggregates: Sequence[NamedAggregate], fields: Sequence[int], num_fields: int
    ) -> AccumulatorLayout:
        slots: list[int] = []
        slot = 1
        for a in aggregates:
            if a.field is None:
                slots.append(0)
                continue
            slots.append(slot)
            slot += 2 if a.kind is AggregateKind.AVG else 1
        return cls(tuple(a.kind for a in aggregates), tuple(fields), tuple(slots), slot, num_fields)

    def _over_fields(self) -> list[tuple[AggregateKind, int, int]]:
        return [
            (k, f, s)
            for k, f, s in zip(self.kinds, self.fields, self.slots, strict=True)
            if k is not AggregateKind.COUNT
        ]

    def accumulators(
        self, count: npt.NDArray[np.int64], cols: dict[str, npt.NDArray[np.generic]]
    ) -> list[list[object]]:
        """The accumulators of windows with ``count`` records and the engine's aggregate
        columns ``cols``."""
        accs: list[list[object]] = [[c] + [None] * (self.width - 1) for c in count.tolist()]
        for kind, f, slot in self._over_fields():
            nn = cols[field_column("nn", f)].tolist()
            what = "sum" if kind in (AggregateKind.SUM, AggregateKind.AVG) else kind.value
            values = cols[field_column(what, f)].tolist()
            for acc, k, v in zip(accs, nn, values, strict=True):
                acc[slot] = v if k else None
                if kind is AggregateKind.AVG:
                    acc[slot + 1] = k
        return accs

    def columns(
        self, accs: Sequence[Sequence[object]], dtypes: Sequence[np.dtype[np.generic]]
    ) -> dict[str, npt.NDArray[np.generic]]:
        """``count`` and the engine's aggregate columns of accumulators ``accs`` (``dtypes``:
        each field's). A field's count of values is exact where an ``avg`` keeps it, else
        it only says whether the window has a value (all the other aggregates need)."""
        n = len(accs)
        out: dict[str, npt.NDArray[np.generic]] = {
            "count": np.asarray([a[0] for a in accs], np.int64).reshape(n)
        }
        over = self._over_fields()
        for f in range(self.num_fields):
            dtype = dtypes[f]
            top, bottom = extremes(dtype)
            nn: list[int] = [0] * n
            exact: list[int] | None = None
            filled: dict[str, list[object]] = {
                "sum": [0] * n,
                "min": [top] * n,
                "max": [bottom] * n,
            }
            for kind, field, slot in over:
                if field != f:
                    continue
                values = [a[slot] for a in accs]
                nn = [1 if k or v is not None else 0 for k, v in zip(nn, values, strict=True)]
                what = "sum" if kind in (AggregateKind.SUM, AggregateKind.AVG) else kind.value
                filled[what] = [
                    old if v is None else v for old, v in zip(filled[what], values, strict=True)
                ]
                if kind is AggregateKind.AVG:
                    exact = [int(a[slot + 1]) for a in accs]  # type: ignore[call-overload]
            out[field_column("nn", f)] = np.asarray(exact if exact is not None else nn, np.int64)
            for what, values in filled.items():
                out[field_column(what, f)] = np.asarray(values, dtype).reshape(n)
        return out


@dataclass(frozen=True)
class RecordLayout:
    """Flink's record (``sum``/``min``/``max``/``min_by``/``max_by``): the window contents are
    the reduced record itself, whose field ``field`` holds the engine's aggregate ``what`` of
    engine field 0 (``sum``, ``min`` or ``max``)."""

    field: str
    what: str

    def columns(
        self, records: Sequence[object], dtypes: Sequence[np.dtype[np.generic]]
    ) -> dict[str, npt.NDArray[np.generic]]:
        n = len(records)
        values = [
            read_field(r, self.field, f"the window's record field {self.field!r}") for r in records
        ]
        return {
            "count": np.ones(n, np.int64),
            field_column("nn", 0): np.ones(n, np.int64),
            field_column(self.what, 0): np.asarray(values, dtypes[0]).reshape(n),
        }


@dataclass
class RestoredWindows:
    """A subtask's windows read from the window operator's keyed snapshot, the next timer
    sequence number (after every restored one) and, for Flink's record, each window's record
    (``first_row``/``ext_row`` index ``records``)."""

    keys: list[object]
    windows: dict[str, npt.NDArray[np.generic]]
    next_seq: int
    records: list[object]


def restore_windows(
    snapshot: KeyedOperatorSnapshot | None,
    layout: AccumulatorLayout | RecordLayout,
    size: int,
    lateness: int,
    dtypes: Sequence[np.dtype[np.generic]],
) -> RestoredWindows:
    """The open windows of ``snapshot`` (the window operator's, see the module docstring),
    as the engine's columns (without ``code``; ``keys`` in the same order)."""
    keys: list[object] = []
    rows: dict[str, list[int]] = {name: [] for name in _INDEXES}
    pending: list[bool] = []
    accs: list[Sequence[object]] = []
    top = -1
    if snapshot is not None:
        for kg in snapshot.key_groups():
            timers = snapshot.timers.get(kg, {}).get(TIMERS, ([], []))[0]
            by_window: dict[tuple[object, int], dict[int, int]] = {}
            for ts, seq, key, window, _ in timers:
                start = int(cast(TimeWindow, window).start)
                by_window.setdefault((key, start), {})[int(ts)] = int(seq)
                top = max(top, int(seq))
            for key, window, acc in snapshot.state.get(kg, {}).get(CONTENTS, []):
                if acc is None:
                    continue
                start = int(cast(TimeWindow, window).start)
                seqs = by_window.get((key, start), {})
                max_ts = start + size - 1
                trigger = seqs.get(max_ts)
                cleanup = seqs.get(min(max_ts + lateness, MAX_TIMESTAMP)) if lateness else None
                first = min(seqs.values(), default=0)
                row = len(keys)
                keys.append(key)
                accs.append(cast("Sequence[object]", acc))
                pending.append(trigger is not None)
                for name, value in (
                    ("kg", kg),
                    ("start", start),
                    ("reg_r", RESTORED_ROUND if trigger is not None else NO_REGISTRATION),
                    ("reg_s", 0 if trigger is not None else NO_REGISTRATION),
                    ("reg_seq", trigger if trigger is not None else NO_REGISTRATION),
                    ("first_row", row),
                    ("first_r", RESTORED_ROUND),
                    ("first_s", 0),
                    ("first_seq", first),
                    ("ext_row", row),
                    ("ext_r", RESTORED_ROUND),
                    ("ext_s", 0),
                    ("ext_seq", first),
                    ("clean_seq", NO_TIMER if cleanup is None else cleanup),
                ):
                    rows[name].append(value)
    windows: dict[str, npt.NDArray[np.generic]] = {
        name: np.asarray(values, np.int64) for name, values in rows.items() if name != "count"
    }
    windows["pending"] = np.asarray(pending, np.bool_)
    windows.update(layout.columns(accs, dtypes))
    return RestoredWindows(keys, windows, top + 1, list(accs))


def snapshot_windows(
    state: EngineState,
    layout: AccumulatorLayout | None,
    template: KeyedOperatorSnapshot,
    size: int,
    lateness: int,
    next_seq: int,
    records: Sequence[object] = (),
) -> KeyedOperatorSnapshot:
    """``state``'s windows as the window operator's keyed snapshot (``template``: the
    operator's own, for its name, key-group range and state descriptions): named aggregates
    as ``layout``'s accumulators, or (``layout`` None) Flink's ``records``, one per window."""
    w = state.windows
    n = len(w["start"])
    keys = state.keys.to_pylist() if isinstance(state.keys, pa.Array) else list(state.keys)
    start = np.asarray(w["start"], np.int64)
    max_ts = start + (size - 1)
    pending = np.asarray(w["pending"], np.bool_)
    reg_r = np.asarray(w["reg_r"], np.int64)
    clean_seq = np.asarray(w["clean_seq"], np.int64)
    cleanup = np.minimum(max_ts, MAX_TIMESTAMP - lateness) + lateness
    cleans = (cleanup < MAX_TIMESTAMP) if lateness else np.zeros(n, np.bool_)
    # timers registered in this run: numbered in the order the per-record operator would
    new_trigger = np.flatnonzero(pending & (reg_r != RESTORED_ROUND))
    new_cleanup = np.flatnonzero(cleans & (clean_seq == NO_TIMER))
    order_keys = [
        np.concatenate([w["reg_r"][new_trigger], w["first_r"][new_cleanup]]),
        np.concatenate([w["reg_s"][new_trigger], w["first_s"][new_cleanup]]),
        np.concatenate([w["reg_seq"][new_trigger], w["first_seq"][new_cleanup]]),
        -np.concatenate([start[new_trigger], start[new_cleanup]]),
        np.r_[np.zeros(len(new_trigger), np.int64), np.ones(len(new_cleanup), np.int64)],
    ]
    ranked = np.lexsort(tuple(reversed(order_keys))) if len(order_keys[0]) else np.zeros(0, int)
    seqs = np.empty(len(ranked), np.int64)
    seqs[ranked] = next_seq + np.arange(len(ranked), dtype=np.int64)
    trigger_seq = np.asarray(w["reg_seq"], np.int64).copy()
    trigger_seq[new_trigger] = seqs[: len(new_trigger)]
    cleanup_seq = clean_seq.copy()
    cleanup_seq[new_cleanup] = seqs[len(new_trigger) :]

    counts = np.asarray(w["count"], np.int64)
    accs = layout.accumulators(counts, w) if layout is not None else list(records)
    kgs = np.asarray(w["kg"], np.int64).tolist()
    state_data: dict[int, dict[str, list[tuple[object, object, object]]]] = {}
    timer_data: dict[int, list[tuple[int, int, object, object, int]]] = {}
    for i, (key, kg, s, acc) in enumerate(zip(keys, kgs, start.tolist(), accs, strict=True)):
        window = TimeWindow(s, s + size)
        state_data.setdefault(kg, {}).setdefault(CONTENTS, []).append((key, window, acc))
        timers = timer_data.setdefault(kg, [])
        if pending[i]:
            timers.append((int(max_ts[i]), int(trigger_seq[i]), key, window, kg))
        if cleans[i]:
            timers.append((int(cleanup[i]), int(cleanup_seq[i]), key, window, kg))
    timer_snapshot: TimerSnapshot = {
        kg: {TIMERS: (sorted(entries, key=lambda e: (e[0], e[1])), [])}
        for kg, entries in timer_data.items()
        if entries
    }
    meta = dict(template.state_meta)
    kind = "aggregating" if layout is not None else "reducing"
    meta.setdefault(CONTENTS, {"kind": kind, "ttl": False})
    return replace(template, state_meta=meta, state=state_data, timers=timer_snapshot)
