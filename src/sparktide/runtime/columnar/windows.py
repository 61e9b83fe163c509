"""Tumbling and sliding event-time windows on arrays of timestamps.

A window ``[start, start + size)`` starts at ``offset`` modulo ``slide`` (tumbling: ``slide ==
size``), as :class:`~sparktide.core.window.assigners.SlidingEventTimeWindows` assigns them. Every
window is a union of **panes** of width ``gcd(size, slide)`` (Flink's pane-based aggregation): a
record is aggregated once into its pane, and a pane's aggregate into each of its windows.

>>> import numpy as np
>>> g = WindowGeometry(size=10, slide=5, offset=0)
>>> g.pane
5
>>> g.pane_starts(np.array([-1, 0, 7, 12])).tolist()
[-5, 0, 5, 10]
>>> g.earliest_max_timestamps(np.array([7])).tolist()  # [0, 10) is the first window of 7
[9]
>>> rows, starts = g.windows_of_panes(np.array([5]))
>>> rows.tolist(), starts.tolist()  # the windows of a record at 7, in the assigner's order
([0, 0], [5, 0])
>>> g.window_starts(7)
[5, 0]
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import numpy.typing as npt

__all__ = ["WindowGeometry"]

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class WindowGeometry:
    """The windows of a tumbling (``slide == size``) or sliding event-time assigner."""

    size: int
    slide: int
    offset: int

    def __post_init__(self) -> None:
        if self.size <= 0 or self.slide <= 0:
            raise ValueError(
                f"window size and slide must be > 0 ms, got size={self.size}, slide={self.slide}"
            )

    @property
    def pane(self) -> int:
        """The width of a pane: every window is a whole number of panes."""
        return gcd(self.size, self.slide)

    @property
    def windows_per_pane(self) -> int:
        """At most how many windows hold one pane (``ceil(size / slide)``)."""
        return -(-self.size // self.slide)

    def pane_starts(self, ts: I64) -> I64:
        """The start of the pane holding each timestamp."""
        pane = self.pane
        return ts - (ts - self.offset) % pane

    def earliest_max_timestamps(self, ts: I64) -> I64:
        """The ``max_timestamp`` of the earliest window holding each timestamp (the first to
        fire, and the first to become late)."""
        low = ts - self.size + 1
        first = low + (self.offset - low) % self.slide
        return first + self.size - 1

    def windows_of_panes(self, panes: I64) -> tuple[I64, I64]:
        """``(rows, starts)``: for each pane (by row), the starts of the windows that hold it,
        latest first (the assigner's order)."""
        k = self.windows_per_pane
        last = panes - (panes - self.offset) % self.slide
        starts = last[:, None] - self.slide * np.arange(k, dtype=np.int64)[None, :]
        valid = starts > (panes - self.size)[:, None]
        rows = np.broadcast_to(np.arange(len(panes), dtype=np.int64)[:, None], starts.shape)
        return rows[valid], starts[valid]

    def window_starts(self, ts: int) -> list[int]:
        """The starts of the windows holding ``ts``, latest first (one record, the assigner's
        order)."""
        start = ts - (ts - self.offset) % self.slide
        lowest = ts - self.size
        out = []
        while start > lowest:
            out.append(start)
            start -= self.slide
        return out
