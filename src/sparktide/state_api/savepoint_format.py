"""The manifest of a savepoint (``savepoint.json``) as a typed value with a versioned JSON form.

A savepoint is a checkpoint directory holding exactly one committed version (see
``docs/savepoints.md``) plus ``savepoint.json``: the :class:`SavepointManifest`, written last,
so that a directory without it is a savepoint a crash left incomplete
(:class:`NotASavepointError`). The manifest names the version it holds, where it came from,
and per source of the job a :class:`SourcePosition`: what the source needs to continue where
the job stopped (a file source: every file read; a Kafka source: Spark's offsets).

``to_json()`` gives the JSON value, ``from_json(raw, where)`` reads it validated: another
format or format version is refused naming both, and a missing or mistyped field raises
:class:`~sparktide.spark.checkpoint_format.CheckpointError` naming the file and the field.

>>> kafka = SourcePosition("orders", "src", SourceKind.KAFKA, (), {"orders": {"0": 42}})
>>> m = SavepointManifest(version=3, created_ms=1, origin="checkpoint:/tmp/ck",
...     spark_batch=3, sources=(kafka,))
>>> SavepointManifest.from_json(m.to_json(), "sp/savepoint.json") == m
True
>>> m.kafka_starting_offsets("orders")
'{"orders":{"0":42}}'
>>> SavepointManifest.from_json({**m.to_json(), "version": "3"}, "sp/savepoint.json")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_format.CheckpointError: sp/savepoint.json: field 'version' must \
be an int, got '3'; ...
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

from sparktide.spark.checkpoint_format import CheckpointError, JsonObject, JsonValue
from sparktide.spark.checkpoint_meta import JsonFields

__all__ = [
    "CHECKPOINT_ORIGIN",
    "SAVEPOINT_FILE",
    "SAVEPOINT_FORMAT",
    "SAVEPOINT_FORMAT_VERSION",
    "WRITER_ORIGIN",
    "NotASavepointError",
    "SavepointError",
    "SavepointManifest",
    "SourceKind",
    "SourcePosition",
    "kafka_starting_offsets",
]

SAVEPOINT_FORMAT = "sparktide-savepoint"
"""The ``format`` field of every ``savepoint.json``."""

SAVEPOINT_FORMAT_VERSION = 1
"""The version of the savepoint format this sparktide writes and reads."""

SAVEPOINT_FILE = "savepoint.json"
"""The manifest's name in the savepoint directory."""

WRITER_ORIGIN = "writer"
"""The ``origin`` of a savepoint built by the State Processor API's writer."""

CHECKPOINT_ORIGIN = "checkpoint:"
"""The prefix of the ``origin`` of a savepoint taken from a checkpoint (then its location)."""


class SavepointError(CheckpointError):
    """A savepoint cannot be taken or used as asked (say why and what to do)."""


class NotASavepointError(CheckpointError):
    """A directory is not a (complete) savepoint: it has no ``savepoint.json``."""


class SourceKind(enum.Enum):
    """What a savepoint records of a source's position."""

    FILES = "files"
    """A file source: the files it has read."""
    KAFKA = "kafka"
    """A Kafka source: Spark's offsets per topic partition."""
    OTHER = "other"
    """Any other source (a DataFrame source): nothing."""


@dataclass(frozen=True)
class SourcePosition:
    """Where one source of the job stood at the savepoint's version: its ``name`` and ``uid``
    (as the job's :class:`~sparktide.spark.checkpoint_meta.SourceRef`), its ``kind``, the
    ``files`` it has read (kind files, in reading order) and Spark's ``offsets`` JSON for it
    (kind kafka; ``None`` otherwise)."""

    name: str
    uid: str | None
    kind: SourceKind
    files: tuple[str, ...] = ()
    offsets: JsonObject | None = None

    def to_json(self) -> JsonObject:
        return {
            "name": self.name,
            "uid": self.uid,
            "kind": self.kind.value,
            "files": list(self.files),
            "offsets": self.offsets,
        }

    @classmethod
    def from_json(cls, raw: object, where: str, path: str) -> SourcePosition:
        fields = JsonFields(raw, where, path)
        kinds = {k.value: k for k in SourceKind}
        kind = fields.get_str("kind")
        if kind not in kinds:
            raise fields.fail("kind", f"one of {sorted(kinds)}", kind)
        files = fields.get_list("files")
        if not all(isinstance(f, str) for f in files):
            raise fields.fail("files", "a list of strings", files)
        offsets = fields.get("offsets")
        if offsets is not None and not isinstance(offsets, dict):
            raise fields.fail("offsets", "a JSON object or null", offsets)
        return cls(
            fields.get_str("name"),
            fields.opt_str("uid"),
            kinds[kind],
            tuple(f for f in files if isinstance(f, str)),
            offsets,
        )


