"""Where each source of a streaming job stood at a committed version, from Spark's own logs.

A streaming job reads the union of its sources' DataFrames in one query (source ``k`` of the
job is Spark's source ``k``), so Spark's offset log ``<checkpoint>/spark/offsets/<n>`` names,
per source, the offset micro-batch ``n`` read up to, one JSON line each (after a version line
and the batch's metadata; ``-``: the source has no offset yet). What the offset means depends
on the source:

- a file source's offset is ``{"logOffset": L}``: it has read every file its source log
  (``<checkpoint>/spark/sources/<k>/``) lists under its batches ``<= L`` (the log's entries, or
  a compacted ``<id>.compact`` file holding all entries up to ``id``);
- a Kafka source's offset is, per topic and partition, the next offset to read
  (``{"orders": {"0": 42}}``), which is also what its ``startingOffsets`` option takes;
- any other source's (a rate source's, a memory stream's) cannot be given to a new query.

>>> _kind({"logOffset": 3}), _kind({"orders": {"0": 42, "1": 7}}), _kind(5), _kind(None)
(<SourceKind.FILES: 'files'>, <SourceKind.KAFKA: 'kafka'>, <SourceKind.OTHER: 'other'>, \
<SourceKind.OTHER: 'other'>)
"""

from __future__ import annotations

import json

from sparktide.spark.batch_inputs import source_log_entries
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_format import JsonValue
from sparktide.spark.checkpoint_meta import CommitManifest
from sparktide.state_api.savepoint_format import SavepointError, SourceKind, SourcePosition

__all__ = ["file_source_files", "source_positions"]


def source_positions(store: CheckpointStore, info: CommitManifest) -> tuple[SourcePosition, ...]:
    """The position of every source of the job of ``info`` (a committed version of the
    checkpoint ``store``), in the job's source order, at the last Spark micro-batch the
    version includes."""
    sources = () if info.fingerprint is None else info.fingerprint.sources
    batch = info.last_spark_batch
    if batch is None:  # no micro-batch read yet: nothing to skip
        return tuple(SourcePosition(s.name, s.uid, SourceKind.OTHER) for s in sources)
    offsets = _offsets(store, batch)
    if len(offsets) != len(sources):
        raise SavepointError(
            f"Spark's offset log of {store.location!r} names {len(offsets)} source(s) for "
            f"micro-batch {batch}, the job {len(sources)}: a source's DataFrame reads several "
            "streams, and what each source has read cannot be told apart; give each stream "
            "its own env.from_stream(...)"
        )
    out = []
    for k, (ref, offset) in enumerate(zip(sources, offsets, strict=True)):
        kind = _kind(offset)
        files: tuple[str, ...] = ()
        if kind is SourceKind.FILES and isinstance(offset, dict):
            last = offset["logOffset"]
            files = file_source_files(store, k, last if isinstance(last, int) else -1)
        kafka = offset if kind is SourceKind.KAFKA and isinstance(offset, dict) else None
        out.append(SourcePosition(ref.name, ref.uid, kind, files, kafka))
    return tuple(out)


def _kind(offset: JsonValue) -> SourceKind:
    if isinstance(offset, dict):
        if set(offset) == {"logOffset"} and type(offset["logOffset"]) is int:
            return SourceKind.FILES
        if offset and all(
            isinstance(parts, dict)
            and all(p.lstrip("-").isdigit() and type(o) is int for p, o in parts.items())
            for parts in offset.values()
        ):
            return SourceKind.KAFKA
    return SourceKind.OTHER


def _offsets(store: CheckpointStore, batch: int) -> list[JsonValue]:
    """Per Spark source, its offset of micro-batch ``batch`` (``None``: none yet)."""
    path = store.path("spark", "offsets", str(batch))
    if str(batch) not in store.names("spark", "offsets"):
        raise SavepointError(
            f"Spark's offset log no longer holds micro-batch {batch} ({path} is missing; Spark "
            "keeps the last spark.sql.streaming.minBatchesToRetain micro-batches): take the "
            "savepoint of the checkpoint's last version"
        )
    lines = store.read(path).decode("utf-8").splitlines()[2:]
    out: list[JsonValue] = []
    for line in lines:
        try:
            out.append(None if line.strip() == "-" else json.loads(line))
        except ValueError:
            raise SavepointError(f"{path}: a source's offset is not JSON: {line!r}") from None
    return out


def file_source_files(store: CheckpointStore, source: int, last: int) -> tuple[str, ...]:
    """The files Spark's file source ``source`` of the checkpoint ``store`` has read up to
    its log batch ``last``, in reading order: the newest compacted entry ``<= last`` and the
    entries after it (older entries may be deleted once compacted)."""
    names = store.names("spark", "sources", str(source))
    compacted = [int(n[:-8]) for n in names if n.endswith(".compact") and n[:-8].isdigit()]
    start = max((c for c in compacted if c <= last), default=-1)
    entries: list[dict[str, object]] = []
    for batch in range(max(start, 0), last + 1):
        name = f"{batch}.compact" if batch == start else str(batch)
        if name not in names:
            raise SavepointError(
                f"Spark's source log of source {source} in {store.location!r} has no entry "
                f"for its batch {batch}: the checkpoint's spark/ folder is incomplete; take the "
                "savepoint of an intact checkpoint"
            )
        data = store.read(store.path("spark", "sources", str(source), name))
        entries.extend(e for e in source_log_entries(data) if _batch_id(e) <= last)
    entries.sort(key=_batch_id)  # stable: a batch's files stay in their order
    return tuple(str(e["path"]) for e in entries if isinstance(e.get("path"), str))


def _batch_id(entry: dict[str, object]) -> int:
    value = entry.get("batchId")
    return value if isinstance(value, int) else -1
