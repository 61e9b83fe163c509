"""A heap subtask's keyed state and timers handed from the operator of one batch to the next
(:mod:`sparktide.runtime.live_state`): the next operator goes on exactly as one restored from a
snapshot of the first would."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator

import pytest

from sparktide.common import Types
from sparktide.common.time import Time
from sparktide.core.state import StateTtlConfig
from sparktide.datastream import KeyedProcessFunction
from sparktide.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.live_state import LiveKeyedState
from sparktide.runtime.operators.process import KeyedProcessOperator
from sparktide.runtime.snapshot import KeyedOperatorSnapshot
from sparktide.spark.changelog import flatten
from sparktide.testing.harness import KeyedOneInputStreamOperatorTestHarness


class Tracker(KeyedProcessFunction):
    """Per key: a count (TTL, cleaned up incrementally), the values (a list), how often each
    value came (a map); an event-time timer 10 ms after each record and a processing-time timer
    12 ms after the first record of a key (the next batch fires it); a value of 0 deletes the
    key's event-time timers and clears its list."""

    def open(self, runtime_context):
        count = ValueStateDescriptor("count", Types.LONG())
        ttl = StateTtlConfig.new_builder(Time.milliseconds(50)).cleanup_incrementally(5, True)
        count.enable_time_to_live(ttl.build())
        self.count = runtime_context.get_state(count)
        self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.INT()))
        self.seen = runtime_context.get_map_state(
            MapStateDescriptor("seen", Types.INT(), Types.LONG())
        )

    def process_element(self, value, ctx):
        v = value[1]
        timers = ctx.timer_service()
        if v == 0:
            for ts in range(ctx.timestamp() - 10, ctx.timestamp() + 11):
                timers.delete_event_time_timer(ts)
            self.values.clear()
        else:
            self.values.add(v)
        if self.count.value() is None:
            timers.register_processing_time_timer(timers.current_processing_time() + 12)
        self.count.update((self.count.value() or 0) + 1)
        self.seen.put(v, (self.seen.get(v) or 0) + 1)
        timers.register_event_time_timer(ctx.timestamp() + 10)
        return iter(())

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            timestamp,
            str(ctx.time_domain()),
            self.count.value(),
            list(self.values.get() or []),
            sorted(self.seen.items()),
        )


def _harness(clock: int) -> KeyedOneInputStreamOperatorTestHarness:
    return KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(Tracker()), lambda r: r[0], processing_time=clock
    )


def _batches(seed: int, n: int) -> list[list[tuple[str, int, int]]]:
    """``n`` batches of ``(key, value, timestamp)``, timestamps rising with some late ones."""
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(30)]
    return [
        [(rng.choice(keys), rng.randrange(4), b * 20 + rng.randrange(-15, 20)) for _ in range(25)]
        for b in range(n)
    ]


def _run(harness, batch, b: int) -> list:
    for key, value, ts in batch:
        harness.process_element((key, value), ts)
    harness.process_watermark(b * 20)
    harness.set_processing_time(b * 7)
    out = harness.extract_output_values()
    harness.clear_output()
    return out


def test_an_adopted_state_goes_on_as_a_restored_one() -> None:
    """Eight batches, each with a new operator: one adopts what the last one handed over, the
    other restores its snapshot; their outputs and snapshots are equal after every batch, and
    the adopted state is the very same tables and queues."""
    live: LiveKeyedState | None = None
    snapshot: bytes | None = None
    tables: list[object] = []
    fired = 0
    for b, batch in enumerate(_batches(7, 8)):
        adopted, restored = _harness(b * 7 - 7), _harness(b * 7 - 7)
        if live is not None:
            adopted.operator.adopt_live_state(live)
        if snapshot is not None:
            restored.initialize_state(snapshot)
        adopted.open()
        restored.open()
        out = _run(adopted, batch, b)
        assert out == _run(restored, batch, b), b
        fired += len(out)
        snapshot = restored.snapshot()
        assert flatten(KeyedOperatorSnapshot.from_bytes(adopted.snapshot())) == flatten(
            KeyedOperatorSnapshot.from_bytes(snapshot)
        ), b
        live = adopted.operator.hand_over_live_state()
        assert live is not None
        tables.append(live.tables["values"])
        adopted.close()  # leaves the handed-over tables alone
        restored.close()
    assert fired > 100 and all(t is tables[0] for t in tables)
    assert live is not None and live.state_entries() > 0 and live.timer_count(0) > 0


