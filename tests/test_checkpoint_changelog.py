"""Changelog checkpoints: a full snapshot every ``snapshot_every`` batches, changelogs between.

The store-level tests drive :class:`CheckpointStore` with a naive model of keyed state and
timers (the state a full snapshot would hold); the end-to-end test runs a streaming job with
changelogs and a rescale and compares it with a run that writes full snapshots only.
"""

from __future__ import annotations

import json
import os
import random
import zlib

import pytest

from sparktide.runtime.keygroups import (
    KeyGroupRange,
    assign_to_key_group,
    compute_key_group_range_for_operator_index,
)
from sparktide.spark.changelog import digests, flatten, rebuild
from sparktide.spark.checkpoint import CHECKPOINT_FORMAT_VERSION, CheckpointError, CheckpointStore
from sparktide.spark.checkpoint_meta import BatchCommit, Chain, JobFingerprint

MAXP = 16
META = {"count": {"kind": "value", "ttl": False}, "seen": {"kind": "list", "ttl": False}}
PARTS = {"valves": b"v", "watermarks": b"w"}


class Model:
    """Keyed state and timers as plain dicts: what a full snapshot holds."""

    def __init__(self, maxp: int = MAXP) -> None:
        self.maxp = maxp
        self.state: dict[tuple, object] = {}  # (name, key, ns) -> value
        self.timers: dict[tuple, int] = {}  # (service, domain, ts, key, ns) -> seq
        self.seq = 0

    def step(self, rng: random.Random, n_keys: int, ops: int) -> None:
        for _ in range(ops):
            key = f"k{rng.randrange(n_keys)}"
            op = rng.random()
            if op < 0.35:
                self.state[("count", key, None)] = rng.randrange(1000)
            elif op < 0.5:
                self.state.setdefault(("seen", key, "w1"), []).append(rng.randrange(9))
            elif op < 0.65:
                self.state.pop(("count", key, None), None)
                self.state.pop(("seen", key, "w1"), None)
            elif op < 0.85:
                item = ("user-timers", rng.randrange(2), rng.randrange(50), key, None)
                if item not in self.timers:
                    self.timers[item] = self.seq
                    self.seq += 1
            elif self.timers:
                self.timers.pop(rng.choice(sorted(self.timers, key=repr)))

    def flat(self, kgs: KeyGroupRange) -> dict:
        out: dict = {}
        for (name, key, ns), value in self.state.items():
            kg = assign_to_key_group(key, self.maxp)
            if kg in kgs:
                value = list(value) if isinstance(value, list) else value
                out.setdefault(kg, {})[(0, name, key, ns)] = value
        for (service, d, ts, key, ns), seq in self.timers.items():
            kg = assign_to_key_group(key, self.maxp)
            if kg in kgs:
                out.setdefault(kg, {})[(1, service, d, ts, key, ns)] = seq
        return out

    def snapshot(self, kgs: KeyGroupRange):
        return rebuild("op", self.maxp, kgs, META, self.flat(kgs))


def _write_batch(store, model, version, parallelism, warm, rng) -> None:
    previous = store.commit_info(version - 1) if version > 0 else None
    for i in range(parallelism):
        kgs = compute_key_group_range_for_operator_index(MAXP, parallelism, i)
        plan = store.plan_chain(previous, 0, i, parallelism, version)
        cached = warm.get((i, parallelism))
        if previous is None or plan.snapshot == version:
            prev_digests = {}
        elif cached is not None and cached[0] == version - 1 and rng.random() < 0.5:
            prev_digests = cached[1]  # as the worker cache would
        else:  # as a restore from disk would
            loaded = store.restore_range(previous, 0, i, MAXP, kgs)
            prev_digests = digests(loaded.flat)
        _, new = store.write_version(version, 0, i, plan, model.snapshot(kgs), prev_digests, PARTS)
        warm[(i, parallelism)] = (version, new)
    store.commit(version, BatchCommit(processing_time=version, parallelism={0: parallelism}))


def _restored(store, version, parallelism) -> dict:
    """The state of every key group at ``version``, read as subtasks of ``parallelism``."""
    info = store.commit_info(version)
    out: dict = {}
    for i in range(parallelism):
        kgs = compute_key_group_range_for_operator_index(MAXP, parallelism, i)
        loaded = store.restore_range(info, 0, i, MAXP, kgs)
        assert loaded.valves == b"v" and loaded.watermarks == b"w"
        out.update(loaded.flat)
    return out


