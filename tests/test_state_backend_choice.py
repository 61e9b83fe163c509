"""Choosing the state backend: PyFlink's config objects, ``env.set_state_backend``, the
configuration key, and the way the choice reaches every keyed operator subtask (one factory,
the RocksDB directories, the paths that read heap internals)."""

from __future__ import annotations

import gc
import os
import pickle
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.state_backend import StateBackendKind, state_backend_from_config
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from sparktide.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    PredefinedOptions,
    StateBackend,
)
from sparktide.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from sparktide.runtime.execution.planner import plan_job
from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.runtime.state.backend import HeapKeyedStateBackend
from sparktide.runtime.state.factory import (
    ROCKSDB_DIR_PREFIX,
    KeyedState,
    SubtaskState,
    create_keyed_state,
)
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend
from sparktide.runtime.timers.queue_factory import HeapTimerQueueFactory, RocksDBTimerQueueFactory
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

# ------------------------------------------------------------------------------------------------
# The config objects


def test_pyflink_methods_record_their_settings() -> None:
    b = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    assert b.kind is StateBackendKind.ROCKSDB and b.is_incremental_checkpoints_enabled()
    assert not EmbeddedRocksDBStateBackend().is_incremental_checkpoints_enabled()
    assert not EmbeddedRocksDBStateBackend(False).is_incremental_checkpoints_enabled()
    b.set_db_storage_paths("/tmp/x", Path("/tmp/y"), "file:///tmp/z")
    assert b.get_db_storage_paths() == ["/tmp/x", "/tmp/y", "/tmp/z"]
    assert [b.db_storage_path_for(i) for i in range(4)] == ["/tmp/x", "/tmp/y", "/tmp/z", "/tmp/x"]
    b.set_db_storage_paths()  # none: back to temporary directories
    assert b.get_db_storage_paths() == [] and b.db_storage_path_for(0) is None
    assert b.get_predefined_options() is PredefinedOptions.DEFAULT
    b.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    assert b.get_predefined_options() is PredefinedOptions.FLASH_SSD_OPTIMIZED
    assert b.get_number_of_transfer_threads() == 4
    b.set_number_of_transfer_threads(8)
    assert b.get_number_of_transfer_threads() == 8
    assert b.get_options() is None
    assert HashMapStateBackend().kind is StateBackendKind.HASHMAP
    assert HashMapStateBackend() == HashMapStateBackend() != EmbeddedRocksDBStateBackend()


def test_bad_settings_say_what_is_wrong() -> None:
    b = EmbeddedRocksDBStateBackend()
    with pytest.raises(TypeError, match="enable_incremental_checkpointing must be None, True"):
        EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"paths\[1\] must be a non-empty str"):
        b.set_db_storage_paths("/tmp/a", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a local directory"):
        b.set_db_storage_paths("s3://bucket/rocks")
    with pytest.raises(TypeError, match="must be a PredefinedOptions"):
        b.set_predefined_options("DEFAULT")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="an int >= 1"):
        b.set_number_of_transfer_threads(0)
    with pytest.raises(NotImplementedError, match=r"Java RocksDBOptionsFactory.*not by a JVM"):
        b.set_options("org.example.MyOptions")
    with pytest.raises(NotImplementedError, match="wraps a Java state backend"):
        CustomStateBackend(object())


def test_a_copy_is_independent_and_backends_pickle() -> None:
    b = EmbeddedRocksDBStateBackend(True)
    b.set_db_storage_paths("/tmp/a")
    c = b.copy()
    assert c == b and c is not b
    b.set_db_storage_paths("/tmp/b")
    assert c.get_db_storage_paths() == ["/tmp/a"] and c != b
    assert pickle.loads(pickle.dumps(c)) == c


# ------------------------------------------------------------------------------------------------
# The environment


