"""NumberSequenceSource: its range per split, lazily; the same output on both runtimes at any
parallelism; clear errors for bad ranges."""

from __future__ import annotations

import tracemalloc
from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.connectors.number_seq import NumberSequenceSource
from sparktide.datastream.state import ValueStateDescriptor

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@given(st.integers(LONG_MIN, LONG_MAX), st.integers(0, 300), st.integers(1, 9))
def test_the_splits_cover_the_range_once_in_order(start, length, num_splits):
    end = min(start + length, LONG_MAX)
    src = NumberSequenceSource(start, end, num_splits=num_splits)
    splits = src.get_splits()
    assert [s.split_id for s in splits] == [str(i) for i in range(num_splits)]
    sizes = [len(list(src.read_split(s))) for s in splits]
    assert max(sizes) - min(sizes) <= 1
    assert [n for s in splits for n in src.read_split(s)] == list(range(start, end + 1))


def test_a_huge_range_partly_read_is_not_allocated():
    src = NumberSequenceSource(0, LONG_MAX, num_splits=4)
    tracemalloc.start()
    try:
        splits = src.get_splits()
        heads = [list(islice(src.read_split(s), 5)) for s in splits]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert heads[0] == [0, 1, 2, 3, 4] and heads[3][0] == splits[3].payload[0]
    assert peak < 64 * 1024  # 2**63 numbers would be exabytes


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((5, 4), ValueError, r"start must be <= end, got start=5 > end=4"),
        ((0, 2**63), ValueError, r"end must fit a Java long"),
        ((-(2**63) - 1, 0), ValueError, r"start must fit a Java long"),
        ((0.0, 5), TypeError, r"start must be an int, got float"),
        ((0, True), TypeError, r"end must be an int, got bool"),
    ],
)
def test_bad_ranges_are_refused(args, error, match):
    with pytest.raises(error, match=match):
        NumberSequenceSource(*args)


def test_bad_split_counts_are_refused():
    with pytest.raises(ValueError, match="num_splits must be an int >= 1, got 0"):
        NumberSequenceSource(0, 5, num_splits=0)


class RunningSum(KeyedProcessFunction):
    def open(self, rc):
        self.total = rc.get_state(ValueStateDescriptor("total", None))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value
        self.total.update(total)
        yield ctx.get_current_key(), value, total


def run(runtime: str, parallelism: int) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    numbers = env.from_source(
        NumberSequenceSource(-20, 100, num_splits=3), WatermarkStrategy.no_watermarks(), "seq"
    )
    return list(numbers.key_by(lambda n: n % 5).process(RunningSum()).execute_and_collect())


def test_local_and_spark_give_the_same_output_at_any_parallelism(spark):
    expected = run("local", 1)
    assert sorted(v for _, v, _ in expected) == list(range(-20, 101))
    assert run("local", 3) == expected
    for p in (1, 3):
        assert run("spark", p) == expected, f"spark, parallelism {p}"
