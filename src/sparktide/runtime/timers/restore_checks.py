"""The check of timers restored from snapshots, before anything is restored: each timer stands
in the key group its key hashes to.

A timer in the wrong key group would fire under a key whose state lives in another key group, and
be lost or doubled at the next rescale: it means a snapshot taken with another max parallelism or
a corrupt file, refused with the key group, service and key named.

>>> from sparktide.runtime.keygroups import KeyGroupRange
>>> timers = {35: {"user-timers": ([(10, 0, "hello", None, 35)], [])}}
>>> check_timer_keys(timers, KeyGroupRange(0, 127), 128)
>>> check_timer_keys({3: {"user-timers": ([(10, 0, "hello", None, 3)], [])}},
...     KeyGroupRange(0, 127), 128)
Traceback (most recent call last):
...
ValueError: event-time timers of 'user-timers' in key group 3: key 'hello' belongs to key \
group 35, not 3; the snapshot was taken with another max_parallelism than 128 or is corrupt
"""

from __future__ import annotations

from sparktide.runtime.keygroups import KeyGroupRange, assign_to_key_group, assign_to_key_groups
from sparktide.runtime.timers.manager import TimerSnapshot
from sparktide.runtime.timers.queue import TimerEntry

__all__ = ["check_timer_keys"]

_DOMAINS = ("event-time", "processing-time")


def check_timer_keys(
    timers: TimerSnapshot, key_groups: KeyGroupRange, max_parallelism: int
) -> None:
    """Raise ValueError naming the first timer of the key groups in ``key_groups`` (the others
    are not restored here) that stands in another key group than its key's, or whose key is
    not usable. The key groups of all the keys are computed together
    (:func:`~sparktide.runtime.keygroups.assign_to_key_groups`)."""
    sections = [
        (kg, service, domain, entries)
        for kg, per_service in timers.items()
        if kg in key_groups
        for service, per_domain in per_service.items()
        for domain, entries in zip(_DOMAINS, per_domain, strict=True)
    ]
    keys = [e[2] for *_, entries in sections for e in entries]
    recorded = [e[4] for *_, entries in sections for e in entries]
    expected = [kg for kg, *_, entries in sections for _ in entries]
    try:
        if recorded == expected == assign_to_key_groups(keys, max_parallelism):
            return
    except TypeError:
        pass
    for kg, service, domain, entries in sections:  # find and name what is wrong
        where = f"{domain} timers of {service!r} in key group {kg}"
        for entry in entries:
            _check_entry(entry, kg, where, max_parallelism)


def _check_entry(
    entry: TimerEntry[object, object], kg: int, where: str, max_parallelism: int
) -> None:
    key = entry[2]
    try:
        actual = assign_to_key_group(key, max_parallelism)
    except TypeError as e:
        raise ValueError(f"{where}: key {key!r} is not usable: {e}") from None
    if entry[4] != kg:
        raise ValueError(
            f"{where}: timer {entry!r} is recorded in key group {entry[4]!r}; the snapshot is "
            "corrupt"
        )
    if actual != kg:
        raise ValueError(
            f"{where}: key {key!r} belongs to key group {actual}, not {kg}; the snapshot was "
            f"taken with another max_parallelism than {max_parallelism} or is corrupt"
        )
