"""The checkpoint store of a streaming job: keyed state, timers and split state per batch id.

A streaming run (:mod:`sparktide.spark.streaming`) keeps everything it needs to resume in one
directory, given as a local path or any URI :func:`pyarrow.fs.FileSystem.from_uri` understands::

    <root>/
      commits/<v>.json                 one per committed batch id v (the manifest of version v)
      batches/<v>.json                 the processing time of batch v, recorded at its first attempt
      splits/<v>.bin                   per source split: watermark generator, emitter, sequence
      state/<v>/stage-<s>/sub-<i>.bin  per stage subtask: keyed state and timers of its key
                                       groups (the format of :mod:`sparktide.runtime.snapshot`),
                                       its valves and its operators' watermarks
      spark/                           Spark's own checkpointLocation (offsets and commits)

**Versions.** Every batch writes a *full* snapshot of every subtask as version ``v`` (no
changelog yet). Version ``v`` only counts once ``commits/<v>.json`` exists; that file is written
(to a temporary name, then moved) after the batch's sinks have written, so the highest commit
file names the last committed batch. A replayed, uncommitted batch reads version ``v - 1`` and
overwrites the files of version ``v``.

**Integrity.** Every file of this module starts with a magic string and a format version and
carries CRC32 checksums of its parts; the snapshots inside carry their own. A truncated or
corrupt file raises :class:`CheckpointError` naming the file. Each commit records a fingerprint
of the job graph (stages, operator names and uids, max parallelism, split count); a checkpoint
written by another job raises :class:`CheckpointError` instead of restoring the wrong state.

**Rescaling.** A subtask reads every file of the previous version whose key-group range
intersects its own and keeps only its key groups, so a restart with another parallelism
redistributes the key groups.

>>> import tempfile
>>> store = CheckpointStore(tempfile.mkdtemp(), {"stages": []})
>>> store.committed_version() is None
True
>>> store.commit(0, {"processing_time": 5, "parallelism": {}})
>>> store.committed_version(), store.commit_info(0)["processing_time"]
(0, 5)
"""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from typing import Any

__all__ = [
    "CHECKPOINT_FORMAT_VERSION",
    "CheckpointError",
    "CheckpointStore",
    "pack_parts",
    "unpack_parts",
]

CHECKPOINT_FORMAT_VERSION = 1
_MAGIC = b"\x89STKCKP\n"
_PREFIX = struct.Struct(">8sII")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, truncated, of another job or format."""


# ---------------------------------------------------------------------------------------------
# the container format of state and split files


def pack_parts(parts: dict[str, bytes], meta: dict[str, Any] | None = None) -> bytes:
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


def unpack_parts(data: bytes, where: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The ``(meta, parts)`` of :func:`pack_parts` bytes, validated; ``where`` names the file
    in errors."""
    if len(data) < _PREFIX.size or data[:8] != _MAGIC:
        raise CheckpointError(
            f"{where}: not a sparktide checkpoint file (bad magic bytes); the checkpoint is "
            "corrupt: restore the directory from a backup or start from an empty one"
        )
    _, version, head_len = _PREFIX.unpack_from(data)
    if version != CHECKPOINT_FORMAT_VERSION:
        raise CheckpointError(
            f"{where}: checkpoint format version {version} is not supported; this sparktide "
            f"reads version {CHECKPOINT_FORMAT_VERSION} (resume with the sparktide version that "
            "wrote it, or start from an empty checkpoint directory)"
        )
    start = _PREFIX.size
    end = start + head_len
    if end + 4 > len(data):
        raise CheckpointError(f"{where}: the file is truncated (incomplete header)")
    head = data[start:end]
    if struct.unpack(">I", data[end : end + 4])[0] != zlib.crc32(head):
        raise CheckpointError(f"{where}: the file is corrupt (header checksum mismatch)")
    header = json.loads(head.decode("utf-8"))
    area = memoryview(data)[end + 4 :]
    parts: dict[str, bytes] = {}
    for name, (off, length, crc) in header["parts"].items():
        if off + length > len(area):
            raise CheckpointError(f"{where}: the file is truncated (part {name!r} is incomplete)")
        chunk = bytes(area[off : off + length])
        if zlib.crc32(chunk) != crc:
            raise CheckpointError(f"{where}: the file is corrupt (checksum mismatch in {name!r})")
        parts[name] = chunk
    return header["meta"], parts


