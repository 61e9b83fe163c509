"""Triggers (see :mod:`sparktide.datastream.window`).

Defined in :mod:`sparktide.core.window.triggers` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> TriggerResult.FIRE.is_fire()
True
"""

from sparktide.core.window.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "Trigger",
    "TriggerResult",
]
