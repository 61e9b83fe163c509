"""All 19 of PyFlink's shipped DataStream examples, ported by rewriting their imports only.

``examples/pyflink/<example>.py`` is PyFlink 2.3's ``pyflink/examples/datastream/<example>.py``
with the modules of its import statements renamed ``pyflink`` -> ``sparktide`` and nothing else
(``tools/pyflink_oracle/ports.py`` writes them; the first test checks it against the installed
PyFlink when there is one).

- The ten self-contained examples (no Table API, connectors or async I/O) are run on the local
  runtime and on Spark and compared with PyFlink's recorded and live output by
  ``tests/test_pyflink_parity.py``; this file checks that it covers exactly those ten.
- The other nine are run here, on the local runtime, each in a subprocess with a time bound. The
  Kafka examples are pointed at files: their ``...connectors.kafka`` import becomes
  ``kafka_files`` (``tools/pyflink_oracle/kafka_files.py``: sparktide's own Kafka builders,
  whose ``build()`` gives a file sink / bounded file source per topic), so what they write is
  read back through the real serialization schemas, without a broker.

An example that does not run yet is an ``xfail(strict=True)`` naming why, checked against its
error output: when it starts to run, the test fails until the table below is updated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tool_modules import load_tool

REPO = Path(__file__).resolve().parents[1]
PORTS = REPO / "examples" / "pyflink"
ORACLE = REPO / "tools" / "pyflink_oracle"
TIMEOUT_S = 180


record = load_tool("pyflink_oracle/record.py")
ports = load_tool("pyflink_oracle/ports.py")

SHIPPED = (
    "asyncio/remote_model_inference.py",
    "basic_operations.py",
    "connectors/elasticsearch.py",
    "connectors/kafka_avro_format.py",
    "connectors/kafka_bytearray_format.py",
    "connectors/kafka_csv_format.py",
    "connectors/kafka_json_format.py",
    "connectors/kafka_row_field_extractor_example.py",
    "connectors/pulsar.py",
    "event_time_timer.py",
    "process_json_data.py",
    "state_access.py",
    "streaming_word_count.py",
    "windowing/session_with_dynamic_gap_window.py",
    "windowing/session_with_gap_window.py",
    "windowing/sliding_time_window.py",
    "windowing/tumbling_count_window.py",
    "windowing/tumbling_time_window.py",
    "word_count.py",
)

KAFKA_ON_FILES = {"sparktide.datastream.connectors.kafka": "kafka_files"}

ROWS_READ_BACK = ["+I[1,hi]", "+I[2,hello]", "+I[3,hi]", "+I[4,hello]", "+I[5,hi]"]
ROWS_READ_BACK += ["+I[6,hello]", "+I[6,hello]"]

SENDING = [
    "Sending: User=user-001, Event={'type': 'purchase', 'item': 'laptop', 'price': 999.99}",
    "Sending: User=user-002, Event={'type': 'view', 'item': 'phone', "
    "'timestamp': '2024-01-07T10:30:00'}",
    "Sending: User=user-001, Event={'type': 'add_to_cart', 'item': 'mouse', 'quantity': 2}",
    "Sending: User=user-003, Event={'type': 'purchase', 'item': 'keyboard', 'price': 79.99}",
]


@dataclass(frozen=True)
class Example:
    """How one example is run here and what it must print (``None``: only that it runs);
    ``fails_with``: the text of the error it stops with today, ``why``: the reason."""

    path: str
    expected: list[str] | None = None
    fails_with: str | None = None
    why: str = ""


NO_TABLE_API = (
    "sparktide.table.StreamTableEnvironment is not provided: PyFlink's Table API",
    "the example's source is the Table API's datagen connector (StreamTableEnvironment, "
    "TableDescriptor, to_data_stream), which sparktide does not have",
)
NO_JARS = (
    "add_jars is not supported on Spark",
    "its __main__ calls env.add_jars(...), which raises: sparktide runs no JVM of its own",
)

SCRIPTS = [
    Example("asyncio/remote_model_inference.py", None, *NO_TABLE_API),
    Example("streaming_word_count.py", None, *NO_TABLE_API),
    Example(
        "connectors/elasticsearch.py",
        None,
        "No module named 'sparktide.datastream.connectors.elasticsearch'",
        "there is no Elasticsearch connector (Spark ships none)",
    ),
    Example(
        "connectors/pulsar.py",
        None,
        "No module named 'sparktide.datastream.connectors.pulsar'",
        "there is no Pulsar connector (Spark ships none)",
    ),
    Example(
        "connectors/kafka_avro_format.py",
        None,
        "No module named 'sparktide.datastream.formats.avro'",
        "there are no Avro row (de)serialization schemas (pyflink.datastream.formats.avro)",
    ),
    Example(
        "connectors/kafka_bytearray_format.py",
        sorted(
            [
                "start reading data from kafka",
                "start writing data to kafka",
                '{"id": 1, "country": "USA"}',
                '{"id": 2, "country": "Canada"}',
                '{"id": 3, "country": "Germany"}',
            ]
        ),
        *NO_JARS,
    ),
    Example(
        "connectors/kafka_csv_format.py",
        sorted(["start reading data from kafka", "start writing data to kafka", *ROWS_READ_BACK]),
        *NO_JARS,
    ),
    Example(
        "connectors/kafka_json_format.py",
        sorted(["start reading data from kafka", "start writing data to kafka", *ROWS_READ_BACK]),
        *NO_JARS,
    ),
    Example("connectors/kafka_row_field_extractor_example.py", None),
]

# the jobs of the Kafka examples (write_to_kafka, then read_from_kafka), without their __main__
KAFKA_JOBS = [
    Example(
        "connectors/kafka_bytearray_format.py",
        sorted(
            [
                '{"id": 1, "country": "USA"}',
                '{"id": 2, "country": "Canada"}',
                '{"id": 3, "country": "Germany"}',
            ]
        ),
    ),
    Example("connectors/kafka_csv_format.py", ROWS_READ_BACK),
    Example("connectors/kafka_json_format.py", ROWS_READ_BACK),
]


class ExpectedFailure(Exception):
    """The example stopped with the error the table names."""


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    topics: Path


def _run(example: Example, tmp_path: Path, code: str | None = None) -> Run:
    """Runs the port of ``example`` (its Kafka import pointed at files) in a subprocess on the
    local runtime: the script itself, or ``code`` with the port's path as ``sys.argv[1]``."""
    source = (PORTS / example.path).read_text(encoding="utf-8")
    script = tmp_path / Path(example.path).name
    script.write_text(ports.rewrite_imports(source, KAFKA_ON_FILES), encoding="utf-8")
    topics = tmp_path / "topics"
    env = {
        **os.environ,
        "SPARKTIDE_RUNTIME": "local",
        "SPARKTIDE_KAFKA_FILES": str(topics),
        "PYTHONPATH": os.pathsep.join(
            [str(REPO / "src"), str(ORACLE), os.environ.get("PYTHONPATH", "")]
        ),
    }
    command = [sys.executable, str(script)] if code is None else [sys.executable, "-c", code]
    if code is not None:
        command.append(str(script))
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr, topics)


