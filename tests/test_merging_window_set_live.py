"""A merging window set on the heap map state (updated in place) behaves exactly as one on a
store it copies in and out: same results, same merges, same stored mapping (order included),
and a snapshot taken earlier never sees later changes."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.state import MapStateDescriptor
from sparktide.core.window.assigners import EventTimeSessionWindows
from sparktide.core.window.windows import TimeWindow
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.operators.merging_window_set import MergingWindowSet
from sparktide.runtime.state.backend import HeapKeyedStateBackend


class _CopyStore(dict):  # type: ignore[type-arg]
    """Copied in and out: no live dict."""

    def items(self) -> Any:  # type: ignore[override]
        return list(super().items())

    def put_all(self, d: Any) -> None:
        self.update(d)


def _recorder(calls: list[Any]) -> Any:
    return lambda *args: calls.append(args)


def _backend() -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(
        max_parallelism=128, key_group_range=KeyGroupRange(0, 127), time_provider=lambda: 0
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_live_map_state_matches_a_copied_store(seed: int) -> None:
    rnd = random.Random(seed)
    assigner = EventTimeSessionWindows.with_gap(5)
    backend = _backend()
    live = backend.get_partitioned_state(MapStateDescriptor("merging-window-set", None, None))
    copies = {k: _CopyStore() for k in ("a", "b")}
    snapshots: list[tuple[Any, Any]] = []
    for _ in range(rnd.randrange(1, 40)):
        key = rnd.choice("ab")
        backend.set_current_key(key)
        s_live = MergingWindowSet(assigner, live)  # type: ignore[arg-type]
        s_copy = MergingWindowSet(assigner, copies[key])
        windows = s_copy.windows()
        assert s_live.windows() == windows
        if windows and rnd.random() < 0.25:
            w = rnd.choice(windows)
            s_live.retire_window(w)
            s_copy.retire_window(w)
        else:
            ts = rnd.randrange(0, 80)
            calls_live: list[Any] = []
            calls_copy: list[Any] = []
            new = TimeWindow(ts, ts + rnd.randrange(1, 8))
            got = s_live.add_window(new, _recorder(calls_live))
            assert got == s_copy.add_window(new, _recorder(calls_copy))
            assert calls_live == calls_copy
        s_live.persist()
        s_copy.persist()
        assert live.items() == list(copies[key].items())
        assert backend.num_entries() == sum(1 for c in copies.values() if c)
        if rnd.random() < 0.2:
            snapshots.append((backend.snapshot_state(), {k: dict(c) for k, c in copies.items()}))
    for (_, per_key_group), expected in snapshots:
        got = {
            key: dict(raw)  # type: ignore[call-overload]
            for by_name in per_key_group.values()
            for key, _, raw in by_name["merging-window-set"]
        }
        assert got == {k: v for k, v in expected.items() if v}
