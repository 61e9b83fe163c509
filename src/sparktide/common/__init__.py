"""Common types shared by every API, with PyFlink's names (``pyflink.common`` →
``sparktide.common``): time spans, type information, rows and the watermark strategy."""

from sparktide.common.row_kind import RowKind
from sparktide.common.serialization import Encoder
from sparktide.common.time import Duration, Time
from sparktide.common.typeinfo import TypeInformation, Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import (
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)

__all__ = [
    "Duration",
    "Encoder",
    "Row",
    "RowKind",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkGenerator",
    "WatermarkStrategy",
]
