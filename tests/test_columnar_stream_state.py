"""Micro-batches of a window aggregate alternate between the per-record ``WindowOperator`` and
the columnar engine, each restoring the other's keyed snapshot: the output of every batch
equals an uninterrupted per-record run's (order per key included), and the engine's snapshot
equals the operator's (contents, timers and their order).

No Spark here: the splits and the valve are driven as a streaming run drives them (one round
per batch, records in (split, sequence) order, then each split's periodic watermark).
"""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.types import Row
from sparktide.core.output_tag import OutputTag
from sparktide.core.window.aggregates import Agg, named_aggregates
from sparktide.runtime.columnar.engine import EnginePlan, EngineState, WindowEngine
from sparktide.runtime.columnar.operator_state import (
    AccumulatorLayout,
    RecordLayout,
    restore_windows,
    snapshot_windows,
)
from sparktide.runtime.columnar.spec import (
    FieldAggregate,
    FieldKey,
    OutputForm,
    WindowAggregateSpec,
)
from sparktide.runtime.columnar.split import (
    Kind,
    SplitAggregator,
    SplitPlan,
    SplitResume,
    row_column,
)
from sparktide.runtime.columnar.windows import WindowGeometry
from sparktide.runtime.elements import MIN_TIMESTAMP
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.operators.window_aggregates import general_operator, named_row_type
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.spark.columnar_job import conform, named_rows, shipped_schema
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

BOUND = 100
SPLITS = 2
MAXP = 128
LATE = OutputTag("late")
AGGS = named_aggregates(
    {"n": Agg.count(), "total": Agg.sum("v"), "low": Agg.min("v"), "mean": Agg.avg("v")}
)
SLOTS = (-1, 0, 0, 0)


def _spec(size: int, slide: int, lateness: int, record: str | None = None) -> WindowAggregateSpec:
    """Named aggregates, or with ``record`` Flink's record of that kind over ``v``."""
    if record is not None:
        return WindowAggregateSpec(
            FieldKey("key"),
            size,
            slide,
            0,
            lateness,
            LATE,
            OutputForm.FLINK_RECORD,
            FieldAggregate(record, "v"),
            (),
            None,
        )
    return WindowAggregateSpec(
        FieldKey("key"),
        size,
        slide,
        0,
        lateness,
        LATE,
        OutputForm.NAMED_ROW,
        None,
        AGGS,
        named_row_type(AGGS, None, None),
    )


def _batches(
    seed: int, batches: int, nulls: bool = True
) -> list[list[list[tuple[str, int, int | None]]]]:
    rng = random.Random(seed)
    clock = 0
    out = []
    for _ in range(batches):
        per_split = []
        for _ in range(SPLITS):
            rows = []
            for _ in range(rng.randrange(0, 25)):
                clock += rng.randrange(0, 30)
                behind = rng.randrange(300, 1_200) if rng.random() < 0.2 else rng.randrange(120)
                v = None if nulls and rng.random() < 0.1 else rng.randrange(-20, 50)
                rows.append((f"k{rng.randrange(5)}", clock - behind, v))
            per_split.append(rows)
        out.append(per_split)
    return out


