"""``LiveKeyedState``: the keyed state and timers of a heap subtask, handed from one operator to
the next.

A streaming worker runs the micro-batches of a subtask one after another, each with an operator
of its own. When two batches of a subtask run in the same worker, the state need not go through
a snapshot and a restore between them: the operator of the first hands its state tables and
timer queues over as they are (``AbstractStreamOperator.hand_over_live_state``), and the
operator of the next adopts them before it opens (``adopt_live_state``): a cost per state and
per timer service, not per key. The states then wait for their descriptors as restored
ones do (kind, TTL setting and declared types are checked when they register), and a timer
service for its operator.

Only the heap backend's state is handed over (the RocksDB backend keeps its own database open
between batches), and not when a state's TTL cleans up in full snapshots: a snapshot leaves its
expired values out, which the live tables still hold, and a batch that adopts must see what one
that restores sees.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> live = LiveKeyedState("op", 128, KeyGroupRange(0, 127), {}, None, {}, {})
>>> live.state_entries(), live.timer_count(0)
(0, 0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.runtime.state.heap import StateTable
from sparktide.runtime.state.snapshot_checks import StateMeta
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue

__all__ = ["HeapQueues", "LiveKeyedState", "SnapshotOrLive"]

HeapQueues = tuple[KeyGroupedTimerQueue[object, object], KeyGroupedTimerQueue[object, object]]
"""The heap queues of one timer service: ``(event time, processing time)``."""


class LiveKeyedState(NamedTuple):
    """What an operator hands over: the header a snapshot of it would have (``operator``,
    ``max_parallelism``, ``key_group_range``, ``state_meta``, ``key_type``), its state tables
    by name and its timer services' queues by name, as they are (not copies)."""

    operator: str
    max_parallelism: int
    key_group_range: KeyGroupRange
    state_meta: dict[str, StateMeta]
    key_type: dict[str, Any] | None
    tables: dict[str, StateTable]
    timers: dict[str, HeapQueues]

    def state_entries(self) -> int:
        """The ``(state, key, namespace)`` entries of every state."""
        return sum(table.num_entries() for table in self.tables.values())

    def timer_count(self, domain: int) -> int:
        """The pending timers of ``domain`` (0: event time, 1: processing time)."""
        return sum(len(queues[domain]) for queues in self.timers.values())


SnapshotOrLive = KeyedOperatorSnapshot | LiveKeyedState
"""A subtask's keyed state as a snapshot or as it is live (both have the snapshot's header)."""