@pytest.mark.parametrize("snapshot_every", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_snapshot_plus_changelogs_equals_the_full_state(tmp_path, snapshot_every, seed) -> None:
    rng = random.Random(seed * 10 + snapshot_every)
    store = CheckpointStore(str(tmp_path / "a"), JobFingerprint(), snapshot_every=snapshot_every)
    full = CheckpointStore(str(tmp_path / "b"), JobFingerprint(), snapshot_every=1)
    model = Model()
    warm: dict = {}
    parallelism = 2
    for version in range(9):
        if rng.random() < 0.25:
            parallelism = rng.choice([1, 2, 3])  # a restart with another parallelism
        model.step(rng, n_keys=40, ops=rng.randrange(0, 25))
        _write_batch(store, model, version, parallelism, warm, rng)
        _write_batch(full, model, version, parallelism, {}, rng)
        expected = model.flat(KeyGroupRange(0, MAXP - 1))
        for reader in (1, 2, 3):  # any parallelism reads it back
            assert _restored(store, version, reader) == expected
        assert _restored(full, version, parallelism) == expected
        for i in range(parallelism):  # what inspect reads: the materialized full snapshot
            _, parts = store.read_subtask(version, 0, i)
            _, ref = full.read_subtask(version, 0, i)
            from sparktide.runtime.snapshot import KeyedOperatorSnapshot as Snap

            mine, theirs = Snap.from_bytes(parts["keyed"]), Snap.from_bytes(ref["keyed"])
            assert flatten(mine) == flatten(theirs) and mine.state_meta == theirs.state_meta
        chains = store.commit_info(version).chains[0]
        assert all(len(c.changelogs) < snapshot_every for c in chains)


def _big_store(tmp_path, keys: int = 10_000):
    store = CheckpointStore(str(tmp_path / "ckpt"), JobFingerprint(), snapshot_every=10)
    model = Model(maxp=128)
    for k in range(keys):
        model.state[("count", f"k{k}", None)] = k
        model.timers[("user-timers", 0, 1_000 + k, f"k{k}", None)] = k
    model.seq = keys
    return store, model


def _write_one(store, model, version, new_digests):
    kgs = KeyGroupRange(0, 127)
    previous = store.commit_info(version - 1) if version else None
    plan = store.plan_chain(previous, 0, 0, 1, version)
    snap = rebuild("op", 128, kgs, META, model.flat(kgs))
    size, new = store.write_version(version, 0, 0, plan, snap, new_digests, PARTS)
    store.commit(version, BatchCommit(processing_time=0, parallelism={0: 1}))
    return size, new


def test_a_changelog_is_proportional_to_the_touched_entries(tmp_path) -> None:
    store, model = _big_store(tmp_path)
    full_size, d = _write_one(store, model, 0, {})
    for k in range(0, 10_000, 1_000):  # 10 of 10,000 keys: a new value and a new timer
        model.state[("count", f"k{k}", None)] = -k
        model.timers[("user-timers", 0, 50_000 + k, f"k{k}", None)] = model.seq
        model.seq += 1
    del model.state[("count", "k5", None)]
    log_size, _ = _write_one(store, model, 1, d)
    assert os.path.exists(store.changelog_path(1, 0, 0))
    assert not os.path.exists(store.subtask_path(1, 0, 0))
    assert log_size * 100 < full_size, (log_size, full_size)
    loaded = store.restore_range(store.commit_info(1), 0, 0, 128, KeyGroupRange(0, 127))
    assert loaded.flat == model.flat(KeyGroupRange(0, 127))


def test_a_corrupt_or_truncated_changelog_is_an_error_naming_the_file(tmp_path) -> None:
    store, model = _big_store(tmp_path, keys=200)
    _, d = _write_one(store, model, 0, {})
    model.state[("count", "k1", None)] = 77
    _write_one(store, model, 1, d)
    path = store.changelog_path(1, 0, 0)
    with open(path, "rb") as f:
        good = f.read()
    for bad in (good[:-2], good[:-1] + bytes([good[-1] ^ 0xFF])):
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(CheckpointError, match=r"sub-0\.log.*(truncated|corrupt)"):
            store.read_subtask(1, 0, 0)
    os.remove(path)
    with pytest.raises(CheckpointError, match=r"sub-0\.log: missing"):
        store.read_subtask(1, 0, 0)


def test_cleanup_keeps_every_file_a_retained_version_needs(tmp_path) -> None:
    rng = random.Random(3)
    store = CheckpointStore(str(tmp_path / "ckpt"), JobFingerprint(), snapshot_every=3)
    model = Model()
    states = []
    for version in range(8):
        model.step(rng, 30, 10)
        states.append(model.flat(KeyGroupRange(0, MAXP - 1)))
        _write_batch(store, model, version, 2, {}, rng)
    kept = sorted(int(n) for n in os.listdir(tmp_path / "ckpt" / "state"))
    # commits 5, 6, 7 remain: chains {3: [4, 5]}, {6: []}, {6: [7]}
    assert kept == [3, 4, 5, 6, 7]
    assert sorted(os.listdir(tmp_path / "ckpt" / "commits")) == ["5.json", "6.json", "7.json"]
    # killed between writing version 8 and committing it: the replay reloads version 7
    model.step(rng, 30, 10)
    info = store.commit_info(7)
    for i in range(2):
        plan = store.plan_chain(info, 0, i, 2, 8)
        kgs = compute_key_group_range_for_operator_index(MAXP, 2, i)
        store.write_version(8, 0, i, plan, model.snapshot(kgs), {}, PARTS)  # torn: wrong digests
    assert store.committed_version() == 7
    assert _restored(store, 7, 2) == states[7]
    _write_batch(store, model, 8, 2, {}, rng)  # the replay overwrites version 8
    assert _restored(store, 8, 3) == model.flat(KeyGroupRange(0, MAXP - 1))


def _fingerprint(op="window", uid="w", splits=3, maxp=128):
    return JobFingerprint.from_json(_fingerprint_json(op, uid, splits, maxp), "test")


def _fingerprint_json(op, uid, splits, maxp):
    return {
        "sources": [["flights", None, splits]],
        "stages": [
            {
                "operators": [["map", None, "m"], [op, uid, f"{op}-{uid}"]],
                "max_parallelism": maxp,
                "keyed": True,
            }
        ],
    }


def test_another_job_graph_is_refused_naming_the_difference(tmp_path) -> None:
    CheckpointStore(str(tmp_path), _fingerprint()).commit(0, BatchCommit(0, parallelism={}))
    cases = {
        "state of operator\\(s\\) this job does not have: 'window' \\(uid 'w'\\) of stage 0": {
            "op": "reduce",
            "uid": None,
        },
        "source 'flights' had 3 splits, now 4": {"splits": 4},
        "operator 'map' has max_parallelism 128 in the checkpoint vs 256 here": {"maxp": 256},
    }
    for message, change in cases.items():
        with pytest.raises(CheckpointError, match=message):
            CheckpointStore(str(tmp_path), _fingerprint(**change)).committed_version()
    assert CheckpointStore(str(tmp_path), _fingerprint()).committed_version() == 0


def test_a_commit_of_another_format_version_names_both_versions(tmp_path) -> None:
    store = CheckpointStore(str(tmp_path), None)
    newer = CHECKPOINT_FORMAT_VERSION + 1
    body = {"format_version": newer, "version": 0, "parallelism": {}, "fingerprint": None}
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    store.write(
        store.path("commits", "0.json"),
        json.dumps({"body": body, "crc32": zlib.crc32(encoded)}).encode("utf-8"),
    )
    expected = rf"format version {newer} is not supported.*version {CHECKPOINT_FORMAT_VERSION}"
    with pytest.raises(CheckpointError, match=expected):
        store.committed_version()


def test_snapshot_every_is_validated(tmp_path) -> None:
    for bad in (0, -1, 2.5, "3", True):
        with pytest.raises(ValueError, match="snapshot_every must be an int >= 1"):
            CheckpointStore(str(tmp_path), None, snapshot_every=bad)
    assert CheckpointStore(str(tmp_path), None).snapshot_every == 10


# ------------------------------------------------------------------------------ worker cache


def _alarm_job(spark, parallelism: int = 1):
    from sparktide.common import Row, Types
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark.executor import SparkExecutor

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    env.set_max_parallelism(128)
    event = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
    stream = env.from_collection([Row(key="a", ts=1, v=1)], type_info=event)
    stream.key_by(lambda r: r.key).process(_Alarm(), output_type=event).print()
    return SparkExecutor(env.get_stream_graph(), env).job()


def _alarm_class():
    from sparktide.common import Types
    from sparktide.datastream import KeyedProcessFunction
    from sparktide.datastream.state import ValueStateDescriptor

    class Alarm(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            self.count.update((self.count.value() or 0) + 1)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1_000)

    return Alarm


_Alarm = _alarm_class()


def test_the_worker_cache_serves_the_next_batch_but_never_a_replay(spark, tmp_path) -> None:
    from sparktide.runtime.execution.protocol import pack_entries
    from sparktide.spark.stream_job import StreamingJob
    from sparktide.spark.worker_resources import WorkerResources

    base = _alarm_job(spark)
    stage = base.plan.stages[-1]
    store = CheckpointStore(str(tmp_path / "ckpt"), JobFingerprint(), snapshot_every=3)
    maxp = stage.max_parallelism
    model = Model(maxp=maxp)
    for k in range(300):
        model.state[("count", f"k{k}", None)] = k
        model.timers[("user-timers", 0, 10_000 + k, f"k{k}", None)] = k
    meta = {"count": {"kind": "value", "ttl": False}}
    kgs = KeyGroupRange(0, maxp - 1)
    seeded = rebuild("op", maxp, kgs, meta, model.flat(kgs))
    plan = store.plan_chain(None, stage.index, 0, 1, 0)
    parts = {"valves": b"{}", "watermarks": b"{}"}  # JSON: no valve or watermark yet
    store.write_version(0, stage.index, 0, plan, seeded, {}, parts)
    store.commit(0, BatchCommit(processing_time=0, parallelism={stage.index: 1}))
    expected = flatten(seeded)
    worker = WorkerResources()  # one worker process's
    stats = worker.stats

    def run(version: int) -> None:
        previous = store.commit_info(version - 1)
        job = StreamingJob(base, store, version, version, version - 1, previous, {}, worker)
        job.run_stream_subtask(stage.index, 0, [pack_entries([])])

    def commit(version: int) -> None:
        store.commit(version, BatchCommit(processing_time=version, parallelism={stage.index: 1}))
        _, got = store.read_subtask(version, stage.index, 0)
        from sparktide.runtime.snapshot import KeyedOperatorSnapshot

        assert flatten(KeyedOperatorSnapshot.from_bytes(got["keyed"])) == expected

    run(1)  # a cold worker: from disk
    commit(1)
    run(2)  # the same worker, next batch: from memory
    commit(2)
    assert (stats.disk, stats.warm) == (1, 1)
    run(3)  # batch 3 writes but is not committed (the sink failed) ...
    assert (stats.disk, stats.warm) == (1, 2)
    run(3)  # ... its replay needs version 2, not the state the failed attempt left
    assert (stats.disk, stats.warm) == (2, 2)
    commit(3)
    original = store.write_version

    def failing(*args, **kwargs):
        raise OSError("disk full")

    store.write_version = failing  # batch 4 fails after the cache entry was taken
    with pytest.raises(OSError):
        run(4)
    assert (stats.disk, stats.warm) == (2, 3)
    store.write_version = original
    run(4)
    commit(4)
    assert (stats.disk, stats.warm) == (3, 3)  # its retry: from disk
    assert len(worker.warm) == 1  # batch 4 left its state for batch 5


# ------------------------------------------------------------------------------ end to end


def _write_inputs(directory, files: int, first: int = 0, seed: int = 11) -> None:
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    for f in range(files):
        rows = [
            {"key": f"k{rng.randrange(40)}", "ts": (first + f) * 3_000 + rng.randrange(2_500)}
            for _ in range(25)
        ]
        path = os.path.join(directory, f"part-{first + f:04d}.json")
        with open(path, "w") as out:
            out.write("\n".join(json.dumps({**r, "v": 1}) for r in rows) + "\n")
        os.utime(path, (1_700_000_000 + first + f, 1_700_000_000 + first + f))


def _run(spark, directory, ckpt, parallelism: int, snapshot_every: int) -> dict:
    from sparktide.common import Duration
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark.streaming import ForeachBatchSink

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    frame = (
        spark.readStream.schema("key string, ts long, v long")
        .option("maxFilesPerTrigger", 1)
        .json(str(directory))
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500))
    out: dict = {}

    def collect(df, batch_id):
        out[batch_id] = sorted(tuple(r) for r in df.collect())

    from sparktide.common import Types

    alarm = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
    stream = env.from_stream(frame, strategy, timestamp_column="ts")
    stream.key_by(lambda r: r.key).process(_Fired(), output_type=alarm).sink_to(
        ForeachBatchSink(collect)
    )
    env.execute(
        checkpoint_location=str(ckpt), trigger="available_now", snapshot_every=snapshot_every
    )
    return out


