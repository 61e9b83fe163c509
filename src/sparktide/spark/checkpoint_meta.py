"""The metadata of a streaming checkpoint as typed values with a versioned JSON form.

Every piece of metadata a checkpoint keeps is a frozen dataclass here, written as plain JSON
(never pickled) and read back validated:

- :class:`CommitManifest` (``commits/<v>.json``): the batch's version, processing time, Spark
  micro-batch ids, per stage its parallelism and per subtask its :class:`Chain` of state files,
  a :class:`FileRecord` per file binding it to its slot, the :class:`JobFingerprint` of the job
  graph (:class:`SourceRef`, :class:`StageFingerprint`, :class:`OperatorRef`) and the batch's
  metrics; :class:`BatchCommit` is what a run hands to
  :meth:`~sparktide.spark.checkpoint.CheckpointStore.commit`, which completes it;
- :class:`SplitState` (``splits/<v>.bin``, one part per source split): the split's watermark,
  idleness, record sequence number and records read, and its watermark generator's state
  (:mod:`sparktide.spark.split_state`);
- :class:`BatchInputs` (``inputs/<v>.json``): what the first attempt of a Spark micro-batch
  read, recorded before its sinks write (each :class:`InputFile` with its size and modification
  time, and per source split the records read), so that a replay is checked against it
  (:mod:`sparktide.spark.batch_inputs`);
- :class:`OperatorWatermarks` (the ``watermarks`` part of a state file): per operator identity
  the operator's watermark and its timer services' watermarks; a subtask's valves (the
  ``valves`` part) are the JSON of :meth:`~sparktide.runtime.valve.StatusWatermarkValve.to_json`
  per input (:func:`encode_valves` / :func:`decode_valves`).

``to_json()`` gives the JSON value, ``from_json(raw, where)`` reads it: a manifest of another
format version (:data:`~sparktide.spark.checkpoint_format.CHECKPOINT_FORMAT_VERSION`) is refused
naming both versions, and a missing or mistyped field raises
:class:`~sparktide.spark.checkpoint_format.CheckpointError` naming the file (``where``), the field
and what to do.

>>> chain = Chain(snapshot=3, changelogs=(4, 5))
>>> Chain.from_json(chain.to_json(), "commits/5.json") == chain
True
>>> Chain.from_json({"snapshot": "3", "changelogs": []}, "commits/5.json")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_format.CheckpointError: commits/5.json: field 'snapshot' must be an \
int, got '3'; ...
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from sparktide.core.state_backend import StateBackendKind
from sparktide.runtime.state.recorded_types import OperatorStateTypes
from sparktide.runtime.valve import StatusWatermarkValve, ValveState
from sparktide.spark.checkpoint_format import (
    CHECKPOINT_FORMAT_VERSION,
    CORRUPT_FIX,
    MIGRATED_FORMAT_VERSIONS,
    NEVER_NATIVE_FORMAT_VERSIONS,
    CheckpointError,
    JsonObject,
    JsonValue,
    file_digest,
    format_version_error,
    pack_parts,
    unpack_parts,
)

__all__ = [
    "BatchCommit",
    "BatchInputs",
    "Chain",
    "CommitManifest",
    "FileRecord",
    "InputFile",
    "JobFingerprint",
    "JsonFields",
    "OperatorRef",
    "OperatorWatermarks",
    "SourceRef",
    "SplitState",
    "StageFingerprint",
    "SubtaskWrite",
    "decode_valves",
    "encode_json",
    "encode_valves",
]

_FIX = f"the checkpoint is corrupt or was not written by this sparktide: {CORRUPT_FIX}"


def encode_json(value: object) -> bytes:
    """The canonical JSON bytes of ``value`` (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


class JsonFields:
    """Typed reads of one JSON object of the file ``where``; a missing or mistyped field
    raises :class:`CheckpointError` naming the file and the field's path."""

    __slots__ = ("path", "raw", "where")

    def __init__(self, raw: object, where: str, path: str = "") -> None:
        if not isinstance(raw, dict):
            what = f"field {path!r}" if path else "the metadata"
            raise CheckpointError(
                f"{where}: {what} must be a JSON object, got {_short(raw)}; {_FIX}"
            )
        self.raw: JsonObject = raw
        self.where = where
        self.path = path

    def _name(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str, expected: str, value: object) -> CheckpointError:
        return CheckpointError(
            f"{self.where}: field {self._name(name)!r} must be {expected}, got "
            f"{_short(value)}; {_FIX}"
        )

    def get(self, name: str) -> JsonValue:
        if name not in self.raw:
            raise CheckpointError(f"{self.where}: field {self._name(name)!r} is missing; {_FIX}")
        return self.raw[name]

    def get_int(self, name: str) -> int:
        value = self.get(name)
        if type(value) is not int:
            raise self.fail(name, "an int", value)
        return value

    def opt_int(self, name: str, default: int | None = None) -> int | None:
        value = self.raw.get(name, default)
        if value is not None and type(value) is not int:
            raise self.fail(name, "an int or null", value)
        return value

    def get_str(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str):
            raise self.fail(name, "a string", value)
        return value

    def opt_str(self, name: str) -> str | None:
        value = self.raw.get(name)
        if value is not None and not isinstance(value, str):
            raise self.fail(name, "a string or null", value)
        return value

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        if not isinstance(value, bool):
            raise self.fail(name, "a bool", value)
        return value

    def get_list(self, name: str) -> list[JsonValue]:
        value = self.get(name)
        if not isinstance(value, list):
            raise self.fail(name, "a JSON list", value)
        return value

    def get_object(self, name: str) -> JsonFields:
        return JsonFields(self.get(name), self.where, self._name(name))

    def int_keyed(self, name: str) -> dict[int, JsonValue]:
        """A JSON object whose keys are decimal ints (stages, splits, inputs)."""
        raw = self.get_object(name).raw
        out: dict[int, JsonValue] = {}
        for key, value in raw.items():
            if not key.lstrip("-").isdigit():
                raise self.fail(name, "an object keyed by ints", raw)
            out[int(key)] = value
        return out


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _int_list(fields: JsonFields, name: str) -> tuple[int, ...]:
    values = fields.get_list(name)
    if not all(type(v) is int for v in values):
        raise fields.fail(name, "a list of ints", values)
    return tuple(v for v in values if isinstance(v, int))


# ---------------------------------------------------------------------------------------------
# chains and file records


@dataclass(frozen=True)
class Chain:
    """The files that make up the state of a stage subtask at a version: the full snapshot of
    version ``snapshot`` plus the changelogs of ``changelogs``, applied in order, written by a
    job on the state backend ``backend``.

    The files hold the backend-neutral form of keyed state (the ``snapshot_state()`` form
    both backends share), so a chain restores onto either backend; the backend is recorded so
    that a switch starts a new chain and ``sparktide inspect`` can say where the state lived.
    A ``native`` chain (a RocksDB job's) is one file of version ``snapshot`` holding the
    subtask's valves and watermarks and naming its incremental RocksDB checkpoint of that
    version (its SST files, :mod:`~sparktide.runtime.state.rocksdb_checkpoint`), which holds
    the keyed state and timers; it never has changelogs.

    >>> Chain(3, (4,), StateBackendKind.ROCKSDB).to_json()
    {'snapshot': 3, 'changelogs': [4], 'backend': 'rocksdb'}
    >>> Chain(5, (), StateBackendKind.ROCKSDB, native=True).to_json()["native"]
    True
    """

    snapshot: int
    changelogs: tuple[int, ...] = ()
    backend: StateBackendKind = StateBackendKind.HASHMAP
    native: bool = False

    def versions(self) -> tuple[int, ...]:
        """Every version whose file the chain names."""
        return (self.snapshot, *self.changelogs)

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "snapshot": self.snapshot,
            "changelogs": list(self.changelogs),
            "backend": self.backend.value,
        }
        if self.native:
            out["native"] = True
        return out

    @classmethod
    def from_json(
        cls, raw: object, where: str, path: str = "", format_version: int | None = None
    ) -> Chain:
        """Read a chain of a manifest of ``format_version`` (``None``: the current one; a
        version 4 chain names no backend: it was on the heap)."""
        fields = JsonFields(raw, where, path)
        snapshot, changelogs = fields.get_int("snapshot"), _int_list(fields, "changelogs")
        if format_version in MIGRATED_FORMAT_VERSIONS and "backend" not in fields.raw:
            return cls(snapshot, changelogs, StateBackendKind.HASHMAP)
        name = fields.get_str("backend")
        try:
            backend = StateBackendKind(name)
        except ValueError:
            known = ", ".join(repr(k.value) for k in StateBackendKind)
            raise fields.fail("backend", f"one of {known}", name) from None
        native = fields.raw.get("native", False)
        if type(native) is not bool or (native and format_version in NEVER_NATIVE_FORMAT_VERSIONS):
            raise fields.fail("native", "true or false (true only from format 6 on)", native)
        if native and (backend is not StateBackendKind.ROCKSDB or changelogs):
            raise fields.fail("native", "false for a heap chain or one with changelogs", native)
        return cls(snapshot, changelogs, backend, native)


