"""The operator that runs a sink's writer (Flink's ``SinkWriterOperator``).

A sink (e.g. :class:`~sparktide.datastream.connectors.file_system.FileSink`) is an immutable
description; every parallel subtask of the sink builds its own :class:`SinkWriter` from it when
the operator opens, hands it each record with a :class:`SinkWriterContext`, and finishes it at
the end of the input. Time-driven work (rolling files on inactivity, ...) goes through the
operator's processing-time service, which the writer receives in its :class:`WriterInitContext`.

>>> from sparktide.runtime.elements import StreamRecord
>>> from sparktide.runtime.processing_time import ManualProcessingTimeService
>>> class ListWriter(SinkWriter):
...     def __init__(self, subtask):
...         self.subtask, self.lines = subtask, []
...     def write(self, value, context):
...         self.lines.append((self.subtask, value, context.timestamp()))
...     def finish(self):
...         print(self.lines)
>>> class ListSink:
...     def create_writer(self, context, type_info=None):
...         return ListWriter(context.subtask_index)
>>> op = SinkWriterOperator(ListSink())
>>> op.setup(None, ManualProcessingTimeService())
>>> op.open()
>>> op.process_element(StreamRecord("a", 5))
>>> op.finish()
[(0, 'a', 5)]
>>> op.close()
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.processing_time import ProcessingTimeService

__all__ = [
    "SinkWriter",
    "SinkWriterContext",
    "SinkWriterOperator",
    "WriterInitContext",
    "WriterSink",
]


@dataclass(frozen=True)
class WriterInitContext:
    """What a writer knows about the subtask it writes for.

    >>> WriterInitContext(1, 4, None).subtask_index
    1
    """

    subtask_index: int
    number_of_parallel_subtasks: int
    processing_time_service: ProcessingTimeService
    """Where the writer reads the current processing time and registers timers (never the
    wall clock directly, so a run with a simulated clock is deterministic)."""


class SinkWriterContext:
    """Per-record context of :meth:`SinkWriter.write` (Flink's ``SinkWriter.Context``).

    >>> ctx = SinkWriterContext()
    >>> ctx.timestamp() is None, ctx.current_watermark()
    (True, -9223372036854775808)
    """

    __slots__ = ("_timestamp", "_watermark")

    def __init__(self) -> None:
        self._timestamp: int | None = None
        self._watermark = -(2**63)

    def timestamp(self) -> int | None:
        """The record's event timestamp (ms), or None if it has none."""
        return self._timestamp

    def current_watermark(self) -> int:
        """The operator's current event-time watermark (ms)."""
        return self._watermark

    def update(self, timestamp: int | None, watermark: int) -> None:
        """Points the context at the next record."""
        self._timestamp = timestamp
        self._watermark = watermark


class SinkWriter(ABC):
    """Writes the records of one sink subtask (Flink's ``SinkWriter``)."""

    @abstractmethod
    def write(self, value: object, context: SinkWriterContext) -> None:
        """Writes one record."""

    def prepare_checkpoint(self, checkpoint_id: int) -> None:  # noqa: B027 - optional hook
        """A checkpoint is about to be taken: make what was written so far committable."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027
        """Checkpoint ``checkpoint_id`` completed: commit what was prepared for it."""

    def finish(self) -> None:  # noqa: B027 - optional hook
        """The input ended: write and commit everything."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; what was not committed stays uncommitted."""


class WriterSink(Protocol):
    """A sink description that builds one :class:`SinkWriter` per subtask."""

    def create_writer(
        self, context: WriterInitContext, type_info: TypeInformation | None = None
    ) -> SinkWriter:
        """The writer of the subtask ``context`` describes, for records of ``type_info``."""
        ...


class SinkWriterOperator(AbstractStreamOperator):
    """Runs the :class:`SinkWriter` that ``sink`` builds for this subtask.

    ``type_info`` is the declared type of the incoming stream (``None``: none), which decides
    how records are written (e.g. Java's ``toString()`` for a file sink's string encoder).
    ``finish()`` (end of input) finishes the writer, which commits everything it wrote;
    ``close()`` releases it. ``prepare_checkpoint`` / ``notify_checkpoint_complete`` are the
    checkpoint hooks of a runner that takes checkpoints.
    """

    def __init__(self, sink: WriterSink, type_info: TypeInformation | None = None) -> None:
        super().__init__()
        if not callable(getattr(sink, "create_writer", None)):
            raise TypeError(
                f"sink must have a create_writer(context, type_info) method, got "
                f"{type(sink).__name__}; pass a sink such as FileSink.for_row_format(...).build()"
            )
        self.sink = sink
        self.type_info = type_info
        self._context = SinkWriterContext()
        self._writer: SinkWriter | None = None
        self._finished = False

    @property
    def writer(self) -> SinkWriter | None:
        """This subtask's writer (``None`` before ``open()``)."""
        return self._writer

    def open(self) -> None:
        info = self.setup_info
        service = self.processing_time_service
        if service is None:
            raise RuntimeError("a sink writer needs a processing-time service: setup() it first")
        context = WriterInitContext(info.subtask_index, info.parallelism, service)
        self._writer = self.sink.create_writer(context, self.type_info)

    def process_element(self, record: StreamRecord) -> None:
        self._context.update(record.timestamp, self.current_watermark())
        self._writer.write(record.value, self._context)  # type: ignore[union-attr]  # set by open()

    def prepare_checkpoint(self, checkpoint_id: int) -> None:
        """Forwarded to the writer before a checkpoint is taken."""
        if self._writer is not None:
            self._writer.prepare_checkpoint(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Forwarded to the writer once a checkpoint completed."""
        if self._writer is not None:
            self._writer.notify_checkpoint_complete(checkpoint_id)

    def finish(self) -> None:
        if self._writer is not None and not self._finished:
            self._finished = True
            self._writer.finish()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.close()
        finally:
            super().close()