def _fired_class():
    from sparktide.common import Row

    class Fired(_Alarm):
        def on_timer(self, timestamp, ctx):
            yield Row(key=ctx.get_current_key(), ts=timestamp, v=self.count.value())

    return Fired


_Fired = _fired_class()


def _state_of(ckpt) -> dict:
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot

    store = CheckpointStore(str(ckpt))
    version = store.committed_version()
    info = store.commit_info(version)
    out: dict = {}
    for stage, p in info.parallelism.items():
        for i in range(p):
            _, parts = store.read_subtask(version, stage, i)
            out.update(flatten(KeyedOperatorSnapshot.from_bytes(parts["keyed"])))
    return out


def _inputs(directory) -> list[tuple[str, int]]:
    rows = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as f:
            rows.extend((r["key"], r["ts"]) for r in map(json.loads, f))
    return rows


def test_changelogs_and_a_rescale_keep_the_output_and_state_exact(spark, tmp_path) -> None:
    _write_inputs(tmp_path / "in", 2)
    first = _run(spark, tmp_path / "in", tmp_path / "ckpt", 2, snapshot_every=2)
    _write_inputs(tmp_path / "in", 1, first=2, seed=12)
    second = _run(spark, tmp_path / "in", tmp_path / "ckpt", 3, snapshot_every=2)
    assert sorted(first) == [0, 1] and sorted(second) == [2]
    # the model: a count per key and an event-time timer at ts + 1000 per record, fired
    # once the watermark (max ts - 500 - 1, at the end of each batch) reaches it
    rows = _inputs(tmp_path / "in")
    watermark = max(ts for _, ts in rows) - 501
    counts: dict = {}
    for key, _ in rows:
        counts[key] = counts.get(key, 0) + 1
    pending = {(ts + 1_000, key) for key, ts in rows if ts + 1_000 > watermark}
    fired = [row for b in sorted({**first, **second}) for row in {**first, **second}[b]]
    assert len(fired) == len({(ts + 1_000, key) for key, ts in rows}) - len(pending)
    state = _state_of(tmp_path / "ckpt")
    items = [item for per_kg in state.values() for item in per_kg.items()]
    assert {i[2]: v for i, v in items if i[0] == 0} == counts
    assert {(i[3], i[4]) for i, _ in items if i[0] == 1} == pending
    store = CheckpointStore(str(tmp_path / "ckpt"))
    assert store.commit_info(1).chains[0] == (Chain(0, (1,)),) * 2
    assert os.path.exists(tmp_path / "ckpt" / "state" / "1" / "stage-0" / "sub-1.log")
    # batch 2 rescaled from 2 to 3 subtasks (reading the changelogs): full snapshots
    assert store.commit_info(2).chains[0] == (Chain(2, ()),) * 3