def test_environment_default_set_and_get() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    assert env.get_state_backend() == HashMapStateBackend()
    rocks = EmbeddedRocksDBStateBackend()
    assert env.set_state_backend(rocks) is env
    assert env.get_state_backend() is rocks
    with pytest.raises(TypeError, match="state_backend must be a StateBackend, got str"):
        env.set_state_backend("rocksdb")  # type: ignore[arg-type]


def test_configuration_key_chooses_the_backend() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        {
            "state.backend.type": "rocksdb",
            "state.backend.rocksdb.localdir": "/tmp/a,/tmp/b",
            "execution.checkpointing.incremental": "true",
        },
        runtime="local",
    )
    backend = env.get_state_backend()
    assert isinstance(backend, EmbeddedRocksDBStateBackend)
    assert backend.get_db_storage_paths() == ["/tmp/a", "/tmp/b"]
    assert backend.is_incremental_checkpoints_enabled()

    class Configuration:  # PyFlink's Configuration has to_dict()
        def to_dict(self) -> dict[str, str]:
            return {"state.backend.type": "hashmap", "pipeline.name": "ignored"}

    assert env.configure(Configuration()).get_state_backend() == HashMapStateBackend()
    assert env.configure({"pipeline.name": "x"}).get_state_backend() == HashMapStateBackend()
    with pytest.raises(ValueError, match="'hashmap' or 'rocksdb', got 'forst'"):
        env.configure({"state.backend.type": "forst"})
    with pytest.raises(ValueError, match="must be 'true' or 'false'"):
        state_backend_from_config(
            {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "maybe"}
        )
    with pytest.raises(TypeError, match="configuration must be a dict"):
        env.configure(["state.backend.type"])


def test_environment_variable_gives_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKTIDE_STATE_BACKEND", "rocksdb")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    assert env.get_state_backend().kind is StateBackendKind.ROCKSDB
    assert OperatorSetup().state_backend.kind is StateBackendKind.ROCKSDB
    monkeypatch.setenv("SPARKTIDE_STATE_BACKEND", "disk")
    with pytest.raises(ValueError, match="SPARKTIDE_STATE_BACKEND must be 'hashmap' or 'rocksdb'"):
        StreamExecutionEnvironment.get_execution_environment(runtime="local")


def test_the_plan_takes_a_copy_and_pickles() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    rocks = EmbeddedRocksDBStateBackend()
    env.set_state_backend(rocks)
    env.from_collection([1, 2]).key_by(lambda v: v).print()
    plan = plan_job(env.get_stream_graph(), 2, None, env.get_state_backend())
    rocks.set_db_storage_paths("/tmp/later")  # too late for a job already planned
    assert plan.state_backend == EmbeddedRocksDBStateBackend()
    assert plan.state_backend is not rocks
    assert pickle.loads(pickle.dumps(plan.state_backend)) == plan.state_backend
    assert plan_job(env.get_stream_graph(), 2, None, HashMapStateBackend()).state_backend == (
        HashMapStateBackend()
    )
    with pytest.raises(TypeError, match="state_backend must be a StateBackend"):
        OperatorSetup(state_backend="heap")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# The factory


def _subtask(index: int = 0) -> SubtaskState:
    return SubtaskState("op", index, 128, KeyGroupRange(0, 127), lambda: 0)


def test_the_factory_builds_each_backend_with_its_timer_queues(tmp_path: Path) -> None:
    heap = create_keyed_state(HashMapStateBackend(), _subtask())
    assert isinstance(heap.backend, HeapKeyedStateBackend)
    assert isinstance(heap.queue_factory, HeapTimerQueueFactory) and heap.directory is None
    heap.close()
    config = EmbeddedRocksDBStateBackend()
    config.set_db_storage_paths(str(tmp_path / "a"), str(tmp_path / "b"))
    built = [create_keyed_state(config, _subtask(i)) for i in range(3)]
    for i, state in enumerate(built):
        assert isinstance(state.backend, RocksDBKeyedStateBackend)
        assert isinstance(state.queue_factory, RocksDBTimerQueueFactory)
        assert state.directory is not None
        where = Path(state.directory)
        assert where.parent == tmp_path / "ab"[i % 2]
        assert where.name.startswith(ROCKSDB_DIR_PREFIX)
    assert len({s.directory for s in built}) == 3  # two subtasks never share a database
    for state in built:
        state.close()
        state.close()  # idempotent
        assert state.directory is not None and not os.path.exists(state.directory)
    with pytest.raises(TypeError, match="the state backend must be a StateBackend"):
        create_keyed_state("rocksdb", _subtask())  # type: ignore[arg-type]


