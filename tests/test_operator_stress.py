"""Stress: a real KeyedProcessOperator on the system clock; timers never overlap records.

The task thread runs a :class:`MailboxProcessor` whose default action feeds records to a
:class:`KeyedProcessOperator`; its function registers (and sometimes deletes) processing-time
timers a few milliseconds ahead, and its ``on_timer`` registers more. The operator's timer service
registers only its head timer with the :class:`SystemProcessingTimeService`, whose scheduler
thread may only enqueue mails. A re-entrancy detector (a flag set around every
``process_element``, checked by every ``on_timer``, plus a thread-identity check) proves no
callback ever ran inside a record or outside the task thread; a ledger proves every timer that was
registered and not deleted fired exactly once, and never before its time.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from sparktide.datastream import KeyedProcessFunction
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.mailbox import Mailbox, MailboxProcessor
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.operators.process import KeyedProcessOperator
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import SystemProcessingTimeService

NUM_RECORDS = 60_000
NUM_KEYS = 200


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Detector:
    def __init__(self) -> None:
        self.task_thread: int | None = None
        self.in_record = False
        self.violations: list[str] = []
        self.callbacks_between_records = 0
        self.input_done = False

    def check_callback(self, where: str) -> None:
        if self.in_record:
            self.violations.append(f"{where} ran inside process_element")
        if threading.get_ident() != self.task_thread:
            self.violations.append(f"{where} ran outside the task thread")
        if not self.input_done:
            self.callbacks_between_records += 1


class TimerHeavy(KeyedProcessFunction):
    def __init__(self, detector: Detector) -> None:
        self.detector = detector
        self.rng = random.Random(11)
        self.registered: set[tuple[str, int]] = set()
        self.deleted: set[tuple[str, int]] = set()
        self.fired: Counter[tuple[str, int]] = Counter()
        self.early: list[tuple[int, int]] = []

    def process_element(self, value, ctx):
        d = self.detector
        if d.in_record:
            d.violations.append("process_element re-entered")
        d.in_record = True
        try:
            ts = ctx.timer_service()
            key = ctx.get_current_key()
            if value % 3 == 0:
                t = ts.current_processing_time() + self.rng.randint(0, 20)
                ts.register_processing_time_timer(t)
                self.registered.add((key, t))
                self.deleted.discard((key, t))
            elif value % 17 == 0 and self.registered:
                # delete one of this key's pending timers, if it has one
                t = ts.current_processing_time() + self.rng.randint(0, 20)
                if (key, t) in self.registered and not self.fired[(key, t)]:
                    ts.delete_processing_time_timer(t)
                    self.deleted.add((key, t))
            return None
        finally:
            d.in_record = False

    def on_timer(self, timestamp, ctx):
        self.detector.check_callback("on_timer")
        key = ctx.get_current_key()
        now = ctx.timer_service().current_processing_time()
        if now < timestamp:
            self.early.append((timestamp, now))
        self.fired[(key, timestamp)] += 1
        if self.rng.random() < 0.2:
            t = now + self.rng.randint(0, 10)
            ctx.timer_service().register_processing_time_timer(t)
            self.registered.add((key, t))
            self.deleted.discard((key, t))
        yield key, timestamp


def test_real_operator_timers_never_overlap_records() -> None:
    detector = Detector()
    mailbox = Mailbox()
    service = SystemProcessingTimeService(mailbox, clock=monotonic_ms)
    fn = TimerHeavy(detector)
    op = KeyedProcessOperator(fn)
    op.setup(
        CollectingOutput(),
        service,
        OperatorSetup(name="stress"),
        key_selector=lambda v: f"k{v % NUM_KEYS}",
    )
    records = iter(range(NUM_RECORDS))

    def default_action() -> bool:
        i = next(records, None)
        if i is None:
            return False
        op.process_element(StreamRecord(i, None))
        if i % 500 == 0:
            time.sleep(0.001)  # let the clock move so timers come due while records flow
        return True

    def pending() -> bool:
        return op.time_service_manager.num_processing_time_timers() > 0  # type: ignore[union-attr]

    errors: list[BaseException] = []

    def task() -> None:
        detector.task_thread = threading.get_ident()
        try:
            op.open()
            processor = MailboxProcessor(mailbox, default_action)
            processor.run_until_input_exhausted()
            detector.input_done = True
            if not processor.run_mail_until(lambda: not pending(), timeout=10.0):
                errors.append(TimeoutError("timers still pending after 10 s"))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=task, name="operator-stress-task")
    thread.start()
    thread.join(30)
    service.shutdown()

    assert errors == []
    assert detector.violations == []
    assert fn.early == []
    assert detector.callbacks_between_records > 0, "timers and records did not interleave"
    live = fn.registered - fn.deleted
    assert len(live) > 5_000
    assert set(fn.fired) == live
    assert all(n == 1 for n in fn.fired.values())
    out = op.output.elements  # type: ignore[union-attr]
    assert Counter(r.value for r in out) == fn.fired
    assert all(r.timestamp is None for r in out)
