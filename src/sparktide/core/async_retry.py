"""The retry strategies and predicates of async I/O, as PyFlink's
``pyflink.datastream.async_retry_strategies`` and ``async_retry_predicates`` have them.

Attempts are numbered from 1. After attempt ``n`` fails the predicate, another attempt follows
when ``can_retry(n)`` (``n <= max_attempts``) and the record's timeout has not passed, after
``get_backoff_time_millis(n)`` milliseconds: so ``max_attempts`` retries at most.

>>> fixed = FixedDelayRetryStrategy(3, 50, empty_result_predicate, None)
>>> [fixed.can_retry(n) for n in (1, 3, 4)], fixed.get_backoff_time_millis(2)
([True, True, False], 50)
>>> backoff = ExponentialBackoffDelayRetryStrategy(5, 10, 35, 2.0, None, has_exception_predicate)
>>> [backoff.get_backoff_time_millis(n) for n in (1, 2, 3, 4)]
[10, 20, 35, 35]
>>> import functools
>>> only_timeouts = functools.partial(exception_type_predicate, expected_error_type=TimeoutError)
>>> only_timeouts(TimeoutError()), only_timeouts(ValueError())
(True, False)
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from sparktide.core.async_function import (
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    ExceptionPredicate,
    ResultPredicate,
)

__all__ = [
    "NO_RETRY_STRATEGY",
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
    "empty_result_predicate",
    "exception_type_predicate",
    "has_exception_predicate",
]

OUT = TypeVar("OUT")


def empty_result_predicate(result: list[Any] | None) -> bool:
    """Retry when an attempt gave no result."""
    return result is None or len(result) == 0


def has_exception_predicate(error: BaseException | None) -> bool:
    """Retry on any exception."""
    return error is not None


def exception_type_predicate(
    error: BaseException | None, expected_error_type: type[BaseException]
) -> bool:
    """Retry on exceptions of ``expected_error_type`` (bind it with ``functools.partial``)."""
    return isinstance(error, expected_error_type)


def _positive(value: object, name: str, kind: type = int) -> None:
    ok = isinstance(value, (int, float)) if kind is float else type(value) is int
    if not ok or isinstance(value, bool) or value <= 0:  # type: ignore[operator]
        raise ValueError(
            f"{name} must be {'a number' if kind is float else 'an int'} > 0, got {value!r}"
        )


def _predicate(value: object, name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a callable or None, got {type(value).__name__}")


class RetryPredicate(AsyncRetryPredicate[OUT], Generic[OUT]):
    """A result predicate and an exception predicate (either may be None)."""

    def __init__(
        self,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _predicate(result_predicate, "result_predicate")
        _predicate(exception_predicate, "exception_predicate")
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Never retry."""

    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Up to ``max_attempts`` retries, ``backoff_time_millis`` apart."""

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _positive(max_attempts, "max_attempts")
        _positive(backoff_time_millis, "backoff_time_millis")
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._predicate = RetryPredicate[OUT](result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Up to ``max_attempts`` retries; the first after ``initial_delay``, each next one
    ``multiplier`` times the one before, at most ``max_retry_delay`` (milliseconds). As in
    Flink, the last delay is kept by the strategy (one per operator instance)."""

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _positive(max_attempts, "max_attempts")
        _positive(initial_delay, "initial_delay")
        _positive(max_retry_delay, "max_retry_delay")
        _positive(multiplier, "multiplier", float)
        self._max_attempts = max_attempts
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._last_retry_delay = initial_delay
        self._predicate = RetryPredicate[OUT](result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy[Any] = NoRetryStrategy()
