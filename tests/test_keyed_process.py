"""KeyedProcessOperator / ProcessOperator through the test harness (docs/semantics.md:
timers, KeyedProcessFunction)."""

from __future__ import annotations

import pytest

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.datastream import KeyedProcessFunction, OutputTag, ProcessFunction, TimeDomain
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.elements import StreamRecord, Watermark
from sparktide.testing import for_keyed_process_function, for_process_function

SIDE = OutputTag("side")

pytestmark = pytest.mark.usefixtures("state_backend")  # every test on both state backends


class TimerEcho(KeyedProcessFunction):
    """Registers an event timer at ts+10 and a processing timer at now+100 per element."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def open(self, runtime_context):
        self.events.append(f"open {runtime_context.get_index_of_this_subtask()}")
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def close(self):
        self.events.append("close")

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ts = ctx.timer_service()
        ts.register_event_time_timer(ctx.timestamp() + 10)
        ts.register_processing_time_timer(ts.current_processing_time() + 100)
        yield ("elem", ctx.get_current_key(), value)
        yield SIDE, ("side", value)
        ctx.output(SIDE, ("ctx-side", value))

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.time_domain(),
            ctx.get_current_key(),
            timestamp,
            ctx.timestamp(),
            self.count.value(),
        )


def test_output_timestamps_keys_domains_and_side_outputs():
    fn = TimerEcho()
    h = for_keyed_process_function(fn, lambda v: v[0])
    assert h.get_processing_time() == MIN_TIMESTAMP  # Flink's harness clock: Long.MIN_VALUE
    h.set_processing_time(0)
    h.process_element("a1", 5)
    h.process_element("b1", 7)
    h.process_element("a2", 6)
    h.process_watermark(16)
    h.set_processing_time(100)
    out = h.get_output()
    assert out[:3] == [
        StreamRecord(("elem", "a", "a1"), 5),
        StreamRecord(("elem", "b", "b1"), 7),
        StreamRecord(("elem", "a", "a2"), 6),
    ]
    # event timers at 15 (a), 17 (b), 16 (a): the watermark 16 fires a@15 and a@16, then is
    # forwarded; outputs carry the timer's timestamp
    assert out[3:6] == [
        StreamRecord((TimeDomain.EVENT_TIME, "a", 15, 15, 2), 15),
        StreamRecord((TimeDomain.EVENT_TIME, "a", 16, 16, 2), 16),
        Watermark(16),
    ]
    # one processing-time timer per key at 100 (deduplicated); no output timestamp
    assert out[6:] == [
        StreamRecord((TimeDomain.PROCESSING_TIME, "a", 100, None, 2), None),
        StreamRecord((TimeDomain.PROCESSING_TIME, "b", 100, None, 1), None),
    ]
    assert h.get_side_output(SIDE) == [
        StreamRecord(("side", "a1"), 5),
        StreamRecord(("ctx-side", "a1"), 5),
        StreamRecord(("side", "b1"), 7),
        StreamRecord(("ctx-side", "b1"), 7),
        StreamRecord(("side", "a2"), 6),
        StreamRecord(("ctx-side", "a2"), 6),
    ]
    assert h.num_event_time_timers() == 1  # b@17
    assert h.num_processing_time_timers() == 0
    assert h.num_keyed_state_entries() == 2
    h.close()
    assert fn.events == ["open 0", "close"]


def test_input_without_timestamp_gives_output_without_timestamp():
    class Plain(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield ctx.timestamp()

    h = for_keyed_process_function(Plain(), lambda v: v)
    h.process_element("x")
    assert h.get_output() == [StreamRecord(None, None)]


def test_functions_may_return_lists_or_none_but_not_scalars():
    class Returns(KeyedProcessFunction):
        def process_element(self, value, ctx):
            if value == "list":
                return [1, 2]
            if value == "none":
                return None
            return 42

    h = for_keyed_process_function(Returns(), lambda v: v)
    h.process_element("list", 1)
    h.process_element("none", 1)
    assert h.extract_output_values() == [1, 2]
    with pytest.raises(TypeError, match="yield"):
        h.process_element("scalar", 1)


@pytest.mark.parametrize("bad", [1.5, "10", None, True])
def test_non_int_timer_timestamps_are_type_errors(bad):
    class Bad(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(bad)

    h = for_keyed_process_function(Bad(), lambda v: v)
    with pytest.raises(TypeError, match=rf"timestamp must be an int.*{type(bad).__name__}"):
        h.process_element("x", 1)
    assert h.num_event_time_timers() == 0


def test_deleting_timers_from_the_user_api():
    class Toggle(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ts = ctx.timer_service()
            if value.endswith("+"):
                ts.register_event_time_timer(50)
                ts.register_processing_time_timer(50)
            else:
                ts.delete_event_time_timer(50)
                ts.delete_processing_time_timer(50)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key()

    h = for_keyed_process_function(Toggle(), lambda v: v[0])
    for v in ["a+", "b+", "a-", "c-"]:
        h.process_element(v, 1)
    assert (h.num_event_time_timers(), h.num_processing_time_timers()) == (1, 1)
    h.process_watermark(50)
    h.set_processing_time(50)
    assert h.extract_output_values() == ["b", "b"]


def test_timers_on_non_keyed_stream_say_key_by():
    class NoKey(ProcessFunction):
        def process_element(self, value, ctx):
            ts = ctx.timer_service()
            yield ts.current_watermark(), ts.current_processing_time(), ctx.timestamp()
            ts.register_event_time_timer(10)

    h = for_process_function(NoKey(), processing_time=42)
    with pytest.raises(RuntimeError, match=r"key_by"):
        h.process_element("x", 3)
    assert h.extract_output_values() == [(-(2**63), 42, 3)]


def test_keyed_state_on_non_keyed_stream_says_key_by():
    class StateNoKey(ProcessFunction):
        def open(self, runtime_context):
            runtime_context.get_state(ValueStateDescriptor("s", None))

        def process_element(self, value, ctx):
            yield value

    with pytest.raises(RuntimeError, match="key_by"):
        for_process_function(StateNoKey())


def test_process_function_side_outputs_and_watermarks():
    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 2:
                yield SIDE, value
            else:
                yield value

    h = for_process_function(Split())
    for i in range(4):
        h.process_element(i, i * 10)
    h.process_watermark(100)
    assert h.get_output() == [StreamRecord(0, 0), StreamRecord(2, 20), Watermark(100)]
    assert [r.value for r in h.get_side_output(SIDE)] == [1, 3]


def test_unsupported_key_type_names_it():
    class Any_(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    h = for_keyed_process_function(Any_(), lambda v: [v])
    with pytest.raises(TypeError, match="list"):
        h.process_element("x", 1)


def test_watermark_is_forwarded_after_the_timers_it_fires():
    class Fire(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            yield timestamp

    h = for_keyed_process_function(Fire(), lambda v: v % 3)
    for t in [30, 10, 20, 40]:
        h.process_element(t, t)
    h.process_watermark(25)
    h.process_watermark(100)
    assert h.get_output() == [
        StreamRecord(10, 10),
        StreamRecord(20, 20),
        Watermark(25),
        StreamRecord(30, 30),
        StreamRecord(40, 40),
        Watermark(100),
    ]