def test_snapshot_every_is_validated_by_execute(spark, tmp_path) -> None:
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.spark.streaming import ForeachBatchSink

    os.makedirs(tmp_path / "in")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema("key string, ts long, v long").json(str(tmp_path / "in"))
    env.from_stream(frame).sink_to(ForeachBatchSink(lambda df, batch_id: None))
    with pytest.raises(ValueError, match="snapshot_every must be an int >= 1"):
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), snapshot_every=0)
    bounded = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    bounded.from_collection([1, 2]).print()
    with pytest.raises(ValueError, match="allow_non_restored_state apply to jobs reading"):
        bounded.execute(snapshot_every=3)


# ------------------------------------------------------------------ timers across restores


def _reminder_class():
    from sparktide.common import Types
    from sparktide.datastream import KeyedProcessFunction
    from sparktide.datastream.state import ValueStateDescriptor

    class Reminder(KeyedProcessFunction):
        """A count per key and one timer 1000 ms after its latest record (the old one goes)."""

        def open(self, runtime_context):
            descriptor = ValueStateDescriptor("count-and-timer", Types.PICKLED_BYTE_ARRAY())
            self.state = runtime_context.get_state(descriptor)

        def process_element(self, value, ctx):
            count, timer = self.state.value() or (0, None)
            if timer is not None:
                ctx.timer_service().delete_event_time_timer(timer)
            timer = ctx.timestamp() + 1_000
            ctx.timer_service().register_event_time_timer(timer)
            self.state.update((count + 1, timer))
            return iter(())

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), timestamp, self.state.value()[0]

    return Reminder


