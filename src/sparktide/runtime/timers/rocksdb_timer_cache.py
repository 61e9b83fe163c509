"""The timers a RocksDB timer queue keeps in memory: the first timers of each key group, sorted,
and the heap of their heads.

Per local key group (index ``idx`` = key group - first key group of the range):

* ``entries[idx]``: the key group's first ``size`` timers ``(timestamp, seq, key, namespace,
  key_group)``, sorted. It is empty only when the key group has no timers, so its first entry
  is the key group's head. A timer enters it when it belongs to the head; when it runs dry and
  the store holds more timers, the queue refills it (:meth:`TimerCache.fill`);
* ``complete[idx]``: whether it holds every timer of its key group (no refill needed, and a
  timer not in it is not in the store);
* ``latest[idx]``: a timestamp at or after the key group's latest timer (removals leave it):
  a timer after it is new without a lookup (timers mostly come in time order); one before the
  last entry of a complete cache, or before the last entry's timestamp, is new unless
  :meth:`TimerCache.holds` finds it (str and int keys).

The heads of the key groups form a binary heap (``heapq``). An entry of that heap is current
while it is the first of its key group's entries; stale ones are dropped when they reach the
top, and the heap is rebuilt when they pile up.

>>> cache = TimerCache(start=0, groups=2, size=2)
>>> cache.note_latest(1, 20); cache.note_latest(0, 10)
>>> cache.admit(1, (20, 0, "a", None, 1)), cache.admit(0, (10, 1, "b", None, 0))
(True, True)
>>> cache.holds(0, 10, "b", None), cache.holds(0, 10, "c", None), cache.latest
(True, False, [10, 20])
>>> cache.peek()
(10, 1, 'b', None, 0)
>>> cache.pop(cache.peek())  # its key group has no other timer: no refill
False
>>> cache.peek()
(20, 0, 'a', None, 1)
"""

from __future__ import annotations

from bisect import bisect_left, insort
from heapq import heapify, heappop, heappush, heapreplace
from typing import Generic

from sparktide.runtime.timers.queue import K, N, TimerEntry
from sparktide.runtime.timers.rocksdb_timer_store import NO_TIMER

__all__ = ["TimerCache"]

_STALE_SLACK = 64


