"""The async I/O retry predicates at PyFlink's path (``pyflink.datastream.
async_retry_predicates``), defined in :mod:`sparktide.core.async_retry`.

>>> empty_result_predicate([]), has_exception_predicate(None)
(True, False)
"""

from sparktide.core.async_retry import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)

__all__ = ["empty_result_predicate", "exception_type_predicate", "has_exception_predicate"]
