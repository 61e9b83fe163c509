"""Watermark strategies: how records get event timestamps and how watermarks are generated.

A :class:`WatermarkStrategy` is an immutable description (PyFlink's
``pyflink.common.watermark_strategy``). At runtime every task — every source split, every
``TimestampsAndWatermarksOperator`` subtask — asks it for its own :class:`TimestampAssigner`
(:meth:`WatermarkStrategy.create_timestamp_assigner`) and its own :class:`WatermarkGenerator`
(:meth:`WatermarkStrategy.create_watermark_generator`).

A generator sees every record (``on_event``) and is asked periodically (``on_periodic_emit``,
every auto-watermark interval of processing time, or at the end of each round in deterministic
mode) to emit a watermark into a :class:`WatermarkOutput`. The output forwards only strictly
increasing watermarks.

>>> strategy = (
...     WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
...     .with_timestamp_assigner(lambda value, record_timestamp: value["ts"])
... )
>>> assigner = strategy.create_timestamp_assigner(None)
>>> assigner.extract_timestamp({"ts": 100}, MIN_TIMESTAMP)
100
>>> generator = strategy.create_watermark_generator(None)
>>> out = ListWatermarkOutput()
>>> generator.on_event({"ts": 100}, 100, out)
>>> generator.on_periodic_emit(out)
>>> out.events  # max_ts - 5 - 1
[94]
"""

from __future__ import annotations

import inspect
import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol, cast, runtime_checkable

from sparktide.common.not_provided import module_getattr
from sparktide.common.time import Duration, Time, positive_millis, to_millis
from sparktide.common.timestamp_assigner_supplier import TimestampAssignerSupplier
from sparktide.common.timestamps import MIN_TIMESTAMP, check_timestamp
from sparktide.common.watermark import Watermark, WatermarkStatus

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = [
    "AscendingTimestampsWatermarks",
    "BoundedOutOfOrdernessWatermarks",
    "ClockContext",
    "IngestionTimeAssigner",
    "ListWatermarkOutput",
    "NoWatermarksGenerator",
    "PunctuatedWatermarks",
    "RecordTimestampAssigner",
    "StrategyContext",
    "SupportsExtractTimestamp",
    "TimestampAssigner",
    "TimestampAssignerSupplier",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
    "WatermarksWithIdleness",
    "check_extracted_timestamp",
    "restore_generator_state",
    "snapshot_generator_state",
    "watermark_timestamp",
]

SpanLike = Duration | Time | timedelta | int


# ---------------------------------------------------------------------------------------------
# Timestamp assigners


@runtime_checkable
class SupportsExtractTimestamp(Protocol):
    """What every timestamp assigner has: a :class:`TimestampAssigner`, or any object with its
    ``extract_timestamp`` method (a strategy accepts both)."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int: ...


class TimestampAssigner(ABC):
    """Assigns an event timestamp (``int`` ms since the epoch) to each record.

    ``record_timestamp`` is the timestamp the record already carries (from the source or an
    earlier assigner), or ``MIN_TIMESTAMP`` if it has none.

    >>> class FromField(TimestampAssigner):
    ...     def extract_timestamp(self, value, record_timestamp):
    ...         return value[1]
    >>> FromField().extract_timestamp(("a", 42), MIN_TIMESTAMP)
    42
    """

    __slots__ = ()

    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The event timestamp of ``value`` in int milliseconds."""


class _FunctionTimestampAssigner(TimestampAssigner):
    """A plain callable ``(value, record_timestamp) -> int`` used as an assigner."""

    __slots__ = ("extract_timestamp",)
    # The callable itself is the method: one call per record, no extra frame. (mypy cannot
    # see an instance attribute as implementing a method, hence the ignore.)
    extract_timestamp: Callable[[Any, int], int]  # type: ignore[assignment]

    def __init__(self, function: Callable[[Any, int], int]) -> None:
        self.extract_timestamp = function

    def __repr__(self) -> str:
        return f"TimestampAssigner({self.extract_timestamp!r})"


class RecordTimestampAssigner(TimestampAssigner):
    """Keeps the timestamp the record already has (the default when no assigner is set).

    Runtimes recognise this assigner and skip the extraction: a record without a timestamp
    keeps ``None``.

    >>> RecordTimestampAssigner().extract_timestamp("x", 7)
    7
    """

    __slots__ = ()

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return record_timestamp

    def __repr__(self) -> str:
        return "RecordTimestampAssigner()"


