"""Snapshots of keyed state + timers: round trip, rescaling 1 -> 3 -> 1, bad snapshots."""

from __future__ import annotations

import dataclasses
import struct
from collections import defaultdict

import pytest

from sparktide.datastream import AggregateFunction, KeyedProcessFunction
from sparktide.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from sparktide.runtime.snapshot import KeyedOperatorSnapshot, SnapshotFormatError
from sparktide.testing import for_keyed_process_function

MAXP = 128
KEYS = [f"user-{i}" for i in range(60)] + list(range(40)) + [("t", i) for i in range(20)]


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Everything(KeyedProcessFunction):
    """Every state kind plus event- and processing-time timers; timers report the state."""

    def open(self, rc):
        self.last = rc.get_state(ValueStateDescriptor("last", None))
        self.seen = rc.get_list_state(ListStateDescriptor("seen", None))
        self.by_mod = rc.get_map_state(MapStateDescriptor("by-mod", None, None))
        self.total = rc.get_reducing_state(
            ReducingStateDescriptor("total", lambda a, b: a + b, None)
        )
        self.avg = rc.get_aggregating_state(AggregatingStateDescriptor("avg", Avg(), None))

    def process_element(self, value, ctx):
        _key, n = value
        self.last.update(n)
        self.seen.add(n)
        self.by_mod.put(n % 3, (self.by_mod.get(n % 3) or 0) + 1)
        self.total.add(n)
        self.avg.add(n)
        ts = ctx.timer_service()
        ts.register_event_time_timer(ctx.timestamp() + (n % 4) * 10)
        ts.register_processing_time_timer(1000 + n % 7)
        return None

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            ctx.time_domain().name,
            timestamp,
            self.last.value(),
            list(self.seen.get()),
            sorted(self.by_mod.items()),
            self.total.get(),
            self.avg.get(),
        )


def feed(h, start=0, count=400):
    for i in range(start, start + count):
        key = KEYS[(i * 7) % len(KEYS)]
        if key in owned(h):
            h.process_element((key, i), 100 + i % 50)


def owned(h):
    rng = h.setup_info.key_group_range
    from sparktide.runtime.keygroups import assign_to_key_group

    return {k for k in KEYS if assign_to_key_group(k, MAXP) in rng}


def make(snapshot=None, parallelism=1, index=0):
    return for_keyed_process_function(
        Everything(),
        lambda v: v[0],
        snapshot=snapshot,
        parallelism=parallelism,
        subtask_index=index,
        max_parallelism=MAXP,
    )


def finish(h):
    h.process_watermark(10_000)
    h.set_processing_time(5_000)
    return h.extract_output_values()


def per_key(values):
    out = defaultdict(list)
    for v in values:
        out[v[0]].append(v)
    return dict(out)


def test_round_trip_at_same_parallelism_continues_identically():
    reference = make()
    feed(reference)
    snap = reference.snapshot()
    restored = make(snapshot=snap)
    for h in (reference, restored):
        feed(h, start=400, count=200)
    assert finish(restored) == finish(reference)  # same order, ties included


def test_rescale_1_to_3_to_1_keeps_every_timer_and_entry_exactly_once():
    single = make()
    feed(single)
    entries = single.num_keyed_state_entries()
    timers = (single.num_event_time_timers(), single.num_processing_time_timers())
    assert entries > 0 and timers[0] > 0 and timers[1] > 0
    snap = single.snapshot()

    three = [make(snapshot=snap, parallelism=3, index=i) for i in range(3)]
    assert sum(h.num_keyed_state_entries() for h in three) == entries
    assert sum(h.num_event_time_timers() for h in three) == timers[0]
    assert sum(h.num_processing_time_timers() for h in three) == timers[1]
    for h in three:  # every subtask holds exactly its own key groups
        rng = h.setup_info.key_group_range
        decoded = KeyedOperatorSnapshot.from_bytes(h.snapshot())
        assert all(kg in rng for kg in decoded.key_groups())

    back = make(snapshot=[h.snapshot() for h in three])
    assert back.num_keyed_state_entries() == entries
    assert (back.num_event_time_timers(), back.num_processing_time_timers()) == timers

    # the three subtasks and the re-merged one produce, per key, what the original does
    expected = per_key(finish(make(snapshot=snap)))
    assert per_key(v for h in three for v in finish(h)) == expected
    assert per_key(finish(back)) == expected


def test_snapshot_bytes_are_deterministic():
    a, b = make(), make()
    feed(a)
    feed(b)
    assert a.snapshot() == b.snapshot()


