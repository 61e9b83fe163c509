"""Restoring key-group ranges from the RocksDB checkpoints of another parallelism."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rocksdict import Options, Rdict

from sparktide.runtime.keygroups import (
    KeyGroupRange,
    compute_key_group_range_for_operator_index,
)
from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_rescale import CheckpointSource, restore_key_groups

MAX_PARALLELISM = 128
FAMILIES = ("default", "value-state", "timers")

Model = dict[str, dict[bytes, bytes]]


def open_db(path: str) -> Rdict:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    families = {name: Options(raw_mode=True) for name in FAMILIES if name != "default"}
    return Rdict(path, opts, column_families=families)


def contents(db: Rdict) -> Model:
    return {name: dict(db.get_column_family(name).items()) for name in FAMILIES}


def ranges(parallelism: int) -> list[KeyGroupRange]:
    return [
        compute_key_group_range_for_operator_index(MAX_PARALLELISM, parallelism, i)
        for i in range(parallelism)
    ]


def old_job(
    tmp_path: Path, parallelism: int, rng: random.Random
) -> tuple[list[CheckpointSource], Model]:
    """The checkpoints (two incremental ones each) of a job at ``parallelism`` and the model
    of all its entries."""
    model: Model = {name: {} for name in FAMILIES}
    sources = []
    for subtask, key_groups in enumerate(ranges(parallelism)):
        db = open_db(str(tmp_path / f"old-{subtask}"))
        storage = RocksDBCheckpointStorage(str(tmp_path / "ckpt" / str(subtask)))
        base = None
        for version in (1, 2):
            for _ in range(rng.randrange(50, 300)):
                name = rng.choice(FAMILIES)
                key = rng.randrange(key_groups.start, key_groups.end + 1).to_bytes(2, "big")
                key += rng.randbytes(rng.randrange(0, 6))
                if rng.random() < 0.1 and model[name]:
                    victim = rng.choice(sorted(k for k in model[name] if k[:2] == key[:2]) or [key])
                    db.get_column_family(name).delete(victim)
                    model[name].pop(victim, None)
                else:
                    value = rng.randbytes(rng.randrange(1, 20))
                    db.get_column_family(name)[key] = value
                    model[name][key] = value
            stage = str(tmp_path / f"stage-{subtask}-{version}")
            base = storage.snapshot(db, version, stage, base=base)
            storage.complete(version)
        db.close()
        sources.append(CheckpointSource(storage, 2, key_groups))
    return sources, model


def in_range(model: Model, key_groups: KeyGroupRange) -> Model:
    return {
        name: {k: v for k, v in kv.items() if int.from_bytes(k[:2], "big") in key_groups}
        for name, kv in model.items()
    }


@pytest.mark.parametrize(("old", "new"), [(1, 2), (2, 3), (3, 2), (4, 4)])
def test_every_new_subtask_gets_exactly_its_key_groups(tmp_path: Path, old: int, new: int) -> None:
    sources, model = old_job(tmp_path, old, random.Random(old * 10 + new))
    for subtask, key_groups in enumerate(ranges(new)):
        restored = restore_key_groups(
            sources, key_groups, str(tmp_path / f"new-{subtask}"), open_db
        )
        assert contents(restored.db) == in_range(model, key_groups), (subtask, key_groups)
        restored.db.close()
    assert not [p for p in tmp_path.iterdir() if ".rescale-" in p.name]  # scratch removed


def test_the_sources_must_cover_the_range_once(tmp_path: Path) -> None:
    sources, _ = old_job(tmp_path, 2, random.Random(1))
    with pytest.raises(ValueError, match="cover 64 of the 128 key groups"):
        restore_key_groups(sources[:1], KeyGroupRange(0, 127), str(tmp_path / "n"), open_db)
    twice = [sources[0], CheckpointSource(sources[1].storage, 2, KeyGroupRange(60, 127))]
    with pytest.raises(ValueError, match="overlap"):
        restore_key_groups(twice, KeyGroupRange(0, 127), str(tmp_path / "n"), open_db)
