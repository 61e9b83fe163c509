"""One committed version of a checkpoint, opened for reading: its operators and their states.

:class:`CheckpointView` reads only metadata, and unpickles nothing: the commit manifest (the
job fingerprint names every stage's operators by name, uid and identity), and per keyed stage
the states its subtasks record with their kind, TTL setting and declared types (the JSON header
of a heap state file, or the JSON records of a RocksDB checkpoint's database) and the declared
key type. It resolves an operator as a user names it (its ``uid``, else its name or identity as
``sparktide inspect`` shows them) and refuses what the checkpoint does not hold with a
:class:`StateReadError` that lists what it does hold.

>>> import tempfile
>>> CheckpointView(tempfile.mkdtemp())  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_inspect.NotACheckpointError: ... is not a sparktide checkpoint: ...
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sparktide.common.typeinfo_json import type_from_versioned
from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.runtime.state.state_types import StateTypes
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore, unpack_parts
from sparktide.spark.checkpoint_inspect import check_is_checkpoint
from sparktide.spark.checkpoint_meta import Chain, CommitManifest, OperatorRef
from sparktide.spark.checkpoint_native import native_reference

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import TypeInformation

__all__ = ["CheckpointView", "OperatorInfo", "StateInfo", "StateReadError"]


class StateReadError(ValueError):
    """What was asked of a checkpoint is not in it (an operator, a state, a version), or
    cannot be read as asked; the message says what the checkpoint holds."""


@dataclass(frozen=True)
class StateInfo:
    """One keyed state as the checkpoint records it: name, kind (``value``, ``list``,
    ``map``, ``reducing``, ``aggregating``), TTL setting and declared types (``None`` where
    no types are recorded: an older checkpoint)."""

    name: str
    kind: str
    ttl: bool
    types: StateTypes | None


@dataclass(frozen=True)
class OperatorInfo:
    """An operator of the checkpointed job: where it runs and, when it is ``keyed`` (the entry
    operator of a keyed stage, which owns the stage's keyed state and timers), its states and
    key type."""

    stage: int
    name: str
    uid: str | None
    identity: str | None
    parallelism: int
    keyed: bool
    states: tuple[StateInfo, ...] = ()
    key_type: TypeInformation | None = None

    def describe(self) -> str:
        """How messages name the operator."""
        return OperatorRef(self.name, self.uid, self.identity).describe()

    def state(self, name: str) -> StateInfo:
        """The state named ``name``; :class:`StateReadError` listing the states otherwise."""
        for state in self.states:
            if state.name == name:
                return state
        held = ", ".join(repr(s.name) for s in self.states) or "none"
        raise StateReadError(
            f"operator {self.describe()} has no keyed state {name!r} in this checkpoint; its "
            f"states: {held}"
        )


class CheckpointView:
    """Committed version ``version`` (``None``: the last) of the checkpoint at ``location``.

    A location that is not a checkpoint raises
    :class:`~sparktide.spark.checkpoint_inspect.NotACheckpointError`; a checkpoint without a
    commit, or a version it no longer keeps, :class:`StateReadError`."""

    def __init__(self, location: str, version: int | None = None) -> None:
        self.store = CheckpointStore(location)
        check_is_checkpoint(self.store)
        kept = sorted(int(n[:-5]) for n in self.store.names("commits") if n[:-5].isdigit())
        if not kept:
            raise StateReadError(
                f"{location!r}: the checkpoint has no committed batch yet: there is no state "
                "to read; read it once the job has committed a batch"
            )
        if version is None:
            version = kept[-1]
        elif type(version) is not int or version not in kept:
            raise StateReadError(
                f"{location!r}: version {version!r} is not a committed version the checkpoint "
                f"keeps; it keeps {', '.join(map(str, kept))}"
            )
        self.version: int = version
        self.manifest: CommitManifest = self.store.commit_info(version)
        self._operators: tuple[OperatorInfo, ...] | None = None
        self._states: dict[int, tuple[tuple[StateInfo, ...], TypeInformation | None]] = {}

    @property
    def location(self) -> str:
        return self.store.location

    def operators(self) -> tuple[OperatorInfo, ...]:
        """Every operator of the job, by stage, with the states of keyed stages."""
        return tuple(self._with_states(op) for op in self._refs())

    def _refs(self) -> tuple[OperatorInfo, ...]:
        """Every operator as the manifest names it (its states not read yet)."""
        if self._operators is None:
            fingerprint = self.manifest.fingerprint
            stages = fingerprint.stages if fingerprint is not None else ()
            self._operators = tuple(
                OperatorInfo(s, op.name, op.uid, op.identity, p, i == 0 and stages[s].keyed)
                for s, p in sorted(self.manifest.parallelism.items())
                if s < len(stages)
                for i, op in enumerate(stages[s].operators)
            )
        return self._operators

    def _with_states(self, op: OperatorInfo) -> OperatorInfo:
        """``op`` with the states and key type of its stage (read once per stage)."""
        if not op.keyed:
            return op
        if op.stage not in self._states:
            self._states[op.stage] = self._stage_states(op.stage, op.parallelism)
        states, key_type = self._states[op.stage]
        return replace(op, states=states, key_type=key_type)

    def operator(self, name: str) -> OperatorInfo:
        """The operator whose uid is ``name``, else whose name or identity is (unique in the
        job), else that ``sparktide inspect`` shows as ``name`` (``'Map [<identity>]'`` for
        operators of one name); :class:`StateReadError` listing the operators otherwise."""
        ops = self._refs()
        for match in (
            [o for o in ops if o.uid == name],
            [o for o in ops if o.name == name],
            [o for o in ops if o.identity == name],
            [o for o in ops if f"{o.name} [{o.identity}]" == name],  # as inspect names twins
        ):
            if len(match) == 1:
                return self._with_states(match[0])
            if len(match) > 1:
                raise StateReadError(
                    f"{len(match)} operators of the checkpointed job are named {name!r}; name "
                    "one by its uid or identity: "
                    + ", ".join(f"{o.describe()} [{o.identity}]" for o in match)
                )
        listed = ", ".join(f"{o.describe()} [{o.identity}]" for o in ops) or "none"
        raise StateReadError(
            f"the checkpoint (version {self.version}) has no operator with uid, name or "
            f"identity {name!r}; its operators: {listed}"
        )

    def keyed_operator(self, name: str) -> OperatorInfo:
        """:meth:`operator`, refusing an operator without keyed state."""
        op = self.operator(name)
        if not op.keyed:
            raise StateReadError(
                f"operator {op.describe()} holds no keyed state (it is not the first operator "
                "of a keyed stage); the keyed operators: "
                + (", ".join(o.describe() for o in self._refs() if o.keyed) or "none")
            )
        return op

    # ------------------------------------------------------------------ state metadata

    def _stage_states(
        self, stage: int, parallelism: int
    ) -> tuple[tuple[StateInfo, ...], TypeInformation | None]:
        """The states of a keyed stage, from its first subtask that records any (every
        subtask registers the same states when it opens)."""
        found: tuple[tuple[StateInfo, ...], TypeInformation | None] = ((), None)
        for subtask in range(parallelism):
            chain = self.manifest.chain(stage, subtask)
            if chain is None:
                continue
            found = self._chain_states(chain, stage, subtask)
            if found[0]:
                return found
        return found

    def _chain_states(
        self, chain: Chain, stage: int, subtask: int
    ) -> tuple[tuple[StateInfo, ...], TypeInformation | None]:
        files = self.manifest.files
        path = self.store.subtask_path(chain.snapshot, stage, subtask)
        meta, parts = unpack_parts(self.store.read_bound(path, files), path)
        ref = native_reference(chain, meta, parts, path)
        raw_states: dict[str, Any]
        if ref is not None:
            from sparktide.state_api.native_meta import native_states

            operator = str(meta.get("operator"))
            raw_states, key_type = native_states(self.store, operator, subtask, ref, path)
        elif "keyed" in parts:
            try:
                header, _ = KeyedOperatorSnapshot.read_header(parts["keyed"])
            except SnapshotFormatError as exc:
                raise CheckpointError(f"{path}: {exc}") from None
            raw_states = dict(header["states"])
            raw_key = header.get("key_type")
            key_type = None if raw_key is None else type_from_versioned(raw_key, path)
        else:
            return (), None
        if chain.changelogs:  # the newest changelog records the states of the version
            newest = self.store.changelog_path(chain.changelogs[-1], stage, subtask)
            log_meta, _ = unpack_parts(self.store.read_bound(newest, files), newest)
            recorded = log_meta.get("state_meta")
            if isinstance(recorded, dict):
                raw_states = dict(recorded)
        return tuple(_state_info(n, m, path) for n, m in sorted(raw_states.items())), key_type


def _state_info(name: str, raw: Any, where: str) -> StateInfo:
    """A :class:`StateInfo` of a state's JSON record (``{kind, ttl, types}``)."""
    types = raw.get("types")
    return StateInfo(
        name,
        str(raw["kind"]),
        bool(raw["ttl"]),
        None if types is None else StateTypes.from_json(types, f"{where}: state {name!r}"),
    )
