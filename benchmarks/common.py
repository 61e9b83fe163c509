"""What the benchmark scripts share: finding PyFlink, the versions line of a Spark run, and the
records/s and ratio cells of a result row. The scripts import it as ``common`` (Python puts the
script's directory on ``sys.path``).
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def pyflink_python() -> str | None:
    """A Python that can import pyflink: ``SPARKTIDE_PYFLINK_PYTHON``, else ``.venv-flink``."""
    candidates = [os.environ.get("SPARKTIDE_PYFLINK_PYTHON")]
    candidates.append(str(Path(__file__).resolve().parents[1] / ".venv-flink" / "bin" / "python"))
    for c in candidates:
        if c and Path(c).exists():
            ok = subprocess.run([c, "-c", "import pyflink"], capture_output=True).returncode == 0
            if ok:
                return c
    return None


def spark_versions(spark: Any) -> str:
    """Python, PySpark, Java and sparktide versions of a run on ``spark``."""
    import pyspark

    import sparktide

    java = spark.sparkContext._jvm.System.getProperty("java.version")
    return (
        f"Python {platform.python_version()}, PySpark {pyspark.__version__}, Java {java}, "
        f"sparktide {sparktide.__version__}"
    )


def result_cells(
    records: int, seconds: float | str, native_rate: float | None
) -> tuple[str, str, str, str]:
    """``(records, seconds, records/s, ratio to native)`` cells; ``seconds`` as a string is a
    failed run (its cells say so)."""
    if isinstance(seconds, str):
        return f"{records:,}", "failed", "-", "-"
    rate = records / seconds
    ratio = f"{rate / native_rate:.3g}x" if native_rate else "-"
    return f"{records:,}", f"{seconds:.2f}", f"{rate:,.0f}", ratio
