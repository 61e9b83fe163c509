"""The versioned snapshot format of an operator's keyed state and timers, per key group.

Layout of ``KeyedOperatorSnapshot.to_bytes()`` (format version 1)::

    magic      8 bytes   b"\\x89STKSNP\\n"
    version    u32 BE    1
    header_len u32 BE
    header     JSON (UTF-8): framework metadata, never pickled
    blobs      concatenated; each named by a section of the header with offset, length, crc32

Header::

    {"format_version": 1, "operator": str, "max_parallelism": int, "key_group_range": [s, e],
     "key_type": {"format_version": 1, "type": ...},
     "states": {name: {"kind": "value"|"list"|"map"|"reducing"|"aggregating", "ttl": bool,
                       "types": {"format_version": 1, "value": ..., "map_key": ...}}},
     "sections": [
       {"type": "state", "key_group": kg, "state": name, "count": n, "blob": [off, len, crc]},
       {"type": "timers", "key_group": kg, "service": name, "domain": "event"|"processing",
        "count": n, "timestamps": [off, len, crc], "keys": [off, len, crc]}]}

``key_type`` (the declared key type of the keyed stream) and a state's ``types`` (the types
its descriptor declared) are plain JSON (:mod:`sparktide.common.typeinfo_json`); a snapshot of
an older sparktide has neither, and restores without their checks.

A state blob is a pickle of ``[(key, namespace, value), ...]`` (user objects). A timer section
has its timestamps and insertion sequence numbers as little-endian int64 pairs (readable without
unpickling anything: ``sparktide inspect`` shows them), and its keys and namespaces as a pickle of
``[(key, namespace), ...]``. Decoding validates everything (magic, version, checksums, lengths)
before returning, so a bad snapshot never half-restores an operator.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> s = KeyedOperatorSnapshot("op", 128, KeyGroupRange(0, 127),
...     {"n": {"kind": "value", "ttl": False}}, {7: {"n": [("a", None, 3)]}},
...     {7: {"user-timers": ([(10, 0, "a", None, 7)], [])}})
>>> KeyedOperatorSnapshot.from_bytes(s.to_bytes()) == s
True
"""

from __future__ import annotations

import json
import pickle
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.backend import StateMeta, StateSnapshot
from sparktide.runtime.timers.manager import TimerSnapshot

__all__ = [
    "FORMAT_VERSION",
    "KeyedOperatorSnapshot",
    "SnapshotFormatError",
    "SnapshotHeader",
    "StateSection",
    "TimerSection",
]

MAGIC = b"\x89STKSNP\n"
FORMAT_VERSION = 1
_PREFIX = struct.Struct(">8sII")
_DOMAINS = ("event", "processing")


class SnapshotFormatError(ValueError):
    """The bytes are not a snapshot this version of sparktide can read."""


StateData = StateSnapshot
"""Keyed state per key group: ``state[key_group][state_name] = [(key, namespace, raw), ...]``."""

BlobRef = list[int]
"""Where a blob lies in the blob area: ``[offset, length, crc32]``."""


class StateSection(TypedDict):
    """A header section naming the blob of one state in one key group."""

    type: Literal["state"]
    key_group: int
    state: str
    count: int
    blob: BlobRef


class TimerSection(TypedDict):
    """A header section naming the blobs of one service's timers of one domain."""

    type: Literal["timers"]
    key_group: int
    service: str
    domain: str
    count: int
    timestamps: BlobRef
    keys: BlobRef


class SnapshotHeader(TypedDict, total=False):
    """The JSON header of a snapshot (see the module docstring; ``key_type`` is optional)."""

    format_version: int
    operator: str
    max_parallelism: int
    key_group_range: list[int]
    states: dict[str, StateMeta]
    sections: list[StateSection | TimerSection]
    key_type: dict[str, Any]


