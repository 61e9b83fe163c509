"""Changelogs of keyed state and timers: what changed in a subtask since the previous version.

A streaming subtask writes, per batch, either a full snapshot or a *changelog* (see
:mod:`sparktide.spark.checkpoint` for when). Both are built from the same flat view of a
:class:`~sparktide.runtime.snapshot.KeyedOperatorSnapshot`: per key group, a dict from an *item*
to its value, where an item is ``(0, state_name, key, namespace)`` (value: the raw state value)
or ``(1, service, domain, timestamp, key, namespace)`` (value: the timer's sequence number,
domain 0 = event time, 1 = processing time).

**How changes are found: a digest diff, not dirty tracking.** After each version the subtask keeps
a *digest* per item (an int value is its own digest, as a timer's sequence number is; any other
value's is a 64-bit hash of its pickle). The next version diffs the subtask's current state against
those digests: items whose digest changed are *puts*, items that disappeared are *deletes*. So the
bytes written per batch are proportional to the entries the batch touched (at entry granularity): a
restored timer keeps its sequence number
(:meth:`~sparktide.runtime.timers.queue.KeyGroupedTimerQueue.add_restored`), so only the timers the
batch registered or removed differ. The state backend and timer services stay untouched (the local
runtime pays nothing; nothing can forget to mark a write, including in-place changes of mutable
values). The cost is one pickle per entry that is not an int per batch on the worker, which a full
snapshot paid anyway. Digests live only in memory (the worker cache of
:mod:`sparktide.spark.stream_job`, or recomputed after a restore from disk), so the per-process
salt of ``hash`` does not matter. They are kept per key group and per *section* (a state, or one
domain of a timer service), by the rest of the item, so that :func:`diff` walks a live state
(:mod:`sparktide.runtime.live_state`) by its own tables and queues and builds an item only for a
change.

A changelog keeps one part ``kg-<n>`` per changed key group, each with its own CRC (the
container of :func:`~sparktide.spark.checkpoint_format.pack_parts`), so key groups stay the unit
of rescaling: a reader takes only the key groups of its own range. **Only user values are
pickled**, as in a full snapshot (:mod:`sparktide.runtime.snapshot`): each part is itself a
:func:`~sparktide.spark.checkpoint_format.pack_parts` container whose JSON meta holds the
structure and whose two parts hold the rest::

    meta      {"key_group": kg, "sections": [
                 {"type": "state", "state": name, "puts": n, "deletes": m},
                 {"type": "timers", "service": name, "domain": "event"|"processing",
                  "puts": n, "deletes": m}, ...]}
    "timers"  little-endian int64, per timer section in order: its puts as (timestamp,
              sequence number) pairs, then its deletes' timestamps
    "values"  a pickle of one list, per section in order: state puts (key, namespace, value),
              state deletes (key, namespace), timer puts and deletes (key, namespace)

so timer timestamps and sequence numbers are readable without unpickling anything (``sparktide
inspect`` counts them from the meta); a part without timers or values leaves that part out.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> from sparktide.runtime.snapshot import KeyedOperatorSnapshot
>>> meta = {"n": {"kind": "value", "ttl": False}}
>>> old = KeyedOperatorSnapshot("op", 128, KeyGroupRange(0, 127), meta,
...     {7: {"n": [("a", None, 1), ("b", None, 2)]}}, {7: {"t": ([(10, 0, "a", None, 7)], [])}})
>>> new = KeyedOperatorSnapshot("op", 128, KeyGroupRange(0, 127), meta,
...     {7: {"n": [("a", None, 5)]}}, {})
>>> changes = diff(digests(flatten(old)), flatten(new))
>>> sorted(changes[7][0]), sorted(changes[7][1], key=repr)
([((0, 'n', 'a', None), 5)], [(0, 'n', 'b', None), (1, 't', 0, 10, 'a', None)])
>>> flat = flatten(old)
>>> apply_changes(flat, changes)
>>> rebuild("op", 128, KeyGroupRange(0, 127), meta, flat) == new
True
>>> section_meta, parts = encode_key_group(*changes[7])
>>> section_meta["sections"][1]
{'type': 'timers', 'service': 't', 'domain': 'event', 'puts': 0, 'deletes': 1}
>>> decode_key_group(section_meta, parts) == changes[7]
True
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from itertools import chain
from pickle import dumps as _dumps
from typing import Any, TypedDict, cast

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.live_state import LiveKeyedState, SnapshotOrLive
from sparktide.runtime.snapshot import KeyedOperatorSnapshot, StateData
from sparktide.runtime.state.backend import StateMeta
from sparktide.runtime.timers.queue import TimerEntry
from sparktide.spark.checkpoint_format import CORRUPT_FIX, pack_parts, unpack_parts

__all__ = [
    "ChangeSection",
    "Changes",
    "Digests",
    "Flat",
    "KeyGroupChanges",
    "apply_changes",
    "apply_live_changes",
    "decode_changes",
    "decode_key_group",
    "diff",
    "digests",
    "encode_changes",
    "encode_key_group",
    "flatten",
    "rebuild",
    "update_digests",
]

Flat = dict[int, dict[tuple, object]]
"""Per key group: item -> value (raw state value, or a timer's sequence number)."""
Digests = dict[int, dict[tuple, dict[tuple, int]]]
"""Per key group, per section (``(0, state)`` or ``(1, service, domain)``): the digest of each of
its entries, by ``(key, namespace)`` or ``(timestamp, key, namespace)`` (an item is the section
followed by the entry)."""
Changes = dict[int, tuple[list[tuple[tuple, object]], list[tuple]]]
"""Per key group: ``(puts, deletes)``; puts are ``(item, value)``, deletes items."""


def flatten(snap: SnapshotOrLive, key_groups: KeyGroupRange | None = None) -> Flat:
    """The flat view of ``snap``, a snapshot or a live state whose values it shares (only the
    key groups in ``key_groups`` when given)."""
    if isinstance(snap, LiveKeyedState):
        return _flatten_live(snap, key_groups or snap.key_group_range)
    out: Flat = {}
    for kg, per_state in snap.state.items():
        if key_groups is not None and kg not in key_groups:
            continue
        items = out.setdefault(kg, {})
        for name, entries in per_state.items():
            for key, ns, raw in entries:
                items[(0, name, key, ns)] = raw
    for kg, per_service in snap.timers.items():
        if key_groups is not None and kg not in key_groups:
            continue
        items = out.setdefault(kg, {})
        for service, domains in per_service.items():
            for d, timer_entries in enumerate(domains):
                for ts, seq, key, ns, _kg in timer_entries:
                    items[(1, service, d, ts, key, ns)] = seq
    return out


def _flatten_live(live: LiveKeyedState, key_groups: KeyGroupRange) -> Flat:
    """The flat view of a live state: its values, not copies (states by name, timers in no
    particular order within a key group)."""
    out: Flat = {}
    sections_at = _live_sections(live)
    start = max(key_groups.start, live.key_group_range.start)
    end = min(key_groups.end, live.key_group_range.end)
    for kg in range(start, end + 1):
        items: dict[tuple, object] = {}
        for section, entries, timers in sections_at(kg):
            for entry, value in entries.items():
                items[section + entry] = value[1] if timers else value
        if items:
            out[kg] = items
    return out


Section = tuple[tuple, Mapping[tuple, Any], bool]
"""``(section, entries, timers)``: the entries of a section in one key group, by the rest of
their items; each holds its item's value, or (``timers``) the timer entry of a queue, whose
sequence number is the item's value."""


def _live_sections(live: LiveKeyedState) -> Callable[[int], list[Section]]:
    """The sections of ``live`` in a key group of its range, every state and timer queue's
    (empty ones too), as the tables and queues hold them."""
    datas = [((0, name), live.tables[name].in_range()) for name in sorted(live.tables)]
    queues = [((1, name, d), q) for name, pair in live.timers.items() for d, q in enumerate(pair)]

    def sections_at(kg: int) -> list[Section]:
        states: list[Section] = [(section, data[kg], False) for section, data in datas]
        return states + [(section, q.key_group_timers(kg), True) for section, q in queues]

    return sections_at


def _flat_sections(flat: Flat, kg: int) -> list[Section]:
    """The sections of ``flat`` in key group ``kg`` (the non-empty ones)."""
    sections: dict[tuple, dict[tuple, object]] = {}
    for item, value in flat.get(kg, {}).items():
        cut = 2 if item[0] == 0 else 3  # _split, inlined: this runs once per item
        section = item[:cut]
        entries = sections.get(section)
        if entries is None:
            entries = sections[section] = {}
        entries[item[cut:]] = value
    return [(section, entries, False) for section, entries in sections.items()]


def rebuild(
    operator: str,
    max_parallelism: int,
    key_group_range: KeyGroupRange,
    state_meta: dict[str, StateMeta],
    flat: Flat,
    key_type: dict[str, Any] | None = None,
) -> KeyedOperatorSnapshot:
    """The snapshot whose flat view is ``flat`` (timers in ``(timestamp, seq)`` order);
    ``key_type``: the declared key type it records (see
    :attr:`~sparktide.runtime.snapshot.KeyedOperatorSnapshot.key_type`)."""
    state: StateData = {}
    timers: dict[int, dict[str, tuple[list, list]]] = {}
    for kg in sorted(flat):
        for item, value in flat[kg].items():
            if item[0] == 0:
                state.setdefault(kg, {}).setdefault(item[1], []).append((item[2], item[3], value))
            else:
                _, service, d, ts, key, ns = item
                pair = timers.setdefault(kg, {}).setdefault(service, ([], []))
                pair[d].append((ts, value, key, ns, kg))
    for per_service in timers.values():
        for pair in per_service.values():
            pair[0].sort(key=_timer_order)
            pair[1].sort(key=_timer_order)
    return KeyedOperatorSnapshot(
        operator, max_parallelism, key_group_range, dict(state_meta), state, timers, key_type
    )


def _timer_order(entry: tuple) -> tuple[int, int]:
    return entry[0], entry[1]


def _digest(value: object) -> int:
    """An int is its own digest (a timer's sequence number, a counter), anything else the
    hash of its pickle (which tells ``1`` from ``1.0`` and ``True``)."""
    if type(value) is int:
        return value
    return hash(_dumps(value, protocol=5))


def _split(item: tuple) -> tuple[tuple, tuple]:
    """``(section, entry)`` of an item: ``((0, state), (key, namespace))`` or ``((1, service,
    domain), (timestamp, key, namespace))``; the item is their concatenation."""
    return (item[:2], item[2:]) if item[0] == 0 else (item[:3], item[3:])


def digests(flat: Flat) -> Digests:
    """The digest of every item of ``flat`` (see the module docstring)."""
    return {
        kg: {
            section: {entry: _digest(value) for entry, value in entries.items()}
            for section, entries, _ in _flat_sections(flat, kg)
        }
        for kg in flat
    }


def diff(digests: Digests, state: Flat | LiveKeyedState) -> Changes:
    """The changes (puts and deletes per key group, unchanged key groups left out) that turn
    the state whose digests are ``digests`` into ``state``, with ``digests`` brought up to date
    in place. ``state``: a flat view, or a live state (:mod:`sparktide.runtime.live_state`),
    walked by its own tables and queues without a flat view. One pass over the entries (an item
    is built only for a change), and one over the digests of a section that lost entries, to
    find which."""
    if isinstance(state, LiveKeyedState):
        kgs: Iterable[int] = state.key_group_range
        sections_at = _live_sections(state)
    else:
        kgs = sorted(state.keys() | digests.keys())
        sections_at = partial(_flat_sections, state)
    changes: Changes = {}
    for kg in kgs:
        mine = digests.setdefault(kg, {})
        puts: list[tuple[tuple, object]] = []
        deletes: list[tuple] = []
        current = sections_at(kg)
        for section, entries, timers in current:
            _diff_section(section, mine.setdefault(section, {}), entries, timers, puts, deletes)
        if len(mine) > len(current):  # sections a flat view no longer has in this key group
            named = {section for section, _, _ in current}
            for section in [section for section in mine if section not in named]:
                deletes.extend(section + entry for entry in mine.pop(section))
        if puts or deletes:
            changes[kg] = (puts, deletes)
        for section in [section for section, before in mine.items() if not before]:
            del mine[section]  # a digest of an empty section is no section
        if not mine:
            del digests[kg]
    return changes


def _diff_section(
    section: tuple,
    before: dict[tuple, int],
    entries: Mapping[tuple, Any],
    timers: bool,
    puts: list[tuple[tuple, object]],
    deletes: list[tuple],
) -> None:
    """Add the puts and deletes that turn the section whose digests are ``before`` into
    ``entries`` (see :data:`Section`), bringing ``before`` up to date."""
    if timers:
        for entry, timer in entries.items():
            seq = timer[1]
            if before.get(entry) != seq:
                before[entry] = seq
                puts.append((section + entry, seq))
    else:
        for entry, raw in entries.items():
            # _digest, inlined: this loop runs over every entry of the state each batch
            d = raw if type(raw) is int else hash(_dumps(raw, protocol=5))
            if before.get(entry) != d:
                before[entry] = d
                puts.append((section + entry, raw))
    _drop_gone(section, before, entries, deletes)


def _drop_gone(
    section: tuple, before: dict[tuple, int], now: Mapping[tuple, object], deletes: list[tuple]
) -> None:
    """Take the entries ``now`` lacks out of ``before`` (which holds every entry of ``now``),
    adding their items to ``deletes``."""
    if len(before) > len(now):
        gone = [entry for entry in before if entry not in now]
        for entry in gone:
            del before[entry]
        deletes.extend(section + entry for entry in gone)


def update_digests(digests: Digests, changes: Changes) -> None:
    """Bring ``digests`` (of a state) in place to the digests of that state with ``changes``
    applied (:func:`apply_changes`): only the changed items are digested again.

    >>> d = digests({7: {(0, "n", "a", None): 1, (0, "n", "b", None): 2}})
    >>> update_digests(d, {7: ([((0, "n", "c", None), 3)], [(0, "n", "b", None)])})
    >>> sorted(entry[0] for entry in d[7][(0, "n")])
    ['a', 'c']
    """
    for kg, (puts, deletes) in changes.items():
        mine = digests.setdefault(kg, {})
        for item in deletes:
            section, entry = _split(item)
            mine.get(section, {}).pop(entry, None)
        for item, value in puts:
            section, entry = _split(item)
            mine.setdefault(section, {})[entry] = _digest(value)


def apply_live_changes(live: LiveKeyedState, changes: Changes) -> bool:
    """Apply ``changes`` to ``live`` in place, its tables and timer queues (the changed queues
    rebuild their order once), when it has every state and timer service they name; else
    change nothing and return ``False``."""
    tables, timers = live.tables, live.timers
    for puts, deletes in changes.values():
        for item in chain(deletes, (item for item, _ in puts)):
            if item[1] not in (tables if item[0] == 0 else timers):
                return False
    by_queue: dict[tuple[str, int], tuple[list[TimerEntry], list[TimerEntry]]] = {}
    for kg, (puts, deletes) in changes.items():
        for item in deletes:
            if item[0] == 0:
                tables[item[1]].in_range()[kg].pop((item[2], item[3]), None)
            else:
                entry = (item[3], 0, item[4], item[5], kg)
                by_queue.setdefault((item[1], item[2]), ([], []))[1].append(entry)
        for item, value in puts:
            if item[0] == 0:
                tables[item[1]].in_range()[kg][(item[2], item[3])] = value
            else:
                entry = (item[3], cast(int, value), item[4], item[5], kg)
                by_queue.setdefault((item[1], item[2]), ([], []))[0].append(entry)
    for (service, domain), (timer_puts, timer_deletes) in by_queue.items():
        timers[service][domain].apply_restored_changes(timer_puts, timer_deletes)
    return True


def apply_changes(flat: Flat, changes: Changes, key_groups: KeyGroupRange | None = None) -> None:
    """Apply ``changes`` to ``flat`` in place (only the key groups in ``key_groups``)."""
    for kg, (puts, deletes) in changes.items():
        if key_groups is not None and kg not in key_groups:
            continue
        items = flat.setdefault(kg, {})
        for item in deletes:
            items.pop(item, None)
        for item, value in puts:
            items[item] = value
        if not items:
            del flat[kg]


_DOMAINS = ("event", "processing")


class ChangeSection(TypedDict, total=False):
    """One section of a key group's changes: a state's (``state``) or a timer service's
    timers of one domain (``service``, ``domain``), with its numbers of puts and deletes."""

    type: str
    state: str
    service: str
    domain: str
    puts: int
    deletes: int


class KeyGroupChanges(TypedDict):
    """The JSON meta of one key group's changes."""

    sections: list[ChangeSection]


def encode_key_group(
    puts: list[tuple[tuple, object]], deletes: list[tuple]
) -> tuple[KeyGroupChanges, dict[str, bytes]]:
    """``(meta, parts)`` of one key group's changes: the structure (which state entries and
    timers, timer domains, timestamps, sequence numbers) as JSON ``meta`` and int64 ``"timers"``,
    only the user values pickled (``"values"``); see the module docstring."""
    groups: dict[tuple, tuple[list, list]] = {}
    for item, value in puts:
        groups.setdefault(_section_of(item), ([], []))[0].append((item, value))
    for item in deletes:
        groups.setdefault(_section_of(item), ([], []))[1].append(item)
    sections: list[ChangeSection] = []
    numbers: list[int] = []
    values: list[tuple] = []
    for section, (section_puts, section_deletes) in groups.items():
        if section[0] == 0:
            sections.append({"type": "state", "state": section[1]})
            values.extend((item[2], item[3], value) for item, value in section_puts)
            values.extend((item[2], item[3]) for item in section_deletes)
        else:
            sections.append({"type": "timers", "service": section[1], "domain": section[2]})
            for item, seq in section_puts:
                numbers += (item[3], seq)  # a timer's value in the flat view: its seq (int)
            numbers.extend(item[3] for item in section_deletes)
            values.extend((item[4], item[5]) for item, _ in section_puts)
            values.extend((item[4], item[5]) for item in section_deletes)
        sections[-1]["puts"] = len(section_puts)
        sections[-1]["deletes"] = len(section_deletes)
    parts: dict[str, bytes] = {}
    if numbers:
        parts["timers"] = struct.pack(f"<{len(numbers)}q", *numbers)
    if values:
        parts["values"] = pickle.dumps(values, protocol=5)
    return {"sections": sections}, parts


def _section_of(item: tuple) -> tuple:
    """``(0, state)`` or ``(1, service, domain name)``: the section an item belongs to."""
    return (0, item[1]) if item[0] == 0 else (1, item[1], _DOMAINS[item[2]])


def decode_key_group(
    meta: KeyGroupChanges, parts: dict[str, bytes]
) -> tuple[list[tuple[tuple, object]], list[tuple]]:
    """The ``(puts, deletes)`` of :func:`encode_key_group`'s ``(meta, parts)``; raises
    ``ValueError`` (or ``KeyError``, ``TypeError``, ``struct.error``) if they do not agree."""
    sections = meta["sections"]
    timers = [s for s in sections if s["type"] == "timers"]
    n_numbers = sum(2 * s["puts"] + s["deletes"] for s in timers)
    raw = parts.get("timers", b"")
    if len(raw) != 8 * n_numbers:
        raise ValueError(f"{len(raw)} bytes of timer timestamps where {8 * n_numbers} belong")
    numbers = struct.unpack(f"<{n_numbers}q", raw)
    n_values = sum(s["puts"] + s["deletes"] for s in sections)
    values = pickle.loads(parts["values"]) if "values" in parts else []
    if len(values) != n_values:
        raise ValueError(f"{len(values)} values where the sections name {n_values}")
    puts: list[tuple[tuple, object]] = []
    deletes: list[tuple] = []
    at = 0  # next value
    nat = 0  # next number
    for s in sections:
        n, m = s["puts"], s["deletes"]
        if s["type"] == "state":
            name = s["state"]
            puts.extend(((0, name, k, ns), v) for k, ns, v in values[at : at + n])
            deletes.extend((0, name, k, ns) for k, ns in values[at + n : at + n + m])
        elif s["type"] == "timers":
            service, d = s["service"], _DOMAINS.index(s["domain"])
            for i, (k, ns) in enumerate(values[at : at + n]):
                ts, seq = numbers[nat + 2 * i], numbers[nat + 2 * i + 1]
                puts.append(((1, service, d, ts, k, ns), seq))
            nat += 2 * n
            for i, (k, ns) in enumerate(values[at + n : at + n + m]):
                deletes.append((1, service, d, numbers[nat + i], k, ns))
            nat += m
        else:
            raise ValueError(f"unknown section type {s['type']!r}")
        at += n + m
    return puts, deletes


def encode_changes(changes: Changes) -> dict[str, bytes]:
    """Container parts ``kg-<n>`` of ``changes`` (one :func:`encode_key_group` container per
    key group)."""
    out = {}
    for kg in sorted(changes):
        meta, parts = encode_key_group(*changes[kg])
        out[f"kg-{kg}"] = pack_parts(parts, {"key_group": kg, **meta})
    return out


def decode_changes(
    parts: dict[str, bytes], where: str, key_groups: KeyGroupRange | None = None
) -> Changes:
    """The changes of the ``kg-<n>`` parts (only the key groups in ``key_groups``); a part that
    does not decode raises ``ValueError`` naming ``where`` and the key group."""
    out: Changes = {}
    for name, data in parts.items():
        if not name.startswith("kg-"):
            continue
        kg = int(name[3:])
        if key_groups is not None and kg not in key_groups:
            continue
        what = f"{where} (key group {kg})"
        meta, inner = unpack_parts(data, what)
        try:
            if meta.get("key_group") != kg:
                raise ValueError(f"the part says key group {meta.get('key_group')}")
            # the structure is checked while decoding (a bad one raises, named below)
            out[kg] = decode_key_group(cast(KeyGroupChanges, meta), inner)
        except Exception as exc:
            raise ValueError(
                f"{where}: the changelog of key group {kg} is corrupt: {exc!r}; {CORRUPT_FIX}"
            ) from None
    return out