# ---------------------------------------------------------------------------------------------
# the store


def _filesystem(location: str) -> tuple[Any, str]:
    from pyarrow import fs

    if not isinstance(location, str) or not location:
        raise TypeError(
            f"checkpoint_location must be a non-empty str (a path or a URI such as "
            f"'file:///tmp/ckpt' or 's3://bucket/ckpt'), got {location!r}"
        )
    if "://" not in location:
        location = os.path.abspath(location)
    try:
        return fs.FileSystem.from_uri(location)
    except Exception as exc:
        raise ValueError(
            f"checkpoint_location {location!r} is not a path or a URI pyarrow.fs can open: {exc}"
        ) from None


class CheckpointStore:
    """Versioned files of one streaming job under ``location`` (see the module docstring).

    ``fingerprint``: a JSON-able description of the job graph; a commit written with another
    fingerprint raises :class:`CheckpointError` when this store reads it (``None``: read any
    job's checkpoint, e.g. to inspect it). The store is picklable (it keeps the location, not
    the filesystem object), so workers open it too.
    """

    def __init__(self, location: str, fingerprint: dict[str, Any] | None = None) -> None:
        self.location = location
        self.fingerprint = fingerprint
        self._fs, self.root = _filesystem(location)

    def __getstate__(self) -> dict[str, Any]:
        return {"location": self.location, "fingerprint": self.fingerprint}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.location = state["location"]
        self.fingerprint = state["fingerprint"]
        self._fs, self.root = _filesystem(self.location)

    # ------------------------------------------------------------------ paths and raw I/O

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    @property
    def spark_checkpoint_location(self) -> str:
        """Where Spark keeps the query's offsets and commits (``<location>/spark``)."""
        return self.location.rstrip("/") + "/spark"

    def _exists(self, path: str) -> bool:
        from pyarrow import fs

        return self._fs.get_file_info(path).type != fs.FileType.NotFound

    def read(self, path: str) -> bytes:
        try:
            with self._fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            raise CheckpointError(
                f"{path}: missing from the checkpoint; the directory is incomplete (files were "
                "deleted?): restore it or start from an empty one"
            ) from None

    def write(self, path: str, data: bytes, atomic: bool = False) -> None:
        """Write ``data`` to ``path`` (``atomic``: to a temporary name, then moved there)."""
        parent = path.rsplit("/", 1)[0]
        self._fs.create_dir(parent, recursive=True)
        target = f"{path}.tmp-{uuid.uuid4().hex}" if atomic else path
        with self._fs.open_output_stream(target) as f:
            f.write(data)
        if atomic:
            self._fs.move(target, path)

    def _list(self, directory: str) -> list[str]:
        from pyarrow import fs

        if not self._exists(directory):
            return []
        infos = self._fs.get_file_info(fs.FileSelector(directory, recursive=False))
        return [i.base_name for i in infos]

    def _delete_dir(self, path: str) -> None:
        if self._exists(path):
            self._fs.delete_dir(path)

    # ------------------------------------------------------------------ commits

    def committed_version(self) -> int | None:
        """The last committed batch id (``None``: nothing committed yet); checks that the
        commit was written by the same job graph."""
        versions = sorted(int(n[:-5]) for n in self._list(self.path("commits")) if n[:-5].isdigit())
        if not versions:
            return None
        info = self.commit_info(versions[-1])
        if self.fingerprint is not None and info.get("fingerprint") != self.fingerprint:
            raise CheckpointError(
                f"the checkpoint at {self.location!r} was written by another job graph "
                f"(stored fingerprint {info.get('fingerprint')}, this job "
                f"{self.fingerprint}); use a new checkpoint directory for a changed job"
            )
        return versions[-1]

    def commit_info(self, version: int) -> dict[str, Any]:
        """The manifest of committed ``version``."""
        path = self.path("commits", f"{version}.json")
        raw = self.read(path)
        try:
            info = json.loads(raw.decode("utf-8"))
            body = info["body"]
            crc = info["crc32"]
        except (ValueError, KeyError, TypeError):
            raise CheckpointError(f"{path}: the commit file is corrupt (not a manifest)") from None
        encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
        if zlib.crc32(encoded) != crc:
            raise CheckpointError(f"{path}: the commit file is corrupt (checksum mismatch)")
        if body.get("format_version") != CHECKPOINT_FORMAT_VERSION:
            raise CheckpointError(
                f"{path}: checkpoint format version {body.get('format_version')} is not "
                f"supported; this sparktide reads version {CHECKPOINT_FORMAT_VERSION}"
            )
        return body

    def commit(self, version: int, info: dict[str, Any], retain: int = 2) -> None:
        """Mark ``version`` committed (atomically), then delete versions older than the last
        ``retain``."""
        body = {
            **info,
            "format_version": CHECKPOINT_FORMAT_VERSION,
            "version": version,
            "fingerprint": self.fingerprint,
        }
        encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
        manifest = {"body": body, "crc32": zlib.crc32(encoded)}
        self.write(
            self.path("commits", f"{version}.json"),
            json.dumps(manifest, sort_keys=True).encode("utf-8"),
            atomic=True,
        )
        self._cleanup(version - retain)

    def _cleanup(self, older_than: int) -> None:
        if older_than < 0:
            return
        for name in self._list(self.path("state")):
            if name.isdigit() and int(name) < older_than:
                self._delete_dir(self.path("state", name))
        for folder, suffix in (("splits", ".bin"), ("commits", ".json"), ("batches", ".json")):
            for name in self._list(self.path(folder)):
                stem = name[: -len(suffix)] if name.endswith(suffix) else ""
                if stem.isdigit() and int(stem) < older_than:
                    self._fs.delete_file(self.path(folder, name))

    # ------------------------------------------------------------------ batches

    def batch_processing_time(self, version: int, now: int) -> int:
        """The processing time of batch ``version``: recorded at its first attempt (``now``),
        so that a replay sees the same time."""
        path = self.path("batches", f"{version}.json")
        if self._exists(path):
            try:
                return int(json.loads(self.read(path).decode("utf-8"))["processing_time"])
            except (ValueError, KeyError, TypeError):
                pass  # a torn first attempt: record it again
        self.write(path, json.dumps({"processing_time": now}).encode("utf-8"), atomic=True)
        return now

    # ------------------------------------------------------------------ splits

    def write_splits(self, version: int, states: dict[int, bytes]) -> None:
        parts = {str(g): data for g, data in sorted(states.items())}
        self.write(self.path("splits", f"{version}.bin"), pack_parts(parts), atomic=True)

    def read_splits(self, version: int) -> dict[int, bytes]:
        path = self.path("splits", f"{version}.bin")
        _, parts = unpack_parts(self.read(path), path)
        return {int(g): data for g, data in parts.items()}

    # ------------------------------------------------------------------ subtask state

    def subtask_path(self, version: int, stage: int, subtask: int) -> str:
        return self.path("state", str(version), f"stage-{stage}", f"sub-{subtask}.bin")

    def write_subtask(
        self, version: int, stage: int, subtask: int, meta: dict[str, Any], parts: dict[str, bytes]
    ) -> None:
        self.write(self.subtask_path(version, stage, subtask), pack_parts(parts, meta))

    def read_subtask(
        self, version: int, stage: int, subtask: int
    ) -> tuple[dict[str, Any], dict[str, bytes]]:
        path = self.subtask_path(version, stage, subtask)
        return unpack_parts(self.read(path), path)