def _bump_version(data: bytes) -> bytes:
    return data[:8] + struct.pack(">I", 99) + data[12:]


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (_bump_version, r"format version 99 is not supported.*version 1"),
        (lambda d: b"garbage!" + d[8:], "bad magic"),
        (lambda d: d[:-7], "truncated"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 0xFF]), "checksum"),
    ],
)
def test_bad_snapshots_are_refused_and_nothing_is_restored(mangle, message):
    source = make()
    feed(source)
    bad = mangle(source.snapshot())
    target = make()
    target.process_element(("user-1", 1), 5)  # pre-existing state must survive intact
    before = (target.num_keyed_state_entries(), target.num_event_time_timers())
    with pytest.raises(SnapshotFormatError, match=message):
        target.operator.initialize_state([source.snapshot(), bad])
    assert (target.num_keyed_state_entries(), target.num_event_time_timers()) == before


def _moved_timer(snapshot: KeyedOperatorSnapshot) -> KeyedOperatorSnapshot:
    """``snapshot`` with its first event-time timer moved into the next key group's section
    (its key group field too), as a file written with another max parallelism would hold it."""
    timers = {kg: dict(per) for kg, per in snapshot.timers.items()}
    kg = min(kg for kg, per in timers.items() if per["user-timers"][0])
    event, proc = timers[kg]["user-timers"]
    ts, seq, key, ns, _ = event[0]
    timers[kg]["user-timers"] = (event[1:], proc)
    other = (kg + 1) % MAXP
    other_event, other_proc = timers.setdefault(other, {}).get("user-timers", ([], []))
    timers[other]["user-timers"] = ([*other_event, (ts, seq, key, ns, other)], other_proc)
    return dataclasses.replace(snapshot, timers=timers)


def _timers_only(snapshot: KeyedOperatorSnapshot) -> KeyedOperatorSnapshot:
    """The timers of ``snapshot``'s first key group with timers, and no state."""
    kg = min(snapshot.timers)
    return dataclasses.replace(snapshot, state={}, timers={kg: snapshot.timers[kg]})


def _unusable_timer_key(snapshot: KeyedOperatorSnapshot) -> KeyedOperatorSnapshot:
    """``snapshot`` with a list as the key of its first event-time timer."""
    kg = min(kg for kg, per in snapshot.timers.items() if per["user-timers"][0])
    event, proc = snapshot.timers[kg]["user-timers"]
    ts, seq, key, ns, _ = event[0]
    timers = {
        **snapshot.timers,
        kg: {"user-timers": ([(ts, seq, [key], ns, kg), *event[1:]], proc)},
    }
    return dataclasses.replace(snapshot, timers=timers)


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (
            _moved_timer,
            r"event-time timers of 'user-timers' in key group \d+: key .* belongs to "
            r"key group \d+, not \d+; the snapshot was taken with another max_parallelism than 128",
        ),
        (_timers_only, r"key group \d+ appears in more than one snapshot; restore each key group"),
        (
            _unusable_timer_key,
            r"timers of 'user-timers' in key group \d+: key \[.*\] is not usable",
        ),
    ],
)
def test_timers_in_the_wrong_key_group_are_refused_and_nothing_is_restored(break_it, message):
    source = make()
    feed(source)
    good = source.snapshot()
    bad = break_it(KeyedOperatorSnapshot.from_bytes(good))
    # through the file format where it can carry the fault (a list key pickles as well)
    given = [good, bad.to_bytes()] if break_it is _timers_only else [bad.to_bytes()]
    target = make()
    target.process_element(("user-1", 1), 5)  # pre-existing state must survive intact
    before = (target.num_keyed_state_entries(), target.num_event_time_timers())
    with pytest.raises(ValueError, match=message):
        target.operator.initialize_state(given)
    assert (target.num_keyed_state_entries(), target.num_event_time_timers()) == before


def test_max_parallelism_mismatch_is_refused():
    source = make()
    feed(source)
    with pytest.raises(ValueError, match=r"max_parallelism=128.*max_parallelism=256"):
        for_keyed_process_function(
            Everything(), lambda v: v[0], snapshot=source.snapshot(), max_parallelism=256
        )


def test_timer_timestamps_are_readable_without_unpickling():
    h = make()
    h.process_element(("user-1", 3), 100)
    header, _ = KeyedOperatorSnapshot.read_header(h.snapshot())
    timer_sections = [s for s in header["sections"] if s["type"] == "timers"]
    assert {s["domain"] for s in timer_sections} == {"event", "processing"}
    undeclared = {"format_version": 1, "value": None, "map_key": None}
    assert header["states"]["last"] == {"kind": "value", "ttl": False, "types": undeclared}
