"""The broadcast operators through the two-input harness, the order in which broadcast and keyed
elements meet in a job (the same at every parallelism, as a model says), and the errors of bad
use."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import Types, WatermarkStrategy
from sparktide.datastream import (
    BroadcastConnectedStream,
    BroadcastProcessFunction,
    BroadcastStream,
    KeyedBroadcastProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import (
    BroadcastState,
    MapStateDescriptor,
    OperatorStateStore,
    ReadOnlyBroadcastState,
    ValueStateDescriptor,
)
from sparktide.runtime.elements import MIN_TIMESTAMP, StreamRecord, Watermark
from sparktide.runtime.keygroups import assign_to_key_group
from sparktide.testing import (
    for_broadcast_process_function,
    for_keyed_broadcast_process_function,
)

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
OTHER = MapStateDescriptor("other", Types.STRING(), Types.LONG())
LOW = OutputTag("low")
COUNT = ValueStateDescriptor("count", Types.LONG())


class Limits(KeyedBroadcastProcessFunction):
    """Counts each key's events; an event above the limit of its kind yields an alert, one
    below goes to a side output; a timer 10 ms after each event reports the count; a broadcast
    "reset" sets every key's count to 0."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):
        key, kind, amount = value
        self.count.update((self.count.value() or 0) + 1)
        limit = ctx.get_broadcast_state(RULES).get(kind)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        if limit is None:
            return
        if amount > limit:
            yield ("alert", key, kind, amount)
        else:
            yield LOW, (key, amount)

    def on_timer(self, timestamp, ctx):
        rules = sorted(ctx.get_broadcast_state(RULES).items())
        yield ("timer", ctx.get_current_key(), timestamp, self.count.value(), rules)

    def process_broadcast_element(self, value, ctx):
        kind, limit = value
        if kind == "reset":
            ctx.apply_to_keyed_state(COUNT, lambda key, state: state.update(0))
            return
        ctx.get_broadcast_state(RULES).put(kind, limit)
        yield ("rule", kind, limit, ctx.current_watermark())


def _harness(**kwargs):
    return for_keyed_broadcast_process_function(Limits(), lambda v: v[0], [RULES], **kwargs)


# ------------------------------------------------------------------ the harness


def test_keyed_side_reads_what_the_broadcast_side_wrote() -> None:
    h = _harness()
    h.process_element(("a", "x", 5), 1)  # no rule yet: nothing
    h.process_broadcast_element(("x", 3), 2)
    h.process_element(("a", "x", 5), 3)
    h.process_element(("b", "x", 2), 4)
    assert h.extract_output_values() == [("rule", "x", 3, MIN_TIMESTAMP), ("alert", "a", "x", 5)]
    assert [r.timestamp for r in h.get_records()] == [2, 3]
    assert h.get_side_output(LOW) == [StreamRecord(("b", 2), 4)]
    assert h.get_broadcast_state(RULES) == {"x": 3}
    assert h.num_event_time_timers() == 3


def test_the_watermark_is_the_minimum_of_both_inputs_and_fires_timers() -> None:
    h = _harness()
    h.process_broadcast_element(("x", 3), 0)
    h.process_element(("a", "x", 1), 5)
    h.clear_output()
    h.process_watermark1(100)
    assert h.get_output() == [] and h.get_current_watermark() == MIN_TIMESTAMP
    h.process_broadcast_watermark(12)
    assert h.get_current_watermark() == 12
    h.process_broadcast_element(("y", 7), 13)
    assert h.get_output() == [Watermark(12), StreamRecord(("rule", "y", 7, 12), 13)]
    h.process_broadcast_watermark(20)
    assert h.extract_output_values()[-1] == ("timer", "a", 15, 1, [("x", 3), ("y", 7)])
    assert h.get_output()[-1] == Watermark(20)


@pytest.mark.usefixtures("state_backend")
def test_apply_to_keyed_state_visits_every_key_in_key_group_order() -> None:
    h = _harness()
    keys = [f"k{i}" for i in range(12)]
    for i, k in enumerate(keys):
        h.process_element((k, "x", 1), i)
    seen: list[str] = []
    h.process_broadcast_element(("reset", 0), 50)
    h.process_watermark1(1000)
    h.process_watermark2(1000)
    timers = [v for v in h.extract_output_values() if v[0] == "timer"]
    assert sorted(t[1] for t in timers) == sorted(keys)
    assert all(t[3] == 0 for t in timers)  # every count was reset
    operator = h.operator
    operator.apply_to_keyed_state(COUNT, lambda key, state: seen.append(key))
    assert sorted(seen) == sorted(keys)
    groups = [assign_to_key_group(k, 128) for k in seen]
    assert groups == sorted(groups)