_BINDING = ("version", "operator", "stage", "subtask", "key_groups", "kind")


@dataclass(frozen=True)
class FileRecord:
    """What a manifest records of one file it names: the digest and size of its bytes and the
    slot it belongs to (checkpoint version, operator identity of the stage's entry, stage
    index, subtask, key-group range ``(start, end)`` or ``None``, kind)."""

    digest: str
    size: int
    version: int | None
    operator: str | None
    stage: int | None
    subtask: int | None
    key_groups: tuple[int, int] | None
    kind: str | None

    def to_json(self) -> JsonObject:
        return {
            "digest": self.digest,
            "size": self.size,
            "version": self.version,
            "operator": self.operator,
            "stage": self.stage,
            "subtask": self.subtask,
            "key_groups": None if self.key_groups is None else list(self.key_groups),
            "kind": self.kind,
        }

    def slot(self) -> JsonObject:
        """The slot fields as a file header writes them."""
        out = self.to_json()
        return {name: out[name] for name in _BINDING}

    @classmethod
    def from_json(cls, raw: object, where: str, path: str = "") -> FileRecord:
        fields = JsonFields(raw, where, path)
        return _record(fields.get_str("digest"), fields.get_int("size"), fields)

    @classmethod
    def of(cls, data: bytes, meta: JsonObject, where: str) -> FileRecord:
        """The record of ``data`` (the file ``where``) whose header meta is ``meta``."""
        return _record(file_digest(data), len(data), JsonFields(meta, where))


