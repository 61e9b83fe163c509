"""Two-input operator test harnesses: connected streams, joins and broadcast, driven by hand.

As Flink's ``TwoInputStreamOperatorTestHarness``, ``KeyedTwoInputStreamOperatorTestHarness``
and ``(Keyed)BroadcastOperatorTestHarness``: elements and watermarks per input, a simulated
processing-time clock, the output (records and watermarks, in order) and side outputs, timer and
state counts, snapshots. The operator's watermark is the minimum of both inputs'.

>>> from sparktide.datastream.functions import KeyedCoProcessFunction
>>> class Pair(KeyedCoProcessFunction):
...     def process_element1(self, value, ctx):
...         ctx.timer_service().register_event_time_timer(10)
...         yield "left", value
...     def process_element2(self, value, ctx):
...         yield "right", value
...     def on_timer(self, timestamp, ctx):
...         yield "timer", ctx.get_current_key()
>>> h = for_keyed_co_process_function(Pair(), lambda v: v[0], lambda v: v[0])
>>> h.process_element1(("a", 1), 1); h.process_element2(("a", 2), 2)
>>> from sparktide.runtime.elements import MIN_TIMESTAMP
>>> h.process_watermark1(20); h.get_current_watermark() == MIN_TIMESTAMP
True
>>> h.process_watermark2(15); h.extract_output_values()
[('left', ('a', 1)), ('right', ('a', 2)), ('timer', 'a')]
>>> h.get_output()[-1]
Watermark(15)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparktide.common.timestamps import MIN_TIMESTAMP
from sparktide.core.broadcast import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from sparktide.core.functions import CoProcessFunction, KeyedCoProcessFunction
from sparktide.core.state import MapStateDescriptor
from sparktide.runtime.elements import Watermark
from sparktide.runtime.null_keys import refusing_none
from sparktide.runtime.operators.broadcast import (
    BroadcastOperator,
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
)
from sparktide.runtime.operators.co_process import (
    AbstractTwoInputOperator,
    CoProcessOperator,
    KeyedCoProcessOperator,
)
from sparktide.testing.operator_harness import OperatorTestHarness, as_record, as_watermark

__all__ = [
    "BroadcastOperatorTestHarness",
    "TwoInputStreamOperatorTestHarness",
    "for_broadcast_process_function",
    "for_co_process_function",
    "for_keyed_broadcast_process_function",
    "for_keyed_co_process_function",
]

KeyFunction = Callable[[Any], Any]


class TwoInputStreamOperatorTestHarness(OperatorTestHarness):
    """Drives one two-input operator subtask. Keyed when ``key_selector1`` is given
    (``key_selector2`` keys the second input; a broadcast input has none)."""

    operator: AbstractTwoInputOperator

    def __init__(
        self,
        operator: AbstractTwoInputOperator,
        *,
        key_selector1: KeyFunction | None = None,
        key_selector2: KeyFunction | None = None,
        parallelism: int = 1,
        subtask_index: int = 0,
        max_parallelism: int | None = None,
        processing_time: int = MIN_TIMESTAMP,
        name: str = "test-operator",
    ) -> None:
        if not isinstance(operator, AbstractTwoInputOperator):
            raise TypeError(
                f"operator must be a two-input operator, got {type(operator).__name__}; use "
                "OneInputStreamOperatorTestHarness for one input"
            )
        for pname, selector in (("key_selector1", key_selector1), ("key_selector2", key_selector2)):
            if selector is not None and not callable(selector):
                raise TypeError(
                    f"{pname} must be callable (value -> key), got {type(selector).__name__}"
                )
        if key_selector2 is not None and key_selector1 is None:
            raise ValueError("key_selector2 needs key_selector1: key both inputs or neither")
        super().__init__(
            operator,
            key_selector=key_selector1,
            parallelism=parallelism,
            subtask_index=subtask_index,
            max_parallelism=max_parallelism,
            processing_time=processing_time,
            name=name,
        )
        operator.key_selector2 = None if key_selector2 is None else refusing_none(key_selector2)

    # ------------------------------------------------------------------ input

    def process_element1(self, value: Any, timestamp: int | None = None) -> None:
        """``value`` (or a StreamRecord) on the first input, with event ``timestamp``."""
        self.operator.process_element1(as_record(value, timestamp))

    def process_element2(self, value: Any, timestamp: int | None = None) -> None:
        """``value`` (or a StreamRecord) on the second input, with event ``timestamp``."""
        self.operator.process_element2(as_record(value, timestamp))

    def process_watermark1(self, watermark: int | Watermark) -> None:
        self.operator.process_watermark1(as_watermark(watermark))

    def process_watermark2(self, watermark: int | Watermark) -> None:
        self.operator.process_watermark2(as_watermark(watermark))

    def process_both_watermarks(self, watermark: int | Watermark) -> None:
        """The same watermark on both inputs."""
        self.process_watermark1(watermark)
        self.process_watermark2(watermark)


class BroadcastOperatorTestHarness(TwoInputStreamOperatorTestHarness):
    """Drives a broadcast operator: :meth:`process_element` on the (keyed or non-keyed)
    stream, :meth:`process_broadcast_element` on the broadcast stream."""

    operator: BroadcastOperator

    def __init__(
        self,
        operator: BroadcastOperator,
        *,
        key_selector: KeyFunction | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(operator, BroadcastOperator):
            raise TypeError(f"operator must be a broadcast operator, got {type(operator).__name__}")
        super().__init__(operator, key_selector1=key_selector, **kwargs)

    def process_element(self, value: Any, timestamp: int | None = None) -> None:
        """``value`` on the non-broadcast input."""
        self.process_element1(value, timestamp)

    def process_broadcast_element(self, value: Any, timestamp: int | None = None) -> None:
        """``value`` on the broadcast input."""
        self.process_element2(value, timestamp)

    def process_broadcast_watermark(self, watermark: int | Watermark) -> None:
        self.process_watermark2(watermark)

    def get_broadcast_state(self, descriptor: MapStateDescriptor) -> dict[Any, Any]:
        """The entries of the broadcast state of ``descriptor``, as a dict."""
        return dict(self.operator.broadcast_state.read_only(descriptor).items())

    def snapshot_broadcast_state(self) -> bytes:
        """The broadcast state (what a checkpoint stores once for every subtask)."""
        return self.operator.snapshot_broadcast_state()

    def initialize_broadcast_state(self, data: bytes) -> None:
        """Start from a :meth:`snapshot_broadcast_state`; before :meth:`open`."""
        if self._opened:
            raise RuntimeError("initialize_broadcast_state must be called before open()")
        self.operator.restore_broadcast_state(data)


def _opened(
    harness: BroadcastOperatorTestHarness, broadcast_state: bytes | None, snapshot: Any
) -> BroadcastOperatorTestHarness:
    if snapshot is not None:
        harness.initialize_state(snapshot)
    if broadcast_state is not None:
        harness.initialize_broadcast_state(broadcast_state)
    harness.open()
    return harness


def for_keyed_broadcast_process_function(
    function: KeyedBroadcastProcessFunction,
    key_selector: KeyFunction,
    descriptors: Sequence[MapStateDescriptor],
    *,
    broadcast_state: bytes | None = None,
    snapshot: Any = None,
    **kwargs: Any,
) -> BroadcastOperatorTestHarness:
    """An opened harness running ``function`` on a stream keyed by ``key_selector`` and a
    broadcast stream with the broadcast states ``descriptors``; ``snapshot`` (keyed state and
    timers) and ``broadcast_state`` are restored first."""
    if not callable(key_selector):
        raise TypeError(
            f"key_selector must be callable (value -> key), got {type(key_selector).__name__}"
        )
    operator = KeyedBroadcastProcessOperator(function, descriptors)
    harness = BroadcastOperatorTestHarness(operator, key_selector=key_selector, **kwargs)
    return _opened(harness, broadcast_state, snapshot)


def for_broadcast_process_function(
    function: BroadcastProcessFunction,
    descriptors: Sequence[MapStateDescriptor],
    *,
    broadcast_state: bytes | None = None,
    **kwargs: Any,
) -> BroadcastOperatorTestHarness:
    """An opened harness running ``function`` on a non-keyed stream and a broadcast stream."""
    harness = BroadcastOperatorTestHarness(
        BroadcastProcessOperator(function, descriptors), **kwargs
    )
    return _opened(harness, broadcast_state, None)


def for_keyed_co_process_function(
    function: KeyedCoProcessFunction,
    key_selector1: KeyFunction,
    key_selector2: KeyFunction,
    **kwargs: Any,
) -> TwoInputStreamOperatorTestHarness:
    """An opened harness running ``function`` on two streams keyed by the two selectors."""
    if not callable(key_selector1) or not callable(key_selector2):
        raise TypeError("key_selector1 and key_selector2 must be callables (value -> key)")
    harness = TwoInputStreamOperatorTestHarness(
        KeyedCoProcessOperator(function),
        key_selector1=key_selector1,
        key_selector2=key_selector2,
        **kwargs,
    )
    harness.open()
    return harness


def for_co_process_function(
    function: CoProcessFunction, **kwargs: Any
) -> TwoInputStreamOperatorTestHarness:
    """An opened harness running a non-keyed ``function`` on two streams."""
    harness = TwoInputStreamOperatorTestHarness(CoProcessOperator(function), **kwargs)
    harness.open()
    return harness
