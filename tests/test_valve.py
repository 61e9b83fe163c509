"""StatusWatermarkValve, TwoInputWatermarkCombiner and WatermarkOutputMultiplexer."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.watermark_strategy import ListWatermarkOutput
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark, WatermarkStatus
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.valve import StatusWatermarkValve, TwoInputWatermarkCombiner
from sparktide.runtime.watermark_multiplexer import WatermarkOutputMultiplexer

IDLE, ACTIVE = WatermarkStatus.IDLE, WatermarkStatus.ACTIVE


class Driver:
    """A valve plus its output, with ``check_invariants()`` after every step."""

    def __init__(self, n: int) -> None:
        self.valve = StatusWatermarkValve(n)
        self.out = CollectingOutput()

    def wm(self, channel: int, ts: int) -> list:
        start = len(self.out.elements)
        self.valve.input_watermark(ts, channel, self.out)
        self.valve.check_invariants()
        return self.out.elements[start:]

    def idle(self, channel: int) -> list:
        start = len(self.out.elements)
        self.valve.input_watermark_status(IDLE, channel, self.out)
        self.valve.check_invariants()
        return self.out.elements[start:]

    def active(self, channel: int) -> list:
        start = len(self.out.elements)
        self.valve.input_watermark_status(ACTIVE, channel, self.out)
        self.valve.check_invariants()
        return self.out.elements[start:]


W = Watermark


# ------------------------------------------------------------------------ valve rules


class TestValveRules:
    def test_single_channel_forwards_increasing_watermarks(self):
        d = Driver(1)
        assert d.wm(0, 5) == [W(5)]
        assert d.wm(0, 7) == [W(7)]

    def test_output_is_the_min_over_channels(self):
        d = Driver(3)
        assert d.wm(0, 10) == []
        assert d.wm(1, 20) == []
        assert d.wm(2, 5) == [W(5)]
        assert d.wm(2, 30) == [W(10)]
        assert d.wm(0, 25) == [W(20)]
        assert d.valve.last_output_watermark == 20

    def test_output_only_when_the_min_increases(self):
        d = Driver(2)
        d.wm(0, 10)
        assert d.wm(1, 10) == [W(10)]
        assert d.wm(1, 15) == []  # channel 0 still holds the min at 10
        assert d.wm(0, 12) == [W(12)]

    def test_lower_watermark_on_a_channel_is_ignored(self):
        d = Driver(2)
        d.wm(0, 10)
        d.wm(1, 10)
        assert d.wm(0, 8) == []
        assert d.valve.channel_watermark(0) == 10
        assert d.wm(0, 10) == []  # equal: ignored too
        assert d.wm(1, 11) == []
        assert d.wm(0, 11) == [W(11)]

    def test_idle_channel_leaves_the_min_and_releases_it(self):
        d = Driver(3)
        d.wm(0, 5)
        d.wm(1, 10)
        d.wm(2, 15)
        assert d.out.elements == [W(5)]
        assert d.idle(0) == [W(10)]  # channel 0 held the min
        assert d.wm(1, 20) == [W(15)]

    def test_idle_channel_not_holding_the_min_changes_nothing(self):
        d = Driver(3)
        d.wm(0, 5)
        d.wm(1, 10)
        d.wm(2, 15)
        assert d.idle(2) == []
        assert d.wm(0, 12) == [W(10)]
        assert d.wm(1, 20) == [W(12)]  # channel 2 (15) no longer counts

    def test_idle_channel_with_others_at_the_same_min_emits_nothing(self):
        d = Driver(2)
        d.wm(0, 10)
        d.wm(1, 10)
        assert d.idle(0) == []

    def test_idle_channel_watermark_is_ignored(self):
        d = Driver(2)
        d.wm(0, 5)
        d.wm(1, 8)
        d.idle(1)
        assert d.wm(1, 100) == []
        assert d.valve.channel_watermark(1) == 8
        assert d.wm(0, 50) == [W(50)]

    def test_all_idle_flushes_the_max_then_idle(self):
        d = Driver(3)
        d.wm(0, 5)
        d.wm(1, 30)
        d.wm(2, 20)
        assert d.idle(1) == []
        assert d.idle(2) == []
        assert d.idle(0) == [W(30), IDLE]
        assert d.valve.is_idle()
        assert d.valve.last_output_watermark == 30

    def test_all_idle_without_a_higher_max_only_idle(self):
        d = Driver(2)
        d.wm(0, 7)
        d.wm(1, 7)
        d.idle(0)
        assert d.idle(1) == [IDLE]

    def test_all_idle_from_the_start(self):
        d = Driver(2)
        d.idle(0)
        assert d.idle(1) == [IDLE]
        assert d.valve.last_output_watermark == MIN_TIMESTAMP

    def test_repeated_statuses_are_ignored(self):
        d = Driver(2)
        assert d.active(0) == []
        d.idle(0)
        assert d.idle(0) == []
        d.idle(1)
        assert d.idle(1) == []
        assert d.active(1) == [ACTIVE]
        assert d.active(1) == []

    def test_active_again_emits_active_once_when_the_valve_was_idle(self):
        d = Driver(2)
        d.idle(0)
        d.idle(1)
        assert d.active(0) == [ACTIVE]
        assert d.active(1) == []
        assert not d.valve.is_idle()

    def test_active_again_below_the_output_is_unaligned_until_it_catches_up(self):
        d = Driver(2)
        d.wm(0, 5)
        d.wm(1, 20)
        d.idle(0)  # releases 20
        assert d.valve.last_output_watermark == 20
        assert d.active(0) == []
        assert not d.valve.is_channel_aligned(0)
        assert d.wm(1, 30) == [W(30)]  # channel 0 (unaligned) does not hold it back
        assert d.wm(0, 25) == []  # still below the output: unaligned
        assert not d.valve.is_channel_aligned(0)
        assert d.wm(0, 30) == []  # reaches the output: aligned again
        assert d.valve.is_channel_aligned(0)
        assert d.wm(1, 40) == []  # channel 0 at 30 holds the output
        assert d.wm(0, 35) == [W(35)]

    def test_active_again_at_or_above_the_output_is_aligned_at_once(self):
        d = Driver(2)
        d.wm(0, 10)
        d.wm(1, 10)
        d.idle(1)
        d.active(1)
        assert d.valve.is_channel_aligned(1)
        assert d.wm(0, 20) == []  # channel 1 at 10 holds the min again

    def test_active_after_all_idle_realigns_at_the_flushed_max(self):
        d = Driver(2)
        d.wm(0, 5)
        d.wm(1, 30)
        d.idle(1)
        d.idle(0)  # flush 30, IDLE
        assert d.active(0) == [ACTIVE]
        assert not d.valve.is_channel_aligned(0)  # 5 < 30
        assert d.wm(0, 31) == [W(31)]

    def test_reactivated_channel_above_the_output_counts_from_its_next_watermark(self):
        # Flink: re-activation itself never emits a watermark.
        d = Driver(3)
        d.wm(0, 10)
        d.wm(1, 30)
        d.wm(2, 20)
        d.idle(1)  # 30
        d.idle(0)  # releases 20
        d.active(0)  # 10 < 20: unaligned
        d.idle(2)  # channel 2 held 20; nothing aligned is left
        assert d.active(1) == []  # aligned at 30 > 20, but no emission yet
        assert d.wm(1, 31) == [W(31)]

    def test_idle_channel_not_at_the_output_never_recomputes(self):
        # Flink recomputes the min on IDLE only if that channel was at the last output; an
        # aligned channel above the output (re-activated there) waits for its next watermark.
        d = Driver(3)
        d.wm(0, 10)
        d.wm(1, 30)
        d.wm(2, 20)
        d.idle(1)
        d.idle(0)  # releases 20
        d.active(0)  # unaligned at 10
        d.idle(2)
        d.active(1)  # aligned at 30, output still 20
        assert d.idle(0) == []  # channel 0 (10) was not at the output
        assert d.wm(1, 31) == [W(31)]

    def test_flush_when_an_unaligned_channel_is_the_last_to_go_idle(self):
        d = Driver(3)
        d.wm(0, 10)
        d.wm(1, 50)
        d.wm(2, 20)
        d.idle(1)  # holds 50
        d.idle(0)  # releases 20
        d.active(0)  # unaligned at 10
        d.idle(2)
        assert d.idle(0) == [W(50), IDLE]

    def test_max_watermark_closes_a_channel(self):
        d = Driver(2)
        d.wm(0, MAX_TIMESTAMP)
        assert d.wm(1, 100) == [W(100)]
        assert d.wm(1, MAX_TIMESTAMP) == [W(MAX_TIMESTAMP)]

    def test_validation(self):
        v = StatusWatermarkValve(2)
        out = CollectingOutput()
        with pytest.raises(ValueError, match=r"channel must be in \[0, 2\)"):
            v.input_watermark(1, 2, out)
        with pytest.raises(TypeError, match="channel must be an int"):
            v.input_watermark_status(IDLE, "0", out)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="timestamp must be an int"):
            v.input_watermark(Watermark(1), 0, out)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="status must be WatermarkStatus"):
            v.input_watermark_status("IDLE", 0, out)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="num_channels must be >= 1"):
            StatusWatermarkValve(0)
        with pytest.raises(TypeError, match="num_channels must be an int"):
            StatusWatermarkValve(2.0)  # type: ignore[arg-type]

    def test_many_channels_in_lockstep(self):
        n = 200
        d = Driver(n)
        for step in range(1, 4):
            for ch in range(n):
                d.valve.input_watermark(step * 10, ch, d.out)
            d.valve.check_invariants()
        assert d.out.elements == [W(10), W(20), W(30)]

    def test_repr(self):
        d = Driver(2)
        d.wm(0, 3)
        d.idle(1)
        assert "idle" in repr(d.valve) and "last=3" in repr(d.valve)


# ------------------------------------------------------------------------ valve vs model


class NaiveValve:
    """The rules written plainly: recompute everything from scratch on every step."""

    def __init__(self, n: int) -> None:
        self.wm = [MIN_TIMESTAMP] * n
        self.active = [True] * n
        self.aligned = [True] * n
        self.last = MIN_TIMESTAMP
        self.idle = False
        self.out: list = []

    def _emit_min_if_higher(self) -> None:
        candidates = [w for w, a in zip(self.wm, self.aligned, strict=True) if a]
        if candidates and min(candidates) > self.last:
            self.last = min(candidates)
            self.out.append(W(self.last))

    def watermark(self, ts: int, ch: int) -> None:
        if not self.active[ch] or ts <= self.wm[ch]:
            return
        self.wm[ch] = ts
        if not self.aligned[ch] and ts >= self.last:
            self.aligned[ch] = True
        self._emit_min_if_higher()

    def status(self, status: WatermarkStatus, ch: int) -> None:
        if status.is_idle() and self.active[ch]:
            self.active[ch] = False
            self.aligned[ch] = False
            if not any(self.active):
                if max(self.wm) > self.last:
                    self.last = max(self.wm)
                    self.out.append(W(self.last))
                self.idle = True
                self.out.append(IDLE)
            elif self.wm[ch] == self.last:
                self._emit_min_if_higher()
        elif status.is_active() and not self.active[ch]:
            self.active[ch] = True
            if self.wm[ch] >= self.last:
                self.aligned[ch] = True
            if self.idle:
                self.idle = False
                self.out.append(ACTIVE)


def _steps(max_channels: int = 5):
    timestamps = st.one_of(
        st.integers(0, 30), st.sampled_from([MIN_TIMESTAMP, MAX_TIMESTAMP, MAX_TIMESTAMP - 1])
    )
    step = st.one_of(
        st.tuples(st.just("wm"), st.integers(0, max_channels - 1), timestamps),
        st.tuples(st.just("idle"), st.integers(0, max_channels - 1), st.just(0)),
        st.tuples(st.just("active"), st.integers(0, max_channels - 1), st.just(0)),
    )
    return st.tuples(st.integers(1, max_channels), st.lists(step, max_size=80))


@settings(max_examples=400, deadline=None)
@given(_steps())
def test_valve_matches_the_naive_model(case):
    n, steps = case
    valve, model, out = StatusWatermarkValve(n), NaiveValve(n), CollectingOutput()
    for kind, ch, ts in steps:
        ch %= n
        if kind == "wm":
            valve.input_watermark(ts, ch, out)
            model.watermark(ts, ch)
        else:
            status = IDLE if kind == "idle" else ACTIVE
            valve.input_watermark_status(status, ch, out)
            model.status(status, ch)
        valve.check_invariants()
        assert out.elements == model.out
        assert valve.last_output_watermark == model.last
        assert valve.is_idle() == model.idle
        for i in range(n):
            assert valve.is_channel_aligned(i) == model.aligned[i]
    emitted = [e.timestamp for e in out.elements if isinstance(e, Watermark)]
    assert emitted == sorted(set(emitted))  # strictly increasing
    statuses = [e for e in out.elements if isinstance(e, WatermarkStatus)]
    assert all(a is not b for a, b in itertools.pairwise(statuses))
    assert not statuses or statuses[0] is IDLE


# ------------------------------------------------------------------------ two inputs


class TestTwoInputCombiner:
    def run(self, *steps):
        c, out = TwoInputWatermarkCombiner(), CollectingOutput()
        for kind, index, value in steps:
            if kind == "wm":
                c.input_watermark(value, index, out)
            else:
                c.input_watermark_status(value, index, out)
            c.check_invariants()
        return c, out.elements

    def test_min_of_both_inputs(self):
        _, out = self.run(("wm", 0, 10), ("wm", 1, 5), ("wm", 1, 20), ("wm", 0, 30))
        assert out == [W(5), W(10), W(20)]

    def test_lower_input_watermark_does_not_regress(self):
        _, out = self.run(("wm", 0, 10), ("wm", 1, 10), ("wm", 0, 3), ("wm", 1, 12))
        assert out == [W(10)]

    def test_idle_input_does_not_hold_back_the_other(self):
        c, out = self.run(("wm", 0, 10), ("st", 1, IDLE), ("wm", 0, 20))
        assert out == [W(10), W(20)]
        assert not c.is_idle()

    def test_idle_input_releases_the_other_at_once(self):
        _, out = self.run(("wm", 0, 10), ("wm", 1, 4), ("st", 1, IDLE))
        assert out == [W(4), W(10)]

    def test_both_idle_is_idle_without_flushing(self):
        c, out = self.run(("wm", 0, 10), ("wm", 1, 4), ("st", 0, IDLE), ("st", 1, IDLE))
        assert out == [W(4), IDLE]
        assert c.is_idle() and c.last_output_watermark == 4

    def test_active_again_emits_active_then_a_higher_min(self):
        _, out = self.run(
            ("wm", 0, 10), ("wm", 1, 20), ("st", 0, IDLE), ("st", 1, IDLE), ("st", 1, ACTIVE)
        )
        assert out == [W(10), W(20), IDLE, ACTIVE]

    def test_reactivated_lagging_input_holds_the_combined_back(self):
        _, out = self.run(
            ("wm", 0, 5), ("st", 0, IDLE), ("wm", 1, 30), ("st", 0, ACTIVE), ("wm", 1, 40)
        )
        assert out == [W(30)]  # input 0 at 5 holds it until it passes 30

    def test_watermark_on_an_idle_input_makes_it_active(self):
        c, out = self.run(("st", 0, IDLE), ("st", 1, IDLE), ("wm", 0, 7))
        assert out == [IDLE, ACTIVE, W(7)]  # input 1 (at MIN) is idle: the min is input 0
        assert not c.is_idle()

    def test_validation(self):
        c, out = TwoInputWatermarkCombiner(), CollectingOutput()
        with pytest.raises(ValueError, match=r"input_index must be in \[0, 2\)"):
            c.input_watermark(1, 2, out)
        with pytest.raises(TypeError, match="status must be"):
            c.input_watermark_status(None, 0, out)  # type: ignore[arg-type]


def test_combiner_watermark_on_idle_input_emits_active_before_the_watermark():
    c, out = TwoInputWatermarkCombiner(), CollectingOutput()
    c.input_watermark(3, 1, out)
    c.input_watermark_status(IDLE, 0, out)
    c.input_watermark_status(IDLE, 1, out)
    c.input_watermark(9, 1, out)
    assert out.elements == [W(3), IDLE, ACTIVE, W(9)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("wm"), st.integers(0, 1), st.integers(0, 30)),
            st.tuples(st.just("st"), st.integers(0, 1), st.sampled_from([IDLE, ACTIVE])),
        ),
        max_size=60,
    )
)
def test_combiner_matches_min_over_active_inputs(steps):
    c, out = TwoInputWatermarkCombiner(), CollectingOutput()
    wm, idle = [MIN_TIMESTAMP] * 2, [False] * 2
    combined, model_idle, expected = MIN_TIMESTAMP, False, []
    for kind, i, value in steps:
        if kind == "wm":
            c.input_watermark(value, i, out)
            wm[i] = max(wm[i], value)
            idle[i] = False
        else:
            c.input_watermark_status(value, i, out)
            idle[i] = value.is_idle()
        active = [w for w, d in zip(wm, idle, strict=True) if not d]
        if not active:
            if not model_idle:
                model_idle = True
                expected.append(IDLE)
        else:
            if model_idle:
                model_idle = False
                expected.append(ACTIVE)
            if min(active) > combined:
                combined = min(active)
                expected.append(W(combined))
        c.check_invariants()
        assert out.elements == expected


# ------------------------------------------------------------------------ multiplexer


class TestMultiplexer:
    def make(self, *ids):
        underlying = ListWatermarkOutput()
        mux = WatermarkOutputMultiplexer(underlying)
        for split_id in ids:
            mux.register_new_output(split_id)
        return mux, underlying

    def test_immediate_outputs_combine_by_min(self):
        mux, u = self.make("a", "b")
        a, b = mux.get_immediate_output("a"), mux.get_immediate_output("b")
        a.emit_watermark(10)
        assert u.events == []  # b still at MIN
        b.emit_watermark(Watermark(5))
        b.emit_watermark(15)
        a.emit_watermark(12)
        assert u.events == [5, 10, 12]
        assert mux.combined_watermark == 12

    def test_combined_is_monotonic(self):
        mux, u = self.make("a")
        a = mux.get_immediate_output("a")
        a.emit_watermark(10)
        a.emit_watermark(3)
        mux.register_new_output("late")  # a new split at MIN: combined never regresses
        a.emit_watermark(20)
        mux.on_periodic_emit()
        assert u.events == [10]
        assert mux.split_watermark("a") == 20

    def test_finished_split_leaves_the_min(self):
        mux, u = self.make("a", "b")
        a, b = mux.get_immediate_output("a"), mux.get_immediate_output("b")
        a.emit_watermark(100)
        b.emit_watermark(5)
        assert u.events == [5]
        assert mux.unregister_output("b") is True
        assert u.events == [5]  # not at once: at the next update
        assert mux.unregister_output("b") is False
        assert mux.split_ids() == ["a"]
        mux.on_periodic_emit()
        assert u.events == [5, 100]

    # the cases of Flink's WatermarkOutputMultiplexerTest about removing an output

    def test_removing_the_lowest_output_does_not_advance_at_once(self):
        mux, u = self.make("lower", "higher")
        mux.get_immediate_output("lower").emit_watermark(-4343)
        mux.get_immediate_output("higher").emit_watermark(-4333)
        assert u.events == [-4343]
        mux.unregister_output("lower")
        assert u.events == [-4343]
        assert mux.combined_watermark == -4343

    def test_removal_unblocks_at_the_next_immediate_update(self):
        mux, u = self.make("lower", "higher")
        mux.get_immediate_output("lower").emit_watermark(156765)
        mux.unregister_output("lower")
        assert u.events == []
        mux.get_immediate_output("higher").emit_watermark(156775)
        assert u.events == [156775]

    def test_removing_the_highest_output_does_not_retract(self):
        mux, u = self.make("higher")
        mux.get_immediate_output("higher").emit_watermark(2)
        mux.unregister_output("higher")
        mux.register_new_output("lower")
        mux.get_immediate_output("lower").emit_watermark(1)
        mux.on_periodic_emit()
        assert u.events == [2]

    def test_removal_takes_effect_on_a_mark_idle_or_active(self):
        mux, u = self.make("a", "b", "c")
        a, b, c = (mux.get_immediate_output(i) for i in "abc")
        a.emit_watermark(3)
        b.emit_watermark(8)
        c.emit_watermark(9)
        mux.unregister_output("a")
        assert u.events == [3]
        c.mark_idle()  # an update: the removal of a counts now
        assert u.events == [3, 8]

    def test_deferred_outputs_combine_on_periodic_emit(self):
        mux, u = self.make("a", "b")
        a, b = mux.get_deferred_output("a"), mux.get_deferred_output("b")
        a.emit_watermark(7)
        b.emit_watermark(9)
        assert u.events == []
        mux.on_periodic_emit()
        assert u.events == [7]

    def test_idle_split_is_left_out_and_all_idle_is_idle_once(self):
        mux, u = self.make("a", "b")
        a, b = mux.get_immediate_output("a"), mux.get_immediate_output("b")
        a.emit_watermark(10)
        b.mark_idle()
        assert u.events == [10]
        a.mark_idle()
        mux.on_periodic_emit()
        assert u.events == [10, WatermarkStatus.IDLE]
        assert mux.is_idle()
        a.mark_active()
        assert u.events == [10, WatermarkStatus.IDLE, WatermarkStatus.ACTIVE]
        assert not mux.is_idle()

    def test_watermark_on_an_idle_split_reactivates(self):
        mux, u = self.make("a")
        a = mux.get_immediate_output("a")
        a.emit_watermark(10)
        a.mark_idle()
        a.emit_watermark(5)  # not higher, but the split is active again
        assert u.events == [10, WatermarkStatus.IDLE, WatermarkStatus.ACTIVE]
        a.emit_watermark(11)
        assert u.events[-1] == 11

    def test_immediate_and_deferred_share_the_split_state(self):
        mux, u = self.make("a")
        mux.get_deferred_output("a").emit_watermark(4)
        mux.get_immediate_output("a").emit_watermark(3)  # not higher than the state: nothing
        assert u.events == []
        mux.on_periodic_emit()
        assert u.events == [4]

    def test_no_splits_emits_nothing(self):
        mux, u = self.make()
        mux.on_periodic_emit()
        assert u.events == [] and not mux.is_idle()

    def test_errors_name_the_split(self):
        mux, _ = self.make("a")
        with pytest.raises(ValueError, match="split_id 'a' is already registered"):
            mux.register_new_output("a")
        with pytest.raises(ValueError, match="no output registered under split_id 'x'"):
            mux.get_immediate_output("x")
        with pytest.raises(TypeError, match="underlying_output must be a WatermarkOutput"):
            WatermarkOutputMultiplexer(CollectingOutput())  # type: ignore[arg-type]

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["wm", "idle", "active", "done"]),
                st.integers(0, 3),
                st.integers(0, 40),
            ),
            max_size=60,
        )
    )
    def test_immediate_outputs_match_min_over_active_splits(self, steps):
        mux, u = self.make("0", "1", "2", "3")
        outs = {i: mux.get_immediate_output(str(i)) for i in range(4)}
        state = {i: [MIN_TIMESTAMP, False] for i in range(4)}
        combined, idle, expected = MIN_TIMESTAMP, False, []
        for kind, i, ts in steps:
            if i not in state:
                continue
            # an unregistration is combined at the next update, as in Flink: a mark or a
            # watermark that raises its split above the combined one (or reactivates it)
            combines = kind in ("idle", "active")
            if kind == "wm":
                outs[i].emit_watermark(ts)
                was_idle = state[i][1]
                combines = was_idle or (ts > state[i][0] and ts > combined)
                state[i] = [max(state[i][0], ts), False]
            elif kind == "idle":
                outs[i].mark_idle()
                state[i][1] = True
            elif kind == "active":
                outs[i].mark_active()
                state[i][1] = False
            else:
                mux.unregister_output(str(i))
                del state[i]
            if not combines or not state:
                continue
            active = [w for w, d in state.values() if not d]
            if not active:
                if not idle:
                    idle = True
                    expected.append(WatermarkStatus.IDLE)
            else:
                if idle:
                    idle = False
                    expected.append(WatermarkStatus.ACTIVE)
                if min(active) > combined:
                    combined = min(active)
                    expected.append(combined)
            mux.check_invariants()
            assert u.events == expected
