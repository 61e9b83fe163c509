"""Processing-time services: the wall clock of a task, and timers on it.

A :class:`ProcessingTimeService` tells the current processing time (``int`` milliseconds) and
runs a callback once the clock has passed a timestamp. The callback receives the *registered*
timestamp, not the time at which it actually runs, so a trigger can compare ``fire_time == t``.

Two implementations:

- :class:`ManualProcessingTimeService` — a simulated clock for tests and deterministic replays.
  Timers fire synchronously inside :meth:`~ManualProcessingTimeService.set_current_time` /
  :meth:`~ManualProcessingTimeService.advance`, in (timestamp, registration) order.
- :class:`SystemProcessingTimeService` — real time. One daemon scheduler thread waits until a
  timer is due and then *only* puts a mail into the task's
  :class:`~sparktide.runtime.mailbox.Mailbox`; the callback runs later in the task thread,
  between two records, when the :class:`~sparktide.runtime.mailbox.MailboxProcessor` drains the
  mailbox. So a processing-time callback never runs concurrently with record processing.

After :meth:`~ProcessingTimeService.quiesce` no timer fires any more (a callback that is already
running completes) and new registrations return a handle that never fires; after
:meth:`~ProcessingTimeService.shutdown` registering raises ``RuntimeError``.

>>> service = ManualProcessingTimeService(start=100)
>>> fired = []
>>> handle = service.register_timer(150, fired.append)
>>> service.advance(49)
>>> fired
[]
>>> service.advance(1)
>>> fired
[150]
>>> handle.is_done()
True
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial

from sparktide.runtime.elements import check_timestamp
from sparktide.runtime.mailbox import Mail, Mailbox

__all__ = [
    "ManualProcessingTimeService",
    "ProcessingTimeCallback",
    "ProcessingTimeService",
    "ScheduledTimer",
    "SystemProcessingTimeService",
    "TimerRecord",
    "processing_time_delay",
    "wall_clock_ms",
]

ProcessingTimeCallback = Callable[[int], None]
"""A processing-time timer callback; it receives the registered timestamp (int ms)."""

# Timer states. A timer moves PENDING -> (QUEUED ->) RUNNING -> DONE when it fires, or from
# PENDING/QUEUED to CANCELLED (cancel) or DROPPED (quiesce, shutdown, closed mailbox).
_PENDING = 0  # waiting for its time
_QUEUED = 1  # due; a mail that will run it is in the mailbox (system service only)
_RUNNING = 2  # the callback is running
_DONE = 3  # the callback has run (or raised)
_CANCELLED = 4  # cancel() prevented the firing
_DROPPED = 5  # will never fire: the service was quiesced or shut down

_STATE_NAMES = ("pending", "queued", "running", "done", "cancelled", "dropped")

_MAX_WAIT_SECONDS = 3600.0  # the scheduler re-checks at least hourly (no overflow on huge waits)
_SHUTDOWN_JOIN_SECONDS = 5.0


def processing_time_delay(timestamp: int, current_time: int) -> int:
    """Milliseconds to wait before a timer for ``timestamp`` may fire, at ``current_time``.

    Flink's rule: ``timestamp - current_time + 1`` if ``timestamp >= current_time``, else ``0``.
    The extra millisecond makes sure the clock has moved *past* the timestamp when the timer
    fires, even though the clock has only millisecond resolution.

    >>> processing_time_delay(1000, 1000)
    1
    >>> processing_time_delay(1049, 1000)
    50
    >>> processing_time_delay(990, 1000)
    0
    """
    return timestamp - current_time + 1 if timestamp >= current_time else 0


def wall_clock_ms() -> int:
    """The wall clock in int milliseconds since the epoch: the one clock of real processing
    time, injected wherever time is read (services, the streaming driver, the lock's lease)."""
    return time.time_ns() // 1_000_000


def _check_clock(clock: object) -> None:
    if clock is not None and not callable(clock):
        raise TypeError(
            "clock must be None or a callable returning the current time in int ms, got "
            f"{type(clock).__name__}"
        )


def _check_callback(callback: object) -> None:
    if not callable(callback):
        raise TypeError(
            "callback must be a callable taking the registered timestamp (int ms), got "
            f"{type(callback).__name__}"
        )


class TimerRecord:
    """A registered timer as its service keeps it: ``timestamp``, ``callback`` (dropped once
    the timer is settled) and ``state`` (see the module's timer states). Services read and change
    the fields under their lock; users hold the :class:`ScheduledTimer` handle instead."""

    __slots__ = ("callback", "state", "timestamp")

    def __init__(self, timestamp: int, callback: ProcessingTimeCallback | None, state: int) -> None:
        self.timestamp = timestamp
        self.callback = callback
        self.state = state


CancelTimer = Callable[[TimerRecord], bool]
"""A service's cancel of one of its entries: whether it prevented the firing."""


class ScheduledTimer:
    """Handle of a registered processing-time timer.

    ``cancel()`` returns ``True`` if it prevented the firing (the callback had not started) and
    ``False`` otherwise (already fired or running, already cancelled, or a timer that can never
    fire because its service was quiesced). ``is_done()`` is ``True`` once the timer is settled:
    its callback has run, it was cancelled, or it will never fire because of quiesce/shutdown.
    Handles are created by a service's ``register_timer``, never directly.

    >>> service = ManualProcessingTimeService()
    >>> handle = service.register_timer(10, print)
    >>> handle.timestamp, handle.is_done()
    (10, False)
    >>> handle.cancel(), handle.is_cancelled(), handle.is_done()
    (True, True, True)
    >>> handle.cancel()
    False
    >>> service.advance(10)  # nothing is printed
    """

    __slots__ = ("_cancel", "_entry", "timestamp")

    def __init__(self, entry: TimerRecord, cancel: CancelTimer) -> None:
        self.timestamp = entry.timestamp
        self._entry = entry
        self._cancel = cancel

    def cancel(self) -> bool:
        """Prevent the timer from firing; ``True`` if that changed anything (see class doc)."""
        return self._cancel(self._entry)

    def is_cancelled(self) -> bool:
        """Whether :meth:`cancel` prevented this timer from firing."""
        return self._entry.state == _CANCELLED

    def is_done(self) -> bool:
        """Whether the timer is settled: fired, cancelled, or never going to fire."""
        return self._entry.state >= _DONE

    def __repr__(self) -> str:
        return f"ScheduledTimer(timestamp={self.timestamp}, {_STATE_NAMES[self._entry.state]})"


class ProcessingTimeService(ABC):
    """A clock in int milliseconds plus timers on it (see the module docs for the semantics).

    Services are context managers: leaving the ``with`` block calls :meth:`shutdown`.

    >>> with ManualProcessingTimeService(start=5) as service:
    ...     service.get_current_processing_time()
    5
    >>> service.is_terminated()
    True
    """

    @abstractmethod
    def get_current_processing_time(self) -> int:
        """The current processing time in milliseconds."""

    @abstractmethod
    def register_timer(self, timestamp: int, callback: ProcessingTimeCallback) -> ScheduledTimer:
        """Call ``callback(timestamp)`` once the processing time has passed ``timestamp``.

        Returns a handle that can cancel the timer. After :meth:`quiesce` the handle never
        fires; after :meth:`shutdown` this raises ``RuntimeError``. ``timestamp`` must be an
        ``int`` (``TypeError`` otherwise).
        """

    @abstractmethod
    def quiesce(self) -> None:
        """Stop firing timers: pending ones are dropped and new ones never fire.

        A callback that is already running completes. Idempotent.
        """

    @abstractmethod
    def shutdown(self) -> None:
        """Quiesce and release resources; registering afterwards raises ``RuntimeError``.

        Idempotent.
        """

    @abstractmethod
    def is_quiesced(self) -> bool:
        """Whether :meth:`quiesce` or :meth:`shutdown` has been called."""

    @abstractmethod
    def is_terminated(self) -> bool:
        """Whether :meth:`shutdown` has been called."""

    def __enter__(self) -> ProcessingTimeService:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()


def _terminated_error(service: ProcessingTimeService) -> RuntimeError:
    return RuntimeError(
        f"cannot register a timer: this {type(service).__name__} has been shut down; "
        "register timers before shutdown() (after quiesce() they are accepted but never fire)"
    )


class _HeapTimerService(ProcessingTimeService):
    """Timer bookkeeping shared by the services: a heap of ``(sort key, sequence, entry)``.

    Cancelled timers stay in the heap until they reach its top (``_stale`` counts them), and
    the heap is compacted when they make up most of it. Quiesce and shutdown drop every pending
    timer. Subclasses decide what the sort key is and how due timers fire.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._heap: list[tuple[int, int, TimerRecord]] = []
        self._seq = itertools.count()
        self._stale = 0  # cancelled entries still in the heap
        self._quiesced = False
        self._terminated = False
        self._cancel_entry: CancelTimer = self._cancel  # bound once: every handle holds it

    def _push(self, timestamp: int, callback: ProcessingTimeCallback, key: int) -> TimerRecord:
        """Register a timer under heap order ``key``; caller holds the lock.

        Raises after shutdown; after quiesce returns an entry that never fires (not queued).
        """
        if self._terminated:
            raise _terminated_error(self)
        if self._quiesced:
            return TimerRecord(timestamp, None, _DROPPED)
        entry = TimerRecord(timestamp, callback, _PENDING)
        heapq.heappush(self._heap, (key, next(self._seq), entry))
        return entry

    def _num_pending(self) -> int:
        """Timers in the heap that were not cancelled."""
        return len(self._heap) - self._stale

    def heap_size(self) -> int:
        """Entries the service holds, cancelled ones not yet dropped included: a memory
        diagnostic (cancelled entries are compacted away once they are most of the heap)."""
        with self._lock:
            return len(self._heap)

    def quiesce(self) -> None:
        with self._lock:
            self._quiesced = True
            self._drop_all()

    def shutdown(self) -> None:
        with self._lock:
            self._quiesced = True
            self._terminated = True
            self._drop_all()

    def is_quiesced(self) -> bool:
        return self._quiesced

    def is_terminated(self) -> bool:
        return self._terminated

    def _drop_all(self) -> None:  # caller holds the lock
        for _, _, entry in self._heap:
            if entry.state == _PENDING:
                entry.state = _DROPPED
                entry.callback = None
        self._heap.clear()
        self._stale = 0

    def _cancel(self, entry: TimerRecord) -> bool:
        with self._lock:
            state = entry.state
            if state != _PENDING and state != _QUEUED:
                return False
            entry.callback = None
            if self._quiesced:  # only mailed timers can be left: they would be skipped anyway
                entry.state = _DROPPED
                return False
            entry.state = _CANCELLED
            if state == _PENDING:
                # Still in the heap: skipped when it reaches the top. Compact when cancelled
                # entries make up most of the heap.
                self._stale += 1
                heap = self._heap
                if self._stale > 32 and self._stale * 2 > len(heap):
                    heap[:] = [item for item in heap if item[2].state == _PENDING]
                    heapq.heapify(heap)
                    self._stale = 0
            return True


class ManualProcessingTimeService(_HeapTimerService):
    """A processing-time service whose clock only moves when told to.

    :meth:`set_current_time` and :meth:`advance` set the clock and then fire, synchronously in
    the calling thread, every timer with ``timestamp <= t`` in (timestamp, registration) order.
    A timer that a callback registers and that is already due fires in the same call. A timer
    registered for a time that has already passed fires on the next ``set_current_time`` /
    ``advance`` (``advance(0)`` will do). The clock never goes backwards, and neither method may
    be called from inside a timer callback.

    >>> service = ManualProcessingTimeService()
    >>> log = []
    >>> def on_timer(ts: int) -> None:
    ...     log.append(ts)
    ...     if ts == 10:  # already due: fires in the same advance
    ...         service.register_timer(ts + 5, on_timer)
    >>> for ts in (20, 10, 10, 30):
    ...     _ = service.register_timer(ts, on_timer)
    >>> service.set_current_time(25)
    >>> log
    [10, 10, 15, 15, 20]
    >>> service.num_registered_timers()
    1
    >>> service.advance(-1)
    Traceback (most recent call last):
    ...
    ValueError: delta must be >= 0 ms (processing time never goes backwards), got -1
    """

    def __init__(self, start: int = 0, clock: Callable[[], int] | None = None) -> None:
        self._now = check_timestamp(start, "start")
        _check_clock(clock)
        self._clock = clock
        super().__init__()
        self._firing = False

    def get_current_processing_time(self) -> int:
        """The manual clock (int ms), or the injected ``clock``'s time when one was given: a
        source stage on the wall clock reads real time, while its timers fire only when the
        round driver moves the manual clock."""
        clock = self._clock
        return self._now if clock is None else clock()

    def register_timer(self, timestamp: int, callback: ProcessingTimeCallback) -> ScheduledTimer:
        """Register ``callback`` for ``timestamp``; see :class:`ProcessingTimeService`."""
        timestamp = check_timestamp(timestamp, "timestamp")
        _check_callback(callback)
        with self._lock:
            entry = self._push(timestamp, callback, timestamp)
        return ScheduledTimer(entry, self._cancel_entry)

    def set_current_time(self, t: int) -> None:
        """Set the clock to ``t`` and fire every due timer in the calling thread.

        Raises ``ValueError`` if ``t`` is before the current time and ``RuntimeError`` when
        called while timers are firing (from inside a callback). An exception raised by a
        callback propagates; timers that were due but had not run yet stay registered and fire
        on the next call.
        """
        t = check_timestamp(t, "t")
        with self._lock:
            if self._firing:
                raise RuntimeError(
                    "set_current_time()/advance() called while timers are firing (from inside a "
                    "timer callback?); register a timer instead, or advance after the callback "
                    "returns"
                )
            if t < self._now:
                raise ValueError(
                    f"t must be >= the current processing time {self._now} (processing time "
                    f"never goes backwards), got {t}"
                )
            self._now = t
            self._firing = True
        try:
            self._fire_due(t)
        finally:
            self._firing = False

    def advance(self, delta: int) -> None:
        """Move the clock forward by ``delta`` ms (``>= 0``) and fire the due timers."""
        delta = check_timestamp(delta, "delta")
        if delta < 0:
            raise ValueError(
                f"delta must be >= 0 ms (processing time never goes backwards), got {delta}"
            )
        self.set_current_time(self._now + delta)

    def num_registered_timers(self) -> int:
        """How many timers are registered and have neither fired nor been cancelled."""
        return self._num_pending()

    def quiesce(self) -> None:
        """Drop every pending timer; later registrations never fire."""
        super().quiesce()

    def shutdown(self) -> None:
        """Quiesce; later registrations raise ``RuntimeError``."""
        super().shutdown()

    def __repr__(self) -> str:
        return (
            f"ManualProcessingTimeService(now={self._now}, registered_timers={self._num_pending()})"
        )

    # -- internals -------------------------------------------------------------------------

    def _fire_due(self, t: int) -> None:
        heap = self._heap
        lock = self._lock
        while True:
            with lock:
                if self._quiesced or not heap or heap[0][0] > t:
                    return
                timestamp, _, entry = heapq.heappop(heap)
                if entry.state != _PENDING:
                    self._stale -= 1  # a cancelled entry leaves the heap
                    continue
                entry.state = _RUNNING
                callback = entry.callback
                entry.callback = None
            try:
                if callback is not None:  # always: a pending timer holds its callback
                    callback(timestamp)
            finally:
                entry.state = _DONE


class SystemProcessingTimeService(_HeapTimerService):
    """Processing time from a real clock; due timers are handed to the task thread by mail.

    ``clock`` returns the current time in int milliseconds (default: the wall clock,
    ``time.time_ns() // 1_000_000``). Registering a timer computes its delay from that clock
    with :func:`processing_time_delay` (``t - now + 1`` ms, or ``0`` for a time already passed)
    and schedules it on a monotonic deadline. A single daemon scheduler thread, started on the
    first registration, sleeps on a condition variable until the earliest deadline, and then
    only *puts a mail* into ``mailbox`` for each due timer (several timers due at once are
    mailed in (timestamp, registration) order). The callback runs when the task thread drains
    the mailbox, and is skipped there if the timer was cancelled or the service quiesced in the
    meantime. If the mailbox is closed, due timers are dropped. :meth:`shutdown` stops and joins
    the scheduler thread.

    >>> from sparktide.runtime.mailbox import MailboxProcessor
    >>> mailbox = Mailbox()
    >>> service = SystemProcessingTimeService(mailbox, clock=lambda: 1_000)
    >>> fired = []
    >>> handle = service.register_timer(990, fired.append)  # in the past: due at once
    >>> processor = MailboxProcessor(mailbox, default_action=lambda: False)
    >>> processor.run_mail_until(handle.is_done, timeout=5.0)
    True
    >>> fired
    [990]
    >>> service.shutdown()
    >>> service.register_timer(2_000, fired.append)
    Traceback (most recent call last):
    ...
    RuntimeError: cannot register a timer: this SystemProcessingTimeService has been shut down; \
register timers before shutdown() (after quiesce() they are accepted but never fire)
    """

    _thread_ids = itertools.count(1)

    def __init__(self, mailbox: Mailbox, clock: Callable[[], int] | None = None) -> None:
        if not isinstance(mailbox, Mailbox):
            raise TypeError(
                f"mailbox must be a sparktide.runtime.mailbox.Mailbox, got {type(mailbox).__name__}"
            )
        _check_clock(clock)
        self._mailbox = mailbox
        self._clock: Callable[[], int] = clock if clock is not None else wall_clock_ms
        # Heap entries: (deadline in time.monotonic_ns(), registration sequence, timer).
        super().__init__()
        self._cond = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def get_current_processing_time(self) -> int:
        """The injected clock's current time (int ms)."""
        return self._clock()

    def register_timer(self, timestamp: int, callback: ProcessingTimeCallback) -> ScheduledTimer:
        """Schedule ``callback(timestamp)``; it will run in the thread that drains the mailbox."""
        timestamp = check_timestamp(timestamp, "timestamp")
        _check_callback(callback)
        now = self._clock()
        if type(now) is not int:
            raise TypeError(
                f"clock must return an int number of milliseconds, got {type(now).__name__} "
                f"({now!r}); e.g. lambda: time.time_ns() // 1_000_000"
            )
        deadline = time.monotonic_ns() + processing_time_delay(timestamp, now) * 1_000_000
        with self._lock:
            entry = self._push(timestamp, callback, deadline)
            timer = ScheduledTimer(entry, self._cancel_entry)
            if entry.state == _DROPPED:
                return timer
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run_scheduler,
                    name=f"sparktide-processing-time-{next(self._thread_ids)}",
                    daemon=True,
                )
                self._thread.start()
            elif self._heap[0][2] is entry:
                self._cond.notify()  # a new earliest deadline: wake the scheduler to re-plan
        return timer

    def quiesce(self) -> None:
        """Drop pending timers, skip already-mailed ones, let the scheduler thread exit."""
        super().quiesce()

    def shutdown(self) -> None:
        """Quiesce, refuse further registrations and join the scheduler thread."""
        super().shutdown()
        thread = self._thread  # no longer changes: registering now raises
        if thread is not None and thread is not threading.current_thread():
            thread.join(_SHUTDOWN_JOIN_SECONDS)

    def num_scheduled_timers(self) -> int:
        """Timers waiting in the scheduler (not yet due, not cancelled); for diagnostics."""
        with self._lock:
            return self._num_pending()

    def __repr__(self) -> str:
        state = "terminated" if self._terminated else "quiesced" if self._quiesced else "running"
        return f"SystemProcessingTimeService({state}, scheduled={self._num_pending()})"

    # -- scheduler thread --------------------------------------------------------------------

    def _run_scheduler(self) -> None:
        cond = self._cond
        heap = self._heap
        mailbox = self._mailbox
        while True:
            with cond:
                while True:
                    if self._quiesced:
                        return
                    if not heap:
                        cond.wait()
                        continue
                    deadline, _, head = heap[0]
                    if head.state != _PENDING:
                        heapq.heappop(heap)
                        self._stale -= 1
                        continue
                    now = time.monotonic_ns()
                    if deadline > now:
                        cond.wait(min((deadline - now) / 1e9, _MAX_WAIT_SECONDS))
                        continue
                    due: list[tuple[int, int, TimerRecord]] = []
                    while heap and heap[0][0] <= now:
                        _, seq, entry = heapq.heappop(heap)
                        if entry.state == _PENDING:
                            entry.state = _QUEUED
                            due.append((entry.timestamp, seq, entry))
                        else:
                            self._stale -= 1
                    break
            due.sort()
            for timestamp, _, entry in due:
                try:
                    mailbox.put(Mail(partial(self._fire, entry), f"timer @ {timestamp}"))
                except RuntimeError:
                    if not mailbox.is_closed():
                        raise
                    with cond:  # the task is going away: the timer will never fire
                        if entry.state == _QUEUED:
                            entry.state = _DROPPED
                            entry.callback = None

    # -- task thread ------------------------------------------------------------------------

    def _fire(self, entry: TimerRecord) -> None:
        with self._lock:
            if entry.state != _QUEUED:
                return  # cancelled after it was mailed
            callback = entry.callback
            entry.callback = None
            if self._quiesced:
                entry.state = _DROPPED
                return
            entry.state = _RUNNING
        try:
            if callback is not None:  # always: a queued timer holds its callback
                callback(entry.timestamp)
        finally:
            entry.state = _DONE

    # -- any thread ---------------------------------------------------------------------------

    def _drop_all(self) -> None:  # caller holds the lock
        super()._drop_all()
        self._cond.notify_all()  # the scheduler thread sees the quiesce and exits
