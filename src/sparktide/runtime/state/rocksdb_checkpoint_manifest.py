"""The manifest of an incremental RocksDB checkpoint: which stored files make up the database.

A RocksDB checkpoint is the set of files of a native checkpoint (hard links of the live
database's files). The immutable SST files are *shared*: a file uploaded for one checkpoint is
referenced again by the next ones as long as the database keeps it, so a checkpoint uploads only
the SSTs that are new since the previous completed one. The small files RocksDB rewrites
(``MANIFEST-*``, ``CURRENT``, ``OPTIONS-*``, the write-ahead log, the binding's config) are
*private*: uploaded with every checkpoint. A :class:`RocksDBManifest` names every file with
its size and BLAKE2b digest; it is plain JSON with a format version, read back validated field
by field (a missing or mistyped field raises :class:`RocksDBCheckpointError` naming the file
and the field).

>>> f = StoredFile("000009.sst", "shared/000009-ab.sst", 10, "blake2b:ab", FileKind.SHARED)
>>> m = RocksDBManifest(checkpoint_id=3, files=(f,), uploaded_bytes=10)
>>> RocksDBManifest.from_json(m.to_json(), "m.json") == m
True
>>> RocksDBManifest.from_json({**m.to_json(), "checkpoint_id": "3"}, "m.json")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.runtime.state.rocksdb_checkpoint_manifest.RocksDBCheckpointError: m.json: field \
'checkpoint_id' must be an int, got '3'; ...
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "ROCKSDB_CHECKPOINT_FORMAT_VERSION",
    "FileKind",
    "RocksDBCheckpointError",
    "RocksDBManifest",
    "StoredFile",
    "digest_bytes",
    "digest_file",
]

ROCKSDB_CHECKPOINT_FORMAT_VERSION = 1
"""The format version of :class:`RocksDBManifest` JSON (another version is refused)."""

_KIND = "sparktide-rocksdb-incremental"
_CHUNK = 1 << 20
_FIX = (
    "the RocksDB checkpoint is corrupt or was not written by this sparktide: restore the "
    "checkpoint directory from a backup or start from an empty one"
)


class RocksDBCheckpointError(ValueError):
    """A RocksDB checkpoint that cannot be used: a file missing, changed, truncated, or a
    manifest of another format."""


class FileKind(Enum):
    """Whether a stored file is shared by checkpoints (an immutable SST) or private to one."""

    SHARED = "shared"
    PRIVATE = "private"


def digest_bytes(data: bytes) -> str:
    """The digest a manifest records of ``data``.

    >>> digest_bytes(b"x")[:16]
    'blake2b:d161d711'
    """
    return "blake2b:" + hashlib.blake2b(data, digest_size=32).hexdigest()


def digest_file(path: str) -> tuple[int, str]:
    """``(size, digest)`` of the local file ``path``, read in chunks."""
    h = hashlib.blake2b(digest_size=32)
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, "blake2b:" + h.hexdigest()


@dataclass(frozen=True)
class StoredFile:
    """One file of a checkpoint: its name in the database directory (``local_name``), where it
    is stored relative to the storage root (``path``), its size, digest and kind."""

    local_name: str
    path: str
    size: int
    digest: str
    kind: FileKind

    def to_json(self) -> dict[str, object]:
        return {
            "local_name": self.local_name,
            "path": self.path,
            "size": self.size,
            "digest": self.digest,
            "kind": self.kind.value,
        }

    @classmethod
    def from_json(cls, raw: object, where: str, field: str) -> StoredFile:
        obj = _object(raw, where, field)
        kind = _str(obj, "kind", where, field)
        if kind not in {k.value for k in FileKind}:
            raise _bad(where, f"{field}.kind", "'shared' or 'private'", kind)
        local_name = _str(obj, "local_name", where, field)
        if not local_name or "/" in local_name or local_name in {".", ".."}:
            raise _bad(where, f"{field}.local_name", "a plain file name", local_name)
        size = _int(obj, "size", where, field)
        if size < 0:
            raise _bad(where, f"{field}.size", "a size >= 0", size)
        return cls(
            local_name,
            _str(obj, "path", where, field),
            size,
            _str(obj, "digest", where, field),
            FileKind(kind),
        )


@dataclass(frozen=True)
class RocksDBManifest:
    """The files of one incremental checkpoint of a database (``checkpoint_id``) and how many
    bytes this checkpoint uploaded (the rest it shares with earlier checkpoints)."""

    checkpoint_id: int
    files: tuple[StoredFile, ...]
    uploaded_bytes: int

    @property
    def total_bytes(self) -> int:
        """The size of every file the checkpoint names (what a restore reads)."""
        return sum(f.size for f in self.files)

    def shared_paths(self) -> frozenset[str]:
        """The storage paths of the shared files this checkpoint references."""
        return frozenset(f.path for f in self.files if f.kind is FileKind.SHARED)

    @property
    def private_bytes(self) -> int:
        """The size of the checkpoint's private files (uploaded with every checkpoint: the
        rest of what it uploaded are new SST files)."""
        return sum(f.size for f in self.files if f.kind is FileKind.PRIVATE)

    def private_paths(self) -> frozenset[str]:
        """The storage paths of the files only this checkpoint references."""
        return frozenset(f.path for f in self.files if f.kind is FileKind.PRIVATE)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": _KIND,
            "format_version": ROCKSDB_CHECKPOINT_FORMAT_VERSION,
            "checkpoint_id": self.checkpoint_id,
            "uploaded_bytes": self.uploaded_bytes,
            "files": [f.to_json() for f in self.files],
        }

    def encode(self) -> bytes:
        """The canonical JSON bytes (sorted keys, no spaces)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> RocksDBManifest:
        """The manifest of the JSON bytes ``data`` (the file ``where``), validated."""
        try:
            raw = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RocksDBCheckpointError(f"{where}: not a JSON manifest ({exc}); {_FIX}") from None
        return cls.from_json(raw, where)

    @classmethod
    def from_json(cls, raw: object, where: str) -> RocksDBManifest:
        obj = _object(raw, where, "")
        if obj.get("kind") != _KIND:
            raise _bad(where, "kind", repr(_KIND), obj.get("kind"))
        version = obj.get("format_version")
        if version != ROCKSDB_CHECKPOINT_FORMAT_VERSION:
            raise RocksDBCheckpointError(
                f"{where}: RocksDB checkpoint format version {version!r} is not supported; this "
                f"sparktide reads version {ROCKSDB_CHECKPOINT_FORMAT_VERSION}: resume with the "
                "sparktide version that wrote it, or start from an empty checkpoint directory"
            )
        files_raw = obj.get("files")
        if not isinstance(files_raw, list):
            raise _bad(where, "files", "a JSON list", files_raw)
        files = tuple(
            StoredFile.from_json(f, where, f"files[{i}]") for i, f in enumerate(files_raw)
        )
        names = [f.local_name for f in files]
        if len(set(names)) != len(names):
            raise _bad(where, "files", "a list of distinct local names", names)
        return cls(
            _int(obj, "checkpoint_id", where, ""), files, _int(obj, "uploaded_bytes", where, "")
        )


def _object(raw: object, where: str, field: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        what = f"field {field!r}" if field else "the manifest"
        raise RocksDBCheckpointError(
            f"{where}: {what} must be a JSON object, got {raw!r:.80}; {_FIX}"
        )
    return raw


def _get(obj: dict[str, object], name: str, where: str, field: str) -> object:
    full = f"{field}.{name}" if field else name
    if name not in obj:
        raise RocksDBCheckpointError(f"{where}: field {full!r} is missing; {_FIX}")
    return obj[name]


def _int(obj: dict[str, object], name: str, where: str, field: str) -> int:
    value = _get(obj, name, where, field)
    if type(value) is not int:
        raise _bad(where, f"{field}.{name}" if field else name, "an int", value)
    return value


def _str(obj: dict[str, object], name: str, where: str, field: str) -> str:
    value = _get(obj, name, where, field)
    if not isinstance(value, str):
        raise _bad(where, f"{field}.{name}" if field else name, "a string", value)
    return value


def _bad(where: str, field: str, expected: str, value: object) -> RocksDBCheckpointError:
    return RocksDBCheckpointError(
        f"{where}: field {field!r} must be {expected}, got {value!r:.80}; {_FIX}"
    )