def test_a_state_whose_ttl_cleans_up_in_full_snapshots_is_not_handed_over() -> None:
    """A snapshot leaves its expired values out, which the live tables still hold."""

    class Expiring(KeyedProcessFunction):
        def open(self, runtime_context):
            descriptor = ValueStateDescriptor("last", Types.LONG())
            ttl = StateTtlConfig.new_builder(Time.milliseconds(5)).cleanup_full_snapshot()
            descriptor.enable_time_to_live(ttl.build())
            self.last = runtime_context.get_state(descriptor)

        def process_element(self, value, ctx):
            self.last.update(value[1])
            return iter(())

    harness = KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(Expiring()), lambda r: r[0], processing_time=0
    )
    harness.open()
    harness.process_element(("a", 1), 1)
    assert harness.operator.hand_over_live_state() is None
    assert harness.num_keyed_state_entries() == 1  # the operator keeps its state


def test_a_live_state_is_adopted_only_by_an_empty_operator_of_its_key_groups() -> None:
    first = _harness(0)
    first.open()
    first.process_element(("k1", 1), 1)
    live = first.operator.hand_over_live_state()
    assert live is not None
    busy = _harness(0)
    busy.open()
    busy.process_element(("k2", 2), 2)
    with pytest.raises(ValueError, match="already has"):
        busy.operator.adopt_live_state(live)
    other = KeyedOneInputStreamOperatorTestHarness(
        KeyedProcessOperator(Tracker()), lambda r: r[0], parallelism=2, subtask_index=1
    )
    with pytest.raises(ValueError, match="cannot be adopted by subtask 1"):
        other.operator.adopt_live_state(live)
    assert live.key_group_range == KeyGroupRange(0, 127)


def _snapshots_and_lives(
    seed: int, n: int
) -> Iterator[tuple[KeyedOperatorSnapshot, LiveKeyedState]]:
    """After each of ``n`` random batches of one operator: its snapshot and its live state
    (handed over after every batch and adopted by the next batch's operator, so it changes
    once the next batch runs)."""
    live = None
    for b, batch in enumerate(_batches(seed, n)):
        harness = _harness(b * 7 - 7)
        if live is not None:
            harness.operator.adopt_live_state(live)
        harness.open()
        _run(harness, batch, b)
        snapshot = KeyedOperatorSnapshot.from_bytes(harness.snapshot())
        live = harness.operator.hand_over_live_state()
        assert live is not None
        yield snapshot, live


def _as_sets(changes: dict) -> dict:
    return {kg: (dict(puts), set(deletes)) for kg, (puts, deletes) in changes.items()}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_diff_of_the_live_state_is_the_diff_of_its_snapshot(seed: int) -> None:
    """Every batch: the changes found in the live state (in place, no flat view) are those a
    diff of its snapshot finds, and so are the digests left for the next batch."""
    from sparktide.spark.changelog import diff, digests

    kept = digests({})
    deleted = 0
    for snapshot, live in _snapshots_and_lives(seed, 8):
        new = copy.deepcopy(kept)
        expected = diff(new, flatten(snapshot))
        changes = diff(kept, live)
        assert _as_sets(changes) == _as_sets(expected)
        assert kept == new == digests(flatten(snapshot))
        deleted += sum(len(deletes) for _, deletes in changes.values())
    assert deleted > 0


def test_changelogs_applied_to_a_live_state_bring_it_to_the_later_state() -> None:
    """What a worker holding an older live state does with the changelogs written since; a
    changelog that names a state the live state lacks changes nothing."""
    from sparktide.spark.changelog import apply_live_changes, diff, digests

    snapshots = [snapshot for snapshot, _ in _snapshots_and_lives(5, 6)]
    flats = [flatten(snapshot) for snapshot in snapshots]
    harness = _harness(0)  # a worker that restored the state after the second batch
    harness.initialize_state(snapshots[1])
    live = harness.operator.hand_over_live_state()
    assert live is not None and flatten(live) == flats[1]
    previous = digests(flats[1])
    for flat in flats[2:]:
        changes = diff(previous, flat)
        assert apply_live_changes(live, changes)
        assert flatten(live) == flat
    unknown = {3: ([((0, "unknown", "k1", None), 1)], [])}
    assert not apply_live_changes(live, unknown) and flatten(live) == flats[-1]
