"""The SparkSession a job runs on: the active one, or an embedded ``local[*]`` one.

The embedded session has its UI off, quiet logs, and workers that use the driver's Python; its
streaming queries write Spark's own checkpoint files (offset, commit and file-source logs)
through Hadoop's ``FileSystem`` API instead of ``FileContext`` (:data:`CHECKPOINT_FILES`); its
JVM sends its Python workers Arrow batches of at most :data:`ARROW_BATCH_BYTES`. In a
driver started by ``spark-submit``, a new session takes spark-submit's master and settings. For
any session, adaptive coalescing of shuffle partitions is turned off while sparktide runs: a
keyed stage's subtasks must stay in their own partitions.

On a master other than ``local``/``local[...]`` (``local-cluster[...]``, ``spark://``, ``yarn``,
``k8s://``) the executors run their Python workers in processes (or on machines) of their own,
which may not have sparktide installed: :func:`ship_package` ships the installed ``sparktide``
package to them as a zip with ``SparkContext.addPyFile``, once per SparkContext.
:func:`get_spark` does so for every session it returns (unless the driver itself imports
sparktide from an archive, such as a zip given to ``spark-submit --py-files``). The zip holds
sparktide only: its dependencies (pyarrow, numpy, pandas) must already be installed in the
workers' Python, which must be the same Python version as the driver's.

A Spark Connect session (``SparkSession.builder.remote(...)``) has no SparkContext: it gets the
zip as a session artifact (``spark.addArtifacts(zip, pyfile=True)``). The Python workers of any
session sparktide did not build itself are checked once before the first job
(:func:`check_workers`): a job stops before it runs, with one :class:`WorkerPythonError` naming
the workers' Python and how to change it, when they cannot run sparktide.

Which sessions got the zip and whose workers passed the check is recorded in one
:class:`PreparedSessions`, :data:`PREPARED`: what it records is about the Spark applications
and Connect sessions this driver process talks to, so it is one per process.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

import sparktide
from sparktide.common import env_overrides
from sparktide.spark import logs, worker_daemon
from sparktide.spark.stopping import sigint_kept

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = [
    "ARROW_BATCH_BYTES",
    "CHECKPOINT_FILES",
    "PREPARED",
    "PreparedSessions",
    "SparkUnavailableError",
    "WorkerPythonError",
    "WorkerPythonWarning",
    "check_local_workers",
    "check_prerequisites",
    "check_workers",
    "get_spark",
    "is_connect",
    "is_local_master",
    "package_zip",
    "ship_package",
]

_COALESCE_PARTITIONS = "spark.sql.adaptive.coalescePartitions.enabled"
_PROGRESS_BARS = "spark.ui.showConsoleProgress"
_CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
#: How the embedded session's streaming queries write Spark's checkpoint files: through Hadoop's
#: ``FileSystem`` API. Spark's default (``FileContext``) renames each file it writes (3 a
#: micro-batch: the file source's log, the offset log, the commit log) with 4 ``readlink``
#: processes started by the JVM on a local file system without Hadoop's native library, which
#: costs about 20 ms a file; ``FileSystem.rename`` on a local file is one ``rename(2)``, as
#: atomic. Spark's check that a log file is not there already stays; sparktide's checkpoint
#: lock keeps a second query off the checkpoint. (The figures: docs/spark.md.)
CHECKPOINT_FILES: Final = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
#: The largest Arrow batch (bytes) the embedded session's JVM sends a Python worker: a chunk
#: of exchanged entries is one row of up to a few MiB, so a batch of rows bounded by count
#: alone (``maxRecordsPerBatch``) can hold a task's whole input in the JVM's buffers.
ARROW_BATCH_BYTES: Final = 8 * 2**20
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")
_SKIPPED_DIRS = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip

#: what sparktide's tasks import in the Python workers
WORKER_MODULES = ("sparktide", "pyarrow", "pandas", "numpy")


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no pyspark, or no Java)."""


class WorkerPythonError(SparkUnavailableError):
    """The session's Python workers cannot run sparktide (see :func:`check_workers`)."""


