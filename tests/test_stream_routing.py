"""``partition_custom``, ``forward``, ``project``, ``set_description``: where records go and
what they become, on the local runtime and on Spark."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Types
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.functions import MapFunction, Partitioner, RuntimeContext


class Where(MapFunction):
    """(value, the subtask that saw it)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value: Any) -> Any:
        return value, self.index


class ByLastDigit(Partitioner):
    def partition(self, key: int, num_partitions: int) -> int:
        return key % 10 % num_partitions


def routed(runtime: str, values: list[int], parallelism: int) -> list[tuple[int, int]]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    stream = env.from_collection(values, Types.LONG()).partition_custom(ByLastDigit(), abs)
    where = stream.map(Where(), Types.TUPLE([Types.LONG(), Types.INT()]))
    return where.set_parallelism(parallelism).execute_and_collect()  # type: ignore[no-any-return]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=25, deadline=None)
@given(st.lists(st.integers(-500, 500), max_size=30), st.integers(1, 4))
def test_partition_custom_sends_each_record_to_the_partitioners_subtask(
    values: list[int], parallelism: int
) -> None:
    out = routed("local", values, parallelism)
    assert sorted(out) == sorted((v, abs(v) % 10 % parallelism) for v in values)


def test_partition_custom_on_spark_matches_the_local_runtime(spark: Any) -> None:
    values = list(range(-20, 40, 3))
    assert sorted(routed("spark", values, 3)) == sorted(routed("local", values, 3))
    assert {subtask for _, subtask in routed("spark", values, 3)} == {0, 1, 2}


def test_a_partitioner_that_returns_no_subtask_fails_naming_the_key() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    stream = env.from_collection([7]).partition_custom(lambda key, n: n + key, lambda v: v)
    with pytest.raises(ValueError, match="returned 9 for key 7, which is no subtask index"):
        stream.map(lambda v: v).set_parallelism(2).execute_and_collect()


def test_keyed_streams_cannot_be_repartitioned() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    keyed = env.from_collection([1]).key_by(lambda v: v)
    with pytest.raises(TypeError, match="cannot be re-partitioned with forward"):
        keyed.forward()
    with pytest.raises(TypeError, match="with partition_custom"):
        keyed.partition_custom(lambda k, n: 0, lambda v: v)


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_forward_and_project(runtime: str, request: pytest.FixtureRequest) -> None:
    if runtime == "spark":
        request.getfixturevalue("spark")
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(2)
    row_type = Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE()])
    rows = [(i, f"n{i}", i / 2) for i in range(6)]
    stream = env.from_collection(rows, row_type).map(lambda v: v, row_type).forward()
    projected = stream.project(2, 0).set_description("score and id")
    assert projected.get_type() == Types.TUPLE([Types.DOUBLE(), Types.INT()])
    assert sorted(projected.execute_and_collect()) == sorted((i / 2, i) for i in range(6))


def test_project_says_what_is_wrong() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    pairs = env.from_collection([(1, "a")], Types.TUPLE([Types.INT(), Types.STRING()]))
    with pytest.raises(ValueError, match=r"have 2 fields, so \[5\] are no field indexes"):
        pairs.project(0, 5)
    with pytest.raises(ValueError, match="one or more field indexes"):
        pairs.project()
