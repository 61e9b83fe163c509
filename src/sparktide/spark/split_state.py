"""The state of a source split's watermark generator, carried from one micro-batch to the next.

A watermark generator is a user-extensible object; its picklable data attributes (nested
generators included) are captured after a batch and applied to the fresh generator of the next
batch. Clocks and functions are left out: the fresh generator keeps its own.
"""

from __future__ import annotations

import pickle
from typing import Any

from sparktide.common.watermark_strategy import WatermarkGenerator

__all__ = ["apply_generator_state", "capture_generator_state"]


def _attribute_names(obj: Any) -> list[str]:
    names: list[str] = []
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names.extend(getattr(obj, "__dict__", {}))
    return names


def _is_clock(value: Any) -> bool:
    return hasattr(value, "current_processing_time") or hasattr(
        value, "get_current_processing_time"
    )


def capture_generator_state(obj: Any) -> dict[str, Any]:
    """The picklable data attributes of a watermark generator (nested generators included;
    clocks and functions are left out: the fresh generator keeps its own)."""
    out: dict[str, Any] = {}
    for name in _attribute_names(obj):
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        if isinstance(value, WatermarkGenerator):
            out[name] = ("generator", capture_generator_state(value))
        elif callable(value) or _is_clock(value):
            continue
        else:
            try:
                pickle.dumps(value)
            except Exception:
                continue
            out[name] = ("value", value)
    return out


def apply_generator_state(obj: Any, captured: dict[str, Any]) -> None:
    for name, (kind, value) in captured.items():
        if kind == "generator":
            apply_generator_state(getattr(obj, name), value)
        else:
            setattr(obj, name, value)