class IngestionTimeAssigner(TimestampAssigner):
    """Stamps every record with the current processing time (ingestion time).

    >>> IngestionTimeAssigner(lambda: 1234).extract_timestamp("x", MIN_TIMESTAMP)
    1234
    """

    __slots__ = ("_clock",)

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return self._clock()

    def __repr__(self) -> str:
        return "IngestionTimeAssigner()"


def check_extracted_timestamp(result: Any, assigner: Any) -> int:
    """Validate what ``assigner`` returned: an ``int`` ms timestamp in Java's long range.

    Numpy integers are converted to ``int``; anything else (float, str, None, bool) raises a
    ``TypeError`` that names the value, its type and the assigner.

    >>> import numpy as np
    >>> check_extracted_timestamp(np.int64(5), "my_assigner")
    5
    >>> check_extracted_timestamp(5.0, "my_assigner")
    Traceback (most recent call last):
    ...
    TypeError: the timestamp returned by timestamp assigner 'my_assigner' must be an int number \
of milliseconds, got float (5.0); convert it with int(...) (milliseconds, not seconds)
    """
    if result is None:
        raise TypeError(
            f"the timestamp returned by timestamp assigner {assigner!r} must be an int number of "
            "milliseconds, got NoneType (None); return an int for every record (return "
            "record_timestamp to keep the record's own timestamp)"
        )
    return check_timestamp(result, f"the timestamp returned by timestamp assigner {assigner!r}")


# ---------------------------------------------------------------------------------------------
# Watermark outputs and generators


def watermark_timestamp(watermark: Any) -> int:
    """The int timestamp of a :class:`Watermark` or of an int (numpy ints accepted).

    >>> watermark_timestamp(Watermark(3)), watermark_timestamp(4)
    (3, 4)
    """
    if type(watermark) is int:
        return check_timestamp(watermark, "watermark")
    if isinstance(watermark, Watermark):
        return watermark.timestamp
    if watermark is None:
        raise TypeError(
            "watermark must be an int number of milliseconds or a Watermark, got NoneType (None); "
            "only call emit_watermark when there is a watermark to emit"
        )
    return check_timestamp(watermark, "watermark")


@runtime_checkable
class WatermarkOutput(Protocol):
    """Where a :class:`WatermarkGenerator` emits watermarks and idleness.

    ``emit_watermark`` takes a :class:`Watermark` or an ``int`` timestamp; only strictly
    increasing watermarks are forwarded, and emitting one marks the output active again.
    ``mark_idle`` declares that no records (and watermarks) will come for a while, so downstream
    operators do not wait for this output; ``mark_active`` ends that.

    >>> isinstance(ListWatermarkOutput(), WatermarkOutput)
    True
    """

    def emit_watermark(self, watermark: Watermark | int) -> None: ...

    def mark_idle(self) -> None: ...

    def mark_active(self) -> None: ...


class ListWatermarkOutput:
    """A :class:`WatermarkOutput` that records what it receives (for tests and examples).

    ``events`` holds int watermark timestamps and :class:`WatermarkStatus` values in order,
    exactly as emitted (no filtering).

    >>> out = ListWatermarkOutput()
    >>> out.emit_watermark(Watermark(5)); out.mark_idle(); out.emit_watermark(3)
    >>> out.events
    [5, WatermarkStatus.IDLE, 3]
    """

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[int | WatermarkStatus] = []

    def emit_watermark(self, watermark: Watermark | int) -> None:
        self.events.append(watermark_timestamp(watermark))

    def mark_idle(self) -> None:
        self.events.append(WatermarkStatus.IDLE)

    def mark_active(self) -> None:
        self.events.append(WatermarkStatus.ACTIVE)

    def watermarks(self) -> list[int]:
        """Only the watermark timestamps."""
        return [e for e in self.events if type(e) is int]