def _record(digest: str, size: int, fields: JsonFields) -> FileRecord:
    raw = fields.raw.get("key_groups")
    key_groups: tuple[int, int] | None = None
    if raw is not None:
        if not (
            isinstance(raw, list)
            and len(raw) == 2
            and isinstance(raw[0], int)
            and isinstance(raw[1], int)
        ):
            raise fields.fail("key_groups", "[start, end] or null", raw)
        key_groups = (raw[0], raw[1])
    return FileRecord(
        digest=digest,
        size=size,
        version=fields.opt_int("version"),
        operator=fields.opt_str("operator"),
        stage=fields.opt_int("stage"),
        subtask=fields.opt_int("subtask"),
        key_groups=key_groups,
        kind=fields.opt_str("kind"),
    )


# ---------------------------------------------------------------------------------------------
# the job fingerprint


@dataclass(frozen=True)
class OperatorRef:
    """An operator of a stage as a fingerprint names it: its name, uid and identity
    (:mod:`sparktide.runtime.operator_identity`). JSON: ``[name, uid, identity]``."""

    name: str
    uid: str | None
    identity: str | None = None

    def describe(self) -> str:
        """``'name' (uid 'u')`` for messages."""
        return f"{self.name!r}" + (f" (uid {self.uid!r})" if self.uid is not None else "")

    def to_json(self) -> list[JsonValue]:
        return [self.name, self.uid, self.identity]

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> OperatorRef:
        if not (
            isinstance(raw, list)
            and len(raw) in (2, 3)
            and isinstance(raw[0], str)
            and all(v is None or isinstance(v, str) for v in raw[1:])
        ):
            raise CheckpointError(
                f"{where}: field {path!r} must be [name, uid, identity], got {_short(raw)}; {_FIX}"
            )
        name, uid, identity = [*raw, None][:3]
        return cls(str(name), _opt_str(uid), _opt_str(identity))


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class SourceRef:
    """A source of the job: its name, uid and number of splits. JSON: ``[name, uid, splits]``."""

    name: str
    uid: str | None
    splits: int

    def to_json(self) -> list[JsonValue]:
        return [self.name, self.uid, self.splits]

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> SourceRef:
        if not (
            isinstance(raw, list)
            and len(raw) == 3
            and isinstance(raw[0], str)
            and (raw[1] is None or isinstance(raw[1], str))
            and type(raw[2]) is int
        ):
            raise CheckpointError(
                f"{where}: field {path!r} must be [name, uid, splits], got {_short(raw)}; {_FIX}"
            )
        name, uid, splits = raw
        return cls(name, _opt_str(uid), splits)


