"""Joins on event time: the interval join (operator against exact models, API, errors), the window
join and co-group (against naive per-window computations), and parity local vs Spark."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, Time, Types, WatermarkStrategy
from sparktide.datastream import (
    CoGroupFunction,
    JoinFunction,
    OutputTag,
    ProcessJoinFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.functions import ProcessJoinFunction as FunctionsProcessJoinFunction
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.window import (
    CountEvictor,
    CountTrigger,
    GlobalWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP, StreamRecord, Watermark
from sparktide.runtime.operators.interval_join import (
    CLEANUP_LEFT,
    CLEANUP_RIGHT,
    CLEANUP_TIMER,
    LEFT_BUFFER,
    RIGHT_BUFFER,
    BufferEntry,
    IntervalJoinOperator,
)
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")


# ------------------------------------------------------------------------------ the harness


class Pairs(ProcessJoinFunction):
    """Emits (left id, right id, left ts, right ts, result ts) for every pair."""

    def process_element(self, left, right, ctx):
        lts, rts = ctx.get_left_timestamp(), ctx.get_right_timestamp()
        yield left[1], right[1], lts, rts, ctx.get_timestamp()


class JoinHarness:
    """Drives an IntervalJoinOperator by hand (both inputs keyed by field 0)."""

    def __init__(
        self,
        lower: int,
        upper: int,
        lower_inclusive: bool = True,
        upper_inclusive: bool = True,
        function=None,
        left_tag=LEFT_LATE,
        right_tag=RIGHT_LATE,
        snapshot=None,
    ) -> None:
        self.operator = IntervalJoinOperator(
            lower,
            upper,
            lower_inclusive,
            upper_inclusive,
            function or Pairs(),
            left_tag,
            right_tag,
        )
        self.h = KeyedOneInputStreamOperatorTestHarness(self.operator, lambda v: v[0])
        self.operator.key_selector2 = lambda v: v[0]
        if snapshot is not None:
            self.h.initialize_state(snapshot)
        self.h.open()

    def left(self, value, ts) -> None:
        self.operator.process_element1(StreamRecord(value, ts))

    def right(self, value, ts) -> None:
        self.operator.process_element2(StreamRecord(value, ts))

    def watermark(self, t: int) -> None:
        self.operator.process_watermark1(Watermark(t))
        self.operator.process_watermark2(Watermark(t))

    def records(self) -> list[tuple]:
        return [(r.value, r.timestamp) for r in self.h.get_records()]

    def side(self, tag) -> list[tuple]:
        return [(r.value, r.timestamp) for r in self.h.get_side_output(tag)]

    def buffered(self) -> int:
        return self.h.num_keyed_state_entries()

    def timers(self) -> int:
        return self.h.num_event_time_timers()


# ------------------------------------------------------------------------------ the models


def effective_bounds(lower, upper, lower_inclusive, upper_inclusive):
    return (lower if lower_inclusive else lower + 1), (upper if upper_inclusive else upper - 1)


def cleanup_time(side: str, ts: int, lo: int, hi: int) -> int:
    """Flink's cleanup times (bounds already inclusive)."""
    if side == "L":
        return ts + hi if hi > 0 else ts
    return ts - lo if lo < 0 else ts


def naive_join(lefts, rights, lo, hi):
    """Cross join plus filter: every (left, right) with equal keys and r.ts - l.ts in [lo, hi]."""
    return sorted(
        (lv[1], rv[1], lt, rt, max(lt, rt))
        for lv, lt in lefts
        for rv, rt in rights
        if lv[0] == rv[0] and lo <= rt - lt <= hi
    )


