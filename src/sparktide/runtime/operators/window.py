"""``WindowOperator``: keyed windows with assigners, triggers, allowed lateness, late side
output and merging (sessions) (Flink's ``WindowOperator``).

Per element: the assigner gives the windows; windows already late (event time and
``cleanup_time(w) <= watermark``) are skipped; for each other window the element is added to
the window's contents, the trigger's ``on_element`` decides (FIRE / PURGE), and a cleanup timer
is registered at ``cleanup_time(w)`` (``max_timestamp + allowed_lateness``, saturating at MAX;
processing time: ``max_timestamp``). An element that lands in no window and is itself late
(``ts + allowed_lateness <= watermark``) goes to the late side output if one is set, else it is
counted in ``num_late_records_dropped``. Timers call the trigger; the cleanup timer clears the
window's contents, trigger state, per-window state and merging state. Results carry the
timestamp ``window.max_timestamp()``. Timers live only in the ``"window-timers"`` service and
all state (contents, trigger state, merging sets) only in the keyed state backend, so a
snapshot holds everything.

**Assign / accumulate / fire.** The operator runs three steps:

* *assign*: ``assigner.assign_windows``, then the lateness filter;
* *accumulate*: ``add`` to the window's :class:`WindowContents`, scoped to the window by
  ``set_current_namespace``. The contents come from the operator's ``contents_factory``, called
  once in ``open`` with the keyed state backend; the default, :class:`StateContents`, is the
  backend's internal reducing, aggregating or list state for the contents descriptor (reduce,
  aggregate, apply / process and evicting windows all use it);
* *act*: the trigger's :class:`TriggerResult` is acted on in one place, the operator's
  ``_act`` method, for elements and for event- and processing-time timers (merging
  or not): FIRE hands ``contents.get()`` to the internal window function (outputs stamped with
  ``max_timestamp``), PURGE clears the contents, FIRE_AND_PURGE does both. The evicting
  operator replaces only the emit step.

Per record, a tumbling or sliding reduce does only: assign, then per window set the namespace,
add to the reducing state and call ``trigger.on_element`` (``EventTimeTrigger``: compare with
the watermark, register a deduplicated timer, which without allowed lateness is also the
cleanup timer). With the built-in tumbling or sliding event-time assigner, that trigger and
reduce / aggregate contents on the heap backend, :mod:`~sparktide.runtime.operators.window_fast`
runs these steps and the timers' firing with the windows made once per slide and the contents
read and written in the state table directly (the same calls, output, timers and state).

>>> from sparktide.core.window.assigners import TumblingEventTimeWindows
>>> from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
>>> from sparktide.testing import KeyedOneInputStreamOperatorTestHarness
>>> op = WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(
...     lambda a, b: (a[0], a[1] + b[1]))
>>> h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0]); h.open()
>>> for v, ts in [(("a", 1), 3), (("a", 2), 7), (("b", 5), 12)]: h.process_element(v, ts)
>>> h.process_watermark(15)
>>> h.get_output()
[StreamRecord(('a', 3), 9), Watermark(15)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from sparktide.core.output_tag import OutputTag
from sparktide.core.state import ListStateDescriptor, MapStateDescriptor, StateDescriptor
from sparktide.core.state_backend import StateBackendKind
from sparktide.core.window.assigners import MergingWindowAssigner, WindowAssigner
from sparktide.core.window.triggers import EventTimeTrigger, Trigger, TriggerResult
from sparktide.core.window.windows import Window
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord, Watermark
from sparktide.runtime.operators.base import AbstractStreamOperator, KeySelector
from sparktide.runtime.operators.merging_window_set import MergingWindowSet, WindowMappingStore
from sparktide.runtime.operators.process import emit_results
from sparktide.runtime.operators.window_contents import (
    ContentsFactory,
    MergeableWindowContents,
    StateContents,
    WindowContents,
)
from sparktide.runtime.operators.window_fast import FastWindowPath, WindowHooks
from sparktide.runtime.operators.window_functions import (
    AssignerContext,
    InternalWindowFunction,
    PassThroughFunction,
    WindowProcessContext,
    WindowTriggerContext,
)
from sparktide.runtime.operators.window_path import window_fast_path

if TYPE_CHECKING:
    from sparktide.runtime.state.keyed_backend import KeyedStateBackend
    from sparktide.runtime.timers.service import InternalTimerService

__all__ = ["WINDOW_CONTENTS", "WINDOW_TIMERS", "WindowOperator"]

WINDOW_TIMERS = "window-timers"
WINDOW_CONTENTS = "window-contents"
MERGING_WINDOW_SET = "merging-window-set"

_CONTINUE = TriggerResult.CONTINUE
_FIRE = TriggerResult.FIRE
_PURGE = TriggerResult.PURGE
_FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE


def _bad_result(trigger: Trigger, method: str, result: object) -> TypeError:
    return TypeError(
        f"trigger {trigger!r}.{method} returned {result!r} ({type(result).__name__}); it must "
        "return a TriggerResult: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE"
    )


class WindowOperator(AbstractStreamOperator):
    """Evaluates keyed windows; see the module docstring.

    ``contents_descriptor`` describes the window contents (a reducing, aggregating or list state
    descriptor named ``"window-contents"``), kept in :class:`StateContents`; a
    ``contents_factory`` replaces that default. ``function`` is an
    :class:`InternalWindowFunction`. Usually built by ``WindowOperatorBuilder`` /
    ``WindowedStream``.

    >>> from sparktide.core.state import ReducingStateDescriptor
    >>> from sparktide.core.window.assigners import TumblingEventTimeWindows
    >>> from sparktide.core.window.triggers import EventTimeTrigger
    >>> from sparktide.core.window.windows import TimeWindow
    >>> op = WindowOperator(TumblingEventTimeWindows.of(10),
    ...     ReducingStateDescriptor(WINDOW_CONTENTS, max, None), PassThroughFunction(),
    ...     EventTimeTrigger.create(), allowed_lateness=5)
    >>> op.cleanup_time(TimeWindow(0, 10)), op.num_late_records_dropped
    (14, 0)
    """

    _evicting = False
    contents: WindowContents[object]
    _key_selector: KeySelector  # set by open() on a keyed stream
    _load_merging: Callable[[], MergingWindowSet]  # set by open() for a merging assigner

    def __init__(
        self,
        assigner: WindowAssigner[object, Window],
        contents_descriptor: StateDescriptor | None,
        function: InternalWindowFunction,
        trigger: Trigger[object, Window],
        allowed_lateness: int = 0,
        late_data_output_tag: OutputTag | None = None,
        *,
        contents_factory: ContentsFactory | None = None,
        fast_path: bool | None = None,
    ) -> None:
        super().__init__()
        if type(allowed_lateness) is not int or allowed_lateness < 0:
            raise ValueError(f"allowed_lateness must be an int >= 0 (ms), got {allowed_lateness!r}")
        if late_data_output_tag is not None and not isinstance(late_data_output_tag, OutputTag):
            raise TypeError(
                f"late_data_output_tag must be an OutputTag, got "
                f"{type(late_data_output_tag).__name__}"
            )
        self.default_contents = contents_factory is None
        """Whether the contents are the backend's state for the descriptor (no
        ``contents_factory`` of its own)."""
        if contents_factory is None:
            if contents_descriptor is None:
                raise TypeError("a window operator needs a contents_descriptor or contents_factory")
            contents_factory = StateContents(contents_descriptor)
        self.contents_descriptor = contents_descriptor
        self.assigner = assigner
        self.trigger = trigger
        self.function = function
        self.allowed_lateness = allowed_lateness
        self.late_data_output_tag = late_data_output_tag
        self._contents_factory = contents_factory
        # list contents are empty as [], the others as None (see WindowContents.get)
        self._list_contents = isinstance(contents_descriptor, ListStateDescriptor)
        self._merging = callable(getattr(assigner, "merge_windows", None))
        self._event_time = bool(assigner.is_event_time())
        self.num_late_records_dropped = 0
        self.num_late_records_side_output = 0
        """Records dropped as late (no late side output set): Flink's metric."""
        self._inline_event_time_trigger = False  # decided by open()
        self._inline_merging_trigger = False
        self._fast: FastWindowPath | None = None  # built by open()
        self.fast_path = fast_path
        """Whether ``open`` builds the window fast path: the job's path choice
        (:func:`~sparktide.runtime.execution.path.choose_path`) sets it before the operator
        opens; ``None`` (an operator built outside a job, e.g. in the test harness): the rule
        of :mod:`~sparktide.runtime.operators.window_path` with the default options."""

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        backend = self.keyed_state_backend
        if backend is None:
            raise RuntimeError(
                "window operations need a keyed stream: key_by(...) before window(...), or use "
                "window_all(...) on a non-keyed stream"
            )
        if self.key_selector is not None:
            self._key_selector = self.key_selector
        self._backend = backend
        self._timers = self.get_internal_timer_service(WINDOW_TIMERS, self)
        contents = self._contents_factory(backend)
        if self._merging and not callable(getattr(contents, "merge_namespaces", None)):
            raise TypeError(
                "the window uses a merging assigner (sessions), but its contents cannot be "
                "merged; use reduce, aggregate, apply or process"
            )
        self.contents = contents
        self._set_ns = contents.set_current_namespace
        self._add = contents.add
        self._get = contents.get
        self._clear = contents.clear
        self._trigger_ctx = WindowTriggerContext(backend, self._timers)
        self._process_ctx = WindowProcessContext(self, self._merging)
        self._assigner_ctx = AssignerContext(self)
        self._assign = self.assigner.assign_windows
        self._on_element = self.trigger.on_element
        self._pass_through = type(self.function) is PassThroughFunction
        # EventTimeTrigger.on_element returning CONTINUE has just registered the timer at
        # max_timestamp; without lateness that is the cleanup timer too: skip registering it again
        self._trigger_registers_cleanup = (
            type(self.trigger) is EventTimeTrigger
            and self._event_time
            and not self.allowed_lateness
        )
        # EventTimeTrigger.on_element (compare with the watermark, else register the timer at
        # max_timestamp) is run inline by process_keyed_element: the same timers in the same
        # order, without three calls per window
        self._inline_event_time_trigger = (
            type(self.trigger) is EventTimeTrigger and not self._merging
        )
        # and by _process_merging for a merging assigner's windows (its timers fire as usual)
        self._inline_merging_trigger = type(self.trigger) is EventTimeTrigger and self._merging
        if self._merging:
            self._open_merging(contents, backend)
        fast = self.fast_path
        if fast is None:
            heap = self.setup_info.state_backend.kind is StateBackendKind.HASHMAP
            fast = window_fast_path(self, heap).taken
        self._fast = self._build_fast_path() if fast else None
        self.function.open(self.runtime_context)

    @property
    def merging(self) -> bool:
        """Whether the assigner merges windows (sessions)."""
        return self._merging

    @property
    def evicting(self) -> bool:
        """Whether an evictor sees the window's elements."""
        return self._evicting

    @property
    def runs_fast_path(self) -> bool:
        """Whether this open operator runs the window fast path now (it leaves it for good
        when a watermark goes back)."""
        return self._fast is not None

    @property
    def timer_service(self) -> InternalTimerService[object, Window]:
        """The service of the window's timers (``"window-timers"``), once open."""
        return self._timers

    def _build_fast_path(self) -> FastWindowPath | None:
        """The fast path (:mod:`~sparktide.runtime.operators.window_fast`) the path choice
        gave this operator, built on its contents and timers (``None`` when the timers read the
        key elsewhere than from this operator's backend, or the contents are not the heap
        backend's: the general steps then run)."""
        if self._timers.key_context is not self._backend:
            return None
        hooks = WindowHooks(
            self._fire_on_element, self._on_event_timer_inline, self._emit_in, self._clear_function
        )
        return FastWindowPath.build(
            self.assigner,
            self.contents,
            self.allowed_lateness,
            self._timers,
            self.current_watermark,
            self.output,
            hooks,
            self._pass_through,
        )

    def _fire_on_element(self, window: Window) -> bool:
        """``EventTimeTrigger.on_element`` returned FIRE for ``window``: act on it."""
        self._set_ns(window)
        self._trigger_ctx.window = window
        return self._act(_FIRE, window, "on_element")

    def _emit_in(self, window: Window, contents: object) -> None:
        """Emit ``contents`` of ``window`` with the namespace and trigger context on it."""
        self._set_ns(window)
        self._trigger_ctx.window = window
        self._emit_window_contents(window, contents)

    def _clear_function(self, window: Window) -> None:
        """The window function's ``clear`` for ``window``."""
        self._trigger_ctx.window = window
        pctx = self._process_ctx
        pctx.current_window = window
        self.function.clear(window, pctx)

    def _open_merging(self, contents: object, backend: KeyedStateBackend) -> None:
        """The contents merge (checked by open), the assigner has merge_windows and the
        window -> state window mapping is kept in a map state, loaded per key."""
        mergeable = cast("MergeableWindowContents[object]", contents)
        self._merge_contents = mergeable.merge_namespaces
        self._merging_assigner = cast("MergingWindowAssigner[object, Window]", self.assigner)
        self._merging_state = cast(
            WindowMappingStore,
            backend.get_partitioned_state(MapStateDescriptor(MERGING_WINDOW_SET, None, None)),
        )
        self._load_merging = MergingWindowSet.loader(self._merging_assigner, self._merging_state)

    def close(self) -> None:
        self.function.close()
        super().close()

    # ------------------------------------------------------------------ elements

    def process_element(self, record: StreamRecord) -> None:
        self._backend.set_current_key(self._key_selector(record.value))
        self.process_keyed_element(record)

    def process_keyed_element(self, record: StreamRecord) -> None:
        """Process ``record`` for the key already set in the key context."""
        fast = self._fast
        if fast is not None:
            backend = self._backend
            skipped = fast.process(record, backend.current_key, backend.current_key_group)
            if skipped is not None:
                if skipped:
                    self._late_record(record)
                return
        value = record.value
        ts = record.timestamp
        windows = self._assign(value, ts, self._assigner_ctx)
        item = (value, ts) if self._evicting else value
        if self._merging:
            skipped = self._process_merging(value, ts, windows, item)
        else:
            skipped = True
            event_time = self._event_time
            lateness = self.allowed_lateness
            watermark = self._current_watermark
            set_ns, add = self._set_ns, self._add
            ctx = self._trigger_ctx
            on_element = self._on_element
            timers = self._timers
            register = timers.register_event_time_timer
            cleanup_registered = self._trigger_registers_cleanup
            inline_trigger = self._inline_event_time_trigger
            add_timer = timers.event_time_timers().add
            keys = timers.key_context
            trigger_watermark = timers.current_watermark()  # (no callback moves it here)
            for window in windows:
                max_ts = window.max_timestamp()
                if event_time:
                    cleanup = max_ts + lateness
                    if cleanup > MAX_TIMESTAMP:
                        cleanup = MAX_TIMESTAMP
                    if cleanup <= watermark:
                        continue  # the window is late
                skipped = False
                set_ns(window)
                add(item)
                ctx.window = window
                if inline_trigger and type(max_ts) is int:
                    # EventTimeTrigger.on_element(value, ts, window, ctx), inlined
                    if max_ts <= trigger_watermark:
                        result = _FIRE
                    else:
                        add_timer(max_ts, keys.current_key, window, keys.current_key_group)
                        result = _CONTINUE
                else:
                    result = on_element(value, ts, window, ctx)
                if result is _CONTINUE:
                    if cleanup_registered:
                        continue
                elif not self._act(result, window, "on_element"):
                    continue
                if event_time:
                    if cleanup != MAX_TIMESTAMP:
                        register(window, cleanup)
                elif max_ts != MAX_TIMESTAMP:
                    self._timers.register_processing_time_timer(window, max_ts)
        if skipped:
            self._late_record(record)

    def _late_record(self, record: StreamRecord) -> None:
        """``record`` landed in no non-late window: side output or count it if it is late."""
        ts = record.timestamp
        late = ts is not None and ts + self.allowed_lateness <= self._current_watermark
        if self._event_time and late:
            tag = self.late_data_output_tag
            if tag is not None:
                self.num_late_records_side_output += 1
                self.output.collect_side(tag, record)
            else:
                self.num_late_records_dropped += 1

    def process_watermark(self, watermark: Watermark) -> None:
        if self._fast is not None and watermark.timestamp < self._current_watermark:
            # the fast path relies on watermarks that never go back (see window_fast)
            self._fast = None
        super().process_watermark(watermark)

    def _process_merging(
        self, value: object, ts: int | None, windows: Iterable[Window], item: object
    ) -> bool:
        merging = self._load_merging()
        skipped = True
        ctx = self._trigger_ctx
        event_time = self._event_time
        inline = self._inline_merging_trigger
        for window in windows:
            actual = merging.add_window(window, self._merge)
            cleanup = self.cleanup_time(actual)
            if event_time and cleanup <= self._current_watermark:  # the window is late
                merging.retire_window(actual)
                continue
            skipped = False
            state_window = merging.get_state_window(actual)
            if state_window is None:  # pragma: no cover - add_window always maps the result
                raise RuntimeError(f"Window {window!r} is not in the in-flight window set")
            self._set_ns(state_window)
            self._add(item)
            ctx.window = actual
            max_ts = actual.max_timestamp()
            if inline and type(max_ts) is int:
                # EventTimeTrigger.on_element(value, ts, actual, ctx), inlined
                if max_ts <= self._timers.current_watermark():
                    result = _FIRE
                else:
                    self._timers.register_event_time_timer(actual, max_ts)
                    result = _CONTINUE
            else:
                result = self._on_element(value, ts, actual, ctx)
            if result is _CONTINUE:
                if self._trigger_registers_cleanup:
                    continue  # the trigger's timer is the cleanup timer
            elif not self._act(result, actual, "on_element"):
                continue
            if cleanup != MAX_TIMESTAMP:
                self._register_cleanup_at(actual, cleanup)
        merging.persist()
        return skipped

    def _merge(
        self,
        merge_result: Window,
        merged_windows: list[Window],
        state_window_result: Window,
        merged_state_windows: list[Window],
    ) -> None:
        """The merge function of :meth:`MergingWindowSet.add_window`."""
        max_ts = merge_result.max_timestamp()
        if self._event_time:
            watermark = self._current_watermark
            if max_ts + self.allowed_lateness <= watermark:
                raise RuntimeError(
                    f"The end timestamp of an event-time window cannot become earlier than the "
                    f"current watermark by merging. Current watermark: {watermark} window: "
                    f"{merge_result!r}; a merging assigner must merge into a window covering the "
                    "merged ones"
                )
        else:
            now = self._timers.current_processing_time()
            if max_ts <= now:
                raise RuntimeError(
                    f"The end timestamp of a processing-time window cannot become earlier than "
                    f"the current processing time by merging. Current processing time: {now} "
                    f"window: {merge_result!r}"
                )
        ctx = self._trigger_ctx
        ctx.window = merge_result
        ctx.merged_windows = merged_windows
        try:
            self.trigger.on_merge(merge_result, ctx)
        finally:
            ctx.merged_windows = None
        # EventTimeTrigger.clear deletes the timer at max_timestamp: without lateness the
        # cleanup timer too (deleting it again would change nothing)
        cleared = self._trigger_registers_cleanup
        for window in merged_windows:
            ctx.window = window
            self.trigger.clear(window, ctx)
            if not cleared:
                self._delete_cleanup_timer(window)
        self._merge_contents(state_window_result, merged_state_windows)

    # ------------------------------------------------------------------ timers

    def on_event_time(self, timestamp: int, key: object, namespace: Window) -> None:
        fast = self._fast
        if fast is not None:
            fast.on_event_time(timestamp, key, namespace)
        elif self._inline_event_time_trigger:
            self._on_event_timer_inline(timestamp, namespace)
        else:
            self._on_timer(timestamp, namespace, True)

    def _on_event_timer_inline(self, timestamp: int, window: Window) -> None:
        """:meth:`_on_timer` of an event-time timer with ``EventTimeTrigger`` (not merging),
        its ``on_event_time`` and ``clear`` inlined: the same steps in the same order."""
        max_ts = window.max_timestamp()
        if type(max_ts) is not int:  # a custom window: the trigger's own checks
            self._on_timer(timestamp, window, True)
            return
        self._trigger_ctx.window = window
        self._set_ns(window)
        # EventTimeTrigger.on_event_time: FIRE at the window's end, else CONTINUE
        if timestamp == max_ts:
            self._act(_FIRE, window, "on_event_time")
        if self._event_time and min(max_ts + self.allowed_lateness, MAX_TIMESTAMP) == timestamp:
            # cleanup_time(window) == timestamp: _clear_all_state(window, None), with
            # EventTimeTrigger.clear inlined
            self._clear()
            self._trigger_ctx.window = window
            if timestamp != max_ts:
                # (without lateness the timer at max_timestamp is the one firing: the timer
                # service removed it before this call, so deleting it would be a no-op)
                self._timers.delete_event_time_timer(window, max_ts)
            self._clear_function(window)

    def on_processing_time(self, timestamp: int, key: object, namespace: Window) -> None:
        self._on_timer(timestamp, namespace, False)

    def _on_timer(self, timestamp: int, window: Window, event: bool) -> None:
        ctx = self._trigger_ctx
        ctx.window = window
        merging = None
        if self._merging:
            merging = self._load_merging()
            state_window = merging.get_state_window(window)
            if state_window is None:
                return  # a timer of a window that is gone (a trigger did not delete it)
            self._set_ns(state_window)
        else:
            self._set_ns(window)
        trigger = self.trigger
        if event:
            result = trigger.on_event_time(timestamp, window, ctx)
        else:
            result = trigger.on_processing_time(timestamp, window, ctx)
        if result is not _CONTINUE:
            method = "on_event_time" if event else "on_processing_time"
            if not self._act(result, window, method) and result is _FIRE_AND_PURGE:
                self._clear()  # a timer purges even when the fire found nothing (as Flink)
        if event == self._event_time and self.cleanup_time(window) == timestamp:
            self._clear_all_state(window, merging)
        if merging is not None:
            merging.persist()

    # ------------------------------------------------------------------ acting on a trigger

    def _act(self, result: TriggerResult, window: Window, method: str) -> bool:
        """Act on the trigger's ``result`` (returned by ``trigger.<method>``) for ``window``,
        whose contents namespace is current: FIRE emits the contents, PURGE clears them,
        FIRE_AND_PURGE does both, CONTINUE nothing.

        Returns False when a FIRE found the window without contents: then nothing was emitted
        nor purged (an element abandons the window, as Flink's ``continue``).
        """
        if result is _FIRE or result is _FIRE_AND_PURGE:
            contents = self._get()
            if contents is None or (self._list_contents and not contents):
                return False
            self._emit_window_contents(window, contents)
            if result is _FIRE:
                return True
        elif result is _CONTINUE:
            return True
        elif result is not _PURGE:
            raise _bad_result(self.trigger, method, result)
        self._clear()
        return True

    def _emit_window_contents(self, window: Window, contents: object) -> None:
        """The emit step: evaluate ``contents`` of ``window`` and emit at ``max_timestamp``."""
        ts = window.max_timestamp()
        if self._pass_through:
            self.output.collect(StreamRecord(contents, ts))
            return
        ctx = self._process_ctx
        ctx.current_window = window
        results = self.function.process(self._backend.current_key, window, ctx, contents)
        if results is not None:
            emit_results(self, results, ts)

    # ------------------------------------------------------------------ helpers

    def _clear_all_state(self, window: Window, merging: MergingWindowSet | None) -> None:
        self._clear()
        ctx = self._trigger_ctx
        ctx.window = window
        self.trigger.clear(window, ctx)
        pctx = self._process_ctx
        pctx.current_window = window
        self.function.clear(window, pctx)
        if merging is not None:
            merging.retire_window(window)
            merging.persist()

    def cleanup_time(self, window: Window) -> int:
        """When the window's state is dropped: ``max_timestamp + allowed_lateness`` (saturating
        at MAX) for event time, ``max_timestamp`` for processing time."""
        max_ts = window.max_timestamp()
        if not self._event_time:
            return max_ts
        return min(max_ts + self.allowed_lateness, MAX_TIMESTAMP)

    def _is_window_late(self, window: Window) -> bool:
        return self._event_time and self.cleanup_time(window) <= self._current_watermark

    def _register_cleanup_at(self, window: Window, t: int) -> None:
        if self._event_time:
            self._timers.register_event_time_timer(window, t)
        else:
            self._timers.register_processing_time_timer(window, t)

    def _delete_cleanup_timer(self, window: Window) -> None:
        t = self.cleanup_time(window)
        if t == MAX_TIMESTAMP:
            return
        if self._event_time:
            self._timers.delete_event_time_timer(window, t)
        else:
            self._timers.delete_processing_time_timer(window, t)
