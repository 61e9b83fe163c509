"""``WindowStagger``: how tumbling processing-time windows of different subtasks are shifted
against each other (Flink's ``WindowStagger``).

With aligned windows every subtask fires all its panes at the same instant (each window end),
a burst of work on the whole job. A stagger adds an offset to the windows of one subtask, chosen
once, when the assigner places its first element:

- ``ALIGNED``: no offset; every subtask's windows start at ``k * size + offset`` (the default);
- ``RANDOM``: a random offset in ``[0, size)`` per subtask (Flink's
  ``(long) (random() * size)``);
- ``NATURAL``: the distance of the first element's processing time from the start of its
  aligned window, so the subtask's windows start when its first element arrives.

>>> WindowStagger.ALIGNED.get_stagger_offset(1_234, 1_000)
0
>>> WindowStagger.NATURAL.get_stagger_offset(1_234, 1_000)
234
>>> 0 <= WindowStagger.RANDOM.get_stagger_offset(1_234, 1_000) < 1_000
True
"""

from __future__ import annotations

import random
from enum import Enum

__all__ = ["WindowStagger"]


class WindowStagger(Enum):
    """The offset added to the windows of one subtask (see the module docstring).

    ``RANDOM`` draws from Python's ``random`` module, so its windows differ between runs unless
    the program seeds it; ``ALIGNED`` and ``NATURAL`` depend only on the processing time.
    """

    ALIGNED = "ALIGNED"
    RANDOM = "RANDOM"
    NATURAL = "NATURAL"

    def get_stagger_offset(self, current_processing_time: int, size: int) -> int:
        """The offset in ``[0, size)`` for a subtask whose first element arrives at
        ``current_processing_time`` (ms), for windows of ``size`` ms."""
        if self is WindowStagger.RANDOM:
            return int(random.random() * size)
        if self is WindowStagger.NATURAL:
            start = current_processing_time - current_processing_time % size
            return max(0, current_processing_time - start)
        return 0

    def __repr__(self) -> str:
        return f"WindowStagger.{self.name}"
