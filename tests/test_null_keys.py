"""A key_by that gives a record the key None fails the job, as Flink does ("Assigned key must not
be null!"), naming the key_by (the operator it feeds) and the record, on every path that
computes keys: record by record, by chunks, in a later stage, on Spark; a key selector that
raises is the key_by's failure, not the source's."""

from __future__ import annotations

from typing import Any

import pytest

from sparktide.common import Time, Types, WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.runtime.failures import notes
from sparktide.runtime.null_keys import NullKeyError

ROWS = [("a", 1), ("b", 2), (None, 3), ("a", 4)]
ROW_TYPE = Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.INT()])


def _env(runtime: str = "local", chunks: bool = True) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.configure({"sparktide.execution.chunks": str(chunks).lower()})
    return env


def _failure(job: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        list(job.execute_and_collect())
    return caught.value


def _note(exc: BaseException) -> str:
    described = [n for n in notes(exc) if n.startswith("sparktide: raised by operator")]
    assert len(described) == 1, notes(exc)
    return described[0]


@pytest.mark.parametrize("chunks", [True, False])
def test_a_none_key_fails_naming_the_key_by_and_the_record(chunks: bool) -> None:
    env = _env(chunks=chunks)
    keyed = env.from_collection(ROWS).key_by(lambda r: r[0])
    exc = _failure(keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).name("Totals"))
    assert isinstance(exc, NullKeyError)
    assert str(exc).startswith("Assigned key must not be null!")
    assert "filter those records out before key_by" in str(exc)
    assert _note(exc) == (
        "sparktide: raised by operator 'Totals' (in its key_by) for record (None, 3)"
    )


@pytest.mark.parametrize("chunks", [True, False])
def test_a_null_key_field_fails_before_a_window(chunks: bool) -> None:
    """key_by on a Row field (a FieldKey): a window emitted a row with key None before."""
    env = _env(chunks=chunks)
    stream = env.from_collection(ROWS, type_info=ROW_TYPE).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, _: r[1])
    )
    tumbling = TumblingEventTimeWindows.of(Time.milliseconds(10))
    windowed = stream.key_by("user").window(tumbling).count()
    exc = _failure(windowed.name("Counts"))
    assert isinstance(exc, NullKeyError)
    assert _note(exc) == (
        "sparktide: raised by operator 'Counts' (in its key_by) for record Row(user=None, n=3)"
    )


def test_a_none_key_in_a_later_stage_names_that_key_by() -> None:
    """Keys computed by a keyed stage's output (not the source's): the note names the second
    key_by's operator and not the first stage's current key."""
    env = _env()
    env.set_parallelism(2)
    first = env.from_collection(ROWS).key_by(lambda r: r[1]).map(lambda r: r).name("Copy")
    exc = _failure(first.key_by(lambda r: r[0]).reduce(lambda a, b: a).name("Latest"))
    assert isinstance(exc, NullKeyError)
    assert _note(exc).startswith("sparktide: raised by operator 'Latest' (in its key_by)")
    assert _note(exc).endswith("for record (None, 3)")
    assert "for key" not in _note(exc)


@pytest.mark.parametrize("chunks", [True, False])
def test_a_raising_key_selector_is_the_key_bys_failure(chunks: bool) -> None:
    def key(r: Any) -> Any:
        return r[0].upper()  # None has no upper()

    env = _env(chunks=chunks)
    exc = _failure(env.from_collection(ROWS).key_by(key).reduce(lambda a, b: a).name("Up"))
    assert isinstance(exc, AttributeError)
    assert _note(exc) == "sparktide: raised by operator 'Up' (in its key_by) for record (None, 3)"


def test_none_keys_are_refused_on_spark(spark: Any) -> None:
    env = _env("spark")
    env.set_parallelism(2)
    keyed = env.from_collection(ROWS).key_by(lambda r: r[0])
    exc = _failure(keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).name("Totals"))
    assert "Assigned key must not be null!" in str(exc)
    assert any(
        "raised by operator 'Totals' (in its key_by)" in n and "record (None, 3)" in n
        for n in notes(exc)
    ), notes(exc)


def test_the_operator_test_harness_refuses_a_none_key_too() -> None:
    from sparktide.datastream.functions import KeyedProcessFunction
    from sparktide.testing.harness import for_keyed_process_function

    class Echo(KeyedProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield ctx.get_current_key(), value

    harness = for_keyed_process_function(Echo(), lambda v: v[0])
    harness.process_element(("a", 1), 1)
    with pytest.raises(NullKeyError, match="Assigned key must not be null!"):
        harness.process_element((None, 2), 2)
    assert harness.extract_output_values() == [("a", ("a", 1))]
