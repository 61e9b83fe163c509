"""The task mailbox: how work from other threads reaches the single task thread.

A task processes its input in exactly one thread (the *task thread*). Anything that must touch
operator state from elsewhere — a processing-time timer that became due in the scheduler thread,
an asynchronous result, a checkpoint trigger — is put into the task's :class:`Mailbox` as a
*mail*. The task thread runs a :class:`MailboxProcessor` which alternates between running all
pending mails and processing one unit of input, so a mail never runs concurrently with a record
and never in another thread.

>>> mailbox = Mailbox()
>>> records = iter(["a", "b"])
>>> log = []
>>> def process_one() -> bool:
...     record = next(records, None)
...     if record is None:
...         return False
...     log.append(record)
...     return True
>>> mailbox.put(lambda: log.append("mail"), "say hello")
>>> MailboxProcessor(mailbox, process_one).run_until_input_exhausted()
>>> log
['mail', 'a', 'b']
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sized

__all__ = ["Mail", "Mailbox", "MailboxProcessor"]


class Mail:
    """A unit of work for the task thread: an action plus a description for diagnostics.

    Calling the mail (or :meth:`run`) runs the action.

    >>> mail = Mail(lambda: print("ran"), "demo")
    >>> mail
    Mail('demo')
    >>> mail()
    ran
    """

    __slots__ = ("action", "description")

    def __init__(self, action: Callable[[], None], description: str = "") -> None:
        if not callable(action):
            raise TypeError(
                f"mail must be a callable taking no arguments, got {type(action).__name__}; "
                "wrap the work in a function or lambda"
            )
        if not isinstance(description, str):
            raise TypeError(
                f"description must be a str, got {type(description).__name__}; "
                "pass a short text such as 'timer @ 1000'"
            )
        self.action = action
        self.description = description

    def run(self) -> None:
        """Run the action in the calling thread; exceptions propagate."""
        self.action()

    def __call__(self) -> None:
        self.action()

    def __repr__(self) -> str:
        return f"Mail({self.description!r})"


class Mailbox:
    """A thread-safe FIFO of :class:`Mail` for one task.

    Any thread may :meth:`put`; the task thread takes mails with :meth:`try_take` (never blocks)
    or :meth:`take` (blocks up to a timeout). Checking for mail when there is none is a single
    length test of the underlying deque, without taking the lock, so the task thread can check
    between every two records. After :meth:`close` no mail is accepted; ``close`` returns the
    mails that were still pending.

    >>> mailbox = Mailbox()
    >>> mailbox.has_mail()
    False
    >>> mailbox.put(lambda: None, "first")
    >>> mailbox.put(lambda: None, "second")
    >>> mailbox.try_take()
    Mail('first')
    >>> mailbox.close()
    [Mail('second')]
    >>> mailbox.put(lambda: None)
    Traceback (most recent call last):
    ...
    RuntimeError: cannot put a mail into a closed mailbox; the task is shutting down
    """

    __slots__ = ("_closed", "_cond", "_lock", "_queue")

    def __init__(self) -> None:
        self._queue: deque[Mail] = deque()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closed = False

    def put(self, mail: Callable[[], None], description: str = "") -> None:
        """Append ``mail`` (a :class:`Mail` or any no-argument callable); callable from any thread.

        Raises ``RuntimeError`` once the mailbox is closed.
        """
        if not isinstance(mail, Mail):
            mail = Mail(mail, description)
        with self._lock:
            if self._closed:
                raise RuntimeError(
                    "cannot put a mail into a closed mailbox; the task is shutting down"
                )
            self._queue.append(mail)
            self._cond.notify()

    def has_mail(self) -> bool:
        """Whether a mail is pending. Lock-free; exact when called from the only taker thread."""
        return bool(self._queue)

    def __len__(self) -> int:
        return len(self._queue)

    def pending(self) -> Sized:
        """The pending mails' container itself, true while a mail is pending: a lock-free test
        without a call, for loops that check for mail per record (``if pending:``). It stays
        the same object for the mailbox's life; mails are taken with :meth:`take` /
        :meth:`try_take` only."""
        return self._queue

    def try_take(self) -> Mail | None:
        """Remove and return the oldest mail, or ``None`` at once if there is none."""
        if not self._queue:
            return None
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def take(self, timeout: float | None = None) -> Mail | None:
        """Remove and return the oldest mail, waiting up to ``timeout`` seconds for one.

        ``timeout=None`` waits without limit. Returns ``None`` when the timeout expires. Raises
        ``RuntimeError`` if the mailbox is (or becomes, while waiting) closed, so a task thread
        waiting for mail never blocks on a mailbox nobody can fill any more.
        """
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(
                    f"timeout must be a number of seconds or None, got {type(timeout).__name__}"
                )
            if timeout < 0:
                raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
            deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._queue:
                    return self._queue.popleft()
                if self._closed:
                    raise RuntimeError(
                        "cannot take a mail from a closed mailbox; the task is shutting down"
                    )
                if timeout is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)

    def close(self) -> list[Mail]:
        """Refuse further mails and return the pending ones (oldest first), emptying the box.

        Wakes every thread blocked in :meth:`take`. Closing twice returns ``[]`` the second time.
        """
        with self._cond:
            self._closed = True
            pending = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        return pending

    def is_closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"Mailbox({state}, pending={len(self._queue)})"


class MailboxProcessor:
    """The task thread's loop: run pending mails, then one unit of input, and repeat.

    ``default_action`` processes one unit of input (one record or a small batch) and returns
    ``False`` once the input is exhausted (the unit in that call may still have been processed).
    Mails run only in the thread that calls a ``run_*`` method, never while ``default_action``
    is running, and strictly one at a time. An exception raised by a mail or by the default
    action propagates to the caller unchanged; nothing is closed or swallowed, and the loop may
    be resumed afterwards. The ``run_*`` methods may not be nested (called from inside a mail or
    the default action) nor run from two threads at once: both raise ``RuntimeError``.

    >>> mailbox = Mailbox()
    >>> seen = []
    >>> todo = [3, 2, 1]
    >>> def process_one() -> bool:
    ...     if todo:
    ...         value = todo.pop()
    ...         seen.append(value)
    ...         if value == 2:  # e.g. a record whose handler schedules work via the mailbox
    ...             mailbox.put(lambda: seen.append("mail"), "after record 2")
    ...     return bool(todo)
    >>> processor = MailboxProcessor(mailbox, process_one)
    >>> processor.run_until_input_exhausted()
    >>> seen
    [1, 2, 'mail', 3]
    >>> processor.is_input_exhausted()
    True
    >>> mailbox.put(lambda: seen.append("late"), "after the input")
    >>> processor.run_mail_until(lambda: "late" in seen, timeout=1.0)
    True
    """

    __slots__ = ("_default_action", "_input_exhausted", "_mailbox", "_running_thread")

    def __init__(self, mailbox: Mailbox, default_action: Callable[[], bool]) -> None:
        if not isinstance(mailbox, Mailbox):
            raise TypeError(f"mailbox must be a Mailbox, got {type(mailbox).__name__}")
        if not callable(default_action):
            raise TypeError(
                "default_action must be a callable that processes one unit of input and returns "
                f"False when the input is exhausted, got {type(default_action).__name__}"
            )
        self._mailbox = mailbox
        self._default_action = default_action
        self._input_exhausted = False
        self._running_thread: int | None = None

    @property
    def mailbox(self) -> Mailbox:
        """The mailbox this processor drains."""
        return self._mailbox

    def is_input_exhausted(self) -> bool:
        """Whether ``default_action`` has returned ``False``."""
        return self._input_exhausted

    def is_mailbox_thread(self) -> bool:
        """Whether the calling thread is currently running this processor's loop."""
        return self._running_thread == threading.get_ident()

    def run_until_input_exhausted(self) -> None:
        """Alternate between all pending mails and one unit of input until the input is exhausted.

        Then runs the mails that are pending at that point (without waiting for more) and
        returns. Use :meth:`run_mail_until` afterwards to wait for mails still to come, such as
        processing-time timers that are not due yet.
        """
        self._enter()
        try:
            queue = self._mailbox.pending()
            action = self._default_action
            while not self._input_exhausted:
                if queue:  # the cheap per-record check; the lock is only taken if there is mail
                    self._run_pending_mails()
                if not action():
                    self._input_exhausted = True
            self._run_pending_mails()
        finally:
            self._running_thread = None

    def run_until(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """Process mails and input until ``predicate()`` is true; return whether it became true.

        The predicate is checked after every mail and every unit of input. Once the input is
        exhausted the loop waits for mails. Returns ``False`` if ``timeout`` seconds (``None``:
        no limit) pass first.
        """
        return self._run_until(predicate, timeout, with_input=True)

    def run_mail_until(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """Run only mails (never the default action) until ``predicate()`` is true.

        Waits for mails when there are none. Returns ``True`` when the predicate became true and
        ``False`` if ``timeout`` seconds (``None``: no limit) passed first. Raises
        ``RuntimeError`` if the mailbox is closed while the predicate is still false.
        """
        return self._run_until(predicate, timeout, with_input=False)

    # -- internals -------------------------------------------------------------------------

    def _enter(self) -> None:
        me = threading.get_ident()
        running = self._running_thread
        if running is not None:
            if running == me:
                raise RuntimeError(
                    "MailboxProcessor loop re-entered from inside a mail or the default action; "
                    "mails must never run inside a record: return and let the outer loop run them"
                )
            raise RuntimeError(
                f"MailboxProcessor is already running in thread {running}; a task has exactly "
                "one task thread, so run the loop only there"
            )
        self._running_thread = me

    def _run_pending_mails(self) -> None:
        take = self._mailbox.try_take
        mail = take()
        while mail is not None:
            mail.action()
            mail = take()

    def _run_until(
        self, predicate: Callable[[], bool], timeout: float | None, *, with_input: bool
    ) -> bool:
        if not callable(predicate):
            raise TypeError(
                f"predicate must be a callable returning bool, got {type(predicate).__name__}"
            )
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(
                    f"timeout must be a number of seconds or None, got {type(timeout).__name__}"
                )
            if timeout < 0:
                raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
        deadline = None if timeout is None else time.monotonic() + timeout
        self._enter()
        try:
            mailbox = self._mailbox
            while True:
                mail = mailbox.try_take()
                while mail is not None:
                    mail.action()
                    if predicate():
                        return True
                    mail = mailbox.try_take()
                if predicate():
                    return True
                if with_input and not self._input_exhausted:
                    if not self._default_action():
                        self._input_exhausted = True
                    if predicate():
                        return True
                    if deadline is not None and time.monotonic() >= deadline:
                        return False
                    continue
                if deadline is None:
                    mail = mailbox.take(None)
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    mail = mailbox.take(remaining)
                if mail is not None:
                    mail.action()
                    if predicate():
                        return True
        finally:
            self._running_thread = None
