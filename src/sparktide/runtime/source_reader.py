"""The runtime's source readers: they read a source, assign timestamps and drive watermark
generators.

:class:`SourceFunctionDriver` runs a :class:`~sparktide.core.source.SourceFunction` against an
:class:`~sparktide.runtime.output.Output`. :class:`SplitReader` reads one
:class:`~sparktide.core.source.SourceSplit` of a :class:`~sparktide.core.source.Source` with the
split's own timestamp assigner and watermark generator; the watermarks of the splits are combined
downstream by a :class:`~sparktide.runtime.valve.StatusWatermarkValve` (one channel per split)
or, inside one reader, by a
:class:`~sparktide.runtime.watermark_multiplexer.WatermarkOutputMultiplexer`.

>>> from sparktide.common.watermark_strategy import WatermarkStrategy
>>> from sparktide.runtime.output import CollectingOutput
>>> strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
...     lambda value, _: value[1]
... )
>>> out = CollectingOutput()
>>> reader = SplitReader(iter([("a", 1), ("b", 5)]), strategy, None, out)
>>> reader.read_up_to(10), reader.emit_periodic(), reader.finish()
(2, None, None)
>>> out.elements
[StreamRecord(('a', 1), 1), StreamRecord(('b', 5), 5), Watermark(4), \
Watermark(9223372036854775807)]
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TypeAlias, cast

from sparktide.common.arrow_rows import BatchRows, RecordChunks, cut
from sparktide.common.watermark_strategy import (
    RecordTimestampAssigner,
    WatermarkOutput,
    WatermarkStrategy,
    WatermarksWithIdleness,
    check_extracted_timestamp,
)
from sparktide.core.source import SourceContext, SourceFunction
from sparktide.runtime.elements import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    StreamRecord,
    Watermark,
    WatermarkStatus,
    check_timestamp,
)
from sparktide.runtime.operators.simple import rethrown
from sparktide.runtime.operators.timestamps import WatermarkEmitter, chunk_observer
from sparktide.runtime.output import Output
from sparktide.runtime.processing_time import ProcessingTimeService

_Element: TypeAlias = StreamRecord | Watermark | WatermarkStatus

__all__ = ["SourceFunctionDriver", "SplitReader"]


class _OutputSourceContext(SourceContext):
    """A :class:`SourceContext` writing records, watermarks and statuses into an Output."""

    __slots__ = ("_emitter", "_output")

    def __init__(self, output: Output, emitter: WatermarkEmitter) -> None:
        self._output = output
        self._emitter = emitter

    def collect(self, element: object) -> None:
        emitter = self._emitter
        if emitter.idle:
            emitter.mark_active()
        self._output.collect(StreamRecord(element, None))

    def collect_with_timestamp(self, element: object, timestamp: int) -> None:
        if type(timestamp) is not int or not MIN_TIMESTAMP <= timestamp <= MAX_TIMESTAMP:
            if timestamp is None:
                raise TypeError(
                    "timestamp must be an int number of milliseconds, got NoneType (None); use "
                    "collect(element) for a record without a timestamp"
                )
            timestamp = check_timestamp(timestamp, "timestamp")
        emitter = self._emitter
        if emitter.idle:
            emitter.mark_active()
        self._output.collect(StreamRecord(element, timestamp))

    def emit_watermark(self, watermark: Watermark | int) -> None:
        emitter = self._emitter
        emitter.mark_active()
        emitter.emit_watermark(watermark)

    def mark_as_temporarily_idle(self) -> None:
        self._emitter.mark_idle()


class _Handoff:
    """The Output of a source function running in its own thread (pull mode).

    Elements are buffered. The source thread runs only during its turn: the reading thread
    grants a quota of records and waits; once the quota is used up (or the function returns)
    the source thread hands the turn back and blocks in ``collect`` until the next turn. So the
    function never runs concurrently with the task.
    """

    __slots__ = ("buffer", "cancelled", "cond", "done", "error", "producer_turn", "quota")

    def __init__(self) -> None:
        self.buffer: list[_Element] = []
        self.cond = threading.Condition()
        self.producer_turn = False
        self.quota = 0  # records the source may still produce in this turn
        self.done = False
        self.cancelled = False
        self.error: BaseException | None = None

    def collect(self, record: StreamRecord) -> None:
        cond = self.cond
        with cond:
            if self.cancelled:
                return  # the reader has gone: drop
            self.buffer.append(record)
            self.quota -= 1
            if self.quota > 0:
                return
            self.producer_turn = False
            cond.notify_all()
            while not self.producer_turn:
                cond.wait()

    def collect_side(self, tag: object, record: StreamRecord) -> None:  # pragma: no cover
        raise TypeError("a source function has no side outputs")

    def emit_watermark(self, watermark: Watermark) -> None:
        with self.cond:
            if not self.cancelled:
                self.buffer.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        with self.cond:
            if not self.cancelled:
                self.buffer.append(status)


class SourceFunctionDriver:
    """Runs a :class:`SourceFunction` with a :class:`SourceContext` that writes into ``output``.

    ``collect`` gives a record without timestamp (``None``); ``collect_with_timestamp`` checks
    the timestamp (``TypeError`` for a non-int); ``emit_watermark`` forwards strictly increasing
    watermarks only; ``mark_as_temporarily_idle`` emits IDLE (once); a record or watermark after
    idleness emits ACTIVE first. When the function returns without having been cancelled, the
    input has ended and the watermark ``MAX`` is emitted.

    Two ways to drive it:

    - push: :meth:`run` runs the function in the calling thread until it returns;
    - pull (what a runtime reading in rounds uses, like :class:`SplitReader`): :meth:`read_next`
      / :meth:`read_up_to` deliver records, each with the watermarks and statuses the function
      emitted before it and up to its next record; :meth:`finish` ends the input (cancelling the
      function if it has not returned yet). The function runs in a helper thread that only
      executes while the reading thread waits for it, so the two never run at the same time. To
      know what follows a record, and to hand over in batches, it may run ahead by up to
      ``max(n, 64)`` records (at most 1024 per hand-over): exactly ``n`` are delivered, the rest
      wait for the next read. ``emit_periodic`` does nothing: the function emits its own
      watermarks.

    ``processing_time_service`` (optional) is the task's processing-time service; it is kept for
    the runtime as an attribute (a legacy event-time source does not read it).

    >>> class Quiet(SourceFunction):
    ...     def run(self, ctx):
    ...         ctx.collect("a"); ctx.mark_as_temporarily_idle(); ctx.collect("b")
    ...     def cancel(self):
    ...         pass
    >>> from sparktide.runtime.output import CollectingOutput
    >>> out = CollectingOutput()
    >>> SourceFunctionDriver(Quiet(), out).run()
    >>> out.elements[:4]
    [StreamRecord('a', None), WatermarkStatus.IDLE, WatermarkStatus.ACTIVE, \
StreamRecord('b', None)]
    >>> pulled = CollectingOutput()
    >>> d = SourceFunctionDriver(Quiet(), pulled)
    >>> d.read_next(), pulled.elements  # 'a' and what the function emitted before 'b'
    (True, [StreamRecord('a', None), WatermarkStatus.IDLE, WatermarkStatus.ACTIVE])
    >>> d.read_up_to(5), d.exhausted
    (1, True)
    >>> d.finish(); pulled.elements[-1]
    Watermark(9223372036854775807)
    """

    def __init__(
        self,
        function: SourceFunction,
        output: Output,
        processing_time_service: ProcessingTimeService | None = None,
    ) -> None:
        if not callable(getattr(function, "run", None)):
            raise TypeError(
                f"function must be a SourceFunction with run(ctx), got {type(function).__name__}"
            )
        self.function = function
        self.output = output
        self.processing_time_service = processing_time_service
        self.emitter = WatermarkEmitter(output)
        self.context: SourceContext = _OutputSourceContext(output, self.emitter)
        self._cancelled = False
        self._finished = False
        self.exhausted = False
        self._records_read = 0
        # pull mode: elements produced but not delivered yet, and how many of them are records
        self._handoff: _Handoff | None = None
        self._thread: threading.Thread | None = None
        self._pending: deque[_Element] = deque()
        self._pending_records = 0

    # ------------------------------------------------------------------ push mode

    def run(self) -> None:
        """Run the function to its end in this thread; then emit ``MAX`` unless cancelled."""
        if self._handoff is not None:
            raise RuntimeError("this driver is being read with read_next(); do not also run() it")
        try:
            self.function.run(self.context)
        finally:
            self.context.close()
        self.exhausted = True
        if not self._cancelled:
            self._emit_end()

    def cancel(self) -> None:
        """Cancel the function (no end-of-input watermark will be emitted)."""
        self._cancelled = True
        self.function.cancel()
        handoff = self._handoff
        if handoff is not None:
            with handoff.cond:  # release a source thread blocked in collect()
                handoff.cancelled = True
                handoff.producer_turn = True
                handoff.cond.notify_all()

    def is_cancelled(self) -> bool:
        return self._cancelled

    # ------------------------------------------------------------------ pull mode

    @property
    def records_read(self) -> int:
        return self._records_read

    def is_finished(self) -> bool:
        return self._finished

    def read_next(self) -> bool:
        """Deliver the next record (with the watermarks/statuses around it); ``False`` once the
        function has returned."""
        return self.read_up_to(1) == 1

    def read_up_to(self, n: int) -> int:
        """Deliver up to ``n`` records; returns how many (fewer: the function has returned)."""
        if type(n) is not int or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        if self._finished or self.exhausted or n == 0:
            return 0
        if self._handoff is None:
            self._start()
        handoff: _Handoff = self._handoff  # type: ignore[assignment]
        pending = self._pending
        collect = self.output.collect
        count = 0
        while count < n:
            # a record is delivered with what follows it up to the next record, so the next
            # record must be known (or the function must have returned)
            if self._pending_records < 2 and not handoff.done:
                wanted = n - count + 1 - self._pending_records
                self._fill(min(max(wanted, _MIN_RUN_AHEAD), _MAX_RUN_AHEAD))
                continue
            if self._pending_records == 0:
                break
            element = pending.popleft()
            while type(element) is not StreamRecord:
                self._emit(element)
                element = pending.popleft()
            collect(element)
            self._pending_records -= 1
            count += 1
            while pending and type(pending[0]) is not StreamRecord:
                self._emit(pending.popleft())
        self._records_read += count
        if handoff.done and self._pending_records == 0:
            while pending:
                self._emit(pending.popleft())
            self.exhausted = True
            self._raise_error()
        return count

    def emit_periodic(self) -> None:
        """Nothing to do: a source function emits its own watermarks."""

    def finish(self) -> None:
        """End of input: cancel the function if it is still running (undelivered records are
        dropped), then emit ``MAX`` unless it was cancelled. Idempotent."""
        if self._finished:
            return
        self._finished = True
        handoff = self._handoff
        if handoff is None:
            if not self._cancelled:
                self._emit_end()
            return
        if not handoff.done or self._pending_records:
            self.cancel()
            self._pending.clear()
            self._pending_records = 0
            thread = self._thread
            if thread is not None:
                thread.join(_CANCEL_JOIN_SECONDS)
            return
        self._raise_error()
        if not self._cancelled:
            self.emitter.output = self.output  # the source thread has ended: write directly
            self._emit_end()

    # ------------------------------------------------------------------ internals

    def _emit_end(self) -> None:
        self.emitter.mark_active()
        self.emitter.emit_watermark(MAX_TIMESTAMP)

    def _start(self) -> None:
        handoff = _Handoff()
        self._handoff = handoff
        self.emitter = WatermarkEmitter(handoff)
        context = _OutputSourceContext(handoff, self.emitter)
        function = self.function

        def main() -> None:
            with handoff.cond:
                while not handoff.producer_turn:
                    handoff.cond.wait()
            try:
                function.run(context)
            except BaseException as error:  # re-raised in the reading thread
                handoff.error = error
            finally:
                try:
                    context.close()
                finally:
                    with handoff.cond:
                        handoff.done = True
                        handoff.producer_turn = False
                        handoff.cond.notify_all()

        self._thread = threading.Thread(target=main, name="sparktide-source-function", daemon=True)
        self._thread.start()

    def _fill(self, quota: int) -> None:
        """Let the function run until it has produced ``quota`` more records or returned."""
        handoff: _Handoff = self._handoff  # type: ignore[assignment]
        cond = handoff.cond
        with cond:
            handoff.quota = quota
            handoff.producer_turn = True
            cond.notify_all()
            while handoff.producer_turn and not handoff.done:
                cond.wait()
            produced, handoff.buffer = handoff.buffer, []
        self._pending.extend(produced)
        self._pending_records += sum(1 for e in produced if type(e) is StreamRecord)

    def _emit(self, element: _Element) -> None:
        """A watermark or status the function emitted (records are collected instead)."""
        if isinstance(element, Watermark):
            self.output.emit_watermark(element)
        elif isinstance(element, WatermarkStatus):
            self.output.emit_watermark_status(element)

    def _raise_error(self) -> None:
        handoff = self._handoff
        if handoff is not None and handoff.error is not None:
            error, handoff.error = handoff.error, None
            raise error


_CANCEL_JOIN_SECONDS = 5.0
_MIN_RUN_AHEAD = 64
_MAX_RUN_AHEAD = 1024


# ---------------------------------------------------------------------------------------------
# The per-split driver

_ChunkOutput: TypeAlias = Callable[[list[object], list[int | None]], None]


def _not_chunked(values: list[object], timestamps: list[int | None]) -> None:
    raise RuntimeError("this reader's output takes records one by one, not chunks")


_END = object()
_NO_WATERMARKS = WatermarkStrategy.no_watermarks()


class SplitReader:
    """Reads one split: assigns timestamps, runs the split's own watermark generator and emits
    records, watermarks and statuses.

    ``records``: the split's records (``source.read_split(split)``).
    ``strategy``: the job's :class:`~sparktide.common.watermark_strategy.WatermarkStrategy`; a
    fresh assigner and generator are created for this split (``None`` means ``no_watermarks()``).
    ``context``: the processing-time context (anything with ``current_processing_time()``, a
    processing-time service, or ``None`` when the strategy needs no clock).
    ``output``: where records go; watermarks and statuses go there too (through a
    :class:`~sparktide.runtime.operators.timestamps.WatermarkEmitter`: strictly increasing,
    statuses on change) unless ``watermark_output`` is given (e.g. a
    :class:`~sparktide.runtime.watermark_multiplexer.WatermarkOutputMultiplexer` output).

    The runtime calls :meth:`read_up_to` (or :meth:`read_next`) in a loop, :meth:`emit_periodic`
    at the end of each round, and :meth:`finish` when the split is exhausted (``MAX``). Without
    a timestamp assigner records carry ``None``.

    >>> from sparktide.common.watermark_strategy import WatermarkStrategy
    >>> from sparktide.runtime.output import CollectingOutput
    >>> out = CollectingOutput()
    >>> strategy = WatermarkStrategy.for_bounded_out_of_orderness(2).with_timestamp_assigner(
    ...     lambda v, _: v
    ... )
    >>> r = SplitReader(iter([10, 14, 12]), strategy, None, out, split_id="0")
    >>> r.read_up_to(2), r.read_next(), r.read_next()
    (2, True, False)
    >>> r.emit_periodic()
    >>> out.elements
    [StreamRecord(10, 10), StreamRecord(14, 14), StreamRecord(12, 12), Watermark(11)]
    """

    __slots__ = (
        "_assigner",
        "_chunks",
        "_collect_chunk",
        "_column_timestamps",
        "_columns_taken",
        "_extract",
        "_finished",
        "_is_idle",
        "_iterator",
        "_observe",
        "_offset",
        "_on_event",
        "_output",
        "_pending",
        "_pending_ts",
        "_records_read",
        "_wm_output",
        "exhausted",
        "generator",
        "split_id",
    )

    def __init__(
        self,
        records: Iterable[object],
        strategy: WatermarkStrategy | None,
        context: object,
        output: Output,
        *,
        split_id: str | None = None,
        watermark_output: WatermarkOutput | None = None,
        chunked: bool = False,
    ) -> None:
        if strategy is None:
            strategy = _NO_WATERMARKS
        elif not isinstance(strategy, WatermarkStrategy):
            raise TypeError(
                "strategy must be a WatermarkStrategy (or None for no timestamps and no "
                f"watermarks), got {type(strategy).__name__}"
            )
        try:
            self._iterator = iter(records)
        except TypeError:
            raise TypeError(
                f"records must be an iterable of the split's records, got {type(records).__name__}"
            ) from None
        self.split_id = split_id
        assigner = strategy.create_timestamp_assigner(context)
        self._assigner = assigner
        self._extract = (
            None if isinstance(assigner, RecordTimestampAssigner) else assigner.extract_timestamp
        )
        self.generator = strategy.create_watermark_generator(context)
        self._on_event = self.generator.on_event
        self._output = output
        self._wm_output: WatermarkOutput = (
            WatermarkEmitter(output) if watermark_output is None else watermark_output
        )
        self._records_read = 0
        self._finished = False
        self.exhausted = False
        self._chunks: Iterator[list[object]] | None = None
        self._pending: list[object] = []
        self._pending_ts: list[int | None] | None = None  # its timestamps, if by column
        self._offset = 0
        self._columns_taken = False  # chunks of Arrow batches go on unbuilt (take_columns)
        # the assigner's timestamps of a whole chunk at once (a ColumnTimestampAssigner's)
        self._column_timestamps: Callable[[list[object]], list[int | None] | None] | None = (
            None if self._extract is None else getattr(assigner, "column_timestamps", None)
        )
        generator = self.generator
        self._observe = chunk_observer(generator, self._wm_output)
        self._is_idle: Callable[[], bool] | None = (
            generator.is_idle if isinstance(generator, WatermarksWithIdleness) else None
        )
        collect_chunk: _ChunkOutput | None = getattr(output, "collect_chunk", None)
        self._collect_chunk: _ChunkOutput = _not_chunked if collect_chunk is None else collect_chunk
        takes_chunks = chunked and collect_chunk is not None and self._observe is not None
        if takes_chunks and isinstance(records, RecordChunks):
            # a BatchRows stands for its rows (a list) until built
            self._chunks = cast("Iterator[list[object]]", records.chunks())

    @property
    def records_read(self) -> int:
        return self._records_read

    @property
    def chunked(self) -> bool:
        """Whether records are handed on a chunk at a time (see :meth:`read_chunks`)."""
        return self._chunks is not None

    def take_columns(self) -> None:
        """What takes this reader's chunks takes an Arrow batch's columns as they are
        (``map_batches``): a chunk of a source's batch (:class:`~sparktide.common.arrow_rows.
        BatchRows`) goes on without its rows built (by default they are built as it is
        taken)."""
        self._columns_taken = True

    @property
    def watermark_output(self) -> WatermarkOutput:
        return self._wm_output

    def is_finished(self) -> bool:
        return self._finished

    def read_next(self) -> bool:
        """Read and emit one record; ``False`` once the split is exhausted."""
        if self._finished or self.exhausted:
            return False
        if self._chunks is not None:
            return self.read_chunks(1) == 1
        value = next(self._iterator, _END)
        if value is _END:
            self.exhausted = True
            return False
        self._records_read += 1
        extract = self._extract
        if extract is None:
            self._output.collect(StreamRecord(value, None))
            self._on_event(value, MIN_TIMESTAMP, self._wm_output)
            return True
        ts = extract(value, MIN_TIMESTAMP)
        if type(ts) is not int or ts < MIN_TIMESTAMP or ts > MAX_TIMESTAMP:
            ts = check_extracted_timestamp(ts, self._assigner)
        self._output.collect(StreamRecord(value, ts))
        self._on_event(value, ts, self._wm_output)
        return True

    def read_up_to(self, n: int) -> int:
        """Read and emit up to ``n`` records; returns how many (fewer: the split is exhausted)."""
        if type(n) is not int or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        if self._finished or self.exhausted or n == 0:
            return 0
        if self._chunks is not None:
            return self.read_chunks(n)
        collect = self._output.collect
        on_event = self._on_event
        wm_output = self._wm_output
        extract = self._extract
        count = 0
        try:
            if extract is None:
                for value in islice(self._iterator, n):
                    count += 1
                    collect(StreamRecord(value, None))
                    on_event(value, MIN_TIMESTAMP, wm_output)
            else:
                for value in islice(self._iterator, n):
                    count += 1
                    ts = extract(value, MIN_TIMESTAMP)
                    if type(ts) is not int or ts < MIN_TIMESTAMP or ts > MAX_TIMESTAMP:
                        ts = check_extracted_timestamp(ts, self._assigner)
                    collect(StreamRecord(value, ts))
                    on_event(value, ts, wm_output)
        finally:
            self._records_read += count
        if count < n:
            self.exhausted = True
        return count

    def read_chunks(self, n: int) -> int:
        """:meth:`read_up_to` of a reader handing out chunks: the next ``n`` records of the
        source's chunks (cut where ``n`` ends), a chunk at a time to the output's
        ``collect_chunk(values, timestamps)``; the watermark generator is told once per chunk
        (it only keeps the largest timestamp, see
        :func:`~sparktide.runtime.operators.timestamps.chunk_observer`)."""
        count = 0
        chunks = cast("Iterator[list[object]]", self._chunks)
        try:
            while count < n:
                pending, offset = self._pending, self._offset
                if offset >= len(pending):
                    chunk = next(chunks, None)
                    if chunk is None:
                        self.exhausted = True
                        break
                    kind: type = type(chunk)
                    if kind is BatchRows and not self._columns_taken:
                        chunk = cast("BatchRows", chunk).rows()
                    self._pending, self._offset = chunk, 0
                    by_column = self._column_timestamps
                    self._pending_ts = None if by_column is None else by_column(chunk)
                    continue
                stamps = self._pending_ts
                end = offset + n - count
                whole = offset == 0 and len(pending) <= n - count
                values = pending if whole else cut(pending, offset, end)
                self._offset = offset + len(values)
                count += len(values)
                if stamps is None:
                    self.read_slice(values)
                else:
                    self._hand_on(values, stamps if whole else stamps[offset:end])
        finally:
            self._records_read += count
        return count

    def read_slice(self, values: list[object]) -> None:
        """Hand on ``values`` (records read in order) as one chunk with their timestamps. An
        assigner failing on one of them hands on those before it first (as record by record),
        then raises."""
        extract = self._extract
        if extract is None:
            self._hand_on(values, [None] * len(values))
            return
        assigner = self._assigner
        timestamps: list[int | None] = []
        append = timestamps.append
        try:
            for value in values:  # ``value``: the failure's record
                ts = extract(value, MIN_TIMESTAMP)
                if type(ts) is not int or ts < MIN_TIMESTAMP or ts > MAX_TIMESTAMP:
                    ts = check_extracted_timestamp(ts, assigner)
                append(ts)
        except Exception as exc:
            failure = exc
        else:
            self._hand_on(values, timestamps)
            return
        if timestamps:
            self._hand_on(values[: len(timestamps)], timestamps)
        raise rethrown(failure)

    def _hand_on(self, values: list[object], timestamps: list[int | None]) -> None:
        is_idle = self._is_idle
        if is_idle is not None and is_idle():
            # the first record makes the output active again, right after it (as on_event does)
            self._collect_chunk(values[:1], timestamps[:1])
            ts = timestamps[0]
            self._on_event(values[0], MIN_TIMESTAMP if ts is None else ts, self._wm_output)
            values, timestamps = values[1:], timestamps[1:]
            if not values:
                return
        self._collect_chunk(values, timestamps)
        top = MIN_TIMESTAMP if timestamps[0] is None else max(timestamps)  # type: ignore[type-var]
        cast("Callable[[int, int], None]", self._observe)(len(values), top)  # type: ignore[arg-type]

    def emit_periodic(self) -> None:
        """Ask the split's generator for its periodic watermark (end of a round)."""
        if not self._finished:
            self.generator.on_periodic_emit(self._wm_output)

    def finish(self) -> None:
        """End of the split: the watermark ``MAX`` (no last periodic watermark: as in Flink, a
        finished split simply stops holding the combined watermark back; call
        :meth:`emit_periodic` first to get one). Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._wm_output.emit_watermark(MAX_TIMESTAMP)

    def __repr__(self) -> str:
        state = "finished" if self._finished else "exhausted" if self.exhausted else "reading"
        return f"SplitReader(split_id={self.split_id!r}, read={self._records_read}, {state})"
