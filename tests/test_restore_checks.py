"""A heap backend checks a restored snapshot a key group and a state at a time (the key groups
of all the keys computed together, :func:`~sparktide.runtime.state.snapshot_checks
.checked_group`), and entry by entry only where that finds something wrong: both give the
same state, or the same error, on randomized snapshots with faults in them."""

from __future__ import annotations

import random
from typing import Any

import pytest

import sparktide.runtime.state.backend as backend_mod
from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group
from sparktide.runtime.state import HeapKeyedStateBackend

MAXP = 16
META = {
    "value": {"kind": "value", "ttl": False},
    "ttl": {"kind": "value", "ttl": True},
    "list": {"kind": "list", "ttl": False},
    "map": {"kind": "map", "ttl": False},
}
FAULTS = (
    "wrong key group",
    "None value",
    "entry twice",
    "empty and full",
    "unhashable key",
    "not a triple",
    "a list entry",
    "raw of another kind",
    "unsupported key",
)


def _raw(name: str, rng: random.Random) -> Any:
    if name == "value":
        return rng.choice([rng.randrange(100), "x", (1, 2), 2.5])
    if name == "ttl":
        return (rng.randrange(100), rng.randrange(1000))
    if name == "list":
        return [rng.randrange(9) for _ in range(rng.randrange(0, 3))]  # [] restores nothing
    return {rng.randrange(9): rng.randrange(9) for _ in range(rng.randrange(0, 3))}


def _snapshot(rng: random.Random, fault: str | None) -> dict[int, dict[str, list]]:
    keys: list[Any] = [f"k{i}" for i in range(40)] + list(range(20)) + [("t", 1), "é", "x" * 90]
    per_kg: dict[int, dict[str, list]] = {}
    for key in keys:
        kg = assign_to_key_group(key, MAXP)
        for name in META:
            if rng.random() < 0.7:
                entry = (key, rng.choice([None, "w"]), _raw(name, rng))
                per_kg.setdefault(kg, {}).setdefault(name, []).append(entry)
    if fault is not None:
        _break(per_kg, rng, fault)
    return per_kg


def _break(per_kg: dict[int, dict[str, list]], rng: random.Random, fault: str) -> None:
    """Put ``fault`` in one group of ``per_kg``."""
    kg = rng.choice(sorted(per_kg))
    # (any value fits a value state without TTL: "raw of another kind" takes another state)
    names = [n for n in sorted(per_kg[kg]) if n != "value" or fault != "raw of another kind"]
    name = rng.choice(names)
    entries = per_kg[kg][name]
    i = rng.randrange(len(entries))
    key, ns, raw = entries[i]
    if fault == "wrong key group":
        other = (kg + 1) % MAXP
        per_kg.setdefault(other, {}).setdefault(name, []).append(entries.pop(i))
    elif fault == "None value":
        entries[i] = (key, ns, None)
    elif fault == "entry twice":
        entries.insert(rng.randrange(len(entries) + 1), entries[i])
    elif fault == "empty and full":
        per_kg[kg]["list"] = [(key, ns, []), (key, ns, [1])]
    elif fault == "unhashable key":
        entries[i] = ([key], ns, raw)
    elif fault == "not a triple":
        entries[i] = (key, ns)
    elif fault == "a list entry":
        entries[i] = [key, ns, raw]
    elif fault == "raw of another kind":
        entries[i] = (key, ns, 5)
    else:
        entries[i] = (frozenset([key]), ns, raw)


def _outcome(per_kg: dict[int, dict[str, list]]) -> object:
    """The restored snapshot, or the error."""
    backend = HeapKeyedStateBackend(
        max_parallelism=MAXP, key_group_range=KeyGroupRange(0, MAXP - 1), time_provider=lambda: 0
    )
    try:
        backend.restore_state(META, per_kg)
    except ValueError as exc:
        return str(exc)
    return backend.snapshot_state()


@pytest.mark.parametrize("fault", [None, *FAULTS])
def test_the_checks_by_group_give_what_the_checks_by_entry_give(
    fault: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = []
    for seed in range(6):
        per_kg = _snapshot(random.Random(seed), fault)
        fast = _outcome(per_kg)
        with monkeypatch.context() as m:
            m.setattr(backend_mod, "checked_group", lambda group, groups: None)
            by_entry = _outcome(per_kg)
        assert fast == by_entry, (seed, fault)
        outcomes.append(fast)
    errors = [o for o in outcomes if isinstance(o, str)]
    if fault in (None, "empty and full", "a list entry"):
        assert not errors, errors  # well-formed: restored
    else:
        assert len(errors) == len(outcomes), outcomes  # every fault is refused
