"""The async I/O retry strategies at PyFlink's path
(``pyflink.datastream.async_retry_strategies``), defined in :mod:`sparktide.core.async_retry`.

>>> FixedDelayRetryStrategy(2, 100, None, None).can_retry(3)
False
"""

from sparktide.core.async_retry import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
    RetryPredicate,
)

__all__ = [
    "NO_RETRY_STRATEGY",
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
]
