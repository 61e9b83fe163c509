"""Spark's and py4j's logs go to stderr, at one configurable level; stdout is the job's own.

Two sources of log lines surround a job on Spark:

- **The JVM** (Spark, Hadoop) logs through log4j2. An embedded session gets a log4j2
  configuration of its own (:func:`driver_java_options`): one console appender on stderr and the
  level of :func:`log_level` for every logger, so none of the start-up WARN lines of Spark's
  default profile (loopback host name, native-hadoop library, "Setting default log level")
  appear at the default level ``ERROR``.
- **Python**: py4j logs every closed gateway connection at INFO ("Closing down clientserver
  connection", at the latest when the interpreter exits) and PySpark has loggers of its own.
  Both propagate to the root logger, so a script that calls
  ``logging.basicConfig(stream=sys.stdout, level=logging.INFO)`` would get them in its stdout.
  :func:`keep_off_stdout` gives the ``py4j`` and ``pyspark`` loggers a handler of their own on
  stderr, at the same level, and stops their propagation -- unless the user has configured one of
  them already (a handler of their own, or propagation off), which is then left as it is.

The level is ``SPARKTIDE_LOG_LEVEL`` (one of log4j's ``OFF FATAL ERROR WARN INFO DEBUG TRACE
ALL``, any case; default ``ERROR``), or what :func:`set_log_level` set, which also changes it in
the running session.

What the process's log setup chose and added lives in one :class:`LogSetup`, :data:`SETUP`: the
loggers it configures (``py4j``, ``pyspark``) are the process's own, as every Python logger is,
so the record of the level chosen and of the handlers added is one per process too. The
functions of this module act on it.

>>> "-Dlog4j2.configurationFile=" in driver_java_options("WARN")
True
>>> log4j2_properties("WARN").splitlines()[0]
'rootLogger.level = WARN'
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, TextIO

from sparktide.common import env_overrides

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "LOG_LEVEL_VARIABLE",
    "SETUP",
    "LogSetup",
    "driver_java_options",
    "keep_off_stdout",
    "log4j2_properties",
    "log_level",
    "set_log_level",
]

LOG_LEVEL_VARIABLE = env_overrides.LOG_LEVEL
_DEFAULT_LEVEL = "ERROR"
# log4j's levels and the Python logging level that lets the same records through
_PYTHON_LEVELS: Mapping[str, int] = MappingProxyType(
    {
        "OFF": logging.CRITICAL + 10,
        "FATAL": logging.CRITICAL,
        "ERROR": logging.ERROR,
        "WARN": logging.WARNING,
        "INFO": logging.INFO,
        "DEBUG": logging.DEBUG,
        "TRACE": logging.DEBUG,
        "ALL": logging.DEBUG,
    }
)
_PYTHON_LOGGERS = ("py4j", "pyspark")


def _checked(level: object, source: str) -> str:
    if not isinstance(level, str) or level.strip().upper() not in _PYTHON_LEVELS:
        raise ValueError(
            f"{source} must be one of {' '.join(_PYTHON_LEVELS)} (any case), got {level!r}"
        )
    return level.strip().upper()


def log_level() -> str:
    """The level for Spark's and py4j's logs: :func:`set_log_level`'s, else
    ``SPARKTIDE_LOG_LEVEL``'s, else ``ERROR``."""
    return SETUP.level()


def set_log_level(level: str, spark: SparkSession | None = None) -> None:
    """Sets the level of Spark's and py4j's logs for sessions started from now on and, on a
    classic ``spark`` (default: the active session, if any), at once.

    ``level`` is one of log4j's ``OFF FATAL ERROR WARN INFO DEBUG TRACE ALL`` (any case).
    """
    SETUP.set_level(level, spark)


def log4j2_properties(level: str) -> str:
    """A log4j2 configuration: every logger at ``level``, one appender on stderr."""
    return "\n".join(
        [
            f"rootLogger.level = {level}",
            "rootLogger.appenderRef.stderr.ref = stderr",
            "appender.stderr.type = Console",
            "appender.stderr.name = stderr",
            "appender.stderr.target = SYSTEM_ERR",
            "appender.stderr.layout.type = PatternLayout",
            "appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
            # PySpark's gateway sets the shell's level from this logger, printing "Setting
            # default log level" when it differs from the root's
            "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer",
            f"logger.gateway.level = {level}",
            "",
        ]
    )


