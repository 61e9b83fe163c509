"""The numpy pieces of the columnar window aggregates: key groups equal to the scalar function
bit for bit, window and pane arithmetic equal to the assigners', grouping, and partial
aggregates that merge to the same result however the rows were cut."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
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
