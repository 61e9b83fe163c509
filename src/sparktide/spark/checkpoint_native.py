"""Native RocksDB checkpoints in a streaming checkpoint: where they live, how a file names one,
and their backend-neutral form.

A RocksDB stage subtask of a streaming job keeps its keyed state and timers in one worker-local
database (:mod:`~sparktide.runtime.state.rocksdb_local`) and checkpoints it incrementally into
``<location>/state/rocksdb/<operator>/<subtask>`` (:func:`native_storage`, a
:class:`~sparktide.runtime.state.rocksdb_checkpoint.RocksDBCheckpointStorage`: only the SST
files that are new are uploaded). The subtask's state file of that version names the checkpoint
with a :class:`NativeReference` (the ``"rocksdb"`` field of its header: the checkpoint id, the
digest of its manifest, the key groups and the operator), so the commit manifest that binds the
state file binds the SST checkpoint too: a restore checks that the manifest it reads is the one
recorded.

:func:`neutral_snapshot` turns such a checkpoint into the backend-neutral snapshot
(:class:`~sparktide.runtime.snapshot.KeyedOperatorSnapshot`) a heap job restores, ``sparktide
inspect`` summarizes and a rescaled RocksDB job inserts: its files are copied into a temporary
directory, opened, read and deleted.

>>> ref = NativeReference(3, "blake2b:00", (0, 63), "op", 128)
>>> NativeReference.from_json(ref.to_json(), "f") == ref
True
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import pickle
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from sparktide.common.typeinfo_json import type_from_versioned, versioned_type
from sparktide.core.state_backend import StateBackendKind
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.operator_identity import operator_identities
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_checkpoint_manifest import RocksDBManifest, digest_bytes
from sparktide.runtime.state.state_types import declared_or_none
from sparktide.spark.checkpoint_format import CheckpointError, JsonObject
from sparktide.spark.checkpoint_meta import Chain

if TYPE_CHECKING:
    from rocksdict import Rdict

    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.runtime.execution.planner import Plan
    from sparktide.runtime.state.rocksdb_layout import Codec
    from sparktide.runtime.timers.manager import TimerSnapshot
    from sparktide.spark.checkpoint import CheckpointStore

__all__ = [
    "NativeReference",
    "NativeUpload",
    "check_manifest",
    "complete_native_checkpoints",
    "discard_native_checkpoints",
    "native_checkpoint_metrics",
    "native_reference",
    "native_stages",
    "native_storage",
    "native_summary",
    "neutral_snapshot",
    "open_state_db",
    "opened_checkpoint",
]


def native_stages(plan: Plan, per_record: bool) -> frozenset[int]:
    """The stages of ``plan`` whose state is checkpointed natively (see
    :attr:`CheckpointStore.native_stages <sparktide.spark.checkpoint.CheckpointStore>`): on
    RocksDB, the keyed stages of a job run per record (``per_record``; the columnar path
    rebuilds its state every batch: neutral snapshots). Only a keyed stage has keyed state and
    timers, kept in a worker-local database; every other stage (a union, a broadcast stage
    without keys, a stage that only forwards to its sinks) holds valves, watermarks and
    broadcast state only, written as heap files."""
    if plan.state_backend.kind is not StateBackendKind.ROCKSDB or not per_record:
        return frozenset()
    return frozenset(stage.index for stage in plan.stages if stage.keyed)


def native_reference(
    chain: Chain, meta: JsonObject, parts: Mapping[str, bytes], path: str
) -> NativeReference | None:
    """The RocksDB checkpoint the first file of ``chain`` (header ``meta``, ``parts``) names;
    ``None``: the file holds its state itself (a heap chain). A native chain's file must name
    one (else :class:`CheckpointError`), unless it holds no keyed state (no key groups, no
    keyed part): the file of a non-keyed subtask, which RocksDB jobs once wrote under native
    chains, read as the heap file it is.

    >>> native = Chain(0, (), StateBackendKind.ROCKSDB, native=True)
    >>> native_reference(native, {"key_groups": None}, {"valves": b"{}"}, "f") is None
    True
    >>> native_reference(native, {"key_groups": [0, 9]}, {}, "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparktide.spark.checkpoint_format.CheckpointError: f: field 'rocksdb' must name ...
    """
    if not chain.native:
        return None
    raw = meta.get("rocksdb")
    if raw is None and meta.get("key_groups") is None and "keyed" not in parts:
        return None
    return NativeReference.from_json(raw, path)


def open_state_db(path: str) -> Rdict:
    """Open (or create) the database of a stage subtask in ``path``: raw mode, every column
    family it holds, the keyed state backend's options (``paranoid_checks``, reads that
    verify block checksums)."""
    from rocksdict import Rdict

    from sparktide.runtime.state.rocksdb_integrity import verified_reads
    from sparktide.runtime.state.rocksdb_memory import db_options

    db = Rdict(path, db_options())
    db.set_read_options(verified_reads())
    return db


def native_storage(location: str, operator: str, subtask: int) -> RocksDBCheckpointStorage:
    """The RocksDB checkpoint storage of a stage subtask (by its entry operator's identity)
    under the streaming checkpoint ``location``.

    >>> native_storage("/ckpt", "op 1", 2).location
    '/ckpt/state/rocksdb/op_1-e642896b/2'
    """
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in operator)[:64]
    tag = hashlib.blake2b(operator.encode(), digest_size=4).hexdigest()
    return RocksDBCheckpointStorage(
        "/".join([location.rstrip("/"), "state", "rocksdb", f"{safe}-{tag}", str(subtask)])
    )


@dataclass(frozen=True)
class NativeReference:
    """What a state file records of its subtask's RocksDB checkpoint: the ``checkpoint`` id
    (the version), the digest of its manifest, the subtask's key groups ``(start, end)``, the
    name of the keyed operator and its max parallelism."""

    checkpoint: int
    manifest: str
    key_groups: tuple[int, int]
    operator: str
    max_parallelism: int
    key_type: JsonObject | str | None = None
    """The declared type information of the keys (``key_by(..., key_type=...)``): how the
    database serializes keys, as JSON data
    (:func:`~sparktide.common.typeinfo_json.versioned_type`); ``None``: undeclared. A str
    is the base64 pickle an older sparktide wrote: read only where the checkpoint is trusted
    (:meth:`decoded_key_type`)."""

    def to_json(self) -> JsonObject:
        return {
            "checkpoint": self.checkpoint,
            "manifest": self.manifest,
            "key_groups": list(self.key_groups),
            "operator": self.operator,
            "max_parallelism": self.max_parallelism,
            "key_type": self.key_type,
        }

    @staticmethod
    def encode_key_type(key_type: TypeInformation | None) -> JsonObject | None:
        """``key_type`` as :attr:`key_type` records it (JSON data, never a pickle)."""
        return None if key_type is None else versioned_type(key_type)

    @property
    def key_type_pickled(self) -> bool:
        """Whether :attr:`key_type` is the pickle of an older sparktide."""
        return isinstance(self.key_type, str)

    def decoded_key_type(self, where: str, trusted: bool) -> TypeInformation | None:
        """The declared key type. The JSON description is read as data; an older sparktide's
        pickle only when ``trusted`` (a restore, or ``inspect --values``: code stored in the
        checkpoint runs), else a :class:`CheckpointError` saying so."""
        if self.key_type is None:
            return None
        if isinstance(self.key_type, str):
            if not trusted:
                raise CheckpointError(
                    f"{where}: the key type was pickled by an older sparktide; reading it runs "
                    "code stored in the checkpoint: use `sparktide inspect --values` on a "
                    "checkpoint you trust (a job restoring it reads it too)"
                )
            return cast("TypeInformation", pickle.loads(base64.b64decode(self.key_type)))
        try:
            return type_from_versioned(self.key_type, f"{where} (field 'rocksdb.key_type')")
        except ValueError as exc:
            raise CheckpointError(str(exc)) from None

    @classmethod
    def from_json(cls, raw: object, where: str) -> NativeReference:
        try:
            if not isinstance(raw, dict):
                raise TypeError
            kgs = raw["key_groups"]
            key_type = raw.get("key_type")
            if key_type is not None and not isinstance(key_type, (str, dict)):
                raise TypeError
            out = cls(
                int(raw["checkpoint"]),
                str(raw["manifest"]),
                (int(kgs[0]), int(kgs[1])),
                str(raw["operator"]),
                int(raw["max_parallelism"]),
                key_type,
            )
        except (KeyError, TypeError, ValueError, IndexError):
            raise CheckpointError(
                f"{where}: field 'rocksdb' must name a RocksDB checkpoint (checkpoint, "
                f"manifest, key_groups, operator, max_parallelism), got {raw!r}; the checkpoint "
                "is corrupt: restore the directory from a backup or start from an empty one"
            ) from None
        return out

    @property
    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange(*self.key_groups)


def check_manifest(
    storage: RocksDBCheckpointStorage, ref: NativeReference, where: str
) -> RocksDBManifest:
    """The manifest of the checkpoint ``ref`` names, checked against the digest it records
    (another manifest under that id, e.g. of an attempt that was not committed, is refused)."""
    try:
        manifest = storage.manifest(ref.checkpoint)
    except ValueError as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    if digest_bytes(manifest.encode()) != ref.manifest:
        raise CheckpointError(
            f"{where}: the RocksDB checkpoint {ref.checkpoint} in {storage.location} is not the "
            "one the state file names (its manifest differs); files were changed in the "
            "checkpoint directory: restore it from a backup or start from an empty one"
        )
    return manifest


@contextlib.contextmanager
def opened_checkpoint(
    storage: RocksDBCheckpointStorage, ref: NativeReference, where: str
) -> Iterator[Rdict]:
    """The database of the RocksDB checkpoint ``ref`` names, copied into a temporary
    directory and opened; closed and deleted afterwards."""
    manifest = check_manifest(storage, ref, where)
    scratch = tempfile.mkdtemp(prefix="sparktide-native-")
    try:
        directory = f"{scratch}/db"
        storage.download(manifest, directory)
        db = open_state_db(directory)
        try:
            yield db
        finally:
            db.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def native_summary(
    storage: RocksDBCheckpointStorage, ref: NativeReference, where: str
) -> JsonObject:
    """What ``sparktide inspect`` shows of the keyed state of the RocksDB checkpoint ``ref``
    names, counted from its store keys without unpickling anything
    (:func:`~sparktide.runtime.state.rocksdb_summary.summarize_database`), and ``key_type``:
    the declared key type (``"pickled"``: format 6's pickle, left unread; list and map states
    are then counted only when the database records undeclared keys)."""
    from sparktide.runtime.state.rocksdb_layout import key_codec
    from sparktide.runtime.state.rocksdb_summary import summarize_database

    keys: Codec | None = None
    shown: str | None = "pickled"
    if not ref.key_type_pickled:
        key_type = ref.decoded_key_type(where, trusted=False)
        keys, shown = key_codec(key_type), None if key_type is None else repr(key_type)
    with opened_checkpoint(storage, ref, where) as db:
        out: JsonObject = dict(summarize_database(db, keys, ref.key_group_range))
    out["key_type"] = shown
    return out


def neutral_snapshot(
    storage: RocksDBCheckpointStorage,
    ref: NativeReference,
    where: str,
    key_groups: KeyGroupRange | None = None,
) -> KeyedOperatorSnapshot:
    """The backend-neutral snapshot of the RocksDB checkpoint ``ref`` names, for the key
    groups of ``key_groups`` it holds (``None``: all of them)."""
    from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

    own = ref.key_group_range
    wanted = own if key_groups is None else own.intersection(key_groups)
    with opened_checkpoint(storage, ref, where) as db:
        key_type = ref.decoded_key_type(where, trusted=True)
        backend = RocksDBKeyedStateBackend.attach(
            db,
            max_parallelism=ref.max_parallelism,
            key_group_range=own,
            time_provider=lambda: 0,
            key_type=key_type,
        )
        try:
            meta, state = backend.snapshot_state()
        finally:
            backend.dispose()
        timers = _timers(db, key_type, own, wanted)
    state = {kg: per for kg, per in state.items() if kg in wanted}
    return KeyedOperatorSnapshot(
        operator=ref.operator,
        max_parallelism=ref.max_parallelism,
        key_group_range=wanted,
        state_meta=meta,
        state=state,
        timers=timers,
        key_type=versioned_type(declared_or_none(key_type)),
    )


def _timers(
    db: Rdict, key_type: TypeInformation | None, own: KeyGroupRange, wanted: KeyGroupRange
) -> TimerSnapshot:
    """The timers of the key groups ``wanted`` the timer queues of ``db`` hold."""
    from sparktide.runtime.state.rocksdb_layout import key_codec
    from sparktide.runtime.timers.queue_factory import recorded_timer_services
    from sparktide.runtime.timers.rocksdb_queue import RocksDBTimerQueue

    timers: TimerSnapshot = {}
    for service, domains in recorded_timer_services(db).items():
        for d, domain in enumerate(("event", "processing")):
            families = domains.get(domain)
            if families is None:
                continue
            queue: RocksDBTimerQueue[object, object] = RocksDBTimerQueue(
                own, keys=key_codec(key_type), db=db, column_families=families, resume=True
            )
            try:
                for kg in wanted:
                    entries = queue.entries_for_key_group(kg)
                    if entries:
                        pair = timers.setdefault(kg, {}).setdefault(service, ([], []))
                        pair[d].extend(entries)
            finally:
                queue.close()
    return timers


@dataclass(frozen=True, slots=True)
class NativeUpload:
    """What one subtask's native RocksDB checkpoint of a batch uploaded: the subtask's
    ``operator`` (identity) and ``subtask``, the bytes uploaded, the total size of its files
    (what a restore reads) and, of those, the small files every checkpoint uploads again."""

    operator: str
    subtask: int
    uploaded_bytes: int
    total_bytes: int
    private_bytes: int


def native_checkpoint_metrics(natives: Sequence[NativeUpload]) -> dict[str, int]:
    """The bytes the native RocksDB checkpoints of a batch uploaded, and the total size of
    their files (what a restore reads), summed over its subtasks; ``private_bytes``: of those,
    the small files every checkpoint uploads again (the rest are SST files: what was uploaded
    beyond them is the new SSTs).

    >>> native_checkpoint_metrics([
    ...     NativeUpload("op", 0, uploaded_bytes=5, total_bytes=50, private_bytes=2),
    ...     NativeUpload("op", 1, uploaded_bytes=1, total_bytes=40, private_bytes=1)])
    {'subtasks': 2, 'uploaded_bytes': 6, 'total_bytes': 90, 'private_bytes': 3}
    """
    return {
        "subtasks": len(natives),
        "uploaded_bytes": sum(n.uploaded_bytes for n in natives),
        "total_bytes": sum(n.total_bytes for n in natives),
        "private_bytes": sum(n.private_bytes for n in natives),
    }


def complete_native_checkpoints(
    store: CheckpointStore, version: int, natives: Sequence[NativeUpload]
) -> None:
    """Complete the native RocksDB checkpoints of committed batch ``version`` (each subtask's
    storage keeps its last two completed checkpoints and deletes the shared files no manifest
    needs any more); one of batch ``version - 1`` still pending (the driver stopped between
    its commit and this) is completed first."""
    for native in natives:
        storage = store.native_storage(native.operator, native.subtask)
        pending = storage.pending_ids()
        if version - 1 in pending:
            storage.complete(version - 1)
        if version in pending:
            storage.complete(version)


def discard_native_checkpoints(store: CheckpointStore, version: int, plan: Plan) -> None:
    """Discard the pending native RocksDB checkpoints of batch ``version`` (not committed) of
    every subtask of the native stages of ``plan`` (:attr:`CheckpointStore.native_stages
    <sparktide.spark.checkpoint.CheckpointStore>`); a replay takes them again from
    ``version - 1``."""
    identities = operator_identities(plan.nodes)
    for stage in plan.stages:
        if stage.index not in store.native_stages:
            continue
        for subtask in range(stage.parallelism):
            storage = store.native_storage(identities[stage.entry.id], subtask)
            with contextlib.suppress(ValueError, OSError):  # completed, or never written
                storage.discard(version)
