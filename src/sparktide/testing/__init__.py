"""Test harnesses for operators and process functions (for users' tests and ours)."""

from sparktide.testing.harness import (
    KeyedOneInputStreamOperatorTestHarness,
    OneInputStreamOperatorTestHarness,
    ProcessFunctionTestHarnesses,
    for_keyed_process_function,
    for_process_function,
)
from sparktide.testing.trigger_harness import TriggerFiring, TriggerTestHarness
from sparktide.testing.two_input import (
    BroadcastOperatorTestHarness,
    TwoInputStreamOperatorTestHarness,
    for_broadcast_process_function,
    for_co_process_function,
    for_keyed_broadcast_process_function,
    for_keyed_co_process_function,
)

__all__ = [
    "BroadcastOperatorTestHarness",
    "KeyedOneInputStreamOperatorTestHarness",
    "OneInputStreamOperatorTestHarness",
    "ProcessFunctionTestHarnesses",
    "TriggerFiring",
    "TriggerTestHarness",
    "TwoInputStreamOperatorTestHarness",
    "for_broadcast_process_function",
    "for_co_process_function",
    "for_keyed_broadcast_process_function",
    "for_keyed_co_process_function",
    "for_keyed_process_function",
    "for_process_function",
]
