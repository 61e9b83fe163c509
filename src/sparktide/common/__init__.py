"""Common types shared by every API: time spans (``Duration``, ``Time``) and ``RowKind``."""

from sparktide.common.row_kind import RowKind
from sparktide.common.time import Duration, Time

__all__ = ["Duration", "RowKind", "Time"]
