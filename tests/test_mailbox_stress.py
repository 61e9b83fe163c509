"""Stress: processing-time callbacks never overlap record processing.

A task thread runs a :class:`MailboxProcessor` whose default action processes records one at a
time, while a :class:`SystemProcessingTimeService` fires thousands of timers registered from the
test thread (before the start), from a concurrent producer thread, from records and from timer
callbacks, with timestamps ``now .. now + 50 ms``; some are cancelled, from the task thread and
from the producer thread.

An :class:`OverlapDetector` is the re-entrancy check: the record wrapper sets ``in_record``
around every record, and every callback verifies that no record is in progress, that no other
callback is, and that it runs in the task thread (records check the same the other way round).
The thread check alone is deterministic: if the service ran a callback anywhere but in the thread
that drains the mailbox, every such callback is a recorded violation.

The harness is reusable: :func:`run_stress` takes ``make_record_handler(env)`` returning the
record handler ``handler(i)`` for record ``i``. A handler built around a real operator gets
``env.service`` (to give to the operator's timer service), ``env.detector`` (its timer callback
calls ``enter_callback()`` / ``exit_callback()``) and ``env.ledger`` (for timers whose firing
the test should account for), and may pass its own ``is_complete(env)`` predicate.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sparktide.runtime.mailbox import Mailbox, MailboxProcessor
from sparktide.runtime.processing_time import ScheduledTimer, SystemProcessingTimeService

SCHEDULER_PREFIX = "sparktide-processing-time-"


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True)
class StressConfig:
    num_records: int = 200_000
    initial_timers: int = 2_000  # registered from the test thread before the task starts
    past_initial_timers: int = 20  # of those, already due (delay 0)
    external_timers: int = 1_000  # registered by a producer thread while the task runs
    register_every: int = 100  # a record registers a timer every this many records
    cancel_every: int = 3  # every this many registrations, cancel a random earlier timer
    child_generations: int = 2  # a callback of generation < this registers one more timer
    span_ms: int = 50  # timers are registered for now .. now + span_ms
    seed: int = 20_240_501
    timeout_seconds: float = 8.0


class OverlapDetector:
    """Records every moment a record and a timer callback (or two callbacks) overlap.

    Also records any record or callback running outside the task thread.
    """

    def __init__(self) -> None:
        self.task_thread: int | None = None
        self.in_record = False
        self.in_callback = False
        self.records = 0
        self.callbacks = 0
        self.callbacks_while_input_pending = 0
        self.input_exhausted = False
        self.violations: list[str] = []

    def enter_record(self) -> None:
        if threading.get_ident() != self.task_thread:
            self.violations.append(f"record {self.records} outside the task thread")
        if self.in_record or self.in_callback:
            self.violations.append(
                f"record {self.records} started with in_record={self.in_record}, "
                f"in_callback={self.in_callback}"
            )
        self.in_record = True

    def exit_record(self) -> None:
        self.in_record = False
        self.records += 1

    def enter_callback(self) -> None:
        if threading.get_ident() != self.task_thread:
            self.violations.append(
                f"callback {self.callbacks} ran in thread {threading.current_thread().name!r}"
            )
        if self.in_record or self.in_callback:
            self.violations.append(
                f"callback {self.callbacks} overlapped: in_record={self.in_record}, "
                f"in_callback={self.in_callback} (after {self.records} records)"
            )
        self.in_callback = True

    def exit_callback(self) -> None:
        self.in_callback = False
        self.callbacks += 1
        if self.records > 0 and not self.input_exhausted:
            self.callbacks_while_input_pending += 1


class TimerLedger:
    """Registers timers on the service and accounts for every firing and cancellation."""

    def __init__(
        self,
        service: SystemProcessingTimeService,
        detector: OverlapDetector,
        config: StressConfig,
    ) -> None:
        self._service = service
        self._detector = detector
        self._config = config
        self._lock = threading.Lock()
        self._rng = random.Random(config.seed + 1)  # only used in the task thread
        self.timestamps: list[int] = []
        self.handles: list[ScheduledTimer | None] = []
        self.fire_counts: list[int] = []
        self.cancelled: set[int] = set()
        self.fired_total = 0
        self.wrong_timestamps: list[tuple[int, int, int]] = []
        self.early: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.timestamps)

    def register(self, timestamp: int, generation: int = 0) -> int:
        with self._lock:
            i = len(self.timestamps)
            self.timestamps.append(timestamp)
            self.handles.append(None)
            self.fire_counts.append(0)

        def on_timer(t: int) -> None:
            self._on_timer(i, generation, t)

        handle = self._service.register_timer(timestamp, on_timer)
        self.handles[i] = handle
        return i

    def cancel(self, i: int) -> None:
        handle = self.handles[i]
        if handle is not None and handle.cancel():
            with self._lock:
                self.cancelled.add(i)

    def is_settled(self) -> bool:
        with self._lock:
            return self.fired_total + len(self.cancelled) == len(self.timestamps)

    def _on_timer(self, i: int, generation: int, t: int) -> None:
        detector = self._detector
        detector.enter_callback()
        if t != self.timestamps[i]:
            self.wrong_timestamps.append((i, self.timestamps[i], t))
        now = self._service.get_current_processing_time()
        if now <= t:
            self.early.append((t, now))
        self.fire_counts[i] += 1
        self.fired_total += 1
        if generation < self._config.child_generations:
            self.register(now + self._rng.randint(0, self._config.span_ms), generation + 1)
        detector.exit_callback()


@dataclass
class StressEnv:
    config: StressConfig
    mailbox: Mailbox
    service: SystemProcessingTimeService
    detector: OverlapDetector
    ledger: TimerLedger


@dataclass
class StressReport:
    env: StressEnv
    settled: bool
    elapsed_seconds: float
    errors: list[BaseException] = field(default_factory=list)
    scheduler: threading.Thread | None = None
    """The service's scheduler thread (started by the first registration)."""

    @property
    def timers_per_second(self) -> float:
        return self.env.ledger.fired_total / self.elapsed_seconds


