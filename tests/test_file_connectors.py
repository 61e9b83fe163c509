"""FileSource, FileSink (part files, rolling, buckets, committing), Encoder, the writer operator.

The part-file layout follows what PyFlink 2.3's ``FileSink.for_row_format`` produced for its
``word_count`` example (``--output``): ``<base>/2026-11-21--06/prefix-<uuid>-0.ext`` holding
``(a,1)\\n(b,2)\\n(c,3)\\n`` (a date-time bucket, one uuid per bucket and subtask, a counter from 0,
Java's ``toString()`` of each record and a newline).
"""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import lzma
import re
import zlib
from pathlib import Path

import pytest

from sparktide.common.serialization import Encoder, SimpleStringEncoder
from sparktide.common.time import Duration
from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.datastream.connectors import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from sparktide.datastream.connectors.file_system import PartFileInfo
from sparktide.datastream.source import SourceSplit
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.operators.sink_writer import SinkWriterOperator
from sparktide.runtime.processing_time import ManualProcessingTimeService

PART = re.compile(r"^(?P<prefix>.+)-(?P<uuid>[0-9a-f-]{36})-(?P<counter>\d+)(?P<suffix>.*)$")

# ------------------------------------------------------------------------------------ source


def text_source(*paths: object, charset: str = "UTF-8") -> FileSource:
    return (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(charset), *paths)
        .process_static_file_set()
        .build()
    )


def read_all(source: FileSource) -> list[tuple[str, list[str]]]:
    return [(Path(s.payload).name, list(source.read_split(s))) for s in source.get_splits()]


