"""The Python a job's functions need on the workers (PyFlink's ``set_python_executable``,
``add_python_file``, ``add_python_archive``, ``set_python_requirements``), mapped onto Spark's
ways of shipping Python:

======================== ============================================= =========================
PyFlink                  on Spark (applied when the job runs)          on the local runtime
======================== ============================================= =========================
add_python_file(p)       ``SparkContext.addPyFile`` (a directory is    ``p`` (its directory for
                         zipped first)                                 a ``.py``) on ``sys.path``
add_python_archive(p, d) ``SparkContext.addArchive("p#d")``: unpacked  checked to exist
                         as ``d`` in ``SparkFiles.get(d)`` (on a
                         cluster: the executor's working directory)
set_python_executable(e) ``spark.pyspark.python`` / ``PYSPARK_PYTHON`` checked to exist
                         for a session started by the job; an already
                         running one with another Python is an error
set_python_requirements  not supported on Spark (Spark installs no     every requirement is
                         packages): pack a virtualenv, ship it with    checked to be installed
                         add_python_archive and point
                         set_python_executable into it
======================== ============================================= =========================

>>> deps = PythonDependencies()
>>> deps.add_file(__file__)
>>> len(deps.files)
1
>>> deps.add_file("/no/such/file.py")
Traceback (most recent call last):
...
FileNotFoundError: add_python_file: /no/such/file.py does not exist; pass the path of a .py \
file, a package directory or a .zip/.egg
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sparktide.common import env_overrides

__all__ = ["PythonDependencies"]

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _existing(path: str, method: str, what: str) -> str:
    if not isinstance(path, str) or not path:
        raise TypeError(f"{method}: the path must be a non-empty str, got {path!r}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{method}: {path} does not exist; pass the path of {what}")
    return os.path.abspath(path)


class PythonDependencies:
    """What an environment was told to ship; :meth:`apply_local` / :meth:`apply_spark` act on
    it when a job runs."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.archives: list[tuple[str, str | None]] = []
        self.executable: str | None = None
        self.requirements: tuple[str, str | None] | None = None
        self.cached_files: dict[str, str] = {}
        self._shipped: set[str] = set()

    def is_set(self) -> bool:
        return bool(
            self.files
            or self.archives
            or self.cached_files
            or self.executable is not None
            or self.requirements is not None
        )

    def add_file(self, file_path: str) -> None:
        self.files.append(
            _existing(
                file_path, "add_python_file", "a .py file, a package directory or a .zip/.egg"
            )
        )

    def add_archive(self, archive_path: str, target_dir: str | None) -> None:
        path = _existing(archive_path, "add_python_archive", "a .zip, .tar.gz, .tgz or .tar")
        if target_dir is not None and (not isinstance(target_dir, str) or "/" in target_dir):
            raise ValueError(f"target_dir must be a directory name (no '/'), got {target_dir!r}")
        self.archives.append((path, target_dir))

    def set_executable(self, python_exec: str) -> None:
        if not isinstance(python_exec, str) or not python_exec:
            raise TypeError(f"python_exec must be a non-empty str, got {python_exec!r}")
        self.executable = python_exec

    def set_requirements(self, requirements_file_path: str, cache_dir: str | None) -> None:
        path = _existing(
            requirements_file_path, "set_python_requirements", "a pip requirements file"
        )
        self.requirements = (path, cache_dir)

    def requirement_names(self) -> list[str]:
        """The project names of the requirements file (options and comments skipped)."""
        if self.requirements is None:
            return []
        names = []
        for line in Path(self.requirements[0]).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("-"):
                continue
            match = _REQUIREMENT_NAME.match(line)
            if match:
                names.append(match.group(1))
        return names

    # ------------------------------------------------------------------ when a job runs

    def apply_local(self) -> None:
        """The local runtime runs the functions in this interpreter: make the files
        importable, check the executable, archives and requirements."""
        for path in self.files:
            entry = os.path.dirname(path) if path.endswith(".py") else path
            if entry not in sys.path:
                sys.path.insert(0, entry)
        for path, _ in self.archives:
            _existing(path, "add_python_archive", "an archive")
        if self.executable is not None and shutil.which(self.executable) is None:
            raise FileNotFoundError(
                f"set_python_executable: {self.executable!r} is no Python found here; pass the "
                "path of a python executable (the local runtime runs in this interpreter)"
            )
        missing = []
        for name in self.requirement_names():
            try:
                importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                missing.append(name)
        if missing:
            raise ModuleNotFoundError(
                f"set_python_requirements: {missing} from {self.requirements[0]} "  # type: ignore[index]
                "are not installed in this Python; pip install -r that file"
            )

    @contextmanager
    def session_python(self) -> Iterator[None]:
        """While a job gets its SparkSession: the executable for its Python workers, in
        ``PYSPARK_PYTHON`` only while the session starts (a session already running keeps its
        own, and the process's environment is left as it was)."""
        if self.executable is None:
            yield
            return
        with env_overrides.worker_python(self.executable):
            yield

    def apply_spark(self, spark: Any) -> None:
        """Ship the files and archives to the executors of ``spark`` (once per path)."""
        if self.requirements is not None:
            raise NotImplementedError(
                "set_python_requirements is not supported on Spark, because Spark installs no "
                "packages on its executors: pack a virtualenv (e.g. venv-pack -o env.tar.gz), "
                "ship it with add_python_archive('env.tar.gz', 'env') and point "
                "set_python_executable('env/bin/python') into it"
            )
        context = spark.sparkContext
        if self.executable is not None and context.pythonExec != self.executable:
            raise RuntimeError(
                f"set_python_executable({self.executable!r}): the SparkSession runs its Python "
                f"workers with {context.pythonExec!r} and cannot change it once started; set "
                "spark.pyspark.python (or PYSPARK_PYTHON) before the session starts"
            )
        for path in self.files:
            if path in self._shipped:
                continue
            shipped = path
            if os.path.isdir(path):
                base = os.path.join(tempfile.mkdtemp(prefix="sparktide-pyfile-"), "files")
                shipped = shutil.make_archive(base, "zip", path)
            context.addPyFile(shipped)
            self._shipped.add(path)
        for path in self.cached_files.values():
            if path not in self._shipped:
                context.addFile(path)
                self._shipped.add(path)
        for path, target in self.archives:
            if path in self._shipped:
                continue
            context.addArchive(path if target is None else f"{path}#{target}")
            self._shipped.add(path)