@dataclass(frozen=True)
class StageFingerprint:
    """An exchange stage of the job: its operators (the first is its entry, which owns the
    keyed state, timers and input valves), max parallelism and whether it is keyed."""

    operators: tuple[OperatorRef, ...]
    max_parallelism: int
    keyed: bool

    @property
    def entry(self) -> OperatorRef | None:
        return self.operators[0] if self.operators else None

    def to_json(self) -> JsonObject:
        return {
            "operators": [op.to_json() for op in self.operators],
            "max_parallelism": self.max_parallelism,
            "keyed": self.keyed,
        }

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> StageFingerprint:
        fields = JsonFields(raw, where, path)
        ops = fields.get_list("operators")
        return cls(
            tuple(
                OperatorRef.from_json(op, where, f"{path}.operators[{i}]")
                for i, op in enumerate(ops)
            ),
            fields.get_int("max_parallelism"),
            fields.get_bool("keyed"),
        )


@dataclass(frozen=True)
class JobFingerprint:
    """What a restore checks against a checkpoint: the job's sources and stages (see
    :mod:`sparktide.spark.restore_match`).

    >>> fp = JobFingerprint((SourceRef("s", None, 2),),
    ...     (StageFingerprint((OperatorRef("w", "w", "uid:w"),), 128, True),))
    >>> fp.to_json()["sources"]
    [['s', None, 2]]
    >>> JobFingerprint.from_json(fp.to_json(), "f") == fp
    True
    """

    sources: tuple[SourceRef, ...] = ()
    stages: tuple[StageFingerprint, ...] = ()
    input_sinks: frozenset[str] = field(default=frozenset(), compare=False)
    """The identities of the job's sinks that run where their input runs
    (:attr:`~sparktide.runtime.graph.SinkNode.runs_with_input`). Not stored: a restore asks it
    of the job it starts, to accept a checkpoint in which such a sink had an unkeyed stage of
    its own (:func:`~sparktide.spark.restore_match.check_restorable`)."""

    def to_json(self) -> JsonObject:
        return {
            "sources": [s.to_json() for s in self.sources],
            "stages": [s.to_json() for s in self.stages],
        }

    @classmethod
    def from_json(cls, raw: object, where: str, path: str = "fingerprint") -> JobFingerprint:
        fields = JsonFields(raw, where, path)
        return cls(
            tuple(
                SourceRef.from_json(s, where, f"{path}.sources[{i}]")
                for i, s in enumerate(fields.get_list("sources"))
            ),
            tuple(
                StageFingerprint.from_json(s, where, f"{path}.stages[{i}]")
                for i, s in enumerate(fields.get_list("stages"))
            ),
        )


# ---------------------------------------------------------------------------------------------
# the manifest


@dataclass(frozen=True)
class BatchCommit:
    """What a streaming run commits for one batch (the store adds the version, the chains, the
    file records it knows and the fingerprint: :class:`CommitManifest`).

    ``parallelism``: per stage index; ``files``: the records of the files the workers wrote;
    ``metrics``: the batch's metrics (:func:`~sparktide.spark.stream_metrics.batch_metrics`);
    ``chains``: per stage the subtasks' chains (``None``: planned by the store)."""

    processing_time: int
    parallelism: Mapping[int, int]
    spark_batch: int | None = None
    last_spark_batch: int | None = None
    metrics: JsonObject = field(default_factory=dict)
    files: Mapping[str, FileRecord] = field(default_factory=dict)
    chains: Mapping[int, tuple[Chain, ...]] | None = None
    state_types: Mapping[str, OperatorStateTypes] = field(default_factory=dict)
    """Per operator identity, the declared types of its keyed state (what the subtasks
    reported, :meth:`~sparktide.runtime.state.recorded_types.OperatorStateTypes.join`)."""


