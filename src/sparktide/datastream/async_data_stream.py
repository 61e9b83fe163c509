"""``AsyncDataStream``: async I/O on a stream, with PyFlink's names and signatures.

``ordered_wait`` keeps the input order; ``unordered_wait`` emits results as requests complete,
but never across a watermark. The ``*_with_retry`` forms take an ``AsyncRetryStrategy``. The
requests of one task run concurrently on an asyncio event loop, at most ``capacity`` at a time
(see :mod:`sparktide.runtime.operators.async_wait`).

>>> import asyncio
>>> from sparktide.common import Time, Types
>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.datastream.functions import AsyncFunction
>>> class Enrich(AsyncFunction):
...     async def async_invoke(self, value):
...         await asyncio.sleep(0.001 * (5 - value))  # later records answer first
...         return [(value, value * value)]
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> ds = env.from_collection([1, 2, 3, 4])
>>> list(AsyncDataStream.ordered_wait(ds, Enrich(), Time.seconds(10), capacity=4,
...                              output_type=Types.TUPLE([Types.INT(), Types.INT()])
...                              ).execute_and_collect())
[(1, 1), (2, 4), (3, 9), (4, 16)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparktide.core.async_function import (
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryStrategy,
)
from sparktide.core.async_retry import NO_RETRY_STRATEGY
from sparktide.datastream import data_stream as streams
from sparktide.runtime.graph import copy_function
from sparktide.runtime.operators.async_wait import AsyncWaitOperator

if TYPE_CHECKING:
    from sparktide.common.time import Duration, Time
    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.datastream.data_stream import DataStream

__all__ = ["AsyncDataStream"]

_ORDERED = AsyncFunctionDescriptor.OutputMode.ORDERED
_UNORDERED = AsyncFunctionDescriptor.OutputMode.UNORDERED


class AsyncDataStream:
    """Applies an :class:`~sparktide.core.async_function.AsyncFunction` to a data stream."""

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Time | Duration,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Results as requests complete (never across a watermark)."""
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Time | Duration,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """:meth:`unordered_wait` retrying as ``async_retry_strategy`` says."""
        return _add(
            data_stream,
            AsyncFunctionDescriptor(
                async_function, timeout, capacity, async_retry_strategy, _UNORDERED
            ),
            output_type,
        )

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Time | Duration,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Results in input order."""
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Time | Duration,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """:meth:`ordered_wait` retrying as ``async_retry_strategy`` says."""
        return _add(
            data_stream,
            AsyncFunctionDescriptor(
                async_function, timeout, capacity, async_retry_strategy, _ORDERED
            ),
            output_type,
        )


def _add(
    data_stream: DataStream,
    descriptor: AsyncFunctionDescriptor,
    output_type: TypeInformation | None,
) -> DataStream:
    if not isinstance(data_stream, streams.DataStream):
        raise TypeError(f"data_stream must be a DataStream, got {type(data_stream).__name__}")

    def factory() -> AsyncWaitOperator:
        return AsyncWaitOperator(copy_function(descriptor))

    name = "async wait operator"
    if isinstance(data_stream, streams.KeyedStream):
        node = data_stream._keyed(name, factory, output_type)
    else:
        node = data_stream._one_input(name, factory, output_type, split_local=True)
    return streams.DataStream(data_stream.get_execution_environment(), node)
