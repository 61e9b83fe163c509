"""Test harnesses for operators and process functions (for users' tests and ours)."""

from sparktide.testing.harness import (
    KeyedOneInputStreamOperatorTestHarness,
    OneInputStreamOperatorTestHarness,
    ProcessFunctionTestHarnesses,
    for_keyed_process_function,
    for_process_function,
)
from sparktide.testing.trigger_harness import TriggerFiring, TriggerTestHarness

__all__ = [
    "KeyedOneInputStreamOperatorTestHarness",
    "OneInputStreamOperatorTestHarness",
    "ProcessFunctionTestHarnesses",
    "TriggerFiring",
    "TriggerTestHarness",
    "for_keyed_process_function",
    "for_process_function",
]