def exact_model(events, lo, hi):
    """What the operator must emit, derived from Flink's algorithm without MapState or timers.

    ``events``: ("L" | "R", value, ts) records and ("W", t) watermarks (both inputs). A record
    is late when ts < watermark. Another record joins with the earlier records of the other
    side that are still buffered: a record ``e`` (arrived under watermark ``w_e``) is removed
    by the first watermark advance after its arrival that reaches its cleanup time, so at the
    arrival of ``x`` (watermark ``w_x``) it is gone iff ``w_x > w_e and w_x >= cleanup(e)``.
    Matches come in the order of the other side's timestamps, then arrival order.
    Returns (joined in order, late left, late right, lost pairs).
    """
    wm = MIN_TIMESTAMP
    buffers = {"L": [], "R": []}  # (ts, arrival, value, watermark at arrival)
    joined, late, lost = [], {"L": [], "R": []}, []
    for n, event in enumerate(events):
        if event[0] == "W":
            wm = max(wm, event[1])
            continue
        side, value, ts = event
        if ts < wm:
            late[side].append((value, ts))
            continue
        other = "R" if side == "L" else "L"
        for ets, _, evalue, ewm in sorted(buffers[other], key=lambda e: (e[0], e[1])):
            if evalue[0] != value[0]:
                continue
            lt, rt = (ts, ets) if side == "L" else (ets, ts)
            if not lo <= rt - lt <= hi:
                continue
            (lv, rv) = (value, evalue) if side == "L" else (evalue, value)
            pair = (lv[1], rv[1], lt, rt, max(lt, rt))
            if wm > ewm and wm >= cleanup_time(other, ets, lo, hi):
                lost.append((pair, ts, wm, cleanup_time(other, ets, lo, hi)))
            else:
                joined.append(pair)
        buffers[side].append((ts, n, value, wm))
    return joined, late["L"], late["R"], lost


def replay(h: JoinHarness, events) -> None:
    for e in events:
        if e[0] == "W":
            h.watermark(e[1])
        elif e[0] == "L":
            h.left(e[1], e[2])
        else:
            h.right(e[1], e[2])


# ------------------------------------------------------------------------------ strategies


@st.composite
def join_case(draw, late: bool):
    """Random out-of-order inputs on 2 keys, random bounds and inclusiveness, watermarks.

    ``late=False``: every watermark is strictly below the timestamps of all later records.
    ``late=True``: arbitrary watermarks, often on the edges: a later record's timestamp, an
    earlier record's cleanup time, and the pattern "record, watermark at its cleanup time,
    other-side record at that time" (the one case where a non-late pair is not joined).
    """
    lower = draw(st.integers(-25, 25))
    upper = draw(st.integers(lower, lower + 40))
    incl = (draw(st.booleans()), draw(st.booleans()))
    lo, hi = effective_bounds(lower, upper, *incl)
    n = draw(st.integers(0, 40))
    records = []
    for i in range(n):
        side = draw(st.sampled_from("LR"))
        key = draw(st.sampled_from("ab"))
        near = [r[2] + d for r in records[-4:] for d in (0, upper, -lower)]
        ts = draw(st.one_of(st.integers(0, 80), st.sampled_from(near))) if near else 40
        records.append((side, (key, f"{side}{i}"), ts))
    events: list[tuple] = []
    wm = MIN_TIMESTAMP
    for i, rec in enumerate(records):
        if late and i and draw(st.integers(0, 5)) == 0:  # the edge pattern
            side, value, ts = records[i - 1]
            cleanup = cleanup_time(side, ts, lo, hi)
            if cleanup > wm:
                wm = cleanup
                events.append(("W", wm))
                other = "R" if side == "L" else "L"
                events.append((other, (value[0], f"{other}{i}e"), cleanup))
        if draw(st.integers(0, 3)) == 0:
            if late:
                edges = [r[2] for r in records[i:]]
                edges += [cleanup_time(r[0], r[2], lo, hi) for r in records[:i]]
                wm = max(wm, draw(st.one_of(st.integers(-5, 85), st.sampled_from(edges))))
            else:
                rest = [r[2] for r in records[i:]]
                wm = max(wm, min(rest) - 1 - draw(st.integers(0, 10)))
            events.append(("W", wm))
        events.append(rec)
    return lower, upper, incl, events


def max_cleanup(events, lo, hi) -> int:
    wm, out = MIN_TIMESTAMP, MIN_TIMESTAMP
    for e in events:
        if e[0] == "W":
            wm = max(wm, e[1])
        elif e[2] >= wm:
            out = max(out, cleanup_time(e[0], e[2], lo, hi))
    return out


# ------------------------------------------------------------------------------ interval join


