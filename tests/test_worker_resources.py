"""What a worker keeps across micro-batches lives in one WorkerResources, passed explicitly."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sparktide.core.state_backend import HashMapStateBackend
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state.factory import SubtaskState, create_keyed_state
from sparktide.spark.checkpoint_meta import Chain, SubtaskWrite
from sparktide.spark.worker_resources import (
    CacheStats,
    WarmCache,
    WarmKey,
    WarmState,
    WorkerResources,
    process_resources,
)


def _state(version: int) -> WarmState:
    written = SubtaskWrite(0, 0, f"v{version}", None, Chain(version))  # type: ignore[arg-type]
    return WarmState(version, written, None, {}, b"{}", b"{}")


def test_a_kept_state_is_taken_once_and_the_oldest_goes_beyond_the_limit() -> None:
    cache = WarmCache(limit=2)
    keys = [WarmKey("ckpt", None, "op", subtask, 2) for subtask in range(3)]
    for version, key in enumerate(keys):
        cache.keep(key, _state(version))
    assert len(cache) == 2
    assert cache.take(keys[0]) is None  # dropped: the oldest
    assert cache.take(keys[2]).version == 2  # type: ignore[union-attr]
    assert cache.take(keys[2]) is None  # taken: never handed out twice
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        WarmCache(limit=0)


def test_two_workers_share_nothing(tmp_path: Path) -> None:
    one, other = WorkerResources(str(tmp_path / "a")), WorkerResources(str(tmp_path / "b"))
    key = WarmKey("ckpt", None, "op", 0, 1)
    one.warm.keep(key, _state(1))
    one.stats.warm += 1
    assert other.warm.take(key) is None and other.stats == CacheStats()
    one.clear_warm()
    assert one.warm.take(key) is None and one.stats == CacheStats()


def test_a_registry_never_travels_unpickled_it_is_the_receiving_process_own(
    tmp_path: Path,
) -> None:
    mine = WorkerResources(str(tmp_path))
    assert pickle.loads(pickle.dumps(mine)) is process_resources()
    assert process_resources() is process_resources()


def test_closing_with_delete_copies_removes_the_local_copies_only(tmp_path: Path) -> None:
    resources = WorkerResources(str(tmp_path))
    slot = tmp_path / "location" / "op" / "0"
    for name in ("v3", "v4", "work-abc"):
        (slot / name).mkdir(parents=True)
    resources.close_databases()
    assert sorted(p.name for p in slot.iterdir()) == ["v3", "v4", "work-abc"]
    resources.close_databases(delete_copies=True)
    assert [p.name for p in slot.iterdir()] == ["work-abc"]


def test_a_database_for_a_heap_backend_is_refused() -> None:
    subtask = SubtaskState("op", 0, 128, KeyGroupRange(0, 127), lambda: 0)
    with pytest.raises(ValueError, match="only EmbeddedRocksDBStateBackend keeps its state"):
        create_keyed_state(HashMapStateBackend(), subtask, database=object())  # type: ignore[arg-type]
