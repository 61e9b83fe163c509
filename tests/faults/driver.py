"""Run one attempt of a fault-suite job in its own process (and its own Spark session), with
the driver's kill points in place (see ``kill.py``).

    driver.py JOB BACKEND INPUT CHECKPOINT OUTPUT PARALLELISM RESULT

Writes ``{"error": ...}`` or ``{"error": null}`` to ``RESULT`` (a JSON file) and exits 0; a
kill point ends it with ``SIGKILL`` first.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

FAULTS = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str]) -> int:
    from faults.jobs import JOBS, run_stream
    from faults.kill import DRIVER_VAR, install

    job, backend, inp, ckpt, out, parallelism, result = argv
    os.environ[DRIVER_VAR] = str(os.getpid())
    install("driver")
    from sparktide.spark.session import get_spark

    error = None
    try:
        run_stream(get_spark("local[2]"), JOBS[job], backend, inp, ckpt, out, int(parallelism))
    except Exception as exc:  # the attempt's outcome, for the harness to judge
        error = {"type": type(exc).__name__, "message": str(exc)}
        traceback.print_exc()
    with open(result, "w") as f:
        json.dump({"error": error}, f)
    return 0


if __name__ == "__main__":
    # ``faults`` importable here and (through the session's PYTHONPATH) in Spark's Python
    # workers, whose start-up loads workers/sitecustomize.py
    sys.path[:0] = [os.path.dirname(FAULTS), os.path.join(FAULTS, "workers")]
    sys.exit(main(sys.argv[1:]))