class _Run:
    """What a streaming run carries between batches, whichever path ran the last one."""

    def __init__(self, spec: WindowAggregateSpec) -> None:
        self.spec = spec
        self.snapshot = KeyedOperatorSnapshot("window", MAXP, KeyGroupRange(0, MAXP - 1))
        self.splits = [SplitResume(0, MIN_TIMESTAMP + BOUND + 1, MIN_TIMESTAMP)] * SPLITS
        self.channels = [MIN_TIMESTAMP] * SPLITS
        self.watermark = MIN_TIMESTAMP
        geometry = WindowGeometry(spec.size_ms, spec.slide_ms, 0)
        record = spec.field_aggregate
        kind = None if record is None else record.kind
        by = kind[:3] if kind is not None and kind.endswith("_by") else None
        # what the aggregates read of field v
        held = (("nn", "sum", "min"),) if kind is None else ((by or kind,),)
        self.split_plan = SplitPlan(
            geometry,
            "key",
            "ts",
            ("v",),
            ("key", "ts", "v"),
            BOUND,
            None,
            1,
            MAXP,
            records=kind is not None,
            by=by,
            aggregates=held,
        )
        self.engine_plan = EnginePlan(
            geometry,
            spec.allowed_lateness_ms,
            SPLITS,
            1,
            True,
            records=kind is not None,
            by=by,
            aggregate=kind if kind is not None and by is None else "sum",
            field_name="v",
            aggregates=held,
            key_name="key",
            columns=("key", "ts", "v"),
        )
        self.layout: AccumulatorLayout | RecordLayout = (
            AccumulatorLayout.of(AGGS, SLOTS, 1) if kind is None else RecordLayout("v", held[0][0])
        )

    # ------------------------------------------------------------------ per record

    def harness(self) -> KeyedOneInputStreamOperatorTestHarness:
        h = KeyedOneInputStreamOperatorTestHarness(
            general_operator(self.spec), lambda r: r.key, max_parallelism=MAXP
        )
        h.initialize_state(self.snapshot)
        h.open()
        if self.watermark > MIN_TIMESTAMP:
            h.process_watermark(self.watermark)  # every timer up to it has fired already
        h.clear_output()
        return h

    def general(self, h, batch) -> tuple[list[tuple], list[tuple]]:
        for rows in batch:
            for key, ts, v in rows:
                h.process_element(Row(key=key, ts=ts, v=v), ts)
        for s, rows in enumerate(batch):
            old = self.splits[s]
            top = max([old.max_ts, *(ts for _, ts, _ in rows)])
            emitted = max(old.emitted, top - BOUND - 1)
            self.splits[s] = SplitResume(old.read + len(rows), top, emitted)
            self.channels[s] = max(self.channels[s], emitted)
            if min(self.channels) > self.watermark:
                self.watermark = min(self.channels)
                h.process_watermark(self.watermark)
        main = [tuple(r.value) for r in h.get_records()]
        late = [(r.value.key, r.value.ts, r.value.v) for r in h.get_side_output(LATE)]
        self.snapshot = h.operator.snapshot_state()
        h.clear_output()
        return main, late

    # ------------------------------------------------------------------ on columns

    def columnar(self, round_: int, batch) -> tuple[list[tuple], list[tuple]]:
        shipped = []
        for s, rows in enumerate(batch):
            agg = SplitAggregator(self.split_plan, s, self.splits[s], round_=round_)
            table = pa.table(
                {
                    "key": pa.array([r[0] for r in rows], pa.string()),
                    "ts": pa.array([r[1] for r in rows], pa.int64()),
                    "v": pa.array([r[2] for r in rows], pa.int64()),
                }
            )
            shipped += [*agg.feed(table), agg.end_round()]
            self.splits[s] = agg.resume
        table = pa.concat_tables(shipped, promote_options="default")
        held = {f"{what}_{i}" for i, what in self.engine_plan.held}
        shipped_partials = "kind" in table.column_names and Kind.PARTIAL in set(
            table.column("kind").to_pylist()
        )
        # partials ship exactly the held aggregates; raw records carry only their fields' values
        aggregates = {c for c in table.column_names if c[-2:] == "_0"}
        assert aggregates == held if shipped_partials else aggregates <= held
        source = pa.schema([("key", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
        table = conform(table, shipped_schema(self.split_plan, source))  # as a subtask reads it
        spec = self.spec
        restored = restore_windows(
            self.snapshot, self.layout, spec.size_ms, spec.allowed_lateness_ms, [np.dtype("int64")]
        )
        rows = None
        if self.engine_plan.records:
            rows = pa.table(
                {
                    row_column(c): pa.array([r[c] for r in restored.records], t)
                    for c, t in (("key", pa.string()), ("ts", pa.int64()), ("v", pa.int64()))
                }
            )
        state = EngineState(
            pa.array(restored.keys, pa.string()),
            restored.windows,
            np.asarray(self.channels, np.int64),
            self.watermark,
            rows,
        )
        engine = WindowEngine(self.engine_plan)
        out = engine.run(table, state)
        after = engine.state()
        self.channels = after.channels.tolist()
        self.watermark = after.watermark
        records = [] if after.rows is None else [Row(**r) for r in _plain(after.rows)]
        self.snapshot = snapshot_windows(
            after,
            self.layout if isinstance(self.layout, AccumulatorLayout) else None,
            self.snapshot,
            spec.size_ms,
            spec.allowed_lateness_ms,
            restored.next_seq,
            records,
        )
        schema = pa.schema(
            [("key", pa.string())]
            + [(n, pa.int64()) for n in ("window_start", "window_end", "n", "total", "low")]
            + [("mean", pa.float64())]
        )
        if out.records is not None:
            main = [(r["key"], r["ts"], r["v"]) for r in _plain(out.records)]
        else:
            main = [
                tuple(r.values()) for r in named_rows(out.fired, spec, SLOTS, schema).to_pylist()
            ]
        late_rows = out.late_rows.to_pylist()
        late = [(r[row_column("key")], r[row_column("ts")], r[row_column("v")]) for r in late_rows]
        return main, late


def _plain(rows: pa.Table) -> list[dict[str, object]]:
    """Row columns as dicts by source column."""
    return [{k[len(row_column("")) :]: v for k, v in r.items()} for r in rows.to_pylist()]


def _per_key(rows: list[tuple]) -> dict[object, list[tuple]]:
    out: dict[object, list[tuple]] = defaultdict(list)
    for row in rows:
        out[row[0]].append(row)
    return dict(out)


def _timers(snapshot: KeyedOperatorSnapshot) -> dict[int, list[tuple]]:
    """Per key group, the timers in firing order (sequence numbers only order them)."""
    return {
        kg: [(e[0], e[2], e[3]) for e in sorted(services["window-timers"][0], key=lambda e: e[:2])]
        for kg, services in snapshot.timers.items()
        if services.get("window-timers", ([], []))[0]
    }


def _contents(snapshot: KeyedOperatorSnapshot) -> dict[int, set[tuple]]:
    return {
        kg: {(k, w, type(acc).__name__, tuple(acc)) for k, w, acc in states["window-contents"]}
        for kg, states in snapshot.state.items()
        if states.get("window-contents")
    }


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shape=st.sampled_from([(200, 200), (400, 100), (300, 200)]),
    lateness=st.sampled_from([0, 150, 600]),
    paths=st.lists(st.booleans(), min_size=5, max_size=5),
    record=st.sampled_from([None, None, "sum", "max", "min_by"]),
)
def test_batches_alternate_between_paths_on_one_snapshot(
    seed, shape, lateness, paths, record
) -> None:
    spec = _spec(shape[0], shape[1], lateness, record)
    batches = _batches(seed, len(paths), nulls=record is None)
    reference, mixed = _Run(spec), _Run(spec)
    h = reference.harness()
    for r, (batch, on_columns) in enumerate(zip(batches, paths, strict=True)):
        expected = reference.general(h, batch)
        got = mixed.columnar(r, batch) if on_columns else mixed.general(mixed.harness(), batch)
        assert _per_key(got[0]) == _per_key(expected[0]), f"batch {r}"
        assert _per_key(got[1]) == _per_key(expected[1]), f"batch {r}"
        assert (mixed.watermark, mixed.channels) == (reference.watermark, reference.channels)
        assert _contents(mixed.snapshot) == _contents(reference.snapshot)
        assert _timers(mixed.snapshot) == _timers(reference.snapshot)


def test_a_null_timestamp_is_an_error_naming_from_stream() -> None:
    import pytest

    plan = SplitPlan(
        WindowGeometry(10, 10, 0),
        "key",
        "ts",
        (),
        ("key", "ts"),
        0,
        None,
        1,
        MAXP,
        source="from_stream",
    )
    aggregator = SplitAggregator(plan, 0, round_=3)
    list(aggregator.feed(pa.table({"key": ["a", "b"], "ts": pa.array([1, None], pa.int64())})))
    with pytest.raises(ValueError, match="from_stream: the timestamp column 'ts' holds null"):
        aggregator.end_round()
