"""Configuration, the environment's PyFlink settings and what they do when a job runs."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Configuration, Types
from sparktide.common.configuration import Configuration as AtModulePath
from sparktide.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    FileSystemCheckpointStorage,
    RuntimeExecutionMode,
    SlotSharingGroup,
    StreamExecutionEnvironment,
)
from sparktide.datastream.execution_mode import RuntimeExecutionMode as ModeAtPath
from sparktide.datastream.stream_execution_environment import (
    StreamExecutionEnvironment as EnvAtPath,
)

keys = st.text(alphabet="abcdefghij.-", min_size=1, max_size=12)


def local_env(configuration: Configuration | None = None) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(configuration, runtime="local")


def test_the_names_are_at_pyflinks_paths() -> None:
    assert AtModulePath is Configuration
    assert ModeAtPath is RuntimeExecutionMode
    assert EnvAtPath is StreamExecutionEnvironment


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(keys, st.integers(-(2**63), 2**63 - 1)), st.dictionaries(keys, st.booleans())
)
def test_typed_values_round_trip_as_a_dict_model(
    ints: dict[str, int], bools: dict[str, bool]
) -> None:
    config = Configuration()
    model: dict[str, str] = {}
    for key, value in ints.items():
        config.set_integer(key, value)
        model[key] = str(value)
    for key, flag in bools.items():
        config.set_boolean(key, flag)
        model[key] = "true" if flag else "false"
    assert config.to_dict() == model
    assert config.key_set() == set(model)
    for key in ints:
        if key not in bools:
            assert config.get_integer(key, 0) == ints[key]
    for key, flag in bools.items():
        assert config.get_boolean(key, not flag) is flag
    copy = Configuration(config)
    for key in list(model):
        assert copy.remove_config(key)
        assert not copy.contains_key(key)
    assert copy.to_dict() == {} and config.to_dict() == model


def test_getters_default_and_reject_what_does_not_parse() -> None:
    config = Configuration().set_string("a", "x").set_float("f", 1.5)
    assert config.get_integer("missing", 7) == 7
    assert config.get_float("f", 0.0) == 1.5
    with pytest.raises(ValueError, match="'a' holds 'x', which is not an integer"):
        config.get_integer("a", 0)
    with pytest.raises(ValueError, match="not 'true' or 'false'"):
        config.get_boolean("a", False)
    with pytest.raises(TypeError, match="must be an int"):
        config.set_integer("n", "3")  # type: ignore[arg-type]
    merged = Configuration().add_all(config, "p.")
    assert merged.to_dict() == {"p.a": "x", "p.f": "1.5"}


def test_configuration_settings_take_effect() -> None:
    config = Configuration.from_dict(
        {
            "parallelism.default": "3",
            "pipeline.max-parallelism": "64",
            "execution.runtime-mode": "batch",
            "pipeline.auto-watermark-interval": "50 ms",
            "execution.checkpointing.interval": "2 s",
            "execution.checkpointing.mode": "AT_LEAST_ONCE",
            "execution.checkpointing.min-pause": "3 s",
            "execution.checkpointing.timeout": "1 min",
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "execution.checkpointing.dir": "/tmp/ckpt",
            "state.backend.type": "rocksdb",
        }
    )
    env = local_env(config)
    assert env.get_parallelism() == 3
    assert env.get_max_parallelism() == 64
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    assert env.get_config().get_auto_watermark_interval() == 50
    checkpoints = env.get_checkpoint_config()
    assert env.get_checkpoint_interval() == 2000
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert checkpoints.get_checkpoint_timeout() == 60_000
    assert checkpoints.trigger_interval_ms() == 3000  # the min pause is longer
    assert (
        checkpoints.get_externalized_checkpoint_retention()
        is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    assert checkpoints.checkpoint_location() == "/tmp/ckpt"
    assert checkpoints.checkpoint_location("/elsewhere") == "/elsewhere"
    assert env.get_state_backend().kind.value == "rocksdb"
    # the parallelism of the configuration is the one the job runs with
    assert env.from_collection([1, 2, 3]).map(lambda v: v).get_parallelism() == 3


def test_bad_configuration_values_name_the_key() -> None:
    with pytest.raises(ValueError, match=r"'execution.runtime-mode' must be one of"):
        local_env(Configuration.from_dict({"execution.runtime-mode": "fast"}))
    with pytest.raises(ValueError, match=r"'pipeline.auto-watermark-interval'.*no duration"):
        local_env(Configuration.from_dict({"pipeline.auto-watermark-interval": "often"}))


def test_checkpointing_and_storage() -> None:
    env = local_env()
    assert not env.get_checkpoint_config().is_checkpointing_enabled()
    assert env.get_checkpoint_config().trigger_interval_ms() is None
    env.enable_checkpointing(500, CheckpointingMode.EXACTLY_ONCE)
    assert env.get_checkpoint_config().trigger_interval_ms() == 500
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage("s3://b/c"))
    assert env.get_checkpoint_config().checkpoint_location() == "s3://b/c"
    with pytest.raises(ValueError, match="checkpoint_interval must be an int >= 10"):
        env.enable_checkpointing(0)


def test_execution_plan_is_flinks_shape() -> None:
    env = local_env().set_parallelism(2)
    stream = env.from_collection([1, 2, 3]).map(lambda v: v).set_description("doubles")
    stream.rebalance().key_by(lambda v: v % 2).reduce(lambda a, b: a + b).print()
    plan = json.loads(env.get_execution_plan())
    nodes = plan["nodes"]
    assert [n["pact"] for n in nodes] == ["Data Source", "Operator", "Operator", "Data Sink"]
    assert [n["type"] for n in nodes] == [
        "Source: Collection Source",
        "Map",
        "Reduce",
        "Sink: Print to Std. Out",
    ]
    assert nodes[1]["contents"] == "doubles"
    assert [n["parallelism"] for n in nodes] == [1, 2, 2, 2]
    assert nodes[1]["predecessors"] == [
        {"id": nodes[0]["id"], "ship_strategy": "REBALANCE", "side": "second"}
    ]
    assert nodes[2]["predecessors"][0]["ship_strategy"] == "HASH"
    assert nodes[3]["predecessors"][0]["ship_strategy"] == "FORWARD"
    env.close()
    assert json.loads(env.get_execution_plan()) == {"nodes": []}


def test_python_files_become_importable_on_the_local_runtime(tmp_path) -> None:
    module = tmp_path / "shipped_helper_h.py"
    module.write_text("def triple(v):\n    return 3 * v\n", encoding="utf-8")
    env = local_env().add_python_file(str(module))

    def use(v: int) -> int:
        import shipped_helper_h

        return int(shipped_helper_h.triple(v))

    try:
        assert env.from_collection([1, 2]).map(use).execute_and_collect(limit=2) == [3, 6]
    finally:
        sys.path.remove(str(tmp_path))


def test_python_requirements_are_checked_on_the_local_runtime(tmp_path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "pyarrow>=10\n# a comment\nno-such-package-xyz==1.0\n", encoding="utf-8"
    )
    env = local_env().set_python_requirements(str(requirements))
    env.from_collection([1]).print()
    with pytest.raises(ModuleNotFoundError, match=r"\['no-such-package-xyz'\]"):
        env.execute()
    with pytest.raises(FileNotFoundError, match=r"add_python_file: /nope.py does not exist"):
        env.add_python_file("/nope.py")


def test_python_executable_is_checked_when_the_job_runs() -> None:
    env = local_env().set_python_executable("/no/such/python")
    env.from_collection([1]).print()
    with pytest.raises(FileNotFoundError, match="'/no/such/python' is no Python"):
        env.execute()


def test_methods_without_meaning_on_spark() -> None:
    env = local_env()
    assert env.set_buffer_timeout(5).get_buffer_timeout() == 5
    assert not env.disable_operator_chaining().is_chaining_enabled()
    group = SlotSharingGroup.builder("g").set_cpu_cores(1.0).build()
    assert env.register_slot_sharing_group(group) is env
    assert env.set_default_local_parallelism(3).get_parallelism() == 3
    with pytest.raises(NotImplementedError, match="add_classpaths is not supported on Spark"):
        env.add_classpaths("file:///a.jar")
    with pytest.raises(NotImplementedError, match="create_input is not supported on Spark"):
        env.create_input(object())


def test_a_streaming_job_checkpoints_at_the_interval_into_the_storage(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """enable_checkpointing(ms) becomes Spark's processingTime trigger, and the checkpoint
    storage the job's checkpoint location (no checkpoint_location argument)."""
    import time

    from pyspark.sql.streaming import DataStreamWriter

    from sparktide.common import WatermarkStrategy
    from sparktide.spark.stream_sinks import ForeachBatchSink

    triggers: list[dict[str, object]] = []
    original = DataStreamWriter.trigger

    def recording(self: DataStreamWriter, **kwargs: object) -> DataStreamWriter:
        triggers.append(kwargs)
        return original(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(DataStreamWriter, "trigger", recording)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"k": "a", "ts": 1}\n', encoding="utf-8")
    config = Configuration.from_dict(
        {
            "execution.checkpointing.interval": "1 s",
            "execution.checkpointing.min-pause": "1500 ms",
            "execution.checkpointing.dir": str(tmp_path / "ckpt"),
        }
    )
    env = StreamExecutionEnvironment.get_execution_environment(config, runtime="spark")
    frame = spark.readStream.schema("k string, ts long").json(str(tmp_path / "in"))
    batches: list[int] = []
    env.from_stream(frame, WatermarkStrategy.no_watermarks(), timestamp_column="ts").sink_to(
        ForeachBatchSink(lambda df, batch_id: batches.append(batch_id))
    )
    client = env.execute_async()
    deadline = time.monotonic() + 120
    while not client.recent_progress and time.monotonic() < deadline:
        time.sleep(0.1)
    client.stop()
    assert client.await_termination(60)
    assert triggers == [{"processingTime": "1500 milliseconds"}]  # max(interval, min pause)
    assert batches[:1] == [0]
    assert any((tmp_path / "ckpt").iterdir())  # the checkpoint went into the storage


