"""Record what PyFlink's shipped DataStream examples print, as parity oracles for sparktide.

Runs each ORIGINAL example (from the installed ``apache-flink`` package) with a Python that has
PyFlink, at the parallelism the example ships with, and writes its normalized stdout to
``tests/data/pyflink/<example>.txt``: one printed line per line, sorted (only the multiset of
lines matters), with the ``"N> "`` subtask prefixes that PyFlink's ``print()`` adds at parallelism
above 1 removed, and without the log lines PyFlink's own libraries write to stdout when an example
sends INFO logging there.

Usage (stdlib only; any Python 3.10+ can run it)::

    python tools/pyflink_oracle/record.py                 # record every example once
    python tools/pyflink_oracle/record.py --runs 3        # run 3 times, report (non)determinism
    python tools/pyflink_oracle/record.py --check         # compare with the recorded files
    python tools/pyflink_oracle/record.py state_access    # only some examples

The PyFlink Python is ``--python``, else ``$SPARKTIDE_PYFLINK_PYTHON``, else
``.venv-flink/bin/python`` in the repository (``tools/install_pyflink.sh`` makes it). Its ``bin``
directory is put first on ``PATH`` because PyFlink starts its Python workers as ``python``
from ``PATH``.

``tests/test_pyflink_parity.py`` imports :func:`normalize`, :data:`EXAMPLES` and
:func:`run_in_one_process` from this file, so both sides of a comparison are normalized alike.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO / "tests" / "data" / "pyflink"
RUN_PORTS = Path(__file__).resolve().parent / "run_ports.py"
DEFAULT_PYTHON = str(Path(__file__).resolve().parents[2] / ".venv-flink" / "bin" / "python")
TIMEOUT_S = 600

# Example name -> path relative to pyflink/examples/datastream (and to examples/pyflink).
EXAMPLES: dict[str, str] = {
    "event_time_timer": "event_time_timer.py",
    "state_access": "state_access.py",
    "basic_operations": "basic_operations.py",
    "process_json_data": "process_json_data.py",
    "word_count": "word_count.py",
    "windowing/tumbling_time_window": "windowing/tumbling_time_window.py",
    "windowing/sliding_time_window": "windowing/sliding_time_window.py",
    "windowing/session_with_gap_window": "windowing/session_with_gap_window.py",
    "windowing/session_with_dynamic_gap_window": "windowing/session_with_dynamic_gap_window.py",
    "windowing/tumbling_count_window": "windowing/tumbling_count_window.py",
}

# Log records of PyFlink's and Apache Beam's own modules, which reach stdout when an example calls
# logging.basicConfig(stream=sys.stdout, level=logging.INFO). They are not program output.
LOG_NOISE = (
    re.compile(r"^Using Any for unsupported type: "),
    re.compile(r"^No module named google\.cloud\.bigquery_storage_v1\. "),
    re.compile(r"^PYFLINK_CYTHON_ENABLED: "),
    re.compile(r"^Failed to import GCSFileSystem; "),
)

SUBTASK_PREFIX = re.compile(r"^\d+> ")


def normalize(stdout: str) -> list[str]:
    """The printed lines of a run: log noise dropped, ``"N> "`` prefixes removed, sorted."""
    lines = []
    for line in stdout.splitlines():
        if not line.strip() or any(p.search(line) for p in LOG_NOISE):
            continue
        lines.append(SUBTASK_PREFIX.sub("", line, count=1))
    return sorted(lines)


def pyflink_python(explicit: str | None = None) -> str | None:
    """The Python to run PyFlink with, or None if there is none that can import pyflink."""
    candidates = [explicit, os.environ.get("SPARKTIDE_PYFLINK_PYTHON"), DEFAULT_PYTHON]
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        probe = subprocess.run(
            [candidate, "-c", "import pyflink.datastream"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    return None


def shipped_examples_dir(python: str) -> Path:
    """Where the installed PyFlink keeps ``examples/datastream``."""
    out = subprocess.run(
        [python, "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return Path(out.stdout.strip()) / "examples" / "datastream"


def _run_python(
    python: str, args: list[str], env: dict[str, str], cwd: str
) -> subprocess.CompletedProcess[str]:
    """``python args...`` in ``cwd``, ``python``'s ``bin`` first on ``PATH`` (PyFlink starts
    its Python workers as ``python``): the completed process, its output as text."""
    env = {**env, "PATH": str(Path(python).parent) + os.pathsep + env.get("PATH", "")}
    return subprocess.run(
        [python, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def run_example(python: str, script: Path, extra_env: dict[str, str] | None = None) -> str:
    """Runs ``script`` with ``python`` in a scratch directory and returns its stdout."""
    with tempfile.TemporaryDirectory(prefix="pyflink-oracle-") as cwd:
        done = _run_python(python, [str(script)], {**os.environ, **(extra_env or {})}, cwd)
    if done.returncode != 0:
        raise RuntimeError(
            f"{script} exited with {done.returncode}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-6000:]}"
        )
    return done.stdout


def run_in_one_process(
    python: str,
    scripts: list[Path],
    env: dict[str, str] | None = None,
    capture: str = "fd",
) -> dict[str, dict[str, str | None]]:
    """Runs ``scripts`` in one ``python`` process (``run_ports.py``, ``python``'s ``bin`` first on
    ``PATH``, in ``env`` or this process's environment): per script path, its stdout and error
    (None when it ran through). ``capture="fd"`` captures what a JVM prints too (PyFlink);
    with ``"python"`` the process's own stdout, where nothing may land, is checked empty."""
    with tempfile.TemporaryDirectory(prefix="sparktide-scripts-") as cwd:
        out = Path(cwd) / "runs.json"
        args = [str(RUN_PORTS), "--capture", capture, "--out", str(out), *map(str, scripts)]
        done = _run_python(python, args, dict(os.environ if env is None else env), cwd)
        if done.returncode != 0:
            raise RuntimeError(f"run_ports.py exited with {done.returncode}\n{done.stderr[-6000:]}")
        if capture == "python" and done.stdout:
            raise AssertionError(f"the scripts' process wrote to its own stdout: {done.stdout!r}")
        runs: dict[str, dict[str, str | None]] = json.loads(out.read_text(encoding="utf-8"))
    return runs


def recorded(name: str) -> list[str]:
    """The recorded lines of example ``name``."""
    return (DATA_DIR / f"{name}.txt").read_text(encoding="utf-8").splitlines()


def _diff(expected: list[str], actual: list[str]) -> str:
    want, got = collections.Counter(expected), collections.Counter(actual)
    missing = sorted((want - got).elements())
    extra = sorted((got - want).elements())
    return f"missing {missing[:20]}, unexpected {extra[:20]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", nargs="*", help=f"subset of {sorted(EXAMPLES)}")
    parser.add_argument("--python", help="a Python with apache-flink installed")
    parser.add_argument("--runs", type=int, default=1, help="runs per example (determinism)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)

    unknown = sorted(set(args.examples) - set(EXAMPLES))
    if unknown:
        parser.error(f"unknown examples {unknown}; choose from {sorted(EXAMPLES)}")
    python = pyflink_python(args.python)
    if python is None:
        parser.error(
            "no Python with apache-flink found; pass --python or set SPARKTIDE_PYFLINK_PYTHON"
        )
    source = shipped_examples_dir(python)
    failed = False
    for name in args.examples or list(EXAMPLES):
        runs = [normalize(run_example(python, source / EXAMPLES[name])) for _ in range(args.runs)]
        stable = all(r == runs[0] for r in runs)
        verdict = f"{len(runs[0])} lines, " + (
            f"identical in {args.runs} runs" if stable else "DIFFERS between runs"
        )
        if not stable:
            for i, other in enumerate(runs[1:], start=2):
                if other != runs[0]:
                    print(f"  run 1 vs run {i}: {_diff(runs[0], other)}")
        target = DATA_DIR / f"{name}.txt"
        if args.check:
            same = target.exists() and recorded(name) == runs[0]
            failed |= not same
            verdict += ", matches the recording" if same else ", DIFFERS from the recording"
            if not same and target.exists():
                print(f"  {_diff(recorded(name), runs[0])}")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(line + "\n" for line in runs[0]), encoding="utf-8")
            verdict += f", written to {target.relative_to(REPO)}"
        print(f"{name}: {verdict}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