@dataclass(frozen=True)
class SubtaskWrite:
    """What a stage subtask wrote in a batch, reported to the driver for the commit: its
    file (``path``, relative to the checkpoint root) with its record, and the ``chain`` the
    subtask's state is at that version, as it was planned and written (native or not), and
    the declared types of its keyed state (``None``: not keyed)."""

    stage: int
    subtask: int
    path: str
    record: FileRecord
    chain: Chain
    state_types: OperatorStateTypes | None = None

    @staticmethod
    def chains(
        version: int, parallelism: Mapping[int, int], writes: Iterable[SubtaskWrite]
    ) -> dict[int, tuple[Chain, ...]]:
        """Per stage, the chains of its subtasks as ``writes`` report them (what the manifest
        of batch ``version`` names); a subtask without a report raises
        :class:`CheckpointError` (the batch must not be committed: it would name a file
        nobody wrote).

        >>> w = SubtaskWrite(0, 0, "state/3/stage-0/sub-0.bin", None, Chain(3))
        >>> SubtaskWrite.chains(3, {0: 1}, [w])
        {0: (Chain(snapshot=3, changelogs=(), backend=<StateBackendKind.HASHMAP: 'hashmap'>, \
native=False),)}
        >>> SubtaskWrite.chains(3, {0: 2}, [w])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        sparktide.spark.checkpoint_format.CheckpointError: batch 3: stage 0 subtask 1 ...
        """
        reported = {(w.stage, w.subtask): w.chain for w in writes}
        out: dict[int, tuple[Chain, ...]] = {}
        for stage, p in parallelism.items():
            for i in range(p):
                if (stage, i) not in reported:
                    raise CheckpointError(
                        f"batch {version}: stage {stage} subtask {i} reported no state file, "
                        "so the batch is not committed (a task's result was lost); run the "
                        "query again: the batch is replayed from the last commit"
                    )
            out[stage] = tuple(reported[(stage, i)] for i in range(p))
        return out


