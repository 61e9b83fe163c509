"""The typed checkpoint metadata: every value survives its JSON form unchanged, and reading
refuses an unknown format version (naming it) and a missing or mistyped field (naming the file
and the field) with a CheckpointError, never a KeyError or a half-read manifest."""

from __future__ import annotations

import json

import pytest

from sparktide.common.watermark_strategy import (
    BoundedOutOfOrdernessWatermarks,
    ListWatermarkOutput,
    PunctuatedWatermarks,
    WatermarkGenerator,
    WatermarksWithIdleness,
)
from sparktide.core.state_backend import StateBackendKind
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_format import (
    CHECKPOINT_FORMAT_VERSION,
    MIGRATED_FORMAT_VERSIONS,
    CheckpointError,
)
from sparktide.spark.checkpoint_meta import (
    BatchCommit,
    Chain,
    CommitManifest,
    FileRecord,
    JobFingerprint,
    OperatorRef,
    OperatorWatermarks,
    SourceRef,
    SplitState,
    StageFingerprint,
)
from sparktide.spark.split_state import apply_generator_state, capture_generator_state

WHERE = "ckpt/commits/3.json"


def _manifest() -> CommitManifest:
    fingerprint = JobFingerprint(
        (SourceRef("flights", None, 2), SourceRef("alerts", "a", 1)),
        (
            StageFingerprint(
                (OperatorRef("Window", "w", "uid:w"), OperatorRef("map", None, "map-1")),
                128,
                True,
            ),
            StageFingerprint((OperatorRef("sink", None, "sink-0"),), 64, False),
        ),
    )
    record = FileRecord("blake2b:00", 10, 3, "uid:w", 0, 1, (64, 127), "changelog")
    return CommitManifest(
        version=3,
        processing_time=1_700_000_000_000,
        parallelism={0: 2, 1: 1},
        chains={0: (Chain(2), Chain(1, (2, 3))), 1: (Chain(3),)},
        files={"state/3/stage-0/sub-1.log": record},
        fingerprint=fingerprint,
        spark_batch=7,
        last_spark_batch=7,
        metrics={"records": 12, "split_watermarks": {"0": 5, "1": "idle"}},
    )


def _through_json(value: object) -> object:
    return json.loads(json.dumps(value))


def test_a_manifest_survives_its_json_form() -> None:
    manifest = _manifest()
    raw = _through_json(manifest.to_json())
    assert raw["format_version"] == CHECKPOINT_FORMAT_VERSION
    assert raw["chains"]["0"][1] == {"snapshot": 1, "changelogs": [2, 3], "backend": "hashmap"}
    assert raw["files"]["state/3/stage-0/sub-1.log"]["key_groups"] == [64, 127]
    assert CommitManifest.from_json(raw, WHERE) == manifest
    assert manifest.chain(0, 1) == Chain(1, (2, 3)) and manifest.chain(0, 2) is None


def test_every_part_survives_its_json_form() -> None:
    fingerprint = _manifest().fingerprint
    assert fingerprint is not None
    assert JobFingerprint.from_json(_through_json(fingerprint.to_json()), WHERE) == fingerprint
    state = SplitState(watermark=-5, idle=True, seq=9, records=0, generator=b"\x80\x05N.")
    assert SplitState.from_bytes(state.to_bytes(), "split 0") == state
    marks = {
        "uid:w": OperatorWatermarks(12_499, {"window-timers": 12_499}),
        "m": OperatorWatermarks(3),
    }
    assert OperatorWatermarks.decode(OperatorWatermarks.encode(marks), "sub-0") == marks


