"""The container format of every checkpoint file: JSON metadata and named binary parts.

A file of :func:`pack_parts` starts with a magic string and :data:`CHECKPOINT_FORMAT_VERSION`,
then a JSON header (the file's metadata and, per part, its offset, length and CRC32) with its
own CRC32, then the parts. :func:`unpack_parts` validates all of it; a truncated, corrupt or
foreign file raises :class:`CheckpointError` naming the file, and a file of another format
version an error naming both versions (:func:`format_version_error`), never read: a version's
metadata may mean something else in another.

>>> meta, parts = unpack_parts(pack_parts({"a": b"xyz"}, {"n": 1}), "f")
>>> meta, parts
({'n': 1}, {'a': b'xyz'})
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Mapping

__all__ = [
    "CHECKPOINT_FORMAT_VERSION",
    "CORRUPT_FIX",
    "MIGRATED_FORMAT_VERSIONS",
    "NEVER_NATIVE_FORMAT_VERSIONS",
    "CheckpointError",
    "JsonObject",
    "JsonValue",
    "file_digest",
    "format_version_error",
    "header_meta",
    "pack_parts",
    "unpack_parts",
]

CORRUPT_FIX = "restore the directory from a backup or start from an empty one"
"""What to do about a checkpoint file that does not read back as written."""

CHECKPOINT_FORMAT_VERSION = 7
# 1: valves, watermarks and split states were pickled; 2: a changelog's key groups were one
# pickle each (timer timestamps and sequence numbers with the user values); 3: a split's
# watermark generator state was its attributes, also for the built-in generators; 4: a
# manifest named no state backend per chain (every chain was on the heap); 5: no chain was a
# native RocksDB checkpoint (every chain held the backend-neutral form); 6: a RocksDB state
# file's key type (header field ``rocksdb.key_type``) was a base64 pickle, not JSON data
MIGRATED_FORMAT_VERSIONS = frozenset({4, 5, 6})
"""Older format versions still read: their files mean the same, a manifest is migrated (a
version 4 manifest's chains are heap chains, a version 4 or 5 chain is never native, see
:meth:`~sparktide.spark.checkpoint_meta.CommitManifest.from_json`); a version 6 state file's
pickled key type is read only where the checkpoint is trusted (a restore, ``inspect
--values``; see :meth:`~sparktide.spark.checkpoint_native.NativeReference.decoded_key_type`)."""
NEVER_NATIVE_FORMAT_VERSIONS = frozenset({4, 5})
"""Older format versions whose chains are never native RocksDB checkpoints."""
_MAGIC = b"\x89STKCKP\n"
_PREFIX = struct.Struct(">8sII")

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
"""A value JSON represents (what checkpoint metadata is made of)."""
JsonObject = dict[str, JsonValue]
"""A JSON object."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, truncated, of another job or format."""


def format_version_error(where: str, version: object) -> CheckpointError:
    """The error for a file of another checkpoint format version (never read: a version's
    metadata may mean something else in another)."""
    older = isinstance(version, int) and version < CHECKPOINT_FORMAT_VERSION
    who = "an older" if older else "another"
    readable = ", ".join(str(v) for v in sorted({*MIGRATED_FORMAT_VERSIONS}))
    return CheckpointError(
        f"{where}: checkpoint format version {version} is not supported; this sparktide "
        f"reads version {CHECKPOINT_FORMAT_VERSION} and migrates {readable} (the checkpoint "
        f"was written by {who} "
        "sparktide): resume the query with the sparktide version that wrote it, or start from "
        "an empty checkpoint directory (its state is then not restored)"
    )


def pack_parts(parts: dict[str, bytes], meta: Mapping[str, object] | None = None) -> bytes:
    """Bytes holding named binary ``parts`` and JSON ``meta``, each part with its CRC32.

    >>> unpack_parts(pack_parts({"a": b"xyz"}, {"n": 1}), "f")
    ({'n': 1}, {'a': b'xyz'})
    """
    offset = 0
    refs: dict[str, list[int]] = {}
    for name, data in parts.items():
        refs[name] = [offset, len(data), zlib.crc32(data)]
        offset += len(data)
    header = {"format_version": CHECKPOINT_FORMAT_VERSION, "meta": meta or {}, "parts": refs}
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    head_crc = struct.pack(">I", zlib.crc32(head))
    prefix = _PREFIX.pack(_MAGIC, CHECKPOINT_FORMAT_VERSION, len(head))
    return prefix + head + head_crc + b"".join(parts.values())


def unpack_parts(data: bytes, where: str) -> tuple[JsonObject, dict[str, bytes]]:
    """The ``(meta, parts)`` of :func:`pack_parts` bytes, validated; ``where`` names the file
    in errors."""
    if len(data) < _PREFIX.size or data[:8] != _MAGIC:
        raise CheckpointError(
            f"{where}: not a sparktide checkpoint file (bad magic bytes); the checkpoint is "
            "corrupt: restore the directory from a backup or start from an empty one"
        )
    _, version, head_len = _PREFIX.unpack_from(data)
    if version != CHECKPOINT_FORMAT_VERSION and version not in MIGRATED_FORMAT_VERSIONS:
        raise format_version_error(where, version)
    start = _PREFIX.size
    end = start + head_len
    if end + 4 > len(data):
        raise CheckpointError(f"{where}: the file is truncated (incomplete header); {CORRUPT_FIX}")
    head = data[start:end]
    if struct.unpack(">I", data[end : end + 4])[0] != zlib.crc32(head):
        raise CheckpointError(
            f"{where}: the file is corrupt (header checksum mismatch); {CORRUPT_FIX}"
        )
    header = json.loads(head.decode("utf-8"))
    area = memoryview(data)[end + 4 :]
    parts: dict[str, bytes] = {}
    for name, (off, length, crc) in header["parts"].items():
        if off + length > len(area):
            raise CheckpointError(
                f"{where}: the file is truncated (part {name!r} is incomplete); {CORRUPT_FIX}"
            )
        chunk = bytes(area[off : off + length])
        if zlib.crc32(chunk) != crc:
            raise CheckpointError(
                f"{where}: the file is corrupt (checksum mismatch in {name!r}); {CORRUPT_FIX}"
            )
        parts[name] = chunk
    meta: JsonObject = header["meta"]
    return meta, parts


def header_meta(data: bytes) -> JsonObject | None:
    """The JSON meta of :func:`pack_parts` bytes, read without checking the parts (``None``:
    no readable header)."""
    try:
        _, _, head_len = _PREFIX.unpack_from(data)
        start = _PREFIX.size
        meta = json.loads(bytes(data[start : start + head_len]).decode("utf-8"))["meta"]
    except Exception:
        return None
    return meta if isinstance(meta, dict) else None


def file_digest(data: bytes) -> str:
    """The digest a manifest records of a file's bytes.

    >>> file_digest(b"x")[:16]
    'blake2b:d161d711'
    """
    return "blake2b:" + hashlib.blake2b(data, digest_size=32).hexdigest()
