"""What a user function that raised was doing: the operator, the key, the record, the batch.

A runner catches what a task raised and calls :func:`describe_failure` with the objects it built
(operators and split readers, by identity, with the names the user gave them). The traceback
tells which of them was running: the innermost frame whose ``self`` is one of them; its locals
hold the record (or the timer) it was processing. :func:`add_context` attaches that as a note
(PEP 678; on Python 3.10, where tracebacks do not print notes, as the ``__cause__``), and
:func:`user_traceback` keeps only the frames of the user's own code, so the error reads as the
user's exception raised by the user's function.

>>> try:
...     raise ValueError("bad value 3")
... except ValueError as exc:
...     context = FailureContext("Map", key="'a'", record="3", subtask=0)
...     add_context(exc, context)
...     notes(exc)
["sparktide: raised by operator 'Map' (subtask 0) for key 'a', record 3"]
"""

from __future__ import annotations

import contextlib
import inspect
import os
import reprlib
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType

from sparktide.runtime.elements import StreamRecord

__all__ = [
    "FailureContext",
    "KeyByStep",
    "UserFunctionFailure",
    "add_context",
    "describe_failure",
    "format_user_frames",
    "is_described",
    "is_internal_file",
    "notes",
    "truncated_repr",
    "user_traceback",
]

_REPR = reprlib.Repr()
_REPR.maxstring = 120
_REPR.maxother = 120
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 8
_MAX_REPR = 200

#: the directories whose frames are the engine's, not the user's
_INTERNAL_DIRS = tuple(
    os.path.dirname(os.path.abspath(p)) + os.sep
    for p in (
        os.path.dirname(os.path.abspath(__file__)),  # sparktide/runtime → sparktide/
    )
)
_INTERNAL_PACKAGES = ("pyspark", "py4j")


def truncated_repr(value: object) -> str:
    """``repr(value)``, shortened to about 200 characters (long strings and containers are
    elided with ``...``).

    >>> truncated_repr(list(range(100)))
    '[0, 1, 2, 3, 4, 5, 6, 7, ...]'
    """
    try:
        text = _REPR.repr(value)
    except Exception as exc:  # a broken __repr__ must not hide the user's error
        return f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


def is_internal_file(filename: str) -> bool:
    """True for a frame of sparktide itself, PySpark or py4j (not the user's code)."""
    path = os.path.abspath(filename)
    if path.startswith(_INTERNAL_DIRS):
        return True
    parts = path.split(os.sep)
    return any(p in _INTERNAL_PACKAGES for p in parts)


_NOTE_START = "sparktide: raised by operator"
"""How every :meth:`FailureContext.note` starts: an exception with such a note is described."""


@dataclass(frozen=True)
class KeyByStep:
    """What a runner names a keyed exchange for failures: the ``key_by`` into ``operator`` (the
    keys are computed where the records are sent, before the operator that reads them)."""

    operator: str


@dataclass(frozen=True)
class FailureContext:
    """Where a task failed: the operator (as the user named it), its subtask, the current key
    and record (as truncated reprs), the timer that was firing and the micro-batch;
    ``key_by``: in the ``key_by`` into the operator (its key selector or the null key check).

    >>> FailureContext("Window", record="('a', None)", key_by=True).note()
    "sparktide: raised by operator 'Window' (in its key_by) for record ('a', None)"
    """

    operator: str
    subtask: int | None = None
    key: str | None = None
    record: str | None = None
    timer: int | None = None
    batch: int | None = None
    key_by: bool = False

    def note(self) -> str:
        """One line for the user: ``sparktide: raised by operator 'x' ... record ...``."""
        parts = [f"{_NOTE_START} {self.operator!r}"]
        if self.key_by:
            parts.append(" (in its key_by)")
        if self.subtask is not None:
            parts.append(f" (subtask {self.subtask})")
        if self.batch is not None:
            parts.append(f" in micro-batch {self.batch}")
        if self.key is not None:
            parts.append(f" for key {self.key}")
        if self.record is not None:
            parts.append(("," if self.key is not None else " for") + f" record {self.record}")
        elif self.timer is not None:
            parts.append(("," if self.key is not None else " for") + f" timer at {self.timer}")
        return "".join(parts)


class UserFunctionFailure(Exception):
    """On Python 3.10 (no exception notes): carries the :class:`FailureContext` note as the
    ``__cause__`` of the user's exception, so the printed traceback shows it."""


def notes(exc: BaseException) -> list[str]:
    """The notes attached to ``exc`` (``__notes__``; empty if none)."""
    return list(getattr(exc, "__notes__", ()) or ())


