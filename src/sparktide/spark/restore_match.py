"""Which state of a checkpoint each stage of a job restores, matched by operator identity.

The job fingerprint a manifest records (:func:`sparktide.spark.streaming.fingerprint`) lists the
sources and, per exchange stage, its operators as ``[name, uid, identity]`` (identities: see
:mod:`sparktide.runtime.operator_identity`), its ``max_parallelism`` and whether it is keyed.
A stage of the job restores the stage of the checkpoint whose entry operator (the one that owns
the keyed state, timers and input valves) has the same identity, whatever the stages' indices;
each operator's watermark is restored by its identity.

A checkpointed operator without a match in the job (removed, or renamed / moved without a
``uid``) is an error naming it, unless the run allows non-restored state (Flink's
``allowNonRestoredState``): then its state is dropped. Operators new in the job start empty.

>>> old = {"sources": [["s", None, 1]], "stages": [
...     {"operators": [["a", None, "x"]], "max_parallelism": 128, "keyed": True},
...     {"operators": [["b", "B", "uid:B"]], "max_parallelism": 128, "keyed": True}]}
>>> new = {"sources": [["s", None, 1]], "stages": [old["stages"][1], old["stages"][0]]}
>>> stage_mapping(old, new)
{0: 1, 1: 0}
>>> check_restorable(old, {**new, "stages": new["stages"][:1]}, False, "ckpt")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint.CheckpointError: ... does not have: 'a' (no uid) of stage 0; ...
"""

from __future__ import annotations

from typing import Any

from sparktide.spark.checkpoint import CheckpointError, describe_difference

__all__ = ["check_restorable", "stage_mapping"]


def _identity(op: list[Any]) -> str | None:
    return op[2] if len(op) > 2 else None


def _entries(fp: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for index, stage in enumerate(fp.get("stages", [])):
        ops = stage.get("operators") or []
        if ops and _identity(ops[0]) is not None:
            out[_identity(ops[0])] = index  # type: ignore[index]
    return out


def stage_mapping(stored: dict[str, Any], here: dict[str, Any]) -> dict[int, int]:
    """``{stage of this job: stage of the checkpoint it restores}`` (stages without a match
    are left out: they start empty)."""
    old = _entries(stored)
    return {index: old[ident] for ident, index in _entries(here).items() if ident in old}


def _describe(op: list[Any], stage: int) -> str:
    uid = f"uid {op[1]!r}" if op[1] is not None else "no uid"
    return f"{op[0]!r} ({uid}) of stage {stage}"


def check_restorable(
    stored: Any, here: dict[str, Any], allow_non_restored_state: bool, location: str
) -> None:
    """Raise :class:`CheckpointError` if the checkpoint with job fingerprint ``stored`` cannot
    be restored by the job ``here``: other sources, a matched stage with another
    ``max_parallelism`` or keying, or (unless ``allow_non_restored_state``) a checkpointed
    operator without a match."""
    if not isinstance(stored, dict):
        raise CheckpointError(
            f"the checkpoint at {location!r} has no usable job fingerprint ({stored!r}); use a "
            "new checkpoint directory"
        )
    problems: list[str] = []
    if stored.get("sources") != here.get("sources"):
        only = {"sources": stored.get("sources", [])}
        problems.append(describe_difference(only, {"sources": here.get("sources", [])}))
    mapping = {old: new for new, old in stage_mapping(stored, here).items()}
    unmatched: list[str] = []
    for t, stage in enumerate(stored.get("stages", [])):
        ops = stage.get("operators") or []
        s = mapping.get(t)
        if s is None:
            unmatched.extend(_describe(op, t) for op in ops)
            continue
        mine = here["stages"][s]
        for field in ("max_parallelism", "keyed"):
            if stage.get(field) != mine.get(field):
                problems.append(
                    f"operator {ops[0][0]!r} has {field} {stage.get(field)} in the checkpoint "
                    f"vs {mine.get(field)} here"
                )
        present = {_identity(op) for op in mine.get("operators", [])}
        unmatched.extend(_describe(op, t) for op in ops if _identity(op) not in present)
    if problems:
        raise CheckpointError(
            f"the checkpoint at {location!r} was written by another job graph: "
            f"{'; '.join(problems)}; use a new checkpoint directory for a changed job (or run "
            "the job that wrote it)"
        )
    if unmatched and not allow_non_restored_state:
        raise CheckpointError(
            f"the checkpoint at {location!r} holds state of operator(s) this job does not "
            f"have: {', '.join(unmatched)}; an operator without uid(...) is matched by its "
            "place in the job graph (kind, name, inputs, position among siblings), so a "
            "changed job may not match it: give stateful operators a stable .uid(...) (the "
            "same in every run), or pass allow_non_restored_state=True to execute(...) / "
            "execute_async(...) to drop the state of the operators that have no match"
        )
