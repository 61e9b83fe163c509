"""Fixtures shared by the test files."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from class_archives import use_class_archives
from state_backends import BACKENDS, BackendFactory

STATE_BACKENDS = ("hashmap", "rocksdb")
"""The values of ``SPARKTIDE_STATE_BACKEND`` the backend matrix runs with."""


PYFLINK_PYTHON = os.environ.get("SPARKTIDE_PYFLINK_PYTHON") or str(
    Path(__file__).resolve().parents[1] / ".venv-flink" / "bin" / "python"
)
"""The Python with apache-flink the oracle tests run PyFlink with, if it exists."""


def pytest_configure(config: pytest.Config) -> None:
    """Every Spark driver and PyFlink gateway the suite starts maps a class-data archive of
    their classes (``tests/class_archives.py``), made here on the first run on a machine."""
    use_class_archives(PYFLINK_PYTHON if Path(PYFLINK_PYTHON).is_file() else None)


@pytest.fixture(scope="session")
def spark() -> Any:
    """The embedded SparkSession (``local[2]``); tests that need it skip without Java. Spark's
    own aggregates and joins in it (the tests' references and floors over small inputs) run 4
    shuffle partitions, not 200: sparktide's exchanges set their partitions themselves."""
    from sparktide.spark.session import SparkUnavailableError, get_spark

    try:
        spark = get_spark("local[2]")
    except SparkUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    return spark


MEMORY_DISK = Path("/dev/shm")
"""A RAM-backed file system where the RocksDB databases of tests go when there is one: opening
a database writes and syncs a few files, which costs ~10x more on a disk than in RAM."""


@pytest.fixture(params=STATE_BACKENDS)
def state_backend(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """Runs a test once per state backend: environments, and operators set up without one (the
    test harness), use the backend ``SPARKTIDE_STATE_BACKEND`` names, in this process and in the
    processes it starts. RocksDB's temporary directories go to :data:`MEMORY_DISK` if there is
    one (test inputs are small)."""
    name: str = request.param
    monkeypatch.setenv("SPARKTIDE_STATE_BACKEND", name)
    scratch = None
    if name == "rocksdb" and MEMORY_DISK.is_dir() and os.access(MEMORY_DISK, os.W_OK):
        tmp_path_factory.getbasetemp()  # pytest's tmp_path stays where it is
        scratch = tempfile.mkdtemp(prefix="sparktide-tests-", dir=MEMORY_DISK)
        monkeypatch.setenv("TMPDIR", scratch)
        monkeypatch.setattr(tempfile, "tempdir", scratch)
    yield name
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def csv_stream(spark: Any, folder: Any, schema: str, text: str) -> Any:
    """A streaming DataFrame reading ``folder`` (made here), which holds one CSV file with a
    header line: ``text``."""
    folder.mkdir()
    (folder / "a.csv").write_text(text)
    return spark.readStream.schema(schema).option("header", True).csv(str(folder))


def wait_for(condition: Callable[[], Any], seconds: float) -> bool:
    """Poll ``condition`` every 0.1 s until it holds or ``seconds`` passed; its last value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


@pytest.fixture(params=BACKENDS)
def make_backend(request: Any, tmp_path: Any) -> Any:
    """A factory of keyed state backends, once per backend kind ("heap", "rocksdb"):
    ``make_backend(key_group_range=None, maxp=128, now=0)``; RocksDB ones are disposed after
    the test (see ``tests/state_backends.py``)."""
    factory = BackendFactory(request.param, tmp_path)
    yield factory
    factory.close()
