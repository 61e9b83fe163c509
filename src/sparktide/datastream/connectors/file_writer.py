"""The writer of a :class:`~sparktide.datastream.connectors.file_system.FileSink` subtask:
buckets, part files, rolling and committing (Flink's ``FileWriter`` and ``FileWriterBucket``).

A part file is written as a hidden in-progress file next to its final name
(``.<name>.inprogress.<uuid>``), becomes pending when it is rolled, and is committed (renamed to
``<prefix>-<uuid>-<counter><suffix>``) when a checkpoint completes or the input ends. A
row-format part file holds the encoder's bytes of each record; a bulk-format one is written by
the sink's bulk writer (Parquet, CSV, JSON lines) from batches of rows of its row type.

>>> part = PartFileInfo("2020-01-02--03", creation_time=1000)
>>> part.size, part.last_update_time
(0, 1000)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sparktide.runtime.operators.sink_writer import (
    SinkWriter,
    SinkWriterContext,
    WriterInitContext,
)

if TYPE_CHECKING:
    from sparktide.datastream.connectors.bulk_format import BulkWriter, BulkWriterFactory
    from sparktide.datastream.connectors.file_sink import FileSink

_BATCH = 4096  # rows per batch handed to a bulk writer

__all__ = ["FileWriter", "PartFileInfo"]


class PartFileInfo:
    """The state of an in-progress part file that a :class:`RollingPolicy` decides on."""

    __slots__ = ("bucket_id", "creation_time", "last_update_time", "size")

    def __init__(self, bucket_id: str, creation_time: int) -> None:
        self.bucket_id = bucket_id
        self.creation_time = creation_time  # processing time (ms) when the file was opened
        self.last_update_time = creation_time  # processing time (ms) of the last write
        self.size = 0  # bytes written


class _PartFile:
    """An open in-progress part file: encoded records (row format), or rows written in batches
    by a bulk writer (bulk format)."""

    __slots__ = ("buffer", "bulk", "final_path", "info", "row_type", "stream", "temp_path")

    def __init__(
        self, final_path: Path, info: PartFileInfo, factory: BulkWriterFactory | None = None
    ) -> None:
        self.final_path = final_path
        self.temp_path = final_path.with_name(f".{final_path.name}.inprogress.{uuid.uuid4()}")
        self.info = info
        self.stream: BinaryIO | None = open(self.temp_path, "xb")  # noqa: SIM115 - kept open
        self.bulk: BulkWriter | None = None if factory is None else factory.create(self.stream)
        self.row_type = None if factory is None else factory.get_row_type()  # type: ignore[attr-defined]
        self.buffer: list[Any] = []

    def add(self, row: Any) -> None:
        """Buffer a row of a bulk part file (written in batches of ``_BATCH`` rows)."""
        self.buffer.append(row)
        if len(self.buffer) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self.buffer and self.bulk is not None and self.stream is not None:
            from sparktide.spark.frames import to_record_batch

            self.bulk.add_batch(to_record_batch(self.buffer, self.row_type))
            self.buffer = []
            self.info.size = self.stream.tell()

    def close(self) -> None:
        if self.stream is not None:
            if self.bulk is not None:
                self.flush()
                self.bulk.finish()
            self.stream.close()
            self.stream = None

    def commit(self) -> None:
        self.close()
        os.replace(self.temp_path, self.final_path)


class _Bucket:
    """The part files of one bucket of one subtask (Flink's ``FileWriterBucket``)."""

    __slots__ = ("bucket_id", "counter", "in_progress", "path", "pending", "unique_id")

    def __init__(self, bucket_id: str, path: Path, unique_id: str) -> None:
        self.bucket_id = bucket_id
        self.path = path
        self.unique_id = unique_id
        self.counter = 0
        self.in_progress: _PartFile | None = None
        self.pending: list[tuple[int | None, _PartFile]] = []  # (checkpoint id, closed file)


class FileWriter(SinkWriter):
    """The writer of one :class:`FileSink` subtask: buckets, part files, rolling, committing."""

    def __init__(
        self,
        sink: FileSink,
        context: WriterInitContext,
        type_info: Any,
        unique_id: Callable[[], str],
    ) -> None:
        self._sink = sink
        self._type_info = type_info
        self._unique_id = unique_id
        self._clock = context.processing_time_service
        self.subtask_index = context.subtask_index
        self._buckets: dict[str, _Bucket] = {}
        self._context: SinkWriterContext | None = None
        self._timer: Any = None
        self._closed = False
        self._schedule_check()

    # The context the bucket assigner sees.
    def current_processing_time(self) -> int:
        return self._clock.get_current_processing_time()

    def current_watermark(self) -> int:
        return -(2**63) if self._context is None else self._context.current_watermark()

    def timestamp(self) -> int | None:
        return None if self._context is None else self._context.timestamp()

    def write(self, value: Any, context: SinkWriterContext) -> None:
        self._context = context
        bucket_id = self._sink.bucket_assigner.get_bucket_id(value, self)
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            path = (
                Path(self._sink.base_path, bucket_id) if bucket_id else Path(self._sink.base_path)
            )
            bucket = _Bucket(bucket_id, path, self._unique_id())
            self._buckets[bucket_id] = bucket
        now = self.current_processing_time()
        row = None if self._sink.bulk_factory is None else self._sink.bulk_record(value)
        part = bucket.in_progress
        if part is None or self._sink.rolling_policy.should_roll_on_event(part.info, value):
            part = self._roll(bucket, now)
        if row is not None:
            part.add(row)
        else:
            data = self._sink.encoder.encode(value, self._type_info)  # type: ignore[union-attr]
            part.stream.write(data)  # type: ignore[union-attr]
            part.info.size += len(data)
        part.info.last_update_time = now

    def _roll(self, bucket: _Bucket, now: int) -> _PartFile:
        self._close_part(bucket, None)
        config = self._sink.output_file_config
        name = (
            f"{config.get_part_prefix()}-{bucket.unique_id}-{bucket.counter}"
            f"{config.get_part_suffix()}"
        )
        bucket.counter += 1
        bucket.path.mkdir(parents=True, exist_ok=True)
        info = PartFileInfo(bucket.bucket_id, now)
        part = _PartFile(bucket.path / name, info, self._sink.bulk_factory)
        bucket.in_progress = part
        return part

    def _close_part(self, bucket: _Bucket, checkpoint_id: int | None) -> None:
        part, bucket.in_progress = bucket.in_progress, None
        if part is not None:
            part.close()
            bucket.pending.append((checkpoint_id, part))

    def _schedule_check(self) -> None:
        now = self._clock.get_current_processing_time()
        self._timer = self._clock.register_timer(
            now + self._sink.bucket_check_interval, self._on_processing_time
        )

    def _on_processing_time(self, _timestamp: int) -> None:
        if self._closed:
            return
        now = self.current_processing_time()
        policy = self._sink.rolling_policy
        for bucket in self._buckets.values():
            part = bucket.in_progress
            if part is not None and policy.should_roll_on_processing_time(part.info, now):
                self._close_part(bucket, None)
        self._schedule_check()

    def prepare_checkpoint(self, checkpoint_id: int) -> None:
        policy = self._sink.rolling_policy
        for bucket in self._buckets.values():
            part = bucket.in_progress
            if part is not None and policy.should_roll_on_checkpoint(part.info):
                self._close_part(bucket, checkpoint_id)
            bucket.pending = [(checkpoint_id if cp is None else cp, f) for cp, f in bucket.pending]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for bucket in self._buckets.values():
            keep = []
            for cp, part in bucket.pending:
                if cp is not None and cp <= checkpoint_id:
                    part.commit()
                else:
                    keep.append((cp, part))
            bucket.pending = keep
        self._drop_inactive()

    def finish(self) -> None:
        for bucket in self._buckets.values():
            self._close_part(bucket, None)
            for _, part in bucket.pending:
                part.commit()
            bucket.pending = []
        self._drop_inactive()

    def _drop_inactive(self) -> None:
        self._buckets = {
            k: b for k, b in self._buckets.items() if b.in_progress is not None or b.pending
        }

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for bucket in self._buckets.values():  # uncommitted files stay in progress, as in Flink
            if bucket.in_progress is not None:
                bucket.in_progress.close()
            for _, part in bucket.pending:
                part.close()

    def in_progress_files(self) -> list[Path]:
        """The hidden files of this subtask that are not committed yet."""
        files = []
        for bucket in self._buckets.values():
            if bucket.in_progress is not None:
                files.append(bucket.in_progress.temp_path)
            files.extend(part.temp_path for _, part in bucket.pending)
        return sorted(files)
