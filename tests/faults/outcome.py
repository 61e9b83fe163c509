"""What a scenario shows: rows lost, duplicated or wrong against the reference, or the
refusal that stopped it."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from faults.jobs import Record

_ERROR_LINE = re.compile(r"^(?:: )?((?:[A-Za-z_][\w.$]*)?(?:Error|Exception|Fault)): (.+)$", re.M)
_WRAPPERS = ("py4j.", "pyspark.", "org.apache.", "java.", "scala.")
_GENERIC = frozenset(
    {
        "StreamingQueryException",
        "ForeachBatchUserFuncException",
        "Py4JException",
        "Py4JJavaError",
        "PythonException",
        "SparkException",
        "CapturedException",
    }
)
"""The wrappers Spark and py4j put around an error (never the error itself)."""
RAW_ERRORS = frozenset(
    {
        "OSError",
        "PermissionError",
        "FileNotFoundError",
        "NotADirectoryError",
        "IsADirectoryError",
        "FileExistsError",
        "IOException",
        "TypeError",
        "KeyError",
        "AttributeError",
        "IndexError",
        "AssertionError",
        "Py4JJavaError",
    }
)
"""Errors that come from below sparktide unexplained: a refusal of one of these types is not
clear, whatever its message holds."""


_ADVICE = re.compile(
    r"\b(restore|use|start|delete|remove|set|pass|free|make|give|stop|run|retry|point|"
    r"create|check|fix|choose|change)\b",
    re.I,
)
"""Words of an instruction: a clear refusal says what to do, not only what is wrong."""


def error_line(text: str) -> str:
    """The first line of the innermost error in ``text`` (a Python or a Spark error's text,
    which quotes the Python worker's traceback): ``Type: message``, without the wrappers of
    py4j, PySpark and the JVM.

    >>> error_line("StreamingQueryException: batch 1 failed\\n"
    ...            "pyspark.errors.PythonException: An exception was thrown:\\n"
    ...            "sparktide.spark.checkpoint_format.CheckpointError: /c/x.bin: corrupt")
    'CheckpointError: /c/x.bin: corrupt'
    >>> error_line("Py4JJavaError: An error occurred while calling o1.save.\\n"
    ...            ": org.apache.hadoop.fs.ParentNotDirectoryException: Parent path: /f")
    'ParentNotDirectoryException: Parent path: /f'
    """
    errors = _ERROR_LINE.findall(text)
    below = [(t, m) for t, m in errors if t.rsplit(".", 1)[-1] not in _GENERIC]
    python = [(t, m) for t, m in below if not t.startswith(_WRAPPERS)]
    if python or below:
        kind, message = python[-1] if python else below[0]
        return f"{kind.rsplit('.', 1)[-1]}: {message.strip()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


@dataclass(frozen=True)
class Outcome:
    """The result of one scenario on one backend.

    ``refused``: the first line of the error the last attempt stopped with (``None``: it ran
    to the end). A refusal is correct when the scenario expects one (``culprit``: what it
    must name) and the error names it, says what to do, and is not a raw error from below
    sparktide (an ``OSError``, a Java exception); a finished run is correct when no row is lost,
    duplicated or wrong. ``note``: what else the scenario saw (a kill that did not happen,
    damage that reached the checkpoint; ``failed_check``: what makes the scenario fail
    whatever the rows). ``skipped``: why the scenario could not run here."""

    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    refused: str | None = None
    culprit: str | None = None
    note: str = ""
    failed_check: bool = False
    skipped: str | None = None

    @property
    def clear_refusal(self) -> bool:
        if self.refused is None or self.culprit is None:
            return False
        kind = self.refused.split(":", 1)[0]
        raw = kind in RAW_ERRORS or kind.endswith("Exception")  # Java's, through py4j
        advice = _ADVICE.search(self.refused.split(":", 1)[-1]) is not None
        return not raw and advice and self.culprit in self.refused

    @property
    def correct(self) -> bool:
        if self.skipped is not None:
            return True
        if self.failed_check:
            return False
        if self.refused is not None:
            return self.clear_refusal
        return self.lost == self.duplicated == self.wrong == 0

    def cell(self) -> str:
        """The scenario's cell in the table."""
        if self.skipped is not None:
            return f"skipped: {self.skipped}"
        if self.refused is not None:
            head = "refused" if self.clear_refusal else "REFUSED (unclear or unexpected)"
            text = f"{head}: {self.refused}"
        else:
            text = f"lost {self.lost} dup {self.duplicated} wrong {self.wrong}"
        mark = "ok" if self.correct else "FAIL"
        return f"{mark} | {text}" + (f" [{self.note}]" if self.note else "")


def compare(
    actual: Iterable[Record],
    expected: Iterable[Record],
    refused: str | None = None,
    culprit: str | None = None,
    note: str = "",
    failed_check: bool = False,
) -> Outcome:
    """Count the rows of ``actual`` lost, duplicated or wrong against ``expected``. Rows are
    matched by ``(kind, key, ts)``; under one such identity, a missing value and an extra one
    make one wrong row, a missing one alone a lost row, an extra one alone a duplicate.

    >>> got = [("p", "k", 1, 5), ("p", "k", 2, 7), ("p", "k", 2, 7)]
    >>> want = [("p", "k", 1, 6), ("p", "k", 2, 7), ("p", "k", 3, 1)]
    >>> o = compare(got, want)
    >>> o.lost, o.duplicated, o.wrong, o.correct
    (1, 1, 1, False)
    >>> compare(want, want).correct
    True
    >>> Outcome(refused="CheckpointError: /c/x.bin: corrupt; restore it", culprit="x.bin").correct
    True
    >>> Outcome(refused="CheckpointError: /c/x.bin: corrupt", culprit="x.bin").correct
    False
    >>> Outcome(refused="OSError: [Errno 28] No space left: /c/x.bin", culprit="x.bin").correct
    False
    """
    want: defaultdict[tuple, Counter] = defaultdict(Counter)
    got: defaultdict[tuple, Counter] = defaultdict(Counter)
    for rows, into in ((expected, want), (actual, got)):
        for kind, key, ts, v in rows:
            into[(kind, key, ts)][v] += 1
    lost = duplicated = wrong = 0
    for identity in want.keys() | got.keys():
        missing = sum((want[identity] - got[identity]).values())
        extra = sum((got[identity] - want[identity]).values())
        both = min(missing, extra)
        wrong += both
        lost += missing - both
        duplicated += extra - both
    return Outcome(lost, duplicated, wrong, refused, culprit, note, failed_check)


def table(rows: Sequence[tuple[str, str, Outcome | str]], backends: Sequence[str]) -> str:
    """The scenarios x backends table (markdown): one line per scenario, one column per
    backend (a cell is an :class:`Outcome`'s cell, or why the scenario did not run there)."""
    cells: dict[str, dict[str, str]] = {}
    for scenario, backend, outcome in rows:
        text = outcome.cell() if isinstance(outcome, Outcome) else outcome
        cells.setdefault(scenario, {})[backend] = text
    lines = ["| scenario | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for scenario, by_backend in cells.items():
        values = [by_backend.get(b, "-").replace("|", "/") for b in backends]
        lines.append(f"| {scenario} | " + " | ".join(values) + " |")
    return "\n".join(lines)
