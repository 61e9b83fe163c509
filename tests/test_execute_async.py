"""``execute_async()`` of a bounded job runs it in the background and returns a JobClient whose
result can be awaited, as PyFlink's (``get_job_execution_result().result()``), on the local
runtime and on Spark."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

from sparktide.common.job import BackgroundJobClient, JobClient, JobExecutionResult, JobStatus
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.functions import SinkFunction


class _Gate(SinkFunction):
    """Collects values into ``out`` once ``gate`` opens (shared by the copies of each
    subtask: the instance attributes are deep-copied, the class attributes are not)."""

    gate = threading.Event()
    out: ClassVar[list[Any]] = []

    def invoke(self, value: Any, context: Any) -> None:
        if not type(self).gate.wait(60):
            raise TimeoutError("the test never opened the gate")
        type(self).out.append(value)


def _env(runtime: str = "local") -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(runtime=runtime)


def test_a_bounded_job_runs_in_the_background_and_its_result_is_awaited() -> None:
    _Gate.gate.clear()
    _Gate.out = []
    env = _env()
    env.from_collection([1, 2, 3]).map(lambda x: x * 10).add_sink(_Gate())
    client = env.execute_async("tens")
    assert isinstance(client, JobClient) and isinstance(client, BackgroundJobClient)
    assert client.get_job_name() == "tens"
    assert client.get_job_status().result() is JobStatus.RUNNING  # held by the sink
    assert client.await_termination(0.05) is False
    # streams built now belong to the next job, not to the running one
    late = env.from_collection([7]).map(lambda x: x + 1).execute_and_collect()
    assert list(late) == [8]
    _Gate.gate.set()
    result = client.get_job_execution_result().result(timeout=60)
    assert isinstance(result, JobExecutionResult) and result.get_job_name() == "tens"
    assert sorted(_Gate.out) == [10, 20, 30]
    assert client.await_termination() is True
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client.get_accumulators().result(timeout=10)["rounds"] >= 1


def test_a_failure_is_the_results_exception() -> None:
    env = _env()
    env.from_collection([1, 0]).map(lambda x: 1 // x).name("Invert").print()
    client = env.execute_async()
    with pytest.raises(ZeroDivisionError) as caught:
        client.get_job_execution_result().result(timeout=60)
    assert any("raised by operator 'Invert'" in n for n in caught.value.__notes__)
    assert client.get_job_status().result() is JobStatus.FAILED
    with pytest.raises(ZeroDivisionError):
        client.await_termination()
    with pytest.raises(RuntimeError, match="a bounded job started with execute_async"):
        client.cancel()


def test_bad_calls_are_refused_before_the_job_starts() -> None:
    env = _env()
    with pytest.raises(RuntimeError, match="no sinks defined"):
        env.execute_async()
    env.from_collection([1]).print()
    with pytest.raises(ValueError, match="this job has no streaming source"):
        env.execute_async(checkpoint_location="/tmp/nowhere")


def test_a_bounded_job_in_the_background_on_spark(spark: Any, capsys: Any) -> None:
    env = _env("spark")
    env.set_parallelism(2)
    keyed = env.from_collection([("a", 1), ("b", 2), ("a", 3)]).key_by(lambda r: r[0])
    keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    client = env.execute_async("sums")
    result = client.get_job_execution_result().result(timeout=300)
    assert result.get_job_name() == "sums"
    assert client.get_job_status().result() is JobStatus.FINISHED
    printed = sorted(line.split("> ")[-1] for line in capsys.readouterr().out.splitlines())
    assert printed == ["('a', 1)", "('a', 4)", "('b', 2)"]
