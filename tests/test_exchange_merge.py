"""The merge of a stage's input: position-ordered runs, in chunks sorted by first position,
come out in ``(position, channel)`` order while only a bounded pool is held."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.runtime.execution.merge import ChunkMerge, merge_runs, sort_chunks
from sparktide.runtime.execution.protocol import EntryChunk, pack_entries, unpack_chunk


def _entries(chunks: list[EntryChunk]) -> list[tuple]:
    """The entries of the chunks a merge hands out, one chunk after another."""
    return [entry for chunk in chunks for entry in chunk.entries]


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
    merge = ChunkMerge(budget)
    out: list[tuple] = []
    for chunk in chunks:
        ready = _entries(merge.add(unpack_chunk(pack_entries(chunk))))
        out.extend(ready)
        if unique:  # at most the budget, or one chunk's tail per run when more overlap
            assert merge.held <= max(budget, runs * max_chunk)
        assert merge.held + len(out) == sum(len(c) for c in chunks[: chunks.index(chunk) + 1])
    out.extend(_entries(merge.drain()))
    assert out == expected
    assert merge.held == 0


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 40))
def test_one_run_in_many_chunks_holds_the_budget(seed: int, budget: int) -> None:
    """One producer (a split): the pool never exceeds the budget plus the chunk being added."""
    expected, chunks = _layout(seed, 400, 1, 7, unique=True)
    merge = ChunkMerge(budget)
    out = []
    for chunk in chunks:
        out.extend(_entries(merge.add(unpack_chunk(pack_entries(chunk)))))
        assert merge.peak <= max(budget, 7)
    out.extend(_entries(merge.drain()))
    assert out == expected


@given(seed=st.integers(0, 10**6), runs=st.integers(0, 6))
def test_sort_chunks_equals_sorting(seed: int, runs: int) -> None:
    """The vectorized sort of a stage's input is the tuple order: prefixes before their
    extensions, equal positions by channel, positions of any width."""
    rng = random.Random(seed)
    chunks = []
    for _ in range(runs):
        entries = [
            _entry(
                tuple(rng.randrange(-1, 4) for _ in range(rng.randrange(1, 5))), rng.randrange(3)
            )
            for _ in range(rng.randrange(1, 30))
        ]
        chunks.append(unpack_chunk(pack_entries(sorted(set(entries)))))
    everything = sorted((e for c in chunks for e in c.entries), key=lambda e: (e[0], e[1]))
    assert (sort_chunks(chunks).entries if chunks else []) == everything


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
        ChunkMerge(budget)  # type: ignore[arg-type]


def _random_entries(rng: random.Random, n: int, marks: bool, same_channel: bool, rows: bool):
    """Random entries: positions of mixed widths (prefixes
    and extensions), watermarks among records, ``None`` keys and key groups (broadcast),
    values of a declared row type or not."""
    from sparktide.common.types import Row
    from sparktide.runtime.elements import StreamRecord, Watermark

    entries = []
    for i in range(n):
        element: object
        if marks and rng.random() < 0.3:
            element = Watermark(rng.randrange(100))
        elif rows:
            element = StreamRecord(Row(k=f"k{i % 3}", n=i), rng.randrange(10**13))
        else:
            value = rng.choice([("k", i), i, None, {"a": [i]}, f"v{i}"])
            element = StreamRecord(value, rng.choice([None, rng.randrange(-5, 10**13)]))
        channel = 0 if same_channel else rng.randrange(3)
        width = rng.choice([5, 6, 9])
        position = (0, rng.randrange(-1, 2), 1, i, 0, 0, 2, rng.randrange(2**40), i)[:width]
        key = rng.choice([None, i % 4, f"k{i % 3}"])
        key_group = None if key is None else rng.choice([i % 7, 3])
        entries.append((position, channel, rng.randrange(1, 3), element, key, key_group))
    return entries


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(0, 40),
    marks=st.booleans(),
    same_channel=st.booleans(),
    rows=st.booleans(),
    declared=st.booleans(),
)
def test_packed_chunks_give_back_the_entries(
    seed: int, n: int, marks: bool, same_channel: bool, rows: bool, declared: bool
) -> None:
    from sparktide.common.typeinfo import Types
    from sparktide.runtime.elements import StreamRecord
    from sparktide.runtime.execution.arrow_values import ValueCodec
    from sparktide.runtime.execution.protocol import (
        pack_collected,
        unpack_collected,
        unpack_entries,
    )

    entries = _random_entries(random.Random(seed), n, marks, same_channel, rows)
    row_type = Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()])
    codecs = {1: ValueCodec.of(row_type), 2: ValueCodec.of(row_type)} if declared else None
    payload = pack_entries(entries, codecs)
    assert unpack_entries(payload) == entries
    chunk = unpack_chunk(payload)
    if not entries:
        assert chunk is None
    else:
        assert chunk is not None and chunk.entries == entries
        assert list(chunk.positions.positions()) == [e[0] for e in entries]
        assert chunk.channel_array().tolist() == [e[1] for e in entries]
    collected = [(e[0], e[3]) for e in entries if isinstance(e[3], StreamRecord)]
    assert unpack_collected(pack_collected(collected)) == collected


def test_chunks_packed_with_a_tuple_per_position_still_read() -> None:
    """A chunk in the layout before positions travelled by columns (a tuple per position, key
    groups listed) reads as it did, and merges like the others."""
    import pickle

    from sparktide.runtime.elements import StreamRecord, Watermark
    from sparktide.runtime.execution.protocol import ChunkKind, unpack_entries

    positions = ((0, 0, 1, 1, 0), (0, 0, 1, 1, 0, 0), (0, 0, 1, 2, 0))
    records = pickle.dumps(
        (
            ChunkKind.RECORDS,
            ["a", "b", "c"],
            [1, None, 3],
            positions,
            0,
            1,
            ("x", "y", "x"),
            (2, 5, 2),
        ),
        5,
    )
    assert unpack_entries(records) == [
        ((0, 0, 1, 1, 0), 0, 1, StreamRecord("a", 1), "x", 2),
        ((0, 0, 1, 1, 0, 0), 0, 1, StreamRecord("b", None), "y", 5),
        ((0, 0, 1, 2, 0), 0, 1, StreamRecord("c", 3), "x", 2),
    ]
    marks = pickle.dumps(
        (ChunkKind.ELEMENTS, (Watermark(4),), ((0, 1, 0, 0, 1),), (2,), 1, (None,), (None,)), 5
    )
    assert unpack_entries(marks) == [((0, 1, 0, 0, 1), 2, 1, Watermark(4), None, None)]
    merge = ChunkMerge(1)
    ready = merge.add(unpack_chunk(records)) + merge.add(unpack_chunk(marks)) + merge.drain()
    assert [e[0] for e in _entries(ready)] == [*positions, (0, 1, 0, 0, 1)]