class WatermarkGenerator(ABC):
    """Generates watermarks from the records it sees and/or periodically.

    ``on_event`` is called for every record with its assigned timestamp (``MIN_TIMESTAMP`` if
    the record has none); ``on_periodic_emit`` every auto-watermark interval (default 200 ms of
    processing time) or at the end of each round. Emit through ``output``.

    >>> class EveryTenth(WatermarkGenerator):
    ...     '''Punctuated: a watermark at every timestamp divisible by 10.'''
    ...     def on_event(self, event, event_timestamp, output):
    ...         if event_timestamp % 10 == 0:
    ...             output.emit_watermark(event_timestamp)
    >>> out = ListWatermarkOutput()
    >>> g = EveryTenth()
    >>> for ts in (7, 10, 13, 20):
    ...     g.on_event(None, ts, out)
    >>> out.events
    [10, 20]
    """

    __slots__ = ()

    @abstractmethod
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        """Called for each record; may emit a watermark (punctuated generators)."""

    def on_periodic_emit(self, output: WatermarkOutput) -> None:  # noqa: B027 - optional hook
        """Called periodically; may emit a watermark (periodic generators). Default: nothing."""

    def snapshot_state(self) -> object:
        """The state a streaming run carries to the next micro-batch, whose fresh generator
        gets it through :meth:`restore_state` (it is pickled into the checkpoint).

        Default: the generator's data attributes (``__dict__`` and ``__slots__``) by name, a
        nested generator's by its own ``snapshot_state()``; callables, clocks and values that
        do not pickle are left out (the fresh generator keeps its own). Override both methods
        to choose what is carried; the built-in generators do.

        >>> class Counting(WatermarkGenerator):
        ...     def __init__(self): self.seen = 0
        ...     def on_event(self, event, event_timestamp, output): self.seen += 1
        >>> g = Counting(); g.on_event(None, 1, ListWatermarkOutput())
        >>> fresh = Counting(); fresh.restore_state(g.snapshot_state()); fresh.seen
        1
        """
        return _data_attributes(self)

    def restore_state(self, state: object) -> None:
        """Take the state :meth:`snapshot_state` returned in the previous micro-batch."""
        _apply_data_attributes(self, state)


def snapshot_generator_state(generator: object) -> object:
    """``generator.snapshot_state()``; a generator that is not a :class:`WatermarkGenerator`
    but has ``on_event`` and ``on_periodic_emit`` gets the default (its data attributes)."""
    snapshot = getattr(generator, "snapshot_state", None)
    return snapshot() if callable(snapshot) else _data_attributes(generator)


def restore_generator_state(generator: object, state: object) -> None:
    """Give ``generator`` the state :func:`snapshot_generator_state` took."""
    restore = getattr(generator, "restore_state", None)
    if callable(restore):
        restore(state)
    else:
        _apply_data_attributes(generator, state)


def _apply_data_attributes(generator: object, state: object) -> None:
    if isinstance(state, dict):
        for name, value in state.items():
            if isinstance(value, _Nested):
                restore_generator_state(getattr(generator, name), value.state)
            else:
                setattr(generator, name, value)


class _Nested:
    """The state of a generator held by another generator's attribute (default capture)."""

    __slots__ = ("state",)

    def __init__(self, state: object) -> None:
        self.state = state


def _is_clock(value: object) -> bool:
    return hasattr(value, "current_processing_time") or hasattr(
        value, "get_current_processing_time"
    )


def _data_attributes(generator: object) -> dict[str, object]:
    names: list[str] = []
    for cls in type(generator).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names.extend(getattr(generator, "__dict__", {}))
    out: dict[str, object] = {}
    for name in names:
        try:
            value = getattr(generator, name)
        except AttributeError:
            continue
        if isinstance(value, WatermarkGenerator):
            out[name] = _Nested(value.snapshot_state())
        elif callable(value) or _is_clock(value):
            continue
        else:
            try:
                pickle.dumps(value)
            except Exception:
                continue
            out[name] = value
    return out


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Periodic watermarks for records that are out of order by at most ``d`` ms.

    The watermark is ``max_ts - d - 1``; before the first record ``max_ts = MIN + d + 1``, so the
    initial watermark is ``MIN_TIMESTAMP``.

    >>> g = BoundedOutOfOrdernessWatermarks(10)
    >>> out = ListWatermarkOutput()
    >>> g.on_periodic_emit(out)
    >>> for ts in (100, 120, 90):
    ...     g.on_event(None, ts, out)
    >>> g.on_periodic_emit(out)
    >>> out.events == [MIN_TIMESTAMP, 109]
    True
    """

    __slots__ = ("_max_timestamp", "_out_of_orderness")

    def __init__(self, max_out_of_orderness_ms: int) -> None:
        d = _non_negative_millis(max_out_of_orderness_ms, "max_out_of_orderness_ms")
        self._out_of_orderness = d
        self._max_timestamp = MIN_TIMESTAMP + d + 1

    @property
    def max_out_of_orderness(self) -> int:
        return self._out_of_orderness

    @property
    def max_timestamp(self) -> int:
        """The highest timestamp seen so far (``MIN + d + 1`` before any record)."""
        return self._max_timestamp

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event_timestamp > self._max_timestamp:
            self._max_timestamp = event_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(self._max_timestamp - self._out_of_orderness - 1)

    def snapshot_state(self) -> int:
        """The highest timestamp seen (what the next micro-batch continues from)."""
        return self._max_timestamp

    def restore_state(self, state: object) -> None:
        if type(state) is not int:
            raise TypeError(f"the state of {self!r} is its max timestamp (int), got {state!r}")
        self._max_timestamp = state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_out_of_orderness_ms={self._out_of_orderness})"


class AscendingTimestampsWatermarks(BoundedOutOfOrdernessWatermarks):
    """Periodic watermarks for ascending timestamps: ``max_ts - 1`` (out-of-orderness 0).

    >>> g = AscendingTimestampsWatermarks()
    >>> out = ListWatermarkOutput()
    >>> g.on_event(None, 50, out); g.on_periodic_emit(out)
    >>> out.events
    [49]
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def __repr__(self) -> str:
        return "AscendingTimestampsWatermarks()"