def test_one_split_per_file_in_sorted_order_recursively(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_text("z1\nz2")
    (tmp_path / "b" / "a.txt").write_text("a1\n")
    (tmp_path / "c.txt").write_text("c1\r\nc2\rc3\n\nc5\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "deep").mkdir()
    (tmp_path / "a" / "deep" / "x.txt").write_text("")
    source = text_source(tmp_path)
    splits = source.get_splits()
    assert [s.split_id for s in splits] == ["0", "1", "2", "3"]
    assert all(isinstance(s, SourceSplit) for s in splits)
    assert read_all(source) == [
        ("x.txt", []),
        ("a.txt", ["a1"]),
        ("z.txt", ["z1", "z2"]),  # the last line needs no newline
        ("c.txt", ["c1", "c2", "c3", "", "c5"]),  # \r\n and \r end lines too, as in Java
    ]
    assert source.get_splits() == splits  # deterministic


def test_hidden_files_are_skipped_and_paths_keep_their_order(tmp_path: Path) -> None:
    for name in ("ok.txt", ".hidden", "_SUCCESS"):
        (tmp_path / name).write_text(name + "\n")
    (tmp_path / "_tmp").mkdir()
    (tmp_path / "_tmp" / "inside.txt").write_text("no\n")
    single = tmp_path / "single.txt"
    single.write_text("s\n")
    assert read_all(text_source(str(single), str(tmp_path))) == [
        ("single.txt", ["s"]),
        ("ok.txt", ["ok.txt"]),
        ("single.txt", ["s"]),
    ]


def test_compressed_files_are_decompressed(tmp_path: Path) -> None:
    payload = b"one\ntwo\n"
    (tmp_path / "a.gz").write_bytes(gzip.compress(payload))
    (tmp_path / "b.bz2").write_bytes(bz2.compress(payload))
    (tmp_path / "c.xz").write_bytes(lzma.compress(payload))
    (tmp_path / "d.deflate").write_bytes(zlib.compress(payload))
    assert [lines for _, lines in read_all(text_source(tmp_path))] == [["one", "two"]] * 4


def test_charsets_and_undecodable_bytes(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("café\n".encode("latin-1"))
    assert read_all(text_source(tmp_path, charset="ISO-8859-1")) == [("latin.txt", ["café"])]
    assert read_all(text_source(tmp_path)) == [("latin.txt", ["caf\ufffd"])]  # as Java: U+FFFD


def test_source_errors_are_explained(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text_source(tmp_path / "missing").get_splits()
    with pytest.raises(ValueError, match="at least one"):
        text_source()
    with pytest.raises(TypeError, match=r"paths\[0\] must be a str"):
        text_source(5)
    with pytest.raises(ValueError, match="charset_name"):
        StreamFormat.text_line_format("no-such-charset")
    with pytest.raises(TypeError, match="stream_format must be a StreamFormat"):
        FileSource.for_record_stream_format("text", "/x").build()
    with pytest.raises(ValueError, match="process_static_file_set"):
        FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), "/x"
        ).monitor_continuously(Duration.of_seconds(1))


# ------------------------------------------------------------------------------------ encoder


def test_simple_string_encoder_writes_java_strings_for_declared_types() -> None:
    encoder = Encoder.simple_string_encoder()
    assert isinstance(encoder, SimpleStringEncoder)
    tuple_type = Types.TUPLE([Types.STRING(), Types.INT(), Types.FLOAT()])
    assert encoder.encode(("a", 1, 110.1), tuple_type) == b"(a,1,110.1)\n"
    assert (
        encoder.encode(Row(1, None), Types.ROW([Types.INT(), Types.STRING()])) == b"+I[1, null]\n"
    )
    assert encoder.encode(("a", 1)) == b"('a', 1)\n"  # no declared type: str(value)
    assert encoder.encode("é", Types.PICKLED_BYTE_ARRAY()) == "é\n".encode()
    assert Encoder.simple_string_encoder("UTF-16-BE").encode("a") == b"\x00a\x00\n"
    with pytest.raises(ValueError, match="charset_name"):
        Encoder.simple_string_encoder("nope")
    with pytest.raises(NotImplementedError):
        Encoder().encode("x")


# ------------------------------------------------------------------------------------ sink


class Run:
    """A FileSink operator per subtask on a manual clock."""

    def __init__(self, sink: FileSink, type_info=None, parallelism: int = 1, start: int = 0):
        self.clock = ManualProcessingTimeService(start)
        self.ops: list[SinkWriterOperator] = []
        for i in range(parallelism):
            op = sink.create_operator(type_info)
            op.setup(None, self.clock, OperatorSetup("sink", i, parallelism))
            op.open()
            self.ops.append(op)

    def write(self, value, subtask: int = 0, ts: int | None = None) -> None:
        self.ops[subtask].process_element(StreamRecord(value, ts))

    def finish(self) -> None:
        for op in self.ops:
            op.finish()
            op.close()


def files(base: Path) -> dict[str, str]:
    """Relative path -> content of every file under ``base`` (hidden ones included)."""
    return {str(p.relative_to(base)): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def committed(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and not p.name.startswith("."))


def in_progress(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and p.name.startswith("."))


def base_sink(base: Path, **rolling) -> FileSink:
    builder = FileSink.for_row_format(str(base), Encoder.simple_string_encoder())
    builder.with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
    if rolling:
        builder.with_rolling_policy(RollingPolicy.default_rolling_policy(**rolling))
    return builder.build()


def test_word_count_layout_as_pyflink(tmp_path: Path) -> None:
    sink = (
        FileSink.for_row_format(base_path=str(tmp_path), encoder=Encoder.simple_string_encoder())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("prefix").with_part_suffix(".ext").build()
        )
        .with_rolling_policy(RollingPolicy.default_rolling_policy())
        .build()
    )
    start = 1_795_760_000_000
    run = Run(sink, Types.TUPLE([Types.STRING(), Types.INT()]), start=start)
    for value in [("a", 1), ("b", 2), ("c", 3)]:
        run.write(value)
    assert committed(tmp_path) == [] and len(in_progress(tmp_path)) == 1
    run.finish()
    [part] = committed(tmp_path)
    # the default bucket: yyyy-MM-dd--HH of the processing time in the local time zone
    assert part.parent.name == dt.datetime.fromtimestamp(start / 1000).strftime("%Y-%m-%d--%H")
    match = PART.match(part.name)
    assert match and match["prefix"] == "prefix" and match["suffix"] == ".ext"
    assert match["counter"] == "0"
    assert part.read_text() == "(a,1)\n(b,2)\n(c,3)\n"
    assert in_progress(tmp_path) == []


def test_in_progress_file_is_hidden_until_committed(tmp_path: Path) -> None:
    run = Run(base_sink(tmp_path))
    run.write("x")
    [hidden] = in_progress(tmp_path)
    assert re.match(r"^\.part-[0-9a-f-]{36}-0\.inprogress\.[0-9a-f-]{36}$", hidden.name)
    assert run.ops[0].writer.in_progress_files() == [hidden]
    run.finish()
    [part] = committed(tmp_path)
    assert part.name == hidden.name[1:].split(".inprogress.")[0]
    assert part.read_text() == "x\n" and in_progress(tmp_path) == []


def test_rolling_by_size_checks_before_each_record(tmp_path: Path) -> None:
    run = Run(base_sink(tmp_path, part_size=5))
    for value in ["aa", "bb", "cc", "dddddddd", "e"]:
        run.write(value)
    run.finish()
    parts = committed(tmp_path)
    by_counter = sorted(parts, key=lambda p: int(PART.match(p.name)["counter"]))
    # a file rolls once it holds more than part_size bytes: "aa\nbb\n" is 6 > 5
    assert [p.read_text() for p in by_counter] == ["aa\nbb\n", "cc\ndddddddd\n", "e\n"]
    assert len({PART.match(p.name)["uuid"] for p in parts}) == 1  # one uuid per bucket
    assert [PART.match(p.name)["counter"] for p in by_counter] == ["0", "1", "2"]


def test_rolling_by_time_on_the_bucket_check_timer(tmp_path: Path) -> None:
    sink = (
        FileSink.for_row_format(tmp_path, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(
            RollingPolicy.default_rolling_policy(
                rollover_interval=10_000, inactivity_interval=Duration.of_seconds(3)
            )
        )
        .with_bucket_check_interval(1000)
        .build()
    )
    run = Run(sink)
    run.write("a")
    run.clock.set_current_time(2000)
    run.write("b")  # still the same file: 2 s old, written 0 s ago
    run.clock.set_current_time(4000)  # inactive for 2 s < 3 s: stays open
    assert len(in_progress(tmp_path)) == 1
    run.clock.set_current_time(5000)  # inactive for 3 s: rolled (pending)
    run.write("c")
    run.clock.set_current_time(7000)
    run.write("d")
    run.clock.set_current_time(9000)
    run.write("e")
    run.clock.set_current_time(15_000)  # created at 5000: 10 s old, rolled
    run.finish()
    contents = sorted(p.read_text() for p in committed(tmp_path))
    assert contents == ["a\nb\n", "c\nd\ne\n"]


def test_on_checkpoint_policy_rolls_and_commits_at_checkpoints(tmp_path: Path) -> None:
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    run = Run(sink)
    op = run.ops[0]
    run.write("a")
    run.write("b")
    op.prepare_checkpoint(1)
    run.write("c")
    assert committed(tmp_path) == []  # pending until the checkpoint completes
    op.notify_checkpoint_complete(1)
    assert [p.read_text() for p in committed(tmp_path)] == ["a\nb\n"]
    assert len(in_progress(tmp_path)) == 1  # "c" is in a new file
    op.prepare_checkpoint(2)
    op.notify_checkpoint_complete(2)
    run.finish()
    assert sorted(p.read_text() for p in committed(tmp_path)) == ["a\nb\n", "c\n"]
    assert in_progress(tmp_path) == []


def test_default_policy_rolls_large_files_only_at_checkpoints(tmp_path: Path) -> None:
    run = Run(base_sink(tmp_path, part_size=3))
    op = run.ops[0]
    run.write("ab")  # 3 bytes: not more than 3
    op.prepare_checkpoint(1)
    op.notify_checkpoint_complete(1)
    assert committed(tmp_path) == []
    run.write("c")  # 3 > 3 is false: same file, now 5 bytes
    op.prepare_checkpoint(2)
    op.notify_checkpoint_complete(2)
    assert [p.read_text() for p in committed(tmp_path)] == ["ab\nc\n"]
    run.finish()
    assert in_progress(tmp_path) == []


def test_date_time_buckets_use_the_operator_clock(tmp_path: Path) -> None:
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.date_time_bucket_assigner("yyyy/MM/dd/HH", "UTC"))
        .build()
    )
    hour = 3_600_000
    run = Run(sink, start=1_577_934_245_006)  # 2020-01-02 03:04:05.006 UTC
    run.write("first")
    run.clock.set_current_time(1_577_934_245_006 + hour)
    run.write("second")
    run.finish()
    assert {k.rsplit("/", 1)[0]: v for k, v in files(tmp_path).items()} == {
        "2020/01/02/03": "first\n",
        "2020/01/02/04": "second\n",
    }


@pytest.mark.parametrize(
    ("format_str", "zone", "expected"),
    [
        ("yyyy-MM-dd--HH", "UTC", "2020-01-02--03"),
        ("yyyy-MM-dd--HH", "America/Los_Angeles", "2020-01-01--19"),
        ("yyyy-MM-dd--HH", "GMT-08:00", "2020-01-01--19"),
        ("yyyy-MM-dd--HH", "+05:30", "2020-01-02--08"),
        ("yyMMdd'T'HHmmss.SSS", "UTC", "200102T030405.006"),
        ("'at ''x'' 'h a, EEE MMM d", "UTC", "at 'x' 3 AM, Thu Jan 2"),
        ("D/EEEE/MMMM/k/K", "UTC", "2/Thursday/January/3/3"),
    ],
)
def test_date_time_bucket_patterns(format_str: str, zone: str, expected: str) -> None:
    class Ctx:
        @staticmethod
        def current_processing_time() -> int:
            return 1_577_934_245_006

    assigner = BucketAssigner.date_time_bucket_assigner(format_str, zone)
    assert assigner.get_bucket_id("x", Ctx()) == expected


def test_bucket_assigner_errors() -> None:
    with pytest.raises(ValueError, match="pattern letter 'Q'"):
        BucketAssigner.date_time_bucket_assigner("yyyy-QQ")
    with pytest.raises(ValueError, match="timezone_id 'Mars/Base'"):
        BucketAssigner.date_time_bucket_assigner(timezone_id="Mars/Base")


def test_custom_bucket_assigner_and_parallel_subtasks(tmp_path: Path) -> None:
    class ByKey(BucketAssigner):
        def get_bucket_id(self, element, context):
            return f"key={element[0]}"

    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(ByKey())
        .build()
    )
    run = Run(sink, Types.TUPLE([Types.STRING(), Types.DOUBLE()]), parallelism=2)
    run.write(("a", 1e-05), subtask=0)
    run.write(("b", 1.0), subtask=0)
    run.write(("a", 2.5), subtask=1)
    run.finish()
    parts = committed(tmp_path)
    assert sorted(str(p.parent.relative_to(tmp_path)) for p in parts) == [
        "key=a",
        "key=a",
        "key=b",
    ]
    assert sorted(p.read_text() for p in parts) == ["(a,1.0E-5)\n", "(a,2.5)\n", "(b,1.0)\n"]
    assert len({PART.match(p.name)["uuid"] for p in parts}) == 3  # per bucket and subtask


