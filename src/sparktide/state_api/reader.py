"""``SavepointReader``: a checkpoint's operators, keyed state, timers and split watermarks as
``pyarrow.Table`` s, read in this process without running the job.

:meth:`SavepointReader.read` opens a committed version of a checkpoint (the last by default).
:meth:`~SavepointReader.operators` and :meth:`~SavepointReader.split_watermarks` read
metadata only. :meth:`~SavepointReader.keyed_state` and :meth:`~SavepointReader.timers` read
the state of every subtask of the operator's stage (a heap chain or a native RocksDB
checkpoint alike, :meth:`~sparktide.spark.checkpoint.CheckpointStore.load_chain`): the state
files pickle the keys, namespaces and values, so reading them unpickles, which runs code
stored in the checkpoint directory. They refuse unless the reader was opened with
``trusted=True``: trust the directory as you trust the job's code.
:meth:`~SavepointReader.frames` gives the same tables as Spark DataFrames, read by a Spark job
over the subtasks in parallel (:mod:`sparktide.state_api.spark_reader`).

>>> import tempfile
>>> SavepointReader.read(tempfile.mkdtemp())  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_inspect.NotACheckpointError: ... is not a sparktide checkpoint: ...
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from sparktide.runtime.state.state_types import describe_declared
from sparktide.state_api.checkpoint_view import CheckpointView, OperatorInfo, StateReadError
from sparktide.state_api.rows import (
    NamespaceKind,
    StateRowsSpec,
    TimerRowsSpec,
    namespace_kind,
    timer_batches,
    timer_entries,
)
from sparktide.state_api.subtasks import StageSource, part_batches, part_namespaces

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot
    from sparktide.state_api.spark_reader import StateFrames

__all__ = [
    "ReadTypes",
    "SavepointReader",
    "UntrustedCheckpointError",
    "operators_table",
    "splits_table",
]


class UntrustedCheckpointError(StateReadError):
    """Reading keyed state or timers unpickles them; the reader was not opened trusted."""


@dataclass(frozen=True)
class ReadTypes:
    """Types to read undeclared (pickled) keys and values as (``None``: as recorded)."""

    key_type: TypeInformation | None = None
    value_type: TypeInformation | None = None
    map_key_type: TypeInformation | None = None


class SavepointReader:
    """A committed version of a checkpoint, read as tables (see the module docstring)."""

    def __init__(self, view: CheckpointView, trusted: bool) -> None:
        if not isinstance(trusted, bool):
            raise TypeError(
                "trusted must be a bool (True: keyed state and timers may be read, which "
                f"unpickles them), got {trusted!r}"
            )
        self.view = view
        self.trusted = trusted

    @classmethod
    def read(
        cls, location: str, version: int | None = None, trusted: bool = False
    ) -> SavepointReader:
        """Open committed version ``version`` (``None``: the last) of the checkpoint at
        ``location`` (a path or a ``pyarrow.fs`` URI). ``trusted``: allow
        :meth:`keyed_state` and :meth:`timers`, which unpickle the checkpoint's user values."""
        return cls(CheckpointView(location, version), trusted)

    @property
    def version(self) -> int:
        """The committed version read."""
        return self.view.version

    def frames(self, spark: SparkSession) -> StateFrames:
        """The same tables as Spark DataFrames, read by Spark jobs on ``spark``."""
        from sparktide.state_api.spark_reader import StateFrames

        return StateFrames(self, spark)

    # ------------------------------------------------------------------ metadata

    def operators(self) -> pa.Table:
        """One row per operator and keyed state (operators without keyed state: one row with
        null state columns): stage, uid, name, identity, parallelism, keyed, key type, state,
        kind, ttl and declared types (``Types`` declarations; ``undeclared (pickled)``)."""
        return operators_table(self.view.operators())

    def split_watermarks(self) -> pa.Table:
        """One row per source split: split, watermark, idle, seq (the record sequence number),
        records read and the watermark generator's state (its pickle, not unpickled)."""
        return splits_table(self.view)

    # ------------------------------------------------------------------ keyed state

    def check_trusted(self, what: str) -> None:
        if not self.trusted:
            raise UntrustedCheckpointError(
                f"reading {what} unpickles the keys, namespaces and values the checkpoint "
                f"{self.view.location!r} holds, which runs code stored in it; open it with "
                "SavepointReader.read(..., trusted=True) (the command: --trusted) only if you "
                "trust the directory as you trust the job's code"
            )

    def state_spec(
        self, operator: str, state: str, types: ReadTypes = ReadTypes()
    ) -> tuple[OperatorInfo, StateRowsSpec]:
        """The operator named ``operator`` and how its state ``state`` becomes rows (the
        namespace kind left as none: see :meth:`keyed_state`)."""
        op = self.view.keyed_operator(operator)
        info = op.state(state)
        declared = info.types
        return op, StateRowsSpec(
            state=state,
            kind=info.kind,
            ttl=info.ttl,
            key_type=_given_or(types.key_type, op.key_type),
            value_type=_given_or(types.value_type, declared.value if declared else None),
            map_key_type=_given_or(types.map_key_type, declared.map_key if declared else None),
        )

    def snapshots(self, op: OperatorInfo) -> Iterator[KeyedOperatorSnapshot]:
        """The keyed state and timers of each subtask of ``op``'s stage, in subtask order."""
        view = self.view
        source = StageSource(view.location, view.version, op.stage)
        for subtask in range(op.parallelism):
            snap = source.load(subtask, (view.store, view.manifest))
            if snap is not None:
                yield snap

    def keyed_state(
        self,
        uid: str,
        state: str,
        key_type: TypeInformation | None = None,
        value_type: TypeInformation | None = None,
        map_key_type: TypeInformation | None = None,
    ) -> pa.Table:
        """The keyed state ``state`` of the operator ``uid`` (else its name or identity) as
        rows (:mod:`sparktide.state_api.rows`). ``key_type``, ``value_type``,
        ``map_key_type``: read keys, values (a list's elements) and map keys as these types
        instead of the declared ones (undeclared ones are pickles otherwise)."""
        self.check_trusted(f"state {state!r}")
        op, spec = self.state_spec(uid, state, ReadTypes(key_type, value_type, map_key_type))
        view = self.view
        source = StageSource(view.location, view.version, op.stage)
        found = (source.keyed(s, (view.store, view.manifest)) for s in range(op.parallelism))
        parts = [part for part in found if part is not None]
        kind = namespace_kind(ns for part in parts for ns in part_namespaces(part, state))
        spec = _with_namespace(spec, kind)
        batches = [b for part in parts for b in part_batches(part, spec)]
        return pa.Table.from_batches(batches, schema=spec.schema())

    def timers(self, uid: str, key_type: TypeInformation | None = None) -> pa.Table:
        """The pending timers of the operator ``uid`` (else its name or identity): key,
        namespace (as :meth:`keyed_state` shows it), timestamp, domain (``event`` or
        ``processing``), service (``user-timers``, ``window-timers``...) and key group."""
        self.check_trusted("timers")
        op = self.view.keyed_operator(uid)
        snaps = list(self.snapshots(op))
        kind = namespace_kind(e[5] for s in snaps for e in timer_entries(s))
        spec = TimerRowsSpec(_given_or(key_type, op.key_type), kind or NamespaceKind.NONE)
        batches = [b for s in snaps for b in timer_batches(spec, s)]
        return pa.Table.from_batches(batches, schema=spec.schema())


