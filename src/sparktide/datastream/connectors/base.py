"""What every connector shares (PyFlink's ``pyflink.datastream.connectors.base``).

>>> DeliveryGuarantee.AT_LEAST_ONCE.name
'AT_LEAST_ONCE'
"""

from __future__ import annotations

from enum import Enum

from sparktide.common.not_provided import module_getattr

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = ["DeliveryGuarantee", "Sink"]


class DeliveryGuarantee(Enum):
    """What a sink promises about each record reaching the external system."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class Sink:
    """Base of the sinks ``DataStream.sink_to`` takes (``FileSink``, ``KafkaSink`` ...)."""