def test_broadcast_state_snapshot_restores_into_any_subtask() -> None:
    h = _harness()
    h.process_broadcast_element(("x", 3), 1)
    h.process_broadcast_element(("y", 4), 2)
    data = h.snapshot_broadcast_state()
    for subtask in range(3):
        other = _harness(broadcast_state=data, parallelism=3, subtask_index=subtask)
        assert other.get_broadcast_state(RULES) == {"x": 3, "y": 4}
        kgs = other.operator.setup_info.key_group_range
        key = next(
            k for k in map(str, range(99)) if kgs.start <= assign_to_key_group(k, 128) <= kgs.end
        )
        other.process_element((key, "y", 9), 5)
        assert other.extract_output_values() == [("alert", key, "y", 9)]


def test_non_keyed_broadcast_function() -> None:
    class Tag(BroadcastProcessFunction):
        def process_element(self, value, ctx):
            state = ctx.get_broadcast_state(RULES)
            yield value, state.get("label"), ctx.timestamp()

        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(RULES)["label"] = value

    h = for_broadcast_process_function(Tag(), [RULES])
    h.process_element(1, 10)
    h.process_broadcast_element("L", 11)
    h.process_element(2, 12)
    assert h.extract_output_values() == [(1, None, 10), (2, "L", 12)]


def test_state_classes_are_pyflinks() -> None:
    h = _harness()
    h.process_broadcast_element(("x", 3), 1)
    store = h.operator.broadcast_state
    assert isinstance(store, OperatorStateStore)
    assert store.get_broadcast_state(RULES) is store.writable(RULES)
    assert isinstance(store.writable(RULES), BroadcastState)
    view = store.read_only(RULES)
    assert isinstance(view, ReadOnlyBroadcastState) and not isinstance(view, BroadcastState)
    assert "x" in view and view["x"] == 3 and list(view) == ["x"] and not view.is_empty()


# ------------------------------------------------------------------ bad use


def test_unregistered_descriptor_is_a_clear_error() -> None:
    class Wrong(BroadcastProcessFunction):
        def process_element(self, value, ctx):
            ctx.get_broadcast_state(OTHER)

        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(OTHER).put("a", 1)

    h = for_broadcast_process_function(Wrong(), [RULES])
    with pytest.raises(ValueError, match=r"'other' is not registered.*broadcast\(\.\.\.\).*rules"):
        h.process_broadcast_element(1, 1)
    with pytest.raises(ValueError, match="'other' is not registered"):
        h.process_element(1, 1)


def test_writing_from_the_read_only_side_is_a_clear_error() -> None:
    class Writer(KeyedBroadcastProcessFunction):
        def process_element(self, value, ctx):
            ctx.get_broadcast_state(RULES).put("x", 1)

        def process_broadcast_element(self, value, ctx):
            pass

        def on_timer(self, timestamp, ctx):
            ctx.get_broadcast_state(RULES).remove("x")

    h = for_keyed_broadcast_process_function(Writer(), lambda v: v, [RULES])
    with pytest.raises(TypeError, match="'rules' is read-only here: only process_broadcast_elem"):
        h.process_element("a", 1)


def test_builder_errors() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    ds = env.from_collection([1, 2])
    with pytest.raises(TypeError, match="MapStateDescriptor"):
        ds.broadcast(COUNT)
    with pytest.raises(ValueError, match="registered twice"):
        ds.broadcast(RULES, MapStateDescriptor("rules", None, None))
    with pytest.raises(TypeError, match="cannot broadcast a KeyedStream"):
        ds.key_by(lambda v: v).broadcast(RULES)
    bs = ds.broadcast(RULES)
    assert isinstance(bs, BroadcastStream)
    connected = ds.connect(bs)
    assert isinstance(connected, BroadcastConnectedStream)
    with pytest.raises(TypeError, match="needs a keyed stream"):
        connected.process(Limits())
    with pytest.raises(TypeError, match="is for a non-keyed stream"):
        ds.key_by(lambda v: v).connect(bs).process(
            type(
                "B",
                (BroadcastProcessFunction,),
                {
                    "process_element": lambda s, v, c: None,
                    "process_broadcast_element": lambda s, v, c: None,
                },
            )()
        )
    with pytest.raises(TypeError, match="process_broadcast_element"):
        connected.process(object())


