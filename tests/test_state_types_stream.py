"""A streaming job on Spark restarted with a changed state type: refused on both backends with
the same ``IncompatibleStateTypeError`` naming the operator, the state and both types, before
the restarted run processes a record or commits a batch; the checkpoint stays as it was, so a
restart with a widened type (``INT`` to ``LONG``) continues from it, the state migrated. Each
commit's manifest records the operator's declared types, from which a changed key type is
refused as the job starts, before its query runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sparktide.common import Types
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.state.state_types import IncompatibleStateTypeError
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import SCHEMA, _strategy, _write_files, backend_named


class _Total(KeyedProcessFunction):
    """Per key, emits ``key:<the total before this record>`` and adds the record's value."""

    def __init__(self, type_info: Any) -> None:
        self.type_info = type_info

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("total", self.type_info)
        self.total = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Any:
        before = self.total.value()
        total = int(before or 0) + value.v
        self.total.update(str(total) if self.type_info == Types.STRING() else total)
        yield f"{value.key}:{before}"


def _job(
    spark: Any, directory: Path, backend: str, type_info: Any, key_type: Any = None
) -> tuple[StreamExecutionEnvironment, list[str]]:
    """The job keeping a ``type_info`` total per key, and the list its output is added to."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.set_state_backend(backend_named(backend))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: list[str] = []
    (
        stream.key_by(lambda r: r.key, key_type=key_type)
        .process(_Total(type_info), output_type=Types.STRING())
        .name("Total")
        .uid("total")
        .sink_to(ForeachBatchSink(lambda df, _: out.extend(r[0] for r in df.collect())))
    )
    return env, out


def _run(spark: Any, directory: Path, ckpt: Path, backend: str, type_info: Any) -> list[str]:
    env, out = _job(spark, directory, backend, type_info)
    client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    client.await_termination()
    return out


def _versions(ckpt: Path) -> list[int]:
    return sorted(int(n.removesuffix(".json")) for n in os.listdir(ckpt / "commits"))


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_restart_with_a_changed_state_type_is_refused(spark, tmp_path, backend) -> None:
    rows = [[("a", 1, 5), ("b", 2, 7)], [("a", 3, 1)], [("a", 4, 2), ("b", 5, 3)]]
    _write_files(tmp_path / "in", rows[:2])
    ckpt = tmp_path / "ckpt"
    assert sorted(_run(spark, tmp_path / "in", ckpt, backend, Types.INT())) == [
        "a:5",
        "a:None",
        "b:None",
    ]
    committed = _versions(ckpt)
    _write_files(tmp_path / "in", rows[2:], first=2)
    out: list[str] = []
    with pytest.raises(IncompatibleStateTypeError) as caught:
        out = _run(spark, tmp_path / "in", ckpt, backend, Types.STRING())
    message = str(caught.value)
    assert message.startswith(
        "operator 'Total' (uid 'total'): state 'total' (value state) cannot be restored: its "
        "value type was Types.INT() in the checkpoint and is Types.STRING() now"
    ), message
    assert "Declare the state with its old types again (value: Types.INT())" in message
    assert out == [] and _versions(ckpt) == committed  # nothing processed, nothing committed
    # the checkpoint is intact: with a widened type the job continues from it, migrated
    assert sorted(_run(spark, tmp_path / "in", ckpt, backend, Types.LONG())) == ["a:6", "b:7"]
    # the manifest records the operator's declared types (the state's, migrated: LONG)
    commits = ckpt / "commits"
    body = json.loads((commits / f"{_versions(ckpt)[-1]}.json").read_text())["body"]
    (record,) = body["state_types"].values()
    assert (record["name"], record["uid"], record["key_type"]["type"]) == ("Total", "total", None)
    assert record["states"]["total"]["types"]["value"] == {"type": "LONG"}
    # from which a changed key type is refused as the job starts, before its query runs
    committed = _versions(ckpt)
    env, _ = _job(spark, tmp_path / "in", backend, Types.LONG(), key_type=Types.STRING())
    with pytest.raises(IncompatibleStateTypeError) as caught:
        env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    assert str(caught.value).startswith(
        "operator 'Total' (uid 'total'): its keyed state cannot be restored: its key type was "
        "undeclared (pickled) in the checkpoint and is Types.STRING() now"
    ), str(caught.value)
    assert _versions(ckpt) == committed
