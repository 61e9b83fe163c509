"""The worker side of a streaming run: one micro-batch of a source split or a stage subtask.

A :class:`StreamingJob` is shipped to the workers for each micro-batch (``version`` = batch id).
A source split restores its watermark generator, emitter and sequence number from the previous
version, reads the batch's rows and emits its periodic watermark; a stage subtask restores the
keyed state, timers, valves and operator watermarks of its key groups from the checkpoint (see
:mod:`sparktide.spark.checkpoint`), moves its processing-time clock to the batch's time, processes
the batch's entries in position order and writes the next version.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import Any

from sparktide.runtime.execution.tasks import JobTasks
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.executor import SparkJob, arrow_row_schema
from sparktide.spark.split_state import apply_generator_state, capture_generator_state

__all__ = ["SPLIT_STATE", "StreamingJob"]

SPLIT_STATE = -4
_by_position_and_channel = itemgetter(0, 1)


def _restore_watermark(op: Any, watermark: int, services: dict[str, int]) -> None:
    """Put an operator (and its timer services) back at the watermark it had reached; the
    restored valve forwards only higher watermarks."""
    op.restore_watermark(watermark)
    manager = op.time_service_manager
    if manager is not None:
        for name, service in manager.services().items():
            if name in services:
                service.restore_watermark(services[name])


class _Discard:
    def emit_watermark(self, watermark: Any) -> None:
        pass

    def emit_watermark_status(self, status: Any) -> None:
        pass


class StreamingJob(SparkJob):
    """What the workers need to run one micro-batch (``version`` = batch id)."""

    def __init__(
        self,
        base: SparkJob,
        store: CheckpointStore,
        version: int,
        now: int,
        previous_now: int,
        previous: dict[str, Any] | None,
        split_states: dict[int, bytes],
    ) -> None:
        super().__init__(base.plan, base.job_parameters, None, None, base.placement)
        self.store = store
        self.version = version
        self.now = now
        self.previous_now = previous_now
        self.previous = previous  # the commit info of version - 1 (None: a fresh start)
        self.split_states = split_states

    # ------------------------------------------------------------------ source stage

    def run_stream_split(self, g: int, records: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        clock = ManualProcessingTimeService(self.now)
        tasks = JobTasks(self.plan, self.job_parameters, clock, ship_prints=True, frame_sinks=True)
        task = tasks.build_split(g, records)
        if task.watermark_operators:
            raise ValueError(
                "assign_timestamps_and_watermarks(...) right after from_stream(...) is not "
                "supported yet on a streaming run; pass the strategy as "
                "from_stream(..., watermark_strategy=...)"
            )
        driver, tagger = task.driver, task.tagger
        emitter = driver.watermark_output
        saved = self.split_states.get(g)
        if saved is not None:
            state = pickle.loads(saved)
            apply_generator_state(driver.generator, state["generator"])
            emitter.current_watermark = state["watermark"]
            emitter.idle = state["idle"]
            tagger.seq = state["seq"]
        for op in tasks.operators:
            op.open()
        tagger.round, tagger.phase = self.version, 0
        tasks.cursor.backend = None
        while driver.read_up_to(65536) == 65536:
            pass
        tasks.cursor.backend = None
        tagger.phase = 1
        task.emit_periodic()
        for op in tasks.operators:
            op.close()
        yield self._rows(tasks, 1)
        state_bytes = pickle.dumps(
            {
                "generator": capture_generator_state(driver.generator),
                "watermark": emitter.current_watermark,
                "idle": emitter.idle,
                "seq": tagger.seq,
                "records": driver.records_read,
            }
        )
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "stage": SPLIT_STATE,
                    "target": g,
                    "pkey": 0,
                    "position": b"",
                    "payload": state_bytes,
                }
            ],
            schema=arrow_row_schema(),
        )

    def stream_source_task(self, node_id: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
        def run(batches: Iterator[Any]) -> Iterator[Any]:
            from pyspark import TaskContext

            context = TaskContext.get()
            partition = context.partitionId() if context is not None else 0
            node = next(n for n in self.plan.sources if n.id == node_id)
            yield from self.run_stream_split(partition, node.source.records(batches))

        return run

    # ------------------------------------------------------------------ exchange stages

    def _restore_subtask(self, task: Any, stage: Any, target: int) -> dict[int, Any]:
        """Restore keyed state, timers and valves of ``task``; returns the operators'
        watermarks to apply once they are open."""
        previous = self.previous
        if previous is None:
            return {}
        old_p = int(previous["parallelism"][str(stage.index)])
        entry = task.entry
        mine = entry.setup_info.key_group_range if entry.keyed_state_backend is not None else None
        snapshots: list[bytes] = []
        parts0: dict[str, bytes] = {}
        for i in range(old_p):
            if i != 0 and mine is not None:
                old = OperatorSetup(
                    subtask_index=i, parallelism=old_p, max_parallelism=stage.max_parallelism
                ).key_group_range
                if old.end < mine.start or old.start > mine.end:
                    continue
            elif i != 0:
                break
            _, parts = self.store.read_subtask(self.version - 1, stage.index, i)
            if i == 0:
                parts0 = parts
            if mine is not None and "keyed" in parts:
                snapshots.append(parts["keyed"])
        if snapshots:
            entry.initialize_state(snapshots)
        valves = pickle.loads(parts0["valves"]) if "valves" in parts0 else {}
        for index, valve in valves.items():
            current = task.valves[index]
            if valve.num_channels == current.num_channels:
                task.valves[index] = valve
            else:  # the upstream parallelism changed: every channel starts at the old output
                last = valve.last_output_watermark
                for channel in range(current.num_channels):
                    current.input_watermark(last, channel, _Discard())
        return pickle.loads(parts0["watermarks"]) if "watermarks" in parts0 else {}

    def _save_subtask(self, task: Any, stage: Any, target: int) -> None:
        entry = task.entry
        parts: dict[str, bytes] = {}
        if entry.keyed_state_backend is not None:
            parts["keyed"] = entry.snapshot_state().to_bytes()
        parts["valves"] = pickle.dumps(task.valves)
        watermarks = {}
        for node_id, op in task.operators.items():
            manager = op.time_service_manager
            services = (
                {n: s.current_watermark() for n, s in manager.services().items()}
                if manager is not None
                else {}
            )
            watermarks[node_id] = (op.current_watermark(), services)
        parts["watermarks"] = pickle.dumps(watermarks)
        meta = {"stage": stage.index, "subtask": target, "parallelism": stage.parallelism}
        self.store.write_subtask(self.version, stage.index, target, meta, parts)

    def run_stream_subtask(self, stage_index: int, target: int, chunks: list[bytes]) -> Any:
        stage = self.plan.stages[stage_index]
        tasks = JobTasks(
            self.plan,
            self.job_parameters,
            ManualProcessingTimeService(self.now),
            ship_prints=True,
            frame_sinks=True,
        )
        clock = ManualProcessingTimeService(self.previous_now)
        task = tasks.build_subtask(stage, target, clock, None)
        watermarks = self._restore_subtask(task, stage, target)
        for op in tasks.operators:
            op.open()
        for node_id, (watermark, services) in watermarks.items():
            op = task.operators.get(node_id)
            if op is not None:
                _restore_watermark(op, watermark, services)
        entries: list[tuple] = []
        for chunk in chunks:
            entries.extend(pickle.loads(chunk))
        entries.sort(key=_by_position_and_channel)  # as the bounded runners order them
        task.advance_clock(self.now, (self.version, -1, 0, 0, 0))
        task.process(entries)
        self._save_subtask(task, stage, target)
        for op in tasks.operators:
            op.close()
        clock.shutdown()
        return self._rows(tasks, 1)

    def stream_stage_task(self, stage_index: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
        def run(batches: Iterator[Any]) -> Iterator[Any]:
            current: int | None = None
            chunks: list[bytes] = []
            for batch in batches:
                targets = batch.column("target").to_pylist()
                payloads = batch.column("payload").to_pylist()
                for t, payload in zip(targets, payloads, strict=True):
                    if t != current:
                        if current is not None:
                            yield self.run_stream_subtask(stage_index, current, chunks)
                        current, chunks = t, []
                    chunks.append(payload)
            if current is not None:
                yield self.run_stream_subtask(stage_index, current, chunks)

        return run
