"""A user function that raises ends the job with one error, on either runtime, batch or
streaming: the user's own exception (catchable by its type, not a Spark wrapper), with a note
naming the operator, key, record (and micro-batch), and the user's frames instead of the
engine's; printed once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback

import pytest

from conftest import csv_stream
from sparktide.common import Row, Types
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment


def parse(v):
    if v == 3:
        raise ValueError(f"bad value {v}")
    return v * 2


class Boom(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value.v == 3:
            raise ValueError(f"bad v {value.v}")
        yield value.v


class PickyError(Exception):
    """An exception that pickles but cannot be unpickled (its __init__ takes two arguments)."""

    def __init__(self, what, why):
        super().__init__(f"{what}: {why}")


def picky(v):
    if v == 2:
        raise PickyError("record", "too even")
    return v


def notes(exc: BaseException) -> list[str]:
    return list(getattr(exc, "__notes__", ()))


def _env(runtime: str, parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    return env


def _internal(filename: str) -> bool:
    parts = os.path.abspath(filename).split(os.sep)
    engine = os.sep.join(["sparktide", "runtime"]) in filename
    return engine or "pyspark" in parts or "py4j" in parts


def _check_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    frames = traceback.extract_tb(exc.__traceback__)
    assert len(frames) <= 10, frames
    assert not [f for f in frames if _internal(f.filename)], frames
    return frames


# ------------------------------------------------------------------------------ local


def test_local_batch_raises_the_users_error_with_a_note() -> None:
    env = _env("local", 2)
    env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).map(parse).name("parse").print()
    with pytest.raises(ValueError, match=r"^bad value 3") as caught:
        env.execute()
    assert str(caught.value) == "bad value 3"
    [note] = notes(caught.value)
    assert "operator 'parse'" in note
    assert "for key 1" in note and "record 3" in note
    frames = _check_frames(caught.value)
    assert frames[-1].name == "parse"  # the user's own frame raised it


def test_local_note_truncates_a_long_record() -> None:
    env = _env("local")
    env.from_collection(["x" * 10_000]).map(lambda s: int(s)).print()
    with pytest.raises(ValueError) as caught:
        env.execute()
    [note] = notes(caught.value)
    assert "operator 'Map'" in note
    assert len(note) < 400 and "..." in note


# ------------------------------------------------------------------------------ Spark batch


def test_spark_batch_raises_the_users_error_not_a_wrapper(spark) -> None:
    env = _env("spark", 2)
    env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).map(parse).name("parse").print()
    with pytest.raises(ValueError, match=r"^bad value 3") as caught:
        env.execute()
    assert type(caught.value) is ValueError
    [note] = notes(caught.value)
    assert "operator 'parse'" in note and "for key 1" in note and "record 3" in note
    assert "on a Spark worker" in note and "in parse" in note  # the user's frames
    assert "py4j" not in note and "pyspark" not in note
    _check_frames(caught.value)


def test_spark_batch_error_that_cannot_travel_names_its_type(spark) -> None:
    from sparktide.spark.failures import UserFunctionError

    env = _env("spark")
    stream = env.from_collection([1, 2, 3]).map(picky)
    with pytest.raises(UserFunctionError, match=r"PickyError: record: too even") as caught:
        stream.execute_and_collect()
    assert "operator 'Map'" in notes(caught.value)[0]


def test_spark_to_dataframe_of_a_failed_job_fails_not_empty(spark) -> None:
    # the failure is in the source stage; the frame is read from the keyed stage after it
    env = _env("spark", 2)
    stream = env.from_collection([1, 2, 3, 4]).map(parse).key_by(lambda v: v % 2).map(str)
    with pytest.raises(ValueError, match="bad value 3"):  # inferring its columns runs the job
        stream.to_dataframe().collect()
    typed = stream.map(str, output_type=Types.STRING()).to_dataframe()  # runs when it is read
    with pytest.raises(Exception, match="bad value 3"):
        typed.collect()


# ------------------------------------------------------------------------------ Spark streaming


def test_spark_streaming_raises_the_users_error_with_the_batch(spark, tmp_path) -> None:
    frame = csv_stream(
        spark, tmp_path / "in", "k string, ts long, v long", "k,ts,v\na,1,1\nb,2,2\na,3,3\n"
    )
    env = _env("spark")
    seen: list[int] = []
    stream = env.from_stream(frame, timestamp_column="ts").key_by(lambda r: r.k)
    processed = stream.process(Boom(), output_type=Types.LONG()).name("boom")
    processed.foreach_batch(lambda df, b: seen.append(b))
    with pytest.raises(ValueError, match=r"^bad v 3") as caught:
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    [note] = notes(caught.value)
    assert "operator 'boom'" in note and "micro-batch 0" in note
    assert "key 'a'" in note and "record Row(k='a', ts=3, v=3)" in note
    assert "in process_element" in note
    _check_frames(caught.value)
    assert seen == []  # the failed batch reached no sink


# ------------------------------------------------------------------------------ printed once

_SCRIPT = """
from sparktide.datastream import StreamExecutionEnvironment

def parse(v):
    if v == 3:
        raise ValueError("bad value " + str(v))
    return v

env = StreamExecutionEnvironment.get_execution_environment(runtime={runtime!r})
env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).map(parse).print()
env.execute()
"""


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_a_script_prints_the_error_once(runtime, tmp_path) -> None:
    if runtime == "spark":
        pytest.importorskip("pyspark")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(runtime=runtime)))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    err = done.stderr
    assert err.count("ValueError: bad value 3") == 1, err
    assert err.count("Traceback (most recent call last)") == 1, err
    assert "PythonException" not in err and "ERROR" not in err, err
    tail = err[err.index("Traceback") :]
    assert len(tail.splitlines()) <= 30, tail
    assert 'raise ValueError("bad value " + str(v))' in tail  # the user's line
    assert "sparktide: raised by operator" in tail


def test_row_records_in_notes_are_readable() -> None:
    env = _env("local")
    env.from_collection([Row(k="a", v=1)]).map(lambda r: r.v / 0).print()
    with pytest.raises(ZeroDivisionError) as caught:
        env.execute()
    assert "record Row(k='a', v=1)" in notes(caught.value)[0]


def test_without_printed_notes_the_note_is_the_cause() -> None:
    # Python 3.10 prints no notes: the note also becomes the exception's cause
    from sparktide.runtime.failures import UserFunctionFailure, _add_note

    exc = ValueError("bad value 3")
    _add_note(exc, "sparktide: raised by operator 'Map'", printed=False)
    assert notes(exc) == ["sparktide: raised by operator 'Map'"]
    assert isinstance(exc.__cause__, UserFunctionFailure)
    assert "operator 'Map'" in "".join(traceback.format_exception(exc))


def test_sparktide_run_prints_the_error_once(tmp_path) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(runtime="local")))
    cli = [sys.executable, "-m", "sparktide.cli", "run", "--runtime", "local", str(script)]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.count("ValueError: bad value 3") == 1, done.stderr
    assert done.stderr.count("sparktide: raised by operator") == 1, done.stderr
