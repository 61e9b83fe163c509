"""Run several example scripts in ONE Python process and record what each printed.

Used by ``tests/test_pyflink_parity.py`` to run every port of PyFlink's examples, and PyFlink's
originals, with one JVM instead of one per example. Each script runs as ``__main__`` (as ``python
script.py`` would run it) in a scratch working directory of its own, with ``sys.argv`` set to the
script alone, the root logger's handlers removed first (so the script's own ``logging.basicConfig``
takes effect, writing to the script's captured stdout as it would in a process of its own), and
``sys.stdout`` captured. The environment (``SPARKTIDE_RUNTIME`` ...) is the process's. With
``--capture fd`` the process's file descriptor 1 itself points at a file from the start, and a
script's stdout is what that file grew by while it ran: what a JVM the scripts start prints
(PyFlink's print sinks) is captured too, so PyFlink's own examples can run in one process, with one
gateway. After the last script, the root logger writes INFO records to the process's own stdout, as
each script's own configuration would until its exit: whatever is logged when the interpreter exits
(py4j closes its gateway connections then) shows up in that stdout, which should stay empty.

Usage::

    python tools/pyflink_oracle/run_ports.py --out result.json script.py [script.py ...]

writes ``{"script.py": {"stdout": "...", "error": null or "traceback"}, ...}`` to ``result.json``;
``--capture fd`` captures at the file descriptor.
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
from collections.abc import Callable, Iterator
from pathlib import Path

Capture = Callable[[], contextlib.AbstractContextManager[Callable[[], str]]]
"""Entered around one script: gives what the script printed once it has run."""


@contextlib.contextmanager
def python_stdout() -> Iterator[Callable[[], str]]:
    """What the script wrote to ``sys.stdout``."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        yield captured.getvalue


class DescriptorStdout:
    """File descriptor 1 pointed at a scratch file (gone from the file system at once) for the
    rest of the process, so that a JVM started afterwards inherits it; a script's stdout is what
    the file grew by while it ran."""

    def __init__(self) -> None:
        sys.stdout.flush()
        fd, path = tempfile.mkstemp(prefix="sparktide-stdout-")
        self.reader = os.open(path, os.O_RDONLY)
        os.unlink(path)
        os.dup2(fd, 1)
        os.close(fd)

    @contextlib.contextmanager
    def __call__(self) -> Iterator[Callable[[], str]]:
        sys.stdout.flush()
        start = os.fstat(1).st_size
        text: list[str] = []
        try:
            yield lambda: "".join(text)
        finally:
            sys.stdout.flush()
            grown = os.pread(self.reader, os.fstat(1).st_size - start, start)
            text.append(grown.decode("utf-8", errors="replace"))


def _reset_root_logger() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.WARNING)


def run_script(script: Path, cwd: Path, capture: Capture = python_stdout) -> dict[str, str | None]:
    """Runs ``script`` as ``__main__`` in the new directory ``cwd``; its stdout and error if
    any. ``cwd`` stays: a JVM a script starts keeps it as its working directory."""
    error = None
    previous_cwd, previous_argv = os.getcwd(), sys.argv
    _reset_root_logger()
    cwd.mkdir()
    os.chdir(cwd)
    sys.argv = [str(script)]
    with capture() as stdout:
        try:
            runpy.run_path(str(script), run_name="__main__")
        except BaseException:  # reported per script: the others still run
            error = traceback.format_exc()
        finally:
            sys.argv = previous_argv
            os.chdir(previous_cwd)
            _reset_root_logger()
    return {"stdout": stdout(), "error": error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    parser.add_argument(
        "--capture", choices=("python", "fd"), default="python", help="see the module docstring"
    )
    parser.add_argument("scripts", nargs="+", help="the scripts to run, in this order")
    args = parser.parse_args(argv)
    capture: Capture = DescriptorStdout() if args.capture == "fd" else python_stdout
    with tempfile.TemporaryDirectory(prefix="sparktide-ports-") as scratch:
        results = {
            script: run_script(Path(script).resolve(), Path(scratch, str(i)), capture)
            for i, script in enumerate(args.scripts)
        }
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    Path(args.out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
