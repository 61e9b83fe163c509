"""The Python daemon of the Spark sessions sparktide starts: PySpark's own daemon, importing
pyspark from the installed package instead of the zipped copy Spark puts first on the path.

Spark starts its Python workers from a daemon (``python -m pyspark.daemon``) whose ``sys.path``
begins with the ``pyspark.zip`` and ``py4j-*.zip`` of its Spark home. With a pip-installed
PySpark these are copies of the installed package, but Python compiles every module it imports
from a zip each time (a zip gets no bytecode cache): the daemon and every worker forked from it
spend about 1.4 s of CPU compiling pyspark, the first micro-batch of a new session waiting on
them. A session sparktide builds on a JVM of its own, whose workers run the driver's Python,
starts this module instead (the setting :data:`DAEMON_MODULE_SETTING`, see
:func:`sparktide.spark.session.get_spark`). It drops those zips from ``sys.path`` when they lie
inside the very pyspark package that the rest of the path imports (the same files, by
construction), then runs PySpark's daemon. Any other layout (a separate Spark home, no pyspark
installed for this Python) keeps the path as Spark set it.

**Acknowledgements at once.** Over TCP on loopback (Spark's default), the JVM writes a task's
command and Arrow stream to its worker in small writes; the JVM's socket holds each small write
until the previous one is acknowledged (Nagle's algorithm) and the worker's kernel delays its
acknowledgements (up to 40 ms), so every Python task waited about that long once or more, even
with one row to process. Before each task the daemon's worker puts its end of the connection
in TCP's quick-acknowledgement mode (``TCP_QUICKACK``, Linux; :func:`acknowledging_at_once`):
the worker acknowledges at once and the JVM's writes go out without the wait. A ``mapInArrow``
job of 4 one-row tasks took 175-180 ms, 101-106 with it (Unix sockets: 92-102); two such stages
with an exchange between them 264-268 and 133-150 ms (``benchmarks/python_tasks.py``). Unix
sockets and systems without the option are left as they are.

Only the standard library is imported before the daemon forks its workers: PySpark imports a
worker's modules after the fork, since pyarrow and pandas start threads when imported.

>>> lib = "/venv/site-packages/pyspark/python/lib"
>>> path = [f"{lib}/pyspark.zip", f"{lib}/py4j-0.10.9.9-src.zip", "/job", "/venv/site-packages"]
>>> without_bundled_pyspark(path, lambda rest: Path("/venv/site-packages/pyspark"))
['/job', '/venv/site-packages']
>>> without_bundled_pyspark(path, lambda rest: None) == path  # no installed pyspark
True
>>> without_bundled_pyspark(path, lambda rest: Path("/other/pyspark")) == path  # another one
True
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from importlib.machinery import PathFinder
from pathlib import Path

__all__ = [
    "DAEMON_MODULE_SETTING",
    "acknowledging_at_once",
    "installed_pyspark",
    "without_bundled_pyspark",
]

DAEMON_MODULE_SETTING = "spark.python.daemon.module"
"""Spark's setting naming the module its Python daemon runs (``pyspark.daemon`` by default)."""


def installed_pyspark(path: list[str]) -> Path | None:
    """The directory of the ``pyspark`` package that ``path`` imports, if any."""
    spec = PathFinder.find_spec("pyspark", path)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def without_bundled_pyspark(
    path: list[str], installed: Callable[[list[str]], Path | None] = installed_pyspark
) -> list[str]:
    """``path`` without the zips under ``<pyspark>/python/lib`` when ``<pyspark>`` is the package
    the remaining entries import (``installed`` finds it); else ``path`` unchanged."""
    zips = [entry for entry in path if _bundled_zip(entry) is not None]
    if not zips:
        return path
    rest = [entry for entry in path if entry not in zips]
    package = installed(rest)
    if package is None or any(_bundled_zip(entry) != package for entry in zips):
        return path
    return rest


def _bundled_zip(entry: str) -> Path | None:
    """The Spark home whose ``python/lib`` holds the zip ``entry``, or None for other entries."""
    zipped = Path(entry)
    lib = zipped.parent
    if zipped.suffix != ".zip" or lib.name != "lib" or lib.parent.name != "python":
        return None
    return lib.parent.parent


Serve = Callable[[socket.socket, bool], int]
"""PySpark's daemon's ``worker(sock, authenticated)``: serves one task on ``sock`` in a forked
worker, returns its exit code."""


def acknowledging_at_once(serve: Serve) -> Serve:
    """``serve``, with the task's TCP connection put in quick-acknowledgement mode first (the
    kernel may leave the mode on its own later: it is set again for every task). A Unix socket,
    or a system without ``TCP_QUICKACK``, is served as it is."""
    quick_ack = getattr(socket, "TCP_QUICKACK", None)
    if quick_ack is None:
        return serve

    def serve_acknowledging(sock: socket.socket, authenticated: bool) -> int:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, quick_ack, 1)
        return serve(sock, authenticated)

    return serve_acknowledging


def main() -> None:
    """Run PySpark's daemon with pyspark from the installed package where it is the same, its
    workers acknowledging at once."""
    sys.path[:] = without_bundled_pyspark(sys.path)
    from pyspark import daemon

    # the daemon's loop calls ``worker`` by its module name, once per task: this process's own
    # copy of the module, the daemon of the sessions sparktide starts
    setattr(daemon, "worker", acknowledging_at_once(daemon.worker))  # noqa: B010 (typed as a def)
    daemon.manager()


if __name__ == "__main__":
    main()
