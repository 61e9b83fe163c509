"""``RuntimeExecutionMode`` (PyFlink's ``pyflink.datastream.execution_mode``).

>>> RuntimeExecutionMode.BATCH.name
'BATCH'
"""

from enum import Enum

__all__ = ["RuntimeExecutionMode"]


class RuntimeExecutionMode(Enum):
    """How a job runs: ``STREAMING`` (the default), ``BATCH`` or ``AUTOMATIC`` (batch when every
    source is bounded). A bounded job gives the same records in every mode here."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