_Reminder = _reminder_class()


def _reminder_job(function=None):
    """The worker side of ``key_by(key).process(Reminder()).print()`` (no Spark needed), or of
    another keyed process ``function``."""
    from sparktide.common import Types
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.runtime.execution.planner import plan_job
    from sparktide.spark.placement import placement_keys
    from sparktide.spark.spark_job import CHUNK, FLUSH, SparkJob

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(1)
    event = Types.TUPLE([Types.STRING(), Types.LONG()])
    stream = env.from_collection([("k", 0)], type_info=event)
    stream.key_by(lambda r: r[0]).process(function or _Reminder()).print()
    plan = plan_job(env.get_stream_graph(), 1, 128)
    return SparkJob(plan, {}, None, None, {1: placement_keys(1)}, CHUNK, FLUSH)


def _entries(version: int, records: list[tuple[str, int]], watermark: int | None = None) -> list:
    """Exchange entries of one batch: ``(key, ts)`` records, then a watermark if given."""
    from sparktide.runtime.elements import StreamRecord, Watermark

    out: list = [
        ((version, 0, 0, i, 0), 0, 1, StreamRecord((k, ts), ts), k, assign_to_key_group(k, 128))
        for i, (k, ts) in enumerate(records)
    ]
    if watermark is not None:
        out.append(((version, 1, 0, len(records), 0), 0, 1, Watermark(watermark), None, None))
    return out


