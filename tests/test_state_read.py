"""A streaming job's checkpoint read as tables (``sparktide.state_api``) equals what the job
holds, checked against the job's own output, on both state backends, read locally (pyarrow)
and by a Spark job (DataFrames).

One small streaming job per backend, written once (a module-scoped fixture), read many ways:
a keyed running count (value, list, map and row-typed value states, an event-time timer per
record whose firing the job emits) and a tumbling-window reduce (pending windows and their
timers).
"""

from __future__ import annotations

import collections
import json
import pickle

import pyarrow.parquet as pq
import pytest

from sparktide.common import Row, Time, Types
from sparktide.common.typeinfo_json import declaration
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark.checkpoint_inspect import NotACheckpointError
from sparktide.spark.streaming import ForeachBatchSink
from sparktide.state_api import SavepointReader, StateReadError, UntrustedCheckpointError
from test_streaming import (
    EVENT,
    SCHEMA,
    WINDOW,
    _final_watermark,
    _records,
    _strategy,
    _write_files,
    backend_named,
)

COUNTED = Types.ROW_NAMED(["key", "count", "timer"], [Types.STRING(), Types.LONG(), Types.LONG()])
LAST = Types.ROW_NAMED(["ts", "v"], [Types.LONG(), Types.LONG()])
DELAY = 5_000
FILES = 2  # micro-batches


