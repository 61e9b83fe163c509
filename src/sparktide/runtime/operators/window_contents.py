"""The contents of a window operator's windows: :class:`WindowContents`, what the operator adds
each element to and fires from, and :data:`ContentsFactory`, the ``contents_factory`` seam of
:class:`~sparktide.runtime.operators.window.WindowOperator` that makes them.

Today every window uses :class:`StateContents`, the keyed state backend's internal reducing,
aggregating or list state for the operator's contents descriptor (reduce, aggregate, apply /
process and evicting windows). Another factory may keep a window's contents in another shape
(e.g. an accumulator over arrays) as long as it follows the :class:`WindowContents` contract
and keeps its data in the keyed state backend, so that snapshots cover it.

>>> from sparktide.core.state import ReducingStateDescriptor
>>> from sparktide.core.window.windows import TimeWindow
>>> from sparktide.runtime.state.backend import HeapKeyedStateBackend
>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> backend = HeapKeyedStateBackend(
...     max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0)
>>> contents = StateContents(ReducingStateDescriptor("window-contents", max, None))(backend)
>>> backend.set_current_key("a")
>>> contents.set_current_namespace(TimeWindow(0, 10))
>>> contents.add(3); contents.add(7); contents.add(5)
>>> contents.get()
7
>>> contents.clear(); contents.get() is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar, cast

from sparktide.core.state import StateDescriptor
from sparktide.core.window.windows import Window
from sparktide.runtime.state.keyed_backend import KeyedStateBackend

__all__ = ["ContentsFactory", "MergeableWindowContents", "StateContents", "WindowContents"]

IN_contra = TypeVar("IN_contra", contravariant=True)


class WindowContents(Protocol[IN_contra]):
    """What the operator accumulates a window's elements in, for the current key.

    ``set_current_namespace(window)`` scopes the following calls to one window; ``add`` adds an
    element (for evicting windows a ``(value, timestamp)`` pair); ``get()`` returns what the
    internal window function is called with (a reduced value, an aggregate result or a list of
    elements), ``None`` when the window holds nothing to fire (an empty list too, when the
    operator's contents descriptor is a list state descriptor); ``clear()`` drops the window's
    contents. Contents must keep their data in the keyed state backend they were made from, so
    that operator snapshots and restores cover them.
    """

    def set_current_namespace(self, namespace: Window) -> None: ...

    def add(self, value: IN_contra) -> None: ...

    def get(self) -> object: ...

    def clear(self) -> None: ...


class MergeableWindowContents(WindowContents[IN_contra], Protocol):
    """Contents of merging (session) windows: ``merge_namespaces(target, sources)`` moves the
    contents of the ``sources`` windows into ``target`` for the current key."""

    def merge_namespaces(self, target: Window, sources: Iterable[Window]) -> None: ...


ContentsFactory = Callable[[KeyedStateBackend], WindowContents[object]]
"""Called once in ``WindowOperator.open`` with the keyed state backend; returns the contents."""


class StateContents:
    """The default :data:`ContentsFactory`: the backend's internal state for ``descriptor``
    (``get_internal_state``): a reducing, aggregating or list state, mergeable by namespace.

    >>> from sparktide.core.state import ReducingStateDescriptor
    >>> StateContents(ReducingStateDescriptor("window-contents", max, None))
    StateContents(ReducingStateDescriptor('window-contents'))
    """

    __slots__ = ("descriptor",)

    def __init__(self, descriptor: StateDescriptor) -> None:
        self.descriptor = descriptor

    def __call__(self, backend: KeyedStateBackend) -> MergeableWindowContents[object]:
        # a list, reducing or aggregating state: add / get / clear / merge_namespaces
        state = backend.get_internal_state(self.descriptor)
        return cast("MergeableWindowContents[object]", state)

    def __repr__(self) -> str:
        return f"StateContents({self.descriptor!r})"