def test_a_temporary_directory_goes_with_its_subtask() -> None:
    state: KeyedState | None = create_keyed_state(EmbeddedRocksDBStateBackend(), _subtask())
    assert state is not None and state.directory is not None
    where = Path(state.directory)
    assert where.parent == Path(tempfile.gettempdir()) and where.name.startswith(ROCKSDB_DIR_PREFIX)
    state.backend.dispose()
    state.queue_factory.dispose()
    state = None  # never closed (a failed run): the files still go
    gc.collect()
    assert not where.exists()


def test_operators_close_their_store(tmp_path: Path) -> None:
    config = EmbeddedRocksDBStateBackend()
    config.set_db_storage_paths(str(tmp_path))
    op = WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(lambda a, b: a + b)
    harness = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v % 3)
    harness.setup_info = OperatorSetup(state_backend=config)
    op.setup(harness.output, harness.processing_time_service, harness.setup_info, lambda v: v % 3)
    assert isinstance(op.keyed_state_backend, RocksDBKeyedStateBackend)
    assert len(list(tmp_path.iterdir())) == 1
    harness.open()
    for v in range(20):
        harness.process_element(v, v)
    harness.process_watermark(30)
    assert sorted(harness.extract_output_values()) == sorted(
        [0 + 3 + 6 + 9, 1 + 4 + 7, 2 + 5 + 8, 12 + 15 + 18, 10 + 13 + 16 + 19, 11 + 14 + 17]
    )
    harness.close()
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# Paths that read heap internals


def _window_harness(builder: Any) -> KeyedOneInputStreamOperatorTestHarness:
    harness = KeyedOneInputStreamOperatorTestHarness(builder, lambda v: v[0])
    harness.open()
    return harness


def test_the_window_fast_path_only_runs_on_the_heap(state_backend: str) -> None:
    builder = WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    )
    harness = _window_harness(builder)
    assert builder.runs_fast_path == (state_backend == "hashmap")
    for i in range(30):
        harness.process_element(("k", i), i)
    harness.process_watermark(100)
    assert harness.extract_output_values() == [("k", 45), ("k", 145), ("k", 245)]
    harness.close()


def test_session_windows_merge_on_both_backends(state_backend: str) -> None:
    builder = WindowOperatorBuilder(EventTimeSessionWindows.with_gap(5)).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    )
    harness = _window_harness(builder)
    for ts in [1, 3, 20, 8, 24, 40, 6]:
        harness.process_element(("k", ts), ts)
    harness.process_watermark(100)
    assert harness.extract_output_values() == [("k", 1 + 3 + 8 + 6), ("k", 44), ("k", 40)]
    harness.close()


def test_a_snapshot_of_one_backend_restores_on_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def run(backend: str, values: list[int], snapshot: Any = None) -> tuple[list[Any], Any]:
        monkeypatch.setenv("SPARKTIDE_STATE_BACKEND", backend)
        builder = WindowOperatorBuilder(TumblingEventTimeWindows.of(10)).reduce(
            lambda a, b: (a[0], a[1] + b[1])
        )
        harness = KeyedOneInputStreamOperatorTestHarness(builder, lambda v: v[0])
        if snapshot is not None:
            harness.initialize_state(snapshot)
        harness.open()
        for v in values:
            harness.process_element((f"k{v % 4}", v), v)
        harness.process_watermark(max(values) - 5)
        out = harness.extract_output_values()
        snap = harness.snapshot()
        harness.close()
        return out, snap

    first, second = list(range(0, 25)), list(range(25, 60))
    expected = run("hashmap", first)[0] + run("hashmap", second, run("hashmap", first)[1])[0]
    for a, b in [("hashmap", "rocksdb"), ("rocksdb", "hashmap"), ("rocksdb", "rocksdb")]:
        out, snap = run(a, first)
        assert out + run(b, second, snap)[0] == expected, (a, b)


