"""A replayed micro-batch reads what its first attempt read, or stops saying which file is not.

Spark replays a micro-batch that was not committed with the same offsets; for a file source
those are the files its source log lists for the batch (``<checkpoint>/spark/sources/<n>/<id>``,
or the compacted ``<id>.compact``), and a listed file that no longer exists is read as empty,
whatever ``ignoreMissingFiles`` says. Committed, such a replay would replace what the first
attempt's sinks wrote for the batch (an overwriting sink rewrites ``batch=<id>``) with less.

So each Spark micro-batch is checked before it runs and before its sinks write
(:class:`InputCheck`), and the micro-batch a restarted query replays first also before Spark
starts the query:

1. At its start, the files Spark's source log lists for it (:func:`spark_batch_files`) are
   looked up (size and modification time, through :mod:`pyarrow.fs`). A file that is missing
   raises :class:`MissingInputFilesError` naming it, unless the configuration option
   :data:`~sparktide.common.config_options.SKIP_MISSING_INPUT_FILES` is ``true``. On a replay
   (``inputs/<v>.json`` holds what the first attempt read), a file whose size or modification
   time differs from that record, or that was not there then, raises
   :class:`ChangedInputError`.
2. Before its sinks write, the first attempt records its files and the records each source
   split read (:class:`~sparktide.spark.checkpoint_meta.BatchInputs`); a replay compares its
   records with that record instead: another count (input that is not a file, e.g. Kafka,
   changed under the same offsets) raises :class:`ChangedInputError`. A replay that skipped
   missing files reports how many records it skipped (:class:`SkippedInputs`), in the batch's
   metrics and as a warning of the ``sparktide.streaming`` logger.

The default follows Spark's ``ignoreMissingFiles`` (false: fail). It is sparktide's own option
rather than Spark's because Spark's does not decide this case (a listed file missing at a
replay is read as empty with either value), because a reader's options cannot be read back
from a streaming DataFrame (at all over Spark Connect), and because
``spark.sql.files.ignoreMissingFiles`` is session-wide: set for a batch job, it would silently
let a streaming job replace rows it already wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from sparktide.common.config_options import SKIP_MISSING_INPUT_FILES
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_meta import BatchInputs, InputFile

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

__all__ = [
    "ChangedInputError",
    "InputCheck",
    "MissingInputFilesError",
    "SkippedInputs",
    "source_log_entries",
    "spark_batch_files",
    "stat_files",
]

_SKIP = (
    f"set the configuration option {SKIP_MISSING_INPUT_FILES.key()!r} to 'true' "
    "(env.configure({...}) or get_execution_environment(config)): the batch then runs without "
    "them and reports the records skipped"
)


class MissingInputFilesError(CheckpointError):
    """Files Spark lists for a micro-batch are gone: reading them would read nothing."""


class ChangedInputError(CheckpointError):
    """A replayed micro-batch's input is not what its first attempt read."""


@dataclass(frozen=True)
class SkippedInputs:
    """What a batch run with :data:`SKIP_MISSING_INPUT_FILES` skipped: the missing files and
    the records they held (``None``: not known, the batch's first attempt never read them)."""

    files: tuple[str, ...]
    records: int | None

    def describe(self, version: int) -> str:
        """The warning line of the ``sparktide.streaming`` logger."""
        count = "an unknown number of" if self.records is None else str(self.records)
        return (
            f"batch {version}: skipped {count} records of {len(self.files)} missing input "
            f"file(s) ({SKIP_MISSING_INPUT_FILES.key()} is true): {', '.join(self.files)}"
        )


# ---------------------------------------------------------------------------------------------
# Spark's source log and the files


