"""``KeyedProcessOperator`` and ``ProcessOperator``: run a (Keyed)ProcessFunction.

Output timestamps (Flink's ``TimestampedCollector``): outputs of ``process_element`` carry the
input record's timestamp, outputs of an event-time ``on_timer`` the timer's timestamp, outputs of
a processing-time ``on_timer`` none. ``yield tag, value`` with an :class:`OutputTag` goes to a side
output, like ``ctx.output(tag, value)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from types import GeneratorType

from sparktide.core.functions import (
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessFunction,
)
from sparktide.core.output_tag import OutputTag
from sparktide.core.timerservice import TimeDomain, TimerService
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.timers.user import NonKeyedTimerService, SimpleTimerService

__all__ = [
    "KeyedContext",
    "KeyedProcessOperator",
    "NonKeyedContext",
    "ProcessOperator",
    "emit_results",
    "results_emitter",
]

USER_TIMERS = "user-timers"
_EVENT_TIME = TimeDomain.EVENT_TIME
_PROCESSING_TIME = TimeDomain.PROCESSING_TIME


def emit_results(
    operator: AbstractStreamOperator, results: Iterable[object] | None, timestamp: int | None
) -> None:
    """Send what a user function returned or yielded downstream, stamped with ``timestamp``."""
    if results is None:
        return
    if type(results) is not GeneratorType:  # a generator (``yield``) is iterated as it is
        results = _iterator(results)
    out = operator.output
    collect = out.collect
    record = StreamRecord
    for value in results:
        if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
            out.collect_side(value[0], record(value[1], timestamp))
        else:
            collect(record(value, timestamp))


Emit = Callable[[Iterable[object], "int | None"], None]
"""What sends a user function's results (not ``None``) downstream, stamped with a timestamp."""


def results_emitter(operator: AbstractStreamOperator) -> Emit:
    """:func:`emit_results` for ``operator``, bound to its current output: when that output
    coerces its records and hands them to one target (a node output's ``main_parts()``), the
    values are coerced and handed to that target here, without a call of ``output.collect``
    per value (the coercion, its error and the side outputs are the output's own). While the
    operator's output is another one (a failed-records guard holds its outputs back), results
    go through :func:`emit_results`."""
    output = operator.output
    main_parts = getattr(output, "main_parts", None)
    parts = None if main_parts is None else main_parts()
    if parts is None or parts[1] is None:
        return partial(emit_results, operator)
    target, coerce, where = parts
    collect, side, record = target.collect, output.collect_side, StreamRecord

    def emit_coerced(results: Iterable[object], timestamp: int | None) -> None:
        if operator.output is not output:
            emit_results(operator, results, timestamp)
            return
        if type(results) is not GeneratorType:
            results = _iterator(results)
        for value in results:
            if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
                side(value[0], record(value[1], timestamp))
            else:
                collect(record(coerce(value, where), timestamp))

    return emit_coerced


def _iterator(results: object) -> Iterator[object]:
    """An iterator over ``results``; a TypeError naming the mistake if it is not iterable."""
    try:
        return iter(results)  # type: ignore[call-overload,no-any-return]
    except TypeError:
        raise TypeError(
            f"a process function must yield its outputs or return an iterable (or None), got "
            f"{type(results).__name__} ({results!r}); write `yield value` instead of "
            "`return value`"
        ) from None


def _side_output(
    operator: AbstractStreamOperator, tag: OutputTag, value: object, timestamp: int | None
) -> None:
    if not isinstance(tag, OutputTag):
        raise TypeError(
            f"output_tag must be an OutputTag, got {type(tag).__name__}; create one with "
            "OutputTag('name')"
        )
    operator.output.collect_side(tag, StreamRecord(value, timestamp))


class KeyedContext(KeyedCoProcessFunction.OnTimerContext, KeyedCoProcessFunction.Context):
    """The ``ctx`` of keyed (co-)process functions: timestamp, key, timers, side outputs, time
    domain.

    The operator sets ``ts`` (what :meth:`timestamp` returns: the record's timestamp, or the
    event-time timer's, ``None`` for a processing-time timer) and ``domain`` (``None`` while
    processing an element, the timer's :class:`TimeDomain` in ``on_timer``) before each call
    of the function: plain slots, so that setting them costs no call per record.
    """

    __slots__ = ("_backend", "_op", "_timer_service", "domain", "ts")

    def __init__(self, operator: AbstractStreamOperator, timer_service: TimerService) -> None:
        self._op = operator
        self._backend = operator.keyed_state_backend  # where the current key is
        self._timer_service = timer_service
        self.ts: int | None = None
        self.domain: TimeDomain | None = None

    def timestamp(self) -> int | None:
        return self.ts

    def timer_service(self) -> TimerService:
        return self._timer_service

    def get_current_key(self) -> object:
        backend = self._backend
        return None if backend is None else backend.current_key

    def output(self, output_tag: OutputTag, value: object) -> None:
        _side_output(self._op, output_tag, value, self.ts)

    def time_domain(self) -> TimeDomain:
        domain = self.domain
        if domain is None:
            raise RuntimeError("time_domain() is only available inside on_timer")
        return domain


