"""The source side of a columnar window aggregate: one split's rows, round by round, into
partial aggregates, raw records and watermarks.

A split reads its rows in rounds (``watermark_every`` records, or all of them in round 0) and
ends each round with its periodic watermark (bounded out-of-orderness: ``max_ts - bound - 1``),
or with ``MAX`` after its last record, exactly as
:class:`~sparktide.runtime.execution.driver.SplitSession` runs a split. While round ``r`` is read,
the operator's watermark is at most the split's own watermark after round ``r - 1``
(``w_prev``: the combined watermark is a minimum over splits). A record whose earliest window
ends after ``w_prev`` (its ``max_timestamp > w_prev``) can be neither late nor fire a window on
arrival: such **normal** records are aggregated here, per round, key and pane, before the
shuffle (a pane is the whole window for tumbling windows). Every other record travels **raw**
and the subtask applies the window operator's per-record rules to it with the exact watermark.

Each partial carries the position ``(round, split, seq)`` of its first record: that record
registered the window's timer, which orders firings of equal time (insertion order).

What a split ships is one Arrow table per piece in the layout of :data:`SHIPPED` (plus the key
and field columns, typed as in the source): ``kind`` says which rows are partials, raw records
or watermarks.

>>> import pyarrow as pa
>>> from sparktide.runtime.columnar.windows import WindowGeometry
>>> plan = SplitPlan(WindowGeometry(10, 10, 0), "k", "ts", (), ("k", "ts"), 0, None, 1, 128)
>>> agg = SplitAggregator(plan, split=0)
>>> t = pa.table({"k": [1, 1, 2], "ts": [3, 5, 14]})
>>> out = pa.concat_tables([*agg.feed(t), agg.finish()])
>>> out.select(["kind", "r", "phase", "seq", "time", "count", "key"]).to_pylist()[:2]
[{'kind': 0, 'r': 0, 'phase': 0, 'seq': 1, 'time': 0, 'count': 2, 'key': 1}, \
{'kind': 0, 'r': 0, 'phase': 0, 'seq': 3, 'time': 10, 'count': 1, 'key': 2}]
>>> import pyarrow.compute as pc
>>> out.filter(pc.equal(out["kind"], 2)).select(["r", "phase", "seq", "time"]).to_pylist()
[{'r': 0, 'phase': 2, 'seq': 3, 'time': 9223372036854775807}]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.runtime.columnar.groups import Groups, Numbers
from sparktide.runtime.columnar.keygroups import key_groups
from sparktide.runtime.columnar.windows import WindowGeometry
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP
from sparktide.runtime.execution.protocol import RoundPhase
from sparktide.runtime.null_keys import null_key_column_error

__all__ = [
    "AGGREGATES",
    "SHIPPED",
    "Kind",
    "SplitAggregator",
    "SplitPlan",
    "SplitResume",
    "extremes",
    "field_column",
    "key_codes",
    "null_field_error",
    "numbers",
    "row_column",
]

I64 = npt.NDArray[np.int64]

_DENSE_KEYS = 4
"""Integer keys spanning at most this many values per row are coded by subtraction."""

PIECE = 1 << 20
"""Rows aggregated at a time when a round has no limit (bounds a worker's memory)."""


class Kind(IntEnum):
    """What a shipped row is."""

    PARTIAL = 0  #: the aggregate of a round's normal records of one key and pane
    RAW = 1  #: one record the subtask processes by itself
    WATERMARK = 2  #: a split's watermark (periodic, or MAX at its end)


SHIPPED = pa.schema(
    [
        ("kind", pa.int8()),
        ("target", pa.int32()),  # the subtask (watermarks: one row per subtask)
        ("kg", pa.int32()),
        ("r", pa.int64()),  # round
        ("phase", pa.int8()),  # RoundPhase: READ for records, PERIODIC / END_OF_INPUT
        ("s", pa.int32()),  # split
        ("seq", pa.int64()),  # the (first) record's sequence number; watermark: records read
        ("time", pa.int64()),  # partial: pane start; raw: timestamp; watermark: its value
        ("count", pa.int64()),
    ]
)
"""The fixed columns of what a split ships; then ``key``, per aggregated field ``i`` the columns
``field_column("nn" | "sum" | "min" | "max", i)`` (``nn``: values that are not null), and
for raw records the source row (``row_column``)."""


AGGREGATES = ("nn", "sum", "min", "max")
"""What a partial can hold per aggregated field, in this order: how many values are not null,
their sum, minimum and maximum. A plan names the ones its aggregates read
(:attr:`SplitPlan.aggregates`); the others are neither computed nor shipped."""


def field_column(what: str, i: int) -> str:
    """The shipped column of aggregate ``what`` over aggregated field ``i``."""
    return f"{what}_{i}"


def row_column(name: str) -> str:
    """The shipped column of a raw record's source column ``name``."""
    return f"row_{name}"


@dataclass(frozen=True)
class SplitPlan:
    """What a split needs: the windows, the source columns (key, timestamp, aggregated fields,
    all of them), the watermark bound (``None``: no watermarks), ``watermark_every`` and the
    window stage's parallelism and max parallelism."""

    geometry: WindowGeometry
    key: str
    timestamp: str
    fields: tuple[str, ...]
    columns: tuple[str, ...]
    bound: int | None
    every: int | None
    parallelism: int
    max_parallelism: int
    piece: int = PIECE
    # Flink's record (sum/min/max/min_by/max_by over fields[0]): partials carry the source
    # row of their first record, or with ``by`` ("min" / "max") of their extreme record
    records: bool = False
    by: str | None = None
    # per aggregated field, the members of AGGREGATES it needs (empty: all of them)
    aggregates: tuple[tuple[str, ...], ...] = ()
    source: str = "from_dataframe"  # the method that made the source (errors name it)
    operator: str = "Window"  # the window operator's name (a null key's error names it)

    def field_aggregates(self, i: int) -> tuple[str, ...]:
        """What field ``i``'s partials hold (see :data:`AGGREGATES`)."""
        return self.aggregates[i] if self.aggregates else AGGREGATES

    @property
    def record_columns(self) -> tuple[str, ...]:
        """The source columns a partial of Flink's record carries: all but the key (the
        ``key`` column has it) and, unless the record is an extreme's, the aggregated field
        (its aggregate replaces it)."""
        dropped = {self.key} if self.by is not None else {self.key, self.fields[0]}
        return tuple(c for c in self.columns if c not in dropped)


@dataclass(frozen=True)
class SplitResume:
    """Where a split continues in a streaming run's next micro-batch: the records it has read
    (the last record's sequence number), its generator's highest timestamp (bounded
    out-of-orderness) and the watermark it emitted last."""

    read: int
    max_ts: int
    emitted: int


def timestamps_of(
    column: pa.ChunkedArray | pa.Array, name: str, source: str = "from_dataframe"
) -> I64:
    """Epoch milliseconds of an integer or timestamp column (nulls are an error, as the
    per-record timestamp assigner raises; ``source``: the method the user called)."""
    if column.null_count:
        raise ValueError(
            f"{source}: the timestamp column {name!r} holds null; filter those rows out or "
            f"fill them (e.g. df.na.drop(subset=[{name!r}]))"
        )
    t = column.type
    if pa.types.is_timestamp(t):
        raw = pc.cast(column, pa.timestamp(t.unit, t.tz)).cast(pa.int64())
        per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        values = np.asarray(raw.to_numpy(zero_copy_only=False), dtype=np.int64)
        return values * 1000 if per_ms is None else values // per_ms
    if pa.types.is_integer(t):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
    raise TypeError(
        f"{source}: the timestamp column {name!r} must hold integers (epoch milliseconds) "
        f"or timestamps, got {t}"
    )


def key_codes(column: pa.ChunkedArray) -> tuple[I64, pa.Array]:
    """``(codes, uniques)`` of a key column (nulls are a value of their own): ``uniques`` holds
    every key (a dense range of integer keys: every value of the range) and ``codes`` indexes
    it.

    >>> codes, uniques = key_codes(pa.chunked_array([[12, 10, 12]]))
    >>> codes.tolist(), uniques.to_pylist()
    ([2, 0, 2], [10, 11, 12])
    """
    if pa.types.is_integer(column.type) and not column.null_count:
        import pandas as pd

        values = np.asarray(column.to_numpy(), dtype=np.int64)
        if len(values):
            low, high = int(values.min()), int(values.max())
            if high - low <= _DENSE_KEYS * len(values):  # codes by subtraction, no hashing
                return values - low, pa.array(np.arange(low, high + 1), column.type)
        codes, uniques = pd.factorize(values)
        return codes.astype(np.int64), pa.array(uniques, column.type)
    encoded = pc.dictionary_encode(column, null_encoding="encode").combine_chunks()
    return (
        np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64),
        encoded.dictionary,
    )