def _add_note(exc: BaseException, text: str, printed: bool | None = None) -> None:
    """Add ``text`` as a note; where tracebacks do not print notes (``printed`` False, Python
    3.10 by default) also make it the ``__cause__`` (unless the exception has one)."""
    if printed is None:
        printed = python_supports_notes()
    if printed:
        exc.add_note(text)
        return
    existing = getattr(exc, "__notes__", None)  # Python 3.10: same attribute, not printed
    with contextlib.suppress(AttributeError):  # exceptions with __slots__
        exc.__notes__ = [*(existing or ()), text]
    if exc.__cause__ is None:
        exc.__cause__ = UserFunctionFailure(text)


def add_context(exc: BaseException, context: FailureContext, extra: str | None = None) -> None:
    """Attach ``context`` (and ``extra`` lines, e.g. a worker's traceback) to ``exc`` as one
    note; a second call on the same exception adds nothing (it is described once)."""
    if is_described(exc):
        return
    text = context.note() if extra is None else f"{context.note()}\n{extra}"
    _add_note(exc, text)


def is_described(exc: BaseException) -> bool:
    """True once :func:`add_context` described ``exc`` (it carries a context note; notes travel
    with the exception when it is pickled, from a Spark worker to the driver)."""
    return any(type(note) is str and note.startswith(_NOTE_START) for note in notes(exc))


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """A traceback of the user's frames only (those not in sparktide, PySpark or py4j), in
    order; if there are none (the engine itself raised, e.g. a validation error), the
    innermost frame, which says what was wrong."""
    frames = _frames(tb)
    keep = [f for f in frames if not is_internal_file(f.tb_frame.f_code.co_filename)]
    if not keep and frames:
        keep = frames[-1:]
    out: TracebackType | None = None
    for f in reversed(keep):
        out = TracebackType(out, f.tb_frame, f.tb_lasti, f.tb_lineno)
    return out


def format_user_frames(exc: BaseException) -> str:
    """The user's frames of ``exc``'s traceback, formatted as Python prints them (without the
    ``Traceback`` header and the exception line)."""
    tb = user_traceback(exc.__traceback__)
    return "".join(traceback.format_tb(tb)) if tb is not None else ""


def describe_failure(
    exc: BaseException,
    names: Mapping[int, str | KeyByStep],
    key_of: Callable[[], object] | None = None,
    subtask: int | None = None,
    batch: int | None = None,
) -> FailureContext | None:
    """Which of the runner's objects raised ``exc`` and what it was processing.

    ``names`` maps ``id(obj)`` of each operator and split reader the runner built to the name
    the user gave it (a keyed exchange: the :class:`KeyByStep` into its operator); the
    innermost frame of the traceback whose ``self`` is one of them is the one that called the
    user's code. ``key_of()`` gives the current key (``None``: no key).
    ``None`` if no such frame exists (the failure is not in a task's processing).
    """
    found_tb = None
    for tb in _frames(exc.__traceback__):
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and id(owner) in names:
            found_tb = tb
    if found_tb is None:
        return None
    found = found_tb.tb_frame
    owner = found.f_locals["self"]
    inner = found_tb.tb_next
    reading = inner is not None and bool(inner.tb_frame.f_code.co_flags & inspect.CO_GENERATOR)
    record = None
    timer = None
    local = found.f_locals
    if isinstance(local.get("record"), StreamRecord):
        record = truncated_repr(local["record"].value)
    elif "value" in local and found.f_code.co_name.startswith("read") and not reading:
        # (reading: the source's iterator raised; ``value`` is the record before)
        record = truncated_repr(local["value"])
    elif found.f_code.co_name in ("on_event_time", "on_processing_time"):
        t = local.get("timestamp")
        timer = t if type(t) is int else None
    name = names[id(owner)]
    key_by = isinstance(name, KeyByStep)
    key = None
    if key_of is not None and not key_by:  # (a key_by's current key is the sender's)
        try:
            current = key_of()
        except Exception:  # pragma: no cover - no key context
            current = None
        if current is not None:
            key = truncated_repr(current)
    if subtask is None:
        setup = getattr(owner, "setup_info", None)
        if setup is not None and setup.parallelism > 1:
            subtask = setup.subtask_index
    operator = name.operator if isinstance(name, KeyByStep) else name
    return FailureContext(operator, subtask, key, record, timer, batch, key_by)


def python_supports_notes() -> bool:
    """True where tracebacks print exception notes (Python 3.11+)."""
    return sys.version_info >= (3, 11)
