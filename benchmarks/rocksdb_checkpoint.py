"""Incremental RocksDB checkpoints: bytes uploaded per checkpoint against the checkpoint's size.

For each number of keys (``--keys``, default 10^4, 10^5, 10^6) and share of keys changed
between checkpoints (``--changed``, default 1% and 10%): a database with one column family of
``keys`` entries (10-byte keys laid out as the state backend does, key-group prefix first, and
32-byte random values) is checkpointed once in full, then ``--checkpoints`` times (default 20)
after changing that share of the keys; each checkpoint is completed with the default
retention. The table shows the size of the last checkpoint's files, the bytes uploaded per
incremental checkpoint (median and max: a compaction rewrites files, which the next checkpoint
uploads), the median and the mean as a share of the checkpoint's size, the median time to take
and complete a checkpoint, and the time to restore the last one (files copied from the local
storage, never hard-linked, and every digest checked). RocksDB runs with its default options (auto
compactions on) and level compaction, or universal compaction (``--compaction``): with random
keys, level compaction rewrites the whole level below L0 every few flushes, universal
compaction merges runs of similar size.

A second table shows what opening a subtask's database at a checkpoint costs
(:class:`~sparktide.runtime.state.rocksdb_local.LocalDatabases`, best of ``--repeat``): reused
in memory by the process that took the checkpoint, reused from the local copy on disk by the
next process (checked at open: the copy's manifest, every file's size and the digests of the
small files RocksDB opens it by; SST contents are not hashed, RocksDB checks their block
checksums as it reads them), restored from the storage on the local disk (files copied and
digested in one pass) and
from a storage elsewhere (pyarrow's in-memory file system: every file copied and checked).

Usage: ``python benchmarks/rocksdb_checkpoint.py [--keys 10000,100000,1000000]
[--changed 1,10] [--checkpoints 20] [--compaction level,universal] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import struct
import tempfile
import time
from pathlib import Path

from rocksdict import DBCompactionStyle, Options, Rdict, WriteBatch

from sparktide.runtime.state.rocksdb_checkpoint import RocksDBCheckpointStorage
from sparktide.runtime.state.rocksdb_local import LocalDatabase, LocalDatabases, SubtaskSlot

_KEY = struct.Struct(">HQ")  # key group, key


def _open(path: Path, compaction: str) -> Rdict:
    def options() -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        if compaction == "universal":
            opts.set_compaction_style(DBCompactionStyle.universal())
        return opts

    return Rdict(str(path), options(), column_families={"state": options()})


def _write(db: Rdict, keys: list[int], rng: random.Random) -> None:
    cf = db.get_column_family_handle("state")
    for start in range(0, len(keys), 100_000):
        batch = WriteBatch(raw_mode=True)
        for k in keys[start : start + 100_000]:
            batch.put(_KEY.pack(k % 128, k), rng.randbytes(32), cf)
        db.write(batch)


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def run(keys: int, changed: float, checkpoints: int, compaction: str, workdir: Path) -> str:
    rng = random.Random(keys)
    db = _open(workdir / "db", compaction)
    _write(db, list(range(keys)), rng)
    storage = RocksDBCheckpointStorage(str(workdir / "ckpt"))
    base = storage.snapshot(db, 0, str(workdir / "stage-0"))
    storage.complete(0)
    uploaded: list[int] = []
    seconds: list[float] = []
    for version in range(1, checkpoints + 1):
        _write(db, rng.sample(range(keys), max(1, int(keys * changed / 100))), rng)
        start = time.perf_counter()
        base = storage.snapshot(db, version, str(workdir / f"stage-{version}"), base=base)
        storage.complete(version)
        seconds.append(time.perf_counter() - start)
        uploaded.append(base.uploaded_bytes)
        shutil.rmtree(workdir / f"stage-{version}")
    db.close()
    start = time.perf_counter()
    restored = storage.restore(checkpoints, str(workdir / "restored"))
    restore_seconds = time.perf_counter() - start
    restored.db.close()
    total = base.total_bytes
    median = statistics.median(uploaded)
    return (
        f"| {keys:,} | {changed:g}% | {compaction} | {_mb(total)} | {_mb(median)} "
        f"| {_mb(max(uploaded))} "
        f"| {100 * median / total:.1f}% | {100 * statistics.mean(uploaded) / total:.1f}% "
        f"| {1000 * statistics.median(seconds):.1f} ms "
        f"| {1000 * restore_seconds:.1f} ms |"
    )


def open_costs(keys: int, repeat: int, workdir: Path) -> str:
    """Best-of-``repeat`` seconds of each way :class:`LocalDatabases` opens a subtask's
    database at a checkpoint of ``keys`` entries."""
    rng = random.Random(keys)
    best: dict[str, float] = {}

    def opener(path: str) -> Rdict:
        return _open(Path(path), "level")

    def timed(
        label: str,
        dbs: LocalDatabases,
        slot: SubtaskSlot,
        storage: RocksDBCheckpointStorage,
        version: int,
    ) -> LocalDatabase:
        start = time.perf_counter()
        local = dbs.open(slot, version, storage)
        best[label] = min(best.get(label, float("inf")), time.perf_counter() - start)
        if local.outcome.value != label.split(" ")[0]:
            raise RuntimeError(f"expected {label}, got {local.outcome}")
        return local

    for storage, where in (
        (RocksDBCheckpointStorage(str(workdir / "ckpt")), "local"),
        (RocksDBCheckpointStorage("mock:///ckpt"), "memory"),
    ):
        slot = SubtaskSlot(str(workdir / f"job-{where}"), "stage-1", 0)
        writer = LocalDatabases(str(workdir / f"writer-{where}"), opener)
        local = writer.open(slot, None, storage)
        _write(local.db, list(range(keys)), rng)
        version = 1
        writer.checkpoint(local, version, storage)
        storage.complete(version)
        for n in range(repeat):
            if where == "local":
                for label in ("reused_in_memory", "reused_on_disk"):
                    if label == "reused_on_disk":
                        writer.close(slot)  # the next process finds the local copy
                    local = timed(label, writer, slot, storage, version)
                    version += 1
                    writer.checkpoint(local, version, storage)
                    storage.complete(version)
            reader = LocalDatabases(str(workdir / f"reader-{where}-{n}"), opener)
            timed(f"restored ({where})", reader, slot, storage, version)
            reader.close_all()
        writer.close_all()
    cells = " | ".join(
        f"{1000 * best[k]:.2f} ms"
        for k in ("reused_in_memory", "reused_on_disk", "restored (local)", "restored (memory)")
    )
    return f"| {keys:,} | {cells} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="10000,100000,1000000")
    parser.add_argument("--changed", default="1,10", help="percent of keys changed per checkpoint")
    parser.add_argument("--checkpoints", type=int, default=20)
    parser.add_argument("--compaction", default="level,universal")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        "| keys | changed per checkpoint | compaction | checkpoint size | uploaded (median) "
        "| uploaded (max) | median / size | mean / size | checkpoint time (median) "
        "| restore time |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for keys in (int(k) for k in args.keys.split(",")):
        for changed in (float(c) for c in args.changed.split(",")):
            for compaction in args.compaction.split(","):
                with tempfile.TemporaryDirectory(prefix="sparktide-ckpt-bench-") as tmp:
                    row = run(keys, changed, args.checkpoints, compaction, Path(tmp))
                    print(row, flush=True)
    print()
    print(
        "| keys | reused in memory | reused on disk | restored (storage on the local disk) "
        f"| restored (storage in memory: every file copied) |  (best of {args.repeat})"
    )
    print("|---:|---:|---:|---:|---:|")
    for keys in (int(k) for k in args.keys.split(",")):
        with tempfile.TemporaryDirectory(prefix="sparktide-open-bench-") as tmp:
            print(open_costs(keys, args.repeat, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
