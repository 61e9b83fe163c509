"""The key-grouped priority queue set of timers (Flink's ``HeapPriorityQueueSet``).

A timer is ``(timestamp, key, namespace)``. The set keeps at most one timer per such triple
(registering an equal timer again is a no-op), orders them by timestamp, and breaks ties by
insertion order (a per-queue sequence number), so firing order is deterministic.

Layout:

* ``_heap`` is a binary min-heap of entries ``(timestamp, seq, key, namespace, key_group)``,
  maintained with :mod:`heapq` (C). ``seq`` is unique, so comparisons never reach the key.
* ``_run`` is a :class:`~collections.deque` of entries in ascending ``(timestamp, seq)`` order:
  a timer whose timestamp is at least the last one of the run is appended to it instead of
  pushed on the heap (timers registered in time order, such as "ts + timeout" per record, all
  take this path), and the earliest timer leaves it by ``popleft``, O(1) where the heap pays
  O(log n) comparisons. The head of the queue is the smaller of the two heads: the firing order
  is exactly the one a single heap gives.
* ``_maps[i]`` is the dedup map of local key group ``i``: ``(timestamp, key, namespace) ->
  entry``. It is the source of truth for membership, and gives per-key-group extraction for
  snapshots in O(timers of that group).
* Removal is O(1): the entry leaves its dedup map and stays in the heap as a dead entry,
  discarded as soon as it reaches the top (the top of the heap and the head of the run are
  always live). When dead entries outnumber live ones the heap is rebuilt in O(n) from the live
  entries (and the run emptied), so removal is O(1) amortized and the two never hold more than
  ~2x the live timers.
  (An index-tracking heap would need its sift loops in Python; keeping every heap operation in
  ``heapq`` makes register + fire about 2x cheaper; see ``benchmarks/timers.py``.)

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> q = KeyGroupedTimerQueue(KeyGroupRange(0, 127))
>>> q.add(20, "a", None, 5), q.add(10, "b", None, 7), q.add(20, "a", None, 5)
(True, True, False)
>>> q.peek()[:1], len(q)
((10,), 2)
>>> q.remove(10, "b", None, 7)
True
>>> [e[0] for e in q]
[20]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from heapq import heapify, heappop, heappush
from typing import Generic, NoReturn, TypeVar

from sparktide.runtime.keygroups import KeyGroupRange

__all__ = ["K", "KeyGroupedTimerQueue", "N", "TimerEntry", "TimerKey"]

K = TypeVar("K")
"""The key type of a timer (a user key: any supported key)."""

N = TypeVar("N")
"""The namespace type of a timer (``None`` for user timers, a window for window timers)."""

TimerEntry = tuple[int, int, K, N, int]
"""A timer as queued and snapshotted: ``(timestamp, seq, key, namespace, key_group)``. Plain
tuples: the heap compares them in C, and ``seq`` is unique so comparisons never reach the key."""

TimerKey = tuple[int, K, N]
"""A timer's identity in its key group's dedup map: ``(timestamp, key, namespace)``."""

_COMPACT_MIN_DEAD = 64


def _distinct_int_sequences(entries: list[TimerEntry[K, N]]) -> bool:
    """Whether the sequence numbers of ``entries`` are ints, each used once."""
    seqs = {e[1] for e in entries}
    return len(seqs) == len(entries) and all(type(q) is int for q in seqs)


class KeyGroupedTimerQueue(Generic[K, N]):
    """A set of timers ordered by ``(timestamp, insertion order)``, deduplicated per key group."""

    __slots__ = ("_dead", "_heap", "_kg_end", "_kg_start", "_maps", "_run", "_seq")

    def __init__(self, key_group_range: KeyGroupRange) -> None:
        if not isinstance(key_group_range, KeyGroupRange):
            raise TypeError(
                f"key_group_range must be a KeyGroupRange, got {type(key_group_range).__name__}"
            )
        self._kg_start = key_group_range.start
        self._kg_end = key_group_range.end
        # both containers keep their identity for the queue's life (the timer service holds them)
        self._heap: list[TimerEntry[K, N]] = []
        self._run: deque[TimerEntry[K, N]] = deque()
        self._maps: list[dict[TimerKey[K, N], TimerEntry[K, N]]] = [
            {} for _ in range(len(key_group_range))
        ]
        self._seq = 0
        self._dead = 0

    # ------------------------------------------------------------------ mutation

    def add(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Add a timer; return True if it became the new head (the earliest timer).

        Adding a timer that is already present changes nothing and returns False.
        """
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        m = self._maps[idx]
        tkey = (timestamp, key, namespace)
        if tkey in m:
            return False
        seq = self._seq
        self._seq = seq + 1
        entry = (timestamp, seq, key, namespace, key_group)
        m[tkey] = entry
        run = self._run
        heap = self._heap
        if not run or run[-1][0] <= timestamp:
            # after the last of the run (a larger seq breaks a tie): it stays sorted
            run.append(entry)
            return run[0] is entry and (not heap or entry < heap[0])
        heappush(heap, entry)
        return heap[0] is entry and entry < run[0]

    def remove(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Remove a timer if present; return True if it was the head. Absent timers: no-op."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        entry = self._maps[idx].pop((timestamp, key, namespace), None)
        if entry is None:
            return False
        heap, run = self._heap, self._run
        if heap and heap[0] is entry:
            was_head = not run or entry < run[0]
            heappop(heap)
        elif run and run[0] is entry:
            was_head = not heap or entry < heap[0]
            run.popleft()
        else:
            self._dead = dead = self._dead + 1
            if dead > _COMPACT_MIN_DEAD and dead > len(heap) + len(run) - dead:
                self._compact()
            return False
        if self._dead:
            self._drop_dead_top()
        return was_head

    def poll(self) -> TimerEntry[K, N] | None:
        """Remove and return the head entry ``(timestamp, seq, key, namespace, key_group)``."""
        heap, run = self._heap, self._run
        if run and (not heap or run[0] < heap[0]):
            entry = run.popleft()
        elif heap:
            entry = heappop(heap)
        else:
            return None
        del self._maps[entry[4] - self._kg_start][(entry[0], entry[2], entry[3])]
        if self._dead:
            self._drop_dead_top()
        return entry

    def poll_until(self, timestamp: int) -> TimerEntry[K, N] | None:
        """Remove and return the head if its timestamp is ``<= timestamp``, else None."""
        heap, run = self._heap, self._run
        if run and (not heap or run[0] < heap[0]):
            if run[0][0] > timestamp:
                return None
            entry = run.popleft()
        elif heap and heap[0][0] <= timestamp:
            entry = heappop(heap)
        else:
            return None
        del self._maps[entry[4] - self._kg_start][(entry[0], entry[2], entry[3])]
        if self._dead:
            self._drop_dead_top()
        return entry

    def clear(self) -> None:
        self._heap.clear()
        self._run.clear()
        for m in self._maps:
            m.clear()
        self._dead = 0

    # ------------------------------------------------------------------ queries

    def peek(self) -> TimerEntry[K, N] | None:
        """The head entry without removing it, or None when empty."""
        heap, run = self._heap, self._run
        if run and (not heap or run[0] < heap[0]):
            return run[0]
        return heap[0] if heap else None

    def contains(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return False
        return (timestamp, key, namespace) in self._maps[idx]

    def __len__(self) -> int:
        return len(self._heap) + len(self._run) - self._dead

    def __bool__(self) -> bool:
        return len(self._heap) + len(self._run) > self._dead

    def __iter__(self) -> Iterator[TimerEntry[K, N]]:
        """Live entries, key group by key group, in insertion order within a group."""
        for m in self._maps:
            yield from list(m.values())

    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange(self._kg_start, self._kg_end)

    def entries_for_key_group(self, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key_group`` sorted by ``(timestamp, seq)`` (snapshot order)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        return sorted(self._maps[idx].values())

    def timers_for_namespace(self, key: K, namespace: object, key_group: int) -> list[int]:
        """Timestamps of the timers of ``(key, namespace)``, ascending (O(timers of the group))."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        return sorted(e[0] for e in self._maps[idx].values() if e[2] == key and e[3] == namespace)

    def key_timers(self, key: K, key_group: int) -> list[TimerEntry[K, N]]:
        """The live entries of ``key`` (O(timers of its key group))."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return []
        return [e for e in self._maps[idx].values() if e[2] == key]

    def reset_key_timers(self, key: K, key_group: int, saved: Iterable[TimerEntry[K, N]]) -> None:
        """Make the timers of ``key`` exactly ``saved`` (entries :meth:`key_timers` returned
        earlier), with their original sequence numbers: their firing order is unchanged."""
        keep = {(e[0], e[2], e[3]): e for e in saved}
        for e in self.key_timers(key, key_group):
            if keep.get((e[0], e[2], e[3])) is not e:
                self.remove(e[0], e[2], e[3], key_group)
        m = self._maps[key_group - self._kg_start]
        for tkey, entry in keep.items():
            if tkey not in m:
                # a new tuple: a dead copy of the old one may still sit in the heap
                fresh = (entry[0], entry[1], entry[2], entry[3], entry[4])
                m[tkey] = fresh
                heappush(self._heap, fresh)

    # ------------------------------------------------------------------ restore

    def add_restored(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add restored timers ``(timestamp, seq, key, namespace, key_group)``.

        Into an empty queue, timers with distinct sequence numbers keep them, and new timers
        are numbered after the highest: a snapshot taken after the restore holds the same
        ``seq`` for every timer that did not change, so a changelog against the previous
        snapshot holds only the timers that did. Otherwise (timers from several snapshots whose
        numbers collide, as after a rescale, or a queue that already holds timers) they are
        re-sequenced in ``(timestamp, seq, key_group)`` order. Both give the same firing order:
        ``(timestamp, seq)`` among the restored timers, restored before new ones at a
        timestamp, so a restore at the same parallelism reproduces the original order exactly
        and any restore gives a deterministic one. Timers already present are kept once.
        """
        if self._heap or self._run or not _distinct_int_sequences(entries):
            self._resequence(entries)
            return
        maps, start, end = self._maps, self._kg_start, self._kg_end
        top = self._seq - 1
        for entry in entries:
            ts, seq, key, ns, kg = entry
            if kg < start or kg > end:
                self._raise_out_of_range(kg, key)
            m = maps[kg - start]
            tkey = (ts, key, ns)
            kept = m.get(tkey)
            if kept is None or seq < kept[1]:
                m[tkey] = (ts, seq, key, ns, kg)
            if seq > top:
                top = seq
        heap = self._heap
        heap[:] = [e for m in maps for e in m.values()]
        heapify(heap)
        self._seq = top + 1

    def _resequence(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add ``entries`` with new sequence numbers, in ``(timestamp, seq, key_group)`` order."""
        for ts, _old, key, ns, kg in sorted(entries, key=lambda e: (e[0], e[1], e[4])):
            self.add(ts, key, ns, kg)

    # ------------------------------------------------------------------ internals

    def _drop_dead_top(self) -> None:
        """Discard dead entries from the top of the heap and the head of the run."""
        heap, run = self._heap, self._run
        maps = self._maps
        start = self._kg_start
        while heap and self._dead:
            entry = heap[0]
            if maps[entry[4] - start].get((entry[0], entry[2], entry[3])) is entry:
                break
            heappop(heap)
            self._dead -= 1
        while run and self._dead:
            entry = run[0]
            if maps[entry[4] - start].get((entry[0], entry[2], entry[3])) is entry:
                break
            run.popleft()
            self._dead -= 1

    def _compact(self) -> None:
        """Rebuild the heap from the live entries and empty the run (no dead entries left)."""
        heap = self._heap
        heap[:] = [e for m in self._maps for e in m.values()]
        heapify(heap)
        self._run.clear()
        self._dead = 0

    def _raise_out_of_range(self, key_group: int, key: object) -> NoReturn:
        raise ValueError(
            f"timer for key {key!r} is in key group {key_group}, outside this queue's key-group "
            f"range [{self._kg_start}, {self._kg_end}]; timers must be registered by the subtask "
            "that owns the key (check the key selector and the max parallelism)"
        )

    def _check(self) -> None:
        """Assert every invariant (for tests; O(n))."""
        heap = self._heap
        for i in range(1, len(heap)):
            parent = heap[(i - 1) >> 1]
            if not (parent[:2] < heap[i][:2]):
                raise AssertionError(f"heap order broken at {i}")
        run = list(self._run)
        for i in range(1, len(run)):
            if not (run[i - 1][:2] < run[i][:2]):
                raise AssertionError(f"run order broken at {i}")
        live_ids = set()
        for idx, m in enumerate(self._maps):
            for tkey, entry in m.items():
                if not (tkey == (entry[0], entry[2], entry[3])):
                    raise AssertionError("dedup key does not match entry")
                if not (entry[4] == idx + self._kg_start):
                    raise AssertionError("entry in wrong key-group map")
                live_ids.add(id(entry))
        in_heap = [id(e) for e in heap + run if id(e) in live_ids]
        if not (len(in_heap) == len(set(in_heap))):
            raise AssertionError("a live entry is in the heap or the run twice")
        if not (set(in_heap) == live_ids):
            raise AssertionError("a live entry is missing from the heap and the run")
        if not (self._dead == len(heap) + len(run) - len(live_ids)):
            raise AssertionError("dead count is wrong")
        if not (all(e[1] < self._seq for e in heap + run)):
            raise AssertionError("sequence counter went backwards")
        if heap and id(heap[0]) not in live_ids:
            raise AssertionError("the head of the heap is a dead entry")
        if run and id(run[0]) not in live_ids:
            raise AssertionError("the head of the run is a dead entry")
