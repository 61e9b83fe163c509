"""``Partitioner``: picks the subtask a record goes to (PyFlink's ``Partitioner``, for
``DataStream.partition_custom``).

>>> class ByParity(Partitioner):
...     def partition(self, key, num_partitions):
...         return key % 2 % num_partitions
>>> ByParity().partition(7, 4)
1
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from sparktide.core.functions import Function

__all__ = ["Partitioner", "custom_partitioner"]


class Partitioner(Function):
    """``partition(key, num_partitions)`` returns the index, in ``[0, num_partitions)``, of the
    subtask that receives the records with ``key``."""

    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int: ...


def custom_partitioner(
    partitioner: Any, key_selector: Callable[[Any], Any]
) -> Callable[[Any, int], int]:
    """``(value, num_partitions) -> subtask`` of ``partitioner`` (a :class:`Partitioner` or a
    callable ``(key, num_partitions)``) applied to ``key_selector(value)``, checked to be a
    subtask index.

    >>> route = custom_partitioner(lambda key, n: key % n, len)
    >>> route("abc", 2)
    1
    >>> custom_partitioner(lambda key, n: n, len)("abc", 2)
    Traceback (most recent call last):
    ...
    ValueError: the partitioner returned 2 for key 3, which is no subtask index in [0, 2); \
return key-derived ints modulo num_partitions
    """
    partition = getattr(partitioner, "partition", partitioner)
    if not callable(partition):
        raise TypeError(
            "partitioner must be a Partitioner (partition(key, num_partitions)) or a callable "
            f"(key, num_partitions) -> int, got {type(partitioner).__name__}"
        )

    def route(value: Any, num_partitions: int) -> int:
        key = key_selector(value)
        target = partition(key, num_partitions)
        if type(target) is not int or not 0 <= target < num_partitions:
            raise ValueError(
                f"the partitioner returned {target!r} for key {key!r}, which is no subtask "
                f"index in [0, {num_partitions}); return key-derived ints modulo num_partitions"
            )
        return target

    return route
