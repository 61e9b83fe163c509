"""The per-record fast path of :class:`~sparktide.runtime.operators.window.WindowOperator` for
non-merging event-time windows with the default trigger.

It applies when the assigner is exactly ``TumblingEventTimeWindows`` or
``SlidingEventTimeWindows``, the trigger exactly ``EventTimeTrigger``, and the contents a
reducing or aggregating state that offers its entries directly (``folded_entries()`` of
:class:`~sparktide.runtime.state.folding.FoldableState`: the heap backend's, without TTL;
``reduce`` / ``aggregate``, with or without a window function). The steps per record and
window are the operator's general ones, in the same order, with the same user calls and the
same timers; what it saves:

* *windows are made once*: the windows of a timestamp depend only on the start of its last
  slide, so the tuple of ``(window, max_timestamp, cleanup_time)`` per slide start is cached
  (bounded): no window objects per record, and every key shares one window object per window,
  so the state and timer dicts compare namespaces by identity;
* *contents without a namespace switch*: the accumulator is read and written in the state's
  key-group dict directly (what ``set_current_namespace`` + ``add`` do);
* *no timer registration for a window that already holds contents*: contents of ``(key,
  window)`` are only created by an element for which ``EventTimeTrigger`` either fired (the
  window's end is at or below the watermark, and stays so) or registered the timer at the
  window's end together with the cleanup timer. Those timers leave the queue only by firing
  or by the cleanup, both at or after the window's end, so while the window's end is above
  the watermark a window with contents has both timers: registering them again would be a
  no-op of the timer queue's dedup. This needs watermarks that never go back (the valve
  forwards only increasing ones); an operator that receives a lower watermark than its
  current one leaves the fast path for good.

Windows are visited in the assigner's order (latest start first), so cleanup times descend:
the first late window ends the loop.

Records the fast path does not cover (``None`` values, records without an int timestamp) and
firings of windows at or below the watermark go through the operator's general steps.

>>> from sparktide.core.window.assigners import SlidingEventTimeWindows
>>> from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
>>> from sparktide.testing import KeyedOneInputStreamOperatorTestHarness
>>> op = WindowOperatorBuilder(SlidingEventTimeWindows.of(10, 5)).reduce(lambda a, b: a + b)
>>> h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: "k"); h.open()
>>> for v, ts in [(1, 3), (2, 7), (4, 12)]: h.process_element(v, ts)
>>> h.process_watermark(20)
>>> h.get_output()
[StreamRecord(1, 4), StreamRecord(3, 9), StreamRecord(6, 14), StreamRecord(4, 19), Watermark(20)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from sparktide.core.window.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from sparktide.core.window.windows import TimeWindow, Window, new_time_window
from sparktide.runtime.elements import MAX_TIMESTAMP, MIN_TIMESTAMP, StreamRecord
from sparktide.runtime.state.folding import (
    FoldableState,
    FoldedEntries,
    KeyGroupDict,
    ReducedEntries,
    checked_reduce,
    returned_none_error,
)

if TYPE_CHECKING:
    from sparktide.core.window.assigners import WindowAssigner
    from sparktide.runtime.output import Output
    from sparktide.runtime.timers.service import InternalTimerService

__all__ = ["FastWindowPath", "WindowHooks", "WindowSpan"]

_CACHE_LIMIT = 4096
"""Cached slide starts before the cache is dropped (windows of old slides are not needed)."""

WindowSpan = tuple[TimeWindow, int, int]
"""A window with its ``max_timestamp`` and ``cleanup_time``."""


class WindowHooks(NamedTuple):
    """The operator's general steps the fast path hands over to (bound methods of the
    :class:`~sparktide.runtime.operators.window.WindowOperator` that builds it)."""

    fire_on_element: Callable[[TimeWindow], bool]
    """``EventTimeTrigger.on_element`` returned FIRE: emit the window's contents; whether the
    window still exists (its cleanup timer is then due)."""
    on_event_timer: Callable[[int, Window], None]
    """The general steps of an event-time timer (a window restored from another job)."""
    emit: Callable[[TimeWindow, object], None]
    """Emit a window's contents through the window function."""
    clear_function: Callable[[TimeWindow], None]
    """The window function's ``clear`` for a window being cleaned up."""