def _run_batch(job, store, version: int, entries: list, resources) -> list[str]:
    """Run and commit batch ``version`` of the job's single subtask in the worker whose
    registry is ``resources``; its printed lines."""
    import pickle

    from sparktide.runtime.execution.protocol import Shipment, pack_entries
    from sparktide.spark.stream_job import StreamingJob

    stage = job.plan.stages[-1]
    previous = store.commit_info(version - 1) if version > 0 else None
    worker = StreamingJob(
        job, store, version, version, max(version - 1, 0), previous, {}, resources
    )
    rows = worker.run_stream_subtask(stage.index, 0, [pack_entries(entries)])[0]
    store.commit(version, BatchCommit(processing_time=version, parallelism={stage.index: 1}))
    lines: list = []
    stages, payloads = rows["stage"].to_pylist(), rows["payload"].to_pylist()
    for stage_id, payload in zip(stages, payloads, strict=True):
        if stage_id == Shipment.PRINTED:
            lines.extend(pickle.loads(payload))
    return [line for _, line in sorted(lines)]


def _changelog_counts(store, version: int) -> dict[str, int]:
    """Puts and deletes of state entries and timers in the changelog of ``version``."""
    from sparktide.spark.changelog import decode_changes
    from sparktide.spark.checkpoint import unpack_parts

    path = store.changelog_path(version, 0, 0)
    _, parts = unpack_parts(store.read(path), path)
    counts = {"state puts": 0, "state deletes": 0, "timer puts": 0, "timer deletes": 0}
    for puts, deletes in decode_changes(parts, path).values():
        for item, _ in puts:
            counts[("state" if item[0] == 0 else "timer") + " puts"] += 1
        for item in deletes:
            counts[("state" if item[0] == 0 else "timer") + " deletes"] += 1
    return counts