class Count(KeyedProcessFunction):
    """A running count per key (emitted per record), the values seen (list), counts per parity
    (map), the last record (row), and a timer ``DELAY`` after each record (emitted when it
    fires)."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.values = ctx.get_list_state(ListStateDescriptor("values", Types.LONG()))
        self.parity = ctx.get_map_state(MapStateDescriptor("parity", Types.STRING(), Types.LONG()))
        self.last = ctx.get_state(ValueStateDescriptor("last", LAST))

    def process_element(self, r, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        self.values.add(r.v)
        side = "even" if r.v % 2 == 0 else "odd"
        self.parity.put(side, (self.parity.get(side) or 0) + 1)
        self.last.update(Row(ts=r.ts, v=r.v))
        ctx.timer_service().register_event_time_timer(r.ts + DELAY)
        yield Row(key=r.key, count=n, timer=None)

    def on_timer(self, timestamp, ctx):
        yield Row(key=ctx.get_current_key(), count=None, timer=timestamp)


def _run(spark, tmp, backend: str, files: int = FILES, **execute) -> dict:
    """Run the jobs over the first ``files`` files of ``tmp / "in"`` (written); ``execute``:
    more arguments of ``env.execute`` (``checkpoint_location``: other than ``tmp / "ckpt"``)."""
    _write_files(tmp / "in", _records(files))
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.set_state_backend(backend_named(backend))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp / "in"))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: dict[str, list[tuple]] = {"count": [], "windows": []}

    def sink(name):
        return ForeachBatchSink(lambda df, _: out[name].extend(tuple(r) for r in df.collect()))

    counted = stream.key_by(lambda r: r.key, key_type=Types.STRING())
    counted.process(Count(), output_type=COUNTED).uid("count").sink_to(sink("count"))
    (
        stream.key_by(lambda r: r.key)  # undeclared keys: pickled
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
        .name("sums")
        .sink_to(sink("windows"))
    )
    ckpt = execute.pop("checkpoint_location", str(tmp / "ckpt"))
    env.execute(checkpoint_location=ckpt, trigger="available_now", **execute)
    return {"ckpt": ckpt, "out": out, "records": _records(files), "backend": backend}


@pytest.fixture(scope="module", params=["hashmap", "rocksdb"])
def job(request, tmp_path_factory):
    spark = request.getfixturevalue("spark")
    return _run(spark, tmp_path_factory.mktemp(request.param), request.param)


def _input(job) -> list[tuple[str, int, int]]:
    return [r for batch in job["records"] for r in batch]


def _sorted(table) -> list[dict]:
    return sorted(table.to_pylist(), key=repr)


def test_operators_list_uids_states_kinds_and_declared_types(job) -> None:
    reader = SavepointReader.read(job["ckpt"])  # metadata: no trust needed
    rows = reader.operators().to_pylist()
    count = {r["state"]: r for r in rows if r["uid"] == "count"}
    assert sorted(count) == ["count", "last", "parity", "values"]
    assert {s: (r["kind"], r["value_type"]) for s, r in count.items()} == {
        "count": ("value", "Types.LONG()"),
        "last": ("value", "Types.ROW_NAMED(['ts', 'v'], [Types.LONG(), Types.LONG()])"),
        "parity": ("map", "Types.LONG()"),
        "values": ("list", "Types.LONG()"),
    }
    assert count["parity"]["map_key_type"] == "Types.STRING()"
    assert {r["key_type"] for r in count.values()} == {"Types.STRING()"}
    assert {(r["stage"], r["parallelism"], r["keyed"]) for r in count.values()} == {(0, 2, True)}
    [sums] = [r for r in rows if r["name"] == "sums"]
    assert (sums["state"], sums["kind"], sums["value_type"], sums["key_type"]) == (
        "window-contents", "reducing", "undeclared (pickled)", "undeclared (pickled)"
    )  # fmt: skip
    sinks = [r for r in rows if r["name"] == "Sink: Writer"]
    assert len(sinks) == 2 and all(r["state"] is None and not r["keyed"] for r in sinks)


def test_keyed_state_equals_what_the_job_emitted_and_read(job) -> None:
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    last_count = {k: n for k, n, t in job["out"]["count"] if t is None}  # the last per key
    count = reader.keyed_state("count", "count")
    assert count.schema.names == ["key", "value", "key_group"]
    assert {r["key"]: r["value"] for r in count.to_pylist()} == last_count
    seen: dict[str, list[int]] = collections.defaultdict(list)
    for key, _, v in _input(job):
        seen[key].append(v)
    values = reader.keyed_state("count", "values")
    assert values.schema.names == ["key", "list_index", "list_element", "key_group"]
    per_key: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for r in values.to_pylist():
        per_key[r["key"]].append((r["list_index"], r["list_element"]))
    assert {k: [v for _, v in sorted(e)] for k, e in per_key.items()} == dict(seen)
    parity = reader.keyed_state("count", "parity")
    assert parity.schema.names == ["key", "user_map_key", "user_map_value", "key_group"]
    expected = collections.Counter(
        (k, "even" if v % 2 == 0 else "odd") for k, vs in seen.items() for v in vs
    )
    got = {(r["key"], r["user_map_key"]): r["user_map_value"] for r in parity.to_pylist()}
    assert got == dict(expected)
    last = {r["key"]: r["value"] for r in reader.keyed_state("count", "last").to_pylist()}
    ordered = {k: {"ts": t, "v": v} for k, t, v in _input(job)}  # the last record per key
    assert last == ordered
    groups = {r["key"]: r["key_group"] for r in count.to_pylist()}
    from sparktide.runtime.keygroups import assign_to_key_group

    assert groups == {k: assign_to_key_group(k, 128) for k in groups}


def test_timers_are_those_registered_and_not_fired(job) -> None:
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    fired = {(k, t) for k, _, t in job["out"]["count"] if t is not None}
    registered = {(k, ts + DELAY) for k, ts, _ in _input(job)}
    timers = reader.timers("count")
    assert timers.schema.names == ["key", "timestamp", "domain", "service", "key_group"]
    rows = timers.to_pylist()
    assert {(r["key"], r["timestamp"]) for r in rows} == registered - fired
    assert {(r["domain"], r["service"]) for r in rows} == {("event", "user-timers")}
    assert len(rows) == len(registered - fired) and fired


def _pending_windows(job, watermark: int) -> dict[tuple[str, int], dict]:
    """The windows whose end is past ``watermark``, reduced from the input."""
    out: dict[tuple[str, int], dict] = {}
    for key, ts, v in _input(job):
        start = ts - ts % WINDOW
        if start + WINDOW - 1 > watermark:
            old = out.get((key, start))
            new = {"key": key, "ts": ts, "v": v}
            if old is not None:
                new = {"key": key, "ts": max(old["ts"], ts), "v": old["v"] + v}
            out[(key, start)] = new
    return out


def test_pending_windows_with_types_given_for_undeclared_keys_and_values(job) -> None:
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    pickled = reader.keyed_state("sums", "window-contents")
    assert [str(t) for t in pickled.schema.types[:2]] == ["binary", "int64"]
    table = reader.keyed_state("sums", "window-contents", key_type=Types.STRING(), value_type=EVENT)
    assert table.schema.names == ["key", "window_start", "window_end", "value", "key_group"]
    [split] = reader.split_watermarks().to_pylist()
    records = _input(job)
    assert split["watermark"] == _final_watermark(job["records"])
    assert (split["seq"], split["idle"]) == (len(records), False)
    assert split["records"] == len(job["records"][-1])  # read by the last batch
    expected = _pending_windows(job, split["watermark"])
    rows = table.to_pylist()
    assert {(r["key"], r["window_start"]): r["value"] for r in rows} == expected
    assert all(r["window_end"] == r["window_start"] + WINDOW for r in rows)
    fired = {(k, t - t % WINDOW) for k, t, _ in job["out"]["windows"]}
    assert fired and not fired & set(expected)
    timers = reader.timers("sums", key_type=Types.STRING()).to_pylist()
    assert {(t["key"], t["window_start"], t["timestamp"]) for t in timers} == {
        (k, s, s + WINDOW - 1) for k, s in expected
    }


def test_spark_dataframes_hold_the_same_rows(job, spark) -> None:
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    frames = reader.frames(spark)
    reads = [("sums", "window-contents", {"key_type": Types.STRING(), "value_type": EVENT})]
    if job["backend"] == "hashmap":  # the tasks load subtasks as the local read does: once
        reads.append(("count", "values", {}))
    for uid, state, types in reads:
        df = frames.keyed_state(uid, state, **types)
        local = reader.keyed_state(uid, state, **types)
        assert df.columns == local.schema.names
        assert _sorted(local) == sorted((r.asDict(recursive=True) for r in df.collect()), key=repr)
        assert df.rdd.getNumPartitions() == 2  # one task per subtask
    if job["backend"] == "hashmap":
        timers = sorted((r.asDict() for r in frames.timers("sums").collect()), key=repr)
        assert _sorted(reader.timers("sums")) == timers
        assert frames.operators().count() == reader.operators().num_rows
        assert [tuple(r) for r in frames.split_watermarks().collect()] == [
            tuple(r.values()) for r in reader.split_watermarks().to_pylist()
        ]


def test_metadata_is_read_without_unpickling_anything(job, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("unpickled")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    reader = SavepointReader.read(job["ckpt"])
    assert reader.operators().num_rows == 7 and reader.split_watermarks().num_rows == 1
    with pytest.raises(AssertionError, match="unpickled"):  # the check itself works
        SavepointReader.read(job["ckpt"], trusted=True).keyed_state("sums", "window-contents")


def test_refusals_name_what_is_wrong(job, tmp_path) -> None:
    untrusted = SavepointReader.read(job["ckpt"])
    with pytest.raises(UntrustedCheckpointError, match="trusted=True"):
        untrusted.keyed_state("count", "count")
    with pytest.raises(UntrustedCheckpointError, match="unpickles"):
        untrusted.timers("count")
    reader = SavepointReader.read(job["ckpt"], trusted=True)
    with pytest.raises(StateReadError, match=r"no operator with uid.*'nope'.*'sums'"):
        reader.keyed_state("nope", "count")
    with pytest.raises(StateReadError, match=r"no keyed state 'cnt'.*'count', 'last'"):
        reader.keyed_state("count", "cnt")
    with pytest.raises(StateReadError, match=r"2 operators .* named 'Sink: Writer'"):
        reader.timers("Sink: Writer")
    sink = reader.operators().to_pylist()[-1]
    with pytest.raises(StateReadError, match="holds no keyed state"):
        reader.timers(sink["identity"])
    with pytest.raises(StateReadError, match="holds no keyed state"):
        reader.timers(f"Sink: Writer [{sink['identity']}]")  # as inspect shows it
    with pytest.raises(StateReadError, match=r"column 'key' is read as .*Integer"):
        reader.keyed_state("sums", "window-contents", key_type=Types.INT())
    with pytest.raises(StateReadError, match="version 99 is not a committed version"):
        SavepointReader.read(job["ckpt"], version=99)
    with pytest.raises(NotACheckpointError, match="is not a sparktide checkpoint"):
        SavepointReader.read(str(tmp_path / "nothing"))


def test_command_prints_and_writes_the_tables(job, tmp_path, capsys) -> None:
    from sparktide.cli import main

    out = tmp_path / "values.parquet"
    ckpt = job["ckpt"]
    assert main(["state", ckpt, "--uid", "count", "--state", "values", "--trusted",
                 "--out", str(out)]) == 0  # fmt: skip
    reader = SavepointReader.read(ckpt, trusted=True)
    assert pq.read_table(out).equals(reader.keyed_state("count", "values"))
    assert main(["state", ckpt]) == 0
    assert "window-contents" in capsys.readouterr().out
    assert main(["state", ckpt, "--uid", "count", "--state", "count"]) == 2
    assert "--trusted" in capsys.readouterr().err
    assert main(["state", ckpt, "--uid", "sums", "--timers", "--trusted",
                 "--key-type", "STRING", "--limit", "1"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "window_start" in text and "more rows" in text


def test_inspect_shows_the_recorded_state_types_of_each_keyed_operator(job, capsys) -> None:
    from sparktide.cli import main

    assert main(["inspect", job["ckpt"], "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    recorded = [r for stage in summary["stages"] for r in stage["state_types"]]
    by_uid = {r["uid"]: r for r in recorded}
    assert len(recorded) == 2 and by_uid["count"]["key_type"] == "Types.STRING()"
    assert by_uid["count"]["states"] == {
        "count": {"kind": "value", "ttl": False, "value_type": "Types.LONG()"},
        "last": {"kind": "value", "ttl": False, "value_type": declaration(LAST)},
        "parity": {"kind": "map", "ttl": False, "value_type": "Types.LONG()",
                   "map_key_type": "Types.STRING()"},
        "values": {"kind": "list", "ttl": False, "value_type": "Types.LONG()"},
    }  # fmt: skip
    assert by_uid[None]["key_type"] == "undeclared (pickled)"
    assert main(["inspect", job["ckpt"]]) == 0
    text = capsys.readouterr().out
    assert "  state types of KeyedProcess (uid count), key type Types.STRING():\n" in text
    assert "    parity: map, map key Types.STRING(), value Types.LONG()\n" in text
    assert "  state types of sums, key type undeclared (pickled):\n" in text


def test_rows_of_ttl_states_and_other_namespaces() -> None:
    from sparktide.datastream.window import GlobalWindow
    from sparktide.state_api.rows import NamespaceKind, StateRowsSpec, state_batch

    spec = StateRowsSpec("m", "map", True, Types.STRING(), Types.LONG(), Types.STRING())
    rows = state_batch(spec, [(3, "a", None, {"x": (1, 100), "y": (2, 200)})]).to_pylist()
    assert [(r["user_map_key"], r["user_map_value"]) for r in rows] == [("x", 1), ("y", 2)]
    spec = StateRowsSpec("v", "value", True, None, LAST, namespace=NamespaceKind.PICKLED)
    [row] = state_batch(
        spec, [(0, ("k", 1), GlobalWindow.get(), (Row(ts=5, v=6), 100))]
    ).to_pylist()
    assert pickle.loads(row["key"]) == ("k", 1) and row["value"] == {"ts": 5, "v": 6}
    assert pickle.loads(row["namespace"]) == GlobalWindow.get()
    spec = StateRowsSpec("l", "list", True, Types.STRING(), Types.LONG())
    rows = state_batch(spec, [(1, "a", None, [(7, 10), (8, 11)])]).to_pylist()
    assert [(r["list_index"], r["list_element"]) for r in rows] == [(0, 7), (1, 8)]