@settings(max_examples=150, deadline=None)
@given(join_case(late=False))
def test_without_late_records_the_join_is_the_naive_cross_join(case):
    lower, upper, (li, ui), events = case
    h = JoinHarness(lower, upper, li, ui)
    replay(h, events)
    lo, hi = effective_bounds(lower, upper, li, ui)
    lefts = [(e[1], e[2]) for e in events if e[0] == "L"]
    rights = [(e[1], e[2]) for e in events if e[0] == "R"]
    got = h.records()
    assert sorted(v for v, _ in got) == naive_join(lefts, rights, lo, hi)
    assert all(ts == v[4] for v, ts in got), "outputs carry max(left ts, right ts)"
    assert h.side(LEFT_LATE) == [] and h.side(RIGHT_LATE) == []
    h.watermark(MAX_TIMESTAMP)
    assert (h.buffered(), h.timers()) == (0, 0)


@settings(max_examples=200, deadline=None)
@given(join_case(late=True))
def test_with_late_records_the_join_follows_the_exact_model(case):
    lower, upper, (li, ui), events = case
    h = JoinHarness(lower, upper, li, ui)
    replay(h, events)
    lo, hi = effective_bounds(lower, upper, li, ui)
    joined, late_left, late_right, lost = exact_model(events, lo, hi)
    assert h.records() == [(pair, pair[4]) for pair in joined]  # in order
    assert h.side(LEFT_LATE) == late_left
    assert h.side(RIGHT_LATE) == late_right
    # the model is the naive join of the non-late records minus the lost pairs ...
    late_ids = {v[1] for v, _ in late_left + late_right}
    lefts = [(e[1], e[2]) for e in events if e[0] == "L" and e[1][1] not in late_ids]
    rights = [(e[1], e[2]) for e in events if e[0] == "R" and e[1][1] not in late_ids]
    assert sorted(joined + [x[0] for x in lost]) == naive_join(lefts, rights, lo, hi)
    # ... and a pair is lost only when the later record sits exactly on the watermark, which
    # is the cleanup time of the earlier one
    assert all(ts == wm == cleanup for _, ts, wm, cleanup in lost)


@settings(max_examples=100, deadline=None)
@given(join_case(late=True))
def test_state_and_timers_are_empty_once_the_watermark_passes_every_cleanup_time(case):
    lower, upper, (li, ui), events = case
    h = JoinHarness(lower, upper, li, ui)
    replay(h, events)
    lo, hi = effective_bounds(lower, upper, li, ui)
    last = max_cleanup(events, lo, hi)
    if last == MIN_TIMESTAMP:  # nothing buffered
        assert (h.buffered(), h.timers()) == (0, 0)
        return
    current = max([e[1] for e in events if e[0] == "W"], default=MIN_TIMESTAMP)
    if last - 1 > current:
        h.watermark(last - 1)
        assert h.timers() > 0 and h.buffered() > 0
    # a timer registered at or below the current watermark fires at the next advance
    h.watermark(max(last, current + 1))
    assert (h.buffered(), h.timers()) == (0, 0)


def test_buffers_are_map_states_of_timestamp_buckets_with_cleanup_timers_per_side():
    h = JoinHarness(-3, 5)
    h.left(("k", "l1"), 10)
    h.left(("k", "l2"), 10)
    h.right(("k", "r1"), 12)
    op = h.operator
    backend = op.keyed_state_backend
    backend.set_current_key("k")
    left = backend.get_partitioned_state(_map(LEFT_BUFFER))
    right = backend.get_partitioned_state(_map(RIGHT_BUFFER))
    assert left.items() == [
        (10, [BufferEntry(("k", "l1"), False), BufferEntry(("k", "l2"), False)])
    ]
    assert right.items() == [(12, [BufferEntry(("k", "r1"), False)])]
    service = op.time_service_manager.get_internal_timer_service(CLEANUP_TIMER, op)
    assert service.event_time_timers_of(CLEANUP_LEFT) == [15]  # ts + upper
    assert service.event_time_timers_of(CLEANUP_RIGHT) == [15]  # ts - lower
    h.watermark(14)
    assert len(left.items()) == 1 and len(right.items()) == 1
    h.watermark(15)
    assert (h.buffered(), h.timers()) == (0, 0)


