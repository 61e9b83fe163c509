"""The files of a savepoint the writer builds: one full snapshot file per stage subtask, the
commit manifest, ``savepoint.json`` last.

:class:`StagePlan` says what one stage of the written savepoint holds: its index, entry
operator, parallelism and, for a keyed stage, its key type, the states written (with their
kinds and declared types) and, when it continues a stage of a base savepoint or checkpoint
(:class:`BaseStage`), which of the base's states and timers the new rows replace.
:func:`write_subtask` writes one subtask's file from its key groups' new entries and timers
(read from the base what is kept); the same function serves the writer in this process and
a Spark task writing a key-group range. :func:`commit_savepoint` writes the manifest of the
version, then ``savepoint.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparktide.runtime.keygroups import compute_key_group_range_for_operator_index
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_meta import BatchCommit, Chain, FileRecord

if TYPE_CHECKING:
    from sparktide.runtime.state.backend import StateEntry, StateMeta
    from sparktide.runtime.state.recorded_types import OperatorStateTypes
    from sparktide.runtime.timers.manager import TimerSnapshot
    from sparktide.spark.checkpoint import LoadedSubtask
    from sparktide.spark.checkpoint_meta import CommitManifest, JobFingerprint
    from sparktide.state_api.savepoint_format import SavepointManifest

__all__ = ["BaseStage", "StagePlan", "commit_savepoint", "write_subtask"]

NewEntries = Mapping[str, Mapping[int, list["StateEntry"]]]
"""Per state name, per key group, the entries written."""


@dataclass(frozen=True)
class BaseStage:
    """A stage of the savepoint or checkpoint a writer starts from: where it is (plain data,
    so that a Spark task opens it) and its parallelism."""

    location: str
    version: int
    stage: int
    parallelism: int

    def open(self) -> tuple[CheckpointStore, CommitManifest]:
        store = CheckpointStore(self.location)
        return store, store.commit_info(self.version)

    def load(
        self, subtask: int, opened: tuple[CheckpointStore, CommitManifest] | None = None
    ) -> LoadedSubtask:
        """Subtask ``subtask`` of the stage in the neutral form (a native RocksDB chain read
        out), with its valves, watermarks and broadcast state."""
        store, manifest = opened or self.open()
        chain = manifest.chain(self.stage, subtask)
        if chain is None:
            from sparktide.spark.checkpoint import CheckpointError

            raise CheckpointError(
                f"{self.location}: the manifest of version {self.version} names no subtask "
                f"{subtask} of stage {self.stage}"
            )
        return store.load_chain(chain, self.stage, subtask, files=manifest.files)


@dataclass(frozen=True)
class StagePlan:
    """One stage of the written savepoint (see the module docstring). ``name``: the entry
    operator's name (what snapshots record); ``key_type``: the declared key type as
    :func:`~sparktide.common.typeinfo_json.versioned_type` records it; ``states``: the states
    written; ``timers``: whether new timers replace the base's."""

    stage: int
    name: str
    uid: str | None
    identity: str
    parallelism: int
    max_parallelism: int
    keyed: bool
    key_type: dict[str, Any] | None = None
    states: Mapping[str, StateMeta] = field(default_factory=dict)
    timers: bool = False
    base: BaseStage | None = None

    def key_groups(self, subtask: int) -> tuple[int, int]:
        kgs = compute_key_group_range_for_operator_index(
            self.max_parallelism, self.parallelism, subtask
        )
        return kgs.start, kgs.end