# ------------------------------------------------------------------ in a job


def _job_output(rules, events, parallelism: int, every: int | None) -> list[tuple]:
    """Rules (kind, limit) broadcast to events (key, kind, amount), both from collections with
    timestamps = index, rules created first."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    if every is not None:
        env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    r = (
        env.from_collection([(i, v) for i, v in enumerate(rules)])
        .assign_timestamps_and_watermarks(strategy.with_timestamp_assigner(lambda v, _: v[0]))
        .map(lambda v: v[1])
    )
    e = (
        env.from_collection([(i, v) for i, v in enumerate(events)])
        .assign_timestamps_and_watermarks(strategy.with_timestamp_assigner(lambda v, _: v[0]))
        .map(lambda v: v[1])
    )
    out = e.key_by(lambda v: v[0]).connect(r.broadcast(RULES)).process(Limits())
    return list(out.execute_and_collect())


def _model(rules, events, every: int | None) -> list[tuple]:
    """What the keyed side emits from process_element under the documented order: round by
    round, the rules split's share, then the events split's share."""
    step = every or max(len(rules), len(events), 1)
    state: dict[str, int] = {}
    out = []
    for start in range(0, max(len(rules), len(events)), step):
        for kind, limit in rules[start : start + step]:
            if kind != "reset":
                state[kind] = limit
        for key, kind, amount in events[start : start + step]:
            limit = state.get(kind)
            if limit is not None and amount > limit:
                out.append(("alert", key, kind, amount))
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), every=st.sampled_from([None, 1, 3]))
def test_elements_meet_in_the_documented_order_at_any_parallelism(seed: int, every) -> None:
    rng = random.Random(seed)
    kinds = ["x", "y", "z", "reset"]
    rules = [(rng.choice(kinds), rng.randrange(10)) for _ in range(rng.randrange(1, 8))]
    events = [(f"k{rng.randrange(6)}", rng.choice("xyz"), rng.randrange(10)) for _ in range(20)]
    outputs = {p: _job_output(rules, events, p, every) for p in (1, 2, 4)}
    alerts = [o for o in outputs[1] if o[0] == "alert"]
    assert alerts == _model(rules, events, every)
    rule_lines = sorted(o for o in outputs[1] if o[0] == "rule")
    for p in (2, 4):
        keyed_side = [o for o in outputs[p] if o[0] != "rule"]
        assert keyed_side == [o for o in outputs[1] if o[0] != "rule"], f"parallelism {p}"
        # what process_broadcast_element yields, every subtask emits
        assert sorted(o for o in outputs[p] if o[0] == "rule") == sorted(rule_lines * p)


class Label(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.get_broadcast_state(RULES).get("label")

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put("label", value)


@pytest.mark.parametrize("every", [None, 2])
def test_non_keyed_broadcast_job_is_the_same_at_any_parallelism(every) -> None:
    def run(parallelism: int) -> list[tuple]:
        env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        env.set_parallelism(parallelism)
        if every is not None:
            env.get_config().set_watermark_every(every)
        labels = env.from_collection(["A", "B", "C"]).broadcast(RULES)
        values = env.from_collection(list(range(7)))
        return list(values.connect(labels).process(Label()).execute_and_collect())

    outputs = {p: run(p) for p in (1, 2, 4)}
    if every is None:  # one round: every label before every value
        assert outputs[1] == [(v, "C") for v in range(7)]
    else:  # rounds of 2: labels A, B (round 0), C (round 1) before that round's values
        assert outputs[1] == [(0, "B"), (1, "B"), (2, "C"), (3, "C"), (4, "C"), (5, "C"), (6, "C")]
    assert outputs[2] == outputs[1] and outputs[4] == outputs[1]


def test_broadcast_without_descriptors_sends_every_element_to_every_subtask() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(3)
    ds = env.from_collection([1, 2]).broadcast()
    out = ds.map(lambda v: v * 10).execute_and_collect()
    assert sorted(out) == [10, 10, 10, 20, 20, 20]