def _config_file(level: str) -> Path:
    """The configuration of ``level`` in a file of this user's own, named by its content."""
    text = log4j2_properties(level)
    owner = os.getuid() if hasattr(os, "getuid") else env_overrides.user_name()
    directory = Path(tempfile.gettempdir(), f"sparktide-log4j2-{owner}")
    directory.mkdir(mode=0o700, exist_ok=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    target = directory / f"log4j2-{digest}.properties"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        fd, partial = tempfile.mkstemp(prefix=target.name, suffix=".part", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, target)
    return target


def driver_java_options(level: str | None = None) -> str:
    """``spark.driver.extraJavaOptions`` for an embedded session: log4j2 configured by
    :func:`log4j2_properties` at ``level`` (default :func:`log_level`)."""
    chosen = log_level() if level is None else _checked(level, "level")
    return f"-Dlog4j2.configurationFile={_config_file(chosen).as_uri()}"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class LogSetup:
    """The level chosen for Spark's and py4j's logs (``chosen``: by :meth:`set_level`, which
    wins over the environment variable) and the handlers :meth:`keep_off_stdout` added, by
    logger name.

    >>> setup = LogSetup()
    >>> setup.set_level("warn"); setup.level()
    'WARN'
    """

    __slots__ = ("chosen", "handlers")

    def __init__(self) -> None:
        self.chosen: str | None = None
        self.handlers: dict[str, logging.Handler] = {}

    def level(self) -> str:
        """:meth:`set_level`'s level, else ``SPARKTIDE_LOG_LEVEL``'s, else ``ERROR``."""
        if self.chosen is not None:
            return self.chosen
        raw = env_overrides.log_level()
        if raw is None:
            return _DEFAULT_LEVEL
        return _checked(raw, f"the environment variable {LOG_LEVEL_VARIABLE}")

    def set_level(self, level: str, spark: SparkSession | None = None) -> None:
        """See :func:`set_log_level`; without a ``spark`` nor an active session, only the
        Python loggers and the sessions started from now on."""
        chosen = self.chosen = _checked(level, "level")
        for name, handler in self.handlers.items():
            handler.setLevel(_PYTHON_LEVELS[chosen])
            logging.getLogger(name).setLevel(_PYTHON_LEVELS[chosen])
        if spark is None:
            try:
                from pyspark.sql import SparkSession
            except ImportError:
                return
            spark = SparkSession.getActiveSession()
        context = getattr(spark, "_sc", None)  # classic sessions only: Connect has no context
        if context is not None:
            context.setLogLevel(chosen)

    def _configured_by_user(self, logger: logging.Logger) -> bool:
        own = self.handlers.get(logger.name)
        # py4j adds a NullHandler of its own class to "py4j": a handler that writes nothing
        foreign = [h for h in logger.handlers if h is not own and type(h).__name__ != "NullHandler"]
        return bool(foreign) or (own is None and not logger.propagate)

    def keep_off_stdout(self) -> None:
        """See :func:`keep_off_stdout`."""
        level = _PYTHON_LEVELS[self.level()]
        for name in _PYTHON_LOGGERS:
            logger = logging.getLogger(name)
            if self._configured_by_user(logger):
                continue
            handler = self.handlers.get(name)
            if handler is None:
                handler = self.handlers[name] = _StderrHandler()
                handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
                logger.addHandler(handler)
            handler.setLevel(level)
            logger.setLevel(level)
            logger.propagate = False


SETUP: Final = LogSetup()
"""This process's log setup (see the module docstring)."""


def keep_off_stdout() -> None:
    """Sends the ``py4j`` and ``pyspark`` loggers to stderr at :func:`log_level`, without
    propagation to the root logger (whose handlers may write to stdout). Loggers the user
    configured (a handler of their own, or propagation off) are left alone. Idempotent."""
    SETUP.keep_off_stdout()
