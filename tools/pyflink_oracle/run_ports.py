"""Run several example scripts in ONE Python process and record what each printed.

Used by ``tests/test_pyflink_parity.py`` to run every port of PyFlink's examples on the Spark
runtime with one JVM instead of one per example. Each script runs as ``__main__`` (as
``python script.py`` would run it) in a scratch working directory of its own, with ``sys.argv``
set to the script alone, the root logger's handlers removed first (so the script's own
``logging.basicConfig`` takes effect, writing to the script's captured stdout as it would in a
process of its own), and ``sys.stdout`` captured. The environment (``SPARKTIDE_RUNTIME`` ...) is
the process's. After the last script, the root logger writes INFO records to the process's own
stdout, as each script's own configuration would until its exit: whatever is logged when the
interpreter exits (py4j closes its gateway connections then) shows up in that stdout, which
should stay empty.

Usage::

    python tools/pyflink_oracle/run_ports.py --out result.json script.py [script.py ...]

writes ``{"script.py": {"stdout": "...", "error": null or "traceback"}, ...}`` to ``result.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import runpy
import sys
import tempfile
import traceback
from pathlib import Path


def _reset_root_logger() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.WARNING)


def run_script(script: Path) -> dict[str, str | None]:
    """Runs ``script`` as ``__main__`` in a scratch directory; its stdout and error if any."""
    captured = io.StringIO()
    error = None
    previous_cwd, previous_argv = os.getcwd(), sys.argv
    _reset_root_logger()
    with tempfile.TemporaryDirectory(prefix="sparktide-port-") as cwd:
        os.chdir(cwd)
        sys.argv = [str(script)]
        try:
            with contextlib.redirect_stdout(captured):
                runpy.run_path(str(script), run_name="__main__")
        except BaseException:  # reported per script: the others still run
            error = traceback.format_exc()
        finally:
            sys.argv = previous_argv
            os.chdir(previous_cwd)
            _reset_root_logger()
    return {"stdout": captured.getvalue(), "error": error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    parser.add_argument("scripts", nargs="+", help="the scripts to run, in this order")
    args = parser.parse_args(argv)
    results = {script: run_script(Path(script).resolve()) for script in args.scripts}
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    Path(args.out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
