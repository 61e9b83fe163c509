"""The worker side of a streaming run: one micro-batch of a source split or a stage subtask.

A :class:`StreamingJob` is shipped to the workers for each micro-batch (``version`` = batch id).
A source split restores its watermark generator, emitter and sequence number from the previous
version, reads the batch's rows and emits its periodic watermark; a stage subtask restores the
keyed state, timers, valves and operator watermarks of its key groups from the checkpoint (see
:mod:`sparktide.spark.checkpoint`), moves its processing-time clock to the batch's time, processes
the batch's entries in position order and writes the next version (a full snapshot or a
changelog, :meth:`~sparktide.spark.checkpoint.CheckpointStore.write_version`).

**Worker cache.** Spark reuses Python workers, so after writing version ``v`` a subtask leaves
its state (snapshot, entry digests, valves, watermarks) in the warm cache of the worker's
:class:`~sparktide.spark.worker_resources.WorkerResources` (the job's ``resources``: the
registry of what a worker keeps across micro-batches), keyed by checkpoint location, job
fingerprint, stage, subtask and parallelism. The next batch of that subtask in this worker
takes the entry (it is removed, so a failed attempt can never leave state behind for its retry)
and uses it only if the chain of version ``v - 1`` names the very file (its digest) it was kept
after, kept as this batch keeps state (snapshot or native): as it is when it holds version
``v - 1``; on the heap, an older version of the chain (the subtask ran in other workers since)
is caught up by the changelogs the chain names after it
(:meth:`~sparktide.spark.checkpoint.CheckpointStore.catch_up`). Anything else (a replay of an
uncommitted batch, an attempt that was not committed while its retry ran in another worker,
another parallelism, another backend, a version before the chain's full snapshot, another
process) reads the checkpoint.
Each subtask reports how it got its state (an
:class:`~sparktide.runtime.state.rocksdb_local.OpenOutcome`: reused or caught up in memory,
restored from the checkpoint's files, or created empty) and the seconds it took, as the
``restore`` of its :class:`~sparktide.spark.shipments.SubtaskReport`; the driver sums them per
batch (``state_restores`` of the batch metrics).

**State backends.** On the heap the files hold the backend-neutral form of keyed state and
timers (``snapshot_state()`` / ``restore_state()`` of either backend, timers with their
sequence numbers). On RocksDB (a :class:`~sparktide.spark.checkpoint.CheckpointStore` with
``native_stages``: the keyed stages) a subtask whose chain
:meth:`~sparktide.spark.checkpoint.CheckpointStore.plan_chain` plans native (and only such a
subtask; the chain decides how it opens and how it is written, and the driver commits the
chain each subtask reports) keeps its state and timers in one worker-local database:
:meth:`StreamingJob.open_subtask` opens it through the worker's
:class:`~sparktide.runtime.state.rocksdb_local.LocalDatabases` (``resources.databases``) at
version ``version - 1`` and builds the subtask on it
(passed to :meth:`~sparktide.runtime.execution.tasks.JobTasks.build_subtask`; the timer
queues resume what the database holds): reused in memory when this process checkpointed that
very version, else the local copy a process on this machine left (hard-linked, once it
verifies at open), else the checkpoint's files. A read that meets a damaged block fails the
batch naming the subtask and file (:meth:`StreamingJob.damaged_database`: the database and its
local copies are discarded, so the next attempt restores from the checkpoint's files). The
end of the batch writes the timer queues into the database and checkpoints it incrementally
(pending until the driver commits the batch, :mod:`~sparktide.spark.checkpoint_native`); the
state file names that checkpoint and holds the valves and watermarks, and the subtask's report
carries what it uploaded (its ``native``). A checkpoint in the neutral form (written on the heap,
by an older format, or by the old subtasks of a rescaled stage, read back) is inserted once into
an empty database; a heap job reads a native checkpoint back in the neutral form. Either way a
job restores whichever backend wrote the checkpoint.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, groupby
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

from sparktide.core.state_backend import EmbeddedRocksDBStateBackend
from sparktide.runtime.execution.driver import SplitSession, SubtaskSession
from sparktide.runtime.execution.merge import ChunkMerge
from sparktide.runtime.execution.planner import SOURCE_STAGE, Stage
from sparktide.runtime.execution.protocol import (
    Entry,
    Shipment,
    SourceTagger,
    encode_position,
    pack_entries,
    unpack_chunk,
    unpack_entries,
)
from sparktide.runtime.execution.tasks import JobTasks, SplitDriver, SubtaskTask
from sparktide.runtime.gc_pacing import paced_iteration
from sparktide.runtime.keygroups import KeyGroupRange, compute_key_group_range_for_operator_index
from sparktide.runtime.live_state import LiveKeyedState, SnapshotOrLive
from sparktide.runtime.operator_identity import operator_identities
from sparktide.runtime.operators.broadcast import BroadcastOperator
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_checkpoint_manifest import digest_bytes
from sparktide.runtime.state.rocksdb_local import (
    LocalDatabase,
    OpenOutcome,
    SubtaskSlot,
)
from sparktide.runtime.timers.queue_factory import (
    RocksDBTimerQueueFactory,
    recorded_timer_services,
)
from sparktide.spark.changelog import Digests, digests
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_meta import (
    Chain,
    CommitManifest,
    FileRecord,
    OperatorWatermarks,
    SplitState,
    SubtaskWrite,
    decode_valves,
    encode_valves,
)
from sparktide.spark.checkpoint_native import NativeReference, NativeUpload, check_manifest
from sparktide.spark.failures import failure_of_mark
from sparktide.spark.shipments import RestoreTiming, SubtaskReport
from sparktide.spark.spark_job import SparkJob, partition_split_task
from sparktide.spark.split_state import apply_generator_state, capture_generator_state
from sparktide.spark.worker_resources import (
    WarmKey,
    WarmState,
    WorkerResources,
    process_resources,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from sparktide.runtime.elements import Watermark, WatermarkStatus
    from sparktide.runtime.operators.timestamps import WatermarkEmitter
    from sparktide.runtime.valve import StatusWatermarkValve

__all__ = ["StreamingJob"]


class _NativeOpen(NamedTuple):
    """A native subtask's worker-local database at version ``version - 1`` and what came with
    it: the backend-neutral state to insert once (``None``: the database holds the state), its
    valves and operator watermarks (``None``: none saved)."""

    local: LocalDatabase
    neutral: KeyedOperatorSnapshot | None
    valves: bytes | None
    watermarks: bytes | None


class _StreamSplitDriver(SplitDriver, Protocol):
    """A stream source's split reader: its watermark generator and emitter are saved."""

    generator: object

    @property
    def watermark_output(self) -> WatermarkEmitter: ...