class WorkerPythonWarning(UserWarning):
    """The session's Python workers will run another Python than the driver's, which may work
    (see :func:`check_local_workers`)."""


def check_prerequisites() -> None:
    """Raise :class:`SparkUnavailableError` when pyspark or Java is missing (a Spark Connect
    client needs no Java)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError(
            "pyspark is not installed: install sparktide's dependencies (pip install sparktide), "
            'or run on the in-process runtime: get_execution_environment(runtime="local")'
        ) from None
    if not (env_overrides.java_home() or shutil.which("java") or _connect_mode()):
        raise SparkUnavailableError(
            "Java was not found (no JAVA_HOME and no java on PATH): Spark needs Java 17; install "
            'it, or run on the in-process runtime: get_execution_environment(runtime="local")'
        )


def _connect_mode() -> bool:
    """Whether this process talks to Spark through Spark Connect (no JVM of its own needed)."""
    from pyspark.sql.utils import is_remote

    return bool(is_remote())


def get_spark(master: str | None = None) -> SparkSession:
    """The active SparkSession, or a new one (on ``local[*]`` unless told otherwise).

    Without ``master``, the active session is returned when there is one. Otherwise a session
    is built on ``master``, else on the master in the environment variable ``SPARKTIDE_MASTER``,
    else on ``local[*]`` -- or, in a driver started by ``spark-submit`` (whose JVM already runs),
    on spark-submit's master and settings. Unless the session's master is ``local`` or
    ``local[...]``, sparktide is shipped to its executors (:func:`ship_package`); a Spark
    Connect session gets it as an artifact. The Python workers of a session sparktide did not
    build are checked once (:func:`check_workers`).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        check_prerequisites()  # says what is missing
        raise

    logs.keep_off_stdout()
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return _prepared(active)
    check_prerequisites()
    master = master or env_overrides.master()
    if env_overrides.pyspark_gateway_running():
        # spark-submit (or a shell) started the JVM with its own master and settings
        builder = SparkSession.builder.config(_COALESCE_PARTITIONS, "false")
        if not _launch_conf_sets(_PROGRESS_BARS):  # stage bars would cut into the job's output
            builder = builder.config(_PROGRESS_BARS, "false")
        if master is not None:
            builder = builder.master(master)
        spark = builder.getOrCreate()
    else:
        spark = _embedded(master or "local[*]")
        if env_overrides.pyspark_python() == sys.executable:
            PREPARED.trust(spark)  # its workers run the driver's Python
    return _prepared(spark)


def _prepared(spark: SparkSession) -> SparkSession:
    """``spark``, its workers checked (:func:`check_workers`) and sparktide shipped to them
    (:func:`ship_package`); what can be known without the session comes first."""
    trusted = PREPARED.is_trusted(spark)
    if not trusted:
        check_local_workers(spark)
    ship_package(spark)
    if not trusted:
        _probe_workers(spark)
    return spark


def _launch_conf_sets(key: str) -> bool:
    """Whether the settings spark-submit (or a shell) launched the JVM with set ``key``."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the launched JVM: SparkConf reads its settings
    return bool(SparkConf().contains(key))


def _embedded(master: str) -> SparkSession:
    """A session of its own JVM on ``master``: UI off, logs on stderr at
    :func:`~sparktide.spark.logs.log_level`, the driver's Python (whose workers then start from
    :mod:`~sparktide.spark.worker_daemon`)."""
    from pyspark.sql import SparkSession

    if env_overrides.pyspark_python() is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if env_overrides.pyspark_driver_python() is None:
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # embedded workers import what the driver imports (job modules next to the driver script)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    current = env_overrides.python_path()
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*paths, *current.split(os.pathsep)]))
    builder = (
        SparkSession.builder.master(master)
        .appName("sparktide")
        .config("spark.ui.enabled", "false")
        .config(_PROGRESS_BARS, "false")
        .config(_COALESCE_PARTITIONS, "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(ARROW_BATCH_BYTES))
        .config("spark.driver.extraJavaOptions", logs.driver_java_options())
        .config(_CHECKPOINT_FILE_MANAGER, CHECKPOINT_FILES)
    )
    if env_overrides.pyspark_python() == sys.executable:  # the workers import what we import
        builder = builder.config(worker_daemon.DAEMON_MODULE_SETTING, worker_daemon.__name__)
    with sigint_kept():  # sparktide run's handler, not PySpark's (see spark/stopping.py)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(logs.log_level())
    return spark


# ---------------------------------------------------------------------------------------------
# Shipping the package to the executors


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the executor in the driver's JVM: ``local`` or ``local[...]``.

    >>> [is_local_master(m) for m in ("local", "local[*]", "local[4, 2]", "local-cluster[2,1,1]")]
    [True, True, True, False]
    >>> is_local_master("spark://host:7077"), is_local_master("yarn")
    (False, False)
    """
    return _LOCAL_MASTER.fullmatch(master.strip()) is not None


