"""Operators that emit an input's outputs after later inputs arrived (async I/O, batches).

Such an operator holds its inputs for a while (an async request in flight, a record waiting for
its batch) and emits their outputs later. In a runner its outputs must still take the positions
they would have taken had it emitted at once, so that the job's output is the same as with a
synchronous operator at any parallelism: the runner gives it the task's
:class:`~sparktide.runtime.execution.protocol.Cursor` (:attr:`DeferredOutputOperator.cursor`),
it takes a mark of each input's place (:class:`OutputMarks`) and emits under it
(``Cursor.restore`` / ``Cursor.advance``). The runner calls :meth:`~DeferredOutputOperator.drain`
before it moves what the task emitted (after each chunk, at the end of each round and
micro-batch), and :meth:`~DeferredOutputOperator.before_clock_advance` before it moves a
simulated clock, so nothing is held across a round, a transport or a checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from sparktide.runtime.operators.base import AbstractStreamOperator

if TYPE_CHECKING:
    from sparktide.runtime.execution.protocol import Cursor, CursorState

__all__ = ["DeferredOutputOperator", "OutputMarks"]


class OutputMarks:
    """The marks of the current input's deferred outputs, each with what was last filed under
    it.

    Several records of one input (the outputs of a ``flat_map`` before, the timers of one key
    group fired by one watermark) share a mark, so their outputs number on from one another:
    :meth:`mark` hands the same mark back for them, and the operator counts the outputs in it
    (``Cursor.advance``) as it emits them in order. A new input starts new marks.
    """

    __slots__ = ("_at", "_marks")

    def __init__(self) -> None:
        self._at: object = None
        self._marks: dict[tuple[object, ...], tuple[CursorState, object]] = {}

    @staticmethod
    def _key(mark: CursorState) -> tuple[object, ...]:
        kg = mark.backend.current_key_group
        return (mark.n, mark.phase, mark.channel, mark.source_stage, kg)

    def mark(self, cursor: Cursor) -> tuple[CursorState, object]:
        """The mark of the current input's outputs, and what was filed under it (``None``
        for a new mark)."""
        mark = cursor.defer()
        if mark.position is not self._at:
            self._marks.clear()
            self._at = mark.position
        key = self._key(mark)
        known = self._marks.get(key)
        if known is not None:
            return known
        self._marks[key] = (mark, None)
        return mark, None

    def file(self, mark: CursorState, last: object) -> None:
        """Remember ``last`` as the latest item emitted under ``mark`` (async I/O orders an
        unordered queue's entries of one mark by it)."""
        self._marks[self._key(mark)] = (mark, last)


class DeferredOutputOperator(AbstractStreamOperator):
    """The base of operators that emit outputs of an input later (see the module docstring)."""

    kind: ClassVar[str] = "operator"
    """What the operator is called in errors (``"async operator"``)."""
    failure_advice: ClassVar[str] = "catch the error in the function instead"
    """What to do instead of ``with_failed_records()`` (which such an operator does not
    support: a failure surfaces after later records)."""

    def __init__(self) -> None:
        super().__init__()
        self.cursor: Cursor | None = None  # set by a runner: outputs get their input's place

    def drain(self) -> None:
        """Emit everything held (waiting for what it needs first)."""
        raise NotImplementedError

    def before_clock_advance(self) -> None:
        """The runner is about to move a simulated processing-time clock: emit what must
        reach the operators downstream before the timers it fires (nothing by default)."""
