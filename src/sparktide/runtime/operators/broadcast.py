"""Broadcast operators: a keyed or non-keyed stream (input 1) meets a broadcast stream (input 2).

Flink's ``CoBroadcastWithKeyedOperator`` and ``CoBroadcastWithNonKeyedOperator``. Every subtask
receives every element of the broadcast input and runs ``process_broadcast_element`` on it with
write access to its :class:`~sparktide.runtime.operators.broadcast_state.BroadcastStateStore`;
the other input's elements (and, keyed, the timers) see the broadcast state read-only.

**The order in which broadcast and other elements meet.** An exchange stage processes its input
in position order (``runtime/execution/protocol.py``), and a broadcast element reaches every
subtask at the position its producer gave it, the same one everywhere. So every subtask, and
with it every key group, sees the broadcast elements and its own elements interleaved in one
order, which does not depend on the parallelism or the runner: rounds first (a bounded run is
one round unless ``watermark_every`` cuts it; a streaming run has one round per micro-batch),
then, inside a round, the splits in split order (the sources in the order the job created them,
each source's splits in order), each split's elements in sequence. For example, with the rules
source created before the events source, a round's rules are all in the broadcast state before
that round's events are processed. Every subtask therefore holds the same broadcast state, and
what the keyed side emits (from ``process_element`` and ``on_timer``) is the same at any
parallelism. What ``process_broadcast_element`` emits is emitted by every subtask, as in Flink,
so it is repeated once per subtask; what it emits from inside ``apply_to_keyed_state`` is
emitted once per key (the subtask that holds it), the same multiset at any parallelism.

The operator's watermark is the minimum of both inputs' (as for any two-input operator); timers
fire when it advances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from sparktide.core.broadcast import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
)
from sparktide.core.output_tag import OutputTag
from sparktide.core.state import MapStateDescriptor, State, StateDescriptor
from sparktide.core.timerservice import TimeDomain, TimerService
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.keygroups import assign_to_key_group
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.operators.broadcast_state import (
    BroadcastStateStore,
    HeapBroadcastState,
    ReadOnlyBroadcastStateView,
)
from sparktide.runtime.operators.co_process import AbstractTwoInputOperator
from sparktide.runtime.operators.process import USER_TIMERS, emit_results
from sparktide.runtime.timers.user import SimpleTimerService

__all__ = [
    "BroadcastOperator",
    "BroadcastProcessOperator",
    "KeyedBroadcastProcessOperator",
]

_EVENT_TIME = TimeDomain.EVENT_TIME
_PROCESSING_TIME = TimeDomain.PROCESSING_TIME


def _side_output(op: AbstractStreamOperator, tag: OutputTag, value: object, ts: int | None) -> None:
    if not isinstance(tag, OutputTag):
        raise TypeError(
            f"output_tag must be an OutputTag, got {type(tag).__name__}; create one with "
            "OutputTag('name')"
        )
    op.output.collect_side(tag, StreamRecord(value, ts))


class _BaseContext:
    """What every context of a broadcast function has: time, watermark, side outputs. The
    operator sets ``ts`` (what :meth:`timestamp` returns) before each call of the function."""

    __slots__ = ("_op", "_store", "ts")

    def __init__(self, op: BroadcastOperator, store: BroadcastStateStore) -> None:
        self._op = op
        self._store = store
        self.ts: int | None = None

    def timestamp(self) -> int | None:
        return self.ts

    def current_processing_time(self) -> int:
        return self._op.current_processing_time()

    def current_watermark(self) -> int:
        return self._op.current_watermark()

    def output(self, output_tag: OutputTag, value: object) -> None:
        _side_output(self._op, output_tag, value, self.ts)


class _ReadOnlyContext(_BaseContext, BroadcastProcessFunction.ReadOnlyContext):
    """``process_element``'s ctx on a non-keyed stream."""

    __slots__ = ()

    def get_broadcast_state(
        self, state_descriptor: MapStateDescriptor
    ) -> ReadOnlyBroadcastStateView:
        return self._store.read_only(state_descriptor)


class _Context(_BaseContext, BroadcastProcessFunction.Context):
    """``process_broadcast_element``'s ctx on a non-keyed stream."""

    __slots__ = ()

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> HeapBroadcastState:
        return self._store.writable(state_descriptor)


class _KeyedReadOnlyContext(_BaseContext, KeyedBroadcastProcessFunction.OnTimerContext):
    """``process_element``'s and ``on_timer``'s ctx on a keyed stream; the operator sets
    ``domain`` too (``None`` for an element, the timer's :class:`TimeDomain` in ``on_timer``)."""

    __slots__ = ("_timers", "domain")

    def __init__(
        self, op: BroadcastOperator, store: BroadcastStateStore, timers: TimerService
    ) -> None:
        super().__init__(op, store)
        self._timers = timers
        self.domain: TimeDomain | None = None

    def get_broadcast_state(
        self, state_descriptor: MapStateDescriptor
    ) -> ReadOnlyBroadcastStateView:
        return self._store.read_only(state_descriptor)

    def timer_service(self) -> TimerService:
        return self._timers

    def get_current_key(self) -> object:
        return self._op.get_current_key()

    def time_domain(self) -> TimeDomain:
        domain = self.domain
        if domain is None:
            raise RuntimeError("time_domain() is only available inside on_timer")
        return domain


class _KeyedContext(_BaseContext, KeyedBroadcastProcessFunction.Context):
    """``process_broadcast_element``'s ctx on a keyed stream."""

    __slots__ = ()

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> HeapBroadcastState:
        return self._store.writable(state_descriptor)

    def apply_to_keyed_state(
        self, state_descriptor: StateDescriptor, function: Callable[[object, State], None]
    ) -> None:
        cast(KeyedBroadcastProcessOperator, self._op).apply_to_keyed_state(
            state_descriptor, function
        )


