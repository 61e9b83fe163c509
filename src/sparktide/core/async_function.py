"""Async I/O contracts with PyFlink's names: ``AsyncFunction``, ``AsyncRetryStrategy``,
``AsyncRetryPredicate`` and the description of an async wait operator.

An :class:`AsyncFunction` enriches each record from an external service without blocking the
task: ``async def async_invoke(value)`` returns the list of results for ``value`` (an empty
list drops it); requests of one task run concurrently on an asyncio event loop, at most
``capacity`` at a time. ``timeout(value)`` gives the results when a request takes longer than
the operator's timeout; by default it raises ``TimeoutError``, which fails the job.

>>> import asyncio
>>> class Lookup(AsyncFunction):
...     async def async_invoke(self, value):
...         await asyncio.sleep(0)
...         return [(value, len(value))]
>>> asyncio.run(Lookup().async_invoke("abc"))
[('abc', 3)]
>>> Lookup().timeout("abc")
Traceback (most recent call last):
...
TimeoutError: Async function call has timed out for input: abc
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from sparktide.common.time import Duration, Time
from sparktide.core.functions import Function

__all__ = [
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "ExceptionPredicate",
    "ResultPredicate",
]

IN = TypeVar("IN")
OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[Any]], bool]
"""Whether a list of results asks for another attempt (e.g. an empty one)."""
ExceptionPredicate = Callable[[BaseException], bool]
"""Whether an exception raised by ``async_invoke`` asks for another attempt."""


class AsyncFunction(Function, Generic[IN, OUT]):
    """A function that looks each record up asynchronously (PyFlink's ``AsyncFunction``).

    ``open(runtime_context)`` and ``close()`` run on the task's thread; ``async_invoke`` and
    ``timeout`` run on the task's event loop thread (one per task thread), so a client made in
    ``open`` is used from that loop.
    """

    @abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """The results for ``value`` (a list, possibly empty). Raising fails the job, unless the
        operator's retry strategy retries the exception."""

    def timeout(self, value: IN) -> list[OUT]:
        """The results for ``value`` when its request timed out; by default, raise."""
        raise TimeoutError(f"Async function call has timed out for input: {value}")


class AsyncRetryPredicate(ABC, Generic[OUT]):
    """When a completed attempt is retried: on its results, on its exception."""

    @abstractmethod
    def result_predicate(self) -> ResultPredicate | None:
        """Retry when this returns True for the attempt's results (None: never)."""

    @abstractmethod
    def exception_predicate(self) -> ExceptionPredicate | None:
        """Retry when this returns True for the attempt's exception (None: never)."""


class AsyncRetryStrategy(ABC, Generic[OUT]):
    """How often and after which delay a request is attempted again (PyFlink's
    ``AsyncRetryStrategy``). Attempts are numbered from 1; after attempt ``n`` another one is
    made if the predicate asks for it, ``can_retry(n)`` and the timeout has not passed, after
    ``get_backoff_time_millis(n)`` milliseconds.

    >>> strategy = AsyncRetryStrategy.fixed_delay(2, 100, None, lambda e: True)
    >>> [strategy.can_retry(n) for n in (1, 2, 3)], strategy.get_backoff_time_millis(1)
    ([True, True, False], 100)
    """

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow attempt ``current_attempts``."""

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The delay before the attempt that follows attempt ``current_attempts``."""

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """When an attempt is retried."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy[Any]:
        """Never retry (what ``ordered_wait`` / ``unordered_wait`` use)."""
        from sparktide.core import async_retry

        return async_retry.NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> AsyncRetryStrategy[Any]:
        """Up to ``max_attempts`` retries, each ``backoff_time_millis`` after the attempt before."""
        from sparktide.core import async_retry

        return async_retry.FixedDelayRetryStrategy(
            max_attempts, backoff_time_millis, result_predicate, exception_predicate
        )

    @staticmethod
    def exponential_backoff(
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> AsyncRetryStrategy[Any]:
        """Up to ``max_attempts`` retries, the delay growing from ``initial_delay`` by
        ``multiplier`` up to ``max_retry_delay`` milliseconds."""
        from sparktide.core import async_retry

        return async_retry.ExponentialBackoffDelayRetryStrategy(
            max_attempts,
            initial_delay,
            max_retry_delay,
            multiplier,
            result_predicate,
            exception_predicate,
        )


@dataclass(frozen=True)
class AsyncFunctionDescriptor:
    """An async wait operator as the API describes it: the function, the timeout, the capacity,
    the retry strategy and the output mode. Validated when made.

    >>> import asyncio
    >>> class Echo(AsyncFunction):
    ...     async def async_invoke(self, value):
    ...         return [value]
    >>> d = AsyncFunctionDescriptor(Echo(), Time.seconds(1), 10,
    ...                             AsyncRetryStrategy.no_restart(),
    ...                             AsyncFunctionDescriptor.OutputMode.ORDERED)
    >>> d.timeout_millis, d.capacity
    (1000, 10)
    >>> AsyncFunctionDescriptor(Echo(), Time.seconds(1), 0, AsyncRetryStrategy.no_restart(),
    ...                         AsyncFunctionDescriptor.OutputMode.ORDERED)
    Traceback (most recent call last):
    ...
    ValueError: capacity must be an int >= 1 (the most requests in flight at a time), got 0
    """

    class OutputMode(Enum):
        """``ORDERED``: results in input order; ``UNORDERED``: as completed, never across a
        watermark."""

        ORDERED = 0
        UNORDERED = 1

    async_function: AsyncFunction[Any, Any]
    timeout: Time | Duration
    capacity: int
    async_retry_strategy: AsyncRetryStrategy[Any]
    output_mode: AsyncFunctionDescriptor.OutputMode

    def __post_init__(self) -> None:
        function = self.async_function
        invoke = getattr(function, "async_invoke", None)
        if isinstance(function, type) or invoke is None:
            raise TypeError(
                "async_function must be an AsyncFunction instance with an 'async def "
                f"async_invoke(self, value)' method, got {function!r}"
            )
        if not inspect.iscoroutinefunction(invoke):
            raise TypeError(
                f"method 'async_invoke' of {type(function).__name__} must be declared with "
                "'async def' (it returns the list of results of one record)"
            )
        if not isinstance(self.timeout, (Time, Duration)):
            raise TypeError(
                f"timeout must be a Time or Duration, e.g. Time.seconds(10), got "
                f"{type(self.timeout).__name__}"
            )
        if type(self.capacity) is not int or self.capacity < 1:
            raise ValueError(
                "capacity must be an int >= 1 (the most requests in flight at a time), got "
                f"{self.capacity!r}"
            )
        strategy = self.async_retry_strategy
        if not isinstance(strategy, AsyncRetryStrategy):
            raise TypeError(
                "async_retry_strategy must be an AsyncRetryStrategy, e.g. "
                "AsyncRetryStrategy.fixed_delay(3, 100, None, has_exception_predicate), got "
                f"{type(strategy).__name__}"
            )
        predicate = strategy.get_retry_predicate()
        if not isinstance(predicate, AsyncRetryPredicate):
            raise TypeError(
                f"the retry predicate of {type(strategy).__name__} must be an "
                f"AsyncRetryPredicate, got {type(predicate).__name__}"
            )
        retries = (
            predicate.result_predicate() is not None or predicate.exception_predicate() is not None
        )
        if retries and self.timeout_millis <= 0:
            raise ValueError(
                "a retry strategy needs a timeout > 0 (it bounds all attempts of a record), "
                f"got {self.timeout_millis} ms"
            )
        if not isinstance(self.output_mode, AsyncFunctionDescriptor.OutputMode):
            raise TypeError(f"output_mode must be an OutputMode, got {self.output_mode!r}")

    @property
    def timeout_millis(self) -> int:
        """The timeout in milliseconds (<= 0: none, without a retry strategy)."""
        return self.timeout.to_milliseconds()

    @property
    def ordered(self) -> bool:
        return self.output_mode is AsyncFunctionDescriptor.OutputMode.ORDERED