def test_close_without_finish_leaves_files_uncommitted(tmp_path: Path) -> None:
    run = Run(base_sink(tmp_path))
    run.write("x")
    run.ops[0].close()  # a failed job: nothing is committed, as in Flink
    assert committed(tmp_path) == [] and len(in_progress(tmp_path)) == 1
    assert run.clock.num_registered_timers() == 0  # the bucket check timer is cancelled


def test_deterministic_names_with_an_injected_unique_id(tmp_path: Path) -> None:
    from sparktide.runtime.operators.sink_writer import WriterInitContext

    sink = base_sink(tmp_path, part_size=1)
    ids = iter(["id-a"])
    writer = sink.create_writer(
        WriterInitContext(0, 1, ManualProcessingTimeService()), None, lambda: next(ids)
    )
    from sparktide.runtime.operators.sink_writer import SinkWriterContext

    for value in ("1", "2"):
        writer.write(value, SinkWriterContext())
    writer.finish()
    writer.close()
    assert files(tmp_path) == {"part-id-a-0": "1\n", "part-id-a-1": "2\n"}


def test_rolling_policy_decisions() -> None:
    part = PartFileInfo("b", creation_time=100)
    policy = RollingPolicy.default_rolling_policy(5, 1000, 300)
    part.size = 5
    assert not policy.should_roll_on_event(part, "x") and not policy.should_roll_on_checkpoint(part)
    part.size = 6
    assert policy.should_roll_on_event(part, "x") and policy.should_roll_on_checkpoint(part)
    part.last_update_time = 900
    assert not policy.should_roll_on_processing_time(part, 1099)
    assert policy.should_roll_on_processing_time(part, 1100)  # 1000 ms old
    part.creation_time = 1000
    assert policy.should_roll_on_processing_time(part, 1200)  # 300 ms inactive
    checkpoint = RollingPolicy.on_checkpoint_rolling_policy()
    assert checkpoint.should_roll_on_checkpoint(part)
    assert not checkpoint.should_roll_on_event(part, "x")
    assert not checkpoint.should_roll_on_processing_time(part, 10**9)


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda: RollingPolicy.default_rolling_policy(part_size=0), ValueError, ["part_size"]),
        (
            lambda: RollingPolicy.default_rolling_policy(rollover_interval=-1),
            ValueError,
            ["rollover_interval", "> 0"],
        ),
        (lambda: OutputFileConfig("a/b", ""), ValueError, ["part_prefix", "separator"]),
        (lambda: OutputFileConfig(1, ""), TypeError, ["part_prefix"]),
        (lambda: FileSink.for_row_format("/x", "enc"), TypeError, ["encoder", "Encoder"]),
        (
            lambda: FileSink.for_row_format(
                "/x", Encoder.simple_string_encoder()
            ).with_rolling_policy("size"),
            TypeError,
            ["rolling_policy"],
        ),
        (
            lambda: FileSink.for_row_format(
                "/x", Encoder.simple_string_encoder()
            ).with_bucket_check_interval(0),
            ValueError,
            ["interval"],
        ),
        (lambda: SinkWriterOperator(object()), TypeError, ["create_writer"]),
    ],
)
def test_sink_configuration_errors(build, error, words) -> None:
    with pytest.raises(error) as caught:
        build()
    for word in words:
        assert word in str(caught.value)