class FastWindowPath:
    """The fast path of one operator subtask; built by :meth:`build` in ``open`` (or None)."""

    __slots__ = (
        "_add",
        "_agg",
        "_cache",
        "_create",
        "_data",
        "_get_result",
        "_hooks",
        "_keys",
        "_lateness",
        "_offset",
        "_output",
        "_pass_through",
        "_reduce",
        "_size",
        "_slide",
        "_timer_add",
        "_timer_watermark",
        "_timers",
        "_trigger_registers_cleanup",
        "_watermark",
    )

    def __init__(
        self,
        entries: FoldedEntries,
        geometry: tuple[int, int, int],
        lateness: int,
        timers: InternalTimerService[object, object],
        watermark: Callable[[], int],
        output: Output,
        hooks: WindowHooks,
        pass_through: bool,
    ) -> None:
        self._data: list[KeyGroupDict[object]] = entries.key_group_dicts
        self._reduce: Callable[[object, object], object] | None = None
        self._add: Callable[[object, object], object] | None = None
        self._create: Callable[[], object] | None = None
        self._agg: object = None
        self._get_result: Callable[[object], object] | None = None
        if isinstance(entries, ReducedEntries):
            self._reduce = entries.reduce
        else:
            self._agg = agg = entries.aggregate
            self._add = agg.add
            self._create = agg.create_accumulator
            self._get_result = agg.get_result
        self._pass_through = pass_through
        self._size, self._slide, self._offset = geometry
        self._lateness = lateness
        self._trigger_registers_cleanup = not lateness
        self._timers = timers
        self._keys = timers.key_context
        self._timer_add = timers.event_time_timers().add
        self._timer_watermark = timers.current_watermark
        self._watermark = watermark
        self._output = output
        self._hooks = hooks
        self._cache: dict[int, tuple[WindowSpan, ...]] = {}

    @staticmethod
    def build(
        assigner: WindowAssigner[object, Window],
        contents: object,
        lateness: int,
        timers: InternalTimerService[object, object],
        watermark: Callable[[], int],
        output: Output,
        hooks: WindowHooks,
        pass_through: bool,
    ) -> FastWindowPath | None:
        """The fast path for an operator's assigner and contents (the operator checked its
        trigger, merging and evicting), or None when they need the general path."""
        if not isinstance(contents, FoldableState):
            return None
        entries = contents.folded_entries()
        if entries is None:
            return None
        if type(assigner) is SlidingEventTimeWindows:
            size, slide = assigner.get_size(), assigner.get_slide()
        elif type(assigner) is TumblingEventTimeWindows:
            size = slide = assigner.get_size()
        else:
            return None
        geometry = (size, slide, assigner.get_offset())
        return FastWindowPath(
            entries, geometry, lateness, timers, watermark, output, hooks, pass_through
        )

    # ------------------------------------------------------------------ windows

    def _spans(self, last_start: int) -> tuple[WindowSpan, ...]:
        """The windows of a timestamp whose last slide starts at ``last_start``, latest first
        (the assigner's order), with their max timestamps and cleanup times."""
        size, slide, lateness = self._size, self._slide, self._lateness
        lowest = last_start - size  # the windows of ts = last_start; a later ts has fewer
        out = []
        start = last_start
        while start > lowest:
            end = start + size
            max_ts = end - 1
            cleanup = max_ts + lateness
            out.append((new_time_window((start, end)), max_ts, min(cleanup, MAX_TIMESTAMP)))
            start -= slide
        spans = tuple(out)
        cache = self._cache
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[last_start] = spans
        return spans

    # ------------------------------------------------------------------ elements

    def process(self, record: StreamRecord, key: object, key_group: int) -> bool | None:
        """Process ``record`` of ``key`` (the current key of the backend); return whether it
        was in no non-late window, or None when the general path must process it."""
        value = record.value
        ts = record.timestamp
        if value is None or type(ts) is not int or ts <= MIN_TIMESTAMP:
            return None
        last_start = ts - (ts - self._offset) % self._slide
        spans = self._cache.get(last_start)
        if spans is None:
            spans = self._spans(last_start)
        # the spans to visit: those that start above ts - size (when slide does not divide
        # size, a later ts in the slide has one less; a slide above size leaves gaps) and are
        # not late (cleanup above the watermark; cleanup times descend along the spans)
        slide = self._slide
        count = (last_start - ts + self._size + slide - 1) // slide
        watermark = self._watermark()
        while count > 0 and spans[count - 1][2] <= watermark:
            count -= 1
        if count <= 0:
            return True
        timer_watermark = self._timer_watermark()
        d = self._data[key_group]
        add = self._add
        if add is None:
            reduce = self._reduce
            for window, max_ts, cleanup in spans[:count]:
                sk = (key, window)
                old = d.get(sk)
                d[sk] = value if old is None else checked_reduce(reduce, old, value)  # type: ignore[arg-type]
                if max_ts <= timer_watermark:
                    self._fire_on_element(window, cleanup)
                elif old is None:
                    self._register(max_ts, key, window, key_group, cleanup)
            return False
        create = self._create
        for window, max_ts, cleanup in spans[:count]:
            sk = (key, window)
            old = d.get(sk)
            acc = add(value, create() if old is None else old)  # type: ignore[misc]
            if acc is None:
                raise returned_none_error(self._agg, "add")
            d[sk] = acc
            if max_ts <= timer_watermark:
                self._fire_on_element(window, cleanup)
            elif old is None:
                self._register(max_ts, key, window, key_group, cleanup)
        return False

    def _register(
        self, max_ts: int, key: object, window: TimeWindow, key_group: int, cleanup: int
    ) -> None:
        """``EventTimeTrigger.on_element`` returned CONTINUE for a window without contents:
        its timer at the window's end, then the cleanup timer (the same without lateness)."""
        self._timer_add(max_ts, key, window, key_group)
        if not self._trigger_registers_cleanup and cleanup != MAX_TIMESTAMP:
            self._timers.register_event_time_timer(window, cleanup)

    def _fire_on_element(self, window: TimeWindow, cleanup: int) -> None:
        """``EventTimeTrigger.on_element`` returned FIRE: act as the general path does."""
        if self._hooks.fire_on_element(window) and cleanup != MAX_TIMESTAMP:
            self._timers.register_event_time_timer(window, cleanup)

    # ------------------------------------------------------------------ timers

    def on_event_time(self, timestamp: int, key: object, window: Window) -> None:
        """An event-time timer of ``window`` for ``key`` (the current key): the operator's
        inline ``EventTimeTrigger`` steps (fire at the window's end, clear at its cleanup
        time), with the contents read from the state table directly."""
        if type(window) is not TimeWindow:  # restored from another job: the general steps
            self._hooks.on_event_timer(timestamp, window)
            return
        max_ts: int = window[1] - 1
        cleanup = max_ts + self._lateness
        if cleanup > MAX_TIMESTAMP:
            cleanup = MAX_TIMESTAMP
        if timestamp == max_ts:
            d = self._data[self._keys.current_key_group]
            acc = d.get((key, window))
            if acc is not None:
                get_result = self._get_result
                contents = acc if get_result is None else get_result(acc)
                if contents is not None:
                    if self._pass_through:
                        self._output.collect(StreamRecord(contents, max_ts))
                    else:
                        self._hooks.emit(window, contents)
            if cleanup == timestamp:
                d.pop((key, window), None)
                if not self._pass_through:
                    self._hooks.clear_function(window)
        elif cleanup == timestamp:
            self._data[self._keys.current_key_group].pop((key, window), None)
            self._timers.delete_event_time_timer(window, max_ts)
            if not self._pass_through:
                self._hooks.clear_function(window)
