"""Which state of a checkpoint each stage of a job restores, matched by operator identity.

The job fingerprint a manifest records (:class:`~sparktide.spark.checkpoint_meta.JobFingerprint`,
built by :func:`sparktide.spark.streaming.fingerprint`) lists the sources and, per exchange
stage, its operators (name, uid, identity; identities: see
:mod:`sparktide.runtime.operator_identity`), its ``max_parallelism`` and whether it is keyed.
A stage of the job restores the stage of the checkpoint whose entry operator (the one that owns
the keyed state, timers and input valves) has the same identity, whatever the stages' indices;
each operator's watermark is restored by its identity.

A checkpointed operator without a match in the job (removed, or renamed / moved without a
``uid``) is an error naming it, unless the run allows non-restored state (Flink's
``allowNonRestoredState``): then its state is dropped. An operator is matched wherever it is in
the job (a sink that an added operator moved into another stage keeps its match); a stage's
keyed state goes with its entry operator. Operators new in the job start empty. An unkeyed
stage of sinks that the job runs where their input runs (a ``ForeachBatchSink``, which had a
stage of its own in checkpoints written before it ran where its records are made) holds
nothing to restore: it is not an unmatched operator.

>>> from sparktide.spark.checkpoint_meta import SourceRef, StageFingerprint
>>> def stage(name, uid, identity):
...     return StageFingerprint((OperatorRef(name, uid, identity),), 128, True)
>>> old = JobFingerprint(
...     (SourceRef("s", None, 1),), (stage("a", None, "x"), stage("b", "B", "uid:B")))
>>> new = JobFingerprint(old.sources, (old.stages[1], old.stages[0]))
>>> stage_mapping(old, new)
{0: 1, 1: 0}
>>> check_restorable(old, JobFingerprint(new.sources, new.stages[:1]), False, "ckpt")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.spark.checkpoint_format.CheckpointError: ... does not have: 'a' (no uid) of stage 0; ...
"""

from __future__ import annotations

from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.spark.checkpoint_meta import (
    JobFingerprint,
    OperatorRef,
    StageFingerprint,
)

__all__ = ["check_restorable", "describe_difference", "stage_mapping"]


def _entries(fp: JobFingerprint) -> dict[str, int]:
    out: dict[str, int] = {}
    for index, stage in enumerate(fp.stages):
        entry = stage.entry
        if entry is not None and entry.identity is not None:
            out[entry.identity] = index
    return out


def stage_mapping(stored: JobFingerprint, here: JobFingerprint) -> dict[int, int]:
    """``{stage of this job: stage of the checkpoint it restores}`` (stages without a match
    are left out: they start empty)."""
    old = _entries(stored)
    return {index: old[ident] for ident, index in _entries(here).items() if ident in old}


def _describe(op: OperatorRef, stage: int) -> str:
    uid = f"uid {op.uid!r}" if op.uid is not None else "no uid"
    return f"{op.name!r} ({uid}) of stage {stage}"


def check_restorable(
    stored: JobFingerprint | None,
    here: JobFingerprint,
    allow_non_restored_state: bool,
    location: str,
) -> None:
    """Raise :class:`CheckpointError` if the checkpoint with job fingerprint ``stored`` cannot
    be restored by the job ``here``: other sources (unless ``stored`` names none: a savepoint
    the State Processor API's writer built), a matched stage with another
    ``max_parallelism`` or keying, or (unless ``allow_non_restored_state``) a checkpointed
    operator without a match."""
    if stored is None:
        raise CheckpointError(
            f"the checkpoint at {location!r} has no usable job fingerprint (None); use a new "
            "checkpoint directory"
        )
    problems: list[str] = []
    if stored.sources and stored.sources != here.sources:  # none: a savepoint's writer built it
        only = JobFingerprint(stored.sources), JobFingerprint(here.sources)
        problems.append(describe_difference(*only))
    mapping = {old: new for new, old in stage_mapping(stored, here).items()}
    unmatched: list[str] = []
    # an operator with a match anywhere in the job is not dropped (e.g. a sink that an added
    # operator moved into another stage); a stage's keyed state goes with its entry
    present = {op.identity for mine in here.stages for op in mine.operators}
    for t, stage in enumerate(stored.stages):
        s = mapping.get(t)
        if s is None:
            if not _now_with_input(stage, here):
                entry = stage.entry
                unmatched.extend(
                    _describe(op, t)
                    for op in stage.operators
                    if op is entry or op.identity not in present
                )
            continue
        mine = here.stages[s]
        name = stage.operators[0].name
        if stage.max_parallelism != mine.max_parallelism:
            problems.append(
                f"operator {name!r} has max_parallelism {stage.max_parallelism} in the "
                f"checkpoint vs {mine.max_parallelism} here"
            )
        if stage.keyed != mine.keyed:
            problems.append(
                f"operator {name!r} has keyed {stage.keyed} in the checkpoint vs {mine.keyed} here"
            )
        unmatched.extend(_describe(op, t) for op in stage.operators if op.identity not in present)
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


