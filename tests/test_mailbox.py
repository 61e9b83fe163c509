"""Tests for the task mailbox and the mailbox processor loop."""

from __future__ import annotations

import doctest
import threading
import time

import pytest

import sparktide.runtime.mailbox as mailbox_module
from sparktide.runtime.mailbox import Mail, Mailbox, MailboxProcessor


class Boom(Exception):
    pass


def make_input(n: int, log: list[object]):
    """A default action that 'processes' records 0..n-1 (one per call) into ``log``."""
    state = {"next": 0}

    def process_one() -> bool:
        i = state["next"]
        if i >= n:
            return False
        state["next"] = i + 1
        log.append(i)
        return state["next"] < n

    return process_one


def test_doctests() -> None:
    result = doctest.testmod(mailbox_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


# -- Mail -----------------------------------------------------------------------------------


def test_mail_runs_and_describes() -> None:
    out: list[int] = []
    mail = Mail(lambda: out.append(1), "append one")
    mail()
    mail.run()
    assert out == [1, 1]
    assert mail.description == "append one"
    assert repr(mail) == "Mail('append one')"


def test_mail_rejects_non_callable_and_bad_description() -> None:
    with pytest.raises(TypeError, match="mail must be a callable"):
        Mail(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description must be a str"):
        Mail(lambda: None, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mail must be a callable"):
        Mailbox().put("not callable")  # type: ignore[arg-type]


# -- Mailbox ----------------------------------------------------------------------------------


def test_fifo_order_and_descriptions() -> None:
    mailbox = Mailbox()
    for i in range(5):
        mailbox.put(lambda i=i: None, f"mail {i}")
    assert mailbox.has_mail()
    assert len(mailbox) == 5
    taken = [mailbox.try_take() for _ in range(5)]
    assert [m.description for m in taken if m is not None] == [f"mail {i}" for i in range(5)]
    assert not mailbox.has_mail()
    assert mailbox.try_take() is None


def test_put_keeps_a_mail_object_as_is() -> None:
    mailbox = Mailbox()
    mail = Mail(lambda: None, "as is")
    mailbox.put(mail, "ignored")
    assert mailbox.try_take() is mail


def test_take_times_out_with_none() -> None:
    mailbox = Mailbox()
    start = time.monotonic()
    assert mailbox.take(0.02) is None
    assert time.monotonic() - start >= 0.02
    assert mailbox.take(0) is None


def test_take_validates_timeout() -> None:
    mailbox = Mailbox()
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        mailbox.take(-1)
    with pytest.raises(TypeError, match="timeout must be a number"):
        mailbox.take("1")  # type: ignore[arg-type]


def test_take_wakes_up_when_another_thread_puts() -> None:
    mailbox = Mailbox()
    producer = threading.Timer(0.01, lambda: mailbox.put(lambda: None, "late"))
    producer.start()
    try:
        mail = mailbox.take(5.0)
    finally:
        producer.join()
    assert mail is not None and mail.description == "late"


def test_close_returns_pending_and_refuses_puts() -> None:
    mailbox = Mailbox()
    mailbox.put(lambda: None, "a")
    mailbox.put(lambda: None, "b")
    pending = mailbox.close()
    assert [m.description for m in pending] == ["a", "b"]
    assert mailbox.is_closed()
    assert not mailbox.has_mail()
    assert mailbox.try_take() is None
    with pytest.raises(RuntimeError, match="closed mailbox"):
        mailbox.put(lambda: None, "c")
    with pytest.raises(RuntimeError, match="closed mailbox"):
        mailbox.take(0.01)
    assert mailbox.close() == []


def test_close_wakes_a_blocked_taker() -> None:
    mailbox = Mailbox()
    errors: list[BaseException] = []
    entered = threading.Event()

    def taker() -> None:
        entered.set()
        try:
            mailbox.take(None)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=taker)
    thread.start()
    entered.wait(5.0)
    time.sleep(0.01)
    mailbox.close()
    thread.join(5.0)
    assert not thread.is_alive()
    assert len(errors) == 1 and "closed" in str(errors[0])


def test_many_producers_every_mail_runs_once_in_per_producer_order() -> None:
    producers, per_producer = 8, 3_000
    mailbox = Mailbox()
    runs: list[tuple[int, int]] = []
    run_threads: set[int] = set()
    start = threading.Barrier(producers + 1)

    def run(p: int, i: int) -> None:
        runs.append((p, i))
        run_threads.add(threading.get_ident())

    def produce(p: int) -> None:
        start.wait()
        for i in range(per_producer):
            mailbox.put(lambda p=p, i=i: run(p, i), f"producer {p} mail {i}")

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    processor = MailboxProcessor(mailbox, lambda: False)
    start.wait()
    done = processor.run_mail_until(lambda: len(runs) == producers * per_producer, timeout=10.0)
    for t in threads:
        t.join()
    assert done
    assert not mailbox.has_mail()
    assert len(runs) == producers * per_producer
    assert len(set(runs)) == len(runs)  # exactly once
    for p in range(producers):
        assert [i for q, i in runs if q == p] == list(range(per_producer))
    assert run_threads == {threading.get_ident()}  # mails ran in the thread that drained


# -- MailboxProcessor -------------------------------------------------------------------------


def test_processor_runs_pending_mails_before_each_unit_of_input() -> None:
    mailbox = Mailbox()
    log: list[object] = []
    records = make_input(4, log)

    def default_action() -> bool:
        more = records()
        if log[-1] == 1:
            mailbox.put(lambda: log.append("m1"), "after record 1")
            mailbox.put(lambda: log.append("m2"), "also after record 1")
        return more

    mailbox.put(lambda: log.append("m0"), "before any record")
    processor = MailboxProcessor(mailbox, default_action)
    processor.run_until_input_exhausted()
    assert log == ["m0", 0, 1, "m1", "m2", 2, 3]
    assert processor.is_input_exhausted()


def test_mail_put_by_a_mail_runs_in_the_same_drain() -> None:
    mailbox = Mailbox()
    log: list[object] = []
    records = make_input(2, log)
    mailbox.put(lambda: mailbox.put(lambda: log.append("child"), "child"), "parent")
    MailboxProcessor(mailbox, records).run_until_input_exhausted()
    assert log == ["child", 0, 1]


def test_mails_pending_at_exhaustion_are_run() -> None:
    mailbox = Mailbox()
    log: list[object] = []

    def last_record() -> bool:
        log.append("record")
        mailbox.put(lambda: log.append("mail"), "after the last record")
        return False

    MailboxProcessor(mailbox, last_record).run_until_input_exhausted()
    assert log == ["record", "mail"]
    assert not mailbox.has_mail()


def test_exception_in_mail_propagates_and_loop_can_resume() -> None:
    mailbox = Mailbox()
    log: list[object] = []

    def fail() -> None:
        raise Boom("mail failed")

    mailbox.put(fail, "failing")
    mailbox.put(lambda: log.append("next mail"), "next")
    processor = MailboxProcessor(mailbox, make_input(2, log))
    with pytest.raises(Boom, match="mail failed"):
        processor.run_until_input_exhausted()
    assert log == []
    assert not mailbox.is_closed()
    assert mailbox.has_mail()  # nothing was dropped
    processor.run_until_input_exhausted()
    assert log == ["next mail", 0, 1]


def test_exception_in_default_action_propagates() -> None:
    mailbox = Mailbox()
    calls = {"n": 0}

    def flaky() -> bool:
        calls["n"] += 1
        if calls["n"] == 2:
            raise Boom("record failed")
        return calls["n"] < 3

    processor = MailboxProcessor(mailbox, flaky)
    with pytest.raises(Boom, match="record failed"):
        processor.run_until_input_exhausted()
    assert not processor.is_input_exhausted()
    assert not mailbox.is_closed()
    processor.run_until_input_exhausted()
    assert calls["n"] == 3
    assert processor.is_input_exhausted()


def test_exception_in_mail_propagates_from_run_mail_until() -> None:
    mailbox = Mailbox()

    def fail() -> None:
        raise Boom("late mail failed")

    mailbox.put(fail, "failing")
    with pytest.raises(Boom):
        MailboxProcessor(mailbox, lambda: False).run_mail_until(lambda: False, timeout=1.0)


def test_run_until_stops_mid_input_when_predicate_holds() -> None:
    mailbox = Mailbox()
    log: list[object] = []
    processor = MailboxProcessor(mailbox, make_input(10, log))
    assert processor.run_until(lambda: len(log) == 3, timeout=5.0)
    assert log == [0, 1, 2]
    assert not processor.is_input_exhausted()
    processor.run_until_input_exhausted()
    assert log == list(range(10))


def test_run_until_waits_for_mails_after_input_is_exhausted() -> None:
    mailbox = Mailbox()
    log: list[object] = []
    processor = MailboxProcessor(mailbox, make_input(3, log))
    producer = threading.Timer(0.02, lambda: mailbox.put(lambda: log.append("late"), "late"))
    producer.start()
    try:
        assert processor.run_until(lambda: "late" in log, timeout=5.0)
    finally:
        producer.join()
    assert log == [0, 1, 2, "late"]


def test_run_until_times_out() -> None:
    mailbox = Mailbox()
    processor = MailboxProcessor(mailbox, lambda: False)
    start = time.monotonic()
    assert not processor.run_until(lambda: False, timeout=0.03)
    assert time.monotonic() - start >= 0.03
    assert not processor.run_mail_until(lambda: False, timeout=0)


def test_run_until_times_out_while_input_is_endless() -> None:
    processor = MailboxProcessor(Mailbox(), lambda: True)
    assert not processor.run_until(lambda: False, timeout=0.02)
    assert not processor.is_input_exhausted()


def test_run_mail_until_never_runs_the_default_action() -> None:
    mailbox = Mailbox()
    log: list[object] = []
    processor = MailboxProcessor(mailbox, make_input(5, log))
    mailbox.put(lambda: log.append("mail"), "m")
    assert processor.run_mail_until(lambda: "mail" in log, timeout=1.0)
    assert log == ["mail"]


def test_run_mail_until_on_a_closed_mailbox_raises() -> None:
    mailbox = Mailbox()
    mailbox.close()
    with pytest.raises(RuntimeError, match="closed mailbox"):
        MailboxProcessor(mailbox, lambda: False).run_mail_until(lambda: False, timeout=1.0)


def test_mails_run_in_the_thread_that_runs_the_loop() -> None:
    mailbox = Mailbox()
    ran_in: list[int] = []
    processor = MailboxProcessor(mailbox, lambda: False)
    task_thread_id: list[int] = []

    def task() -> None:
        task_thread_id.append(threading.get_ident())
        processor.run_mail_until(lambda: len(ran_in) == 3, timeout=5.0)

    thread = threading.Thread(target=task)
    thread.start()
    for _ in range(3):
        mailbox.put(lambda: ran_in.append(threading.get_ident()), "where am I")
    thread.join(5.0)
    assert ran_in == task_thread_id * 3
    assert task_thread_id[0] != threading.get_ident()


def test_nested_loop_from_inside_a_mail_is_refused() -> None:
    mailbox = Mailbox()
    processor = MailboxProcessor(mailbox, lambda: False)
    mailbox.put(lambda: processor.run_until_input_exhausted(), "nested")
    with pytest.raises(RuntimeError, match="re-entered"):
        processor.run_until_input_exhausted()
    # the failed nesting left the processor usable
    processor.run_until_input_exhausted()


def test_nested_loop_from_the_default_action_is_refused() -> None:
    mailbox = Mailbox()
    holder: list[MailboxProcessor] = []

    def action() -> bool:
        holder[0].run_mail_until(lambda: True)
        return False

    holder.append(MailboxProcessor(mailbox, action))
    with pytest.raises(RuntimeError, match="re-entered"):
        holder[0].run_until_input_exhausted()


def test_concurrent_loop_from_another_thread_is_refused() -> None:
    mailbox = Mailbox()
    release = threading.Event()
    inside = threading.Event()

    def blocking_action() -> bool:
        inside.set()
        release.wait(5.0)
        return False

    processor = MailboxProcessor(mailbox, blocking_action)
    thread = threading.Thread(target=processor.run_until_input_exhausted)
    thread.start()
    try:
        assert inside.wait(5.0)
        assert not processor.is_mailbox_thread()
        with pytest.raises(RuntimeError, match="already running in thread"):
            processor.run_mail_until(lambda: True)
    finally:
        release.set()
        thread.join(5.0)


def test_is_mailbox_thread_inside_mail() -> None:
    mailbox = Mailbox()
    processor = MailboxProcessor(mailbox, lambda: False)
    seen: list[bool] = []
    mailbox.put(lambda: seen.append(processor.is_mailbox_thread()), "check")
    processor.run_until_input_exhausted()
    assert seen == [True]
    assert not processor.is_mailbox_thread()


def test_processor_validates_arguments() -> None:
    with pytest.raises(TypeError, match="mailbox must be a Mailbox"):
        MailboxProcessor(object(), lambda: False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="default_action must be a callable"):
        MailboxProcessor(Mailbox(), None)  # type: ignore[arg-type]
    processor = MailboxProcessor(Mailbox(), lambda: False)
    with pytest.raises(TypeError, match="predicate must be a callable"):
        processor.run_until(True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        processor.run_mail_until(lambda: True, timeout=-0.5)
