"""What the benchmark scripts share: finding PyFlink, the versions line of a Spark run, the
records/s and ratio cells of a result row, and the timing of a contender's DataFrame. The
scripts import it as ``common`` (Python puts the script's directory on ``sys.path``).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable
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


def timed(build: Callable[[], Any], repeat: int) -> float | str:
    """Best wall time of ``repeat`` runs, or why the run failed (the table goes on)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            build().write.format("noop").mode("overwrite").save()
        except Exception as exc:  # a failed contender is a result too
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            cause = next((x for x in lines if "Error" in x or "Exception" in x), None)
            return f"{type(exc).__name__}: {(cause or (lines[0] if lines else ''))[:160]}"
        best = min(best, time.perf_counter() - start)
    return best
