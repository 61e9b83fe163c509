"""Whether a window operator takes the window fast path
(:mod:`~sparktide.runtime.operators.window_fast`), and why: the rule, in one place.

The job's path choice (:func:`sparktide.runtime.execution.path.choose_path`) applies it to
every window operator of a job and hands each operator its decision
(:attr:`WindowOperator.fast_path <sparktide.runtime.operators.window.WindowOperator>`); an
operator built outside a job (the test harness) applies it with the default options when it
opens. The fast path covers a built-in tumbling or sliding event-time assigner with the default
``EventTimeTrigger``, windows that neither merge nor evict, and ``reduce``/``aggregate``
contents in the heap backend's state table; it gives the same calls, output, timers and state
as the general steps.

>>> from sparktide.core.window.assigners import EventTimeSessionWindows, TumblingEventTimeWindows
>>> from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
>>> op = WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(max)
>>> decision = window_fast_path(op, heap_backend=True)
>>> decision.taken, decision.reason[:24]
(True, 'a tumbling event-time wi')
>>> window_fast_path(op, heap_backend=False).reason
'the state backend is RocksDB (the fast path works on the heap state table)'
>>> session = WindowOperatorBuilder(EventTimeSessionWindows.with_gap(5)).reduce(max)
>>> window_fast_path(session, heap_backend=True).reason
'session windows merge'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sparktide.core.state import AggregatingStateDescriptor, ReducingStateDescriptor
from sparktide.core.window.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from sparktide.core.window.triggers import EventTimeTrigger

if TYPE_CHECKING:
    from sparktide.core.state import StateDescriptor

__all__ = ["FAST_PATH_OFF", "FastPathDecision", "WindowFacts", "window_fast_path"]

FAST_PATH_OFF = "the window fast path is off (sparktide.execution.window-fast-path = false)"


class WindowFacts(Protocol):
    """What the rule reads of a window operator (public attributes of
    :class:`~sparktide.runtime.operators.window.WindowOperator`)."""

    @property
    def assigner(self) -> object: ...

    @property
    def trigger(self) -> object: ...

    @property
    def merging(self) -> bool: ...

    @property
    def evicting(self) -> bool: ...

    @property
    def contents_descriptor(self) -> StateDescriptor | None: ...

    @property
    def default_contents(self) -> bool: ...


@dataclass(frozen=True)
class FastPathDecision:
    """Whether a window operator takes the fast path, and why (or why not)."""

    taken: bool
    reason: str


def window_fast_path(
    window: WindowFacts, heap_backend: bool, enabled: bool = True
) -> FastPathDecision:
    """The decision for ``window`` on a job whose keyed state is on the heap backend
    (``heap_backend``) with the option ``sparktide.execution.window-fast-path`` = ``enabled``."""
    refusal = _refusal(window, heap_backend, enabled)
    if refusal is not None:
        return FastPathDecision(False, refusal)
    kind = "tumbling" if type(window.assigner) is TumblingEventTimeWindows else "sliding"
    return FastPathDecision(
        True,
        f"a {kind} event-time window with the default trigger and reduce/aggregate contents "
        "on the heap backend",
    )


_REDUCED = (ReducingStateDescriptor, AggregatingStateDescriptor)


def _refusal(window: WindowFacts, heap_backend: bool, enabled: bool) -> str | None:
    if not enabled:
        return FAST_PATH_OFF
    if window.merging:
        return "session windows merge"
    if window.evicting:
        return "an evictor keeps every element of the window"
    if type(window.trigger) is not EventTimeTrigger:
        return "the trigger is not the default (EventTimeTrigger)"
    if type(window.assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        return "the assigner is not a built-in tumbling or sliding event-time window"
    if not window.default_contents:
        return "the window's contents are its own (a contents_factory)"
    if type(window.contents_descriptor) not in _REDUCED:
        return "the window keeps every element (apply/process), not a reduced value"
    if not heap_backend:
        return "the state backend is RocksDB (the fast path works on the heap state table)"
    return None
