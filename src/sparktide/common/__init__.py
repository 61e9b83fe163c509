"""Common types shared by every API: time spans (``Duration``, ``Time``)."""

from sparktide.common.time import Duration, Time

__all__ = ["Duration", "Time"]
