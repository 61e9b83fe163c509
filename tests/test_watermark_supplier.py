"""``TimestampAssignerSupplier`` on ``WatermarkStrategy`` (Flink's): every task asks the
supplier for its own assigner."""

from __future__ import annotations

import pytest

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.common.watermark_strategy import (
    TimestampAssigner,
    TimestampAssignerSupplier,
    WatermarkStrategy,
)
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows


class Stamping(TimestampAssigner):
    """Stamps each record with the order this assigner saw it in (state of one task)."""

    def __init__(self) -> None:
        self.seen = 0

    def extract_timestamp(self, value: object, record_timestamp: int) -> int:
        self.seen += 1
        return self.seen * 10


class PerTask(TimestampAssignerSupplier):
    def __init__(self) -> None:
        self.created = 0

    def create_timestamp_assigner(self, context: object) -> TimestampAssigner:
        self.created += 1
        return Stamping()


def test_each_task_gets_a_fresh_assigner() -> None:
    supplier = PerTask()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(supplier)
    first, second = (strategy.create_timestamp_assigner(None) for _ in range(2))
    assert first is not second and supplier.created == 2
    assert [first.extract_timestamp("x", MIN_TIMESTAMP) for _ in range(3)] == [10, 20, 30]
    assert second.extract_timestamp("x", MIN_TIMESTAMP) == 10
    assert strategy.timestamp_assigner is supplier


def test_the_supplier_sees_the_tasks_clock() -> None:
    class FromClock(TimestampAssignerSupplier):
        def create_timestamp_assigner(self, context: object) -> object:
            start = context.current_processing_time()  # type: ignore[attr-defined]
            return lambda value, record_timestamp: start + value

    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(FromClock())

    class Clock:
        def get_current_processing_time(self) -> int:
            return 1_000

    assert strategy.create_timestamp_assigner(Clock()).extract_timestamp(5, MIN_TIMESTAMP) == 1005
    with pytest.raises(ValueError, match="context is None"):
        strategy.create_timestamp_assigner(None)


def test_of_hands_out_the_same_assigner() -> None:
    assigner = Stamping()
    supplier = TimestampAssignerSupplier.of(assigner)
    assert supplier.create_timestamp_assigner(None) is assigner
    assert repr(supplier).startswith("TimestampAssignerSupplier.of(")
    with pytest.raises(TypeError, match="assigner must be a TimestampAssigner or a callable"):
        TimestampAssignerSupplier.of(42)


def test_a_supplier_returning_no_assigner_is_named() -> None:
    class Broken(TimestampAssignerSupplier):
        def create_timestamp_assigner(self, context: object) -> object:
            return 42

    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(Broken())
    with pytest.raises(TypeError, match=r"returned int from create_timestamp_assigner\(\)"):
        strategy.create_timestamp_assigner(None)


@pytest.mark.parametrize(("parallelism", "windows"), [(1, ["aa", "aa", "aa"]), (2, ["aa", "aaaa"])])
def test_a_job_stamps_with_one_assigner_per_subtask(parallelism: int, windows: list[str]) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(PerTask())
    out = (
        env.from_collection(["a"] * 6)
        .rebalance()
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda v: v)
        .window(TumblingEventTimeWindows.of(25))
        .reduce(lambda x, y: x + y)
    )
    # each subtask stamps its own records 10, 20, 30, ...: at parallelism 2 both subtasks put
    # two records into [0, 25); one shared assigner would have put only two there in all
    assert sorted(out.execute_and_collect()) == windows
