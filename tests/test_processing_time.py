"""Tests for the processing-time services (manual clock and system clock + mailbox)."""

from __future__ import annotations

import doctest
import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparktide.runtime.processing_time as pt_module
from sparktide.runtime.mailbox import Mailbox, MailboxProcessor
from sparktide.runtime.processing_time import (
    ManualProcessingTimeService,
    ProcessingTimeService,
    ScheduledTimer,
    SystemProcessingTimeService,
    processing_time_delay,
)

SCHEDULER_THREAD_PREFIX = "sparktide-processing-time-"


class Boom(Exception):
    pass


def test_doctests() -> None:
    result = doctest.testmod(pt_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


# == ManualProcessingTimeService =============================================================


def test_manual_fires_in_timestamp_then_registration_order() -> None:
    service = ManualProcessingTimeService()
    log: list[tuple[str, int]] = []
    for name, ts in [("a", 30), ("b", 10), ("c", 20), ("d", 10), ("e", 20), ("f", 10)]:
        service.register_timer(ts, lambda t, name=name: log.append((name, t)))
    service.set_current_time(100)
    assert log == [("b", 10), ("d", 10), ("f", 10), ("c", 20), ("e", 20), ("a", 30)]


def test_manual_fires_only_due_timers() -> None:
    service = ManualProcessingTimeService(start=100)
    fired: list[int] = []
    for ts in (101, 150, 151, 200):
        service.register_timer(ts, fired.append)
    service.advance(0)
    assert fired == []
    service.set_current_time(150)
    assert fired == [101, 150]
    assert service.num_registered_timers() == 2
    service.advance(50)
    assert fired == [101, 150, 151, 200]
    assert service.get_current_processing_time() == 200
    assert service.num_registered_timers() == 0


def test_manual_callbacks_receive_the_registered_timestamp() -> None:
    service = ManualProcessingTimeService()
    fired: list[tuple[int, int]] = []
    service.register_timer(7, lambda t: fired.append((t, service.get_current_processing_time())))
    service.set_current_time(1_000)
    assert fired == [(7, 1_000)]


def test_manual_timer_registered_in_callback_fires_in_same_call_when_due() -> None:
    service = ManualProcessingTimeService()
    log: list[int] = []

    def chain(t: int) -> None:
        log.append(t)
        if t < 40:
            service.register_timer(t + 10, chain)  # due within the same advance up to 35
        service.register_timer(t + 1_000, log.append)  # not due

    service.register_timer(5, chain)
    service.register_timer(20, log.append)
    service.set_current_time(35)
    assert log == [5, 15, 20, 25, 35]
    assert service.num_registered_timers() == 4 + 1  # four "+1000" timers and the chain's 45


def test_manual_timer_registered_in_callback_for_an_earlier_time_fires_next() -> None:
    service = ManualProcessingTimeService()
    log: list[int] = []
    service.register_timer(10, lambda t: service.register_timer(3, log.append))
    service.register_timer(10, log.append)
    service.set_current_time(10)
    # the new timer (3) is the earliest due one once the first callback returns
    assert log == [3, 10]


def test_manual_past_timer_registered_outside_a_call_fires_on_next_call() -> None:
    service = ManualProcessingTimeService(start=50)
    fired: list[int] = []
    service.register_timer(20, fired.append)
    assert fired == []
    service.advance(0)
    assert fired == [20]


def test_manual_cancel() -> None:
    service = ManualProcessingTimeService()
    fired: list[int] = []
    keep = service.register_timer(10, fired.append)
    drop = service.register_timer(10, fired.append)
    assert drop.cancel() is True
    assert drop.is_cancelled() and drop.is_done()
    assert drop.cancel() is False
    assert service.num_registered_timers() == 1
    service.set_current_time(10)
    assert fired == [10]
    assert keep.is_done() and not keep.is_cancelled()
    assert keep.cancel() is False  # already fired
    assert "done" in repr(keep) and "cancelled" in repr(drop)


def test_manual_cancel_of_a_due_timer_from_an_earlier_callback() -> None:
    service = ManualProcessingTimeService()
    fired: list[str] = []
    handles: dict[str, ScheduledTimer] = {}
    results: list[bool] = []

    def first(t: int) -> None:
        fired.append("first")
        results.append(handles["second"].cancel())
        results.append(handles["first"].cancel())  # itself: running, too late

    handles["first"] = service.register_timer(5, first)
    handles["second"] = service.register_timer(5, lambda t: fired.append("second"))
    service.set_current_time(5)
    assert fired == ["first"]
    assert results == [True, False]


def test_manual_many_cancellations_compact_and_keep_order() -> None:
    service = ManualProcessingTimeService()
    fired: list[int] = []
    handles = [service.register_timer(ts, fired.append) for ts in range(1_000)]
    for h in handles:
        if h.timestamp % 10:
            assert h.cancel()
    assert service.num_registered_timers() == 100
    assert service.heap_size() < 1_000  # cancelled entries were compacted away
    service.set_current_time(2_000)
    assert fired == list(range(0, 1_000, 10))


def test_manual_quiesce_drops_pending_and_new_timers() -> None:
    service = ManualProcessingTimeService()
    fired: list[int] = []
    pending = service.register_timer(10, fired.append)
    service.quiesce()
    assert service.is_quiesced() and not service.is_terminated()
    assert service.num_registered_timers() == 0
    assert pending.is_done() and not pending.is_cancelled()
    assert pending.cancel() is False
    late = service.register_timer(5, fired.append)
    assert isinstance(late, ScheduledTimer)
    assert late.is_done() and late.cancel() is False
    service.set_current_time(100)  # the clock still works
    assert fired == []
    assert service.get_current_processing_time() == 100
    service.quiesce()  # idempotent


def test_manual_quiesce_inside_a_callback_lets_it_complete() -> None:
    service = ManualProcessingTimeService()
    log: list[str] = []

    def quiescing(t: int) -> None:
        log.append("start")
        service.quiesce()
        log.append("end")

    service.register_timer(1, quiescing)
    service.register_timer(1, lambda t: log.append("never"))
    service.set_current_time(1)
    assert log == ["start", "end"]


def test_manual_shutdown_refuses_registration() -> None:
    service = ManualProcessingTimeService()
    fired: list[int] = []
    service.register_timer(1, fired.append)
    service.shutdown()
    assert service.is_terminated() and service.is_quiesced()
    with pytest.raises(RuntimeError, match="shut down"):
        service.register_timer(5, fired.append)
    service.shutdown()  # idempotent
    service.advance(10)
    assert fired == []


def test_manual_context_manager_shuts_down() -> None:
    with ManualProcessingTimeService() as service:
        assert isinstance(service, ProcessingTimeService)
    assert service.is_terminated()


def test_manual_time_never_goes_backwards() -> None:
    service = ManualProcessingTimeService(start=10)
    with pytest.raises(ValueError, match=r"t must be >= the current processing time 10"):
        service.set_current_time(9)
    with pytest.raises(ValueError, match="delta must be >= 0"):
        service.advance(-1)
    service.set_current_time(10)  # staying put is fine
    assert service.get_current_processing_time() == 10


def test_manual_reentrant_advance_is_refused() -> None:
    service = ManualProcessingTimeService()
    errors: list[BaseException] = []

    def reenter(t: int) -> None:
        try:
            service.advance(1)
        except RuntimeError as exc:
            errors.append(exc)

    service.register_timer(1, reenter)
    service.set_current_time(1)
    assert len(errors) == 1 and "while timers are firing" in str(errors[0])
    assert service.get_current_processing_time() == 1
    service.advance(1)  # usable afterwards


def test_manual_callback_exception_propagates_and_remaining_timers_survive() -> None:
    service = ManualProcessingTimeService()
    fired: list[int] = []

    def fail(t: int) -> None:
        raise Boom(f"timer {t} failed")

    service.register_timer(1, fired.append)
    failing = service.register_timer(2, fail)
    service.register_timer(3, fired.append)
    with pytest.raises(Boom, match="timer 2 failed"):
        service.set_current_time(5)
    assert fired == [1]
    assert failing.is_done()
    assert service.num_registered_timers() == 1
    service.advance(0)
    assert fired == [1, 3]


@pytest.mark.parametrize("bad", [1.5, "10", None, True])
def test_manual_type_errors_name_the_argument(bad: object) -> None:
    service = ManualProcessingTimeService()
    with pytest.raises(TypeError, match="timestamp must be an int"):
        service.register_timer(bad, print)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="t must be an int"):
        service.set_current_time(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="delta must be an int"):
        service.advance(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="start must be an int"):
        ManualProcessingTimeService(start=bad)  # type: ignore[arg-type]


