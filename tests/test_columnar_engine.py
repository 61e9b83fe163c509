"""The numpy pieces of the columnar window aggregates: key groups equal to the scalar function
bit for bit, window and pane arithmetic equal to the assigners', grouping, and partial
aggregates that merge to the same result however the rows were cut."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparktide.core.window.assigners import SlidingEventTimeWindows
from sparktide.runtime.columnar.engine import EnginePlan, WindowEngine
from sparktide.runtime.columnar.groups import Groups
from sparktide.runtime.columnar.keygroups import key_groups, long_key_groups
from sparktide.runtime.columnar.split import SplitAggregator, SplitPlan
from sparktide.runtime.columnar.windows import WindowGeometry
from sparktide.runtime.keygroups import assign_to_key_group

INT64 = st.integers(-(2**63), 2**63 - 1)
EXTREMES = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**31 - 1, 2**31, 2**32, 2**63 - 1]
MAX_PARALLELISMS = st.sampled_from([1, 7, 128, 4096, 32768])


@settings(max_examples=200, deadline=None)
@given(st.lists(INT64, max_size=50), MAX_PARALLELISMS)
def test_long_key_groups_equal_the_scalar_function(values: list[int], maxp: int) -> None:
    values = values + EXTREMES
    got = long_key_groups(np.array(values, dtype=np.int64), maxp)
    assert got.tolist() == [assign_to_key_group(v, maxp) for v in values]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["é", "日本", "\U0001f600"]))
    ),
    MAX_PARALLELISMS,
)
@example(["", "\x000"], 7)  # equal to a C string: one key to pandas' factorize
@example(["a", "a\x00", None], 2)
def test_key_groups_of_strings_equal_the_scalar_function(
    values: list[str | None], maxp: int
) -> None:
    got = key_groups(values, maxp)
    assert got.tolist() == [assign_to_key_group(v, maxp) for v in values]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 50),
    st.integers(1, 50),
    st.integers(-49, 49),
    st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=20),
)
def test_panes_and_windows_follow_the_assigner(
    size: int, slide: int, offset: int, stamps: list[int]
) -> None:
    offset = offset % slide if abs(offset) >= slide else offset
    assigner = SlidingEventTimeWindows(size, slide, offset)
    g = WindowGeometry(size, slide, offset)
    ts = np.array(stamps, dtype=np.int64)
    panes = g.pane_starts(ts)
    rows, starts = g.windows_of_panes(panes)
    for i, t in enumerate(stamps):
        windows = assigner.assign_windows(None, t, None)
        expected = [w.start for w in windows]
        assert g.window_starts(t) == expected
        assert starts[rows == i].tolist() == expected  # the pane's windows are the record's
        if windows:
            assert g.earliest_max_timestamps(ts)[i] == min(w.max_timestamp() for w in windows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 40), max_size=60), st.booleans())
def test_groups_equal_a_loop(keys: list[int], sparse: bool) -> None:
    k = np.array([x * (10**12 if sparse else 1) for x in keys], dtype=np.int64)
    values = np.arange(len(k), dtype=np.int64) * 7 % 11
    groups = Groups.of(k)
    distinct = sorted(set(k.tolist()))
    assert len(groups) == len(distinct)
    for j, key in enumerate(distinct):
        members = [i for i, x in enumerate(k.tolist()) if x == key]
        assert groups.first[j] == members[0]
        assert groups.count[j] == len(members)
        assert groups.sum(values)[j] == sum(values[members].tolist())
        assert groups.min(values)[j] == min(values[members].tolist())
        assert groups.max(values)[j] == max(values[members].tolist())


@pytest.mark.parametrize(("size", "slide", "every"), [(10, 10, None), (10, 5, 3), (15, 10, 2)])
def test_partials_merge_to_the_same_windows_however_the_rows_are_cut(
    size: int, slide: int, every: int | None
) -> None:
    rng = np.random.default_rng(7)
    n = 200
    table = pa.table(
        {
            "k": rng.integers(0, 5, n),
            "ts": np.sort(rng.integers(0, 300, n)) - rng.integers(0, 4, n),
            "v": rng.integers(-9, 9, n),
        }
    )
    g = WindowGeometry(size, slide, 0)

    def run(piece: int, batch: int) -> list[dict[str, object]]:
        plan = SplitPlan(g, "k", "ts", ("v",), ("k", "ts", "v"), 3, every, 1, 128, piece)
        agg = SplitAggregator(plan, 0)
        parts = [t for b in table.to_batches(batch) for t in agg.feed(pa.Table.from_batches([b]))]
        shipped = pa.concat_tables([*parts, agg.finish()], promote_options="default")
        out = WindowEngine(EnginePlan(g, 0, 1, 1)).run(shipped)
        fired = out.fired.select(["key", "start", "count", "nn_0", "sum_0", "min_0", "max_0"])
        return [
            {**row, "position": p}
            for row, p in zip(fired.to_pylist(), out.fired_positions.tolist(), strict=True)
        ]

    whole = run(1 << 20, 1 << 20)
    assert whole == run(7, 13) == run(1, 1)
    if size == slide:  # every record in exactly one window, every window fired at the end
        assert sum(r["count"] for r in whole) == n


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([(10, 10), (10, 5), (15, 10), (4, 6)]),
    st.sampled_from([None, 2, 5]),
    st.integers(0, 3),  # out-of-orderness bound
    st.integers(1, 3),  # splits
    st.sampled_from([0, 7]),  # allowed lateness
    st.sampled_from([None, "min", "max"]),  # Flink's record: first (sum) or extreme record
    st.integers(0, 2**32 - 1),
)
def test_the_fast_merges_equal_the_general_merge(
    windows: tuple[int, int],
    every: int | None,
    bound: int,
    splits: int,
    lateness: int,
    by: str | None,
    seed: int,
) -> None:
    """Merging a round into sorted windows by binary search (``merge_round``) and replaying
    partial-only rounds in one pass (``replay_partials``) give what sorting everything gives:
    the same fired windows, positions, late records, metrics and open windows."""
    import sparktide.runtime.columnar.engine as engine
    from sparktide.spark.columnar_job import shipped_schema, shipped_table

    size, slide = windows
    g = WindowGeometry(size, slide, 0)
    rng = np.random.default_rng(seed)
    shipped = []
    plan = SplitPlan(
        g, "k", "ts", ("v",), ("k", "ts", "v"), bound, every, 2, 128, records=True, by=by
    )
    for split in range(splits):
        n = int(rng.integers(0, 40))
        late = rng.integers(0, 12, n) * (rng.random(n) < 0.2)  # a few records run late
        table = pa.table(
            {
                "k": rng.integers(0, 4, n),
                "ts": np.sort(rng.integers(0, 120, n)) - late,
                "v": rng.integers(-9, 9, n),
            }
        )
        agg = SplitAggregator(plan, split)
        shipped += [t for b in table.to_batches(5) for t in agg.feed(pa.Table.from_batches([b]))]
        shipped.append(agg.finish())
    source = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("v", pa.int64())])
    table = shipped_table(shipped, shipped_schema(plan, source))
    engine_plan = EnginePlan(
        g,
        lateness,
        splits,
        1,
        True,
        records=True,
        by=by,
        field_name="v",
        aggregates=(((by or "sum"),),),
        key_name="k",
        columns=("k", "ts", "v"),
    )

    def run() -> tuple[object, ...]:
        eng = WindowEngine(engine_plan)
        out = eng.run(table)
        state = eng.state()
        assert out.records is not None
        return (
            out.fired.to_pylist(),
            out.fired_positions.tolist(),
            out.records.to_pylist(),
            out.late_rows.to_pylist(),
            out.late_positions.tolist(),
            out.metrics,
            state.keys.to_pylist(),
            {k: v.tolist() for k, v in state.windows.items()},
            state.watermark,
        )

    fast = run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "merge_round", lambda *args: None)
        patch.setattr(engine, "replay_partials", lambda *args: None)
        assert fast == run()