def _map(name):
    from sparktide.datastream.state import MapStateDescriptor

    return MapStateDescriptor(name, None, None)


@pytest.mark.parametrize(
    ("lower", "upper", "left_cleanup", "right_cleanup"),
    [(-3, 5, 15, 13), (2, 5, 15, 10), (-5, -2, 10, 15), (0, 0, 10, 10)],
)
def test_cleanup_times_are_flinks(lower, upper, left_cleanup, right_cleanup):
    h = JoinHarness(lower, upper)
    h.left(("k", "l"), 10)
    h.right(("k", "r"), 10)
    service = h.operator.time_service_manager.get_internal_timer_service(CLEANUP_TIMER, h.operator)
    assert service.event_time_timers_of(CLEANUP_LEFT) == [left_cleanup]
    assert service.event_time_timers_of(CLEANUP_RIGHT) == [right_cleanup]


def test_exclusive_bounds_move_by_one_millisecond():
    for lower_inclusive, upper_inclusive, expected in [
        (True, True, ["r8", "r9", "r12"]),
        (False, True, ["r9", "r12"]),
        (True, False, ["r8", "r9"]),
        (False, False, ["r9"]),
    ]:
        h = JoinHarness(-2, 2, lower_inclusive, upper_inclusive)
        h.left(("k", "l"), 10)
        for ts in (7, 8, 9, 12, 13):
            h.right(("k", f"r{ts}"), ts)
        assert [v[1] for v, _ in h.records()] == expected


def test_context_timestamps_and_side_outputs():
    extra = OutputTag("extra")

    class Both(ProcessJoinFunction):
        def process_element(self, left, right, ctx):
            ctx.output(extra, ("ctx", ctx.get_left_timestamp(), ctx.get_right_timestamp()))
            yield extra, ("yield", ctx.get_timestamp())
            yield left[1] + right[1]

    h = JoinHarness(-10, 10, function=Both())
    h.right(("k", "r"), 15)
    h.left(("k", "l"), 7)
    assert h.records() == [("lr", 15)]
    assert h.side(extra) == [(("ctx", 7, 15), 15), (("yield", 15), 15)]


def test_matches_come_in_the_order_of_the_other_sides_timestamps():
    h = JoinHarness(-100, 100)
    for i, ts in enumerate((30, 10, 20, 10)):
        h.right(("k", f"r{i}"), ts)
    h.left(("k", "l"), 0)
    assert [v[1] for v, _ in h.records()] == ["r1", "r3", "r2", "r0"]


def test_late_records_go_to_side_outputs_or_are_counted_as_dropped():
    h = JoinHarness(0, 5)
    h.watermark(10)
    h.left(("k", "l"), 9)
    h.right(("k", "r"), 9)
    h.left(("k", "ok"), 10)  # ts == watermark is not late
    assert h.side(LEFT_LATE) == [(("k", "l"), 9)]
    assert h.side(RIGHT_LATE) == [(("k", "r"), 9)]
    dropped = JoinHarness(0, 5, left_tag=None, right_tag=None)
    dropped.watermark(10)
    dropped.left(("k", "l"), 9)
    dropped.right(("k", "r"), 3)
    assert dropped.operator.num_late_records_dropped == 2
    assert dropped.buffered() == 0


def test_saturated_cleanup_times_clear_at_the_end_of_input():
    h = JoinHarness(-10, 10)
    h.left(("k", "l"), MAX_TIMESTAMP - 3)
    h.left(("k", "l2"), MAX_TIMESTAMP - 20)
    h.right(("k", "r"), MAX_TIMESTAMP)
    assert [v[:2] for v, _ in h.records()] == [("l", "r")]
    h.watermark(MAX_TIMESTAMP - 1)
    assert h.buffered() == 2  # the buckets at MAX - 3 and at MAX wait for MAX
    h.watermark(MAX_TIMESTAMP)
    assert (h.buffered(), h.timers()) == (0, 0)


