"""Assigning timestamps and generating watermarks inside a stream (Flink's
``TimestampsAndWatermarksOperator``), and the :class:`WatermarkEmitter` that turns a
generator's output into watermark and status elements.

Per record the operator assigns the timestamp (``assigner(value, previous or MIN)``), forwards the
record, then calls the generator's ``on_event``. Periodic emission runs either on processing-time
timers every ``auto_watermark_interval`` ms (``periodic="timer"``) or when the runtime calls
:meth:`TimestampsAndWatermarksOperator.emit_periodic` at the end of each round
(``periodic="external"``, the deterministic mode). Watermarks and statuses from upstream are
ignored, except the end-of-input watermark ``MAX``, which is forwarded once; :meth:`finish` asks
the generator for a last periodic watermark (dropped when ``MAX`` has already gone out), as in
Flink.

>>> from sparktide.common.watermark_strategy import WatermarkStrategy
>>> from sparktide.testing import OneInputStreamOperatorTestHarness
>>> strategy = WatermarkStrategy.for_bounded_out_of_orderness(10).with_timestamp_assigner(
...     lambda value, _: value[1]
... )
>>> h = OneInputStreamOperatorTestHarness(TimestampsAndWatermarksOperator(strategy))
>>> h.open()
>>> h.process_element(("a", 100)); h.process_element(("b", 130))
>>> h.set_processing_time(200)  # the periodic timer fires
>>> h.get_output()
[StreamRecord(('a', 100), 100), StreamRecord(('b', 130), 130), Watermark(119)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from sparktide.common.time import SpanLike, to_millis
from sparktide.common.watermark_strategy import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    ClockContext,
    NoWatermarksGenerator,
    RecordTimestampAssigner,
    SupportsExtractTimestamp,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
    WatermarksWithIdleness,
    check_extracted_timestamp,
    watermark_timestamp,
)
from sparktide.runtime.elements import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    StreamRecord,
    Watermark,
    WatermarkStatus,
)
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.operators.simple import rethrown
from sparktide.runtime.output import Output
from sparktide.runtime.processing_time import ScheduledTimer

if TYPE_CHECKING:
    from sparktide.runtime.execution.protocol import ChunkTarget

__all__ = ["TimestampsAndWatermarksOperator", "WatermarkEmitter", "chunk_observer"]

_ACTIVE = WatermarkStatus.ACTIVE
_IDLE = WatermarkStatus.IDLE


class WatermarkEmitter:
    """A :class:`~sparktide.common.watermark_strategy.WatermarkOutput` writing to an
    :class:`~sparktide.runtime.output.Output`.

    Forwards only strictly increasing watermarks; emitting one while idle first emits ACTIVE.
    ``mark_idle`` emits IDLE once, ``mark_active`` emits ACTIVE once (only status changes are
    forwarded).

    >>> from sparktide.runtime.output import CollectingOutput
    >>> out = CollectingOutput()
    >>> e = WatermarkEmitter(out)
    >>> e.emit_watermark(5); e.emit_watermark(3); e.mark_idle(); e.mark_idle()
    >>> e.emit_watermark(Watermark(8))
    >>> out.elements
    [Watermark(5), WatermarkStatus.IDLE, WatermarkStatus.ACTIVE, Watermark(8)]
    """

    __slots__ = ("current_watermark", "idle", "output")

    def __init__(self, output: Output) -> None:
        self.output = output
        self.current_watermark = MIN_TIMESTAMP
        self.idle = False

    def emit_watermark(self, watermark: Watermark | int) -> None:
        ts = watermark if type(watermark) is int else watermark_timestamp(watermark)
        if ts <= self.current_watermark:
            return
        self.current_watermark = ts
        if self.idle:
            self.idle = False
            self.output.emit_watermark_status(_ACTIVE)
        self.output.emit_watermark(Watermark(ts))

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self.output.emit_watermark_status(_IDLE)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self.output.emit_watermark_status(_ACTIVE)

    def __repr__(self) -> str:
        state = "idle" if self.idle else "active"
        return f"WatermarkEmitter(current_watermark={self.current_watermark}, {state})"


_MAX_KEEPERS = (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks)


def _ignore(count: int, top: int) -> None:
    """A generator that does nothing per record."""


def chunk_observer(
    generator: WatermarkGenerator, output: WatermarkOutput
) -> Callable[[int, int], None] | None:
    """``observe(count, top)``: tells ``generator`` about ``count`` records whose largest
    timestamp is ``top`` in one call, leaving the state ``count`` calls of ``on_event`` leave;
    ``None`` unless the generator's ``on_event`` only keeps the largest timestamp (the built-in
    bounded out-of-orderness and monotonous generators, the no-watermarks one, and those
    wrapped in idleness detection, while not idle), exactly those classes."""
    kind = type(generator)
    if kind is NoWatermarksGenerator:
        return _ignore
    if kind in _MAX_KEEPERS:
        on_event = generator.on_event

        def keep_largest(count: int, top: int) -> None:
            on_event(None, top, output)

        return keep_largest
    if kind is WatermarksWithIdleness:
        wrapper = cast(WatermarksWithIdleness, generator)
        if type(wrapper.wrapped) not in (*_MAX_KEEPERS, NoWatermarksGenerator):
            return None
        inner = chunk_observer(wrapper.wrapped, output)
        count_events = wrapper.count_events

        def active(count: int, top: int) -> None:
            count_events(count)
            inner(count, top)  # type: ignore[misc]

        return active
    return None


_PERIODIC_MODES = ("timer", "external")


class TimestampsAndWatermarksOperator(AbstractStreamOperator):
    """Assigns timestamps and generates watermarks with a
    :class:`~sparktide.common.watermark_strategy.WatermarkStrategy`.

    ``auto_watermark_interval``: ms of processing time between periodic emissions (int,
    Duration, Time or timedelta; ``0`` disables them) in ``periodic="timer"`` mode. With
    ``periodic="external"`` no timer is registered; the runtime calls :meth:`emit_periodic`.
    Without an assigner a record keeps its timestamp (also ``None``); the generator then sees
    ``MIN_TIMESTAMP`` for such a record.

    >>> from sparktide.common.watermark_strategy import WatermarkStrategy
    >>> from sparktide.testing import OneInputStreamOperatorTestHarness
    >>> op = TimestampsAndWatermarksOperator(
    ...     WatermarkStrategy.for_monotonous_timestamps(), periodic="external"
    ... )
    >>> h = OneInputStreamOperatorTestHarness(op)
    >>> h.open()
    >>> h.process_element("x", 10); op.emit_periodic()
    >>> h.process_watermark(50)  # upstream watermarks are replaced by ours
    >>> h.process_element("y", 20); op.emit_periodic(); h.process_watermark(Watermark.MAX)
    >>> h.get_output()
    [StreamRecord('x', 10), Watermark(9), StreamRecord('y', 20), Watermark(19), \
Watermark(9223372036854775807)]
    """

    _on_event: Callable[[object, int, WatermarkEmitter], None]
    _observe: Callable[[int, int], None] | None
    chunk_output: ChunkTarget  # wired by the runner when the operator takes chunks
    chunk_at: Callable[[int], None]
    _emitter: WatermarkEmitter  # the emitter once open (``emitter`` is None before)

    def __init__(
        self,
        strategy: WatermarkStrategy,
        auto_watermark_interval: SpanLike = 200,
        periodic: str = "timer",
    ) -> None:
        super().__init__()
        if not isinstance(strategy, WatermarkStrategy):
            raise TypeError(
                "strategy must be a WatermarkStrategy, e.g. "
                "WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)), got "
                f"{type(strategy).__name__}"
            )
        interval = to_millis(auto_watermark_interval, "auto_watermark_interval")
        if interval < 0:
            raise ValueError(
                f"auto_watermark_interval must be >= 0 ms (0 disables periodic watermarks), got "
                f"{interval} ms"
            )
        if periodic not in _PERIODIC_MODES:
            raise ValueError(
                f"periodic must be 'timer' (processing-time timers) or 'external' (the runtime "
                f"calls emit_periodic()), got {periodic!r}"
            )
        self.strategy = strategy
        self.auto_watermark_interval = interval
        self.periodic = periodic
        self._extract: Callable[[object, int], int] | None = None
        self._assigner: SupportsExtractTimestamp | None = None
        self.watermark_generator: WatermarkGenerator | None = None
        self.emitter: WatermarkEmitter | None = None
        self._timer: ScheduledTimer | None = None
        self._ended = False

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        super().open()
        service = self.processing_time_service
        context = None if service is None else ClockContext(service.get_current_processing_time)
        assigner = self.strategy.create_timestamp_assigner(context)
        generator = self.strategy.create_watermark_generator(context)
        self._assigner = assigner
        self._extract = (
            None if isinstance(assigner, RecordTimestampAssigner) else assigner.extract_timestamp
        )
        self.watermark_generator = generator
        self._on_event = generator.on_event
        self.emitter = self._emitter = WatermarkEmitter(self.output)
        # chunks are told to the generator at once where that leaves the same state (an idle
        # wrapper marks its output active on a record: those go record by record)
        idle = type(generator) is WatermarksWithIdleness
        self._observe = None if idle else chunk_observer(generator, self._emitter)
        if self.periodic == "timer" and self.auto_watermark_interval > 0:
            if service is None:
                raise RuntimeError(
                    "periodic='timer' needs a processing-time service; set the operator up with "
                    "one, or use periodic='external'"
                )
            self._schedule_next()

    def finish(self) -> None:
        """End of input: a last periodic emission (dropped if ``MAX`` was already forwarded)."""
        if self.watermark_generator is not None:
            self.watermark_generator.on_periodic_emit(self._emitter)
        self._cancel_timer()

    def close(self) -> None:
        self._cancel_timer()
        super().close()

    # ------------------------------------------------------------------ elements

    def process_element(self, record: StreamRecord) -> None:
        value = record.value
        extract = self._extract
        if extract is None:
            ts = record.timestamp
            self.output.collect(record)
            self._on_event(value, MIN_TIMESTAMP if ts is None else ts, self._emitter)
            return
        previous = record.timestamp
        ts = extract(value, MIN_TIMESTAMP if previous is None else previous)
        if type(ts) is not int or ts < MIN_TIMESTAMP or ts > MAX_TIMESTAMP:
            ts = check_extracted_timestamp(ts, self._assigner)
        record.timestamp = ts
        self.output.collect(record)
        self._on_event(value, ts, self._emitter)

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        """A chunk of a split's records (see
        :class:`~sparktide.runtime.operators.simple.ChunkStep`): their timestamps assigned in
        one loop, the chunk handed on to ``chunk_output``, then the generator told at once
        (:func:`chunk_observer`); a generator that needs every record gets them one by one.
        An assigner failing on an item hands on the items before it first, then raises."""
        observe = self._observe
        if observe is None:
            self._replay(seqs, values, timestamps)
            return
        extract = self._extract
        if extract is None:
            self.chunk_output(seqs, values, timestamps)
            if values:
                observe(len(values), max([MIN_TIMESTAMP if t is None else t for t in timestamps]))
            return
        out: list[int | None] = []
        append = out.append
        try:
            for value, previous in zip(values, timestamps, strict=True):
                ts = extract(value, MIN_TIMESTAMP if previous is None else previous)
                if type(ts) is not int or ts < MIN_TIMESTAMP or ts > MAX_TIMESTAMP:
                    ts = check_extracted_timestamp(ts, self._assigner)
                append(ts)
        except Exception as exc:
            failure = exc
        else:
            self.chunk_output(seqs, values, out)
            if out:
                observe(len(out), max(out))  # type: ignore[type-var,arg-type]
            return
        i = len(out)
        if i:
            self.chunk_output(seqs[:i], values[:i], out)
            observe(i, max(out))  # type: ignore[type-var,arg-type]
        record = StreamRecord(values[i], timestamps[i])  # noqa: F841 - the failure's record
        self.chunk_at(seqs[i])
        raise rethrown(failure)

    def _replay(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        """A chunk record by record, the cursor at each item's source record."""
        process, at = self.process_element, self.chunk_at
        last = -1
        for seq, value, ts in zip(seqs, values, timestamps, strict=True):
            if seq != last:
                at(seq)
                last = seq
            process(StreamRecord(value, ts))

    def shown(self, seq: int, value: object) -> object:
        """The record a failure after this operator names for its output ``value``: the
        record it was processing (the value itself)."""
        return value

    def process_watermark(self, watermark: Watermark) -> None:
        """Upstream watermarks are ignored, except MAX (end of input), forwarded once."""
        if watermark.timestamp == MAX_TIMESTAMP and not self._ended:
            self._ended = True
            self._cancel_timer()
            emitter = self.emitter
            if emitter is None:
                raise RuntimeError("open() the operator before sending it watermarks")
            emitter.emit_watermark(MAX_TIMESTAMP)
            self._current_watermark = MAX_TIMESTAMP

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        """Upstream statuses are ignored: this operator's generator decides idleness."""

    # ------------------------------------------------------------------ periodic emission

    def emit_periodic(self) -> None:
        """Ask the generator for a periodic watermark now (called by the runtime at the end of a
        round in ``periodic="external"`` mode; allowed in both modes)."""
        generator = self.watermark_generator
        if generator is None:
            raise RuntimeError("open() the operator before emit_periodic()")
        generator.on_periodic_emit(self._emitter)

    def on_processing_time(self, timestamp: int) -> None:
        """The periodic timer: emit, then schedule the next one."""
        self._timer = None
        if self._ended:
            return
        generator = self.watermark_generator
        if generator is not None:  # always: the timer is scheduled by open()
            generator.on_periodic_emit(self._emitter)
        self._schedule_next()

    def _schedule_next(self) -> None:
        service = self.processing_time_service
        if service is None:  # pragma: no cover - open() checked it
            raise RuntimeError("periodic watermarks need a processing-time service")
        now = service.get_current_processing_time()
        self._timer = service.register_timer(
            now + self.auto_watermark_interval, self.on_processing_time
        )

    def _cancel_timer(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()

    def current_output_watermark(self) -> int:
        """The last watermark this operator emitted (``MIN_TIMESTAMP`` before any)."""
        emitter = self.emitter
        return MIN_TIMESTAMP if emitter is None else emitter.current_watermark