def source_log_entries(data: bytes) -> list[dict[str, object]]:
    """The JSON object lines of one of Spark's log files (after its ``v1`` version line)."""
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines()[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def spark_batch_files(store: CheckpointStore, spark_batch: int) -> list[str]:
    """The files Spark's file sources read in micro-batch ``spark_batch``, from their source
    logs in the checkpoint ``store`` (none for a source that is not a file source). Only the
    batch's own entry is read (``<id>``, else the compacted ``<id>.compact``): no listing of a
    log that grows with every batch."""
    files: list[str] = []
    for source in sorted(store.names("spark", "sources"), key=lambda n: (len(n), n)):
        for name in (str(spark_batch), f"{spark_batch}.compact"):
            try:
                data = store.read(store.path("spark", "sources", source, name))
            except CheckpointError:  # no such entry
                continue
            files.extend(
                str(e["path"])
                for e in source_log_entries(data)
                if e.get("batchId") == spark_batch and isinstance(e.get("path"), str)
            )
            break
    return files


def _inner_path(path: str) -> str:
    """The path of ``path`` inside its pyarrow file system."""
    from pyarrow import fs

    parts = urlsplit(path)
    if parts.scheme in ("", "file"):
        return unquote(parts.path)
    return str(fs.FileSystem.from_uri(path)[1])


def stat_files(paths: list[str]) -> dict[str, InputFile | None]:
    """Per path (a URI as Spark's source log names it) its :class:`InputFile`, ``None`` when
    it does not exist; size and modification time are unknown (``None``) where pyarrow does
    not open the file system (then only the records read are compared)."""
    from pyarrow import fs

    systems: dict[tuple[str, str], FileSystem | None] = {}
    groups: dict[tuple[str, str], list[str]] = {}
    for path in paths:
        parts = urlsplit(path)
        where = (parts.scheme, parts.netloc)
        if where not in systems:
            try:
                systems[where] = fs.FileSystem.from_uri(path)[0]
            except Exception:  # e.g. no credentials here: compared by records only
                systems[where] = None
        groups.setdefault(where, []).append(path)
    out: dict[str, InputFile | None] = {p: InputFile(p, None, None) for p in paths}
    for where, names in groups.items():
        filesystem = systems[where]
        if filesystem is None:
            continue
        infos = filesystem.get_file_info([_inner_path(p) for p in names])
        for name, info in zip(names, infos, strict=True):
            found = info.type != fs.FileType.NotFound
            out[name] = InputFile(name, info.size, info.mtime_ns) if found else None
    return out


def _changes(first: BatchInputs, now: Mapping[str, InputFile | None]) -> list[str]:
    """How the files now differ from what the first attempt read (missing files aside)."""
    before = {f.path: f for f in first.files}
    out = []
    for path, info in now.items():
        old = before.get(path)
        if info is None:
            continue
        if old is None:
            out.append(f"{path}: was missing when the micro-batch first ran, and is there now")
            continue
        diffs = [
            f"{what} {a} then, {b} now"
            for what, a, b in (
                ("size", old.size, info.size),
                ("modified (ns)", old.modified_ns, info.modified_ns),
            )
            if a is not None and b is not None and a != b
        ]
        if diffs:
            out.append(f"{path}: {', '.join(diffs)}")
    out.extend(f"{p}: no longer listed by Spark's source log" for p in before if p not in now)
    return out


# ---------------------------------------------------------------------------------------------
# the check of one micro-batch


@dataclass(frozen=True)
class InputCheck:
    """The inputs of Spark micro-batch ``spark_batch``, run as version ``version``: the files
    there (``present``), those missing (skipped: the check let them pass) and what the first
    attempt read (``first``; ``None``: this is the first attempt)."""

    version: int
    spark_batch: int
    present: tuple[InputFile, ...]
    missing: tuple[str, ...]
    first: BatchInputs | None

    @classmethod
    def start(
        cls, store: CheckpointStore, version: int, spark_batch: int, skip_missing: bool
    ) -> InputCheck:
        """Check the micro-batch's files before it runs (step 1 of the module docstring)."""
        paths = spark_batch_files(store, spark_batch)
        now = stat_files(paths)
        first = store.read_inputs(version)
        if first is not None and first.spark_batch != spark_batch:
            first = None  # recorded by an attempt of another batch (one without new data)
        batch = f"micro-batch {spark_batch} (batch {version} of {store.location!r})"
        if first is not None:
            changes = _changes(first, now)
            if changes:
                raise ChangedInputError(
                    f"input files changed since micro-batch {spark_batch} first read them: "
                    f"{'; '.join(changes)}. The replay of {batch} must read what its first "
                    "attempt read, whose output the sinks may hold: restore the files as they "
                    "were, or remove them and " + _SKIP + "; or run the job on a new "
                    "checkpoint directory"
                )
        missing = tuple(p for p in paths if now[p] is None)
        if missing and not skip_missing:
            read = (
                f"its first attempt read them ({first.total_records} records in all), and "
                "the sinks may hold its output, which a replay without them would replace"
                if first is not None
                else "Spark listed them for it and would read them as empty"
            )
            raise MissingInputFilesError(
                f"{batch} reads {len(missing)} input file(s) that are missing: "
                f"{', '.join(missing)}; {read}. Restore the file(s) as they were and start "
                "the job again, or " + _SKIP
            )
        present = tuple(f for f in now.values() if f is not None)
        return cls(version, spark_batch, present, missing, first)

    def settle(self, store: CheckpointStore, records: Mapping[int, int]) -> SkippedInputs | None:
        """Before the sinks write (step 2): record what the first attempt read (``records``:
        per source split), or check a replay's records against it; returns what was skipped
        (``None``: nothing)."""
        first = self.first
        if first is None:
            store.write_inputs(
                BatchInputs(self.version, self.spark_batch, self.present, dict(records))
            )
            return SkippedInputs(self.missing, None) if self.missing else None
        now, before = sum(records.values()), first.total_records
        read_before = {f.path for f in first.files}
        if any(p in read_before for p in self.missing) and now <= before:
            return SkippedInputs(self.missing, before - now)
        same = (
            dict(records) == dict(first.records)
            if set(records) == set(first.records)
            else now == before
        )
        if not same:
            raise ChangedInputError(
                f"micro-batch {self.spark_batch} (batch {self.version} of {store.location!r}) "
                f"read {now} records now and {before} in its first attempt (per source split: "
                f"{dict(records)} and {dict(first.records)}): its input changed under the same "
                "offsets, and the sinks may hold the first attempt's output; restore the input "
                "as it was, or run the job on a new checkpoint directory"
            )
        return SkippedInputs(self.missing, None) if self.missing else None
