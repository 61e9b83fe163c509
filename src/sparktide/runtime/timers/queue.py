"""The key-grouped priority queue set of timers (Flink's ``HeapPriorityQueueSet``).

A timer is ``(timestamp, key, namespace)``. The set keeps at most one timer per such triple
(registering an equal timer again is a no-op), orders them by timestamp, and breaks ties by
insertion order (a per-queue sequence number), so firing order is deterministic.

Layout:

* ``_run`` is a :class:`~collections.deque` of entries ``(timestamp, seq, key, namespace,
  key_group)`` in ascending ``(timestamp, seq)`` order: a timer whose timestamp is at least
  the last one of the run is appended to it (timers registered in time order, such as "ts +
  timeout" per record, all take this path), and the earliest leaves it by ``popleft``.
* Every other timer goes to the *bucket* of its timestamp: ``_buckets`` maps a timestamp to the
  list of its entries in ``seq`` order (a new timer has the highest ``seq`` so far and is
  appended). Many timers share a timestamp (the end of a window, for every key), so such a
  registration is an append and its firing an index step. ``_heap`` is a binary min-heap
  (:mod:`heapq`, C) of the timestamps that have a bucket: int comparisons, one per timestamp.
  The head bucket (of ``_heap[0]``) is consumed from the front: its first ``_pos`` entries
  have left the queue; when an earlier bucket arrives that part is cut off.
* The head of the queue is the smaller of the run's first entry and the head bucket's entry at
  ``_pos``: the firing order is exactly the one a single heap of entries gives.
* ``_maps[i]`` is the dedup map of local key group ``i``: ``(timestamp, key, namespace) ->
  entry``. It is the source of truth for membership, and gives per-key-group extraction for
  snapshots in O(timers of that group).
* Removal is O(1): the entry leaves its dedup map and stays in the run or its bucket as a dead
  entry, skipped as soon as it reaches the front (the run's first entry and the head bucket's
  current one are always live). When dead entries outnumber live ones, the queue is rebuilt
  from the live entries, so removal is O(1) amortized and the run and the buckets never hold
  more than ~2x the live timers.
* A rebuild (that compaction, a restore, a checkpoint's changes applied) puts every live timer
  in the run, sorted by numpy over the ``(timestamp, seq)`` columns, and empties the buckets.

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

from bisect import insort
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from heapq import heappop, heappush
from itertools import chain, groupby
from operator import itemgetter
from typing import Any, Generic, NoReturn, Protocol, TypeVar

import numpy as np

from sparktide.runtime.keygroups import KeyGroupRange

__all__ = ["AssignedKey", "K", "KeyGroupedTimerQueue", "N", "TimerEntry", "TimerKey"]

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


class AssignedKey(Protocol):
    """A key context that firing loops may set by assigning its two attributes, instead of
    calling its ``set_current_key_and_group``: the heap keyed state backend while it has no
    hooks (:meth:`~sparktide.runtime.state.backend.HeapKeyedStateBackend.key_hooks`)."""

    current_key: Any
    current_key_group: int


_SEQ = itemgetter(1)
_TIMESTAMP = itemgetter(0)
_KEY_GROUP = itemgetter(4)


def _keep_first(m: dict[TimerKey[K, N], TimerEntry[K, N]], entries: list[TimerEntry[K, N]]) -> None:
    """Add ``entries`` to the dedup map ``m`` as tuples, a timer there twice with its lowest
    sequence number."""
    for ts, seq, key, ns, kg in entries:
        tkey = (ts, key, ns)
        kept = m.get(tkey)
        if kept is None or seq < kept[1]:
            m[tkey] = (ts, seq, key, ns, kg)


def _distinct_int_sequences(entries: list[TimerEntry[K, N]]) -> bool:
    """Whether the sequence numbers of ``entries`` are ints, each used once."""
    seqs = {e[1] for e in entries}
    return len(seqs) == len(entries) and all(type(q) is int for q in seqs)


def _in_order(entries: list[TimerEntry[K, N]]) -> list[TimerEntry[K, N]]:
    """``entries`` sorted by ``(timestamp, seq)``: by numpy's sort of the two columns when
    both are ints of 64 bits (a fraction of the cost of comparing the tuples), else by
    ``sorted``."""
    if len(entries) < 2:
        return entries
    stamps = list(map(_TIMESTAMP, entries))
    seqs = list(map(_SEQ, entries))
    if not all(type(t) is int for t in chain(stamps, seqs)):
        return sorted(entries)
    try:
        order = np.lexsort((np.array(seqs, np.int64), np.array(stamps, np.int64)))
    except OverflowError:
        return sorted(entries)
    return list(itemgetter(*order.tolist())(entries))


class KeyGroupedTimerQueue(Generic[K, N]):
    """A set of timers ordered by ``(timestamp, insertion order)``, deduplicated per key group."""

    __slots__ = (
        "_buckets",
        "_count",
        "_dead",
        "_heap",
        "_kg_end",
        "_kg_start",
        "_maps",
        "_pos",
        "_run",
        "_seq",
    )

    def __init__(self, key_group_range: KeyGroupRange) -> None:
        if not isinstance(key_group_range, KeyGroupRange):
            raise TypeError(
                f"key_group_range must be a KeyGroupRange, got {type(key_group_range).__name__}"
            )
        self._kg_start = key_group_range.start
        self._kg_end = key_group_range.end
        # the containers keep their identity for the queue's life (the timer service holds them)
        self._heap: list[int] = []
        self._run: deque[TimerEntry[K, N]] = deque()
        self._buckets: dict[int, list[TimerEntry[K, N]]] = {}
        self._maps: list[dict[TimerKey[K, N], TimerEntry[K, N]]] = [
            {} for _ in range(len(key_group_range))
        ]
        self._pos = 0
        self._seq = 0
        self._dead = 0
        self._count = 0

    # ------------------------------------------------------------------ mutation

    def add(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Add a timer; return True if it became the new head (the earliest timer).

        Adding a timer that is already present changes nothing and returns False.
        """
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        seq = self._seq
        entry = (timestamp, seq, key, namespace, key_group)
        if self._maps[idx].setdefault((timestamp, key, namespace), entry) is not entry:
            return False  # already present (one hash of the timer's identity either way)
        self._seq = seq + 1
        self._count += 1
        run = self._run
        heap = self._heap
        if not run or run[-1][0] <= timestamp:
            # after the last of the run (a larger seq breaks a tie): it stays sorted
            run.append(entry)
            return run[0] is entry and (not heap or timestamp < heap[0])
        bucket = self._buckets.get(timestamp)
        if bucket is not None:
            bucket.append(entry)  # after a live entry or in a later bucket: not the head
            return False
        self._buckets[timestamp] = [entry]
        if heap and heap[0] < timestamp:
            heappush(heap, timestamp)
            return False
        if self._pos:
            self._cut_head()
        heappush(heap, timestamp)
        return timestamp < run[0][0]  # (the run is not empty here; a tie: the run is first)

    def remove(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        """Remove a timer if present; return True if it was the head. Absent timers: no-op."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            self._raise_out_of_range(key_group, key)
        entry = self._maps[idx].pop((timestamp, key, namespace), None)
        if entry is None:
            return False
        self._count -= 1
        heap, run = self._heap, self._run
        if run and run[0] is entry:
            was_head = not heap or entry < self._buckets[heap[0]][self._pos]
            run.popleft()
            if self._dead:
                self._drop_dead_top()
            return was_head
        if heap and heap[0] == timestamp and self._buckets[timestamp][self._pos] is entry:
            was_head = not run or entry < run[0]
            self._pos += 1
            self._drop_dead_top()
            return was_head
        self._dead = dead = self._dead + 1
        if dead > _COMPACT_MIN_DEAD and dead > self._count:
            self._compact()
        return False

    def poll(self) -> TimerEntry[K, N] | None:
        """Remove and return the head entry ``(timestamp, seq, key, namespace, key_group)``."""
        head = self.peek()
        return None if head is None else self._pop(head)

    def poll_until(self, timestamp: int) -> TimerEntry[K, N] | None:
        """Remove and return the head if its timestamp is ``<= timestamp``, else None."""
        head = self.peek()
        return None if head is None or head[0] > timestamp else self._pop(head)

    def fire_until(
        self,
        timestamp: int,
        set_key: Callable[[K, int], object],
        fire: Callable[[int, K, N], object],
        assign: AssignedKey | None = None,
        hooks: Sized = (),
    ) -> int:
        """Remove every timer ``<= timestamp`` in firing order, setting its key (``set_key(key,
        key_group)``, or assigning ``assign``'s key while ``hooks`` is empty:
        :class:`AssignedKey`) and then calling ``fire(timestamp, key, namespace)``; return how
        many fired. ``fire`` may add and remove timers: one due by ``timestamp`` fires too.
        The loop keeps the queue's fields in locals and reads back only what a callback can
        change (``_pos``, ``_dead``)."""
        heap, run, buckets, maps = self._heap, self._run, self._buckets, self._maps
        if assign is None:
            hooks = (True,)  # no context to assign: always set_key
        start = self._kg_start
        fired = 0
        while True:
            if heap:
                bucket = buckets[heap[0]]
                pos = self._pos
                entry = bucket[pos]
                if run and run[0] < entry:
                    entry = run[0]
                    if entry[0] > timestamp:
                        break
                    run.popleft()
                    if self._dead:
                        self._drop_dead_top()
                else:
                    if entry[0] > timestamp:
                        break
                    pos += 1
                    if self._dead:
                        self._pos = pos
                        self._drop_dead_top()
                    elif pos == len(bucket):
                        del buckets[heappop(heap)]
                        self._pos = 0
                    else:
                        self._pos = pos
            elif run and run[0][0] <= timestamp:
                entry = run.popleft()
                if self._dead:
                    self._drop_dead_top()
            else:
                break
            key, kg = entry[2], entry[4]
            del maps[kg - start][(entry[0], key, entry[3])]
            self._count -= 1
            if hooks:
                set_key(key, kg)
            else:
                assign.current_key = key  # type: ignore[union-attr]  # (not None: hooks)
                assign.current_key_group = kg  # type: ignore[union-attr]
            fire(entry[0], key, entry[3])
            fired += 1
        return fired

    def _pop(self, head: TimerEntry[K, N]) -> TimerEntry[K, N]:
        """Remove ``head`` (the head of the queue) and return it."""
        del self._maps[head[4] - self._kg_start][(head[0], head[2], head[3])]
        self._count -= 1
        run = self._run
        if run and run[0] is head:
            run.popleft()
            if self._dead:
                self._drop_dead_top()
        else:
            self._pos += 1
            self._drop_dead_top()
        return head

    def clear(self) -> None:
        self._heap.clear()
        self._run.clear()
        self._buckets.clear()
        for m in self._maps:
            m.clear()
        self._pos = self._dead = self._count = 0

    # ------------------------------------------------------------------ queries

    def peek(self) -> TimerEntry[K, N] | None:
        """The head entry without removing it, or None when empty."""
        heap, run = self._heap, self._run
        if heap:
            head = self._buckets[heap[0]][self._pos]
            return run[0] if run and run[0] < head else head
        return run[0] if run else None

    def contains(self, timestamp: int, key: K, namespace: N, key_group: int) -> bool:
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return False
        return (timestamp, key, namespace) in self._maps[idx]

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def heap_size(self) -> int:
        """The timestamps the queue's heap holds, those left by removed timers included until a
        compaction drops them: a memory diagnostic (compactions keep it within about twice the
        live timers)."""
        return len(self._heap)

    def __iter__(self) -> Iterator[TimerEntry[K, N]]:
        """Live entries, key group by key group, in insertion order within a group."""
        for m in self._maps:
            yield from list(m.values())

    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange(self._kg_start, self._kg_end)

    def key_group_timers(self, key_group: int) -> Mapping[TimerKey[K, N], TimerEntry[K, N]]:
        """The live entries of ``key_group`` by ``(timestamp, key, namespace)``, in no
        particular order (the queue's own map: read it, do not keep it)."""
        idx = key_group - self._kg_start
        if idx < 0 or key_group > self._kg_end:
            return {}
        return self._maps[idx]

    def last_timestamp(self) -> int | None:
        """The latest timestamp of a live timer (``None``: empty); O(timers), in C."""
        if not self._count:
            return None
        last: int = max(map(_TIMESTAMP, chain.from_iterable(m.values() for m in self._maps)))
        return last

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
        buckets, heap = self._buckets, self._heap
        for tkey, entry in keep.items():
            if tkey not in m:
                # a new tuple: a dead copy of the old one may still sit in a bucket
                fresh = (entry[0], entry[1], entry[2], entry[3], entry[4])
                m[tkey] = fresh
                self._count += 1
                if self._pos:
                    self._cut_head()  # the fresh entry may sort before the consumed ones
                bucket = buckets.get(fresh[0])
                if bucket is None:
                    buckets[fresh[0]] = [fresh]
                    heappush(heap, fresh[0])
                else:
                    insort(bucket, fresh, key=_SEQ)
        if self._dead:
            self._drop_dead_top()

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
        if self._count or not _distinct_int_sequences(entries):
            self._resequence(entries)
            return
        start, end = self._kg_start, self._kg_end
        for kg, grouped in groupby(entries, key=_KEY_GROUP):
            group = list(grouped)
            if kg < start or kg > end:
                self._raise_out_of_range(kg, group[0][2])
            m = self._maps[kg - start]
            fresh = {(e[0], e[2], e[3]): e for e in group}
            if m or len(fresh) < len(group) or not all(type(e) is tuple for e in group):
                _keep_first(m, group)  # timers there twice, or entries to copy
            else:
                m.update(fresh)
        self._rebuild()
        self._seq = max(self._seq, max(map(_SEQ, entries), default=-1) + 1)

    def renumber_as_restored(self) -> None:
        """Number the timers added from now on after the highest live one, as
        :meth:`add_restored` does into a new queue: a queue handed from one batch's operator to
        the next gives new timers the very numbers a queue restored from its snapshot would
        (O(timers), in C)."""
        live = chain.from_iterable(m.values() for m in self._maps)
        self._seq = max(map(_SEQ, live), default=-1) + 1

    def apply_restored_changes(
        self, puts: Iterable[TimerEntry[K, N]], deletes: Iterable[TimerEntry[K, N]]
    ) -> None:
        """Change the timers as a checkpoint's changelog says: ``deletes`` (entries whose
        sequence numbers are not read) go, ``puts`` are added with their sequence numbers;
        then the order is rebuilt and numbering goes on as after :meth:`add_restored`."""
        maps, start, end = self._maps, self._kg_start, self._kg_end
        for ts, _seq, key, ns, kg in deletes:
            if kg < start or kg > end:
                self._raise_out_of_range(kg, key)
            maps[kg - start].pop((ts, key, ns), None)
        for entry in puts:
            ts, _seq, key, ns, kg = entry
            if kg < start or kg > end:
                self._raise_out_of_range(kg, key)
            maps[kg - start][(ts, key, ns)] = entry
        self._rebuild()
        self.renumber_as_restored()

    def _resequence(self, entries: list[TimerEntry[K, N]]) -> None:
        """Add ``entries`` with new sequence numbers, in ``(timestamp, seq, key_group)`` order."""
        for ts, _old, key, ns, kg in sorted(entries, key=lambda e: (e[0], e[1], e[4])):
            self.add(ts, key, ns, kg)

    # ------------------------------------------------------------------ internals

    def _cut_head(self) -> None:
        """Drop the consumed part of the head bucket (before another bucket becomes head)."""
        del self._buckets[self._heap[0]][: self._pos]
        self._pos = 0

    def _drop_dead_top(self) -> None:
        """Make the fronts live: step over dead entries of the head bucket (dropping exhausted
        buckets) and of the run."""
        heap, buckets = self._heap, self._buckets
        maps, start = self._maps, self._kg_start
        pos = self._pos
        while heap:
            bucket = buckets[heap[0]]
            n = len(bucket)
            while pos < n:
                if not self._dead:
                    break
                e = bucket[pos]
                if maps[e[4] - start].get((e[0], e[2], e[3])) is e:
                    break
                pos += 1
                self._dead -= 1
            if pos < n:
                break
            del buckets[heappop(heap)]
            pos = 0
        self._pos = pos if heap else 0
        run = self._run
        while run and self._dead:
            e = run[0]
            if maps[e[4] - start].get((e[0], e[2], e[3])) is e:
                break
            run.popleft()
            self._dead -= 1

    def _compact(self) -> None:
        """Rebuild the buckets from the live entries (no dead entries left)."""
        self._rebuild()

    def _rebuild(self) -> None:
        """The run from the dedup maps, every live timer in ``(timestamp, seq)`` order (the
        buckets and the heap emptied)."""
        self._buckets.clear()
        self._heap.clear()
        self._pos = 0
        self._dead = 0
        run = self._run
        run.clear()
        run.extend(_in_order(list(chain.from_iterable(m.values() for m in self._maps))))
        self._count = len(run)

    def _raise_out_of_range(self, key_group: int, key: object) -> NoReturn:
        raise ValueError(
            f"timer for key {key!r} is in key group {key_group}, outside this queue's key-group "
            f"range [{self._kg_start}, {self._kg_end}]; timers must be registered by the subtask "
            "that owns the key (check the key selector and the max parallelism)"
        )

    def check_invariants(self) -> None:
        """Assert every invariant (for tests; O(n))."""
        heap, buckets = self._heap, self._buckets
        for i in range(1, len(heap)):
            if not (heap[(i - 1) >> 1] < heap[i]):
                raise AssertionError(f"heap order broken at {i}")
        if sorted(heap) != sorted(buckets):
            raise AssertionError("the heap does not hold exactly the bucket timestamps")
        live: dict[int, TimerEntry[K, N]] = {}
        for idx, m in enumerate(self._maps):
            for tkey, entry in m.items():
                if not (tkey == (entry[0], entry[2], entry[3])):
                    raise AssertionError("dedup key does not match entry")
                if not (entry[4] == idx + self._kg_start):
                    raise AssertionError("entry in wrong key-group map")
                live[id(entry)] = entry
        if self._count != len(live):
            raise AssertionError("live count is wrong")
        if not heap and self._pos:
            raise AssertionError("an empty queue has a consumed head")
        run = list(self._run)
        for i in range(1, len(run)):
            if not (run[i - 1][:2] < run[i][:2]):
                raise AssertionError(f"run order broken at {i}")
        if run and id(run[0]) not in live:
            raise AssertionError("the head of the run is a dead entry")
        pending: list[int] = [id(e) for e in run]
        for ts, bucket in buckets.items():
            if not bucket:
                raise AssertionError(f"empty bucket at {ts}")
            for i, e in enumerate(bucket):
                if e[0] != ts:
                    raise AssertionError(f"entry {e[:2]} in the bucket of {ts}")
                # (a timer reset to a saved entry shares its seq with its dead old copy)
                if i and not (bucket[i - 1][1] <= e[1]):
                    raise AssertionError(f"bucket {ts} out of seq order at {i}")
                if not (e[1] < self._seq):
                    raise AssertionError("sequence counter went backwards")
            first = self._pos if heap and ts == heap[0] else 0
            pending.extend(id(e) for e in bucket[first:])
        if heap and not (self._pos < len(buckets[heap[0]])):
            raise AssertionError("the head bucket is consumed")
        in_buckets = [i for i in pending if i in live]
        if not (len(in_buckets) == len(set(in_buckets))):
            raise AssertionError("a live entry is in the run or the buckets twice")
        if not (set(in_buckets) == set(live)):
            raise AssertionError("a live entry is missing from the run and the buckets")
        if not (self._dead == len(pending) - len(in_buckets)):
            raise AssertionError("dead count is wrong")
        if heap and id(buckets[heap[0]][self._pos]) not in live:
            raise AssertionError("the head of the buckets is a dead entry")
