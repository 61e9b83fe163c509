"""Peak resident memory of a process tree while something runs, sampled from ``/proc``.

The tree is this process and its descendants (on Spark: the JVM and its Python workers), so
the figure is what the whole run held. Where ``/proc`` is missing the peak is ``None``.

:func:`release_freed_memory` hands what this process freed back to the system, so that the
resident memory of the process is what it still holds (e.g. after the events were generated
and written out, before the measured runs).

>>> with PeakMemory() as peak:
...     data = bytearray(50 * 2**20)
>>> peak.mib is None or peak.mib >= 50
True
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType

from sparktide.runtime.memory_release import release_freed_memory

__all__ = ["PeakMemory", "release_freed_memory", "tree_rss_bytes"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss_bytes(root: int) -> int | None:
    """Resident bytes of ``root`` and its descendants, or ``None`` without ``/proc``."""
    if not Path("/proc/self/statm").exists():
        return None
    tree = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
        except OSError:
            continue
        todo.extend(tree.get(pid, ()))
    return total


class PeakMemory:
    """A context that samples the tree's resident memory every ``interval`` seconds."""

    def __init__(self, interval: float = 0.05, root: int | None = None) -> None:
        self.interval = interval
        self.root = os.getpid() if root is None else root
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            now = tree_rss_bytes(self.root)
            if now is not None:
                self.peak = now if self.peak is None else max(self.peak, now)
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mib(self) -> float | None:
        """The peak in MiB (``None`` without ``/proc``)."""
        return None if self.peak is None else self.peak / 2**20