RecordHandlerFactory = Callable[[StressEnv], Callable[[int], None]]


def default_record_handler(env: StressEnv) -> Callable[[int], None]:
    """A record does a little arithmetic; every few records it registers/cancels a timer."""
    config = env.config
    ledger = env.ledger
    clock = env.service.get_current_processing_time
    rng = random.Random(config.seed + 2)
    state = {"acc": 0, "registrations": 0}

    def handle(i: int) -> None:
        acc = state["acc"]
        for k in range(4):
            acc = (acc * 31 + i + k) & 0xFFFFFFFF
        state["acc"] = acc
        if i % config.register_every == 0:
            ledger.register(clock() + rng.randint(0, config.span_ms))
            state["registrations"] += 1
            if state["registrations"] % config.cancel_every == 0:
                ledger.cancel(rng.randrange(len(ledger)))

    return handle


def run_stress(
    make_record_handler: RecordHandlerFactory = default_record_handler,
    config: StressConfig | None = None,
    is_complete: Callable[[StressEnv], bool] | None = None,
) -> StressReport:
    config = config or StressConfig()
    mailbox = Mailbox()
    service = SystemProcessingTimeService(mailbox, clock=monotonic_ms)
    detector = OverlapDetector()
    env = StressEnv(config, mailbox, service, detector, TimerLedger(service, detector, config))
    ledger = env.ledger
    complete = is_complete or (lambda e: e.ledger.is_settled())
    handler = make_record_handler(env)
    producer_done = threading.Event()
    errors: list[BaseException] = []
    rng = random.Random(config.seed)

    before = set(threading.enumerate())
    now = monotonic_ms()
    for k in range(config.initial_timers):
        if k < config.past_initial_timers:
            ledger.register(now - 1 - k)
        else:
            ledger.register(now + rng.randint(0, config.span_ms))

    scheduler = next(
        (t for t in set(threading.enumerate()) - before if t.name.startswith(SCHEDULER_PREFIX)),
        None,
    )
    next_record = [0]

    def default_action() -> bool:
        i = next_record[0]
        if i >= config.num_records:
            return False
        detector.enter_record()
        handler(i)
        detector.exit_record()
        next_record[0] = i + 1
        if i == 0:
            # Make the interleaving certain rather than likely: wait until a timer is mailed
            # before the second record (it is already due, so this is a few milliseconds).
            deadline = time.monotonic() + 5.0
            while not mailbox.has_mail() and time.monotonic() < deadline:
                time.sleep(0.0002)
        return i + 1 < config.num_records

    def producer() -> None:
        prng = random.Random(config.seed + 3)
        try:
            for burst in range(20):
                for _ in range(config.external_timers // 20):
                    ledger.register(monotonic_ms() + prng.randint(0, config.span_ms))
                for _ in range(5):  # cross-thread cancellation
                    ledger.cancel(prng.randrange(len(ledger)))
                time.sleep(0.005 if burst % 2 else 0)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            producer_done.set()
            mailbox.put(lambda: None, "producer finished")  # wake the loop to re-check

    processor = MailboxProcessor(mailbox, default_action)
    settled = [False]

    def task() -> None:
        detector.task_thread = threading.get_ident()
        try:
            processor.run_until_input_exhausted()
            detector.input_exhausted = True
            settled[0] = processor.run_mail_until(
                lambda: producer_done.is_set() and complete(env),
                timeout=config.timeout_seconds,
            )
        except BaseException as exc:
            errors.append(exc)

    task_thread = threading.Thread(target=task, name="stress-task-thread")
    producer_thread = threading.Thread(target=producer, name="stress-producer")
    start = time.perf_counter()
    try:
        task_thread.start()
        producer_thread.start()
        producer_thread.join(config.timeout_seconds + 5)
        task_thread.join(config.timeout_seconds + 5)
    finally:
        elapsed = time.perf_counter() - start
        service.shutdown()
    return StressReport(env, settled[0], elapsed, errors, scheduler)


def test_processing_time_callbacks_never_overlap_records() -> None:
    report = run_stress()
    env = report.env
    detector, ledger = env.detector, env.ledger

    assert report.errors == []
    assert report.settled, "not every timer fired or was cancelled within the timeout"
    assert detector.violations == []
    assert detector.records == env.config.num_records
    # timers and records really did interleave (made certain by the gate after record 0)
    assert detector.callbacks_while_input_pending > 0

    # every registered, non-cancelled timer fired exactly once; cancelled ones never
    assert len(ledger) > 5_000
    for i, count in enumerate(ledger.fire_counts):
        assert count == (0 if i in ledger.cancelled else 1), f"timer {i} fired {count} times"
    assert ledger.fired_total == detector.callbacks
    assert ledger.cancelled, "the scenario should cancel some timers"
    assert ledger.wrong_timestamps == []  # callbacks got their registered timestamps
    assert ledger.early == []  # the clock had passed the timestamp when a callback ran

    # nothing leaked
    assert report.scheduler is not None and not report.scheduler.is_alive()
    assert not env.mailbox.has_mail()
    print(
        f"\nstress: {detector.records} records, {ledger.fired_total} timers fired "
        f"({len(ledger.cancelled)} cancelled, {detector.callbacks_while_input_pending} between "
        f"records) in {report.elapsed_seconds:.2f} s = {report.timers_per_second:,.0f} timers/s"
    )