def _snapshot(
    plan: StagePlan,
    subtask: int,
    base: KeyedOperatorSnapshot | None,
    entries: NewEntries,
    timers: TimerSnapshot | None,
) -> KeyedOperatorSnapshot:
    """The keyed snapshot of a subtask: the base's, its replaced states and timers dropped,
    with the new entries and timers."""
    meta: dict[str, StateMeta] = {}
    state: dict[int, dict[str, list[StateEntry]]] = {}
    kept_timers: TimerSnapshot = {}
    if base is not None:
        meta = {n: m for n, m in base.state_meta.items() if n not in plan.states}
        for kg, per in base.state.items():
            kept = {n: e for n, e in per.items() if n not in plan.states}
            if kept:
                state[kg] = kept
        kept_timers = {} if plan.timers else base.timers
    meta.update(plan.states)
    for name, per_group in entries.items():
        for kg, found in per_group.items():
            state.setdefault(kg, {})[name] = found
    from sparktide.runtime.keygroups import KeyGroupRange

    start, end = plan.key_groups(subtask)
    return KeyedOperatorSnapshot(
        operator=plan.name,
        max_parallelism=plan.max_parallelism,
        key_group_range=KeyGroupRange(start, end),
        state_meta=meta,
        state=state,
        timers=kept_timers if timers is None else timers,
        key_type=plan.key_type if plan.key_type is not None or base is None else base.key_type,
    )


def write_subtask(
    store: CheckpointStore,
    version: int,
    plan: StagePlan,
    subtask: int,
    entries: NewEntries,
    timers: TimerSnapshot | None = None,
    opened: tuple[CheckpointStore, CommitManifest] | None = None,
) -> tuple[str, FileRecord]:
    """Write the full snapshot file of subtask ``subtask`` of ``plan``'s stage at
    ``version`` into ``store``: the new ``entries`` and ``timers`` of its key groups, and from
    the base what they do not replace (``opened``: the base's store and manifest, when the
    caller has them). Returns the file's path (relative) and record."""
    parts: dict[str, bytes] = {}
    base_snap = None
    if plan.base is not None:
        loaded = plan.base.load(subtask, opened)
        base_snap = loaded.snapshot()
        for name, data in (("valves", loaded.valves), ("watermarks", loaded.watermarks),
                           ("broadcast", loaded.broadcast)):  # fmt: skip
            if data is not None:
                parts[name] = data
    snap = _snapshot(plan, subtask, base_snap, entries, timers) if plan.keyed else None
    store.write_version(version, plan.stage, subtask, Chain(version), snap, {}, parts,
                        operator=plan.identity)  # fmt: skip
    rel = store.relative(store.subtask_path(version, plan.stage, subtask))
    return rel, store.records[rel]


def commit_savepoint(
    store: CheckpointStore,
    manifest: SavepointManifest,
    plans: tuple[StagePlan, ...],
    files: Mapping[str, FileRecord],
    state_types: Mapping[str, OperatorStateTypes],
    processing_time: int,
) -> None:
    """Commit version ``manifest.version`` of ``store`` (its chains: the full snapshots of
    ``plans``, its files ``files``), then write ``savepoint.json`` (to a temporary name, then
    moved: a savepoint without it is incomplete)."""
    from sparktide.state_api.savepoint_format import SAVEPOINT_FILE

    v = manifest.version
    store.commit(
        v,
        BatchCommit(
            processing_time=processing_time,
            parallelism={p.stage: p.parallelism for p in plans},
            spark_batch=manifest.spark_batch,
            files=files,
            chains={p.stage: (Chain(v),) * p.parallelism for p in plans},
            state_types=state_types,
        ),
    )
    store.write(store.path(SAVEPOINT_FILE), manifest.encode(), atomic=True)


def fingerprint_of(
    plans: tuple[StagePlan, ...], base: JobFingerprint | None, removed: frozenset[str]
) -> JobFingerprint:
    """The job fingerprint of the written savepoint: the base's sources, and per stage its
    operators (a base stage's as the base records them, without those whose uid is in
    ``removed``; a new one: its entry, named by its uid), max parallelism and keying."""
    from sparktide.spark.checkpoint_meta import JobFingerprint, OperatorRef, StageFingerprint

    stages = []
    for p in plans:
        ops: tuple[OperatorRef, ...]
        if p.base is not None and base is not None:
            ops = tuple(o for o in base.stages[p.base.stage].operators if o.uid not in removed)
        else:
            ops = (OperatorRef(p.name, p.uid, p.identity),)
        stages.append(StageFingerprint(ops, p.max_parallelism, p.keyed))
    return JobFingerprint(base.sources if base is not None else (), tuple(stages))