def _split_state(
    driver: _StreamSplitDriver, emitter: WatermarkEmitter, tagger: SourceTagger
) -> SplitState:
    """A split's state after a batch: its watermark, idleness, record sequence number and
    records read, and its watermark generator's state (user values: pickled)."""
    return SplitState(
        watermark=int(emitter.current_watermark),
        idle=bool(emitter.idle),
        seq=int(tagger.seq),
        records=int(driver.records_read),
        generator=capture_generator_state(driver.generator),
    )


class _Discard:
    def emit_watermark(self, watermark: Watermark) -> None:
        pass

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        pass


class StreamingJob:
    """What the workers need to run one micro-batch (``version`` = batch id): the bounded
    job's transport (:class:`~sparktide.spark.spark_job.SparkJob`) and the checkpoint;
    ``resources``: what the worker keeps across micro-batches (default: this process's,
    :func:`~sparktide.spark.worker_resources.process_resources`; shipped to a worker, the job
    uses that worker's)."""

    def __init__(
        self,
        base: SparkJob,
        store: CheckpointStore,
        version: int,
        now: int,
        previous_now: int,
        previous: CommitManifest | None,
        split_states: dict[int, SplitState],
        resources: WorkerResources | None = None,
    ) -> None:
        self.base = base
        self.resources = process_resources() if resources is None else resources
        self.plan = base.plan
        self.store = store
        self.version = version
        self.now = now
        self.previous_now = previous_now
        self.previous = previous  # the commit info of version - 1 (None: a fresh start)
        self.split_states = split_states
        # operator identities (what operator watermarks are saved and restored by)
        self.identities = operator_identities(self.plan.nodes)
        self._pending: dict[int, tuple[Chain, Digests]] = {}
        self._written: dict[int, SubtaskWrite] = {}  # target -> what it wrote
        self._restored: dict[int, tuple[str, float]] = {}  # target -> outcome, seconds
        # native RocksDB subtasks open in this batch: target -> slot, storage, database, range
        self._native: dict[
            int, tuple[SubtaskSlot, RocksDBCheckpointStorage, LocalDatabase, KeyGroupRange]
        ] = {}
        self._uploaded: dict[int, NativeUpload] = {}  # target -> checkpoint bytes

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        for name in ("_pending", "_written", "_restored", "_native", "_uploaded"):
            state[name] = {}
        return state

    # ------------------------------------------------------------------ source stage

    def run_stream_split(self, g: int, records: Iterable[object]) -> Iterator[pa.RecordBatch]:
        """Source split ``g`` for this micro-batch: one round, its state restored and saved."""
        tasks = self.base.tasks(ManualProcessingTimeService(self.now))
        try:
            yield from self._run_stream_split(tasks, g, records)
        except Exception as exc:
            yield from self.base.failed(tasks, exc, SOURCE_STAGE, self.version)

    def _run_stream_split(
        self, tasks: JobTasks, g: int, records: Iterable[object]
    ) -> Iterator[pa.RecordBatch]:
        task = tasks.build_split(g, records)
        if task.watermark_operators:
            raise ValueError(
                "assign_timestamps_and_watermarks(...) right after from_stream(...) is not "
                "supported yet on a streaming run; pass the strategy as "
                "from_stream(..., watermark_strategy=...)"
            )
        driver = cast(_StreamSplitDriver, task.driver)
        tagger = task.tagger
        emitter = driver.watermark_output
        saved = self.split_states.get(g)
        if saved is not None:
            if saved.generator is not None:  # the user's watermark generator: pickled
                apply_generator_state(driver.generator, saved.generator)
            emitter.current_watermark = saved.watermark
            emitter.idle = saved.idle
            tagger.seq = saved.seq
        session = SplitSession(task, every=None, chunk=self.base.flush)
        session.open()
        for _ in session.read_round(self.version):
            yield from self.base.flush_rows(tasks)  # bounded worker memory
        session.end_round(end_of_input=False)  # the input of a stream never ends
        session.close()
        yield self.base.rows(tasks, 1)
        split_state = _split_state(driver, emitter, tagger)
        yield self.base.driver_row(Shipment.SPLIT_STATE, g, split_state.to_bytes())

    def stream_source_task(
        self, first_split: int, node_id: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """Runs split ``first_split + partition`` of the stream source ``node_id``."""
        return partition_split_task(self.plan, first_split, node_id, self.run_stream_split)

    # ------------------------------------------------------------------ exchange stages

    def _restore_subtask(
        self, task: SubtaskTask, stage: Stage, target: int, plan: Chain
    ) -> dict[str, OperatorWatermarks]:
        """:meth:`_restore_state`, timed: how the subtask got its state and the seconds it
        took are kept for its metrics (:meth:`restore_outcome`)."""
        started = time.perf_counter()
        outcome, watermarks = self._restore_state(task, stage, target, plan)
        self._restored[target] = (outcome.value, time.perf_counter() - started)
        return watermarks

    def restore_outcome(self, target: int) -> RestoreTiming | None:
        """How subtask ``target`` got its state in this batch (an
        :class:`~sparktide.runtime.state.rocksdb_local.OpenOutcome`) and the seconds it took;
        taken once (``None``: not restored in this process)."""
        restored = self._restored.pop(target, None)
        return None if restored is None else RestoreTiming(OpenOutcome(restored[0]), restored[1])

    def _restore_state(
        self, task: SubtaskTask, stage: Stage, target: int, plan: Chain
    ) -> tuple[OpenOutcome, dict[str, OperatorWatermarks]]:
        """Restore keyed state, timers and valves of ``task`` from version ``version - 1``
        (the worker cache when it holds that or an older version of the chain,
        :meth:`take_warm`, else the files the manifest names) for version ``version`` to be
        written as ``plan``; returns how (reused or caught up in memory, restored, created
        empty) and the operators' watermarks to apply once they are open."""
        previous = self.previous
        store = self.store
        old_stage = None if previous is None else store.previous_stage(previous, stage.index)
        warm = self.take_warm(stage, target, old_stage, plan)
        if previous is None or old_stage is None:  # a fresh start, or a stage it does not have
            self._pending[target] = (plan, {})
            return OpenOutcome.CREATED, {}
        entry = task.entry
        keyed = entry.keyed_state_backend is not None
        if warm is not None:
            self.resources.stats.warm += 1
            warm_hit = True
            valves_bytes: bytes | None
            watermarks_bytes: bytes | None
            snap, prev_digests = warm.snapshot, warm.digests
            valves_bytes, watermarks_bytes = warm.valves, warm.watermarks
        else:
            self.resources.stats.disk += 1
            warm_hit = False
            mine = entry.setup_info.key_group_range if keyed else None
            loaded = store.restore_range(previous, stage.index, target, stage.max_parallelism, mine)
            snap = loaded.snapshot()
            incremental = plan.snapshot != self.version
            prev_digests = digests(loaded.flat) if keyed and incremental else {}
            valves_bytes, watermarks_bytes = loaded.valves, loaded.watermarks
        backend, manager = entry.keyed_state_backend, entry.time_service_manager
        if isinstance(snap, LiveKeyedState):
            entry.adopt_live_state(snap)  # as the previous batch's operator left it
        elif snap is not None and warm_hit and backend is not None and manager is not None:
            # the snapshot this process took at the end of a batch of this job (caught up by
            # the job's own changelogs, their digests checked): no validation
            entry.check_restored_key_type(snap)
            backend.restore_state(snap.state_meta, snap.state, trusted=True)
            manager.restore(snap.timers)
        elif keyed and snap is not None:
            entry.initialize_state([snap])
        self._restore_broadcast(task, old_stage, warm)
        self._pending[target] = (plan, prev_digests)
        where = f"the state of stage {stage.index} subtask {target}"
        valves = decode_valves(valves_bytes, where) if valves_bytes is not None else {}
        _restore_valves(task, valves)
        if warm is None:
            outcome = OpenOutcome.RESTORED
        elif warm.caught_up:
            self.resources.stats.caught_up += 1
            outcome = OpenOutcome.CAUGHT_UP_IN_MEMORY
        else:
            outcome = OpenOutcome.REUSED_IN_MEMORY
        if watermarks_bytes is None:
            return outcome, {}
        return outcome, OperatorWatermarks.decode(watermarks_bytes, where)

    def _warm_key(self, stage: Stage, target: int) -> WarmKey:
        store = self.store
        identity = self.identities[stage.entry.id]
        return WarmKey(store.location, store.fingerprint, identity, target, stage.parallelism)

    def take_warm(
        self, stage: Stage, target: int, old_stage: int | None, plan: Chain
    ) -> WarmState | None:
        """What this worker kept of subtask ``target`` (taken, never shared: a failed attempt
        cannot leave it), if it is a state committed in the chain of version ``version - 1``:
        of the same stage and parallelism, with the very file the manifest names (an attempt
        that was not committed, replayed in another worker, left a state of its own here),
        kept as this batch keeps it (a native chain ``plan``: in the database; else as a
        snapshot). Exactly version ``version - 1`` is used as it is; an older version of the
        same heap chain (the subtask ran in other workers since) is caught up, the changelogs
        written since applied to it (:meth:`CheckpointStore.catch_up`). Else ``None``."""
        warm = self.resources.warm.take(self._warm_key(stage, target))
        previous = self.previous
        if warm is None or previous is None or old_stage != stage.index:
            return None
        written = warm.written
        record = previous.files.get(written.path)
        chain = previous.chain(old_stage, target)
        if (
            chain is None
            or previous.parallelism.get(old_stage) != stage.parallelism
            or record is None
            or record.digest != written.record.digest
            or (warm.reference is not None) != plan.native
        ):
            return None
        if warm.version == self.version - 1 and chain == written.chain:
            return warm
        return self._catch_up(warm, chain, previous.files, old_stage, target)

    def _catch_up(
        self,
        warm: WarmState,
        chain: Chain,
        files: Mapping[str, FileRecord],
        old_stage: int,
        target: int,
    ) -> WarmState | None:
        """``warm``, an older heap state of subtask ``target`` whose chain ``chain`` (of
        version ``version - 1``, its files recorded in ``files``) continues, brought to
        ``version - 1`` by the changelogs the chain names after it; ``None`` if the chain does
        not continue it, or the state is native (in a database, which has its own reuse)."""
        since = warm.written.chain
        behind = chain.changelogs[len(since.changelogs) :]
        if (
            warm.version >= self.version - 1
            or warm.reference is not None
            or chain.snapshot != since.snapshot
            or chain.backend is not since.backend
            or chain.changelogs[: len(since.changelogs)] != since.changelogs
            or not behind
            or behind[0] != warm.version + 1
        ):
            return None
        caught = self.store.catch_up(warm.snapshot, behind, old_stage, target, files, warm.digests)
        return warm._replace(
            version=self.version - 1,
            snapshot=caught.keyed_state(),
            valves=caught.valves if caught.valves is not None else warm.valves,
            watermarks=caught.watermarks if caught.watermarks is not None else warm.watermarks,
            broadcast=caught.broadcast,
            caught_up=len(behind),
        )

    def keep_warm(self, stage: Stage, target: int, warm: WarmState) -> None:
        """Leave ``warm`` in this worker for the next batch of subtask ``target``."""
        self.resources.warm.keep(self._warm_key(stage, target), warm)

    def _restore_broadcast(self, task: SubtaskTask, old_stage: int, warm: WarmState | None) -> None:
        """Give a broadcast operator the broadcast state of version ``version - 1``: the copy
        this worker kept, else the one copy in the checkpoint (old subtask 0's file; every
        subtask held the same state, so any parallelism starts from it)."""
        entry = task.entry
        if not isinstance(entry, BroadcastOperator) or self.previous is None:
            return
        data = None
        if warm is not None and warm.broadcast is not None:
            data = warm.broadcast
        else:
            chain = self.previous.chains[old_stage][0]
            files = self.previous.files
            data = self.store.load_chain(chain, old_stage, 0, files=files, neutral=False).broadcast
        if data is not None:
            entry.restore_broadcast_state(data)

    @staticmethod
    def _broadcast(task: SubtaskTask) -> bytes | None:
        entry = task.entry
        return entry.snapshot_broadcast_state() if isinstance(entry, BroadcastOperator) else None

    def _parts(self, task: SubtaskTask, target: int) -> dict[str, bytes]:
        """The valves and operator watermarks of ``task`` (parts of its state file), and the
        broadcast state of a broadcast operator, in subtask 0's file only (one copy: every
        subtask holds the same)."""
        watermarks: dict[str, OperatorWatermarks] = {}
        for node_id, op in task.operators.items():
            identity = self.identities[node_id]
            manager = op.time_service_manager
            services = (
                {n: s.current_watermark() for n, s in manager.services().items()}
                if manager is not None
                else {}
            )
            watermarks[identity] = OperatorWatermarks(op.current_watermark(), services)
        parts = {
            "valves": encode_valves(task.valves),
            "watermarks": OperatorWatermarks.encode(watermarks),
        }
        broadcast = self._broadcast(task)
        if broadcast is not None and target == 0:
            parts["broadcast"] = broadcast
        return parts

    def _save_subtask(self, task: SubtaskTask, stage: Stage, target: int) -> None:
        """Write version ``version`` of this subtask as the chain :meth:`open_subtask` planned
        says (a full snapshot or a changelog; a native chain: its RocksDB checkpoint and the
        file naming it) and keep it warm in this worker."""
        plan, prev_digests = self._pending.pop(target)
        if plan.native:
            self._save_native(task, stage, target, plan)
            return
        changelog = plan.snapshot != self.version
        parts = self._parts(task, target)
        snap, kept = self._keyed_state(task, changelog)
        identity = self.identities[stage.entry.id]
        size, new_digests = self.store.write_version(
            self.version, stage.index, target, plan, snap, prev_digests, parts, identity
        )
        path = (self.store.changelog_path if changelog else self.store.subtask_path)(
            self.version, stage.index, target
        )
        written = self._written[target] = self._write_report(task, stage, target, path, plan)
        stats = self.resources.stats
        if changelog:
            stats.bytes_changelog += size
        else:
            stats.bytes_snapshot += size
        warm = WarmState(
            self.version,
            written,
            kept,
            new_digests,
            parts["valves"],
            parts["watermarks"],
            broadcast=self._broadcast(task),
        )
        self.keep_warm(stage, target, warm)

    @staticmethod
    def _keyed_state(
        task: SubtaskTask, changelog: bool
    ) -> tuple[SnapshotOrLive | None, SnapshotOrLive | None]:
        """``(written, kept)``: the keyed state of ``task`` to write (a changelog is diffed
        straight from the live state; a full snapshot, or a state the operator does not hand
        over, is snapshotted) and the one to keep in this worker (the live state where it is
        handed over: the next batch here adopts it). ``(None, None)``: not keyed."""
        entry = task.entry
        if entry.keyed_state_backend is None:
            return None, None
        snap = None if changelog else entry.snapshot_state()
        live = entry.hand_over_live_state()  # after the snapshot: it leaves the state alone
        if snap is None and live is None:
            snap = entry.snapshot_state()
        return (live if snap is None else snap), (snap if live is None else live)

    # ------------------------------------------------------------------ native RocksDB state

    def _open_native(
        self,
        tasks: JobTasks,
        stage: Stage,
        target: int,
        clock: ManualProcessingTimeService,
        plan: Chain,
    ) -> tuple[SubtaskTask, dict[str, OperatorWatermarks]]:
        """Build subtask ``target`` of a keyed stage of a RocksDB job on its worker-local
        database at version ``version - 1`` (see the module docstring) and restore its valves;
        returns the task and the operators' watermarks to apply once they are open."""
        started = time.perf_counter()
        store, previous = self.store, self.previous
        identity = self.identities[stage.entry.id]
        slot = SubtaskSlot(store.location, identity, target)
        storage = store.native_storage(identity, target)
        old_stage = None if previous is None else store.previous_stage(previous, stage.index)
        warm = self.take_warm(stage, target, old_stage, plan)
        mine = compute_key_group_range_for_operator_index(
            stage.max_parallelism, stage.parallelism, target
        )
        opened = self._open_database(stage, target, slot, storage, old_stage, warm, mine)
        task = self._build_on_database(tasks, stage, target, clock, slot, opened, mine)
        if previous is not None and old_stage is not None:
            self._restore_broadcast(task, old_stage, warm)
        local = opened.local
        self._native[target] = (slot, storage, local, mine)
        outcome = OpenOutcome.RESTORED if opened.neutral is not None else local.outcome
        self._restored[target] = (outcome.value, time.perf_counter() - started)
        if outcome is OpenOutcome.REUSED_IN_MEMORY:
            self.resources.stats.warm += 1
        else:
            self.resources.stats.disk += 1
        where = f"the state of stage {stage.index} subtask {target}"
        valves = decode_valves(opened.valves, where) if opened.valves is not None else {}
        _restore_valves(task, valves)
        if opened.watermarks is None:
            return task, {}
        return task, OperatorWatermarks.decode(opened.watermarks, where)

    def _open_database(
        self,
        stage: Stage,
        target: int,
        slot: SubtaskSlot,
        storage: RocksDBCheckpointStorage,
        old_stage: int | None,
        warm: WarmState | None,
        mine: KeyGroupRange,
    ) -> _NativeOpen:
        """The worker-local database of subtask ``target`` at version ``version - 1``: empty
        on a fresh start (or a stage the previous version does not have), at the native
        checkpoint of its chain, else empty with the backend-neutral state to insert once (a
        heap job's, an older format's, or the old subtasks' RocksDB checkpoints read back for
        a rescaled stage: inserted as the heap restores it, timers renumbered alike)."""
        databases, previous = self.resources.databases, self.previous
        if previous is None or old_stage is None:
            return _NativeOpen(databases.open(slot, None, storage), None, None, None)
        chains = previous.chains[old_stage]
        if previous.parallelism[old_stage] == stage.parallelism and chains[target].native:
            chain = chains[target]
            valves: bytes | None
            watermarks: bytes | None
            if warm is not None and warm.reference is not None:  # taken: it has one
                reference = warm.reference
                valves, watermarks = warm.valves, warm.watermarks
            else:
                loaded = self.store.load_chain(
                    chain, old_stage, target, files=previous.files, neutral=False
                )
                reference = cast("tuple[object, NativeReference]", loaded.native)[1]
                valves, watermarks = loaded.valves, loaded.watermarks
            check_manifest(storage, reference, f"the state of stage {stage.index} subtask {target}")
            local = databases.open(slot, reference.checkpoint, storage)
            return _NativeOpen(local, None, valves, watermarks)
        restored = self.store.restore_range(
            previous, stage.index, target, stage.max_parallelism, mine
        )
        neutral = restored.snapshot()
        local = databases.open(slot, None, storage)
        return _NativeOpen(local, neutral, restored.valves, restored.watermarks)

    def _build_on_database(
        self,
        tasks: JobTasks,
        stage: Stage,
        target: int,
        clock: ManualProcessingTimeService,
        slot: SubtaskSlot,
        opened: _NativeOpen,
        mine: KeyGroupRange,
    ) -> SubtaskTask:
        """Subtask ``target`` built on the database ``opened`` holds, its neutral state
        inserted (else the timer services the database holds created, as restored services
        are, before the operators open); the database is closed if that fails."""
        db = opened.local.db
        try:
            task = tasks.build_subtask(stage, target, clock, None, db)
            entry = task.entry
            manager = entry.time_service_manager
            if opened.neutral is not None:
                entry.initialize_state([opened.neutral])
            elif manager is not None and len(mine):
                names = recorded_timer_services(db)
                manager.restore({mine.start: {name: ([], []) for name in names}})
        except BaseException:
            self.resources.databases.close(slot)
            raise
        return task

    def _write_report(
        self, task: SubtaskTask, stage: Stage, target: int, path: str, plan: Chain
    ) -> SubtaskWrite:
        """What subtask ``target`` wrote (the file ``path``, its state at ``plan``, the
        declared types of its keyed state), for the driver's commit."""
        relative = self.store.relative(path)
        record = self.store.records[relative]
        types = task.entry.recorded_state_types()
        return SubtaskWrite(stage.index, target, relative, record, plan, types)

    def _save_native(self, task: SubtaskTask, stage: Stage, target: int, plan: Chain) -> None:
        """Checkpoint the subtask's database as version ``version`` (pending until the driver
        commits the batch: only the SST files that are new are uploaded) and write the file
        naming it, with the valves and watermarks."""
        _, storage, local, mine = self._native.pop(target)
        entry = task.entry
        manager = entry.time_service_manager
        factory = None if manager is None else manager.queue_factory
        if isinstance(factory, RocksDBTimerQueueFactory):
            factory.sync()
        config = self.base.plan.state_backend
        full = not (  # a full checkpoint: every file uploaded
            isinstance(config, EmbeddedRocksDBStateBackend)
            and config.is_incremental_checkpoints_enabled()
        )
        if self.version in storage.completed_ids():  # its commit is gone: taken again
            storage.retract(self.version)
        manifest = self.resources.databases.checkpoint(local, self.version, storage, full)
        reference = NativeReference(
            self.version,
            digest_bytes(manifest.encode()),
            (mine.start, mine.end),
            entry.setup_info.name,
            stage.max_parallelism,
            NativeReference.encode_key_type(entry.setup_info.key_type),
        )
        parts = self._parts(task, target)
        identity = self.identities[stage.entry.id]
        size = self.store.write_native(
            self.version, stage.index, target, parts, identity, reference
        )
        path = self.store.subtask_path(self.version, stage.index, target)
        written = self._written[target] = self._write_report(task, stage, target, path, plan)
        self._uploaded[target] = NativeUpload(
            identity,
            target,
            uploaded_bytes=manifest.uploaded_bytes,
            total_bytes=manifest.total_bytes,
            private_bytes=manifest.private_bytes,
        )
        self.resources.stats.bytes_snapshot += size + manifest.uploaded_bytes
        warm = WarmState(
            self.version,
            written,
            None,
            {},
            parts["valves"],
            parts["watermarks"],
            reference,
            self._broadcast(task),
        )
        self.keep_warm(stage, target, warm)

    def checkpoint_uploaded(self, target: int) -> NativeUpload | None:
        """What subtask ``target``'s native RocksDB checkpoint of this batch uploaded (its
        operator, subtask, uploaded and total bytes), taken once; ``None``: not native."""
        return self._uploaded.pop(target, None)

    def open_subtask(
        self, tasks: JobTasks, stage: Stage, target: int
    ) -> tuple[SubtaskTask, SubtaskSession]:
        """Subtask ``target`` of ``stage``, restored from version ``version - 1`` and opened
        with its operators' watermarks, its clock still at the previous batch's time; for this
        runner and for the columnar one. The chain :meth:`CheckpointStore.plan_chain` plans
        for version ``version`` decides both how it opens (native: on its worker-local
        database, :meth:`_open_native`; else :meth:`_restore_subtask`) and how
        :meth:`save_subtask` writes it."""
        clock = ManualProcessingTimeService(self.previous_now)
        plan = self.store.plan_chain(
            self.previous, stage.index, target, stage.parallelism, self.version
        )
        if plan.native:
            task, watermarks = self._open_native(tasks, stage, target, clock, plan)
            self._pending[target] = (plan, {})
        else:
            task = tasks.build_subtask(stage, target, clock, None)
            watermarks = self._restore_subtask(task, stage, target, plan)
        session = SubtaskSession(task, simulated=None)
        session.open()
        session.restore_watermarks(watermarks, self.identities)
        return task, session

    def save_subtask(self, task: SubtaskTask, stage: Stage, target: int) -> SubtaskWrite:
        """:meth:`_save_subtask` for another runner of the stage; returns what it wrote
        (what the subtask's metrics carry for the manifest)."""
        self._save_subtask(task, stage, target)
        return self._written.pop(target)

    def run_stream_subtask(
        self, stage_index: int, target: int, chunks: list[bytes]
    ) -> list[pa.RecordBatch]:
        """:meth:`stream_subtask` over whole packed chunks of entries (:func:`pack_entries`)
        in any order (they are sorted first): the rows it ships, in a list.

        >>> StreamingJob.run_stream_subtask.__name__
        'run_stream_subtask'
        """
        entries: list[Entry] = []
        for chunk in chunks:
            failed = failure_of_mark(chunk)
            if failed is not None:
                return [self.base.failure_rows(stage_index, *failed)]
            entries.extend(unpack_entries(chunk))
        entries.sort(key=itemgetter(0, 1))
        rows = [(encode_position(entries[0][0]), pack_entries(entries))] if entries else []
        return list(self.stream_subtask(stage_index, target, rows))

    def stream_subtask(
        self, stage_index: int, target: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        """Subtask ``target`` of a stage for this micro-batch: restored from version
        ``version - 1``, its entries processed at the batch's time, version ``version`` written.
        ``rows``: its input chunks ``(first position, payload)`` sorted by first position (a
        failure mark first); they are merged as they come (:class:`ChunkMerge`), so the worker
        holds about the task's budget of entries, not the batch."""
        base = self.base
        rows = iter(rows)
        head = next(rows, None)
        if head is not None:
            failed = failure_of_mark(head[1])
            if failed is not None:  # the batch failed upstream: no state, no output
                yield base.failure_rows(stage_index, *failed)
                return
            rows = chain((head,), rows)
        tasks = base.tasks(ManualProcessingTimeService(self.now))
        try:
            yield from self._run_stream_subtask(tasks, stage_index, target, rows)
        except Exception as exc:
            damaged = self.damaged_database(exc, self.plan.stages[stage_index], target)
            if damaged is not None:
                raise damaged from exc
            yield from base.failed(tasks, exc, stage_index, self.version)

    def damaged_database(self, exc: BaseException, stage: Stage, target: int) -> Exception | None:
        """When ``exc`` is RocksDB finding damaged files in the worker-local database of
        subtask ``target`` of a keyed stage of a RocksDB job (a block checksum mismatch met by
        a read or a scan, wherever in the batch): the error to fail the batch with, naming
        the subtask, the directory and the file, once the database and every local copy of the
        subtask on this machine are discarded
        (:meth:`~sparktide.runtime.state.rocksdb_local.LocalDatabases.discard_damaged`: the
        batch's next attempt restores the state from the checkpoint's files). It is raised as
        it is (not as a user function's failure): Spark retries the task, and a streaming
        query that stops on it restarts from the checkpoint. ``None``: another failure."""
        if not (self.store.native and stage.keyed):
            return None
        identity = self.identities[stage.entry.id]
        what = (
            f"micro-batch {self.version}, stage {stage.index} ({stage.entry.name!r}) "
            f"subtask {target}"
        )
        damaged = self.resources.databases.discard_damaged(
            SubtaskSlot(self.store.location, identity, target), exc, what
        )
        if damaged is not None:
            self._native.pop(target, None)  # closed: this attempt never checkpoints it
        return damaged

    def _run_stream_subtask(
        self, tasks: JobTasks, stage_index: int, target: int, rows: Iterator[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        stage = self.plan.stages[stage_index]
        task, session = self.open_subtask(tasks, stage, target)
        session.advance_clock(self.now, self.version)
        merge = ChunkMerge(self.base.flush)
        for _, payload in rows:
            ready = merge.add(unpack_chunk(payload))
            if ready:  # what no chunk from here on can precede, as the bounded runners order it
                session.process_chunks(ready)
                yield from self.base.flush_rows(tasks)
        session.process_chunks(merge.drain())
        self._save_subtask(task, stage, target)
        report = SubtaskReport(
            session.metrics(),
            self._written.pop(target),  # for the manifest
            self.restore_outcome(target),
            self.checkpoint_uploaded(target),
        )
        session.close()
        yield self.base.rows(tasks, 1)
        yield self.base.driver_row(Shipment.SUBTASK_METRICS, target, pickle.dumps(report))

    def stream_stage_task(
        self, stage_index: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for target, group in groupby(_rows(batches), key=itemgetter(0)):
                yield from paced_iteration(self.stream_subtask(stage_index, target, _tail(group)))

        return run


def _rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, bytes, bytes]]:
    """``(target, first position, payload)`` of each input row, one Arrow batch at a time."""
    for batch in batches:
        targets, positions = batch.column("target").to_pylist(), batch.column("position")
        payloads = batch.column("payload")
        for i, target in enumerate(targets):  # one chunk's bytes at a time: bounded memory
            yield target, positions[i].as_py(), payloads[i].as_py()


def _tail(rows: Iterable[tuple[int, bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
    for _, first, payload in rows:
        yield first, payload


def _restore_valves(task: SubtaskTask, valves: dict[int, StatusWatermarkValve]) -> None:
    """Put the saved valves back into ``task`` (an input whose upstream parallelism changed:
    every channel starts at the old valve's output)."""
    for index, valve in valves.items():
        current = task.valves[index]
        if valve.num_channels == current.num_channels:
            task.valves[index] = valve
        else:
            last = valve.last_output_watermark
            for channel in range(current.num_channels):
                current.input_watermark(last, channel, _Discard())
