"""The merge of a stage's input: position-ordered runs, in chunks sorted by first position,
come out in ``(position, channel)`` order while only a bounded pool is held."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.execution.merge import RunMerge, merge_runs


def _entry(position: tuple[int, ...], channel: int) -> tuple:
    return (position, channel, 0, f"{position}/{channel}", None, None)


def _layout(seed: int, entries: int, runs: int, max_chunk: int, unique: bool):
    """Entries spread over ``runs`` ordered runs, each cut in random chunks; the chunks sorted
    by first position (ties in random order, as Spark leaves them)."""
    rng = random.Random(seed)
    if unique:
        keys = [((rng.randrange(3), i), 0) for i in range(entries)]
    else:  # equal positions on several channels, and prefixes of other positions
        keys = list(
            {
                (tuple(rng.randrange(4) for _ in range(rng.randrange(1, 4))), rng.randrange(3))
                for _ in range(entries)
            }
        )
    keys.sort()
    per_run: list[list[tuple]] = [[] for _ in range(runs)]
    for position, channel in keys:
        per_run[rng.randrange(runs)].append(_entry(position, channel))
    chunks = []
    for run in per_run:
        i = 0
        while i < len(run):
            n = rng.randint(1, max_chunk)
            chunks.append(run[i : i + n])
            i += n
    rng.shuffle(chunks)
    chunks.sort(key=lambda c: c[0][0])  # stable: equal first positions stay shuffled
    return [_entry(*k) for k in keys], chunks


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    entries=st.integers(0, 300),
    runs=st.integers(1, 5),
    max_chunk=st.integers(1, 20),
    budget=st.integers(1, 60),
    unique=st.booleans(),
)
def test_chunks_of_ordered_runs_come_out_in_order(
    seed: int, entries: int, runs: int, max_chunk: int, budget: int, unique: bool
) -> None:
    expected, chunks = _layout(seed, entries, runs, max_chunk, unique)
    merge = RunMerge(budget)
    out: list[tuple] = []
    for chunk in chunks:
        ready = merge.add(chunk[0][0], chunk)
        out.extend(ready)
        if unique:  # at most the budget, or one chunk's tail per run when more overlap
            assert merge.held <= max(budget, runs * max_chunk)
        assert merge.held + len(out) == sum(len(c) for c in chunks[: chunks.index(chunk) + 1])
    out.extend(merge.drain())
    assert out == expected
    assert merge.held == 0


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 40))
def test_one_run_in_many_chunks_holds_the_budget(seed: int, budget: int) -> None:
    """One producer (a split): the pool never exceeds the budget plus the chunk being added."""
    expected, chunks = _layout(seed, 400, 1, 7, unique=True)
    merge = RunMerge(budget)
    out = []
    for chunk in chunks:
        out.extend(merge.add(chunk[0][0], chunk))
        assert merge.peak <= max(budget, 7)
    out.extend(merge.drain())
    assert out == expected


@given(seed=st.integers(0, 10**6), runs=st.integers(0, 6))
def test_merge_runs_equals_sorting(seed: int, runs: int) -> None:
    rng = random.Random(seed)
    lists = [
        sorted(_entry((rng.randrange(50),), rng.randrange(2)) for _ in range(rng.randrange(30)))
        for _ in range(runs)
    ]
    everything = sorted((e for run in lists for e in run), key=lambda e: (e[0], e[1]))
    assert merge_runs([list(run) for run in lists]) == everything


@pytest.mark.parametrize("budget", [0, -1, 1.5, None])
def test_budget_must_be_a_positive_int(budget: object) -> None:
    with pytest.raises(ValueError, match="budget must be an int >= 1"):
        RunMerge(budget)  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(0, 40),
    marks=st.booleans(),
    same_channel=st.booleans(),
)
def test_packed_chunks_give_back_the_entries(
    seed: int, n: int, marks: bool, same_channel: bool
) -> None:
    from sparktide.runtime.elements import StreamRecord, Watermark
    from sparktide.runtime.execution.protocol import (
        pack_collected,
        pack_entries,
        unpack_collected,
        unpack_entries,
    )

    rng = random.Random(seed)
    entries = []
    for i in range(n):
        element: object
        if marks and rng.random() < 0.3:
            element = Watermark(rng.randrange(100))
        else:
            value = rng.choice([("k", i), i, None, {"a": [i]}, f"v{i}"])
            element = StreamRecord(value, rng.choice([None, rng.randrange(-5, 10**13)]))
        channel = 0 if same_channel else rng.randrange(3)
        entries.append(((0, 0, 1, i, 0), channel, rng.randrange(1, 3), element, i % 4, i % 7))
    assert unpack_entries(pack_entries(entries)) == entries
    collected = [(e[0], e[3]) for e in entries if isinstance(e[3], StreamRecord)]
    assert unpack_collected(pack_collected(collected)) == collected
