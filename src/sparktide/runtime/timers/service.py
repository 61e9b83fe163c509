"""``InternalTimerService``: event- and processing-time timers of an operator, per key.

Flink's ``InternalTimerServiceImpl``. Each service owns two timer queues (event time, processing
time) made by a :class:`~sparktide.runtime.timers.queue_factory.TimerQueueFactory` (default: heap
queues, :class:`KeyGroupedTimerQueue`) and calls back a :class:`Triggerable` with the key context
already set.

Event time: :meth:`advance_watermark` sets the current watermark, then fires every timer with
``timestamp <= watermark`` in ``(timestamp, insertion)`` order. A timer registered by a callback
at or before the watermark fires in the same advance.

Processing time: only the head timer is registered with the :class:`ProcessingTimeService`; a new
earlier timer cancels and replaces that registration. The service's callback receives the
*registered* timestamp ``t``, fires every timer ``<= t`` and registers the new head.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.timers.service import InternalTimerService
>>> class Ctx:  # the key context; normally the keyed state backend
...     current_key = "k"; current_key_group = 3
...     def set_current_key_and_group(self, key, kg): self.current_key = key
>>> class Fire:
...     def on_event_time(self, ts, key, ns): print("fired", ts, key, ns)
...     def on_processing_time(self, ts, key, ns): pass
>>> svc = InternalTimerService("user-timers", Ctx(), None, Fire(), KeyGroupRange(0, 127))
>>> svc.register_event_time_timer("w", 10)
>>> svc.advance_watermark(10)
fired 10 k w
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast, runtime_checkable

from sparktide.core.timerservice import TimeDomain
from sparktide.runtime.elements import MIN_TIMESTAMP
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.timers.queue import AssignedKey, K, N, TimerEntry
from sparktide.runtime.timers.queue_factory import (
    HeapTimerQueueFactory,
    TimerQueue,
    TimerQueueFactory,
)

if TYPE_CHECKING:
    from sparktide.runtime.processing_time import ProcessingTimeService, ScheduledTimer

K_contra = TypeVar("K_contra", contravariant=True)
N_contra = TypeVar("N_contra", contravariant=True)

__all__ = ["InternalTimerService", "KeyContext", "Triggerable"]


_HEAP = HeapTimerQueueFactory()


class KeyContext(Protocol[K]):
    """Where the current key lives (the keyed state backend): what timer services read when a
    timer is registered and set before a timer fires."""

    current_key: K
    current_key_group: int

    def set_current_key_and_group(self, key: K, key_group: int) -> None: ...


@runtime_checkable
class HookedKeyContext(Protocol):
    """A key context that says when setting its key is plain assignment
    (:meth:`~sparktide.runtime.state.keyed_backend.KeyedStateBackend.key_hooks`)."""

    @property
    def key_group_range(self) -> KeyGroupRange: ...

    def key_hooks(self) -> Sized: ...


def _assignment(
    key_context: object, key_group_range: KeyGroupRange
) -> tuple[AssignedKey | None, Sized]:
    """``(context, hooks)`` for firing loops that may assign the key themselves: a key context
    with hooks whose key-group range holds the service's; ``(None, ())`` otherwise."""
    if isinstance(key_context, HookedKeyContext):
        own = key_context.key_group_range
        if own.start <= key_group_range.start and key_group_range.end <= own.end:
            return cast(AssignedKey, key_context), key_context.key_hooks()
    return None, ()


class Triggerable(Protocol[K_contra, N_contra]):
    """The target of fired timers (an operator). The key context is set before each call."""

    def on_event_time(self, timestamp: int, key: K_contra, namespace: N_contra) -> None: ...

    def on_processing_time(self, timestamp: int, key: K_contra, namespace: N_contra) -> None: ...