class NoWatermarksGenerator(WatermarkGenerator):
    """Emits no watermarks (processing-time jobs).

    >>> out = ListWatermarkOutput()
    >>> g = NoWatermarksGenerator(); g.on_event(1, 1, out); g.on_periodic_emit(out)
    >>> out.events
    []
    """

    __slots__ = ()

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        pass

    def snapshot_state(self) -> None:
        """Stateless."""

    def restore_state(self, state: object) -> None:
        pass

    def __repr__(self) -> str:
        return "NoWatermarksGenerator()"


class PunctuatedWatermarks(WatermarkGenerator):
    """Emits, from ``on_event``, the watermark a record carries: ``watermark_of(event)``.

    ``watermark_of`` returns an int timestamp (or a :class:`Watermark`) or ``None`` when the
    record carries no watermark. Lower watermarks than the last one are dropped by the output.

    >>> g = PunctuatedWatermarks(lambda e: e.get("wm"))
    >>> out = ListWatermarkOutput()
    >>> for e in ({"v": 1}, {"v": 2, "wm": 100}, {"v": 3}):
    ...     g.on_event(e, 0, out)
    >>> out.events
    [100]
    """

    __slots__ = ("_watermark_of",)

    def __init__(self, watermark_of: Callable[[Any], Watermark | int | None]) -> None:
        if not callable(watermark_of):
            raise TypeError(
                "watermark_of must be a callable event -> int timestamp or None, got "
                f"{type(watermark_of).__name__}"
            )
        self._watermark_of = watermark_of

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        watermark = self._watermark_of(event)
        if watermark is not None:
            output.emit_watermark(watermark)

    def snapshot_state(self) -> None:
        """Stateless (the watermarks come from the records)."""

    def restore_state(self, state: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"PunctuatedWatermarks({self._watermark_of!r})"


class WatermarksWithIdleness(WatermarkGenerator):
    """Adds idleness detection to another generator (Flink's ``WatermarksWithIdleness``).

    Activity is counted per record. At each periodic emit: if records arrived since the last
    check, the inactivity timer is reset and the wrapped generator emits as usual; the first
    check without activity starts the timer (at ``clock()``); once more than ``idle_timeout_ms``
    of processing time have passed since then, the output is marked idle (once) and the wrapped
    generator is not asked to emit. The next record marks the output active again.

    >>> now = [0]
    >>> g = WatermarksWithIdleness(AscendingTimestampsWatermarks(), 100, lambda: now[0])
    >>> out = ListWatermarkOutput()
    >>> g.on_event(None, 5, out); g.on_periodic_emit(out)      # activity: emits 4
    >>> now[0] = 50; g.on_periodic_emit(out)                    # quiet: timer starts at 50
    >>> now[0] = 150; g.on_periodic_emit(out)                   # 100 ms: not yet more than 100
    >>> now[0] = 151; g.on_periodic_emit(out); g.on_periodic_emit(out)
    >>> g.on_event(None, 9, out)
    >>> out.events
    [4, 4, 4, WatermarkStatus.IDLE, WatermarkStatus.ACTIVE]
    """

    __slots__ = (
        "_clock",
        "_counter",
        "_idle",
        "_inactive_since",
        "_inner",
        "_last_counter",
        "_timeout",
    )

    def __init__(
        self, generator: WatermarkGenerator, idle_timeout_ms: int, clock: Callable[[], int]
    ) -> None:
        _check_generator(generator, "generator")
        self._timeout = positive_millis(idle_timeout_ms, "idle_timeout_ms")
        if not callable(clock):
            raise TypeError(
                "clock must be a callable returning the processing time in int ms, got "
                f"{type(clock).__name__}"
            )
        self._inner = generator
        self._clock = clock
        self._counter = 0
        self._last_counter = 0
        self._inactive_since: int | None = None
        self._idle = False

    @property
    def idle_timeout(self) -> int:
        return self._timeout

    def is_idle(self) -> bool:
        """Whether this generator has marked its output idle (and no record came since)."""
        return self._idle

    @property
    def wrapped(self) -> WatermarkGenerator:
        """The generator this one adds idleness detection to."""
        return self._inner

    def count_events(self, count: int) -> None:
        """Count ``count`` records as activity, as ``count`` calls of :meth:`on_event` do
        while the output is not idle (their timestamps go to :attr:`wrapped` separately)."""
        self._counter += count

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self._counter += 1
        if self._idle:
            self._idle = False
            output.mark_active()
        self._inner.on_event(event, event_timestamp, output)

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self._check_if_idle():
            if not self._idle:
                self._idle = True
                output.mark_idle()
        else:
            self._inner.on_periodic_emit(output)

    def _check_if_idle(self) -> bool:
        if self._counter != self._last_counter:
            self._last_counter = self._counter
            self._inactive_since = None
            return False
        now = self._clock()
        if self._inactive_since is None:
            self._inactive_since = now
            return False
        return now - self._inactive_since > self._timeout

    def snapshot_state(self) -> tuple[int, int, int | None, bool, object]:
        """The activity counters, the start of the inactivity (processing time), whether the
        output is idle, and the wrapped generator's state."""
        return (
            self._counter,
            self._last_counter,
            self._inactive_since,
            self._idle,
            snapshot_generator_state(self._inner),
        )

    def restore_state(self, state: object) -> None:
        if not (isinstance(state, tuple) and len(state) == 5):
            raise TypeError(f"not the state of {self!r}: {state!r}")
        counter, last_counter, inactive_since, idle, inner = state
        self._counter, self._last_counter = int(counter), int(last_counter)
        self._inactive_since = None if inactive_since is None else int(inactive_since)
        self._idle = bool(idle)
        restore_generator_state(self._inner, inner)

    def __repr__(self) -> str:
        return f"WatermarksWithIdleness({self._inner!r}, idle_timeout_ms={self._timeout})"


# ---------------------------------------------------------------------------------------------
# Context given to the runtime builders


@runtime_checkable
class StrategyContext(Protocol):
    """What :meth:`WatermarkStrategy.create_watermark_generator` and
    :meth:`WatermarkStrategy.create_timestamp_assigner` may ask the task for.

    >>> isinstance(ClockContext(lambda: 0), StrategyContext)
    True
    """

    def current_processing_time(self) -> int: ...


class ClockContext:
    """A :class:`StrategyContext` over a clock ``() -> int`` (ms), e.g. a processing-time
    service's ``get_current_processing_time``.

    >>> ClockContext(lambda: 42).current_processing_time()
    42
    """

    __slots__ = ("current_processing_time",)

    def __init__(self, clock: Callable[[], int]) -> None:
        if not callable(clock):
            raise TypeError(
                "clock must be a callable returning the processing time in int ms, got "
                f"{type(clock).__name__}"
            )
        self.current_processing_time = clock

    def __repr__(self) -> str:
        return f"ClockContext({self.current_processing_time!r})"


class _NoClockContext:
    """Stands in when no context was given; reading the clock explains what to pass."""

    __slots__ = ()

    def current_processing_time(self) -> int:
        raise ValueError(
            "this watermark strategy needs the processing time, but context is None; pass the "
            "task's processing-time service (or any object with current_processing_time()) as "
            "context"
        )


_NO_CLOCK = _NoClockContext()


def _as_context(context: Any) -> StrategyContext:
    """Normalize ``context`` to an object with ``current_processing_time()``."""
    if context is None:
        return _NO_CLOCK
    if isinstance(context, StrategyContext):  # has current_processing_time
        return context
    get_time = getattr(context, "get_current_processing_time", None)
    if get_time is not None:  # a ProcessingTimeService
        return ClockContext(get_time)
    raise TypeError(
        "context must have current_processing_time() (or be a processing-time service with "
        f"get_current_processing_time()), got {type(context).__name__}"
    )


# ---------------------------------------------------------------------------------------------
# Generator factories (picklable callables context -> WatermarkGenerator)


class _Fixed:
    """``context -> cls(*args)``: the factory of a built-in generator."""

    __slots__ = ("args", "cls")

    def __init__(self, cls: type[WatermarkGenerator], *args: Any) -> None:
        self.cls = cls
        self.args = args

    def __call__(self, context: Any) -> WatermarkGenerator:
        return self.cls(*self.args)


class _UserFactory:
    """``context -> factory()`` or ``factory(context)``, checking what it returns."""

    __slots__ = ("factory", "takes_context")

    def __init__(self, factory: Callable[..., WatermarkGenerator], takes_context: bool) -> None:
        self.factory = factory
        self.takes_context = takes_context

    def __call__(self, context: Any) -> WatermarkGenerator:
        generator = self.factory(context) if self.takes_context else self.factory()
        _check_generator(generator, f"what the generator factory {self.factory!r} returned")
        return generator


def _supplied(
    supplier: TimestampAssignerSupplier, context: StrategyContext
) -> SupportsExtractTimestamp:
    """The assigner ``supplier`` makes for one task, checked (a callable is wrapped)."""
    assigner = supplier.create_timestamp_assigner(context)
    if isinstance(assigner, TimestampAssigner):
        return assigner
    extract = getattr(assigner, "extract_timestamp", None)
    if callable(extract):
        return cast(SupportsExtractTimestamp, assigner)
    if callable(assigner):
        return _FunctionTimestampAssigner(assigner)
    raise TypeError(
        f"the TimestampAssignerSupplier {supplier!r} returned {type(assigner).__name__} from "
        "create_timestamp_assigner(); return a TimestampAssigner or a callable "
        "(value, record_timestamp) -> int"
    )


def _bounded(d: int) -> _Fixed:
    if d == 0:
        return _Fixed(AscendingTimestampsWatermarks)
    return _Fixed(BoundedOutOfOrdernessWatermarks, d)


def _factory_takes_context(factory: Any) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # some builtins: assume zero-arg
        return False
    required = 0
    positional = 0
    for p in signature.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
            if p.default is p.empty:
                required += 1
        elif p.kind is p.VAR_POSITIONAL:
            positional += 1
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            required = 2  # cannot be called with a context alone
    if required > 1:
        raise TypeError(
            f"factory must be callable with no argument or with one context argument, but "
            f"{factory!r} requires {required} arguments; wrap it, e.g. lambda ctx: make(...)"
        )
    return required == 1


def _check_generator(generator: Any, name: str) -> None:
    if isinstance(generator, WatermarkGenerator):
        return
    if callable(getattr(generator, "on_event", None)) and callable(
        getattr(generator, "on_periodic_emit", None)
    ):
        return
    raise TypeError(
        f"{name} must be a WatermarkGenerator (with on_event and on_periodic_emit), got "
        f"{type(generator).__name__}; subclass sparktide.common.watermark_strategy."
        "WatermarkGenerator"
    )


def _non_negative_millis(value: Any, name: str) -> int:
    ms = to_millis(value, name)
    if ms < 0:
        raise ValueError(
            f"{name} must be >= 0 ms (a bound on how late records may be), got {ms} ms; "
            "pass Duration.of_millis(0) or more"
        )
    return ms


# ---------------------------------------------------------------------------------------------
# The strategy


class WatermarkStrategy:
    """Immutable description of timestamp assignment and watermark generation (PyFlink's
    ``WatermarkStrategy``).

    Build one with a static constructor and refine it with ``with_*``; each refinement returns a
    new strategy (PyFlink's ``with_timestamp_assigner`` mutates; always use the returned value).

    - :meth:`for_monotonous_timestamps` — watermark ``max_ts - 1``;
    - :meth:`for_bounded_out_of_orderness` — watermark ``max_ts - d - 1``;
    - :meth:`no_watermarks`;
    - :meth:`for_generator` — any :class:`WatermarkGenerator` written in Python;
    - :meth:`for_punctuated` — the watermark a record carries in a field;
    - :meth:`for_ingestion_time` — records stamped with the processing time at the source.

    >>> s = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(30))
    >>> s
    WatermarkStrategy.for_monotonous_timestamps().with_idleness(30000 ms)
    >>> WatermarkStrategy.for_bounded_out_of_orderness(-1)
    Traceback (most recent call last):
    ...
    ValueError: max_out_of_orderness must be >= 0 ms (a bound on how late records may be), \
got -1 ms; pass Duration.of_millis(0) or more
    """

    __slots__ = ("_assigner", "_description", "_factory", "_idle_timeout", "_ingestion_time")
    _assigner: SupportsExtractTimestamp | TimestampAssignerSupplier | None
    _description: str
    _factory: Callable[[Any], WatermarkGenerator]
    _idle_timeout: int | None
    _ingestion_time: bool

    def __init__(
        self,
        factory: Callable[[Any], WatermarkGenerator],
        description: str,
        assigner: SupportsExtractTimestamp | TimestampAssignerSupplier | None = None,
        idle_timeout: int | None = None,
        ingestion_time: bool = False,
    ) -> None:
        # Internal: use the static constructors and with_*().
        object.__setattr__(self, "_factory", factory)
        object.__setattr__(self, "_description", description)
        object.__setattr__(self, "_assigner", assigner)
        object.__setattr__(self, "_idle_timeout", idle_timeout)
        object.__setattr__(self, "_ingestion_time", ingestion_time)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("WatermarkStrategy is immutable; with_*() returns a new strategy")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("WatermarkStrategy is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        args = (self._factory, self._description, self._assigner, self._idle_timeout)
        return (WatermarkStrategy, (*args, self._ingestion_time))

    def __repr__(self) -> str:
        return self._description

    # -- static constructors -----------------------------------------------------------------

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Ascending timestamps: periodic watermark ``max_ts - 1``."""
        return WatermarkStrategy(_bounded(0), "WatermarkStrategy.for_monotonous_timestamps()")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: SpanLike) -> WatermarkStrategy:
        """Records late by at most ``max_out_of_orderness`` (Duration, Time, timedelta or int
        ms; zero allowed): periodic watermark ``max_ts - d - 1``."""
        d = _non_negative_millis(max_out_of_orderness, "max_out_of_orderness")
        return WatermarkStrategy(
            _bounded(d), f"WatermarkStrategy.for_bounded_out_of_orderness({d} ms)"
        )

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No watermarks at all (processing-time jobs)."""
        return WatermarkStrategy(_Fixed(NoWatermarksGenerator), "WatermarkStrategy.no_watermarks()")

    @staticmethod
    def for_generator(factory: Callable[..., WatermarkGenerator]) -> WatermarkStrategy:
        """A custom generator: ``factory()`` or ``factory(context)`` returns a new
        :class:`WatermarkGenerator` for each task/split (``context.current_processing_time()``
        gives the processing time). A generator class works as a zero-arg factory.

        >>> s = WatermarkStrategy.for_generator(lambda: BoundedOutOfOrdernessWatermarks(3))
        >>> s.create_watermark_generator(None)
        BoundedOutOfOrdernessWatermarks(max_out_of_orderness_ms=3)
        """
        if not callable(factory):
            raise TypeError(
                "factory must be a callable returning a WatermarkGenerator (e.g. the generator "
                f"class, or lambda ctx: MyGenerator()), got {type(factory).__name__}"
            )
        takes_context = _factory_takes_context(factory)
        return WatermarkStrategy(
            _UserFactory(factory, takes_context), f"WatermarkStrategy.for_generator({factory!r})"
        )

    @staticmethod
    def for_punctuated(watermark_of: Callable[[Any], Watermark | int | None]) -> WatermarkStrategy:
        """Watermarks carried by the records: ``watermark_of(event)`` returns a timestamp (or
        :class:`Watermark`) to emit right after that record, or ``None``."""
        if not callable(watermark_of):
            raise TypeError(
                "watermark_of must be a callable event -> int timestamp or None, got "
                f"{type(watermark_of).__name__}"
            )
        description = f"WatermarkStrategy.for_punctuated({watermark_of!r})"
        return WatermarkStrategy(_Fixed(PunctuatedWatermarks, watermark_of), description)

    @staticmethod
    def for_ingestion_time() -> WatermarkStrategy:
        """Ingestion time: each record is stamped with the processing time at which it enters
        (the source, or the operator); watermarks ascend with those stamps (``max_ts - 1``).
        A later :meth:`with_timestamp_assigner` replaces the stamping."""
        return WatermarkStrategy(
            _bounded(0), "WatermarkStrategy.for_ingestion_time()", ingestion_time=True
        )

    # -- refinements ----------------------------------------------------------------------------

    def with_timestamp_assigner(
        self,
        timestamp_assigner: SupportsExtractTimestamp
        | Callable[[Any, int], int]
        | TimestampAssignerSupplier,
    ) -> WatermarkStrategy:
        """A copy that assigns timestamps with ``timestamp_assigner``: a
        :class:`TimestampAssigner` (or any object with its ``extract_timestamp``), a callable
        ``(value, record_timestamp) -> int``, or a :class:`TimestampAssignerSupplier`, which
        every task asks for its own assigner.

        >>> class Shifted(TimestampAssignerSupplier):
        ...     def create_timestamp_assigner(self, context):
        ...         return lambda value, record_timestamp: value + 1000
        >>> s = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Shifted())
        >>> s.create_timestamp_assigner(None).extract_timestamp(5, MIN_TIMESTAMP)
        1005
        """
        assigner: SupportsExtractTimestamp | TimestampAssignerSupplier
        if isinstance(timestamp_assigner, (TimestampAssigner, TimestampAssignerSupplier)):
            assigner = timestamp_assigner
        elif isinstance(timestamp_assigner, SupportsExtractTimestamp) and callable(
            timestamp_assigner.extract_timestamp
        ):
            assigner = timestamp_assigner  # duck-typed assigner
        elif callable(timestamp_assigner):
            assigner = _FunctionTimestampAssigner(timestamp_assigner)
        else:
            raise TypeError(
                "timestamp_assigner must be a TimestampAssigner or a callable "
                f"(value, record_timestamp) -> int, got {type(timestamp_assigner).__name__}"
            )
        description = f"{self._description}.with_timestamp_assigner({timestamp_assigner!r})"
        return WatermarkStrategy(self._factory, description, assigner, self._idle_timeout)

    def with_idleness(self, idle_timeout: SpanLike) -> WatermarkStrategy:
        """A copy whose generators mark their output idle after ``idle_timeout`` (> 0) of
        processing time without records (see :class:`WatermarksWithIdleness`)."""
        ms = positive_millis(idle_timeout, "idle_timeout")
        description = f"{self._description}.with_idleness({ms} ms)"
        return WatermarkStrategy(
            self._factory, description, self._assigner, ms, self._ingestion_time
        )

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: SpanLike,
        update_interval: SpanLike | None = None,
    ) -> WatermarkStrategy:
        """Not supported: sparktide reads splits in rounds and never pauses one, so there is
        nothing to align; remove this call (results do not depend on it)."""
        raise NotImplementedError(
            "with_watermark_alignment is not supported: splits are read in deterministic rounds "
            "and are never paused; remove the call"
        )

    # -- inspection -----------------------------------------------------------------------------

    @property
    def idle_timeout(self) -> int | None:
        """The idleness timeout in ms, or ``None``."""
        return self._idle_timeout

    @property
    def timestamp_assigner(self) -> SupportsExtractTimestamp | TimestampAssignerSupplier | None:
        """The configured assigner (or supplier of assigners), or ``None`` (records keep their
        timestamps)."""
        return self._assigner

    @property
    def is_ingestion_time(self) -> bool:
        return self._ingestion_time

    # -- runtime builders -----------------------------------------------------------------------

    def create_timestamp_assigner(self, context: Any = None) -> SupportsExtractTimestamp:
        """The assigner for one task. Without a configured assigner this is a
        :class:`RecordTimestampAssigner` (the record keeps its timestamp; a record without one is
        an error only at an event-time operator). ``context``: anything with
        ``current_processing_time()``, a processing-time service, or ``None``."""
        if isinstance(self._assigner, TimestampAssignerSupplier):
            return _supplied(self._assigner, _as_context(context))
        if self._assigner is not None:
            return self._assigner
        if self._ingestion_time:
            ctx = _as_context(context)
            if ctx is _NO_CLOCK:
                raise ValueError(
                    "for_ingestion_time() stamps records with the processing time, but context "
                    "is None; pass the task's processing-time service as context"
                )
            return IngestionTimeAssigner(ctx.current_processing_time)
        return RecordTimestampAssigner()

    def create_watermark_generator(self, context: Any = None) -> WatermarkGenerator:
        """A fresh generator for one task or split (wrapped for idleness if configured)."""
        ctx = _as_context(context)
        generator = self._factory(ctx)
        if self._idle_timeout is not None:
            if ctx is _NO_CLOCK:
                raise ValueError(
                    "with_idleness() measures processing time, but context is None; pass the "
                    "task's processing-time service as context"
                )
            generator = WatermarksWithIdleness(
                generator, self._idle_timeout, ctx.current_processing_time
            )
        return generator
