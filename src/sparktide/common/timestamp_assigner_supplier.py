"""``TimestampAssignerSupplier``: makes a fresh timestamp assigner for every task (Flink's
``TimestampAssignerSupplier``).

``WatermarkStrategy.with_timestamp_assigner`` takes an assigner, which every task shares, or a
supplier, which every task (every source split, every ``assign_timestamps_and_watermarks``
subtask) asks for its own assigner: the way to give an assigner state that must not be shared,
or to build it from the task's context (``context.current_processing_time()``).

>>> class Counting:
...     def __init__(self): self.seen = 0
...     def extract_timestamp(self, value, record_timestamp):
...         self.seen += 1
...         return value
>>> class PerTask(TimestampAssignerSupplier):
...     def create_timestamp_assigner(self, context):
...         return Counting()
>>> supplier = PerTask()
>>> supplier.create_timestamp_assigner(None) is supplier.create_timestamp_assigner(None)
False
>>> TimestampAssignerSupplier.of(lambda value, ts: value).create_timestamp_assigner(None)(7, 0)
7
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["TimestampAssignerSupplier"]


class TimestampAssignerSupplier(ABC):
    """Creates the timestamp assigner of one task.

    :meth:`create_timestamp_assigner` returns a ``TimestampAssigner`` (anything with
    ``extract_timestamp(value, record_timestamp)``) or a callable
    ``(value, record_timestamp) -> int``. ``context`` has ``current_processing_time()``.
    """

    @abstractmethod
    def create_timestamp_assigner(self, context: Any) -> Any:
        """A new assigner for the task whose ``context`` is given."""

    @staticmethod
    def of(assigner: Any) -> TimestampAssignerSupplier:
        """A supplier handing out ``assigner`` itself to every task (Flink's
        ``TimestampAssignerSupplier.of``)."""
        if not callable(assigner) and not callable(getattr(assigner, "extract_timestamp", None)):
            raise TypeError(
                "assigner must be a TimestampAssigner or a callable (value, record_timestamp) -> "
                f"int, got {type(assigner).__name__}"
            )
        return _SupplierOf(assigner)


class _SupplierOf(TimestampAssignerSupplier):
    """The supplier of :meth:`TimestampAssignerSupplier.of`."""

    __slots__ = ("assigner",)

    def __init__(self, assigner: Any) -> None:
        self.assigner = assigner

    def create_timestamp_assigner(self, context: Any) -> Any:
        return self.assigner

    def __repr__(self) -> str:
        return f"TimestampAssignerSupplier.of({self.assigner!r})"
