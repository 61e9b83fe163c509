"""The broadcast state of one operator subtask: one map per registered descriptor.

Every subtask of a broadcast operator keeps the same maps (every subtask receives every
broadcast element, in the same order), so a checkpoint stores one copy and every subtask of a
restored or rescaled job starts from it. The snapshot is a versioned blob: a plain header (the
format version and the state names, in registration order) and the entries, which are user
values, pickled.

>>> from sparktide.core.state import MapStateDescriptor
>>> rules = MapStateDescriptor("rules", None, None)
>>> store = BroadcastStateStore([rules])
>>> store.writable(rules).put("limit", 3)
>>> view = store.read_only(rules)
>>> view.get("limit"), list(view.items()), view.is_empty()
(3, [('limit', 3)], False)
>>> view.put("limit", 4)  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
TypeError: broadcast state 'rules' is read-only here: only process_broadcast_element may ...
>>> copy = BroadcastStateStore([rules]); copy.restore(store.snapshot())
>>> copy.read_only(rules).get("limit")
3
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import NoReturn

from sparktide.core.broadcast import BroadcastState, OperatorStateStore, ReadOnlyBroadcastState
from sparktide.core.state import MapStateDescriptor

__all__ = [
    "BROADCAST_STATE_FORMAT",
    "BroadcastStateStore",
    "HeapBroadcastState",
    "ReadOnlyBroadcastStateView",
]

BROADCAST_STATE_FORMAT = 1
"""The version of :meth:`BroadcastStateStore.snapshot`'s blob."""

_MAGIC = b"STBS"


class HeapBroadcastState(BroadcastState[object, object]):
    """A broadcast state kept in a dict (keys iterate in the order they were first put)."""

    __slots__ = ("_map", "name")

    def __init__(self, name: str, entries: dict[object, object]) -> None:
        self.name = name
        self._map = entries

    def get(self, key: object) -> object | None:
        return self._map.get(key)

    def contains(self, key: object) -> bool:
        return key in self._map

    def items(self) -> Iterable[tuple[object, object]]:
        return list(self._map.items())

    def keys(self) -> Iterable[object]:
        return list(self._map)

    def values(self) -> Iterable[object]:
        return list(self._map.values())

    def is_empty(self) -> bool:
        return not self._map

    def put(self, key: object, value: object) -> None:
        self._map[key] = value

    def put_all(self, dict_value: Mapping[object, object]) -> None:
        self._map.update(dict_value)

    def remove(self, key: object) -> None:
        self._map.pop(key, None)

    def clear(self) -> None:
        self._map.clear()

    def __len__(self) -> int:
        return len(self._map)


class ReadOnlyBroadcastStateView(ReadOnlyBroadcastState[object, object]):
    """What the non-broadcast side and timers see of a broadcast state: reads only; the
    writing methods raise an error that says where the state can be written."""

    __slots__ = ("_state",)

    def __init__(self, state: HeapBroadcastState) -> None:
        self._state = state

    def get(self, key: object) -> object | None:
        return self._state.get(key)

    def contains(self, key: object) -> bool:
        return self._state.contains(key)

    def items(self) -> Iterable[tuple[object, object]]:
        return self._state.items()

    def keys(self) -> Iterable[object]:
        return self._state.keys()

    def values(self) -> Iterable[object]:
        return self._state.values()

    def is_empty(self) -> bool:
        return self._state.is_empty()

    def _read_only(self) -> NoReturn:
        raise TypeError(
            f"broadcast state {self._state.name!r} is read-only here: only "
            "process_broadcast_element may change it (its ctx.get_broadcast_state(...) is "
            "writable); the non-broadcast side and on_timer only read it"
        )

    def put(self, key: object, value: object) -> NoReturn:
        self._read_only()

    def put_all(self, dict_value: Mapping[object, object]) -> NoReturn:
        self._read_only()

    def remove(self, key: object) -> NoReturn:
        self._read_only()

    def clear(self) -> NoReturn:
        self._read_only()

    def __setitem__(self, key: object, value: object) -> NoReturn:
        self._read_only()

    def __delitem__(self, key: object) -> NoReturn:
        self._read_only()


