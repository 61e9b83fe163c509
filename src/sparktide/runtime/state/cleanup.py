"""TTL cleanup: dropping expired values in the background (incremental) and from snapshots.

- Incremental (Flink's default for heap state): ``cleanup_size`` entries are checked per access
  of the state, and per record with ``run_cleanup_for_every_record``.
- Full snapshot: :func:`purge_expired` leaves expired values out of snapshots.

>>> purge_expired("list", [("a", 0), ("b", 5)], now=10, ttl=8)
[('b', 5)]
"""

from __future__ import annotations

from typing import Any

from sparktide.runtime.state.folding import EntryKey, KeyGroupDict
from sparktide.runtime.state.heap import StateTable

# A TTL table's raw values are typed Any here: their shape ((value, ts), a list of them or a
# dict of them) follows the table's kind string, which the checker cannot narrow on.

__all__ = ["IncrementalCleanup", "purge_expired"]


def purge_expired(kind: str, raw: Any, now: int, ttl: int) -> Any:
    """``raw`` without its expired values: ``None`` when nothing is left, ``raw`` itself when
    nothing expired, else a new list/dict.

    >>> purge_expired("value", ("v", 0), now=10, ttl=10) is None
    True
    >>> purge_expired("map", {"a": (1, 3)}, now=10, ttl=10)
    {'a': (1, 3)}
    """
    limit = now - ttl  # expired when ts <= now - ttl
    if kind == "list":
        alive = [e for e in raw if e[1] > limit]
        if len(alive) == len(raw):
            return raw
        return alive or None
    if kind == "map":
        alive_map = {k: e for k, e in raw.items() if e[1] > limit}
        if len(alive_map) == len(raw):
            return raw
        return alive_map or None
    return raw if raw[1] > limit else None


def _min_ts(kind: str, raw: Any) -> int:
    if kind == "list":
        return int(min(e[1] for e in raw))
    if kind == "map":
        return int(min(e[1] for e in raw.values()))
    return int(raw[1])


_MIN = -(2**63)


class IncrementalCleanup:
    """Walks a TTL table key group by key group, dropping expired values (Flink's
    ``TtlIncrementalCleanup``): ``cleanup_size`` entries per state access.

    Accesses only count down ``ticks``; every ``BATCH`` accesses :meth:`run` checks
    ``BATCH * cleanup_size`` entries at once (same amount of work, less overhead per access).
    A run moves past at most ``8 * BATCH * cleanup_size`` key groups, so its cost is bounded
    whatever the table looks like.

    Each full pass also learns a time before which nothing can expire: the oldest timestamp it
    kept, or its own start (anything written later is younger), plus the TTL. Until then runs
    return at once, so a table whose values are all fresh costs next to nothing. An access at
    a time earlier than the last run (the clock went back) drops the bound and the pass.
    """

    BATCH = 16

    __slots__ = (
        "_d",
        "_data",
        "_items",
        "_kg_pos",
        "_kgs",
        "_kind",
        "_moves",
        "_pass_min_ts",
        "_pass_start",
        "_pos",
        "_quiet_until",
        "_size",
        "_ttl",
        "high",
        "ticks",
    )

    def __init__(self, table: StateTable, ttl: int, cleanup_size: int) -> None:
        self._data: list[KeyGroupDict[Any]] = table.in_range()
        self._kgs = table.key_groups
        self._kind = table.kind
        self._ttl = ttl
        self._size = cleanup_size * self.BATCH
        self._moves = 8 * self._size
        self.ticks = self.BATCH
        self.reset()

    def reset(self) -> None:
        """Forget the current pass and its bound (entries were added from outside, e.g. by a
        restore)."""
        self._kg_pos = -1
        self._items: list[tuple[EntryKey, Any]] = []
        self._pos = 0
        self._d: KeyGroupDict[Any] = {}
        self._pass_start: int | None = None
        self._pass_min_ts: int | None = None
        self._quiet_until: int | None = None
        self.high = _MIN  # the latest time seen by a run

    def step(self, now: int) -> None:
        """Count one state access (at ``now``); runs the cleanup every ``BATCH`` accesses
        (and at once when the clock went back)."""
        self.ticks -= 1
        if not self.ticks or now < self.high:
            self.run(now)

    def run(self, now: int) -> None:
        """Check the next ``BATCH * cleanup_size`` entries, dropping expired values."""
        self.ticks = self.BATCH
        if now < self.high:  # the clock went back: values may be older than the pass start
            self.reset()
        self.high = now
        if (self._quiet_until is not None and now < self._quiet_until) or not self._kgs:
            return
        kgs = self._kgs
        budget, moves = self._size, self._moves
        items, pos, d = self._items, self._pos, self._d
        limit = now - self._ttl
        single = self._kind not in ("list", "map")
        while True:
            if pos < len(items):  # continue a large key group, from its listing
                chunk = items[pos : pos + budget]
                pos += len(chunk)
                budget -= len(chunk)
                self._purge(d, chunk, now)
            if budget <= 0 or moves <= 0:
                break
            moves -= 1
            i = self._kg_pos + 1
            if i >= len(kgs):
                i = 0
            if i == 0:
                if self._pass_start is not None:  # a full pass ends
                    low = self._pass_start
                    if self._pass_min_ts is not None and self._pass_min_ts < low:
                        low = self._pass_min_ts
                    self._quiet_until = low + self._ttl
                self._pass_start, self._pass_min_ts = now, None
                if self._quiet_until is not None and now < self._quiet_until:
                    self._kg_pos = -1
                    items, pos = [], 0
                    break
            self._kg_pos = i
            d = self._data[kgs[i]]
            items, pos = [], 0
            if not d:
                continue
            if len(d) <= budget:  # small key group: all of it now
                budget -= len(d)
                if single:
                    for k in [k for k, raw in d.items() if raw[1] <= limit]:
                        del d[k]
                    if d:
                        self._keep(min(raw[1] for raw in d.values()))
                else:
                    self._purge(d, list(d.items()), now)
            else:
                items = list(d.items())
        self._items, self._pos, self._d = items, pos, d

    def _keep(self, ts: int) -> None:
        if self._pass_min_ts is None or ts < self._pass_min_ts:
            self._pass_min_ts = ts

    def _purge(self, d: KeyGroupDict[Any], chunk: list[tuple[EntryKey, Any]], now: int) -> None:
        """Drop the expired values among ``chunk`` (``(entry_key, raw)`` as listed earlier)."""
        limit = now - self._ttl
        kind = self._kind
        for k, listed in chunk:
            raw = d.get(k)
            if raw is None:
                continue
            if kind != "list" and kind != "map" and raw is listed and raw[1] > limit:
                self._keep(raw[1])
                continue
            new = purge_expired(kind, raw, now, self._ttl)
            if new is None:
                del d[k]
                continue
            if new is not raw:
                d[k] = new
            self._keep(_min_ts(kind, new))