def _package_dir() -> Path:
    return Path(sparktide.__file__).resolve().parent


def _package_files(directory: Path) -> list[Path]:
    """The files of the package under ``directory``, sorted, without bytecode caches."""
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        files.extend(
            Path(root, name) for name in sorted(names) if not name.endswith(_SKIPPED_SUFFIXES)
        )
    return files


def _cache_dir() -> Path:
    """A directory of this user's own in the temp dir (nobody else may plant zips in it)."""
    owner = os.getuid() if hasattr(os, "getuid") else env_overrides.user_name()
    path = Path(tempfile.gettempdir(), f"sparktide-py-files-{owner}")
    path.mkdir(mode=0o700, exist_ok=True)
    if hasattr(os, "getuid"):
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise PermissionError(
                f"cannot cache sparktide's zip in {path}: it is not a directory owned by this "
                "user; remove it, or point TMPDIR at a directory of your own"
            )
        if info.st_mode & 0o022:  # writable by others: make it ours alone
            path.chmod(0o700)
    return path


def package_zip() -> Path:
    """A zip of the installed ``sparktide`` package, for ``addPyFile`` or ``--py-files``.

    The zip holds the package directory ``sparktide`` is imported from as ``sparktide/...``
    (without bytecode caches). It is cached in the temp dir under a name made of the version
    and a hash of the package's files, so it is rebuilt only when they change.
    """
    source = _package_dir()
    if not (source / "__init__.py").is_file():
        raise FileNotFoundError(
            f"sparktide is imported from {source}, not from a package directory (an archive?): "
            "there is nothing to zip; install sparktide (pip install sparktide) to build the zip"
        )
    files = _package_files(source)
    digest = hashlib.sha256()
    for file in files:
        relative = file.relative_to(source).as_posix().encode("utf-8")
        digest.update(len(relative).to_bytes(8, "big") + relative)
        content = file.read_bytes()
        digest.update(len(content).to_bytes(8, "big") + content)
    name = f"sparktide-{sparktide.__version__}-{digest.hexdigest()[:16]}.zip"
    target = _cache_dir() / name
    if target.is_file():
        return target
    # written next to the target and renamed: concurrent builders never see a partial zip
    fd, partial = tempfile.mkstemp(prefix=name + ".", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for file in files:
                arcname = "sparktide/" + file.relative_to(source).as_posix()
                info = zipfile.ZipInfo(arcname, date_time=_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, file.read_bytes())
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (``SparkSession.builder.remote(...)``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _session_key(spark: SparkSession) -> str:
    """What identifies the workers' environment of ``spark``: the application of a classic
    session, the server-side session of a Connect one (its artifacts are its own)."""
    if is_connect(spark):
        return f"connect:{getattr(spark, 'session_id', '')}"  # a Connect session's own id
    return f"classic:{spark.sparkContext.applicationId}"


def ship_package(spark: SparkSession, force: bool = False) -> Path | None:
    """Ship sparktide to the Python workers of ``spark`` (a SparkSession).

    A classic session gets the zip of :func:`package_zip` with ``SparkContext.addPyFile``, a
    Spark Connect session with ``spark.addArtifacts(zip, pyfile=True)``; at most once per
    SparkContext (Connect: per session). Returns the zip shipped, or None when nothing was
    shipped: on a classic ``local``/``local[...]`` master (its Python workers import sparktide
    as the driver does, unless ``force``) and when the driver imports sparktide from an archive
    rather than a directory (e.g. a zip given to ``spark-submit --py-files``, which the
    executors get that way). A zip of the same name the context already has (``--py-files``) is
    not added again.

    The zip holds sparktide only: pyarrow, numpy and pandas must be installed in the Python the
    workers run (``PYSPARK_PYTHON``), which must be the same Python version as the driver's.
    Modules of the job itself (functions and classes defined outside ``__main__``) must be
    shipped too, e.g. with ``spark.sparkContext.addPyFile`` (Connect: ``spark.addArtifacts``)
    or ``spark-submit --py-files``.
    """
    return PREPARED.ship(spark, force)


class PreparedSessions:
    """What this driver process did for the sessions it runs on, by session (a classic
    session's application, a Connect session's id): the zip each got (:meth:`ship`) and which
    passed :func:`check_workers` (:meth:`trust`, :meth:`is_trusted`). Thread-safe."""

    __slots__ = ("_checked", "_lock", "_shipped")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shipped: dict[str, Path] = {}  # session key -> the zip it got
        self._checked: set[str] = set()  # session keys whose Python workers can run sparktide

    def ship(self, spark: SparkSession, force: bool = False) -> Path | None:
        """:func:`ship_package`."""
        if not _package_dir().is_dir():
            return None
        connect = is_connect(spark)
        if not connect and not force and is_local_master(spark.sparkContext.master or ""):
            return None
        key = _session_key(spark)
        with self._lock:
            shipped = self._shipped.get(key)
            if shipped is None:
                shipped = package_zip()
                if connect:
                    spark.addArtifacts(str(shipped), pyfile=True)
                else:
                    context = spark.sparkContext
                    if shipped.name not in (getattr(context, "_python_includes", None) or ()):
                        context.addPyFile(str(shipped))
                self._shipped[key] = shipped
        return shipped

    def trust(self, spark: SparkSession) -> None:
        """Record that the Python workers of ``spark`` can run sparktide."""
        with self._lock:
            self._checked.add(_session_key(spark))

    def is_trusted(self, spark: SparkSession) -> bool:
        """Whether :meth:`trust` recorded ``spark``'s workers."""
        return _session_key(spark) in self._checked


PREPARED: Final = PreparedSessions()
"""This driver process's record of the sessions it prepared (see the module docstring)."""


# ---------------------------------------------------------------------------------------------
# Checking the Python workers

# The probe runs in the workers before sparktide is importable there, so it must travel by
# value: it is compiled in a module namespace that no worker could import by name.
_PROBE_SOURCE = r"""
def probe(_):
    import importlib
    import sys

    lines = [sys.executable, "%d.%d.%d" % tuple(sys.version_info[:3])]
    for name in MODULES:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            lines.append("%s\t%s: %s" % (name, type(exc).__name__, exc))
    return "\n".join(lines)
"""


def _probe_function() -> Callable[[int], str]:
    namespace: dict[str, object] = {"__name__": "sparktide_worker_probe", "MODULES": WORKER_MODULES}
    exec(compile(_PROBE_SOURCE, "<sparktide worker probe>", "exec"), namespace)
    return cast(Callable[[int], str], namespace["probe"])  # defined by the source just run


def _probe(spark: SparkSession) -> tuple[str, str, dict[str, str]]:
    """(executable, version, {module: import error}) of a Python worker of ``spark``."""
    from pyspark.sql import functions as F

    probe = F.udf(_probe_function(), "string", useArrow=False)
    row = spark.range(1).select(probe(F.col("id")).alias("probe")).collect()[0]
    return _probe_result(row["probe"])


def _probe_result(text: str) -> tuple[str, str, dict[str, str]]:
    executable, version, *failures = text.strip("\n").split("\n")
    missing = dict(line.split("\t", 1) for line in failures)
    return executable, version, missing


def _worker_python(spark: SparkSession) -> str:
    """The Python the session starts its workers with, as configured."""
    if not is_connect(spark):  # what PySpark gives every Python function it sends
        return str(spark.sparkContext.pythonExec)
    try:
        configured = spark.conf.get("spark.pyspark.python", None)
    except Exception:  # a Connect server may keep its configuration to itself
        configured = None
    return configured or "the server's PYSPARK_PYTHON"


def _fix_advice() -> str:
    python = sys.executable
    return (
        f"point Spark at a Python that has them, e.g. this one: run "
        f"os.environ['PYSPARK_PYTHON'] = sys.executable (or set PYSPARK_PYTHON={python}) "
        "before the SparkSession is built; "
        "with spark-submit or on a Spark Connect server, set spark.pyspark.python; on a cluster, "
        "install them in the executors' Python, or ship a packed environment with spark.archives "
        "(--archives) and point spark.pyspark.python at the python inside it"
    )


def _unfit(configured: str, executable: str, version: str, missing: dict[str, str]) -> str | None:
    """Why workers running ``executable`` (Python ``version``, which cannot import
    ``missing``) cannot run sparktide's tasks; ``None``: they can."""
    driver = _driver_version()
    problems = []
    if missing:
        first = next(iter(missing.values()))
        problems.append(f"cannot import {', '.join(missing)} ({first.split(': ', 1)[-1]})")
    if not version.startswith(driver + "."):
        problems.append(f"is not the driver's Python version ({driver})")
    if not problems:
        return None
    named = executable if configured == executable else f"{configured} ({executable})"
    return (
        f"Spark's Python workers run {named}, Python {version}, which "
        f"{' and '.join(problems)}. sparktide's tasks need Python {driver} with sparktide, "
        "pyarrow, pandas and numpy in the workers"
    )


def check_workers(spark: SparkSession) -> None:
    """Make sure the Python workers of ``spark`` can run sparktide, before any job runs.

    Once per session (classic: per SparkContext): first, for a session on this machine, what
    can be known without a job (:func:`check_local_workers`); then a one-row probe runs in a
    Python worker and reports its interpreter and which of sparktide, pyarrow, pandas and
    numpy it cannot import. When only sparktide is missing, sparktide is shipped to the
    workers (:func:`ship_package`) and probed again. Raises :class:`WorkerPythonError`, naming
    the workers' Python and how to point Spark at another one (``PYSPARK_PYTHON``,
    ``spark.pyspark.python``, ``spark.archives`` on a cluster), when the workers cannot import
    what sparktide needs or cannot start.
    """
    if PREPARED.is_trusted(spark):
        return
    check_local_workers(spark)
    _probe_workers(spark)


def _probe_workers(spark: SparkSession) -> None:
    """The probe of :func:`check_workers`: trusts ``spark`` when its workers pass."""
    try:
        executable, version, missing = _probe(spark)
        if set(missing) == {"sparktide"}:
            ship_package(spark, force=True)
            executable, version, missing = _probe(spark)
    except Exception as exc:
        raise WorkerPythonError(
            f"Spark's Python workers ({_worker_python(spark)}) failed to start or run: "
            f"{_cause(exc)}. sparktide's tasks need Python {_driver_version()} with pyspark, "
            f"sparktide, pyarrow, pandas and numpy in the workers: {_fix_advice()}"
        ) from None
    unfit = _unfit(_worker_python(spark), executable, version, missing)
    if unfit is not None:
        raise WorkerPythonError(f"{unfit}: {_fix_advice()}")
    PREPARED.trust(spark)


# ---------------------------------------------------------------------------------------------
# Knowing before the first job: workers on this machine started from PATH

#: at most this long for the interpreter on PATH to report itself
LOCAL_PROBE_TIMEOUT_S = 60.0


def _local_context(spark: SparkSession) -> SparkContext | None:
    """The SparkContext of this process that starts the Python workers of ``spark`` on this
    machine: a classic session's on a ``local``, ``local[...]`` or ``local-cluster[...]``
    master, or that of the Spark Connect server PySpark started in this process
    (``remote("local[...]")``); ``None`` for any other session."""
    if is_connect(spark):
        if not env_overrides.local_connect_server():
            return None
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
    else:
        context = spark.sparkContext
    if context is None:
        return None
    master = (context.master or "").strip()
    return context if is_local_master(master) or master.startswith("local-cluster") else None


def _probe_locally(python: str) -> tuple[str, str, dict[str, str]] | None:
    """What :func:`_probe` reports, from ``python`` run here as a subprocess (``None``: it
    did not run or report)."""
    source = f"MODULES = {WORKER_MODULES!r}\n{_PROBE_SOURCE}\nprint(probe(0))\n"
    try:
        done = subprocess.run(
            [python, "-c", source],
            capture_output=True,
            text=True,
            timeout=LOCAL_PROBE_TIMEOUT_S,
            env=env_overrides.process_environment(),  # what the workers inherit
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return _probe_result(done.stdout) if done.returncode == 0 and done.stdout else None


def _venv_advice() -> str:
    return (
        f"this script runs the Python of the virtual environment {sys.prefix} without it "
        "being activated, so Spark starts its workers with python3 from PATH; activate it "
        f"before running the script (source {Path(sys.executable).parent}/activate), or run "
        "os.environ['PYSPARK_PYTHON'] = sys.executable (or set "
        f"PYSPARK_PYTHON={sys.executable}) before the SparkSession is built"
    )


def check_local_workers(spark: SparkSession) -> None:
    """Say at once, before any Spark job, when the Python workers of ``spark`` will run
    another Python than a driver that runs in a virtual environment.

    PySpark starts its workers with ``PYSPARK_PYTHON`` as it was when the session was built,
    else with ``python3`` from ``PATH``: a script run as ``.venv/bin/python job.py`` without
    activating the environment gets workers on another Python. For a session on this machine
    (:func:`_local_context`) whose workers are started by a bare name, that name is looked up
    on ``PATH``; unless it is the driver's environment's own, that interpreter reports (as a
    subprocess, not a Spark job) what it cannot import. Raises :class:`WorkerPythonError`
    saying how to fix it when it lacks sparktide's dependencies or is another Python version
    (sparktide itself is shipped to the workers); warns with :class:`WorkerPythonWarning`
    when it may work.
    """
    context = _local_context(spark)
    if context is None or sys.prefix == sys.base_prefix:
        return
    configured = str(context.pythonExec)
    if os.path.dirname(configured):  # a path: PYSPARK_PYTHON names it (the probe checks it)
        return
    found = shutil.which(configured)
    if found is not None and Path(found).parent == Path(sys.executable).parent:
        return  # the environment is activated
    if found is None:
        raise WorkerPythonError(
            f"Spark's Python workers would start {configured!r} from PATH, which has none: "
            + _venv_advice()
        )
    probed = _probe_locally(found)
    if probed is None:
        return  # the probe in a worker says what is wrong
    executable, version, missing = probed
    missing.pop("sparktide", None)  # shipped to the workers
    unfit = _unfit(configured, executable, version, missing)
    if unfit is not None:
        raise WorkerPythonError(f"{unfit}: {_venv_advice()}")
    warnings.warn(
        f"Spark's Python workers will run {configured} ({executable}), not this driver's "
        f"Python {sys.executable}: sparktide is shipped to them, but packages installed only "
        f"in the virtual environment are not there; {_venv_advice()}",
        WorkerPythonWarning,
        stacklevel=4,
    )


def _driver_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


_CAUSES = (
    re.compile(r"(?:ModuleNotFoundError|ImportError): .*"),
    re.compile(r"Python in worker has different version.*"),
    re.compile(r"Cannot run program .*"),
)


def _cause(exc: BaseException) -> str:
    """The line of a failed probe's error that says why (not Spark's stack trace)."""
    text = str(exc)
    for pattern in _CAUSES:
        found = pattern.search(text)
        if found:
            return found.group(0).strip()[:300]
    first = next((line for line in text.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first.strip()[:300]}"
