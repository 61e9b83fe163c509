"""The savepoint writer's Spark form: an operator's rows given as Spark DataFrames, written by a
Spark job with one task per subtask (a key-group range), so writing scales with the state.

Per DataFrame of the operator (a state's rows, or its timers), a ``mapInArrow`` decodes the
rows against the declared types (:func:`~sparktide.state_api.state_rows_in.decode_state_rows`;
a row that does not fit fails the job with the error naming the operator, the state, the row
and the column) and tags each with its key group and the subtask owning it; the rows keep
their order as ``monotonically_increasing_id``. The union of them is repartitioned by subtask
into as many partitions as the operator has subtasks, and a second ``mapInArrow`` gathers each
subtask's entries (in key-group, then row order) and writes its snapshot file
(:func:`~sparktide.state_api.writer_files.write_subtask`, the function the writer uses in
process), yielding the file's record. The driver writes the files of subtasks no row reached
(empty, or the base's state), then commits. Only ``mapInArrow``, ``repartition`` and
``unionByName`` are used: it runs on a classic session and on Spark Connect, with the savepoint
path readable and writable from the executors.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparktide.runtime.keygroups import compute_operator_index_for_key_group
from sparktide.spark.checkpoint_meta import FileRecord
from sparktide.state_api.state_rows_in import (
    Decoded,
    StateTarget,
    TimerTarget,
    decode_state_rows,
    decode_timer_rows,
    group_state,
    group_timers,
)
from sparktide.state_api.writer_files import StagePlan, write_subtask

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.spark.checkpoint import CheckpointStore
    from sparktide.state_api.writer import OperatorRows

__all__ = ["write_stage"]

_ORDER = "__sparktide_row"
_DECODED = pa.schema(
    [
        ("subtask", pa.int32()),
        ("part", pa.int32()),
        ("key_group", pa.int32()),
        ("row", pa.int64()),
        ("data", pa.binary()),
    ]
)
_WRITTEN = pa.schema([("subtask", pa.int32()), ("path", pa.string()), ("record", pa.string())])

Target = StateTarget | TimerTarget


@dataclass(frozen=True)
class _Decode:
    """The ``mapInArrow`` function decoding part ``part`` (a state's rows, or the timers)."""

    part: int
    target: Target
    max_parallelism: int
    parallelism: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        maxp, p = self.max_parallelism, self.parallelism
        for batch in batches:
            order = batch.column(_ORDER).to_pylist()
            table = pa.Table.from_batches([batch]).drop_columns([_ORDER])
            if isinstance(self.target, StateTarget):
                decoded = decode_state_rows(self.target, table, maxp, order)
            else:
                decoded = decode_timer_rows(self.target, table, maxp, order)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(
                        [compute_operator_index_for_key_group(maxp, p, d[0]) for d in decoded],
                        pa.int32(),
                    ),
                    pa.array([self.part] * len(decoded), pa.int32()),
                    pa.array([d[0] for d in decoded], pa.int32()),
                    pa.array([d[1] for d in decoded], pa.int64()),
                    pa.array([pickle.dumps(d[2:], protocol=5) for d in decoded], pa.binary()),
                ],
                schema=_DECODED,
            )


@dataclass(frozen=True)
class _WriteSubtasks:
    """The ``mapInArrow`` function writing the subtasks whose rows its partition holds."""

    store: CheckpointStore
    version: int
    plan: StagePlan
    targets: tuple[Target, ...]
    now: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows: dict[int, dict[int, list[Decoded]]] = {}
        for batch in batches:
            cols = [batch.column(i).to_pylist() for i in range(5)]
            for subtask, part, kg, row, data in zip(*cols, strict=True):
                key, ns, payload = pickle.loads(data)
                rows.setdefault(subtask, {}).setdefault(part, []).append(
                    (kg, row, key, ns, payload)
                )
        opened = self.plan.base.open() if self.plan.base is not None else None
        for subtask, parts in sorted(rows.items()):
            entries: dict[str, Any] = {}
            timers = None
            for part, decoded in parts.items():
                decoded.sort(key=lambda d: (d[0], d[1]))
                target = self.targets[part]
                if isinstance(target, StateTarget):
                    entries[target.name] = group_state(target, decoded, self.now)
                else:
                    timers = group_timers(target, decoded)
            path, record = write_subtask(self.store, self.version, self.plan, subtask, entries,
                                         timers, opened)  # fmt: skip
            yield pa.RecordBatch.from_pylist(
                [{"subtask": subtask, "path": path, "record": json.dumps(record.to_json())}],
                schema=_WRITTEN,
            )


def write_stage(
    store: CheckpointStore, version: int, plan: StagePlan, rows: OperatorRows, now: int
) -> dict[str, FileRecord]:
    """Write every subtask of ``plan``'s stage from the DataFrames of ``rows`` by a Spark job;
    returns the records of the files written."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from sparktide.spark.session import ship_package

    parts: list[tuple[Target, DataFrame]] = [(t, r) for t, r in rows.states]
    if rows.timers is not None:
        parts.append((TimerTarget(rows.uid, rows.key_type), rows.timers))
    spark = parts[0][1].sparkSession
    ship_package(spark)
    decoded = [
        frame.withColumn(_ORDER, F.monotonically_increasing_id()).mapInArrow(
            _Decode(i, target, plan.max_parallelism, plan.parallelism),
            from_arrow_schema(_DECODED),
        )
        for i, (target, frame) in enumerate(parts)
    ]
    union = reduce(lambda a, b: a.unionByName(b), decoded)
    write = _WriteSubtasks(store, version, plan, tuple(t for t, _ in parts), now)
    written = (
        union.repartition(plan.parallelism, "subtask")
        .mapInArrow(write, from_arrow_schema(_WRITTEN))
        .collect()
    )
    out = {r.path: FileRecord.from_json(json.loads(r.record), r.path) for r in written}
    done = {r.subtask for r in written}
    opened = plan.base.open() if plan.base is not None else None
    for subtask in range(plan.parallelism):
        if subtask not in done:  # no row reached it: empty, or the base's state
            path, record = write_subtask(store, version, plan, subtask, {}, _no_timers(plan),
                                         opened)  # fmt: skip
            out[path] = record
    return out


def _no_timers(plan: StagePlan) -> dict[int, Any] | None:
    """The timers of a subtask no row reached: none when the rows replace the base's."""
    return {} if plan.timers else None