@pytest.mark.parametrize("version", [1, min(MIGRATED_FORMAT_VERSIONS) - 1, 99, None, "3"])
def test_an_unknown_format_version_is_refused_naming_it(version) -> None:
    raw = {**_manifest().to_json(), "format_version": version}
    if version is None:
        del raw["format_version"]
    with pytest.raises(CheckpointError) as info:
        CommitManifest.from_json(raw, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE)
    assert f"format version {version} is not supported" in message
    assert f"reads version {CHECKPOINT_FORMAT_VERSION}" in message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda raw: raw.pop("processing_time"), "'processing_time' is missing"),
        (lambda raw: raw.update(version="3"), "'version' must be an int, got '3'"),
        (lambda raw: raw["parallelism"].update({"0": 2.5}), "'parallelism.0' must be an int"),
        (lambda raw: raw["parallelism"].update({"x": 1}), "'parallelism' must be an object"),
        (lambda raw: raw["chains"]["0"][1].pop("snapshot"), "'chains.0[1].snapshot' is missing"),
        (
            lambda raw: raw["chains"]["0"][1].update(changelogs=[2, "3"]),
            "'chains.0[1].changelogs' must be a list of ints",
        ),
        (
            lambda raw: raw["files"]["state/3/stage-0/sub-1.log"].pop("digest"),
            "'files.state/3/stage-0/sub-1.log.digest' is missing",
        ),
        (
            lambda raw: raw["files"]["state/3/stage-0/sub-1.log"].update(key_groups=[1]),
            "'files.state/3/stage-0/sub-1.log.key_groups' must be [start, end] or null",
        ),
        (
            lambda raw: raw["fingerprint"]["stages"][0]["operators"].append(["x", 1]),
            "'fingerprint.stages[0].operators[2]' must be [name, uid, identity]",
        ),
        (
            lambda raw: raw["fingerprint"]["sources"][0].pop(),
            "'fingerprint.sources[0]' must be [name, uid, splits]",
        ),
        (lambda raw: raw["fingerprint"]["stages"][1].pop("keyed"), "stages[1].keyed' is missing"),
        (lambda raw: raw.update(metrics=[]), "'metrics' must be a JSON object"),
        (lambda raw: raw.update(spark_batch=True), "'spark_batch' must be an int or null"),
    ],
)
def test_a_missing_or_mistyped_field_is_refused_naming_it(change, field) -> None:
    raw = _through_json(_manifest().to_json())
    change(raw)
    with pytest.raises(CheckpointError) as info:
        CommitManifest.from_json(raw, WHERE)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: field ") and field in message
    assert "restore the directory from a backup or start from an empty one" in message


def test_a_split_state_or_watermarks_part_with_a_bad_field_is_refused() -> None:
    from sparktide.spark.checkpoint_format import pack_parts

    with pytest.raises(CheckpointError, match=r"split 3: field 'idle' must be a bool, got 1"):
        SplitState.from_bytes(
            pack_parts({}, {"watermark": 1, "idle": 1, "seq": 0, "records": 0}), "split 3"
        )
    with pytest.raises(CheckpointError, match=r"sub-0: field 'watermarks.op' must be \[watermark"):
        OperatorWatermarks.decode(b'{"op": [1]}', "sub-0")


def test_the_store_commits_and_reads_typed_manifests(tmp_path) -> None:
    fingerprint = _manifest().fingerprint
    store = CheckpointStore(str(tmp_path), fingerprint, snapshot_every=3)
    written = store.commit(0, BatchCommit(processing_time=5, parallelism={0: 2}, spark_batch=0))
    assert store.commit_info(0) == written
    assert written.chains == {0: (Chain(0), Chain(0))}
    assert (written.fingerprint, written.last_spark_batch) == (fingerprint, None)
    store.commit(1, BatchCommit(processing_time=6, parallelism={0: 2}, last_spark_batch=0))
    assert store.commit_info(1).chains[0] == (Chain(0, (1,)),) * 2


# ------------------------------------------------------------------ watermark generator state


def test_built_in_generators_carry_exactly_their_state() -> None:
    now = [0]
    out = ListWatermarkOutput()
    old = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(10), 100, lambda: now[0])
    old.on_event(None, 500, out)
    old.on_periodic_emit(out)
    now[0] = 50
    old.on_periodic_emit(out)  # quiet since 50
    assert old.snapshot_state() == (1, 1, 50, False, 500)
    later = [200]
    fresh = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(10), 100, lambda: later[0])
    apply_generator_state(fresh, capture_generator_state(old))
    assert fresh.snapshot_state() == old.snapshot_state()
    fresh.on_periodic_emit(out)  # 150 ms quiet by the fresh generator's own clock: idle
    assert fresh.is_idle()
    assert PunctuatedWatermarks(lambda e: None).snapshot_state() is None


def test_a_users_generator_gets_its_data_attributes_back_by_default() -> None:
    class Clock:
        def current_processing_time(self) -> int:
            return 0

    class Counting(WatermarkGenerator):
        def __init__(self, clock) -> None:
            self.clock = clock
            self.seen = 0
            self.inner = BoundedOutOfOrdernessWatermarks(0)
            self.emit = lambda output: None

        def on_event(self, event, event_timestamp, output) -> None:
            self.seen += 1
            self.inner.on_event(event, event_timestamp, output)

    old = Counting(Clock())
    old.on_event(None, 42, ListWatermarkOutput())
    clock = Clock()
    fresh = Counting(clock)
    apply_generator_state(fresh, capture_generator_state(old))
    assert fresh.seen == 1 and fresh.inner.max_timestamp == 42
    assert fresh.clock is clock  # clocks and functions stay the fresh generator's