def _check_descriptors(descriptors: Sequence[object]) -> list[MapStateDescriptor]:
    out: list[MapStateDescriptor] = []
    names: set[str] = set()
    for d in descriptors:
        if not isinstance(d, MapStateDescriptor):
            raise TypeError(
                "broadcast state descriptors must be MapStateDescriptors, got "
                f"{type(d).__name__}; describe each broadcast state as "
                "MapStateDescriptor(name, key_type, value_type)"
            )
        if d.name in names:
            raise ValueError(
                f"broadcast state {d.name!r} is registered twice; give each "
                "MapStateDescriptor its own name"
            )
        names.add(d.name)
        out.append(d)
    return out


class BroadcastStateStore(OperatorStateStore):
    """The broadcast states of one subtask, by descriptor name."""

    __slots__ = ("_read_only", "_states")

    def __init__(self, descriptors: Sequence[MapStateDescriptor]) -> None:
        self._states: dict[str, HeapBroadcastState] = {
            d.name: HeapBroadcastState(d.name, {}) for d in _check_descriptors(descriptors)
        }
        self._read_only = {n: ReadOnlyBroadcastStateView(s) for n, s in self._states.items()}

    @property
    def names(self) -> list[str]:
        """The registered state names, in registration order."""
        return list(self._states)

    def _name(self, descriptor: object) -> str:
        if not isinstance(descriptor, MapStateDescriptor):
            raise TypeError(
                "get_broadcast_state takes the MapStateDescriptor passed to broadcast(...), "
                f"got {type(descriptor).__name__}"
            )
        name = descriptor.name
        if name not in self._states:
            raise ValueError(
                f"broadcast state {name!r} is not registered: pass its MapStateDescriptor to "
                f"broadcast(...) (registered: {self.names or 'none'})"
            )
        return name

    def writable(self, descriptor: MapStateDescriptor) -> HeapBroadcastState:
        """The state of ``descriptor``, to read and write (the broadcast side)."""
        return self._states[self._name(descriptor)]

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> HeapBroadcastState:
        """As :meth:`writable` (PyFlink's ``OperatorStateStore``)."""
        return self.writable(state_descriptor)

    def read_only(self, descriptor: MapStateDescriptor) -> ReadOnlyBroadcastStateView:
        """A read-only view of the state of ``descriptor`` (the other side, timers)."""
        return self._read_only[self._name(descriptor)]

    def entries(self) -> Iterator[tuple[str, list[tuple[object, object]]]]:
        """Every state's name and entries."""
        for name, state in self._states.items():
            yield name, list(state.items())

    def num_entries(self) -> int:
        """The number of mappings over every state."""
        return sum(len(s) for s in self._states.values())

    def snapshot(self) -> bytes:
        """Every state, as a versioned blob (:meth:`restore` reads it)."""
        body = {"format": BROADCAST_STATE_FORMAT, "states": dict(self.entries())}
        return _MAGIC + pickle.dumps(body, protocol=5)

    def restore(self, data: bytes) -> None:
        """Replace every state by the one in ``data`` (a :meth:`snapshot`). A state the
        snapshot holds but this operator does not register is kept (it is written again by
        the next snapshot); a registered state the snapshot lacks starts empty."""
        if not isinstance(data, (bytes, bytearray)) or bytes(data[:4]) != _MAGIC:
            raise ValueError("not a broadcast state snapshot (bad magic)")
        body = pickle.loads(bytes(data[4:]))
        if not isinstance(body, dict) or body.get("format") != BROADCAST_STATE_FORMAT:
            got = body.get("format") if isinstance(body, dict) else None
            raise ValueError(
                f"broadcast state snapshot has format {got!r}; this version reads format "
                f"{BROADCAST_STATE_FORMAT}"
            )
        states = body.get("states")
        if not isinstance(states, dict):
            raise ValueError("broadcast state snapshot holds no states")
        for state in self._states.values():
            state.clear()
        for name, entries in states.items():
            if name not in self._states:
                kept = HeapBroadcastState(name, {})
                self._states[name] = kept
                self._read_only[name] = ReadOnlyBroadcastStateView(kept)
            self._states[name].put_all(dict(entries))
