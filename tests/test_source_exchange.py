"""The exchange above a source's task (:func:`~sparktide.spark.stage_frames.exchange_above`):
the task still reads its own partition (task ``i`` partition ``i``), every row arrives once, and
no sort of the task's output comes before the shuffle."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from sparktide.spark.stage_frames import exchange_above


def _tagged(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from pyspark import TaskContext

    partition = TaskContext.get().partitionId()
    for batch in batches:
        values = batch.column("id").to_pylist()
        yield pa.RecordBatch.from_pydict(
            {
                "position": [v.to_bytes(8, "big") for v in values],
                "partition": [partition] * len(values),
                "id": values,
            }
        )


def test_the_task_reads_its_own_partition_and_nothing_sorts_its_output(spark) -> None:
    source = spark.range(0, 300, 1, 3)  # partition p holds ids [100 p, 100 p + 100)
    task = source.mapInArrow(_tagged, "position binary, partition long, id long")
    frame = exchange_above(task, 3)
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "hashpartitioning(position" in plan, plan
    assert "RoundRobinPartitioning" not in plan and "Sort " not in plan, plan
    rows = frame.collect()
    assert sorted(r.id for r in rows) == list(range(300))
    assert all(r.partition == r.id // 100 for r in rows)
    assert frame.rdd.getNumPartitions() == 3