def unique_key_groups(uniques: pa.Array, max_parallelism: int) -> I64:
    """The key group of each distinct key (int64 keys vectorized, others one hash each)."""
    if pa.types.is_integer(uniques.type) and not uniques.null_count:
        return key_groups(np.asarray(uniques.to_numpy(), dtype=np.int64), max_parallelism)
    return key_groups(uniques.to_pylist(), max_parallelism)


class SplitAggregator:
    """One split's rounds (see the module docstring): :meth:`feed` it the split's rows in
    order, then :meth:`finish`."""

    def __init__(
        self, plan: SplitPlan, split: int, resume: SplitResume | None = None, round_: int = 0
    ) -> None:
        self.plan = plan
        self.split = split
        self.read = 0  # records read so far (the last record's seq)
        self.max_ts = MIN_TIMESTAMP if plan.bound is None else MIN_TIMESTAMP + plan.bound + 1
        self.emitted = MIN_TIMESTAMP  # the split's watermark (the last one emitted)
        if resume is not None:  # a streaming run's next micro-batch
            self.read, self.max_ts, self.emitted = resume.read, resume.max_ts, resume.emitted
        self.round = round_  # the round of rows read without a limit (``every`` is None)
        self.first_read = self.read
        self.watermarks: list[tuple[int, int, int, int]] = []  # (round, phase, seq, value)
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    # ------------------------------------------------------------------ rounds

    def feed(self, table: pa.Table) -> Iterator[pa.Table]:
        """Take the split's next rows; yields what is ready to ship."""
        every = self.plan.every
        limit = self.plan.piece if every is None else every
        while table.num_rows:
            if every is None:
                room = limit - self.pending_rows
            else:
                room = every - (self.read + self.pending_rows) % every
            head, table = table.slice(0, room), table.slice(room)
            self.pending.append(head)
            self.pending_rows += head.num_rows
            if every is None:
                if self.pending_rows >= limit:
                    yield self._piece(self.round)
            elif (self.read + self.pending_rows) % every == 0:
                r = (self.read + self.pending_rows) // every - 1
                yield self._piece(r)
                self._periodic(r)  # a full round: more records may follow

    def finish(self) -> pa.Table:
        """The split's last rows and its watermarks (the end of input: ``MAX``)."""
        every = self.plan.every
        out = []
        end_round = 0 if every is None else self.read // every
        if self.pending_rows:
            end_round = 0 if every is None else (self.read + self.pending_rows) // every
            out.append(self._piece(end_round))
        self.watermarks.append((end_round, int(RoundPhase.END_OF_INPUT), self.read, MAX_TIMESTAMP))
        out.append(self._watermark_rows())
        return pa.concat_tables(out, promote_options="default")

    def end_round(self) -> pa.Table:
        """A streaming micro-batch's end (its one round, :attr:`round`): the last rows and
        the periodic watermark, if it rose (the input of a stream never ends: no ``MAX``)."""
        out = []
        if self.pending_rows:
            out.append(self._piece(self.round))
        self._periodic(self.round)
        out.append(self._watermark_rows())
        self.watermarks = []
        return pa.concat_tables(out, promote_options="default")

    @property
    def resume(self) -> SplitResume:
        """Where the split stands (what the next micro-batch continues from)."""
        return SplitResume(self.read, self.max_ts, self.emitted)

    @property
    def rounds(self) -> int:
        """Rounds the split ran (after :meth:`finish`)."""
        return self.watermarks[-1][0] + 1

    def _periodic(self, r: int) -> None:
        bound = self.plan.bound
        if bound is None:
            return
        value = self.max_ts - bound - 1
        if value > self.emitted:
            self.emitted = value
            self.watermarks.append((r, int(RoundPhase.PERIODIC), self.read, value))

    def _watermark_rows(self) -> pa.Table:
        p = self.plan.parallelism
        wms = self.watermarks
        n = len(wms) * p
        columns: dict[str, pa.Array] = {
            "kind": pa.array(np.full(n, Kind.WATERMARK, np.int8)),
            "target": pa.array(np.tile(np.arange(p, dtype=np.int32), len(wms))),
            "kg": pa.array(np.zeros(n, np.int32)),
            "r": pa.array(np.repeat([w[0] for w in wms], p).astype(np.int64)),
            "phase": pa.array(np.repeat([w[1] for w in wms], p).astype(np.int8)),
            "s": pa.array(np.full(n, self.split, np.int32)),
            "seq": pa.array(np.repeat([w[2] for w in wms], p).astype(np.int64)),
            "time": pa.array(np.repeat(np.array([w[3] for w in wms], np.int64), p)),
            "count": pa.array(np.zeros(n, np.int64)),
        }
        return pa.table(columns, schema=SHIPPED)

    # ------------------------------------------------------------------ one piece of a round

    def _piece(self, r: int) -> pa.Table:
        """Aggregate the pending rows, all read in round ``r``."""
        table = pa.concat_tables(self.pending).combine_chunks()
        self.pending = []
        n = self.pending_rows
        self.pending_rows = 0
        first_seq = self.read + 1
        self.read += n
        plan = self.plan
        ts = timestamps_of(table.column(plan.timestamp), plan.timestamp, plan.source)
        w_prev = self.emitted  # the split's watermark after round r - 1
        if len(ts) and plan.bound is not None:
            self.max_ts = max(self.max_ts, int(ts.max()))
        if plan.records and table.column(plan.fields[0]).null_count:
            raise null_field_error(plan.fields[0], "the field aggregate")
        keys = table.column(plan.key)
        if keys.null_count:  # Flink refuses a null key
            first = pc.index(keys.is_null(), True).as_py()
            record = table.slice(first, 1).to_pylist()[0]
            raise null_key_column_error(plan.key, plan.operator, record)
        codes, uniques = key_codes(keys)
        kg_of_code = unique_key_groups(uniques, plan.max_parallelism)
        earliest = plan.geometry.earliest_max_timestamps
        if not n or int(earliest(ts[ts.argmin() : ts.argmin() + 1])[0]) > w_prev:
            # the earliest window grows with the timestamp: every record is normal
            return self._partials(table, r, ts, None, codes, uniques, kg_of_code, first_seq)
        normal = earliest(ts) > w_prev
        parts = [self._partials(table, r, ts, normal, codes, uniques, kg_of_code, first_seq)]
        if not normal.all():
            seq = np.arange(first_seq, first_seq + n, dtype=np.int64)
            parts.append(self._raws(table, r, ts, ~normal, codes, kg_of_code, seq))
        return pa.concat_tables(parts, promote_options="default")

    def _fixed(
        self, kind: Kind, kg: I64, r: int, seq: I64, time: I64, count: I64
    ) -> dict[str, pa.Array]:
        plan = self.plan
        target = kg * plan.parallelism // plan.max_parallelism
        m = len(kg)
        return {
            "kind": pa.array(np.full(m, kind, np.int8)),
            "target": pa.array(target.astype(np.int32)),
            "kg": pa.array(kg.astype(np.int32)),
            "r": pa.array(np.full(m, r, np.int64)),
            "phase": pa.array(np.zeros(m, np.int8)),
            "s": pa.array(np.full(m, self.split, np.int32)),
            "seq": pa.array(seq),
            "time": pa.array(time),
            "count": pa.array(count),
        }

    def _partials(
        self,
        table: pa.Table,
        r: int,
        ts: I64,
        normal: npt.NDArray[np.bool_] | None,
        codes: I64,
        uniques: pa.Array,
        kg_of_code: I64,
        first_seq: int,
    ) -> pa.Table:
        """The partials of the ``normal`` rows (``None``: all rows; the common case, with no
        copies of the columns)."""
        plan = self.plan
        g = plan.geometry
        index = None if normal is None else np.flatnonzero(normal)
        stamps, keys = (ts, codes) if index is None else (ts[index], codes[index])
        panes = (stamps - g.offset) // g.pane  # each row's pane, numbered
        if len(panes):
            lo = int(panes.min())
            width = int(panes.max()) - lo + 1
            groups = Groups.of(keys * width + (panes - lo))
        else:
            groups = Groups.of(keys)
        first = groups.first if index is None else index[groups.first]  # lowest seq
        columns = self._fixed(
            Kind.PARTIAL,
            kg_of_code[codes[first]],
            r,
            first + first_seq,
            panes[groups.first] * g.pane + g.offset,
            groups.count,
        )
        columns["key"] = uniques.take(pa.array(codes[first]))
        for i, name in enumerate(plan.fields):
            values, valid = numbers(table.column(name), name)
            if index is not None:
                values, valid = values[index], valid[index]
            nulls = not valid.all()
            low, high = extremes(values.dtype)
            for what in plan.field_aggregates(i):
                if what == "nn":
                    column = groups.sum(valid.astype(np.int64)) if nulls else groups.count
                elif what == "sum":
                    column = groups.sum(np.where(valid, values, 0) if nulls else values)
                elif what == "min":
                    column = groups.min(np.where(valid, values, low) if nulls else values)
                else:
                    column = groups.max(np.where(valid, values, high) if nulls else values)
                columns[field_column(what, i)] = pa.array(column)
        if plan.records:
            rows = first
            if plan.by is not None:
                members = np.arange(len(ts), dtype=np.int64) if index is None else index
                rows = members[self._extremes(table, groups, members)]
                columns["ext_seq"] = pa.array(rows + first_seq)
            taken = table.select(list(plan.record_columns)).take(pa.array(rows))
            for name in plan.record_columns:
                columns[row_column(name)] = taken.column(name).combine_chunks()
        return pa.table(columns)

    def _extremes(self, table: pa.Table, groups: Groups, index: I64) -> I64:
        """Per group, the (first) member holding the group's extreme value of the field."""
        name = self.plan.fields[0]
        values, valid = numbers(table.column(name), name)
        values = values[index]
        if not valid.all():
            raise null_field_error(name, f"{self.plan.by}_by")
        best = groups.min(values) if self.plan.by == "min" else groups.max(values)
        holds = np.flatnonzero(values == best[groups.ids])
        out = np.full(len(groups), len(index), np.int64)
        np.minimum.at(out, groups.ids[holds], holds)
        return out

    def _raws(
        self,
        table: pa.Table,
        r: int,
        ts: I64,
        raw: npt.NDArray[np.bool_],
        codes: I64,
        kg_of_code: I64,
        seq: I64,
    ) -> pa.Table:
        plan = self.plan
        index = np.flatnonzero(raw)
        columns = self._fixed(
            Kind.RAW,
            kg_of_code[codes[index]],
            r,
            seq[index],
            ts[index],
            np.ones(len(index), np.int64),
        )
        rows = table.take(pa.array(index))
        columns["key"] = rows.column(plan.key).combine_chunks()
        for i, name in enumerate(plan.fields):
            values, valid = numbers(rows.column(name), name)
            low, high = extremes(values.dtype)
            fill = {"sum": 0, "min": low, "max": high}
            for what in plan.field_aggregates(i):
                if what == "nn":
                    columns[field_column(what, i)] = pa.array(valid.astype(np.int64))
                else:
                    columns[field_column(what, i)] = pa.array(np.where(valid, values, fill[what]))
        if plan.records:
            columns["ext_seq"] = pa.array(seq[index])
        for name in plan.columns:
            columns[row_column(name)] = rows.column(name).combine_chunks()
        return pa.table(columns)