def _given_or(
    given: TypeInformation | None, recorded: TypeInformation | None
) -> TypeInformation | None:
    return recorded if given is None else given


def _with_namespace(spec: StateRowsSpec, kind: NamespaceKind | None) -> StateRowsSpec:
    return replace(spec, namespace=kind or NamespaceKind.NONE)


def operators_table(operators: tuple[OperatorInfo, ...]) -> pa.Table:
    """The table of :meth:`SavepointReader.operators`."""
    rows = []
    for op in operators:
        base = {
            "stage": op.stage,
            "uid": op.uid,
            "name": op.name,
            "identity": op.identity,
            "parallelism": op.parallelism,
            "keyed": op.keyed,
            "key_type": describe_declared(op.key_type) if op.states else None,
        }
        empty = {"state": None, "kind": None, "ttl": None, "value_type": None,
                 "map_key_type": None}  # fmt: skip
        if not op.states:
            rows.append({**base, **empty})
        for s in op.states:
            types = s.types
            rows.append({
                **base, "state": s.name, "kind": s.kind, "ttl": s.ttl,
                "value_type": None if types is None else describe_declared(types.value),
                "map_key_type": (
                    None if types is None or s.kind != "map" else describe_declared(types.map_key)
                ),
            })  # fmt: skip
    return pa.Table.from_pylist(rows, schema=_OPERATORS)


_OPERATORS = pa.schema(
    [
        ("stage", pa.int32()),
        ("uid", pa.string()),
        ("name", pa.string()),
        ("identity", pa.string()),
        ("parallelism", pa.int32()),
        ("keyed", pa.bool_()),
        ("key_type", pa.string()),
        ("state", pa.string()),
        ("kind", pa.string()),
        ("ttl", pa.bool_()),
        ("value_type", pa.string()),
        ("map_key_type", pa.string()),
    ]
)

_SPLITS = pa.schema(
    [
        ("split", pa.int32()),
        ("watermark", pa.int64()),
        ("idle", pa.bool_()),
        ("seq", pa.int64()),
        ("records", pa.int64()),
        ("generator_state", pa.binary()),
    ]
)


def splits_table(view: CheckpointView) -> pa.Table:
    """The table of :meth:`SavepointReader.split_watermarks` (nothing unpickled)."""
    store, manifest = view.store, view.manifest
    if store.relative(store.path("splits", f"{view.version}.bin")) not in manifest.files:
        return _SPLITS.empty_table()
    splits = store.read_splits(view.version, manifest.files)
    rows = [
        {"split": g, "watermark": s.watermark, "idle": s.idle, "seq": s.seq,
         "records": s.records, "generator_state": s.generator}
        for g, s in sorted(splits.items())
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=_SPLITS)