def test_a_changelog_after_a_restore_holds_only_the_touched_timers_and_entries(tmp_path) -> None:
    from sparktide.spark.worker_resources import WorkerResources

    rng = random.Random(5)
    keys = [f"k{i}" for i in range(2_000)]
    latest = {k: rng.randrange(5_000) for k in keys}  # timers in another order than the keys
    batches = [[(k, latest[k]) for k in keys]]
    for _ in range(2):  # 1% of the keys per batch, each with a new timer among the old ones
        batch = []
        for k in rng.sample(keys, 20):
            ts = rng.choice([t for t in range(5_000) if t != latest[k]])
            latest[k] = ts
            batch.append((k, ts))
        batches.append(batch)
    job = _reminder_job()
    store = CheckpointStore(str(tmp_path / "ckpt"), JobFingerprint(), snapshot_every=10)
    printed = _run_batch(job, store, 0, _entries(0, batches[0]), WorkerResources())
    worker = WorkerResources()  # batch 1 restores from the checkpoint files, batch 2 from the cache
    printed += _run_batch(job, store, 1, _entries(1, batches[1]), worker)
    printed += _run_batch(job, store, 2, _entries(2, batches[2]), worker)
    assert (worker.stats.disk, worker.stats.warm) == (1, 1)
    touched = {"state puts": 20, "state deletes": 0, "timer puts": 20, "timer deletes": 20}
    assert _changelog_counts(store, 1) == touched
    assert _changelog_counts(store, 2) == touched
    # the last batch fires every timer, restored from the files again (another worker)
    printed += _run_batch(job, store, 3, _entries(3, [], watermark=10_000), WorkerResources())
    # the same records in one batch, without any restore
    whole = CheckpointStore(str(tmp_path / "whole"), JobFingerprint())
    records = [r for batch in batches for r in batch]
    expected = _run_batch(job, whole, 0, _entries(0, records, watermark=10_000), WorkerResources())
    assert len(expected) == len(keys) and printed == expected


def _subtask_state(store, version: int) -> tuple:
    """The chain of the single subtask at ``version`` and its state (flat view, valves)."""
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot

    chain, parts = store.read_subtask(version, 0, 0)
    return chain, flatten(KeyedOperatorSnapshot.from_bytes(parts["keyed"])), parts["valves"]


def test_an_older_warm_state_is_caught_up_by_the_changelogs_written_since(tmp_path) -> None:
    """Subtask batches that alternate between two workers: a worker holding an older version
    of the chain applies the changelogs the other wrote instead of reading the chain; every
    version's chain and state are those of a run that restores every batch from the
    checkpoint, and so is the output."""
    from sparktide.spark.worker_resources import WorkerResources

    rng = random.Random(11)
    keys = [f"k{i}" for i in range(300)]
    batches = [
        [(k, v * 1_000 + rng.randrange(1_500)) for k in rng.sample(keys, 40)] for v in range(10)
    ]
    job = _reminder_job()
    a, b = WorkerResources(), WorkerResources()
    schedule = [a, a, b, a, b, a, b, a, a, b]
    caught = CheckpointStore(str(tmp_path / "caught"), JobFingerprint(), snapshot_every=5)
    cold = CheckpointStore(str(tmp_path / "cold"), JobFingerprint(), snapshot_every=5)
    printed: dict[str, list[str]] = {"caught": [], "cold": []}
    for v, (batch, worker) in enumerate(zip(batches, schedule, strict=True)):
        entries = _entries(v, batch, watermark=v * 1_000)
        printed["caught"] += _run_batch(job, caught, v, entries, worker)
        printed["cold"] += _run_batch(job, cold, v, entries, WorkerResources())
        assert _subtask_state(caught, v) == _subtask_state(cold, v), v
    last = _entries(10, [], watermark=100_000)
    printed["caught"] += _run_batch(job, caught, 10, last, b)
    printed["cold"] += _run_batch(job, cold, 10, last, WorkerResources())
    assert printed["caught"] == printed["cold"] and len(printed["cold"]) > 300
    # a: 1 as left, then caught up at 3 (from 1), 5 (from 3; a full snapshot planned),
    # 7 (from 5, the new chain's snapshot); 8 as left. b: from disk at 2 and at 6 (its
    # version 4 is in the chain before 5's snapshot), caught up at 4 and 9, 10 as left
    assert (a.stats.warm, a.stats.caught_up, a.stats.disk) == (5, 3, 0)
    assert (b.stats.warm, b.stats.caught_up, b.stats.disk) == (3, 2, 2)