@pytest.mark.usefixtures("state_backend")
def test_snapshot_and_restore_continue_the_join():
    first = JoinHarness(-5, 5)
    first.left(("k", "l1"), 10)
    first.right(("k", "r1"), 12)
    snapshot = first.h.snapshot()
    restored = JoinHarness(-5, 5, snapshot=snapshot)
    restored.right(("k", "r2"), 14)
    restored.left(("k", "l2"), 13)
    assert [v[:2] for v, _ in restored.records()] == [("l1", "r2"), ("l2", "r1"), ("l2", "r2")]
    restored.watermark(20)
    assert (restored.buffered(), restored.timers()) == (0, 0)


# ------------------------------------------------------------------------------ errors


def test_records_without_timestamps_are_refused():
    h = JoinHarness(0, 1)
    with pytest.raises(TypeError, match="timestamps must be assigned first"):
        h.left(("k", "l"), None)
    with pytest.raises(TypeError, match="right record of the interval join has no timestamp"):
        h.right(("k", "r"), None)


def test_bad_bounds_and_functions():
    env = local_env()
    keyed = env.from_collection([1]).key_by(lambda v: v)
    with pytest.raises(ValueError, match=r"lower_bound \(5 ms\) must be <= upper_bound \(1 ms\)"):
        keyed.interval_join(keyed).between(5, 1)
    with pytest.raises(ValueError, match=r"lower_bound \(1000 ms\).*upper_bound \(0 ms\)"):
        keyed.interval_join(keyed).between(Time.seconds(1), Duration.of_millis(0))
    with pytest.raises(TypeError, match="lower_bound must be a Duration"):
        keyed.interval_join(keyed).between("1", 2)
    with pytest.raises(TypeError, match="process_join_function must be a ProcessJoinFunction"):
        keyed.interval_join(keyed).between(0, 1).process(lambda a, b: a)
    with pytest.raises(TypeError, match="output_tag must be an OutputTag"):
        keyed.interval_join(keyed).between(0, 1).side_output_left_late_data("late")
    with pytest.raises(ValueError, match="only supported in event time"):
        keyed.interval_join(keyed).in_processing_time()
    # exclusive bounds may leave an empty interval: allowed, as in Flink
    keyed.interval_join(keyed).between(1, 1).lower_bound_exclusive().process(Pairs())


def test_both_streams_must_be_keyed():
    env = local_env()
    plain = env.from_collection([1])
    keyed = plain.key_by(lambda v: v)
    with pytest.raises(TypeError, match="needs two keyed streams: key_by"):
        plain.interval_join(keyed)
    with pytest.raises(TypeError, match="the right stream is a DataStream: key_by"):
        keyed.interval_join(plain)


def test_declared_key_types_must_agree():
    env = local_env()
    left = env.from_collection([1]).key_by(lambda v: v, key_type=Types.LONG())
    right = env.from_collection([1]).key_by(lambda v: str(v), key_type=Types.STRING())
    with pytest.raises(ValueError, match="key types of the two inputs differ"):
        left.interval_join(right)
    with pytest.raises(ValueError, match="key types of the two inputs differ"):
        left.join(right).where(lambda v: v, Types.LONG()).equal_to(str, Types.STRING())


def test_keys_of_different_types_are_an_error_at_runtime():
    env = local_env()
    left = timestamped(env, [("1", 1, 0)]).key_by(lambda v: int(v[0]))
    right = timestamped(env, [("1", 1, 1)]).key_by(lambda v: v[0])
    joined = left.interval_join(right).between(-5, 5).process(Pairs())
    with pytest.raises(TypeError, match="first input are int but those of the second input "):
        list(joined.execute_and_collect())
    windowed = (
        timestamped(env, [("1", 1, 0)])
        .join(timestamped(env, [("1", 1, 1)]))
        .where(lambda v: int(v[0]))
        .equal_to(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(10))
        .apply(lambda a, b: (a, b))
    )
    with pytest.raises(TypeError, match="window join: the keys of the first input are int"):
        list(windowed.execute_and_collect())


def test_operator_validation():
    with pytest.raises(TypeError, match="lower_bound must be an int"):
        IntervalJoinOperator(1.5, 2, True, True, Pairs())
    with pytest.raises(TypeError, match="left_late_data_output_tag must be an OutputTag"):
        IntervalJoinOperator(0, 2, True, True, Pairs(), "late")
    with pytest.raises(TypeError, match="function must be a ProcessJoinFunction"):
        IntervalJoinOperator(0, 2, True, True, Pairs)


