"""Every environment variable sparktide reads, read here and nowhere else.

Options of a job are named configuration options
(:mod:`sparktide.common.config_options`, set with ``env.configure(...)``); an environment
variable is at most an override for tests, benchmarks and the command line, or a fact of the
process (where Java is, which Python Spark's workers run). docs/architecture.md ("Environment
variables") lists them all in one table. Each function reads the process's environment when
it is called (a test that sets a variable sees it at once); an unset or blank variable is
``None``.

>>> from unittest import mock
>>> with mock.patch.dict(os.environ, {COLUMNAR: " Python "}):
...     columnar()
'python'
>>> with mock.patch.dict(os.environ, {COLUMNAR: " "}):
...     columnar() is None
True
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "COLUMNAR",
    "LOG_LEVEL",
    "MASTER",
    "PARALLELISM",
    "PYFLINK_PYTHON",
    "RUNTIME",
    "STATE_BACKEND",
    "columnar",
    "java_home",
    "local_connect_server",
    "log_level",
    "master",
    "parallelism",
    "process_environment",
    "pyflink_python",
    "pyspark_driver_python",
    "pyspark_gateway_running",
    "pyspark_python",
    "python_path",
    "runtime",
    "state_backend",
    "user_name",
    "worker_python",
]

RUNTIME = "SPARKTIDE_RUNTIME"
"""Where an environment made without ``runtime=`` runs its jobs: ``local`` or ``spark``."""
PARALLELISM = "SPARKTIDE_PARALLELISM"
"""The parallelism of an environment made by ``get_execution_environment()`` (an int >= 1)."""
MASTER = "SPARKTIDE_MASTER"
"""The master of a SparkSession sparktide builds (default ``local[*]``)."""
STATE_BACKEND = "SPARKTIDE_STATE_BACKEND"
"""The default state backend: ``hashmap`` or ``rocksdb``."""
COLUMNAR = "SPARKTIDE_COLUMNAR"
"""An override of ``sparktide.execution.columnar`` (``auto``/``on``, ``python``, ``off``) for
jobs that do not set the option themselves."""
LOG_LEVEL = "SPARKTIDE_LOG_LEVEL"
"""The level of Spark's and py4j's logs (log4j's names; default ``ERROR``)."""
PYFLINK_PYTHON = "SPARKTIDE_PYFLINK_PYTHON"
"""A Python with PyFlink, for the Nexmark comparison runs."""


def _read(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def runtime() -> str | None:
    """``SPARKTIDE_RUNTIME``, as given."""
    return _read(RUNTIME)


def parallelism() -> int | None:
    """``SPARKTIDE_PARALLELISM`` as an int; a value that is no int >= 1 is an error naming it."""
    raw = _read(PARALLELISM)
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{PARALLELISM} must be an int >= 1, got {raw!r}; unset it or fix it")
    return int(raw)


def master() -> str | None:
    """``SPARKTIDE_MASTER``, as given."""
    return _read(MASTER)


def state_backend() -> str | None:
    """``SPARKTIDE_STATE_BACKEND``, as given (checked by
    :func:`~sparktide.core.state_backend.default_state_backend`)."""
    return _read(STATE_BACKEND)


def columnar() -> str | None:
    """``SPARKTIDE_COLUMNAR`` in lower case (read by
    :class:`~sparktide.runtime.execution.path.PathOptions`, which checks it)."""
    raw = _read(COLUMNAR)
    return None if raw is None else raw.lower()


def log_level() -> str | None:
    """``SPARKTIDE_LOG_LEVEL``, as given (checked by :mod:`sparktide.spark.logs`)."""
    return _read(LOG_LEVEL)


def pyflink_python() -> str | None:
    """``SPARKTIDE_PYFLINK_PYTHON``, as given."""
    return _read(PYFLINK_PYTHON)


def java_home() -> str | None:
    """``JAVA_HOME``: where Java is (Spark's JVM needs it, or ``java`` on the ``PATH``)."""
    return _read("JAVA_HOME")


def pyspark_gateway_running() -> bool:
    """Whether ``PYSPARK_GATEWAY_PORT`` is set: spark-submit or a shell started the JVM."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def local_connect_server() -> bool:
    """Whether ``SPARK_LOCAL_REMOTE`` is set: PySpark started a Spark Connect server in this
    process (``SparkSession.builder.remote("local[...]")``)."""
    return "SPARK_LOCAL_REMOTE" in os.environ


def pyspark_python() -> str | None:
    """``PYSPARK_PYTHON``: the Python of Spark's workers, if set."""
    return os.environ.get("PYSPARK_PYTHON")


def pyspark_driver_python() -> str | None:
    """``PYSPARK_DRIVER_PYTHON``: the Python of Spark's driver-side workers, if set."""
    return os.environ.get("PYSPARK_DRIVER_PYTHON")


def python_path() -> str:
    """``PYTHONPATH`` (empty when unset)."""
    return os.environ.get("PYTHONPATH", "")


def user_name() -> str:
    """``USERNAME`` (``user`` when unset): names per-user folders where there is no uid."""
    return os.environ.get("USERNAME", "user")


def process_environment() -> dict[str, str]:
    """A copy of the whole environment, for a subprocess started with changes to it."""
    return dict(os.environ)


@contextmanager
def worker_python(executable: str) -> Iterator[None]:
    """``PYSPARK_PYTHON`` set to ``executable`` while inside, then as it was (unset if it
    was unset)."""
    previous = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = executable
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = previous
