"""Class-data archives of Spark's and PyFlink's classes, which the suite's JVMs map at start.

A Spark driver or a PyFlink gateway spends most of its start loading and verifying classes
from jars. Java's application class-data sharing keeps them, parsed and verified, in an
archive the JVM maps instead: the suite's in-process session and every Spark and PyFlink it
starts in a subprocess (``sparktide run``, killed runs, signals, the PyFlink oracles) start
faster (on a 2-core machine: a Spark session to the end of its first SQL job ~14 s without,
~8.5 s with; PyFlink's ``word_count.py`` 10-11 s without, 7.6-8.2 s with). An archive changes
nothing a test sees: a JVM that cannot use it (another JDK, another class path, such as the
Spark Connect tests' Spark home) loads the classes from the jars as before, silently.

:func:`use_class_archives` makes each archive once per JDK and jars (a short run whose JVM dumps
what it loaded as it exits, 30-60 s), keeps it under ``$XDG_CACHE_HOME`` (or ``~/.cache``), and
hands it to every JVM started from then on: Spark drivers through ``PYSPARK_SUBMIT_ARGS``
(``spark.driver.defaultJavaOptions``, before the JVM options sparktide sets), PyFlink gateways
through ``JVM_ARGS``. A variable already set is left alone; an archive that cannot be made is
done without.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ARCHIVE_TIMEOUT_S = 600
"""The longest the run that makes an archive may take, its JVM's dump included."""

_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""No line of the JVM's about the archive (a JVM that cannot use one says so on stdout)."""


def use_class_archives(pyflink_python: str | None) -> None:
    """Spark's archive for every Spark driver; PyFlink's (made with ``pyflink_python``, a
    Python with apache-flink, if there is one) for every PyFlink gateway."""
    _use("PYSPARK_SUBMIT_ARGS", sys.executable, "spark", _spark_options)
    if pyflink_python is not None:
        _use("JVM_ARGS", pyflink_python, "pyflink", str)


def _spark_options(java_options: str) -> str:
    return f"--conf 'spark.driver.defaultJavaOptions={java_options}' pyspark-shell"


def _use(variable: str, python: str, kind: str, value: Callable[[str], str]) -> None:
    """Set ``variable`` to ``value(<JVM options mapping the archive of kind>)``."""
    if variable in os.environ:
        return
    archive = _archive_path(python, kind)
    if archive is None or not (archive.is_file() or _make(archive, python, kind, variable, value)):
        return
    os.environ[variable] = value(f"-XX:SharedArchiveFile={archive} {_QUIET}")


def _archive_path(python: str, kind: str) -> Path | None:
    """Where the archive of ``kind`` for this JDK and ``python``'s jars is kept."""
    try:
        java = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=60, check=True
        ).stderr
        jars = subprocess.run(
            [python, __file__, kind, "--jars"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if not jars.strip():
        return None
    key = hashlib.sha256(f"{java}\n{jars}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "sparktide-tests" / f"{kind}-classes-{key}.jsa"


def _make(
    archive: Path, python: str, kind: str, variable: str, value: Callable[[str], str]
) -> bool:
    """Run :func:`_load_classes` of ``kind`` in a JVM that dumps its classes as it exits, and
    wait for that JVM (it outlives the Python that started it) to be gone; without ``/proc``
    or a writable cache, nothing is made."""
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    if not os.access(archive.parent, os.W_OK) or not os.path.isdir("/proc"):
        return False
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    env = {**os.environ, variable: value(f"-XX:ArchiveClassesAtExit={partial} {_QUIET}")}
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])  # PyFlink's
    deadline = time.monotonic() + ARCHIVE_TIMEOUT_S
    try:
        done = subprocess.run(
            [python, __file__, kind], env=env, capture_output=True, timeout=ARCHIVE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    while _running(str(partial)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if done is None or done.returncode != 0 or _running(str(partial)) or not partial.is_file():
        partial.unlink(missing_ok=True)
        return False
    partial.replace(archive)  # another run's archive of the same key is the same
    return True


def _running(marker: str) -> bool:
    """Whether a process whose command line holds ``marker`` runs (Linux's ``/proc``)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        return True
            except OSError:
                continue
    return False


def _load_spark_classes() -> None:
    """A SQL aggregate and a sparktide job with a keyed stage: most of the classes a test's
    Spark loads (more makes the archive slower to write than the suite's starts gain)."""
    from sparktide.common import Types
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark.session import get_spark

    spark = get_spark("local[2]")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    pairs = env.from_collection([(i % 3, i) for i in range(30)], Types.TUPLE([Types.INT()] * 2))
    sums = pairs.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    list(sums.execute_and_collect())
    spark.stop()


def _load_pyflink_classes() -> None:
    """A PyFlink job with a Python function and a keyed stage, its output collected."""
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    pairs = env.from_collection([(i % 3, i) for i in range(30)], Types.TUPLE([Types.INT()] * 2))
    sums = pairs.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    with sums.execute_and_collect() as out:
        list(out)


def _jars(package: str, folder: str) -> list[str]:
    """The names of the jars in ``folder`` of ``package``, which its JVM loads classes from."""
    import importlib

    module = importlib.import_module(package)
    return sorted(os.listdir(Path(module.__file__ or "").parent / folder))


if __name__ == "__main__":
    which = {
        "spark": ("pyspark", "jars", _load_spark_classes),
        "pyflink": ("pyflink", "lib", _load_pyflink_classes),
    }
    package, folder, load = which[sys.argv[1]]
    if sys.argv[2:] == ["--jars"]:
        print("\n".join(_jars(package, folder)))
    else:
        load()