class BroadcastOperator(AbstractTwoInputOperator):
    """What both broadcast operators share: the broadcast state store of the subtask, its
    snapshot and restore, and the broadcast input (``process_element2``)."""

    def __init__(self, descriptors: Sequence[MapStateDescriptor]) -> None:
        super().__init__()
        self.broadcast_state = BroadcastStateStore(descriptors)

    def snapshot_broadcast_state(self) -> bytes:
        """The broadcast state of this subtask (the same in every subtask)."""
        return self.broadcast_state.snapshot()

    def restore_broadcast_state(self, data: bytes) -> None:
        """Start from the broadcast state ``data`` (one subtask's :meth:`snapshot_broadcast_state`,
        any old parallelism)."""
        self.broadcast_state.restore(data)


class BroadcastProcessOperator(BroadcastOperator):
    """Runs a :class:`BroadcastProcessFunction`: input 1 the non-keyed stream, input 2 the
    broadcast stream."""

    def __init__(
        self, function: BroadcastProcessFunction, descriptors: Sequence[MapStateDescriptor]
    ) -> None:
        super().__init__(descriptors)
        self.function = function
        self._ro = _ReadOnlyContext(self, self.broadcast_state)
        self._rw = _Context(self, self.broadcast_state)

    def open(self) -> None:
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    def process_element1(self, record: StreamRecord) -> None:
        ctx = self._ro
        ts = ctx.ts = record.timestamp
        emit_results(self, self.function.process_element(record.value, ctx), ts)

    def process_element2(self, record: StreamRecord) -> None:
        ctx = self._rw
        ts = ctx.ts = record.timestamp
        emit_results(self, self.function.process_broadcast_element(record.value, ctx), ts)


class KeyedBroadcastProcessOperator(BroadcastOperator):
    """Runs a :class:`KeyedBroadcastProcessFunction`: input 1 the keyed stream (keyed state,
    timers), input 2 the broadcast stream (not keyed)."""

    _ro: _KeyedReadOnlyContext  # made by open()

    def __init__(
        self, function: KeyedBroadcastProcessFunction, descriptors: Sequence[MapStateDescriptor]
    ) -> None:
        super().__init__(descriptors)
        self.function = function
        self._rw = _KeyedContext(self, self.broadcast_state)

    def open(self) -> None:
        if self.keyed_state_backend is None:
            raise RuntimeError(
                "KeyedBroadcastProcessFunction needs a keyed stream: key_by(...) the stream you "
                "connect to the broadcast stream (or use a BroadcastProcessFunction)"
            )
        service = self.get_internal_timer_service(USER_TIMERS, self)
        self._ro = _KeyedReadOnlyContext(self, self.broadcast_state, SimpleTimerService(service))
        self.function.open(self.runtime_context)

    def close(self) -> None:
        self.function.close()
        super().close()

    # input 1: keyed
    def process_element1(self, record: StreamRecord) -> None:
        self.keyed_state_backend.set_current_key(self.key_selector(record.value))  # type: ignore[union-attr,misc]
        self.process_keyed_element1(record)

    def process_keyed_element1(self, record: StreamRecord) -> None:
        """Process ``record`` of the keyed input, its key already current."""
        ctx = self._ro
        ts = ctx.ts = record.timestamp
        ctx.domain = None
        emit_results(self, self.function.process_element(record.value, ctx), ts)

    # input 2: broadcast (no key)
    def process_element2(self, record: StreamRecord) -> None:
        ctx = self._rw
        ts = ctx.ts = record.timestamp
        emit_results(self, self.function.process_broadcast_element(record.value, ctx), ts)

    def process_keyed_element2(self, record: StreamRecord) -> None:
        """The broadcast input carries no key: as :meth:`process_element2`."""
        self.process_element2(record)

    def apply_to_keyed_state(
        self, descriptor: StateDescriptor, function: Callable[[object, State], None]
    ) -> None:
        """``function(key, state)`` for every key of this subtask with state of ``descriptor``,
        in key-group order (within a key group, in the backend's order), so each key group is
        visited in the same order at any parallelism. The current key is restored afterwards."""
        if not isinstance(descriptor, StateDescriptor):
            raise TypeError(
                "apply_to_keyed_state takes a state descriptor (e.g. ValueStateDescriptor), got "
                f"{type(descriptor).__name__}"
            )
        if not callable(function):
            raise TypeError(
                f"apply_to_keyed_state takes a function(key, state), got {type(function).__name__}"
            )
        backend = self.keyed_state_backend
        if backend is None:  # pragma: no cover - open() refuses a non-keyed setup
            raise RuntimeError("apply_to_keyed_state needs a keyed stream")
        maxp = self.setup_info.effective_max_parallelism
        keys = list(backend.get_keys(descriptor.name, None))
        groups = [assign_to_key_group(k, maxp) for k in keys]
        order = sorted(range(len(keys)), key=groups.__getitem__)
        old_key, old_group = backend.current_key, backend.current_key_group
        state = backend.get_partitioned_state(descriptor)
        try:
            for i in order:
                backend.set_current_key_and_group(keys[i], groups[i])
                function(keys[i], state)
        finally:
            if old_group is not None:
                backend.set_current_key_and_group(old_key, old_group)

    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ro
        ctx.ts = timestamp
        ctx.domain = _EVENT_TIME
        emit_results(self, self.function.on_timer(timestamp, ctx), timestamp)

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        ctx = self._ro
        ctx.ts = None
        ctx.domain = _PROCESSING_TIME
        emit_results(self, self.function.on_timer(timestamp, ctx), None)
