"""Operator test harnesses: drive one operator subtask by hand, on a simulated clock.

>>> from sparktide.datastream import KeyedProcessFunction
>>> class Echo(KeyedProcessFunction):
...     def process_element(self, value, ctx):
...         ctx.timer_service().register_processing_time_timer(100)
...         yield value
...     def on_timer(self, timestamp, ctx):
...         yield f"timer {timestamp} for {ctx.get_current_key()}"
>>> h = for_keyed_process_function(Echo(), lambda v: v[0])
>>> h.process_element("a1", 5)
>>> h.num_processing_time_timers()
1
>>> h.set_processing_time(100)
>>> h.get_output()
[StreamRecord('a1', 5), StreamRecord('timer 100 for a', None)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparktide.datastream.functions import KeyedProcessFunction, ProcessFunction
from sparktide.runtime.elements import Watermark
from sparktide.runtime.operators.base import AbstractStreamOperator
from sparktide.runtime.operators.process import KeyedProcessOperator, ProcessOperator
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.testing.operator_harness import (
    OperatorTestHarness,
    Snapshots,
    as_record,
    as_watermark,
)

__all__ = [
    "KeyedOneInputStreamOperatorTestHarness",
    "OneInputStreamOperatorTestHarness",
    "ProcessFunctionTestHarnesses",
    "for_keyed_process_function",
    "for_process_function",
]


class OneInputStreamOperatorTestHarness(OperatorTestHarness):
    """Drives one operator subtask: elements, watermarks, processing time; collects output.

    The watermark starts at ``MIN_TIMESTAMP``, and so does the simulated clock unless
    ``processing_time`` is given, as in Flink's harness (``Long.MIN_VALUE``).
    """

    def process_element(self, value: Any, timestamp: int | None = None) -> None:
        """Process ``value`` (or a StreamRecord) with event ``timestamp`` (int ms or None)."""
        self.operator.process_element(as_record(value, timestamp))

    def process_watermark(self, watermark: int | Watermark) -> None:
        self.operator.process_watermark(as_watermark(watermark))


class KeyedOneInputStreamOperatorTestHarness(OneInputStreamOperatorTestHarness):
    """A harness for a keyed operator: ``key_selector`` picks each element's key."""

    def __init__(
        self,
        operator: AbstractStreamOperator,
        key_selector: Callable[[Any], Any],
        **kwargs: Any,
    ) -> None:
        if not callable(key_selector):
            raise TypeError(
                f"key_selector must be callable (value -> key), got {type(key_selector).__name__}"
            )
        super().__init__(operator, key_selector=key_selector, **kwargs)


def for_keyed_process_function(
    function: KeyedProcessFunction,
    key_selector: Callable[[Any], Any],
    key_type: Any = None,
    *,
    snapshot: bytes | KeyedOperatorSnapshot | Snapshots | None = None,
    **kwargs: Any,
) -> KeyedOneInputStreamOperatorTestHarness:
    """An opened harness running ``function`` keyed by ``key_selector``.

    ``snapshot`` (one or several, for rescaling) is restored before opening; ``parallelism``,
    ``subtask_index``, ``max_parallelism`` and ``processing_time`` pick the subtask and clock.
    """
    harness = KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(function), key_selector, **kwargs
    )
    if snapshot is not None:
        harness.initialize_state(snapshot)
    harness.open()
    return harness


def for_process_function(
    function: ProcessFunction, **kwargs: Any
) -> OneInputStreamOperatorTestHarness:
    """An opened harness running a non-keyed ``function``."""
    harness = OneInputStreamOperatorTestHarness(ProcessOperator(function), **kwargs)
    harness.open()
    return harness


class ProcessFunctionTestHarnesses:
    """Factory names as in Flink's ``ProcessFunctionTestHarnesses``."""

    for_keyed_process_function = staticmethod(for_keyed_process_function)
    for_process_function = staticmethod(for_process_function)