def test_a_duck_typed_generator_gets_its_data_attributes_back() -> None:
    class Highest:  # not a WatermarkGenerator subclass: on_event and on_periodic_emit only
        def __init__(self) -> None:
            self.highest = 0

        def on_event(self, event, event_timestamp, output) -> None:
            self.highest = max(self.highest, event_timestamp)

        def on_periodic_emit(self, output) -> None:
            output.emit_watermark(self.highest)

    old = Highest()
    old.on_event(None, 7, ListWatermarkOutput())
    fresh = Highest()
    inner = WatermarksWithIdleness(fresh, 100, lambda: 0)
    outer = WatermarksWithIdleness(old, 100, lambda: 0)
    apply_generator_state(inner, capture_generator_state(outer))
    assert fresh.highest == 7


# ------------------------------------------------------------------------- state backends


def test_chains_record_their_backend_and_a_format_4_manifest_reads_as_heap_chains() -> None:
    rocks = Chain(2, (3,), StateBackendKind.ROCKSDB)
    manifest = CommitManifest(
        version=3,
        processing_time=0,
        parallelism={0: 2},
        chains={0: (Chain(3), rocks)},
        files={},
        fingerprint=None,
    )
    raw = _through_json(manifest.to_json())
    assert [c["backend"] for c in raw["chains"]["0"]] == ["hashmap", "rocksdb"]
    assert CommitManifest.from_json(raw, WHERE) == manifest
    # the previous format named no backend: every chain was on the heap
    old = {**json.loads(json.dumps(raw)), "format_version": 4}
    for chain in old["chains"]["0"]:
        del chain["backend"]
    migrated = CommitManifest.from_json(old, WHERE)
    assert {c.backend for c in migrated.chains[0]} == {StateBackendKind.HASHMAP}
    assert migrated.chain(0, 1) == Chain(2, (3,))
    # the current format must name it, and name a known one
    with pytest.raises(CheckpointError, match=r"field 'chains.0\[0\].backend' is missing"):
        CommitManifest.from_json({**old, "format_version": CHECKPOINT_FORMAT_VERSION}, WHERE)
    raw["chains"]["0"][1]["backend"] = "leveldb"
    with pytest.raises(CheckpointError, match=r"must be one of 'hashmap', 'rocksdb', got"):
        CommitManifest.from_json(raw, WHERE)


@pytest.mark.parametrize("switch", [False, True])
def test_a_switch_of_backend_starts_a_new_chain(tmp_path, switch) -> None:
    info = CommitManifest(
        version=4,
        processing_time=0,
        parallelism={0: 1},
        chains={0: (Chain(3, (4,)),)},
        files={},
        fingerprint=None,
    )
    backend = StateBackendKind.ROCKSDB if switch else StateBackendKind.HASHMAP
    store = CheckpointStore(str(tmp_path), snapshot_every=5, state_backend=backend)
    chain = store.plan_chain(info, 0, 0, 1, 5)
    assert chain == (Chain(5, (), backend) if switch else Chain(3, (4, 5)))
    # the store travels to the workers with its backend
    import pickle

    assert pickle.loads(pickle.dumps(store)).state_backend is backend
    with pytest.raises(TypeError, match="state_backend must be a StateBackendKind"):
        CheckpointStore(str(tmp_path), state_backend="rocksdb")  # type: ignore[arg-type]


def test_native_chains_survive_json_and_older_formats_have_none() -> None:
    native = Chain(4, (), StateBackendKind.ROCKSDB, native=True)
    manifest = CommitManifest(
        version=4,
        processing_time=0,
        parallelism={0: 2},
        chains={0: (native, Chain(4, (), StateBackendKind.ROCKSDB))},
        files={},
        fingerprint=None,
    )
    raw = _through_json(manifest.to_json())
    assert [c.get("native") for c in raw["chains"]["0"]] == [True, None]
    assert CommitManifest.from_json(raw, WHERE) == manifest
    # format 5 had no native chains: its chains read as they are, and one naming it is refused
    old = {**json.loads(json.dumps(raw)), "format_version": 5}
    with pytest.raises(CheckpointError, match=r"chains.0\[0\].native"):
        CommitManifest.from_json(old, WHERE)
    del old["chains"]["0"][0]["native"]
    assert {c.native for c in CommitManifest.from_json(old, WHERE).chains[0]} == {False}
    # format 6 had native chains (its state files pickled their key type): read as they are
    six = {**json.loads(json.dumps(raw)), "format_version": 6}
    assert CommitManifest.from_json(six, WHERE).chains == manifest.chains
    # a native chain is a RocksDB chain of one file
    for bad in ({"backend": "hashmap"}, {"changelogs": [5]}, {"native": "yes"}):
        broken = json.loads(json.dumps(raw))
        broken["chains"]["0"][0].update(bad)
        with pytest.raises(CheckpointError, match="native"):
            CommitManifest.from_json(broken, WHERE)