def test_a_worker_that_runs_the_next_batch_adopts_the_live_state(tmp_path) -> None:
    """Consecutive batches of a subtask in one worker: the operator of each hands its state
    tables and timer queues to the next (no snapshot, no restore between them), and changelogs
    are diffed from them; every version's chain and state, and the output, are those of a run
    that restores every batch from the checkpoint."""
    from sparktide.runtime.live_state import LiveKeyedState
    from sparktide.spark.worker_resources import WorkerResources

    rng = random.Random(13)
    keys = [f"k{i}" for i in range(200)]
    batches = [
        [(k, v * 1_000 + rng.randrange(1_500)) for k in rng.sample(keys, 30)] for v in range(8)
    ]
    job = _reminder_job()
    worker = WorkerResources()
    live = CheckpointStore(str(tmp_path / "live"), JobFingerprint(), snapshot_every=4)
    cold = CheckpointStore(str(tmp_path / "cold"), JobFingerprint(), snapshot_every=4)
    printed: dict[str, list[str]] = {"live": [], "cold": []}
    tables = []
    for v, batch in enumerate([*batches, []]):
        entries = _entries(v, batch, watermark=v * 1_000 if batch else 100_000)
        printed["live"] += _run_batch(job, live, v, entries, worker)
        printed["cold"] += _run_batch(job, cold, v, entries, WorkerResources())
        assert _subtask_state(live, v) == _subtask_state(cold, v), v
        [kept] = worker.warm.kept()
        assert isinstance(kept.snapshot, LiveKeyedState)
        tables.append(kept.snapshot.tables["count-and-timer"])
    assert printed["live"] == printed["cold"] and len(printed["cold"]) > 150
    assert all(t is tables[0] for t in tables)
    assert (worker.stats.warm, worker.stats.caught_up, worker.stats.disk) == (8, 0, 0)


def _late_state_class():
    from sparktide.common import Types
    from sparktide.datastream.state import ValueStateDescriptor

    class LateState(_Reminder):
        """The Reminder, and from event time 3000 on a second state, first used then."""

        def open(self, runtime_context):
            super().open(runtime_context)
            self.context = runtime_context

        def process_element(self, value, ctx):
            if ctx.timestamp() >= 3_000:
                late = self.context.get_state(ValueStateDescriptor("late", Types.LONG()))
                late.update((late.value() or 0) + 1)
            return super().process_element(value, ctx)

    return LateState


def test_a_live_state_caught_up_by_a_changelog_of_a_state_it_lacks(tmp_path) -> None:
    """A worker's live state of version 1 is caught up by the changelog of version 2, written
    by another worker whose batch first used a second state: the catch-up goes on with the
    state's flat view, and every version and the output are those restored from the files."""
    from sparktide.spark.worker_resources import WorkerResources

    rng = random.Random(17)
    keys = [f"k{i}" for i in range(100)]
    batches = [
        [(k, v * 1_000 + rng.randrange(1_500)) for k in rng.sample(keys, 30)] for v in range(4)
    ]
    job = _reminder_job(_late_state_class()())
    a, b = WorkerResources(), WorkerResources()
    caught = CheckpointStore(str(tmp_path / "caught"), JobFingerprint(), snapshot_every=10)
    cold = CheckpointStore(str(tmp_path / "cold"), JobFingerprint(), snapshot_every=10)
    printed: dict[str, list[str]] = {"caught": [], "cold": []}
    for v, (batch, worker) in enumerate(zip([*batches, []], [a, a, b, a, a], strict=True)):
        entries = _entries(v, batch, watermark=v * 1_000 if batch else 100_000)
        printed["caught"] += _run_batch(job, caught, v, entries, worker)
        printed["cold"] += _run_batch(job, cold, v, entries, WorkerResources())
        assert _subtask_state(caught, v) == _subtask_state(cold, v), v
    assert printed["caught"] == printed["cold"] and len(printed["cold"]) > 70
    flat = _subtask_state(caught, 4)[1]
    assert any(item[:2] == (0, "late") for items in flat.values() for item in items)
    assert (a.stats.warm, a.stats.caught_up, b.stats.disk) == (3, 1, 1)


def test_a_value_that_changes_type_but_not_equality_is_a_put() -> None:
    """An int is its own digest; 1.0, True and a bigger int are not the int 1."""
    from sparktide.spark.changelog import diff

    item = (0, "n", "k", None)
    for now in (1.0, True, 2**70, "1", (1,)):
        before = digests({3: {item: 1}})
        assert diff(before, {3: {item: now}}) == {3: ([(item, now)], [])}, now
        assert before == digests({3: {item: now}})
    assert diff(digests({3: {item: 1}}), {3: {item: 1}}) == {}