@dataclass(frozen=True)
class CommitManifest:
    """The manifest of committed version ``version`` (``commits/<version>.json``).

    >>> m = CommitManifest(version=1, processing_time=5, parallelism={0: 1},
    ...     chains={0: (Chain(0, (1,)),)}, files={}, fingerprint=None)
    >>> CommitManifest.from_json(m.to_json(), "commits/1.json") == m
    True
    >>> CommitManifest.from_json({**m.to_json(), "format_version": 99}, "commits/1.json")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparktide.spark.checkpoint_format.CheckpointError: commits/1.json: checkpoint format \
version 99 is not supported; ...
    """

    version: int
    processing_time: int
    parallelism: Mapping[int, int]
    chains: Mapping[int, tuple[Chain, ...]]
    files: Mapping[str, FileRecord]
    fingerprint: JobFingerprint | None
    spark_batch: int | None = None
    last_spark_batch: int | None = None
    metrics: JsonObject = field(default_factory=dict)
    state_types: Mapping[str, OperatorStateTypes] = field(default_factory=dict)
    """Per operator identity, the declared types of its keyed state (empty in a manifest of
    an older sparktide: nothing is checked before the job starts then)."""

    def chain(self, stage: int, subtask: int) -> Chain | None:
        """The chain of a stage subtask (``None``: the manifest names none)."""
        chains = self.chains.get(stage, ())
        return chains[subtask] if 0 <= subtask < len(chains) else None

    def to_json(self) -> JsonObject:
        return {
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "version": self.version,
            "processing_time": self.processing_time,
            "spark_batch": self.spark_batch,
            "last_spark_batch": self.last_spark_batch,
            "parallelism": {str(s): p for s, p in self.parallelism.items()},
            "chains": {str(s): [c.to_json() for c in cs] for s, cs in self.chains.items()},
            "files": {path: r.to_json() for path, r in self.files.items()},
            "fingerprint": None if self.fingerprint is None else self.fingerprint.to_json(),
            "metrics": self.metrics,
            "state_types": {
                identity: cast(JsonValue, record.to_json())
                for identity, record in sorted(self.state_types.items())
            },
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> CommitManifest:
        fields = JsonFields(raw, where)
        version = fields.raw.get("format_version")
        if version != CHECKPOINT_FORMAT_VERSION and version not in MIGRATED_FORMAT_VERSIONS:
            raise format_version_error(where, version)
        fmt = version if isinstance(version, int) else None
        number = fields.get_int("version")
        parallelism: dict[int, int] = {}
        for stage, p in fields.int_keyed("parallelism").items():
            if type(p) is not int:
                raise fields.fail(f"parallelism.{stage}", "an int", p)
            parallelism[stage] = p
        chains: dict[int, tuple[Chain, ...]] = {}
        if "chains" in fields.raw:
            for stage, raw_chains in fields.int_keyed("chains").items():
                if not isinstance(raw_chains, list):
                    raise fields.fail(f"chains.{stage}", "a list of chains", raw_chains)
                chains[stage] = tuple(
                    Chain.from_json(c, where, f"chains.{stage}[{i}]", fmt)
                    for i, c in enumerate(raw_chains)
                )
        else:  # a manifest without chains: full snapshots (on the heap: older formats)
            chains = {s: (Chain(number),) * p for s, p in parallelism.items()}
        files = fields.get_object("files").raw if "files" in fields.raw else {}
        raw_fp = fields.raw.get("fingerprint")
        metrics = fields.get_object("metrics").raw if "metrics" in fields.raw else {}
        return cls(
            version=number,
            processing_time=fields.get_int("processing_time"),
            parallelism=parallelism,
            chains=chains,
            files={p: FileRecord.from_json(r, where, f"files.{p}") for p, r in files.items()},
            fingerprint=None if raw_fp is None else JobFingerprint.from_json(raw_fp, where),
            spark_batch=fields.opt_int("spark_batch"),
            last_spark_batch=fields.opt_int("last_spark_batch", number),
            metrics=metrics,
            state_types=_state_types(fields, where),
        )


def _state_types(fields: JsonFields, where: str) -> dict[str, OperatorStateTypes]:
    """The ``state_types`` of a manifest (none in one of an older sparktide)."""
    if "state_types" not in fields.raw:
        return {}
    out: dict[str, OperatorStateTypes] = {}
    for identity, raw in fields.get_object("state_types").raw.items():
        try:
            out[identity] = OperatorStateTypes.from_json(raw, f"{where}: state_types.{identity}")
        except ValueError as exc:
            raise CheckpointError(f"{exc}; {CORRUPT_FIX}") from None
    return out


# ---------------------------------------------------------------------------------------------
# what a micro-batch read


@dataclass(frozen=True)
class InputFile:
    """A file a micro-batch read: its path (as Spark's source log names it), size in bytes and
    modification time in nanoseconds (``None``: not known, its file system is not one pyarrow
    opens). JSON: ``[path, size, modified_ns]``."""

    path: str
    size: int | None
    modified_ns: int | None

    def to_json(self) -> list[JsonValue]:
        return [self.path, self.size, self.modified_ns]

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> InputFile:
        if not (
            isinstance(raw, list)
            and len(raw) == 3
            and isinstance(raw[0], str)
            and all(v is None or type(v) is int for v in raw[1:])
        ):
            raise CheckpointError(
                f"{where}: field {path!r} must be [path, size, modified_ns], got {_short(raw)}; "
                f"{_FIX}"
            )
        name, size, modified = raw
        return cls(str(name), _opt_int(size), _opt_int(modified))


def _opt_int(value: object) -> int | None:
    return value if type(value) is int else None


@dataclass(frozen=True)
class BatchInputs:
    """What the first attempt of Spark micro-batch ``spark_batch`` (version ``version``) read:
    the files Spark's source log lists for it that existed (``files``) and, per source split,
    the records read (``records``).

    >>> inputs = BatchInputs(4, 4, (InputFile("file:///in/a.json", 120, 7),), {0: 8})
    >>> inputs.to_json()["files"], inputs.total_records
    ([['file:///in/a.json', 120, 7]], 8)
    """

    version: int
    spark_batch: int
    files: tuple[InputFile, ...]
    records: Mapping[int, int]

    @property
    def total_records(self) -> int:
        return sum(self.records.values())

    def to_json(self) -> JsonObject:
        return {
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "version": self.version,
            "spark_batch": self.spark_batch,
            "files": [f.to_json() for f in self.files],
            "records": {str(s): n for s, n in sorted(self.records.items())},
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> BatchInputs:
        fields = JsonFields(raw, where)
        version = fields.raw.get("format_version")
        if version != CHECKPOINT_FORMAT_VERSION:
            raise format_version_error(where, version)
        records: dict[int, int] = {}
        for split, n in fields.int_keyed("records").items():
            if type(n) is not int:
                raise fields.fail(f"records.{split}", "an int", n)
            records[split] = n
        return cls(
            version=fields.get_int("version"),
            spark_batch=fields.get_int("spark_batch"),
            files=tuple(
                InputFile.from_json(f, where, f"files[{i}]")
                for i, f in enumerate(fields.get_list("files"))
            ),
            records=records,
        )


# ---------------------------------------------------------------------------------------------
# split and subtask metadata


@dataclass(frozen=True)
class SplitState:
    """A source split's state after a batch: its watermark, whether it is idle, its record
    sequence number and the records it read in the batch (JSON), and its watermark generator's
    state (:func:`~sparktide.spark.split_state.capture_generator_state`: user values, pickled,
    in a part of its own; ``None``: none).

    >>> s = SplitState(watermark=9, idle=False, seq=3, records=3, generator=None)
    >>> SplitState.from_bytes(s.to_bytes(), "split 0") == s
    True
    """

    watermark: int
    idle: bool
    seq: int
    records: int
    generator: bytes | None = None

    def to_bytes(self) -> bytes:
        meta: JsonObject = {
            "watermark": self.watermark,
            "idle": self.idle,
            "seq": self.seq,
            "records": self.records,
        }
        parts = {} if self.generator is None else {"generator": self.generator}
        return pack_parts(parts, meta)

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> SplitState:
        """Read (nothing unpickled); ``where`` names the split in errors."""
        meta, parts = unpack_parts(data, where)
        fields = JsonFields(meta, where)
        return cls(
            fields.get_int("watermark"),
            fields.get_bool("idle"),
            fields.get_int("seq"),
            fields.get_int("records"),
            parts.get("generator"),
        )


@dataclass(frozen=True)
class OperatorWatermarks:
    """An operator's watermark and its timer services' watermarks (by service name), restored
    when a subtask resumes. JSON: ``[watermark, {service: watermark}]``."""

    watermark: int
    timer_services: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> list[JsonValue]:
        return [self.watermark, dict(self.timer_services)]

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> OperatorWatermarks:
        if not (
            isinstance(raw, list)
            and len(raw) == 2
            and type(raw[0]) is int
            and isinstance(raw[1], dict)
            and all(type(w) is int for w in raw[1].values())
        ):
            raise CheckpointError(
                f"{where}: field {path!r} must be [watermark, {{service: watermark}}], got "
                f"{_short(raw)}; {_FIX}"
            )
        watermark, services = raw
        return cls(watermark, {n: w for n, w in services.items() if isinstance(w, int)})

    @staticmethod
    def encode(watermarks: Mapping[str, OperatorWatermarks]) -> bytes:
        """The ``watermarks`` part of a state file: per operator identity."""
        return encode_json({ident: w.to_json() for ident, w in watermarks.items()})

    @classmethod
    def decode(cls, data: bytes, where: str) -> dict[str, OperatorWatermarks]:
        """Read a ``watermarks`` part (``where``: the subtask, for errors)."""
        raw = JsonFields(_load_json(data, where, "operator watermarks"), where, "watermarks").raw
        return {ident: cls.from_json(w, where, f"watermarks.{ident}") for ident, w in raw.items()}


def encode_valves(valves: Mapping[int, StatusWatermarkValve]) -> bytes:
    """The ``valves`` part of a state file: per input index, the valve's JSON."""
    return encode_json({str(i): v.to_json() for i, v in valves.items()})


def decode_valves(data: bytes, where: str) -> dict[int, StatusWatermarkValve]:
    """Read a ``valves`` part (``where``: the subtask, for errors)."""
    fields = JsonFields({"valves": _load_json(data, where, "valves")}, where)
    out: dict[int, StatusWatermarkValve] = {}
    for index, raw in fields.int_keyed("valves").items():
        if not isinstance(raw, dict):
            raise fields.fail(f"valves.{index}", "a JSON object", raw)
        try:
            out[index] = StatusWatermarkValve.from_json(cast(ValveState, raw))  # it checks
        except ValueError as exc:
            raise CheckpointError(f"{where}: field 'valves.{index}': {exc}; {_FIX}") from None
    return out


def _load_json(data: bytes, where: str, what: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise CheckpointError(f"{where}: the {what} are not JSON: {exc}; {_FIX}") from None
    return value