class TimerCache(Generic[K, N]):
    """The first ``size`` timers of each of ``groups`` key groups (the first is ``start``) and
    the heap of their heads (see the module docstring)."""

    __slots__ = ("_heads", "_size", "_start", "complete", "entries", "latest")

    def __init__(self, start: int, groups: int, size: int) -> None:
        self._start = start
        self._size = size
        self.entries: list[list[TimerEntry[K, N]]] = [[] for _ in range(groups)]
        self.complete = [True] * groups
        self.latest = [NO_TIMER] * groups
        self._heads: list[TimerEntry[K, N]] = []

    @property
    def size(self) -> int:
        """Timers per key group held at most."""
        return self._size

    # ------------------------------------------------------------------ what memory knows

    def holds(self, idx: int, timestamp: int, key: K, namespace: N) -> bool:
        """Whether the entries of local key group ``idx`` hold timer ``(timestamp, key,
        namespace)`` (by ``==``). Memory proves a timer new when this is False and the entries
        hold every timer of the key group up to it: ``complete[idx]``, or ``timestamp`` before
        the last entry's; for ``str`` and ``int`` keys only, whose ``==`` is the store's
        equality of key bytes."""
        cache = self.entries[idx]
        i = bisect_left(cache, (timestamp,))
        n = len(cache)
        while i < n:
            e = cache[i]
            if e[0] != timestamp:
                break
            if e[2] == key and e[3] == namespace:
                return True
            i += 1
        return False

    def note_latest(self, idx: int, timestamp: int) -> None:
        """A timer at ``timestamp`` is stored in local key group ``idx``."""
        if timestamp > self.latest[idx]:
            self.latest[idx] = timestamp

    # ------------------------------------------------------------------ changes

    def admit(self, idx: int, entry: TimerEntry[K, N]) -> bool:
        """Take a stored timer of local key group ``idx`` if it belongs to the key group's head;
        return True if it became the head of every key group."""
        cache = self.entries[idx]
        if self.complete[idx]:
            if len(cache) < self._size:
                insort(cache, entry)
            else:
                self.complete[idx] = False
                if entry < cache[-1]:
                    insort(cache, entry)
                    cache.pop()
        elif entry < cache[-1]:  # an incomplete cache is never empty
            insort(cache, entry)
            if len(cache) > self._size:
                cache.pop()
        if cache[0] is not entry:
            return False
        self._push_head(entry)
        return self.peek() is entry

    def pop(self, head: TimerEntry[K, N]) -> bool:
        """Remove ``head`` (what :meth:`peek` returned); return True if its key group's entries
        ran dry while the store holds more (the queue refills them: :meth:`fill`)."""
        idx = head[4] - self._start
        cache = self.entries[idx]
        del cache[0]
        if cache:  # the key group's next timer replaces it at the top: one sift, no growth
            heapreplace(self._heads, cache[0])
            return False
        heappop(self._heads)
        return not self.complete[idx]

    def discard(self, idx: int, timestamp: int, seq: int) -> bool:
        """Remove timer ``(timestamp, seq)`` of local key group ``idx`` if held; return True if
        the entries ran dry while the store holds more (the queue refills them)."""
        cache = self.entries[idx]
        i = bisect_left(cache, (timestamp, seq))
        if i == len(cache) or cache[i][1] != seq:
            return False
        del cache[i]
        if i:
            return False
        if cache:
            self._push_head(cache[0])
            return False
        return not self.complete[idx]

    def fill(self, idx: int, found: list[TimerEntry[K, N]]) -> None:
        """Refill the entries of local key group ``idx`` with ``found``, its first timers in
        the store (``size + 1`` asked for: more than ``size`` means the store holds more)."""
        cache = self.entries[idx]
        cache[:] = found[: self._size]
        self.complete[idx] = len(found) <= self._size
        if cache:
            self._push_head(cache[0])

    def load(self, groups: list[list[TimerEntry[K, N]]], latest: list[int]) -> None:
        """Replace everything: per local key group its first timers in the store (as
        :meth:`fill`), and its latest timestamp."""
        for idx, found in enumerate(groups):
            self.entries[idx] = found[: self._size]
            self.complete[idx] = len(found) <= self._size
        self.latest[:] = latest
        self._rebuild_heads()

    def clear(self) -> None:
        """Forget every timer (the store holds none)."""
        for cache in self.entries:
            cache.clear()
        n = len(self.entries)
        self.complete[:] = [True] * n
        self.latest[:] = [NO_TIMER] * n
        self._heads.clear()

    # ------------------------------------------------------------------ the heap of heads

    def peek(self) -> TimerEntry[K, N] | None:
        """The earliest timer of every key group, after dropping stale heads."""
        heads, caches, start = self._heads, self.entries, self._start
        while heads:
            top = heads[0]
            cache = caches[top[4] - start]
            if cache and cache[0] is top:
                return top
            heappop(heads)
        return None

    def _push_head(self, entry: TimerEntry[K, N]) -> None:
        heads = self._heads
        heappush(heads, entry)
        if len(heads) > 2 * len(self.entries) + _STALE_SLACK:
            self._rebuild_heads()

    def _rebuild_heads(self) -> None:
        self._heads[:] = [c[0] for c in self.entries if c]
        heapify(self._heads)

    # ------------------------------------------------------------------ invariants

    def check_invariants(self, idx: int, stored: list[TimerEntry[K, N]]) -> None:
        """Raise AssertionError unless the memory of local key group ``idx`` agrees with its
        timers in the store, ``stored`` (in firing order), and the heap holds its head."""
        cache = self.entries[idx]
        if len(cache) > self._size:
            raise AssertionError(f"cache {idx} holds {len(cache)} > {self._size}")
        if [e[:2] for e in cache] != [e[:2] for e in stored[: len(cache)]]:
            raise AssertionError(f"cache {idx} is not the head of its key group's timers")
        if stored and stored[-1][0] > self.latest[idx]:
            raise AssertionError(f"a timer of cache {idx} is after its latest bound")
        if self.complete[idx] and len(stored) != len(cache):
            raise AssertionError(f"complete flag of cache {idx} is wrong")
        if stored and not cache:
            raise AssertionError(f"cache {idx} is empty while its key group has timers")
        if cache and not any(h is cache[0] for h in self._heads):
            raise AssertionError("a key group's head is missing from the heap of heads")

    def check_top(self) -> None:
        """Raise AssertionError unless :meth:`peek` gives the earliest head."""
        heads = [c[0] for c in self.entries if c]
        if self.peek() is not (min(heads) if heads else None):
            raise AssertionError("the top of the heap of heads is not the earliest timer")
