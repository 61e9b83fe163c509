"""Fixtures shared by the test files."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from state_backends import BACKENDS, BackendFactory


@pytest.fixture(scope="session")
def spark() -> Any:
    """The embedded SparkSession (``local[2]``); tests that need it skip without Java."""
    from sparktide.spark.session import SparkUnavailableError, get_spark

    try:
        return get_spark("local[2]")
    except SparkUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))


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
