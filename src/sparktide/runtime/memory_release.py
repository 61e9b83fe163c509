"""Giving freed memory back to the system.

A process that freed much (a bounded Spark task's state once its stage subtask ended, the
events a benchmark generated) keeps the pages: Python's allocator and the C allocator keep
what they freed for later, and Arrow's memory pool its buffers. :func:`release_freed_memory`
returns them, so that the resident memory of the process is what it still holds.
"""

from __future__ import annotations

import ctypes
import gc

__all__ = ["release_freed_memory"]


def release_freed_memory() -> None:
    """Collect garbage and give freed memory back to the system: Arrow's memory pool returns
    its unused pages, and the C allocator (glibc's ``malloc_trim``, where there is one) the
    free space at the top and inside its heaps. What is still referenced stays. A collection
    inside :func:`~sparktide.runtime.gc_pacing.paced_collection` visits only what was allocated
    since the block began.

    >>> release_freed_memory()
    """
    gc.collect()
    try:
        import pyarrow as pa
    except ImportError:
        pass
    else:
        pa.default_memory_pool().release_unused()
    try:
        process = ctypes.CDLL(None)  # this process's symbols, the C library's among them
    except (OSError, TypeError):  # no such handle here (Windows)
        return
    trim = getattr(process, "malloc_trim", None)  # glibc only
    if trim is not None:
        trim(0)
