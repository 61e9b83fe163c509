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
sparktide.spark.checkpoint_format.CheckpointError: ... does not have: 'a' (no uid) of stage 0; ...
"""

from __future__ import annotations

from typing import Any

from sparktide.spark.checkpoint_format import CheckpointError

__all__ = ["check_restorable", "describe_difference", "stage_mapping"]


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


def _op(op: Any) -> str:
    name, uid = [*list(op), None, None][:2]
    return f"{name!r}" + (f" (uid {uid!r})" if uid is not None else "")


def describe_difference(stored: Any, here: Any, limit: int = 5) -> str:
    """What differs between the job-graph fingerprint of a checkpoint and this job's.

    >>> a = {"sources": [["flights", None, 3]], "stages": [
    ...     {"operators": [["map", None], ["window", "w"]], "max_parallelism": 128}]}
    >>> b = {"sources": [["flights", None, 4]], "stages": [
    ...     {"operators": [["map", None], ["reduce", None]], "max_parallelism": 256}]}
    >>> for line in describe_difference(a, b).split("; "): print(line)
    source 'flights' had 3 splits, now 4
    stage 0 operator 1 is 'window' (uid 'w') in the checkpoint but 'reduce' here
    stage 0 max_parallelism 128 in the checkpoint vs 256 here
    """
    if not isinstance(stored, dict) or not isinstance(here, dict):
        return f"the checkpoint has no usable job fingerprint ({stored!r})"
    out: list[str] = []
    old_src, new_src = stored.get("sources", []), here.get("sources", [])
    if len(old_src) != len(new_src):
        out.append(f"the checkpoint has {len(old_src)} source(s), this job {len(new_src)}")
    for i, (a, b) in enumerate(zip(old_src, new_src, strict=False)):
        if list(a[:2]) != list(b[:2]):
            out.append(f"source {i} is {_op(a)} in the checkpoint but {_op(b)} here")
        elif a[2:] != b[2:]:
            out.append(f"source {a[0]!r} had {a[2]} splits, now {b[2]}")
    old_st, new_st = stored.get("stages", []), here.get("stages", [])
    if len(old_st) != len(new_st):
        out.append(f"the checkpoint has {len(old_st)} stage(s), this job {len(new_st)}")
    for s, (a, b) in enumerate(zip(old_st, new_st, strict=False)):
        ops_a, ops_b = a.get("operators", []), b.get("operators", [])
        for o, (x, y) in enumerate(zip(ops_a, ops_b, strict=False)):
            if list(x) != list(y):
                out.append(
                    f"stage {s} operator {o} is {_op(x)} in the checkpoint but {_op(y)} here"
                )
        if len(ops_a) != len(ops_b):
            extra = ops_a[len(ops_b) :] or ops_b[len(ops_a) :]
            where = "the checkpoint" if len(ops_a) > len(ops_b) else "this job"
            out.append(
                f"stage {s} has {len(ops_a)} operator(s) in the checkpoint, {len(ops_b)} here "
                f"(only in {where}: {', '.join(_op(x) for x in extra)})"
            )
        for field in ("max_parallelism", "keyed"):
            if a.get(field) != b.get(field):
                out.append(
                    f"stage {s} {field} {a.get(field)} in the checkpoint vs {b.get(field)} here"
                )
    if not out:
        return f"stored fingerprint {stored}, this job {here}"
    more = f"; and {len(out) - limit} more difference(s)" if len(out) > limit else ""
    return "; ".join(out[:limit]) + more
