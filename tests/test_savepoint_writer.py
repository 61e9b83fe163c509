"""The savepoint writer (``sparktide.state_api.SavepointWriter``): a real job's state read,
written and read again is the identity on both backends' checkpoints; a bootstrapped
savepoint reads back as its input, in the pyarrow and the Spark DataFrame form alike; bad rows
are refused naming what is wrong; a job started from a written savepoint continues as the job
that built the state.

The jobs are those of ``test_state_read`` (a keyed count with value, list, map and row-typed
states and event-time timers; a tumbling-window reduce with pending windows), run once per
backend.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from sparktide.common import Types
from sparktide.common.time import Time
from sparktide.core.state import StateTtlConfig
from sparktide.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from sparktide.datastream.window import GlobalWindow
from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.state_api import SavepointReader, SavepointWriter, StateWriteError
from sparktide.state_api.savepoint import write_savepoint
from test_state_read import LAST, _run

COUNT_STATES = {
    "count": ValueStateDescriptor("count", Types.LONG()),
    "values": ListStateDescriptor("values", Types.LONG()),
    "parity": MapStateDescriptor("parity", Types.STRING(), Types.LONG()),
    "last": ValueStateDescriptor("last", LAST),
}
SUMS = ReducingStateDescriptor("window-contents", lambda a, b: a, Types.PICKLED_BYTE_ARRAY())


@pytest.fixture(scope="module", params=["hashmap", "rocksdb"])
def job(request, tmp_path_factory):
    spark = request.getfixturevalue("spark")
    return _run(spark, tmp_path_factory.mktemp(request.param), request.param, files=1)


def _sums_uid(reader: SavepointReader) -> str:
    [identity] = {r["identity"] for r in reader.operators().to_pylist() if r["name"] == "sums"}
    return identity


def _tables(reader: SavepointReader, sums: str) -> dict[str, pa.Table]:
    """Every state and the timers of the keyed operators, as ``reader`` reads them (the window
    operator, which has no uid, by its identity ``sums``)."""
    out = {name: reader.keyed_state("count", name) for name in COUNT_STATES}
    out["timers"] = reader.timers("count")
    out["window-contents"] = reader.keyed_state(sums, "window-contents")
    out["window-timers"] = reader.timers(sums)
    return out


def _copy(tables: dict[str, pa.Table], writer: SavepointWriter) -> SavepointWriter:
    """``writer`` with ``tables`` (of :func:`_tables`), the window operator as uid ``sums``."""
    for name, descriptor in COUNT_STATES.items():
        writer = writer.with_keyed_state("count", descriptor, tables[name], key_type=Types.STRING())
    writer = writer.with_timers("count", tables["timers"])
    writer = writer.with_keyed_state("sums", SUMS, tables["window-contents"], key_type=None)
    return writer.with_timers("sums", tables["window-timers"])


def test_read_write_read_is_the_identity(job, tmp_path, spark) -> None:
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    sums = _sums_uid(reader)
    tables = _tables(reader, sums)
    assert tables["timers"].num_rows and tables["window-contents"].num_rows
    path = str(tmp_path / "new")
    manifest = _copy(tables, SavepointWriter.new_savepoint()).write(path, parallelism=3)
    assert (manifest.version, manifest.origin, manifest.sources) == (0, "writer", ())
    written = SavepointReader.read(path, trusted=True)
    for name, table in _tables(written, "sums").items():
        assert table.equals(tables[name]), name
    ops = {(r["uid"], r["state"]): r for r in written.operators().to_pylist()}
    old = {(r["uid"], r["state"]): r for r in reader.operators().to_pylist()}
    for name in COUNT_STATES:  # kinds and declared types recorded as the job did
        for column in ("kind", "ttl", "value_type", "map_key_type", "key_type"):
            assert ops[("count", name)][column] == old[("count", name)][column]
    assert {r["parallelism"] for r in ops.values()} == {3}
    # from the checkpoint itself, unchanged but for one operator removed: the rest as it was
    kept = str(tmp_path / "kept")
    SavepointWriter.from_checkpoint(job["ckpt"]).remove_operator("count").write(kept)
    again = SavepointReader.read(kept, trusted=True)
    assert "count" not in {r["uid"] for r in again.operators().to_pylist()}
    assert again.keyed_state(sums, "window-contents").equals(tables["window-contents"])
    assert again.split_watermarks().num_rows == 0  # a checkpoint base: no source positions
    # from a savepoint of the job: one state replaced; the others, the timers, the version,
    # the sources and the split watermarks kept
    taken = write_savepoint(job["ckpt"], str(tmp_path / "taken"))
    fixed = str(tmp_path / "fixed")
    counts = pa.table({"key": ["k0"], "value": [1000]})
    if job["backend"] == "hashmap":  # by a Spark job, whose tasks read the base's subtasks
        counts = spark.createDataFrame([("k0", 1000)], "key string, value long")
    writer = SavepointWriter.from_savepoint(str(tmp_path / "taken"))
    out = writer.with_keyed_state("count", COUNT_STATES["count"], counts).write(fixed)
    assert (out.version, out.sources, out.origin) == (taken.version, taken.sources, "writer")
    third = SavepointReader.read(fixed, trusted=True)
    [k0] = [r for r in tables["count"].to_pylist() if r["key"] == "k0"]
    assert third.keyed_state("count", "count").to_pylist() == [{**k0, "value": 1000}]
    assert third.keyed_state("count", "values").equals(tables["values"])
    assert third.timers("count").equals(tables["timers"])
    assert third.split_watermarks().equals(reader.split_watermarks())


class Average:
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


PAIR = Types.TUPLE([Types.LONG(), Types.LONG()])


def _bootstrap_tables() -> dict[str, tuple[object, pa.Table]]:
    ttl = ValueStateDescriptor("seen", Types.LONG())
    ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
    return {
        "total": (ValueStateDescriptor("total", LAST),
                  pa.table({"key": ["a", "b", "c"],
                            "value": [{"ts": 1, "v": 2}, {"ts": 3, "v": 4}, {"ts": 5, "v": 6}]})),
        "items": (ListStateDescriptor("items", Types.STRING()),
                  pa.table({"key": ["a", "b", "a", "a"], "list_index": [2, 0, 0, 1],
                            "list_element": ["z", "q", "x", "y"]})),
        "tags": (MapStateDescriptor("tags", Types.STRING(), Types.INT()),
                 pa.table({"key": ["a", "a", "c"], "user_map_key": ["x", "y", "x"],
                           "user_map_value": [1, None, 3]})),  # a map may hold None
        "avg": (AggregatingStateDescriptor("avg", Average(), PAIR),
                pa.table({"key": ["a", "b"], "window_start": [0, 1000], "window_end": [1000, 2000],
                          "value": [{"f0": 10, "f1": 2}, {"f0": 3, "f1": 1}]})),
        "sum": (ReducingStateDescriptor("sum", lambda a, b: a + b, Types.LONG()),
                pa.table({"key": ["b"], "namespace": [pickle.dumps(GlobalWindow.get(), protocol=5)],
                          "value": [7]})),
        "seen": (ttl, pa.table({"key": ["c"], "value": [9]})),
    }  # fmt: skip


TIMERS = pa.table({"key": ["a", "b", "a"], "timestamp": [50, 20, 10],
                   "domain": ["event", "processing", "event"]})  # fmt: skip


def _bootstrap(writer: SavepointWriter, frame=lambda t: t) -> SavepointWriter:
    for descriptor, table in _bootstrap_tables().values():
        writer = writer.with_keyed_state("boot", descriptor, frame(table), key_type=Types.STRING())
    return writer.with_timers("boot", frame(TIMERS))


def _without_key_group(table: pa.Table) -> list[dict]:
    return sorted(table.drop_columns(["key_group"]).to_pylist(), key=repr)


def test_a_bootstrapped_savepoint_reads_back_as_its_input(tmp_path, spark) -> None:
    path = str(tmp_path / "boot")
    _bootstrap(SavepointWriter.new_savepoint(max_parallelism=64)).write(path, parallelism=2)
    reader = SavepointReader.read(path, trusted=True)
    for name, (_, table) in _bootstrap_tables().items():
        got = reader.keyed_state("boot", name)
        if name == "avg":
            got = got.set_column(3, "value", pa.array([{"f0": r["f0"], "f1": r["f1"]} for r in
                                                      got["value"].to_pylist()]))  # fmt: skip
        assert _without_key_group(got) == sorted(table.to_pylist(), key=repr), name
    items = reader.keyed_state("boot", "items").to_pylist()
    assert [r["list_element"] for r in items if r["key"] == "a"] == ["x", "y", "z"]
    timers = reader.timers("boot").to_pylist()
    assert sorted((t["key"], t["timestamp"], t["domain"], t["service"]) for t in timers) == [
        ("a", 10, "event", "user-timers"), ("a", 50, "event", "user-timers"),
        ("b", 20, "processing", "user-timers"),
    ]  # fmt: skip
    ops = {r["state"]: r for r in reader.operators().to_pylist()}
    assert ops["seen"]["ttl"] and ops["avg"]["kind"] == "aggregating"
    assert ops["tags"]["map_key_type"] == "Types.STRING()"
    assert ops["tags"]["value_type"] == "Types.INT()"
    # the Spark form: the same savepoint, written by a Spark job
    frames = str(tmp_path / "frames")
    from pyspark.sql.pandas.types import from_arrow_schema

    as_frame = lambda t: spark.createDataFrame(t.to_pylist(), from_arrow_schema(t.schema))  # noqa: E731
    _bootstrap(SavepointWriter.new_savepoint(max_parallelism=64), as_frame).write(frames, 2)
    from_spark = SavepointReader.read(frames, trusted=True)
    for name in _bootstrap_tables():
        assert from_spark.keyed_state("boot", name).equals(reader.keyed_state("boot", name)), name
    assert from_spark.timers("boot").equals(reader.timers("boot"))
    assert from_spark.operators().equals(reader.operators())
    _, count = _bootstrap_tables()["total"]
    mixed = SavepointWriter.new_savepoint().with_keyed_state("boot", *_bootstrap_tables()["seen"])
    with pytest.raises(TypeError, match="both as pyarrow tables and as Spark DataFrames"):
        mixed.with_keyed_state("boot", ValueStateDescriptor("n", LAST), as_frame(count))


def test_a_job_with_the_uid_matches_a_written_savepoint(tmp_path) -> None:
    """The fingerprint written: a keyed stage per uid, its max parallelism, no sources (any
    job's match); the key and state types recorded for the restore's checks."""
    from sparktide.spark.checkpoint import CheckpointStore
    from sparktide.spark.checkpoint_meta import (
        JobFingerprint,
        OperatorRef,
        SourceRef,
        StageFingerprint,
    )
    from sparktide.spark.restore_match import check_restorable, stage_mapping

    path = str(tmp_path / "boot")
    _bootstrap(SavepointWriter.new_savepoint(max_parallelism=64)).write(path)
    info = CheckpointStore(path).commit_info(0)
    stored = info.fingerprint
    assert stored is not None and stored.sources == ()
    op = OperatorRef("Boot", "boot", "uid:boot")
    here = JobFingerprint(
        (SourceRef("events", None, 1),),
        (StageFingerprint((OperatorRef("Source", None, "x"),), 128, False),
         StageFingerprint((op, OperatorRef("Sink", None, "y")), 64, True)),
    )  # fmt: skip
    check_restorable(stored, here, False, path)
    assert stage_mapping(stored, here) == {1: 0}
    other = JobFingerprint(here.sources, (StageFingerprint((op,), 128, True),))
    with pytest.raises(CheckpointError, match="max_parallelism 64 in the checkpoint vs 128"):
        check_restorable(stored, other, False, path)
    without = JobFingerprint(here.sources, here.stages[:1])
    with pytest.raises(CheckpointError, match=r"does not have: 'boot' \(uid 'boot'\)"):
        check_restorable(stored, without, False, path)
    record = info.state_types["uid:boot"]
    assert record.declared_key_type() == Types.STRING()
    assert record.states["tags"]["kind"] == "map" and set(record.states) == set(_bootstrap_tables())


def _table(**columns) -> pa.Table:
    return pa.table(columns)


def test_bad_rows_are_refused_naming_what_is_wrong(tmp_path) -> None:
    new = SavepointWriter.new_savepoint()
    count = COUNT_STATES["count"]

    def write(rows, descriptor=count, **kwargs):
        new.with_keyed_state("op", descriptor, rows, key_type=Types.STRING(), **kwargs).write(
            str(tmp_path / f"sp{len(list(tmp_path.iterdir()))}")
        )

    with pytest.raises(StateWriteError, match=r"uid 'op', state 'count', row 1, column 'value'"
                       r" \(Types.INT\(\)\): .*in \[-2147483648, 2147483647\]"):  # fmt: skip
        write(_table(key=["a", "b"], value=[1, 2**40]), ValueStateDescriptor("count", Types.INT()))
    with pytest.raises(StateWriteError, match=r"row 0, column 'value'.*null"):
        write(_table(key=["a"], value=pa.array([None], pa.int64())))
    with pytest.raises(StateWriteError, match=r"row 1: key 'a' is given twice"):
        write(_table(key=["a", "a"], value=[1, 2]))
    with pytest.raises(StateWriteError, match=r"missing \['value'\]; unknown \['v'\]"):
        new.with_keyed_state("op", count, _table(key=["a"], v=[1]))
    with pytest.raises(StateWriteError, match=r"column 'key_group': 3 is not the key group"):
        write(_table(key=["a"], value=[1], key_group=pa.array([3], pa.int32())))
    with pytest.raises(StateWriteError, match=r"row 1: map key 'x' of key 'a' is given twice"):
        write(_table(key=["a", "a"], user_map_key=["x", "x"], user_map_value=[1, 2]),
              COUNT_STATES["parity"])  # fmt: skip
    with pytest.raises(StateWriteError, match=r"timers, row 0, column 'domain': 'later'"):
        new.with_timers("op", _table(key=["a"], timestamp=[1], domain=["later"]),
                        key_type=Types.STRING()).write(str(tmp_path / "t"))  # fmt: skip
    once = new.with_keyed_state("op", count, _table(key=["a"], value=[1]))
    with pytest.raises(ValueError, match="state 'count' is given twice"):
        once.with_keyed_state("op", count, _table(key=["a"], value=[1]))
    with pytest.raises(ValueError, match=r"key_type Types.STRING\(\) differs from undeclared"):
        once.with_keyed_state("op", COUNT_STATES["values"], _table(key=["a"], list_element=[1]),
                              key_type=Types.STRING())  # fmt: skip
    with pytest.raises(ValueError, match="no operator with uid 'op' to remove"):
        new.remove_operator("op")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(CheckpointError, match="is not empty"):
        once.write(str(tmp_path / "full"))
    with pytest.raises(TypeError, match=r"rows must be a pyarrow\.Table or a Spark DataFrame"):
        new.with_keyed_state("op", count, [("a", 1)])


def _sorted_out(job: dict) -> dict[str, list[tuple]]:
    return {name: sorted(rows, key=repr) for name, rows in job["out"].items()}


@pytest.mark.parametrize("job", ["rocksdb"], indirect=True)  # the RocksDB job, on the heap
def test_a_job_from_a_written_savepoint_continues_as_the_job_that_built_the_state(
    job, spark, tmp_path
) -> None:
    """The RocksDB job's savepoint, its keyed operator's states and timers all rewritten from
    their rows, started on the heap with one more file: the same output as the job itself
    continuing over it. (Last in the module: it adds files to the job's input.)"""
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    taken = str(tmp_path / "taken")
    write_savepoint(job["ckpt"], taken)
    writer = SavepointWriter.from_savepoint(taken)
    for name, descriptor in COUNT_STATES.items():
        writer = writer.with_keyed_state("count", descriptor, reader.keyed_state("count", name))
    written = str(tmp_path / "written")
    writer.with_timers("count", reader.timers("count")).write(written)
    home = Path(job["ckpt"]).parent
    started = _run(spark, home, "hashmap", files=2, checkpoint_location=str(tmp_path / "new"),
                   from_savepoint=written)  # fmt: skip
    continued = _run(spark, home, "rocksdb", files=2)
    assert continued["out"]["count"] and continued["out"]["windows"]
    assert _sorted_out(started) == _sorted_out(continued)
    # bootstrapped: counts given for two keys, a job with the uid (and operators the savepoint
    # does not have, which start empty) counts on from them
    boot = str(tmp_path / "boot")
    counts = pa.table({"key": ["k0", "k1"], "value": [100, 200]})
    SavepointWriter.new_savepoint().with_keyed_state(
        "count", COUNT_STATES["count"], counts, key_type=Types.STRING()
    ).write(boot)
    fresh = _run(spark, tmp_path, "hashmap", files=1, checkpoint_location=str(tmp_path / "c"),
                 from_savepoint=boot)  # fmt: skip
    seen: dict[str, int] = {"k0": 100, "k1": 200}
    expected = []
    for key, _, _ in fresh["records"][0]:
        seen[key] = seen.get(key, 0) + 1
        expected.append((key, seen[key]))
    assert sorted((k, n) for k, n, t in fresh["out"]["count"] if t is None) == sorted(expected)
