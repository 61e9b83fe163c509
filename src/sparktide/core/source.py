"""Source contracts: what a source gives the runtime (records, their timestamps, watermarks).

Two ways to write a source:

1. A :class:`SourceFunction` (Flink's legacy interface): ``run(ctx)`` pushes records into a
   :class:`SourceContext`, with ``collect_with_timestamp`` for event timestamps,
   ``emit_watermark`` for watermarks and ``mark_as_temporarily_idle`` for idleness. The runtime
   runs one with a :class:`~sparktide.runtime.source_reader.SourceFunctionDriver`.
2. A split-aware bounded :class:`Source`: ``get_splits()`` lists :class:`SourceSplit` objects
   and ``read_split(split)`` yields a split's records in order. Every split runs its **own**
   timestamp assigner and watermark generator (as Flink does per source split, e.g. per Kafka
   partition), so a slow split holds the watermark back instead of its records being dropped as
   late. The runtime reads each split with a
   :class:`~sparktide.runtime.source_reader.SplitReader`.

>>> SourceSplit("0", (0, 10)).split_id
'0'
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sparktide.common.watermark import Watermark

__all__ = ["Source", "SourceContext", "SourceFunction", "SourceSplit", "range_splits"]


class SourceContext(ABC):
    """What a :class:`SourceFunction` emits into (Flink's ``SourceFunction.SourceContext``).

    :class:`~sparktide.runtime.source_reader.SourceFunctionDriver` provides the runtime's
    implementation; a custom one (e.g. for a
    test) implements the four emitting methods.

    >>> class Printing(SourceContext):
    ...     def collect(self, element):
    ...         print("record", element)
    ...     def collect_with_timestamp(self, element, timestamp):
    ...         print("record", element, "at", timestamp)
    ...     def emit_watermark(self, watermark):
    ...         print("watermark", watermark)
    ...     def mark_as_temporarily_idle(self):
    ...         print("idle")
    >>> ctx = Printing()
    >>> with ctx.get_checkpoint_lock():
    ...     ctx.collect_with_timestamp("a", 5)
    record a at 5
    """

    @abstractmethod
    def collect(self, element: Any) -> None:
        """Emit a record without a timestamp (it carries ``None``)."""

    @abstractmethod
    def collect_with_timestamp(self, element: Any, timestamp: int) -> None:
        """Emit a record with an event timestamp (int ms)."""

    @abstractmethod
    def emit_watermark(self, watermark: Watermark | int) -> None:
        """Emit a watermark: no record with a timestamp ``<=`` it will follow."""

    @abstractmethod
    def mark_as_temporarily_idle(self) -> None:
        """Declare that no records will come for a while, so downstream operators do not wait
        for this source; the next record or watermark makes it active again."""

    def get_checkpoint_lock(self) -> AbstractContextManager[Any]:
        """A lock to hold while emitting together with state updates. Records and checkpoints
        never interleave here (one thread per task), so this is a no-op context manager."""
        return _NO_LOCK

    def close(self) -> None:  # noqa: B027 - optional hook
        """Called when the source finishes."""


_NO_LOCK: AbstractContextManager[Any] = contextlib.nullcontext()


class SourceFunction(ABC):
    """A source that pushes its records (Flink's legacy ``SourceFunction``).

    ``run`` emits until the input ends (a bounded source returns) or :meth:`cancel` is called.

    >>> class Numbers(SourceFunction):
    ...     def __init__(self, n):
    ...         self.n, self.running = n, True
    ...     def run(self, ctx):
    ...         for i in range(self.n):
    ...             if not self.running:
    ...                 return
    ...             ctx.collect_with_timestamp(i, i * 10)
    ...             if i % 2:
    ...                 ctx.emit_watermark(i * 10)
    ...     def cancel(self):
    ...         self.running = False
    >>> from sparktide.runtime.output import CollectingOutput
    >>> from sparktide.runtime.source_reader import SourceFunctionDriver
    >>> out = CollectingOutput()
    >>> SourceFunctionDriver(Numbers(3), out).run()
    >>> out.elements
    [StreamRecord(0, 0), StreamRecord(1, 10), Watermark(10), StreamRecord(2, 20), \
Watermark(9223372036854775807)]
    """

    @abstractmethod
    def run(self, ctx: SourceContext) -> None:
        """Emit records into ``ctx`` until done or cancelled."""

    @abstractmethod
    def cancel(self) -> None:
        """Ask :meth:`run` to return soon."""


@dataclass(frozen=True)
class SourceSplit:
    """One independently readable part of a source (a file, a partition, a chunk).

    ``split_id`` is unique within its source and orders the splits deterministically;
    ``payload`` is whatever the source needs to read the split.

    >>> SourceSplit("0", (0, 10))
    SourceSplit(split_id='0', payload=(0, 10))
    """

    split_id: str
    payload: Any = None

    def __post_init__(self) -> None:
        if type(self.split_id) is not str:
            raise TypeError(
                f"split_id must be a str, got {type(self.split_id).__name__} "
                f"({self.split_id!r}); use str(...)"
            )


def range_splits(first: int, count: int, n: int) -> list[SourceSplit]:
    """``count`` consecutive positions from ``first`` in ``n`` splits of sizes differing by
    at most one (the larger first), each with the payload ``(start, stop)``.

    >>> [s.payload for s in range_splits(10, 5, 2)]
    [(10, 13), (13, 15)]
    """
    size, extra = divmod(count, n)
    splits, start = [], first
    for i in range(n):
        stop = start + size + (1 if i < extra else 0)
        splits.append(SourceSplit(str(i), (start, stop)))
        start = stop
    return splits


class Source(ABC):
    """A bounded source whose records come in splits.

    Implement :meth:`get_splits` (deterministic: the same splits in the same order every time)
    and :meth:`read_split` (the records of one split, in order). Each split gets its own
    timestamp assigner and watermark generator from the job's watermark strategy.

    >>> class Lines(Source):
    ...     def __init__(self, files):
    ...         self.files = files  # name -> lines
    ...     def get_splits(self):
    ...         return [SourceSplit(name) for name in sorted(self.files)]
    ...     def read_split(self, split):
    ...         return iter(self.files[split.split_id])
    >>> src = Lines({"b.txt": ["3"], "a.txt": ["1", "2"]})
    >>> [list(src.read_split(s)) for s in src.get_splits()]
    [['1', '2'], ['3']]
    """

    @abstractmethod
    def get_splits(self) -> list[SourceSplit]:
        """The splits of this source, in a deterministic order."""

    @abstractmethod
    def read_split(self, split: SourceSplit) -> Iterable[Any]:
        """The records of ``split``, in order."""