def test_python_files_and_archives_ship_to_spark(spark: Any, tmp_path: Any) -> None:
    import zipfile

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "shipped_on_spark_h.py").write_text("FACTOR = 5\n", encoding="utf-8")
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("numbers.txt", "7\n")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.add_python_file(str(package)).add_python_archive(str(archive), "data_h")
    env.set_parallelism(2)

    def use(v: int) -> int:
        import os

        import shipped_on_spark_h
        from pyspark import SparkFiles

        # the archive is unpacked as data_h in SparkFiles' directory (on a cluster: the
        # executor's working directory)
        with open(os.path.join(SparkFiles.get("data_h"), "numbers.txt"), encoding="utf-8") as f:
            return int(shipped_on_spark_h.FACTOR * v + int(f.read()))

    stream = env.from_collection([1, 2, 3], Types.LONG()).rebalance()
    assert sorted(stream.map(use, Types.LONG()).execute_and_collect()) == [12, 17, 22]
    with pytest.raises(NotImplementedError, match="set_python_requirements is not supported"):
        requirements = tmp_path / "requirements.txt"
        requirements.write_text("pyarrow\n", encoding="utf-8")
        env.set_python_requirements(str(requirements))
        env.from_collection([1]).print()
        env.execute()


def test_a_running_session_keeps_its_python(spark: Any) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.from_collection([1, 2], Types.LONG()).map(lambda v: v + 1, Types.LONG())
    running = spark.sparkContext.pythonExec
    env.set_python_executable(running)
    assert sorted(env.execute_and_collect()) == [2, 3]
    other = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    other.set_python_executable(sys.executable + "-other").from_collection([1]).print()
    before = os.environ.get("PYSPARK_PYTHON")
    with pytest.raises(RuntimeError, match=r"cannot change it once started; set spark\.pyspark"):
        other.execute()
    assert os.environ.get("PYSPARK_PYTHON") == before  # later sessions are not pointed at it
