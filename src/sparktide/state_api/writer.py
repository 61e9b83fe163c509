"""``SavepointWriter``: build a savepoint from tables of keyed state (the State Processor API's
writer; the model is Flink's ``SavepointWriter`` with ``OperatorTransformation`` and
``KeyedStateBootstrapFunction``).

A writer starts empty (:meth:`SavepointWriter.new_savepoint`) or from a savepoint or a
committed version of a checkpoint (:meth:`SavepointWriter.from_savepoint`,
:meth:`SavepointWriter.from_checkpoint`); each ``with_...`` returns a new writer (a writer is
an immutable description of what to write):

- :meth:`~SavepointWriter.with_keyed_state`: the keyed state named by a state descriptor
  (``ValueStateDescriptor``, ``ListStateDescriptor``, ``MapStateDescriptor``,
  ``ReducingStateDescriptor``, ``AggregatingStateDescriptor``) of the operator with that
  ``uid``, as rows in the shape :meth:`SavepointReader.keyed_state
  <sparktide.state_api.reader.SavepointReader.keyed_state>` gives (a ``pyarrow.Table`` or a
  Spark DataFrame; :mod:`sparktide.state_api.state_rows_in`);
- :meth:`~SavepointWriter.with_timers`: the operator's pending timers, in the shape
  :meth:`SavepointReader.timers <sparktide.state_api.reader.SavepointReader.timers>` gives;
- :meth:`~SavepointWriter.remove_operator`: drop an operator of the base;
- :meth:`~SavepointWriter.write`: write the savepoint into an absent or empty directory.

The savepoint (``docs/savepoints.md``) holds one committed version: the base's (version 0 for
a new one), with the base's sources and split states, origin ``writer``. Its job fingerprint
has one keyed stage per operator written, whose entry operator is the one with that uid
(identity ``uid:<uid>``), with the max parallelism and declared key and state types recorded,
so a job whose keyed operator has that ``uid(...)`` restores it, its types checked as for a
checkpoint. Rows are checked against the declared types as they are converted: a value that
does not fit raises :class:`~sparktide.state_api.state_rows_in.StateWriteError` naming the
operator, the state, the row and the column. Rows given as Spark DataFrames are written by a
Spark job, one task per subtask (a key-group range) of the operator
(:mod:`sparktide.state_api.writer_spark`).

>>> import pyarrow as pa
>>> import tempfile
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.datastream.state import ValueStateDescriptor
>>> rows = pa.table({"key": ["alice", "bob"], "value": [2, 1]})
>>> path = tempfile.mkdtemp()
>>> manifest = (SavepointWriter.new_savepoint()
...     .with_keyed_state("count", ValueStateDescriptor("count", Types.LONG()), rows,
...                       key_type=Types.STRING())
...     .write(path))
>>> manifest.version, manifest.origin
(0, 'writer')
>>> from sparktide.state_api import SavepointReader
>>> read = SavepointReader.read(path, trusted=True).keyed_state("count", "count")
>>> sorted(zip(read["key"].to_pylist(), read["value"].to_pylist()))
[('alice', 2), ('bob', 1)]
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparktide.common.typeinfo_json import versioned_type
from sparktide.core.state import StateDescriptor
from sparktide.runtime.keygroups import compute_operator_index_for_key_group
from sparktide.runtime.state.recorded_types import OperatorStateTypes
from sparktide.runtime.state.state_types import declared_or_none, describe_declared
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.state_api.checkpoint_view import CheckpointView, OperatorInfo
from sparktide.state_api.savepoint_format import WRITER_ORIGIN, SavepointManifest
from sparktide.state_api.state_rows_in import (
    Decoded,
    StateTarget,
    StateWriteError,
    TimerTarget,
    check_columns,
    decode_state_rows,
    decode_timer_rows,
    group_state,
    group_timers,
)
from sparktide.state_api.writer_files import (
    BaseStage,
    StagePlan,
    commit_savepoint,
    fingerprint_of,
    write_subtask,
)

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.state.backend import StateMeta
    from sparktide.spark.checkpoint_meta import FileRecord

__all__ = ["SavepointWriter", "StateWriteError"]

DEFAULT_MAX_PARALLELISM = 128
"""The max parallelism of the operators of a new savepoint (the job's default)."""

_UNSET: Any = object()


@dataclass(frozen=True)
class _Base:
    """Where a writer starts from: a committed version of a checkpoint or savepoint (opened:
    ``view``), and the savepoint's manifest (``None``: a checkpoint)."""

    view: CheckpointView
    savepoint: SavepointManifest | None

    @property
    def version(self) -> int:
        return self.view.version


@dataclass(frozen=True)
class OperatorRows:
    """What is written of one operator: its key type, the rows of each state given, and its
    timers' rows (``None``: the base's, or none)."""

    uid: str
    key_type: TypeInformation | None
    states: tuple[tuple[StateTarget, Any], ...] = ()
    timers: Any = None

    def spark_rows(self) -> bool:
        """Whether the rows are Spark DataFrames (then all are: :meth:`check_one_form`)."""
        return any(not isinstance(r, pa.Table) for r in self.all_rows())

    def check_one_form(self) -> None:
        """Refuse rows given both as tables and as DataFrames."""
        tables = [isinstance(r, pa.Table) for r in self.all_rows()]
        if any(tables) and not all(tables):
            raise TypeError(
                f"operator uid {self.uid!r}: its rows are given both as pyarrow tables and as "
                "Spark DataFrames; give all the rows of one operator in one form"
            )

    def all_rows(self) -> list[Any]:
        rows = [r for _, r in self.states]
        return rows if self.timers is None else [*rows, self.timers]


def _is_frame(rows: object) -> bool:
    return type(rows).__name__ == "DataFrame" and hasattr(rows, "mapInArrow")


def _check_rows(rows: object, what: str) -> None:
    if not isinstance(rows, pa.Table) and not _is_frame(rows):
        raise TypeError(
            f"{what}: rows must be a pyarrow.Table or a Spark DataFrame (in the shape "
            f"SavepointReader gives), got {type(rows).__name__}"
        )


def _uid(uid: object) -> str:
    if not isinstance(uid, str) or not uid:
        raise TypeError(f"uid must be a non-empty str (the operator's uid(...)), got {uid!r}")
    return uid


class SavepointWriter:
    """A description of a savepoint to write (see the module docstring); build one with
    :meth:`new_savepoint`, :meth:`from_savepoint` or :meth:`from_checkpoint`."""

    def __init__(
        self,
        max_parallelism: int,
        base: _Base | None = None,
        operators: tuple[OperatorRows, ...] = (),
        removed: frozenset[str] = frozenset(),
    ) -> None:
        if type(max_parallelism) is not int or not 1 <= max_parallelism <= 32768:
            raise ValueError(
                "max_parallelism must be an int in [1, 32768] (the key groups of the "
                "operators written; the job's must be the same), got "
                f"{max_parallelism!r}"
            )
        self.max_parallelism = max_parallelism
        self._base = base
        self._operators = operators
        self._removed = removed
        self._view = base.view if base is not None else None

    # ------------------------------------------------------------------ starting points

    @classmethod
    def new_savepoint(cls, max_parallelism: int = DEFAULT_MAX_PARALLELISM) -> SavepointWriter:
        """An empty savepoint whose operators have ``max_parallelism`` key groups (it must
        be the job's: ``env.set_max_parallelism``, 128 by default)."""
        return cls(max_parallelism)

    @classmethod
    def from_savepoint(
        cls, path: str, max_parallelism: int = DEFAULT_MAX_PARALLELISM
    ) -> SavepointWriter:
        """The savepoint at ``path``, to transform: its operators are kept unless removed or
        given new state; its version, sources and split states are kept.
        ``max_parallelism``: of the operators added."""
        from sparktide.state_api.savepoint import read_savepoint

        manifest = read_savepoint(path)
        return cls(max_parallelism, _Base(CheckpointView(path, manifest.version), manifest))

    @classmethod
    def from_checkpoint(
        cls,
        location: str,
        version: int | None = None,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
    ) -> SavepointWriter:
        """Committed ``version`` (``None``: the last) of the checkpoint at ``location``, as
        :meth:`from_savepoint` (the savepoint written names no source positions: take one
        with ``sparktide savepoint`` to keep them)."""
        return cls(max_parallelism, _Base(CheckpointView(location, version), None))

    # ------------------------------------------------------------------ transformations

    def _base_operator(self, uid: str) -> OperatorInfo | None:
        if self._view is None or uid in self._removed:
            return None
        found = [o for o in self._view.operators() if o.uid == uid]
        return found[0] if found else None

    def _rows_of(self, uid: str) -> OperatorRows | None:
        for op in self._operators:
            if op.uid == uid:
                return op
        return None

    def _with(self, rows: OperatorRows) -> SavepointWriter:
        rows.check_one_form()
        ops = tuple(rows if o.uid == rows.uid else o for o in self._operators)
        if self._rows_of(rows.uid) is None:
            ops = (*ops, rows)
        return SavepointWriter(self.max_parallelism, self._base, ops, self._removed)

    def _key_type(self, uid: str, key_type: object) -> TypeInformation | None:
        """The key type of operator ``uid``: given, else the base's or the one given before;
        a key type that differs from those is refused."""
        base = self._base_operator(uid)
        known = self._rows_of(uid)
        recorded: Any = base.key_type if base is not None else _UNSET
        if known is not None:
            recorded = known.key_type
        given = recorded if key_type is _UNSET else declared_or_none(key_type)
        if given is _UNSET:
            return None
        if recorded is not _UNSET and given != recorded:
            raise ValueError(
                f"operator uid {uid!r}: key_type {describe_declared(given)} differs from "
                f"{describe_declared(recorded)}, the key type its state is written with; "
                "write all its state with one key type (remove_operator(uid) first to "
                "rewrite the base's operator with another)"
            )
        return given

    def with_keyed_state(
        self, uid: str, descriptor: StateDescriptor, rows: Any, key_type: Any = _UNSET
    ) -> SavepointWriter:
        """A writer that also writes the keyed state ``descriptor`` names (its kind and
        declared types) of the operator ``uid`` from ``rows`` (a ``pyarrow.Table`` or Spark
        DataFrame in the shape ``SavepointReader.keyed_state`` gives; ``key_group`` and
        ``list_index`` optional), replacing the base's state of that name. ``key_type``: the
        declared key type of the operator's keyed stream (``key_by(..., key_type=...)``;
        default: the base operator's, else undeclared: keys given as their pickles)."""
        uid = _uid(uid)
        if not isinstance(descriptor, StateDescriptor):
            raise TypeError(
                f"operator uid {uid!r}: descriptor must be a state descriptor "
                "(ValueStateDescriptor, ListStateDescriptor, MapStateDescriptor, ...), got "
                f"{type(descriptor).__name__}"
            )
        _check_rows(rows, f"operator uid {uid!r}, state {descriptor.name!r}")
        base = self._base_operator(uid)
        if base is not None and not base.keyed:
            raise ValueError(
                f"operator uid {uid!r} of the base holds no keyed state (it is not the first "
                "operator of a keyed stage); keyed state is written for a keyed operator"
            )
        target = StateTarget.of(uid, descriptor, self._key_type(uid, key_type))
        if isinstance(rows, pa.Table):
            check_columns(target, rows.column_names)
        else:
            check_columns(target, rows.columns)
        known = self._rows_of(uid) or OperatorRows(uid, target.key_type)
        if any(t.name == target.name for t, _ in known.states):
            raise ValueError(
                f"operator uid {uid!r}: state {target.name!r} is given twice; give each "
                "state of an operator once"
            )
        return self._with(replace(known, states=(*known.states, (target, rows))))

    def with_timers(self, uid: str, rows: Any, key_type: Any = _UNSET) -> SavepointWriter:
        """A writer that also writes the pending timers of operator ``uid`` from ``rows`` (in
        the shape ``SavepointReader.timers`` gives; ``key_group`` optional, ``service``
        optional: ``user-timers``), replacing the base's timers of the operator."""
        uid = _uid(uid)
        _check_rows(rows, f"operator uid {uid!r}, timers")
        target = TimerTarget(uid, self._key_type(uid, key_type))
        check_columns(target, rows.column_names if isinstance(rows, pa.Table) else rows.columns)
        known = self._rows_of(uid) or OperatorRows(uid, target.key_type)
        if known.timers is not None:
            raise ValueError(
                f"operator uid {uid!r}: timers are given twice; give an operator's timers once"
            )
        return self._with(replace(known, timers=rows))

    def remove_operator(self, uid: str) -> SavepointWriter:
        """A writer without the operator ``uid`` of the base (a keyed stage's entry: the
        stage, with its state; another operator: its watermark), so that a job without it
        restores the savepoint without ``allow_non_restored_state``."""
        uid = _uid(uid)
        if self._base_operator(uid) is None:
            held = sorted(
                o.uid for o in (self._view.operators() if self._view else ())
                if o.uid is not None and o.uid not in self._removed
            )  # fmt: skip
            raise ValueError(
                f"the base has no operator with uid {uid!r} to remove; its operators with a "
                f"uid: {', '.join(map(repr, held)) or 'none'}"
            )
        if self._rows_of(uid) is not None:
            raise ValueError(f"operator uid {uid!r} has state given to write; remove it first")
        return SavepointWriter(
            self.max_parallelism, self._base, self._operators, self._removed | {uid}
        )

    # ------------------------------------------------------------------ writing

    def write(self, path: str, parallelism: int | None = None) -> SavepointManifest:
        """Write the savepoint into ``path`` (absent or an empty directory; a local path or a
        ``pyarrow.fs`` URI) and return its manifest. ``parallelism``: the subtasks of each
        operator added (``None``: 1 for rows given as tables, else Spark's
        ``spark.sql.shuffle.partitions``, at most the max parallelism); an operator of the
        base keeps its parallelism."""
        from sparktide.state_api.savepoint import check_savepoint_target

        check_savepoint_target(path)
        if parallelism is not None and (type(parallelism) is not int or parallelism < 1):
            raise ValueError(f"parallelism must be an int >= 1 or None, got {parallelism!r}")
        plans = self._plans(parallelism)
        base_fp = None if self._view is None else self._view.manifest.fingerprint
        store = CheckpointStore(
            path, fingerprint_of(plans, base_fp, self._removed), snapshot_every=1
        )
        version = 0 if self._base is None else self._base.version
        files: dict[str, FileRecord] = {}
        now = int(time.time() * 1000)
        for plan in plans:
            rows = self._rows_of(plan.uid) if plan.keyed and plan.uid is not None else None
            if rows is not None and rows.spark_rows():
                from sparktide.state_api.writer_spark import write_stage

                files.update(write_stage(store, version, plan, rows, now))
            else:
                files.update(_write_local(store, version, plan, rows, now))
        self._write_splits(store, version)
        manifest = self._manifest(version, now)
        processing = now if self._view is None else self._view.manifest.processing_time
        commit_savepoint(store, manifest, plans, files, self._state_types(plans), processing)
        return manifest

    def _manifest(self, version: int, now: int) -> SavepointManifest:
        saved = None if self._base is None else self._base.savepoint
        if saved is None:
            return SavepointManifest(version=version, created_ms=now, origin=WRITER_ORIGIN)
        return replace(saved, created_ms=now, origin=WRITER_ORIGIN)

    def _write_splits(self, store: CheckpointStore, version: int) -> None:
        """The split states of the version: a savepoint base's; none for a new savepoint or a
        checkpoint base (no source positions: the sources start afresh)."""
        view = self._view
        splits = {}
        if view is not None and self._base is not None and self._base.savepoint is not None:
            split_file = view.store.relative(view.store.path("splits", f"{version}.bin"))
            if split_file in view.manifest.files:
                splits = view.store.read_splits(version, view.manifest.files)
        store.write_splits(version, splits)

    def _plans(self, parallelism: int | None) -> tuple[StagePlan, ...]:
        """The stages written: the base's (without those removed), then the operators
        added, in the order given."""
        plans: list[StagePlan] = []
        view = self._view
        done: set[str] = set()
        if view is not None and view.manifest.fingerprint is not None:
            for index, stage in enumerate(view.manifest.fingerprint.stages):
                entry = stage.entry
                if (
                    entry is None
                    or entry.uid in self._removed
                    or index not in (view.manifest.parallelism)
                ):
                    continue
                p = view.manifest.parallelism[index]
                base = BaseStage(view.location, view.version, index, p)
                plan = StagePlan(len(plans), entry.name, entry.uid, entry.identity or "", p,
                                 stage.max_parallelism, stage.keyed, base=base)  # fmt: skip
                rows = self._rows_of(entry.uid) if entry.uid is not None else None
                if rows is not None:
                    done.add(rows.uid)
                    plan = _with_rows(plan, rows)
                plans.append(plan)
        for rows in self._operators:
            if rows.uid not in done:
                p = parallelism or _default_parallelism(rows, self.max_parallelism)
                p = min(p, self.max_parallelism)
                plan = StagePlan(len(plans), rows.uid, rows.uid, f"uid:{rows.uid}", p,
                                 self.max_parallelism, True)  # fmt: skip
                plans.append(_with_rows(plan, rows))
        return tuple(plans)

    def _state_types(self, plans: tuple[StagePlan, ...]) -> dict[str, OperatorStateTypes]:
        """Per keyed operator written, the record of its key type and states' declared
        types (a base operator: what the base records, with the states written)."""
        recorded = {} if self._view is None else dict(self._view.manifest.state_types)
        out: dict[str, OperatorStateTypes] = {}
        for plan in plans:
            if not plan.keyed:
                continue
            old = recorded.get(plan.identity)
            if plan.key_type is None:  # a base operator kept as it is: as the base records it
                if old is not None:
                    out[plan.identity] = old
                continue
            states: dict[str, StateMeta] = dict(old.states) if old is not None else {}
            if plan.base is not None and old is None and self._view is not None:
                states.update(_base_states(self._view, plan.base.stage))  # no types recorded
            states.update(plan.states)
            out[plan.identity] = OperatorStateTypes(plan.name, plan.uid, plan.key_type, states)
        return out

    def __repr__(self) -> str:
        ops = ", ".join(o.uid for o in self._operators) or "none"
        base = "new" if self._base is None else repr(self._base.view.location)
        return f"SavepointWriter({base}, operators written: {ops})"


def _default_parallelism(rows: OperatorRows, max_parallelism: int) -> int:
    if not rows.spark_rows():
        return 1
    frame = next(r for r in rows.all_rows() if not isinstance(r, pa.Table))
    shuffle = frame.sparkSession.conf.get("spark.sql.shuffle.partitions")
    return min(int(shuffle or 1), max_parallelism)


def _with_rows(plan: StagePlan, rows: OperatorRows) -> StagePlan:
    """``plan`` writing the states (and timers) of ``rows``, with their key type."""
    states: Mapping[str, StateMeta] = {t.name: t.meta() for t, _ in rows.states}
    key_type = versioned_type(rows.key_type)
    return replace(plan, states=states, timers=rows.timers is not None, key_type=key_type)


def _write_local(
    store: CheckpointStore, version: int, plan: StagePlan, rows: OperatorRows | None, now: int
) -> dict[str, FileRecord]:
    """Write every subtask of ``plan``'s stage in this process (rows as tables)."""
    maxp, p = plan.max_parallelism, plan.parallelism
    per_subtask: list[dict[str, dict[int, list[Any]]]] = [{} for _ in range(p)]
    timers: list[Any] = [None] * p
    if rows is not None:
        for target, table in rows.states:
            decoded = sorted(decode_state_rows(target, table, maxp), key=lambda d: d[0])
            for kg, entries in group_state(target, decoded, now).items():
                i = compute_operator_index_for_key_group(maxp, p, kg)
                per_subtask[i].setdefault(target.name, {})[kg] = entries
        if rows.timers is not None:
            timer_target = TimerTarget(rows.uid, rows.key_type)
            decoded = sorted(decode_timer_rows(timer_target, rows.timers, maxp), key=lambda d: d[0])
            mine: list[list[Decoded]] = [[] for _ in range(p)]
            for d in decoded:
                mine[compute_operator_index_for_key_group(maxp, p, d[0])].append(d)
            timers = [group_timers(timer_target, m) for m in mine]
    opened = plan.base.open() if plan.base is not None else None
    out: dict[str, FileRecord] = {}
    for i in range(p):
        rel, record = write_subtask(store, version, plan, i, per_subtask[i], timers[i], opened)
        out[rel] = record
    return out


def _base_states(view: CheckpointView, stage: int) -> dict[str, StateMeta]:
    """The states of the keyed operator of ``stage`` in ``view``, as a manifest records them."""
    op = next(o for o in view.operators() if o.stage == stage and o.keyed)
    out: dict[str, StateMeta] = {}
    for s in op.states:
        meta: StateMeta = {"kind": s.kind, "ttl": s.ttl}
        if s.types is not None:
            meta["types"] = s.types.to_json()
        out[s.name] = meta
    return out
