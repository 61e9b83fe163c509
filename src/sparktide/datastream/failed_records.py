"""What a failed record's side output holds (see ``DataStream.with_failed_records``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FailedRecord"]


@dataclass(frozen=True)
class FailedRecord:
    """A record whose user function raised, routed to a side output instead of failing the job.

    ``value`` and ``timestamp`` are the record as the operator received it; ``operator`` is the
    operator's name, ``key`` its key (``None`` on a non-keyed stream), ``error_type`` the
    exception's qualified class name and ``error_message`` its text.

    >>> FailedRecord(3, 1000, "parse", None, "ValueError", "bad value 3").error_type
    'ValueError'
    """

    value: Any
    timestamp: int | None
    operator: str
    key: Any
    error_type: str
    error_message: str