# ------------------------------------------------------------------------------------------------
# Jobs: the same output on both backends


class _Tally(KeyedProcessFunction):
    """Value, list and map state and an event-time timer per key."""

    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", None))
        self.seen = ctx.get_list_state(ListStateDescriptor("seen", None))
        self.last = ctx.get_map_state(MapStateDescriptor("last", None, None))

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, v = value
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        self.seen.add(v)
        self.last.put(v % 3, v)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 7)
        yield key, n

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        seen = list(self.seen.get())
        yield ctx.get_current_key(), timestamp, sum(seen), sorted(self.last.items())
        if len(seen) > 3:
            self.seen.clear()
            self.count.clear()


def _job(
    data: list[tuple[int, int]],
    backend: StateBackend,
    parallelism: int,
    every: int | None,
    runtime: str = "local",
    windows: bool = True,
) -> list[Any]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism).set_state_backend(backend)
    env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda e, _: e[1]
    )
    stream = env.from_collection(data).assign_timestamps_and_watermarks(strategy)
    keyed = stream.key_by(lambda e: e[0])
    tallies = keyed.process(_Tally())
    if not windows:
        return list(tallies.execute_and_collect())
    windows = (
        keyed.window(TumblingEventTimeWindows.of(5))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda e: ("window", e))
    )
    sessions = (
        keyed.window(EventTimeSessionWindows.with_gap(3))
        .reduce(lambda a, b: (a[0], max(a[1], b[1])))
        .map(lambda e: ("session", e))
    )
    return list(tallies.union(windows, sessions).execute_and_collect())


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    parallelism=st.sampled_from([1, 3]),
    every=st.sampled_from([None, 4]),
)
def test_jobs_give_the_same_output_on_both_backends(
    seed: int, parallelism: int, every: int | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rng = random.Random(seed)
    ts = 0
    data = []
    for _ in range(rng.randint(5, 40)):
        ts += rng.randint(0, 3)
        data.append((rng.randint(0, 6), ts))
    shm = Path("/dev/shm")  # databases open ~10x faster in memory (see conftest.MEMORY_DISK)
    where = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path_factory.mktemp("rocks")
    rocks = EmbeddedRocksDBStateBackend()
    rocks.set_db_storage_paths(str(where))
    heap = _job(data, HashMapStateBackend(), parallelism, every)
    assert _job(data, rocks, parallelism, every) == heap
    assert list(where.iterdir()) == []  # every subtask deleted its database
    where.rmdir()


def test_a_storage_path_that_cannot_be_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    config = EmbeddedRocksDBStateBackend()
    config.set_db_storage_paths(str(blocker / "rocks"))
    with pytest.raises(RuntimeError, match=r"cannot create the RocksDB storage path .*writable"):
        create_keyed_state(config, _subtask())


def test_spark_workers_build_the_backend_of_the_plan(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(7)
    data = sorted(((rng.randint(0, 9), rng.randint(0, 60)) for _ in range(60)), key=lambda e: e[1])
    rocks = EmbeddedRocksDBStateBackend()
    rocks.set_db_storage_paths(str(tmp_path))
    expected = _job(data, HashMapStateBackend(), 2, None, windows=False)
    assert _job(data, rocks, 2, None, runtime="spark", windows=False) == expected
    assert list(tmp_path.iterdir()) == []  # the workers' subtasks deleted their databases