def numbers(column: pa.ChunkedArray | pa.Array, name: str) -> tuple[Numbers, npt.NDArray[np.bool_]]:
    """``(values, valid)``: an aggregated column as int64 (integers) or float64 (floating
    point) values, nulls as 0, and which values are not null (aggregates skip nulls)."""
    t = column.type
    if pa.types.is_integer(t):
        dtype: type[np.int64] | type[np.float64] = np.int64
    elif pa.types.is_floating(t):
        dtype = np.float64
    else:
        raise TypeError(f"the aggregated column {name!r} must be numeric, got {t}")
    if not column.null_count:  # no copy of an int64 or double column
        wanted = pa.int64() if dtype is np.int64 else pa.float64()
        whole = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        plain = np.asarray(whole.cast(wanted).to_numpy(zero_copy_only=False), dtype=dtype)
        return cast("Numbers", plain), np.ones(len(plain), np.bool_)
    valid = np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=np.bool_)
    filled = pc.fill_null(column, 0).cast(pa.int64() if dtype is np.int64 else pa.float64())
    values = cast("Numbers", np.asarray(filled.to_numpy(zero_copy_only=False), dtype=dtype))
    return values, valid


def null_field_error(name: str, kind: str) -> TypeError:
    """Flink's field aggregates cannot aggregate a null (the per-record reduce fails too)."""
    return TypeError(
        f"{kind}({name!r}): the field {name!r} holds null, which {kind} cannot aggregate; "
        f"filter those rows out or fill them (e.g. df.na.fill(0, subset=[{name!r}])), or use "
        "agg(...), whose aggregates skip nulls"
    )


def extremes(dtype: np.dtype[np.generic]) -> tuple[int | float, int | float]:
    """``(top, bottom)``: the start values of a minimum and a maximum of ``dtype``."""
    if dtype.kind == "f":
        return np.inf, -np.inf
    info = np.iinfo(np.int64)
    return int(info.max), int(info.min)