def test_manual_callback_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callback must be a callable"):
        ManualProcessingTimeService().register_timer(1, 42)  # type: ignore[arg-type]


def test_manual_timestamp_range_is_a_java_long() -> None:
    service = ManualProcessingTimeService()
    with pytest.raises(ValueError, match="timestamp must fit a 64-bit signed long"):
        service.register_timer(2**63, print)
    service.register_timer(2**63 - 1, print)  # MAX is a valid timer time


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("register"), st.integers(0, 60)),
        st.tuples(st.just("cancel"), st.integers(0, 200)),
        st.tuples(st.just("advance"), st.integers(0, 15)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_manual_matches_a_naive_model(ops: list[tuple[str, int]]) -> None:
    """Against a model that sorts all registrations: same firings, same pending count."""
    service = ManualProcessingTimeService()
    fired: list[int] = []
    handles: list[ScheduledTimer] = []
    model: list[tuple[int, int, str]] = []  # (timestamp, id, state) with state pending/...
    expected: list[int] = []
    now = 0
    for op, arg in ops:
        if op == "register":
            i = len(handles)
            handles.append(service.register_timer(arg, lambda t, i=i: fired.append(i)))
            model.append((arg, i, "pending"))
        elif op == "cancel" and handles:
            i = arg % len(handles)
            ts, _, state = model[i]
            assert handles[i].cancel() is (state == "pending")
            if state == "pending":
                model[i] = (ts, i, "cancelled")
        elif op == "advance":
            now += arg
            service.advance(arg)
            due = sorted((ts, i) for ts, i, state in model if state == "pending" and ts <= now)
            for ts, i in due:
                model[i] = (ts, i, "fired")
                expected.append(i)
        assert fired == expected
        pending = sum(1 for _, _, state in model if state == "pending")
        assert service.num_registered_timers() == pending


# == processing_time_delay ===================================================================


@pytest.mark.parametrize(
    ("timestamp", "now", "delay"),
    [(1000, 1000, 1), (1001, 1000, 2), (1049, 1000, 50), (999, 1000, 0), (-5, 1000, 0)],
)
def test_delay_rule(timestamp: int, now: int, delay: int) -> None:
    assert processing_time_delay(timestamp, now) == delay


# == SystemProcessingTimeService =============================================================


def scheduler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(SCHEDULER_THREAD_PREFIX)]


