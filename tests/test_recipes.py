"""The two functions of seed 001, on the public API, against naive models."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import RowKind
from sparktide.recipes import (
    CountAggregate,
    ProcTimeDeduplicateKeepLastRowFunction,
    ProcTimeRangeBoundedPrecedingFunction,
    SumAggregate,
)
from sparktide.testing import for_keyed_process_function

steps = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=25),  # processing-time advance before the row
        st.sampled_from(["a", "b", "c"]),
        st.integers(min_value=-5, max_value=50),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(steps=steps, preceding=st.integers(min_value=0, max_value=20))
def test_over_aggregation_matches_naive_range_sum(steps, preceding):
    h = for_keyed_process_function(
        ProcTimeRangeBoundedPrecedingFunction(SumAggregate(lambda r: r[1]), preceding),
        lambda r: r[0],
    )
    now = 0
    arrivals = []  # (time, row)
    for advance, key, value in steps:
        now += advance
        h.set_processing_time(now)
        row = (key, value, len(arrivals))
        h.process_element(row)
        arrivals.append((now, row))
    h.set_processing_time(now + 10 * preceding + 100)

    expected = {
        row: sum(r[1] for t2, r in arrivals if r[0] == row[0] and t - preceding <= t2 <= t)
        for t, row in arrivals
    }
    got = h.extract_output_values()
    assert len(got) == len(arrivals)
    assert dict(got) == expected
    # rows of one key come out in arrival order, and with no timestamp (processing time)
    by_key = defaultdict(list)
    for row, _ in got:
        by_key[row[0]].append(row[2])
    assert all(v == sorted(v) for v in by_key.values())
    assert all(r.timestamp is None for r in h.get_records())
    # after the idle cleanup every key's state and timers are gone
    assert h.num_keyed_state_entries() == 0
    assert h.num_processing_time_timers() == 0


def test_over_aggregation_cleanup_timer_is_not_reregistered_per_row():
    h = for_keyed_process_function(
        ProcTimeRangeBoundedPrecedingFunction(CountAggregate(), preceding=100), lambda r: r
    )
    h.process_element("k")  # t=0: a processing timer at 1 and a cleanup timer at 151
    for t in range(1, 40):
        h.set_processing_time(t)
        h.process_element("k")  # one timer for t+1; the cleanup timer stays until t > 50
    assert h.num_processing_time_timers() == 2
    h.set_processing_time(60)
    h.process_element("k")
    assert h.num_processing_time_timers() == 3  # 61, the old cleanup (151), the new one (211)


dedup_steps = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),
        st.sampled_from(["a", "b"]),
        st.integers(min_value=0, max_value=9),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=dedup_steps, retention=st.integers(min_value=1, max_value=50))
def test_deduplicate_changelog_replays_to_last_row_per_key(steps, retention):
    h = for_keyed_process_function(
        ProcTimeDeduplicateKeepLastRowFunction(min_retention=retention), lambda r: r[0]
    )
    now = 0
    last_seen: dict[str, int] = {}
    expected_kinds = []
    for advance, key, value in steps:
        now += advance
        h.set_processing_time(now)
        row = (key, value)
        # the state of a key survives at least min_retention and at most 1.5x after last use
        alive = key in last_seen
        if alive and now - last_seen[key] >= retention * 3 // 2:
            alive = False
        if alive and now - last_seen[key] < retention:
            expected_kinds.append(("-U", "+U"))
        elif not alive:
            expected_kinds.append(("+I",))
        else:
            expected_kinds.append(None)  # inside the retention slack: either is right
        h.process_element(row)
        last_seen[key] = now

    out = [(str(kind), row) for kind, row in h.extract_output_values()]
    # replay the changelog: a -U must retract exactly the current row of its key
    table: dict[str, tuple] = {}
    i = 0
    for expected in expected_kinds:
        kind, row = out[i]
        if kind == "+I":
            assert expected in (None, ("+I",))
            table[row[0]] = row
            i += 1
        else:
            assert kind == "-U" and expected in (None, ("-U", "+U"))
            assert table[row[0]] == row
            kind2, row2 = out[i + 1]
            assert kind2 == "+U" and row2[0] == row[0]
            table[row[0]] = row2
            i += 2
    assert i == len(out)
    assert table == {k: v for k, v in ((r[1], (r[1], r[2])) for r in steps)} or not steps
    h.set_processing_time(now + 2 * retention + 1)
    assert h.num_keyed_state_entries() == 0
    assert h.num_processing_time_timers() == 0


def test_deduplicate_without_update_before_or_insert():
    h = for_keyed_process_function(
        ProcTimeDeduplicateKeepLastRowFunction(generate_update_before=False), lambda r: r[0]
    )
    for v in [("k", 1), ("k", 2)]:
        h.process_element(v)
    assert h.extract_output_values() == [
        (RowKind.INSERT, ("k", 1)),
        (RowKind.UPDATE_AFTER, ("k", 2)),
    ]
    h2 = for_keyed_process_function(
        ProcTimeDeduplicateKeepLastRowFunction(generate_update_before=False, generate_insert=False),
        lambda r: r[0],
    )
    h2.process_element(("k", 1))
    assert h2.extract_output_values() == [(RowKind.UPDATE_AFTER, ("k", 1))]