def _check(example: Example, run: Run) -> None:
    if run.returncode != 0:
        if example.fails_with is not None and example.fails_with in run.stderr:
            raise ExpectedFailure(example.why)
        raise AssertionError(
            f"{example.path} exited with {run.returncode}\n--- stdout\n{run.stdout[-3000:]}"
            f"\n--- stderr\n{run.stderr[-6000:]}"
        )
    if example.expected is not None:
        assert record.normalize(run.stdout) == example.expected, run.stdout


def _marks(example: Example) -> list[pytest.MarkDecorator]:
    if example.fails_with is None:
        return []
    return [pytest.mark.xfail(raises=ExpectedFailure, strict=True, reason=example.why)]


def _cases(examples: list[Example]) -> list[object]:
    return [pytest.param(e, id=e.path, marks=_marks(e)) for e in examples]


# ----------------------------------------------------------------------------- the ports


def test_every_shipped_example_has_a_port_and_is_run_somewhere() -> None:
    ported = sorted(
        p.relative_to(PORTS).as_posix() for p in PORTS.rglob("*.py") if p.name != "__init__.py"
    )
    assert ported == sorted(SHIPPED)
    here = {e.path for e in SCRIPTS}
    in_parity_test = set(record.EXAMPLES.values())
    assert here.isdisjoint(in_parity_test)
    assert here | in_parity_test == set(SHIPPED)


def test_the_ports_are_the_shipped_examples_with_only_their_imports_changed() -> None:
    python = record.pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    shipped_dir = record.shipped_examples_dir(python)
    assert ports.shipped_examples(shipped_dir) == sorted(SHIPPED)
    for relative in SHIPPED:
        original = (shipped_dir / relative).read_text(encoding="utf-8")
        port = (PORTS / relative).read_text(encoding="utf-8")
        assert port == ports.rewrite_imports(original), relative


def test_rewrite_imports_touches_import_statements_only() -> None:
    source = (
        "from pyflink.common import (Types,\n    Row)\nimport pyflink.datastream as ds\n"
        "words = ['pyflink', 'pyflink.common']  # pyflink\n"
        "from pyflink.datastream.connectors.kafka import KafkaSource\n"
    )
    assert ports.rewrite_imports(source) == (
        "from sparktide.common import (Types,\n    Row)\nimport sparktide.datastream as ds\n"
        "words = ['pyflink', 'pyflink.common']  # pyflink\n"
        "from sparktide.datastream.connectors.kafka import KafkaSource\n"
    )
    kafka = "from sparktide.datastream.connectors.kafka import KafkaSink\n"
    assert ports.rewrite_imports(kafka, KAFKA_ON_FILES) == "from kafka_files import KafkaSink\n"


# ----------------------------------------------------------------------------- running them


@pytest.mark.parametrize("example", _cases(SCRIPTS))
def test_example_runs_as_shipped(example: Example, tmp_path: Path) -> None:
    run = _run(example, tmp_path)
    _check(example, run)
    if example.path.endswith("kafka_row_field_extractor_example.py"):
        assert [line for line in run.stdout.splitlines() if line.startswith("Sending")] == SENDING
        kafka_files = load_tool("pyflink_oracle/kafka_files.py")
        messages = [
            kafka_files.decode_message(line)
            for part in sorted((run.topics / "row-extractor-example").rglob("*"))
            if part.is_file() and not part.name.startswith((".", "_"))
            for line in part.read_text(encoding="utf-8").splitlines()
        ]
        assert [key.decode() for key, _ in messages] == [
            "user-001",
            "user-002",
            "user-001",
            "user-003",
        ]
        assert json.loads(messages[0][1]) == {"type": "purchase", "item": "laptop", "price": 999.99}


JOBS = """
import runpy, sys
ns = runpy.run_path(sys.argv[1], run_name="example")
env = ns["StreamExecutionEnvironment"].get_execution_environment()
ns["write_to_kafka"](env)
ns["read_from_kafka"](env)
"""


@pytest.mark.parametrize("example", _cases(KAFKA_JOBS))
def test_kafka_example_jobs_read_back_what_they_wrote(example: Example, tmp_path: Path) -> None:
    _check(example, _run(example, tmp_path, JOBS))
