"""The queues of the async wait operator (Flink's ``OrderedStreamElementQueue`` and
``UnorderedStreamElementQueue``).

A queue holds what the operator received and has not emitted yet: requests (a record and, once
complete, its results) and barriers (a watermark or a watermark status). Both count against
the capacity. :meth:`pop_ready` hands out, in emission order, what may be emitted now:

* ordered: the head of the queue while it is a barrier or a completed request, so everything
  leaves in input order;
* unordered: completed requests in completion order, but never across a barrier: a barrier
  splits the queue into segments, a segment's requests leave only once every earlier
  segment has left, and a barrier only once every request before it has. A request put
  ``after`` another (records of one input, whose outputs are numbered on from one another)
  leaves after it.

Only the task thread touches a queue; the operator tells it which requests completed.

>>> from sparktide.runtime.elements import StreamRecord
>>> q = OrderedQueue()
>>> a, b = Request(StreamRecord("a"), None), Request(StreamRecord("b"), None)
>>> q.put(a); q.put(b)
>>> q.complete(b); q.pop_ready()
[]
>>> q.complete(a); [r.value for r in q.pop_ready()], len(q)
(['a', 'b'], 0)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
    from sparktide.runtime.execution.protocol import CursorState

__all__ = ["Barrier", "Entry", "OrderedQueue", "Request", "UnorderedQueue"]


class Request:
    """One record's request: its results (or error) once complete, and where its outputs go
    (``mark``: the cursor state when it arrived, None outside a runner)."""

    __slots__ = (
        "after",
        "attempts",
        "done",
        "emitted",
        "error",
        "finished",
        "follower",
        "mark",
        "record",
        "results",
        "segment",
        "task",
        "timer",
        "value",
    )

    def __init__(self, record: StreamRecord, mark: CursorState | None) -> None:
        self.record = record
        self.value: object = record.value
        self.mark = mark
        self.done = False  # the task thread knows it is complete
        self.emitted = False
        self.after: Request | None = None  # leaves after this one (unordered)
        self.follower: Request | None = None  # the one that leaves after this one
        self.finished = False  # the loop thread completed it (results or error)
        self.results: list[object] = []
        self.error: BaseException | None = None
        self.attempts = 0
        self.segment: _Segment | None = None
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"Request({self.value!r}, done={self.done})"


class Barrier:
    """A watermark or watermark status held in the queue until the requests before it left."""

    __slots__ = ("element", "mark")

    def __init__(self, element: Watermark | WatermarkStatus, mark: CursorState | None) -> None:
        self.element = element
        self.mark = mark

    def __repr__(self) -> str:
        return f"Barrier({self.element!r})"


Entry = Request | Barrier


class OrderedQueue:
    """Emits in input order."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: deque[Entry] = deque()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, entry: Entry, after: Request | None = None) -> None:
        self._entries.append(entry)

    def complete(self, request: Request) -> None:
        request.done = True

    def pop_ready(self) -> list[Entry]:
        entries = self._entries
        out: list[Entry] = []
        while entries:
            head = entries[0]
            if type(head) is Request and not head.done:
                break
            out.append(entries.popleft())
        return out

    def check_invariants(self) -> None:
        """Every invariant (tests call it after each operation)."""
        for e in self._entries:
            if not isinstance(e, (Request, Barrier)):
                raise AssertionError(f"not an entry: {e!r}")


class _Segment:
    """Requests between two barriers (or one barrier on its own)."""

    __slots__ = ("done", "pending")

    def __init__(self) -> None:
        self.pending = 0  # requests not complete yet
        self.done: deque[Entry] = deque()  # complete, in completion order


class UnorderedQueue:
    """Emits in completion order within segments separated by barriers."""

    __slots__ = ("_segments", "_size")

    def __init__(self) -> None:
        self._segments: deque[_Segment] = deque([_Segment()])
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def put(self, entry: Entry, after: Request | None = None) -> None:
        segments = self._segments
        if type(entry) is Request:
            segment = segments[-1]
            segment.pending += 1
            entry.segment = segment
            if after is not None and not after.emitted:
                entry.after = after
                after.follower = entry
        else:
            last = segments[-1]
            if last.pending == 0 and not last.done:
                barrier = last  # an empty segment takes the barrier
            else:
                barrier = _Segment()
                segments.append(barrier)
            barrier.done.append(entry)
            segments.append(_Segment())
        self._size += 1

    def complete(self, request: Request) -> None:
        request.done = True
        after = request.after
        if after is not None and not after.emitted:
            return  # released when ``after`` leaves
        self._release(request)

    @staticmethod
    def _release(request: Request) -> None:
        segment = request.segment
        if segment is None:
            raise ValueError(f"{request!r} is not in this queue")
        segment.pending -= 1
        segment.done.append(request)

    def pop_ready(self) -> list[Entry]:
        segments = self._segments
        out: list[Entry] = []
        while True:
            head = segments[0]
            while head.done:
                entry = head.done.popleft()
                out.append(entry)
                if type(entry) is Request:
                    entry.emitted = True
                    follower = entry.follower
                    if follower is not None and follower.done:
                        self._release(follower)
            if head.pending or len(segments) == 1:
                break
            segments.popleft()
        self._size -= len(out)
        return out

    def check_invariants(self) -> None:
        """Every invariant (tests call it after each operation)."""
        if not self._segments:
            raise AssertionError("no segment")
        total = 0
        for segment in self._segments:
            if segment.pending < 0:
                raise AssertionError("negative pending count")
            barriers = [e for e in segment.done if type(e) is Barrier]
            if barriers and (len(segment.done) != 1 or segment.pending):
                raise AssertionError("a barrier shares its segment")
            total += segment.pending + len(segment.done)
        if total != self._size:
            raise AssertionError(f"size {self._size} but {total} entries")