@dataclass(frozen=True)
class KeyedOperatorSnapshot:
    """Keyed state and timers of one operator subtask, per key group."""

    operator: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    state_meta: dict[str, StateMeta] = field(default_factory=dict)
    state: StateData = field(default_factory=dict)
    timers: TimerSnapshot = field(default_factory=dict)
    key_type: dict[str, Any] | None = None
    """The declared key type of the keyed stream, as
    :func:`~sparktide.common.typeinfo_json.versioned_type` records it (``None``: not
    recorded)."""

    def key_groups(self) -> list[int]:
        return sorted(set(self.state) | set(self.timers))

    # ------------------------------------------------------------------ encode

    def to_bytes(self) -> bytes:
        blobs: list[bytes] = []
        offset = 0

        def put(data: bytes) -> list[int]:
            nonlocal offset
            blobs.append(data)
            ref = [offset, len(data), zlib.crc32(data)]
            offset += len(data)
            return ref

        sections: list[StateSection | TimerSection] = []
        for kg in self.key_groups():
            for name, entries in self.state.get(kg, {}).items():
                sections.append(
                    {
                        "type": "state",
                        "key_group": kg,
                        "state": name,
                        "count": len(entries),
                        "blob": put(pickle.dumps(list(entries), protocol=5)),
                    }
                )
            for service, per_domain in self.timers.get(kg, {}).items():
                for domain, timer_entries in zip(_DOMAINS, per_domain, strict=False):
                    if not timer_entries:
                        continue
                    flat = [v for e in timer_entries for v in (e[0], e[1])]
                    sections.append(
                        {
                            "type": "timers",
                            "key_group": kg,
                            "service": service,
                            "domain": domain,
                            "count": len(timer_entries),
                            "timestamps": put(struct.pack(f"<{len(flat)}q", *flat)),
                            "keys": put(
                                pickle.dumps([(e[2], e[3]) for e in timer_entries], protocol=5)
                            ),
                        }
                    )
        header: SnapshotHeader = {
            "format_version": FORMAT_VERSION,
            "operator": self.operator,
            "max_parallelism": self.max_parallelism,
            "key_group_range": [self.key_group_range.start, self.key_group_range.end],
            "states": self.state_meta,
            "sections": sections,
        }
        if self.key_type is not None:
            header["key_type"] = self.key_type
        head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
        return _PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)) + head + b"".join(blobs)

    # ------------------------------------------------------------------ decode

    @staticmethod
    def read_header(data: bytes) -> tuple[SnapshotHeader, memoryview]:
        """Validate the prefix and return ``(header, blob area)`` without unpickling anything."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"snapshot must be bytes, got {type(data).__name__}")
        view = memoryview(data)
        if len(view) < _PREFIX.size or bytes(view[:8]) != MAGIC:
            raise SnapshotFormatError(
                "not a sparktide keyed snapshot (bad magic bytes); pass the bytes returned by "
                "snapshot()"
            )
        _, version, head_len = _PREFIX.unpack_from(view)
        if version != FORMAT_VERSION:
            raise SnapshotFormatError(
                f"snapshot format version {version} is not supported; this sparktide reads "
                f"version {FORMAT_VERSION} (restore it with the sparktide version that wrote it)"
            )
        end = _PREFIX.size + head_len
        if end > len(view):
            raise SnapshotFormatError("snapshot is truncated: the header is incomplete")
        try:
            header: SnapshotHeader = json.loads(bytes(view[_PREFIX.size : end]).decode("utf-8"))
        except ValueError as exc:
            raise SnapshotFormatError(f"snapshot header is corrupt: {exc}") from None
        return header, view[end:]

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyedOperatorSnapshot:
        header, area = cls.read_header(data)

        def blob(ref: list[int], what: str) -> bytes:
            off, length, crc = ref
            if off < 0 or off + length > len(area):
                raise SnapshotFormatError(f"snapshot is truncated: {what} lies past the end")
            chunk = bytes(area[off : off + length])
            if zlib.crc32(chunk) != crc:
                raise SnapshotFormatError(f"snapshot is corrupt: checksum mismatch in {what}")
            return chunk

        try:
            state: StateData = {}
            timers: TimerSnapshot = {}
            for sec in header["sections"]:
                kg = int(sec["key_group"])
                if sec["type"] == "state":
                    what = f"state {sec['state']!r} of key group {kg}"
                    entries = pickle.loads(blob(sec["blob"], what))
                    if len(entries) != sec["count"]:
                        raise SnapshotFormatError(f"snapshot is corrupt: wrong count in {what}")
                    state.setdefault(kg, {})[sec["state"]] = [tuple(e) for e in entries]
                elif sec["type"] == "timers":
                    what = f"{sec['domain']} timers of {sec['service']!r} in key group {kg}"
                    raw = blob(sec["timestamps"], what)
                    keys = pickle.loads(blob(sec["keys"], what))
                    n = sec["count"]
                    if len(raw) != 16 * n or len(keys) != n:
                        raise SnapshotFormatError(f"snapshot is corrupt: wrong count in {what}")
                    flat = struct.unpack(f"<{2 * n}q", raw)
                    entries = [
                        (flat[2 * i], flat[2 * i + 1], keys[i][0], keys[i][1], kg) for i in range(n)
                    ]
                    per_service = timers.setdefault(kg, {})
                    event, proc = per_service.get(sec["service"], ([], []))
                    if sec["domain"] == "event":
                        event = entries
                    else:
                        proc = entries
                    per_service[sec["service"]] = (event, proc)
                else:
                    raise SnapshotFormatError(f"unknown section type {sec['type']!r}")
            start, end = header["key_group_range"]
            return cls(
                operator=header["operator"],
                max_parallelism=int(header["max_parallelism"]),
                key_group_range=KeyGroupRange(int(start), int(end)),
                state_meta=header["states"],
                state=state,
                timers=timers,
                key_type=header.get("key_type"),
            )
        except SnapshotFormatError:
            raise
        except (KeyError, TypeError, ValueError, pickle.UnpicklingError, EOFError) as exc:
            raise SnapshotFormatError(f"snapshot is corrupt: {exc!r}") from None
