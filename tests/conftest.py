"""Fixtures shared by the test files."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Any:
    """The embedded SparkSession (``local[2]``); tests that need it skip without Java."""
    from sparktide.spark.session import SparkUnavailableError, get_spark

    try:
        return get_spark("local[2]")
    except SparkUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))