def new_scheduler_thread(before: set[threading.Thread]) -> threading.Thread:
    """The one scheduler thread started since ``before`` was taken."""
    (thread,) = set(scheduler_threads()) - before
    return thread


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True


@pytest.fixture
def mailbox() -> Mailbox:
    return Mailbox()


@pytest.fixture
def make_service(mailbox: Mailbox):
    services: list[SystemProcessingTimeService] = []

    def make(clock: Callable[[], int] | None = None) -> SystemProcessingTimeService:
        service = SystemProcessingTimeService(mailbox, clock=clock)
        services.append(service)
        return service

    yield make
    for service in services:
        service.shutdown()


def test_system_uses_injected_clock(make_service) -> None:
    ticks = iter([7, 8])
    service = make_service(lambda: next(ticks))
    assert service.get_current_processing_time() == 7
    assert service.get_current_processing_time() == 8


def test_system_default_clock_is_wall_clock_ms(make_service) -> None:
    service = make_service()
    before = time.time_ns() // 1_000_000
    now = service.get_current_processing_time()
    after = time.time_ns() // 1_000_000
    assert isinstance(now, int) and before <= now <= after


def test_system_past_timer_fires_promptly_and_only_when_the_mailbox_is_drained(
    mailbox: Mailbox, make_service
) -> None:
    service = make_service(lambda: 1_000)
    fired: list[int] = []
    handle = service.register_timer(900, fired.append)  # delay 0
    assert wait_for(mailbox.has_mail, timeout=2.0)  # mailed promptly ...
    time.sleep(0.005)
    assert fired == []  # ... but not run by the scheduler thread
    assert not handle.is_done()
    MailboxProcessor(mailbox, lambda: False).run_until_input_exhausted()
    assert fired == [900]
    assert handle.is_done()


def test_system_delay_is_t_minus_now_plus_one(mailbox: Mailbox, make_service) -> None:
    service = make_service(lambda: 1_000)  # a clock that stands still
    arrivals: dict[int, float] = {}
    processor = MailboxProcessor(mailbox, lambda: False)
    start = time.monotonic()
    for ts in (1_079, 1_000, 1_039):
        service.register_timer(ts, lambda t: arrivals.__setitem__(t, time.monotonic()))
    assert processor.run_mail_until(lambda: len(arrivals) == 3, timeout=5.0)
    # the scheduler never mails a timer before its delay has passed (a deterministic bound)
    assert arrivals[1_000] - start >= 0.001
    assert arrivals[1_039] - start >= 0.040
    assert arrivals[1_079] - start >= 0.080


