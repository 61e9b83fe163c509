"""The ``foreachBatch`` function of a streaming job on a Spark Connect session.

Spark Connect runs a query's ``foreachBatch`` function on the server, in a Python process the
server starts for the query. That process does not see the session's Python artifacts (which
the tasks' workers do), so the function cannot be sparktide's batch runner itself: unpickling
it would need sparktide installed on the server. The function is a small bootstrap, pickled by
value, that carries sparktide's zip (:func:`~sparktide.spark.session.package_zip`) and the
pickled runner: at the first batch it writes the zip into a new temporary directory, puts it
first on ``sys.path``, unpickles the runner and keeps it for the batches that follow.

The runner runs each batch holding the checkpoint's
:class:`~sparktide.spark.batch_lock.BatchLock` (made again where the runner is unpickled: a
lock on the same checkpoint file), as the client's batches without new data do, so that a
version is run by one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from sparktide.spark.session import _package_dir, package_zip

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BatchRunner", "connect_batch_function"]


class BatchRunner(Protocol):
    """What runs a streaming query's micro-batches (``foreachBatch``)."""

    def on_batch(self, batch_df: DataFrame, batch_id: int) -> None: ...


# compiled in a module namespace no server process could import by name: pickled by value
_BOOTSTRAP_SOURCE = r"""
def make(package, runner_bytes):
    loaded = {}

    def on_batch(batch_df, batch_id):
        runner = loaded.get("runner")
        if runner is None:
            import os
            import sys
            import tempfile

            from pyspark import cloudpickle

            if package is not None:
                path = os.path.join(tempfile.mkdtemp(prefix="sparktide-"), "sparktide.zip")
                with open(path, "wb") as out:
                    out.write(package)
                sys.path.insert(0, path)
            runner = loaded["runner"] = cloudpickle.loads(runner_bytes)
        runner.on_batch(batch_df, batch_id)

    return on_batch
"""


_Make = Callable[[bytes | None, bytes], Callable[["DataFrame", int], None]]


def connect_batch_function(runner: BatchRunner) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function that runs ``runner.on_batch`` on a Connect server."""
    from pyspark import cloudpickle

    package = package_zip().read_bytes() if _package_dir().is_dir() else None
    namespace: dict[str, object] = {"__name__": "sparktide_connect_bootstrap"}
    exec(compile(_BOOTSTRAP_SOURCE, "<sparktide foreachBatch bootstrap>", "exec"), namespace)
    make = cast(_Make, namespace["make"])  # defined by the source just run
    return make(package, cloudpickle.dumps(runner))