def test_rows_and_maps_are_written_as_java_prints_them(tmp_path: Path) -> None:
    row_type = Types.ROW_NAMED(
        ["id", "tags"], [Types.INT(), Types.MAP(Types.STRING(), Types.INT())]
    )
    run = Run(base_sink(tmp_path), row_type)
    run.write(Row(id=1, tags={"b": 2, "a": 1}))
    run.finish()
    [part] = committed(tmp_path)
    assert part.read_text() == "+I[1, {a=1, b=2}]\n"


# ------------------------------------------------------------------------------ word_count.py

WORD_COUNT = Path(__file__).resolve().parents[1] / "examples" / "pyflink" / "word_count.py"
BUCKET = re.compile(r"^\d{4}-\d{2}-\d{2}--\d{2}$")


def run_word_count(runtime: str, monkeypatch, capsys, *args: str) -> list[str]:
    """Run PyFlink's word_count.py port in this process; its printed lines."""
    import runpy
    import sys

    monkeypatch.setenv("SPARKTIDE_RUNTIME", runtime)
    monkeypatch.setattr(sys, "argv", [str(WORD_COUNT), *args])
    capsys.readouterr()
    runpy.run_path(str(WORD_COUNT), run_name="__main__")
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]


def word_count_files(monkeypatch, capsys, runtime: str, tmp_path: Path) -> tuple[list[str], str]:
    """word_count.py --input/--output on ``runtime``: (its output lines, what it printed)."""
    import runpy

    data = runpy.run_path(str(WORD_COUNT))["word_count_data"]
    text = tmp_path / "input.txt"
    text.write_text("\n".join(data) + "\n")
    out = tmp_path / f"out-{runtime}"
    args = ("--input", str(text), "--output", str(out))
    printed = run_word_count(runtime, monkeypatch, capsys, *args)
    buckets = list(out.iterdir())
    assert len(buckets) == 1 and BUCKET.match(buckets[0].name), buckets
    parts = list(buckets[0].iterdir())
    assert len(parts) == 1 and PART.match(parts[0].name), parts
    assert PART.match(parts[0].name).group("prefix", "counter", "suffix") == ("prefix", "0", ".ext")
    return parts[0].read_text().splitlines(), "\n".join(printed)


def test_word_count_on_the_local_runtime(monkeypatch, capsys, tmp_path: Path) -> None:
    printed = run_word_count("local", monkeypatch, capsys)
    assert printed[:3] == [
        "Executing word_count example with default input data set.",
        "Use --input to specify file input.",
        "Printing result to stdout. Use --output to specify output path.",
    ]
    counts = printed[3:]
    assert "(to,7)" in counts and "(the,15)" in counts  # as PyFlink 2.3 printed
    lines, text = word_count_files(monkeypatch, capsys, "local", tmp_path)
    assert sorted(lines) == sorted(counts)  # the same words from the file as from the collection
    assert text == ""


def test_word_count_on_spark_matches_the_local_runtime(
    spark, monkeypatch, capsys, tmp_path: Path
) -> None:
    assert run_word_count("spark", monkeypatch, capsys) == run_word_count(
        "local", monkeypatch, capsys
    )
    spark_lines, _ = word_count_files(monkeypatch, capsys, "spark", tmp_path)
    local_lines, _ = word_count_files(monkeypatch, capsys, "local", tmp_path)
    assert spark_lines == local_lines
