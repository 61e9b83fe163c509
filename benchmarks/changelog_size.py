"""Changelog size against full snapshot size, for keyed state and timers of a streaming job.

Runs the worker side of a streaming micro-batch in process, without Spark:
:meth:`~sparktide.spark.stream_job.StreamingJob.run_stream_subtask` restores the subtask, runs a
``KeyedProcessFunction`` and writes the version with
:meth:`~sparktide.spark.checkpoint.CheckpointStore.write_version`, exactly as a Spark task of a
streaming run does. Each key holds a count (``ValueState``) and one pending event-time timer
(registered in arrival order, timestamps in random order, many of them equal). Batch 0 writes
the full snapshot of every key; each next batch touches a fraction of the keys (a new count, the
old timer deleted and a new one registered) and writes a changelog. The first changelog batch
restores from the checkpoint files (a cold worker), the second from the worker cache (the same
worker, next batch).

Usage: ``python benchmarks/changelog_size.py [--keys 100000 1000000] [--touched 1.0]``
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import sys
import tempfile
from typing import Any

from sparktide.common import Types
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.planner import plan_job
from sparktide.runtime.keygroups import assign_to_key_group
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_meta import BatchCommit
from sparktide.spark.placement import placement_keys
from sparktide.spark.spark_job import CHUNK, FLUSH, SparkJob
from sparktide.spark.stream_job import StreamingJob
from sparktide.spark.streaming import fingerprint
from sparktide.spark.worker_resources import WorkerResources

MAXP = 128
TIMER_DELAY = 60_000


class CountAndRemind(KeyedProcessFunction):
    """Counts the records of each key and keeps one reminder timer, ``TIMER_DELAY`` after the
    key's latest record (the previous reminder is deleted)."""

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("count-and-reminder", Types.PICKLED_BYTE_ARRAY())
        self.state = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        count, reminder = self.state.value() or (0, None)
        timers = ctx.timer_service()
        if reminder is not None:
            timers.delete_event_time_timer(reminder)
        reminder = ctx.timestamp() + TIMER_DELAY
        timers.register_event_time_timer(reminder)
        self.state.update((count + 1, reminder))
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), self.state.value()[0]


def streaming_job() -> SparkJob:
    """The worker-side job of ``key_by(key).process(CountAndRemind())`` at parallelism 1."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(1)
    env.set_max_parallelism(MAXP)
    records = env.from_collection([("k", 0)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    records.key_by(lambda r: r[0]).process(CountAndRemind()).print()
    plan = plan_job(env._graph, 1, MAXP)
    return SparkJob(plan, {}, None, None, {1: placement_keys(1)}, CHUNK, FLUSH)


def batch_entries(version: int, keys: list[str], rng: random.Random) -> list[tuple]:
    """The exchange entries of one batch: one record per key, timestamps in random order (and
    among those of the earlier batches: the watermark has not passed them)."""
    entries = []
    for i, key in enumerate(keys):
        ts = rng.randrange(100_000)
        record = StreamRecord((key, ts), ts)
        entries.append(((version, 0, 0, i, 0), 0, 1, record, key, assign_to_key_group(key, MAXP)))
    return entries


def run_batch(
    job: SparkJob,
    store: CheckpointStore,
    version: int,
    entries: list[tuple],
    resources: WorkerResources,
) -> int:
    """Run micro-batch ``version`` of the single subtask in the worker whose registry is
    ``resources``, commit it; the bytes it wrote."""
    stage = job.plan.stages[-1]
    previous = store.commit_info(version - 1) if version > 0 else None
    stats = resources.stats
    written = stats.bytes_snapshot + stats.bytes_changelog
    worker = StreamingJob(
        job, store, version, version, max(version - 1, 0), previous, {}, resources
    )
    worker.run_stream_subtask(stage.index, 0, [pickle.dumps(entries, protocol=5)])
    store.commit(version, BatchCommit(processing_time=version, parallelism={stage.index: 1}))
    return stats.bytes_snapshot + stats.bytes_changelog - written


def measure(n_keys: int, touched: float, seed: int = 7) -> list[tuple[str, ...]]:
    """Rows ``(keys, touched, restored from, full snapshot bytes, changelog bytes, ratio)``."""
    rng = random.Random(seed)
    keys = [f"user-{i}" for i in range(n_keys)]
    job = streaming_job()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = CheckpointStore(os.path.join(tmp, "ckpt"), fingerprint(job.plan))
        worker = WorkerResources()
        full = run_batch(job, store, 0, batch_entries(0, keys, rng), worker)
        n_touched = max(1, round(n_keys * touched / 100))
        for version, source in ((1, "checkpoint files"), (2, "worker cache")):
            if version == 1:
                worker = WorkerResources()  # a cold worker: the batch reads the checkpoint
            chosen = rng.sample(keys, n_touched)
            log = run_batch(job, store, version, batch_entries(version, chosen, rng), worker)
            if not os.path.exists(store.changelog_path(version, job.plan.stages[-1].index, 0)):
                raise RuntimeError(f"batch {version} wrote no changelog")
            rows.append(
                (
                    f"{n_keys:,}",
                    f"{touched:g}%",
                    source,
                    f"{full:,}",
                    f"{log:,}",
                    f"{100 * log / full:.2f}%",
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--touched", type=float, default=1.0, help="percent of keys per batch")
    args = parser.parse_args(argv)
    header = ("keys", "touched", "restored from", "full snapshot B", "changelog B", "ratio")
    rows = [row for n in args.keys for row in measure(n, args.touched)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