def _now_with_input(stage: StageFingerprint, here: JobFingerprint) -> bool:
    """Whether ``stage`` of a checkpoint is an unkeyed stage of sinks that the job ``here``
    runs where their input runs (sinks with nothing to do per subtask, which had a stage of
    their own when it was written): such a stage kept no state but its input's watermarks,
    which the sinks, emitting nothing, do not need."""
    return not stage.keyed and all(op.identity in here.input_sinks for op in stage.operators)


def _op(name: str, uid: str | None) -> str:
    return f"{name!r}" + (f" (uid {uid!r})" if uid is not None else "")


def describe_difference(stored: JobFingerprint, here: JobFingerprint, limit: int = 5) -> str:
    """What differs between the job-graph fingerprint of a checkpoint and this job's.

    >>> from sparktide.spark.checkpoint_meta import SourceRef, StageFingerprint
    >>> def job(splits, last, maxp):
    ...     ops = (OperatorRef("map", None), last)
    ...     return JobFingerprint((SourceRef("flights", None, splits),),
    ...         (StageFingerprint(ops, maxp, True),))
    >>> a = job(3, OperatorRef("window", "w"), 128)
    >>> b = job(4, OperatorRef("reduce", None), 256)
    >>> for line in describe_difference(a, b).split("; "): print(line)
    source 'flights' had 3 splits, now 4
    stage 0 operator 1 is 'window' (uid 'w') in the checkpoint but 'reduce' here
    stage 0 max_parallelism 128 in the checkpoint vs 256 here
    """
    out: list[str] = []
    old_src, new_src = stored.sources, here.sources
    if len(old_src) != len(new_src):
        out.append(f"the checkpoint has {len(old_src)} source(s), this job {len(new_src)}")
    for i, (a, b) in enumerate(zip(old_src, new_src, strict=False)):
        if (a.name, a.uid) != (b.name, b.uid):
            out.append(
                f"source {i} is {_op(a.name, a.uid)} in the checkpoint but {_op(b.name, b.uid)} "
                "here"
            )
        elif a.splits != b.splits:
            out.append(f"source {a.name!r} had {a.splits} splits, now {b.splits}")
    old_st, new_st = stored.stages, here.stages
    if len(old_st) != len(new_st):
        out.append(f"the checkpoint has {len(old_st)} stage(s), this job {len(new_st)}")
    for s, (x, y) in enumerate(zip(old_st, new_st, strict=False)):
        ops_a, ops_b = x.operators, y.operators
        for o, (p, q) in enumerate(zip(ops_a, ops_b, strict=False)):
            if p != q:
                out.append(
                    f"stage {s} operator {o} is {p.describe()} in the checkpoint but "
                    f"{q.describe()} here"
                )
        if len(ops_a) != len(ops_b):
            extra = ops_a[len(ops_b) :] or ops_b[len(ops_a) :]
            where = "the checkpoint" if len(ops_a) > len(ops_b) else "this job"
            out.append(
                f"stage {s} has {len(ops_a)} operator(s) in the checkpoint, {len(ops_b)} here "
                f"(only in {where}: {', '.join(op.describe() for op in extra)})"
            )
        if x.max_parallelism != y.max_parallelism:
            out.append(
                f"stage {s} max_parallelism {x.max_parallelism} in the checkpoint vs "
                f"{y.max_parallelism} here"
            )
        if x.keyed != y.keyed:
            out.append(f"stage {s} keyed {x.keyed} in the checkpoint vs {y.keyed} here")
    if not out:
        return f"stored fingerprint {stored.to_json()}, this job {here.to_json()}"
    more = f"; and {len(out) - limit} more difference(s)" if len(out) > limit else ""
    return "; ".join(out[:limit]) + more