class KeyedProcessOperator(AbstractStreamOperator):
    """Runs a :class:`KeyedProcessFunction` with keyed state and the ``"user-timers"`` service."""

    _ctx: KeyedContext  # made by open()
    _emit: Emit  # made by open()

    def __init__(self, function: KeyedProcessFunction) -> None:
        super().__init__()
        if not callable(getattr(function, "process_element", None)):
            raise TypeError(
                f"function must be a KeyedProcessFunction (with process_element), got "
                f"{type(function).__name__}"
            )
        self.function = function

    def open(self) -> None:
        if self.keyed_state_backend is None:
            raise RuntimeError(
                "KeyedProcessFunction needs a keyed stream: apply key_by(...) before process(...)"
            )
        service = self.get_internal_timer_service(USER_TIMERS, self)
        self._ctx = KeyedContext(self, SimpleTimerService(service))
        # bound once: these run per record / per timer
        self._process = self.function.process_element
        self._on_timer = self.function.on_timer
        self._emit = results_emitter(self)
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element(self, record: StreamRecord) -> None:
        self.keyed_state_backend.set_current_key(self.key_selector(record.value))  # type: ignore[union-attr,misc]
        self.process_keyed_element(record)

    def process_keyed_element(self, record: StreamRecord) -> None:
        """Process ``record`` for the key already set in the key context."""
        ctx = self._ctx
        ts = record.timestamp
        ctx.ts = ts
        ctx.domain = None
        results = self._process(record.value, ctx)
        if results is not None:
            self._emit(results, ts)

    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ctx
        ctx.ts = timestamp
        ctx.domain = _EVENT_TIME
        results = self._on_timer(timestamp, ctx)
        if results is not None:
            self._emit(results, timestamp)

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ctx
        ctx.ts = None
        ctx.domain = _PROCESSING_TIME
        results = self._on_timer(timestamp, ctx)
        if results is not None:
            self._emit(results, None)


class NonKeyedContext(CoProcessFunction.Context):
    """The ``ctx`` of non-keyed (co-)process functions: timestamp, a timer service that refuses
    timers. The operator sets ``ts`` (the record's timestamp, what :meth:`timestamp` returns)
    before each call of the function."""

    __slots__ = ("_op", "_timer_service", "ts")

    def __init__(self, operator: AbstractStreamOperator, timer_service: TimerService) -> None:
        self._op = operator
        self._timer_service = timer_service
        self.ts: int | None = None

    def timestamp(self) -> int | None:
        return self.ts

    def timer_service(self) -> TimerService:
        return self._timer_service

    def output(self, output_tag: OutputTag, value: object) -> None:
        _side_output(self._op, output_tag, value, self.ts)


class ProcessOperator(AbstractStreamOperator):
    """Runs a :class:`ProcessFunction` on a non-keyed stream; registering timers raises."""

    _ctx: NonKeyedContext  # made by open()
    _emit: Emit  # made by open()

    def __init__(self, function: ProcessFunction) -> None:
        super().__init__()
        if not callable(getattr(function, "process_element", None)):
            raise TypeError(
                f"function must be a ProcessFunction (with process_element), got "
                f"{type(function).__name__}"
            )
        self.function = function

    def open(self) -> None:
        service = self.processing_time_service
        if service is None:
            raise RuntimeError("the operator has no processing-time service: setup() it first")
        timers = NonKeyedTimerService(service, self.current_watermark)
        self._ctx = NonKeyedContext(self, timers)
        self._emit = results_emitter(self)
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element(self, record: StreamRecord) -> None:
        ctx = self._ctx
        ts = record.timestamp
        ctx.ts = ts
        results = self.function.process_element(record.value, ctx)
        if results is not None:
            self._emit(results, ts)