def test_exports():
    import sparktide.datastream as ds
    import sparktide.datastream.functions as fn

    assert FunctionsProcessJoinFunction is ProcessJoinFunction
    for name in ("ProcessJoinFunction", "JoinFunction", "CoGroupFunction"):
        assert getattr(ds, name) is getattr(fn, name)
        assert name in ds.__all__ and name in fn.__all__
    for name in ("IntervalJoin", "IntervalJoined", "JoinedStreams", "CoGroupedStreams"):
        assert name in ds.__all__ and getattr(ds, name).__name__ == name


# ------------------------------------------------------------------------------ jobs


def local_env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    return env


def timestamped(env, rows, splits: int = 1, delay: int = 1000):
    """rows of (key, ts, id); bounded out-of-orderness ``delay``."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(delay)
    ).with_timestamp_assigner(lambda v, _ts: v[1])
    return env.from_source(CollectionSource(rows, num_splits=splits), strategy, "rows")


@pytest.mark.usefixtures("state_backend")
def test_interval_join_job_equals_the_naive_join():
    rng = random.Random(5)
    left = [(f"k{rng.randrange(4)}", i * 7 + rng.randrange(40), f"l{i}") for i in range(120)]
    right = [(f"k{rng.randrange(4)}", i * 9 + rng.randrange(40), f"r{i}") for i in range(90)]

    class Ids(ProcessJoinFunction):
        def process_element(self, left, right, ctx):
            yield left[2], right[2], ctx.get_timestamp()

    env = local_env(2)
    env.get_config().set_watermark_every(5)
    joined = (
        timestamped(env, left, 2, delay=40)
        .key_by(lambda v: v[0])
        .interval_join(timestamped(env, right, 3, delay=40).key_by(lambda v: v[0]))
        .between(Time.milliseconds(-10), Time.milliseconds(15))
        .upper_bound_exclusive()
        .process(Ids())
    )
    expected = sorted(
        (lv[2], rv[2], max(lv[1], rv[1]))
        for lv in left
        for rv in right
        if lv[0] == rv[0] and -10 <= rv[1] - lv[1] < 15
    )
    assert sorted(joined.execute_and_collect()) == expected


def window_starts(ts: int, size: int, slide: int) -> list[int]:
    last = ts - ts % slide
    return [s for s in range(last, ts - size, -slide)]


def naive_windows(left, right, size, slide):
    """{(key, window start): ([left ids], [right ids])} of tumbling/sliding windows."""
    groups = defaultdict(lambda: ([], []))
    for side, rows in ((0, left), (1, right)):
        for key, ts, ident in rows:
            for start in window_starts(ts, size, slide):
                groups[(key, start)][side].append(ident)
    return groups


WINDOW_CASES = st.tuples(
    st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 100)), max_size=25),
    st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 100)), max_size=25),
    st.sampled_from([(10, 10), (20, 5), (15, 15), (30, 10)]),
)


def _rows(pairs, prefix):
    return [(k, ts, f"{prefix}{i}") for i, (k, ts) in enumerate(pairs)]


def _assigner(size, slide):
    if size == slide:
        return TumblingEventTimeWindows.of(size)
    return SlidingEventTimeWindows.of(size, slide)


@settings(max_examples=40, deadline=None)
@given(WINDOW_CASES)
def test_window_join_equals_the_naive_per_window_join(case):
    left_pairs, right_pairs, (size, slide) = case
    left, right = _rows(left_pairs, "l"), _rows(right_pairs, "r")
    env = local_env()

    class Join(JoinFunction):
        def join(self, first, second):
            return first[0], first[2], second[2]

    out = (
        timestamped(env, left)
        .join(timestamped(env, right))
        .where(lambda v: v[0])
        .equal_to(lambda v: v[0])
        .window(_assigner(size, slide))
        .apply(Join())
    )
    expected = sorted(
        (key, a, b)
        for (key, _), (ls, rs) in naive_windows(left, right, size, slide).items()
        for a in ls
        for b in rs
    )
    assert sorted(out.execute_and_collect()) == expected


@settings(max_examples=40, deadline=None)
@given(WINDOW_CASES)
def test_co_group_equals_the_naive_per_window_grouping(case):
    left_pairs, right_pairs, (size, slide) = case
    left, right = _rows(left_pairs, "l"), _rows(right_pairs, "r")
    env = local_env()

    class Group(CoGroupFunction):
        def co_group(self, first, second):
            keys = {v[0] for v in first} | {v[0] for v in second}
            yield keys.pop(), sorted(v[2] for v in first), sorted(v[2] for v in second)

    out = (
        timestamped(env, left)
        .co_group(timestamped(env, right))
        .where(lambda v: v[0])
        .equal_to(lambda v: v[0])
        .window(_assigner(size, slide))
        .apply(Group())
    )
    expected = sorted(
        (key, sorted(ls), sorted(rs))
        for (key, _), (ls, rs) in naive_windows(left, right, size, slide).items()
    )
    assert sorted(out.execute_and_collect()) == expected


def test_window_results_carry_the_window_max_timestamp_and_callables_work():
    from sparktide.datastream import KeyedProcessFunction

    env = local_env()

    class WithTs(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value, ctx.timestamp()

    rows = [("a", 3, "l0")]
    out = (
        timestamped(env, rows)
        .co_group(timestamped(env, [("a", 5, "r0"), ("a", 12, "r1")]))
        .where(lambda v: v[0])
        .equal_to(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(10))
        .apply(lambda ls, rs: [(len(ls), len(rs))])
        .key_by(lambda v: 0)
        .process(WithTs())
    )
    assert list(out.execute_and_collect()) == [((1, 1), 9), ((0, 1), 19)]
    joined = timestamped(env, rows).join(timestamped(env, rows)).where(str).equal_to(str)
    windowed = joined.window(TumblingEventTimeWindows.of(10))
    with pytest.raises(TypeError, match="a join takes a JoinFunction"):
        windowed.apply(FakeCoGroup())
    grouped = timestamped(env, rows).co_group(timestamped(env, rows)).where(str).equal_to(str)
    with pytest.raises(TypeError, match="a co-group takes a CoGroupFunction"):
        grouped.window(TumblingEventTimeWindows.of(10)).apply(FakeJoin())
    with pytest.raises(TypeError, match="window_assigner must be a WindowAssigner"):
        joined.window("10 ms")
    with pytest.raises(TypeError, match="the second input of a join must be a DataStream"):
        timestamped(env, rows).join([1, 2])


class FakeCoGroup(CoGroupFunction):
    def co_group(self, first, second):
        return []


class FakeJoin(JoinFunction):
    def join(self, first, second):
        return first


def test_trigger_evictor_and_allowed_lateness_pass_through():
    env = local_env()
    env.get_config().set_watermark_every(1)
    one = timestamped(
        env,
        [("L", 1, "l1"), ("R", 2, "r1"), ("L", 15, "l2"), ("R", 3, "r2"), ("R", 30, "r3")],
        delay=0,
    )
    left = one.filter(lambda v: v[0] == "L")
    right = one.filter(lambda v: v[0] == "R")

    def count(ls, rs):
        yield sorted(v[2] for v in ls), sorted(v[2] for v in rs)

    def group():
        return left.co_group(right).where(lambda v: 0).equal_to(lambda v: 0)

    # r2 (ts 3) arrives after the watermark passed 9: late for [0, 10) ...
    plain = group().window(TumblingEventTimeWindows.of(10)).apply(count)
    assert list(plain.execute_and_collect()) == [
        (["l1"], ["r1"]),
        (["l2"], []),
        ([], ["r3"]),
    ]
    # ... but within 10 ms of allowed lateness the window fires again with it
    lateness = group().window(TumblingEventTimeWindows.of(10)).allowed_lateness(10).apply(count)
    assert list(lateness.execute_and_collect()) == [
        (["l1"], ["r1"]),
        (["l1"], ["r1", "r2"]),
        (["l2"], []),
        ([], ["r3"]),
    ]
    counted = (
        group()
        .window(GlobalWindows.create())
        .trigger(CountTrigger.of(2))
        .evictor(CountEvictor.of(3))
        .apply(count)
    )
    assert list(counted.execute_and_collect()) == [
        (["l1"], ["r1"]),
        (["l2"], ["r1", "r2"]),
    ]


# ------------------------------------------------------------------------------ local vs Spark


def parity_rows(seed: int, n: int, step: int, prefix: str):
    rng = random.Random(seed)
    return [
        (f"k{rng.randrange(5)}", i * step + rng.randrange(60), f"{prefix}{i}") for i in range(n)
    ]


class ParityPairs(ProcessJoinFunction):
    def process_element(self, left, right, ctx):
        yield "pair", left[2], right[2], ctx.get_timestamp()


def job_interval_join(env):
    left = timestamped(env, parity_rows(1, 160, 10, "l"), splits=2, delay=20)
    right = timestamped(env, parity_rows(2, 140, 10, "r"), splits=3, delay=20)
    joined = (
        left.key_by(lambda v: v[0])
        .interval_join(right.key_by(lambda v: v[0]))
        .between(-15, 25)
        .lower_bound_exclusive()
        .side_output_left_late_data(LEFT_LATE)
        .side_output_right_late_data(RIGHT_LATE)
        .process(ParityPairs())
    )
    late_left = joined.get_side_output(LEFT_LATE).map(lambda v: ("late-left", v[2]))
    late_right = joined.get_side_output(RIGHT_LATE).map(lambda v: ("late-right", v[2]))
    return joined.union(late_left, late_right)


def job_window_joins(env):
    left = timestamped(env, parity_rows(3, 120, 10, "l"), splits=2, delay=30)
    right = timestamped(env, parity_rows(4, 90, 13, "r"), splits=2, delay=30)
    pairs = (
        left.join(right)
        .where(lambda v: v[0])
        .equal_to(lambda v: v[0])
        .window(SlidingEventTimeWindows.of(40, 20))
        .apply(lambda a, b: ("join", a[2], b[2]))
    )
    groups = (
        left.co_group(right)
        .where(lambda v: v[0])
        .equal_to(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(50))
        .apply(lambda ls, rs: [("co-group", [v[2] for v in ls], [v[2] for v in rs])])
    )
    return pairs.union(groups)


def run_job(job, runtime: str, parallelism: int) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(7)
    return list(job(env).execute_and_collect())


def by_kind(results: list) -> dict:
    """Results per kind, in order. The union of the outputs of two window operators (join and
    co-group) interleaves them in an order that depends on the parallelism; each operator's
    own output (and its side outputs) comes in the same order at any parallelism."""
    out = defaultdict(list)
    for v in results:
        out[v[0]].append(v)
    return dict(out)


@pytest.mark.parametrize("job", [job_interval_join, job_window_joins], ids=lambda j: j.__name__)
def test_spark_output_equals_local_at_parallelism_1_2_4(job, spark):
    expected = by_kind(run_job(job, "local", 1))
    if job is job_interval_join:
        assert set(expected) == {"pair", "late-left", "late-right"}, "some records are late"
    else:
        assert set(expected) == {"join", "co-group"}
    for p in (2, 4):
        assert by_kind(run_job(job, "local", p)) == expected, f"local parallelism {p}"
    for p in (1, 2, 4):
        assert by_kind(run_job(job, "spark", p)) == expected, f"spark parallelism {p}"


def test_a_stream_can_feed_a_join_and_a_co_group_at_once():
    def both(env):
        left = timestamped(env, [("a", 1, "l0"), ("a", 2, "l1")])
        right = timestamped(env, [("a", 3, "r0")])
        pairs = left.join(right).where(lambda v: v[0]).equal_to(lambda v: v[0])
        groups = left.co_group(right).where(lambda v: v[0]).equal_to(lambda v: v[0])
        window = TumblingEventTimeWindows.of(50)
        return (
            pairs.window(window)
            .apply(lambda a, b: (a[2], b[2]))
            .union(
                groups.window(window).apply(
                    lambda ls, rs: [([v[2] for v in ls], [v[2] for v in rs])]
                )
            )
        )

    assert sorted(both(local_env()).execute_and_collect(), key=str) == sorted(
        [("l0", "r0"), ("l1", "r0"), (["l0", "l1"], ["r0"])], key=str
    )