class InternalTimerService(Generic[K, N]):
    """Timers of one operator for one name (``"user-timers"``, ``"window-timers"``, ...).

    ``queue_factory`` makes its two queues (None: heap queues). Each queue runs its own firing
    loop (``fire_until``), so the service never depends on how a queue is laid out.
    """

    __slots__ = (
        "_assign",
        "_current_watermark",
        "_event",
        "_hooks",
        "_key_context",
        "_next_timer",
        "_proc",
        "_pts",
        "_triggerable",
        "fired_event_time",
        "fired_processing_time",
        "name",
    )

    def __init__(
        self,
        name: str,
        key_context: KeyContext[K],
        processing_time_service: ProcessingTimeService,
        triggerable: Triggerable[K, N] | None,
        key_group_range: KeyGroupRange,
        queue_factory: TimerQueueFactory | None = None,
    ) -> None:
        self.name = name
        self._key_context = key_context
        self._pts = processing_time_service
        self._triggerable = triggerable
        factory = _HEAP if queue_factory is None else queue_factory
        self._event: TimerQueue[K, N] = factory.create_timer_queue(
            name, TimeDomain.EVENT_TIME, key_group_range
        )
        self._proc: TimerQueue[K, N] = factory.create_timer_queue(
            name, TimeDomain.PROCESSING_TIME, key_group_range
        )
        # set by assignment while the key context's hooks are empty (a heap backend)
        self._assign, self._hooks = _assignment(key_context, key_group_range)
        self._current_watermark = MIN_TIMESTAMP
        self._next_timer: ScheduledTimer | None = None
        self.fired_event_time = 0
        self.fired_processing_time = 0

    # ------------------------------------------------------------------ time

    def current_processing_time(self) -> int:
        return self._pts.get_current_processing_time()

    def current_watermark(self) -> int:
        return self._current_watermark

    @property
    def key_context(self) -> KeyContext[K]:
        """Where the current key is read from when a timer is registered."""
        return self._key_context

    def restore_watermark(self, watermark: int) -> None:
        """Put the service back at the watermark it had reached (restoring a checkpoint);
        timers are not fired: those at or below it were fired before the checkpoint."""
        self._current_watermark = watermark

    # ------------------------------------------------------------------ registration

    def register_event_time_timer(self, namespace: N, time: int) -> None:
        ctx = self._key_context
        self._event.add(time, ctx.current_key, namespace, ctx.current_key_group)

    def delete_event_time_timer(self, namespace: N, time: int) -> None:
        ctx = self._key_context
        self._event.remove(time, ctx.current_key, namespace, ctx.current_key_group)

    def register_processing_time_timer(self, namespace: N, time: int) -> None:
        ctx = self._key_context
        # add() is True when the timer became the head: strictly before every other timer
        if self._proc.add(time, ctx.current_key, namespace, ctx.current_key_group):
            if self._next_timer is not None:
                self._next_timer.cancel()
            self._next_timer = self._pts.register_timer(time, self._on_processing_time)

    def delete_processing_time_timer(self, namespace: N, time: int) -> None:
        # The physical registration stays: when it fires it finds no due timer and registers the
        # new head (Flink does the same).
        ctx = self._key_context
        self._proc.remove(time, ctx.current_key, namespace, ctx.current_key_group)

    # ------------------------------------------------------------------ firing

    def advance_watermark(self, time: int) -> None:
        """Set the watermark to ``time`` and fire every event-time timer ``<= time``."""
        self._current_watermark = time
        queue = self._event
        head = queue.peek()
        if head is None or head[0] > time:
            return
        fire = self._bound().on_event_time
        self.fired_event_time += queue.fire_until(
            time, self._key_context.set_current_key_and_group, fire, self._assign, self._hooks
        )

    def _on_processing_time(self, time: int) -> None:
        """Callback of the processing-time service, with the registered timestamp ``time``."""
        self._next_timer = None
        queue = self._proc
        fire = self._bound().on_processing_time
        self.fired_processing_time += queue.fire_until(
            time, self._key_context.set_current_key_and_group, fire, self._assign, self._hooks
        )
        head = queue.peek()
        if head is not None and self._next_timer is None:
            self._next_timer = self._pts.register_timer(head[0], self._on_processing_time)

    def _bound(self) -> Triggerable[K, N]:
        """The operator timers fire into (due timers and none bound is an error)."""
        triggerable = self._triggerable
        if triggerable is None:
            raise self._unbound_error()
        return triggerable

    def _unbound_error(self) -> RuntimeError:
        return RuntimeError(
            f"timer service {self.name!r} has due timers but no operator bound to fire them "
            "(restored timers whose operator never asked for the service); the restored "
            "operator must call get_internal_timer_service with the same name"
        )

    # ------------------------------------------------------------------ inspection

    def num_event_time_timers(self) -> int:
        return len(self._event)

    def num_processing_time_timers(self) -> int:
        return len(self._proc)

    def event_time_timers(self) -> TimerQueue[K, N]:
        return self._event

    def processing_time_timers(self) -> TimerQueue[K, N]:
        return self._proc

    def event_time_timers_of(self, namespace: N | None = None) -> list[int]:
        """Pending event-time timestamps of the current key in ``namespace``."""
        ctx = self._key_context
        return self._event.timers_for_namespace(ctx.current_key, namespace, ctx.current_key_group)

    def processing_time_timers_of(self, namespace: N | None = None) -> list[int]:
        """Pending processing-time timestamps of the current key in ``namespace``."""
        ctx = self._key_context
        return self._proc.timers_for_namespace(ctx.current_key, namespace, ctx.current_key_group)

    def for_each_event_time_timer(self, consumer: Callable[[N, int], object]) -> None:
        """Call ``consumer(namespace, timestamp)`` for every event-time timer, with the timer's
        key set as the current key (Flink's ``forEachEventTimeTimer``); see
        :meth:`for_each_processing_time_timer`."""
        self._for_each(self._event, consumer)

    def for_each_processing_time_timer(self, consumer: Callable[[N, int], object]) -> None:
        """Call ``consumer(namespace, timestamp)`` for every processing-time timer, with the
        timer's key set as the current key (Flink's ``forEachProcessingTimeTimer``).

        Timers are visited key group by key group, by ``(timestamp, insertion)`` within a key
        group, over the timers present when the call starts: the consumer may register or
        delete timers. The current key is left at the last timer's key.
        """
        self._for_each(self._proc, consumer)

    def _for_each(self, queue: TimerQueue[K, N], consumer: Callable[[N, int], object]) -> None:
        if not callable(consumer):
            raise TypeError(
                "consumer must be a callable (namespace, timestamp) -> None, got "
                f"{type(consumer).__name__}"
            )
        set_key = self._key_context.set_current_key_and_group
        entries = [e for kg in queue.key_group_range() for e in queue.entries_for_key_group(kg)]
        for timestamp, _seq, key, namespace, key_group in entries:
            set_key(key, key_group)
            consumer(namespace, timestamp)

    # ------------------------------------------------------------------ lifecycle / restore

    @property
    def triggerable(self) -> Triggerable[K, N] | None:
        return self._triggerable

    def start(self, triggerable: Triggerable[K, N]) -> None:
        """Bind the callback target (a restored service is created before its operator asks)."""
        if self._triggerable is not None and self._triggerable is not triggerable:
            raise ValueError(
                f"timer service {self.name!r} is already bound to another operator; use a "
                "different service name per operator"
            )
        self._triggerable = triggerable
        self._register_processing_head()

    def key_timers(
        self, key: K, key_group: int
    ) -> tuple[list[TimerEntry[K, N]], list[TimerEntry[K, N]]]:
        """The event-time and processing-time timers of ``key`` (to roll back to later)."""
        return self._event.key_timers(key, key_group), self._proc.key_timers(key, key_group)

    def reset_key_timers(
        self,
        key: K,
        key_group: int,
        saved: tuple[list[TimerEntry[K, N]], list[TimerEntry[K, N]]],
    ) -> None:
        """Put the timers of ``key`` back to ``saved`` (from :meth:`key_timers`)."""
        self._event.reset_key_timers(key, key_group, saved[0])
        self._proc.reset_key_timers(key, key_group, saved[1])
        if self._triggerable is not None:
            self._register_processing_head()

    def queues(self) -> tuple[TimerQueue[K, N], TimerQueue[K, N]]:
        """The service's two queues, ``(event time, processing time)``, as they are."""
        return self._event, self._proc

    def adopt(self, event: TimerQueue[K, N], processing: TimerQueue[K, N]) -> None:
        """Take over the queues :meth:`queues` gave of the same service of an earlier operator
        of this subtask, instead of its own empty ones (a streaming worker keeps a subtask's
        timers live between micro-batches); the processing-time head is registered as after
        :meth:`restore`."""
        if self._event or self._proc:
            raise ValueError(f"timer service {self.name!r} already holds timers")
        self._event, self._proc = event, processing
        if self._triggerable is not None:
            self._register_processing_head()

    def restore(self, event: list[TimerEntry[K, N]], processing: list[TimerEntry[K, N]]) -> None:
        """Add restored timers and re-register the processing-time head (seed 002)."""
        self._event.add_restored(event)
        self._proc.add_restored(processing)
        if self._triggerable is not None:
            self._register_processing_head()

    def _register_processing_head(self) -> None:
        head = self._proc.peek()
        if head is None:
            return
        if self._next_timer is not None:
            self._next_timer.cancel()
        self._next_timer = self._pts.register_timer(head[0], self._on_processing_time)