@dataclass(frozen=True)
class SavepointManifest:
    """The manifest of a savepoint: the committed ``version`` it holds, when it was created
    (epoch ms), its ``origin`` (``"checkpoint:<location>"`` or ``"writer"``), the Spark
    micro-batch of the version in the origin (``None``: none, or built by the writer) and the
    positions of the job's sources, in the job's source order."""

    version: int
    created_ms: int
    origin: str
    spark_batch: int | None = None
    sources: tuple[SourcePosition, ...] = field(default_factory=tuple)

    def source(self, source: str) -> SourcePosition:
        """The position of the source whose uid or else name is ``source``; a
        :class:`SavepointError` names the sources there are when there is none."""
        for match in (lambda s: s.uid == source, lambda s: s.name == source):
            found = [s for s in self.sources if match(s)]
            if found:
                return found[0]
        there = ", ".join(f"{s.name!r} (uid {s.uid!r})" for s in self.sources) or "none"
        raise SavepointError(
            f"the savepoint of version {self.version} has no source {source!r}; its sources: "
            f"{there}"
        )

    def kafka_starting_offsets(self, source: str | SourcePosition) -> str:
        """The JSON of Spark's ``startingOffsets`` option for the Kafka source ``source`` (a
        uid, a name or a position of this manifest), so that the new job's reader continues
        where the job stopped: ``spark.readStream.format("kafka").option("startingOffsets",
        manifest.kafka_starting_offsets("orders"))``."""
        position = source if isinstance(source, SourcePosition) else self.source(source)
        return kafka_starting_offsets(position)

    def to_json(self) -> JsonObject:
        return {
            "format": SAVEPOINT_FORMAT,
            "format_version": SAVEPOINT_FORMAT_VERSION,
            "version": self.version,
            "created_ms": self.created_ms,
            "origin": self.origin,
            "spark_batch": self.spark_batch,
            "sources": [s.to_json() for s in self.sources],
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> SavepointManifest:
        fields = JsonFields(raw, where)
        fmt, version = fields.raw.get("format"), fields.raw.get("format_version")
        if fmt != SAVEPOINT_FORMAT or version != SAVEPOINT_FORMAT_VERSION:
            raise SavepointError(
                f"{where}: savepoint format {fmt!r} version {version!r} is not supported; "
                f"this sparktide reads {SAVEPOINT_FORMAT!r} version {SAVEPOINT_FORMAT_VERSION} "
                "(the savepoint was written by another sparktide or is not a savepoint): use "
                "the sparktide version that wrote it, or take the savepoint again"
            )
        return cls(
            version=fields.get_int("version"),
            created_ms=fields.get_int("created_ms"),
            origin=fields.get_str("origin"),
            spark_batch=fields.opt_int("spark_batch"),
            sources=tuple(
                SourcePosition.from_json(s, where, f"sources[{i}]")
                for i, s in enumerate(fields.get_list("sources"))
            ),
        )

    def encode(self) -> bytes:
        """The bytes of ``savepoint.json`` (indented JSON, sorted keys)."""
        return (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, where: str) -> SavepointManifest:
        """Read the bytes of a ``savepoint.json`` (``where``: the file, for errors)."""
        try:
            raw: JsonValue = json.loads(data.decode("utf-8"))
        except ValueError as exc:
            raise SavepointError(
                f"{where}: the savepoint manifest is not JSON: {exc}; take the savepoint again"
            ) from None
        return cls.from_json(raw, where)


def kafka_starting_offsets(position: SourcePosition) -> str:
    """The JSON of Spark's ``startingOffsets`` option for the Kafka source at ``position``
    (Spark's offset JSON of the savepoint's micro-batch: per topic, per partition the next
    offset to read); a :class:`SavepointError` if it is not a Kafka source with offsets.

    >>> kafka_starting_offsets(SourcePosition("k", None, SourceKind.KAFKA, (), {"t": {"0": 5}}))
    '{"t":{"0":5}}'
    """
    if position.kind is not SourceKind.KAFKA or position.offsets is None:
        raise SavepointError(
            f"source {position.name!r} of the savepoint is a {position.kind.value!r} "
            "source, not a Kafka source with offsets: it has no startingOffsets"
        )
    return json.dumps(position.offsets, sort_keys=True, separators=(",", ":"))