def test_system_clock_has_passed_the_timestamp_when_the_callback_runs(
    mailbox: Mailbox, make_service
) -> None:
    service = make_service(lambda: time.monotonic_ns() // 1_000_000)
    seen: list[tuple[int, int]] = []
    now = service.get_current_processing_time()
    for ts in range(now, now + 20, 2):
        service.register_timer(
            ts, lambda t: seen.append((t, service.get_current_processing_time()))
        )
    processor = MailboxProcessor(mailbox, lambda: False)
    assert processor.run_mail_until(lambda: len(seen) == 10, timeout=5.0)
    assert [t for t, _ in seen] == list(range(now, now + 20, 2))
    assert all(clock > t for t, clock in seen)


def test_system_callback_runs_in_the_task_thread(mailbox: Mailbox, make_service) -> None:
    service = make_service()
    now = service.get_current_processing_time()
    ran_in: list[int] = []
    task_ident: list[int] = []
    before = set(scheduler_threads())
    for ts in (now - 1, now, now + 3):
        service.register_timer(ts, lambda t: ran_in.append(threading.get_ident()))
    scheduler = new_scheduler_thread(before)
    processor = MailboxProcessor(mailbox, lambda: False)

    def task() -> None:
        task_ident.append(threading.get_ident())
        processor.run_mail_until(lambda: len(ran_in) == 3, timeout=5.0)

    thread = threading.Thread(target=task, name="task-thread")
    thread.start()
    thread.join(5.0)
    assert ran_in == task_ident * 3
    assert scheduler.ident not in ran_in


def test_system_timers_with_same_timestamp_fire_in_registration_order(
    mailbox: Mailbox, make_service
) -> None:
    service = make_service(lambda: 5_000)
    order: list[int] = []
    for i in range(50):
        service.register_timer(5_002, lambda t, i=i: order.append(i))
    processor = MailboxProcessor(mailbox, lambda: False)
    assert processor.run_mail_until(lambda: len(order) == 50, timeout=5.0)
    assert order == list(range(50))


def test_system_cancel_before_due_and_after_mailing(mailbox: Mailbox, make_service) -> None:
    service = make_service(lambda: 1_000)
    fired: list[str] = []
    future = service.register_timer(1_020, lambda t: fired.append("future"))
    assert future.cancel() is True
    assert future.is_cancelled() and future.is_done()
    mailed = service.register_timer(0, lambda t: fired.append("mailed"))
    assert wait_for(mailbox.has_mail)
    assert mailed.cancel() is True  # the mail is still in the mailbox: it will be skipped
    marker = service.register_timer(1_030, lambda t: fired.append("marker"))
    processor = MailboxProcessor(mailbox, lambda: False)
    assert processor.run_mail_until(marker.is_done, timeout=5.0)
    assert fired == ["marker"]
    assert mailed.cancel() is False and future.cancel() is False and marker.cancel() is False


def test_system_many_cancellations_are_compacted(mailbox: Mailbox, make_service) -> None:
    service = make_service(lambda: 0)
    fired: list[int] = []
    handles = [service.register_timer(ts, fired.append) for ts in range(10, 1_010)]
    for h in handles:
        if h.timestamp % 10:
            assert h.cancel()
    assert service.num_scheduled_timers() <= 100
    assert service.heap_size() < 1_000  # compacted, not just skipped
    for h in handles:
        if h.timestamp > 30:
            h.cancel()
    processor = MailboxProcessor(mailbox, lambda: False)
    assert processor.run_mail_until(lambda: len(fired) == 3, timeout=5.0)
    assert fired == [10, 20, 30]


def test_system_quiesce(mailbox: Mailbox, make_service) -> None:
    service = make_service(lambda: 1_000)
    fired: list[int] = []
    before = set(scheduler_threads())
    mailed = service.register_timer(0, fired.append)
    thread = new_scheduler_thread(before)
    assert wait_for(mailbox.has_mail)
    pending = service.register_timer(1_200, fired.append)
    service.quiesce()
    assert service.is_quiesced() and not service.is_terminated()
    assert pending.is_done() and not pending.is_cancelled() and pending.cancel() is False
    never = service.register_timer(0, fired.append)  # accepted, never fires
    assert never.is_done() and never.cancel() is False
    MailboxProcessor(mailbox, lambda: False).run_until_input_exhausted()
    assert fired == []  # the already-mailed timer was skipped in the task thread
    assert mailed.is_done() and not mailed.is_cancelled()
    assert wait_for(lambda: not thread.is_alive(), timeout=2.0)  # the scheduler exited
    assert service.get_current_processing_time() == 1_000


def test_system_quiesce_from_inside_a_callback_lets_it_complete(
    mailbox: Mailbox, make_service
) -> None:
    service = make_service(lambda: 1_000)
    log: list[str] = []

    def quiescing(t: int) -> None:
        log.append("start")
        service.quiesce()
        log.append("end")

    first = service.register_timer(5, quiescing)
    second = service.register_timer(5, lambda t: log.append("never"))
    assert wait_for(lambda: len(mailbox) == 2)
    MailboxProcessor(mailbox, lambda: False).run_until_input_exhausted()
    assert log == ["start", "end"]
    assert first.is_done() and second.is_done()


def test_system_shutdown_stops_the_thread_and_refuses_registration(mailbox: Mailbox) -> None:
    before = set(scheduler_threads())
    service = SystemProcessingTimeService(mailbox, clock=lambda: 0)
    assert set(scheduler_threads()) == before  # the thread starts on first use
    pending = service.register_timer(10_000, print)
    thread = new_scheduler_thread(before)
    assert thread.is_alive() and thread.daemon
    service.shutdown()
    assert not thread.is_alive()
    assert service.is_terminated() and service.is_quiesced()
    assert pending.is_done() and not pending.is_cancelled()
    with pytest.raises(RuntimeError, match="has been shut down"):
        service.register_timer(1, print)
    service.shutdown()  # idempotent


def test_system_context_manager_shuts_down(mailbox: Mailbox) -> None:
    before = set(scheduler_threads())
    with SystemProcessingTimeService(mailbox) as service:
        service.register_timer(service.get_current_processing_time() + 60_000, print)
        thread = new_scheduler_thread(before)
    assert service.is_terminated()
    assert not thread.is_alive()


def test_system_closed_mailbox_drops_due_timers(mailbox: Mailbox, make_service) -> None:
    errors: list[object] = []
    old_hook = threading.excepthook
    threading.excepthook = errors.append
    try:
        service = make_service(lambda: 1_000)
        mailbox.close()
        handle = service.register_timer(1_002, print)
        assert wait_for(handle.is_done, timeout=2.0)
        assert not handle.is_cancelled()
        later = service.register_timer(1_001, print)  # the scheduler thread is still healthy
        assert wait_for(later.is_done, timeout=2.0)
    finally:
        threading.excepthook = old_hook
    assert errors == []


def test_system_callback_exception_propagates_out_of_the_loop(
    mailbox: Mailbox, make_service
) -> None:
    service = make_service(lambda: 1_000)

    def fail(t: int) -> None:
        raise Boom(f"timer {t} failed")

    handle = service.register_timer(10, fail)
    processor = MailboxProcessor(mailbox, lambda: False)
    with pytest.raises(Boom, match="timer 10 failed"):
        processor.run_mail_until(lambda: False, timeout=5.0)
    assert handle.is_done()


def test_system_validates_arguments(mailbox: Mailbox, make_service) -> None:
    with pytest.raises(TypeError, match="mailbox must be"):
        SystemProcessingTimeService(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clock must be None or a callable"):
        SystemProcessingTimeService(mailbox, clock=5)  # type: ignore[arg-type]
    service = make_service(lambda: 1.5)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="clock must return an int"):
        service.register_timer(1, print)
    service = make_service(lambda: 0)
    with pytest.raises(TypeError, match="timestamp must be an int"):
        service.register_timer(1.0, print)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callback must be a callable"):
        service.register_timer(1, "print")  # type: ignore[arg-type]


def test_system_far_future_timer_does_not_overflow_the_wait(make_service) -> None:
    errors: list[object] = []
    old_hook = threading.excepthook
    threading.excepthook = errors.append
    try:
        service = make_service(lambda: 0)
        before = set(scheduler_threads())
        service.register_timer(2**63 - 1, print)
        thread = new_scheduler_thread(before)
        time.sleep(0.01)
        service.shutdown()
    finally:
        threading.excepthook = old_hook
    assert errors == []
    assert not thread.is_alive()
