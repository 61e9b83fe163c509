"""The async wait operator (Flink's ``AsyncWaitOperator``): async I/O inside a task.

Each record starts a request, ``function.async_invoke(value)``, on the task thread's event loop
(:mod:`.async_wait_loop`); at most ``capacity`` records and barriers wait in the operator's
queue (:mod:`.async_wait_queue`), and a record that finds it full blocks the task until one
leaves. Results keep their record's timestamp. Ordered mode emits in input order; unordered
mode as requests complete, never across a watermark or watermark status (they wait in the
queue as barriers, behind every record before them, and records after them wait behind them).

**Timeout and retries.** A request that has not completed ``timeout`` after it started (wall
clock) is cancelled and its results are ``function.timeout(value)``. With a retry strategy an
attempt whose results or exception satisfy the retry predicate is made again after the
strategy's backoff, while ``can_retry(attempt)`` and the timeout (which bounds all attempts of
the record) has not passed. An exception that is not retried fails the job: it is raised on the
task thread, with a note naming the function, the record and the attempts.

**Positions.** In a runner, a request's outputs are tagged with the position its record had
(:meth:`~sparktide.runtime.execution.protocol.Cursor.defer`), so the job's output is the same
as if the function had answered at once: the same at any parallelism and on every runner,
whatever the service's delays (unordered mode too, as its outputs are ordered by position
wherever they meet an exchange or a collecting sink). The runner calls :meth:`drain` before it
moves what the task emitted (after each chunk, at the end of each round and micro-batch): every
request in flight completes or times out, so a checkpoint never holds one and a replayed batch
issues its requests again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, cast

from sparktide.core.async_function import AsyncFunction, AsyncFunctionDescriptor
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.failures import truncated_repr
from sparktide.runtime.operators.async_wait_loop import TaskLoop, task_loop
from sparktide.runtime.operators.async_wait_queue import (
    Barrier,
    Entry,
    OrderedQueue,
    Request,
    UnorderedQueue,
)
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.operators.deferred import DeferredOutputOperator, OutputMarks

if TYPE_CHECKING:
    from sparktide.runtime.execution.protocol import CursorState

__all__ = ["AsyncWaitOperator"]

_WAIT_S = 1.0  # how long the task waits for a completion before checking the loop is alive


def _note(exc: BaseException, text: str) -> None:
    """Attach ``text`` to ``exc`` as a note (printed by Python 3.11+, kept on 3.10)."""
    add = getattr(exc, "add_note", None)
    if callable(add):
        add(text)
        return
    with contextlib.suppress(AttributeError):  # exceptions with __slots__
        exc.__notes__ = [*getattr(exc, "__notes__", ()), text]


def _as_results(results: object, where: str) -> list[object]:
    """The results a function returned, as a list; a clear error for anything else."""
    if isinstance(results, list):
        return results
    if (
        results is None
        or isinstance(results, (str, bytes, Mapping))
        or not isinstance(results, Iterable)
    ):
        raise TypeError(
            f"{where} must return a list of results (possibly empty), got "
            f"{type(results).__name__}: {truncated_repr(results)}; wrap a single result as "
            "[result]"
        )
    return list(results)


class AsyncWaitOperator(DeferredOutputOperator):
    """Runs an :class:`~sparktide.core.async_function.AsyncFunction` on every record."""

    kind = "async operator"
    failure_advice = (
        "catch the error in async_invoke and return a fallback result, or retry it with an "
        "AsyncRetryStrategy"
    )

    def __init__(self, descriptor: AsyncFunctionDescriptor) -> None:
        super().__init__()
        self.descriptor = descriptor
        self.function: AsyncFunction[object, object] = descriptor.async_function
        self._name = type(self.function).__name__
        ms = descriptor.timeout_millis
        self._timeout_s = ms / 1000 if ms > 0 else None
        self._capacity = descriptor.capacity
        self._strategy = descriptor.async_retry_strategy
        predicate = self._strategy.get_retry_predicate()
        self._retry_results = predicate.result_predicate()
        self._retry_errors = predicate.exception_predicate()
        self._queue: OrderedQueue | UnorderedQueue = (
            OrderedQueue() if descriptor.ordered else UnorderedQueue()
        )
        self._inbox: deque[Request] = deque()  # completed by the loop, not yet taken
        self._to_start: deque[Request] = deque()  # put by the task, not yet started
        self._start_scheduled = False
        self._signal = threading.Condition()
        self._in_flight: set[Request] = set()  # the loop thread's own
        self._loop: TaskLoop | None = None
        self._closed = False
        # the marks made at the current input, with the last request of each
        self._marks = OutputMarks()

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        self._loop = task_loop()
        opener = getattr(self.function, "open", None)
        if callable(opener):
            opener(self.runtime_context)

    def finish(self) -> None:
        self.drain()

    def close(self) -> None:
        self._closed = True
        loop = self._loop
        if loop is not None and loop.alive and self._in_flight:
            loop.loop.call_soon_threadsafe(self._cancel_all)
        closer = getattr(self.function, "close", None)
        try:
            if callable(closer):
                closer()
        finally:
            super().close()

    # ------------------------------------------------------------------ task thread

    @property
    def in_queue(self) -> int:
        """Records and barriers received and not emitted yet."""
        return len(self._queue)

    def process_element(self, record: StreamRecord) -> None:
        self._make_room()
        mark, after = self._defer()
        request = Request(record, mark)
        self._queue.put(request, after)
        if mark is not None:
            self._marks.file(mark, request)
        self._to_start.append(request)
        if not self._start_scheduled:  # one wake-up of the loop for what accumulates meanwhile
            self._start_scheduled = True
            self._running_loop().loop.call_soon_threadsafe(self._start_all)
        self._emit_ready()

    def process_keyed_element(self, record: StreamRecord) -> None:
        self.process_element(record)

    def process_watermark(self, watermark: Watermark) -> None:
        self._barrier(watermark)

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        self._barrier(status)

    def drain(self) -> None:
        """Wait until every request completed or timed out, emitting everything in the queue."""
        self._emit_ready()
        while len(self._queue):
            self._wait()
            self._emit_ready()

    def _running_loop(self) -> TaskLoop:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the async wait operator was not opened: call open() first")
        return loop

    def _defer(self) -> tuple[CursorState | None, Request | None]:
        """Where the current input's outputs go, and the request they follow (if any)."""
        cursor = self.cursor
        if cursor is None:
            return None, None
        mark, last = self._marks.mark(cursor)
        return mark, cast("Request | None", last)

    def _barrier(self, element: Watermark | WatermarkStatus) -> None:
        self._make_room()
        self._queue.put(Barrier(element, self._defer()[0]))
        self._emit_ready()

    def _make_room(self) -> None:
        self._emit_ready()
        while len(self._queue) >= self._capacity:
            self._wait()
            self._emit_ready()

    def _wait(self) -> None:
        """Block until the loop completed a request."""
        signal = self._signal
        with signal:
            while not self._inbox:
                if not signal.wait(_WAIT_S) and not self._running_loop().alive:
                    raise RuntimeError(
                        "the event loop running the async requests stopped; the requests in "
                        "flight cannot complete"
                    )

    def _take_completed(self) -> None:
        if not self._inbox:
            return
        with self._signal:
            if not self._inbox:
                return
            completed = list(self._inbox)
            self._inbox.clear()
        queue = self._queue
        for request in completed:
            if request.error is not None:
                self._raise(request)
            queue.complete(request)

    def _raise(self, request: Request) -> None:
        record = request.record  # named in the failure's context
        error = cast(BaseException, request.error)
        attempts = f" after {request.attempts} attempts" if request.attempts > 1 else ""
        _note(
            error,
            f"sparktide: {self._name}.async_invoke failed for record "
            f"{truncated_repr(record.value)}{attempts}",
        )
        raise error

    def _emit_ready(self) -> None:
        self._take_completed()
        ready = self._queue.pop_ready()
        if not ready:
            return
        cursor = self.cursor
        if cursor is None:
            for entry in ready:
                self._emit(entry)
            return
        live = cursor.save()
        try:
            for entry in ready:
                mark = cast("CursorState", entry.mark)
                cursor.restore(mark)
                self._emit(entry)
                cursor.advance(mark)
        finally:
            cursor.restore(live)

    def _emit(self, entry: Entry) -> None:
        if type(entry) is Request:
            timestamp = entry.record.timestamp
            collect = self.output.collect
            for value in entry.results:
                collect(StreamRecord(value, timestamp))
            return
        element = cast(Barrier, entry).element
        if type(element) is Watermark:
            AbstractStreamOperator.process_watermark(self, element)
        else:
            self.output.emit_watermark_status(cast(WatermarkStatus, element))

    # ------------------------------------------------------------------ loop thread

    def _start_all(self) -> None:
        self._start_scheduled = False  # first: a request put from now on schedules a call
        to_start = self._to_start
        while to_start:
            self._start(to_start.popleft())

    def _start(self, request: Request) -> None:
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        self._in_flight.add(request)
        task = loop.create_task(self._attempts(request))
        request.task = task
        task.add_done_callback(lambda t: self._task_done(request, t))
        if self._timeout_s is not None:
            request.timer = loop.call_later(self._timeout_s, self._on_timeout, request)

    async def _attempts(self, request: Request) -> None:
        attempt = 0
        while True:
            attempt += 1
            request.attempts = attempt
            results: list[object] | None = None
            error: BaseException | None = None
            try:
                returned = await self.function.async_invoke(request.value)
                results = _as_results(returned, f"{self._name}.async_invoke")
            except Exception as exc:
                error = exc
            try:
                retry = self._should_retry(results, error, attempt)
            except Exception as exc:  # a predicate or the strategy raised
                results, error, retry = None, exc, False
            if not retry:
                self._complete(request, results or [], error)
                return
            await asyncio.sleep(max(0, self._strategy.get_backoff_time_millis(attempt)) / 1000)

    def _should_retry(
        self, results: list[object] | None, error: BaseException | None, attempt: int
    ) -> bool:
        on_results, on_errors = self._retry_results, self._retry_errors
        wanted = (results is not None and on_results is not None and on_results(results)) or (
            error is not None and on_errors is not None and on_errors(error)
        )
        return bool(wanted) and self._strategy.can_retry(attempt)

    def _on_timeout(self, request: Request) -> None:
        if request.finished:
            return
        task = request.task
        if task is not None:
            task.cancel()
        try:
            timeout = getattr(self.function, "timeout", None)
            if not callable(timeout):
                raise TimeoutError(f"Async function call has timed out for input: {request.value}")
            results = _as_results(timeout(request.value), f"{self._name}.timeout")
        except Exception as exc:
            _note(
                exc,
                f"sparktide: the request of {self._name} timed out after "
                f"{self.descriptor.timeout_millis} ms",
            )
            self._complete(request, [], exc)
            return
        self._complete(request, results, None)

    def _task_done(self, request: Request, task: asyncio.Task[None]) -> None:
        """A request's task ended without completing it (cancelled from outside, or it
        raised past the operator)."""
        if request.finished or self._closed:
            self._in_flight.discard(request)
            return
        error: BaseException = (
            RuntimeError(f"the request of {self._name}.async_invoke was cancelled")
            if task.cancelled()
            else task.exception() or RuntimeError("the request ended without results")
        )
        self._complete(request, [], error)

    def _complete(
        self, request: Request, results: list[object], error: BaseException | None
    ) -> None:
        if request.finished:
            return
        request.finished = True
        self._in_flight.discard(request)
        if request.timer is not None:
            request.timer.cancel()
        request.results = results
        request.error = error
        with self._signal:
            self._inbox.append(request)
            self._signal.notify()

    def _cancel_all(self) -> None:
        for request in list(self._in_flight):
            if request.timer is not None:
                request.timer.cancel()
            if request.task is not None:
                request.task.cancel()
        self._in_flight.clear()
