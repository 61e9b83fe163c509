"""Files as a source and a sink (PyFlink's ``pyflink.datastream.connectors.file_system``).

:class:`FileSource` reads the lines of a static set of files, one split per file (directories are
read recursively, in sorted order; names starting with ``.`` or ``_`` are skipped, ``.gz``,
``.bz2``, ``.xz`` and ``.deflate`` files are decompressed, as Flink does):

>>> import pathlib, tempfile
>>> base = pathlib.Path(tempfile.mkdtemp())
>>> _ = (base / "in").mkdir(), (base / "in" / "b.txt").write_text("3\\n"), \\
...     (base / "in" / "a.txt").write_text("1\\n2\\n")
>>> source = FileSource.for_record_stream_format(
...     StreamFormat.text_line_format(), str(base / "in")).process_static_file_set().build()
>>> [list(source.read_split(split)) for split in source.get_splits()]
[['1', '2'], ['3']]

:class:`FileSink` writes part files into bucket directories, like Flink's row-format
``FileSink``: ``<base>/<bucket>/<prefix>-<uuid>-<counter><suffix>``, rolled by the
:class:`RollingPolicy`; a part file is written as a hidden in-progress file and renamed to its
final name when committed (at a completed checkpoint, and at the end of the input):

>>> from sparktide.common.serialization import Encoder
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.runtime.elements import StreamRecord
>>> from sparktide.runtime.processing_time import ManualProcessingTimeService
>>> sink = (FileSink.for_row_format(str(base / "out"), Encoder.simple_string_encoder())
...     .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix")
...                              .with_part_suffix(".ext").build())
...     .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
...     .build())
>>> op = sink.create_operator(Types.TUPLE([Types.STRING(), Types.INT()]))
>>> op.setup(None, ManualProcessingTimeService())
>>> op.open()
>>> for value in [("a", 1), ("b", 2)]:
...     op.process_element(StreamRecord(value, None))
>>> op.finish(); op.close()
>>> [(p.name.startswith("prefix-") and p.suffix, p.read_text())
...  for p in (base / "out").iterdir()]
[('.ext', '(a,1)\\n(b,2)\\n')]
"""

from __future__ import annotations

import bz2
import datetime as _dt
import gzip
import io
import lzma
import os
import re
import uuid
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from sparktide.common.serialization import Encoder
from sparktide.common.time import to_millis
from sparktide.datastream.connectors.file_writer import FileWriter, PartFileInfo
from sparktide.datastream.source import Source, SourceSplit
from sparktide.runtime.operators.sink_writer import SinkWriterOperator, WriterInitContext

__all__ = [
    "BucketAssigner",
    "DefaultRollingPolicy",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileWriter",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "PartFileInfo",
    "RollingPolicy",
    "StreamFormat",
]


def _check_str(value: Any, name: str, example: str) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str, got {type(value).__name__} ({value!r}); e.g. {example}"
        )
    return value


def _path(value: Any, name: str, example: str) -> str:
    """A path given as a str or ``os.PathLike``."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return _check_str(value, name, example)


def _positive_millis(value: Any, name: str) -> int:
    millis = to_millis(value, name)
    if millis <= 0:
        raise ValueError(f"{name} must be > 0 ms, got {millis}; pass a positive interval")
    return millis


# ------------------------------------------------------------------------------------ source


class _Decompressed(io.RawIOBase):
    """A raw-deflate-with-zlib-header stream (Flink's ``.deflate``), decompressed."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._inflater = zlib.decompressobj()
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            chunk = self._raw.read(65536)
            if not chunk:
                self._buffer = self._inflater.flush()
                break
            self._buffer = self._inflater.decompress(chunk)
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_decompressed(path: str) -> BinaryIO:
    """The bytes of ``path``, decompressed by its extension as Flink's file source does."""
    lower = path.lower()
    if lower.endswith((".gz", ".gzip")):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".bz2"):
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".xz"):
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".deflate"):
        return io.BufferedReader(_Decompressed(open(path, "rb")))
    return open(path, "rb")


class StreamFormat:
    """How a file's bytes become records (PyFlink's ``StreamFormat``).

    >>> StreamFormat.text_line_format()
    StreamFormat.text_line_format('UTF-8')
    """

    __slots__ = ("_charset_name",)

    def __init__(self, charset_name: str = "UTF-8") -> None:
        _check_str(charset_name, "charset_name", "'UTF-8'")
        try:
            "".encode(charset_name)
        except LookupError:
            raise ValueError(
                f"charset_name must name a charset Python knows, got {charset_name!r}; use "
                "e.g. 'UTF-8' or 'ISO-8859-1'"
            ) from None
        self._charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Lines of text (without their ``\\n``, ``\\r\\n`` or ``\\r``), decoded with
        ``charset_name``; undecodable bytes become U+FFFD as in Java."""
        return StreamFormat(charset_name)

    def read(self, path: str) -> Iterator[str]:
        """The records of the file ``path``."""
        with _open_decompressed(path) as raw:
            text = io.TextIOWrapper(raw, encoding=self._charset_name, errors="replace")
            for line in text:  # universal newlines: \n, \r\n and \r all end a line
                yield line[:-1] if line.endswith("\n") else line

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self._charset_name!r})"


class FileSourceBuilder:
    """Configures a :class:`FileSource` (PyFlink's ``FileSourceBuilder``)."""

    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
        self._stream_format = stream_format
        self._paths = paths

    def process_static_file_set(self) -> FileSourceBuilder:
        """Reads the files present when the job starts, then finishes (the default)."""
        return self

    def monitor_continuously(self, discovery_interval: Any) -> FileSourceBuilder:
        """Not supported: the files are read as a bounded, static set."""
        raise ValueError(
            "monitor_continuously is not supported: FileSource reads a static set of files; "
            "call process_static_file_set() (or nothing) and run the job again for new files"
        )

    def build(self) -> FileSource:
        """The source."""
        return FileSource(self._stream_format, self._paths)


class FileSource(Source):
    """The records of a static set of files, one split per file (PyFlink's ``FileSource``).

    Build it with :meth:`for_record_stream_format`. ``get_splits()`` lists the files: each path
    that is a file, and the files under each path that is a directory (recursively, sorted by
    name), skipping names that start with ``.`` or ``_`` (Flink's default file filter).
    """

    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
        if not isinstance(stream_format, StreamFormat):
            raise TypeError(
                f"stream_format must be a StreamFormat, got {type(stream_format).__name__}; use "
                "StreamFormat.text_line_format()"
            )
        if not paths:
            raise ValueError("paths must name at least one file or directory; pass one or more")
        self._stream_format = stream_format
        self._paths = tuple(_path(p, f"paths[{i}]", "'/data/input'") for i, p in enumerate(paths))

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        """A builder of a source that reads the files under ``paths`` with ``stream_format``."""
        return FileSourceBuilder(stream_format, tuple(paths))

    def get_splits(self) -> list[SourceSplit]:
        files: list[str] = []
        for path in self._paths:
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"FileSource path {path!r} does not exist; create it or fix the path"
                )
            _collect(path, files)
        return [SourceSplit(str(i), path) for i, path in enumerate(files)]

    def read_split(self, split: SourceSplit) -> Iterator[str]:
        return self._stream_format.read(split.payload)

    def __repr__(self) -> str:
        return f"FileSource({self._stream_format!r}, {list(self._paths)!r})"


def _collect(path: str, files: list[str]) -> None:
    if os.path.basename(os.path.normpath(path)).startswith((".", "_")):
        return
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            _collect(os.path.join(path, name), files)
    else:
        files.append(path)


# ------------------------------------------------------------------------------------ sink


class OutputFileConfig:
    """The prefix and suffix of part file names (PyFlink's ``OutputFileConfig``).

    >>> config = OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
    >>> config.get_part_prefix(), config.get_part_suffix()
    ('pre', '.txt')
    """

    __slots__ = ("_part_prefix", "_part_suffix")

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for name, value in (("part_prefix", part_prefix), ("part_suffix", part_suffix)):
            _check_str(value, name, "'part'")
            if "/" in value or os.sep in value:
                raise ValueError(
                    f"{name} must not contain a path separator, got {value!r}; put directories "
                    "in the base path or use a BucketAssigner"
                )
        self._part_prefix = part_prefix
        self._part_suffix = part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        """A builder, starting from prefix ``"part"`` and no suffix."""
        return OutputFileConfig.OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        """The prefix of part file names."""
        return self._part_prefix

    def get_part_suffix(self) -> str:
        """The suffix of part file names."""
        return self._part_suffix

    def __repr__(self) -> str:
        return f"OutputFileConfig({self._part_prefix!r}, {self._part_suffix!r})"

    class OutputFileConfigBuilder:
        """Builds an :class:`OutputFileConfig`."""

        def __init__(self) -> None:
            self.part_prefix = "part"
            self.part_suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self.part_prefix, self.part_suffix)


class RollingPolicy:
    """When a bucket closes its part file and opens a new one (PyFlink's ``RollingPolicy``).

    >>> policy = RollingPolicy.default_rolling_policy(part_size=10, rollover_interval=1000)
    >>> part = PartFileInfo("", creation_time=0)
    >>> part.size = 11
    >>> policy.should_roll_on_event(part, "x"), policy.should_roll_on_processing_time(part, 999)
    (True, False)
    """

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: Any = 60 * 1000,
        inactivity_interval: Any = 60 * 1000,
    ) -> DefaultRollingPolicy:
        """Rolls when the part file is larger than ``part_size`` bytes (checked before each
        record), when it is ``rollover_interval`` old, or when nothing was written to it for
        ``inactivity_interval`` (intervals in ms, or a ``Duration``)."""
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        """Rolls (only) at every checkpoint."""
        return OnCheckpointRollingPolicy()

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        """Roll ``part`` when a checkpoint is taken?"""
        return True

    def should_roll_on_event(self, part: PartFileInfo, element: Any) -> bool:
        """Roll ``part`` before writing ``element`` to it?"""
        return False

    def should_roll_on_processing_time(self, part: PartFileInfo, current_time: int) -> bool:
        """Roll ``part`` at the periodic bucket check at ``current_time``?"""
        return False


class DefaultRollingPolicy(RollingPolicy):
    """Rolls by size, age and inactivity; see :meth:`RollingPolicy.default_rolling_policy`."""

    def __init__(
        self,
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: Any = 60 * 1000,
        inactivity_interval: Any = 60 * 1000,
    ) -> None:
        if type(part_size) is not int or part_size <= 0:
            raise ValueError(
                f"part_size must be an int number of bytes > 0, got {part_size!r}; "
                "e.g. 128 * 1024 * 1024"
            )
        self.part_size = part_size
        self.rollover_interval = _positive_millis(rollover_interval, "rollover_interval")
        self.inactivity_interval = _positive_millis(inactivity_interval, "inactivity_interval")

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        return part.size > self.part_size

    def should_roll_on_event(self, part: PartFileInfo, element: Any) -> bool:
        return part.size > self.part_size

    def should_roll_on_processing_time(self, part: PartFileInfo, current_time: int) -> bool:
        return (
            current_time - part.creation_time >= self.rollover_interval
            or current_time - part.last_update_time >= self.inactivity_interval
        )

    def __repr__(self) -> str:
        return (
            f"RollingPolicy.default_rolling_policy(part_size={self.part_size}, "
            f"rollover_interval={self.rollover_interval}, "
            f"inactivity_interval={self.inactivity_interval})"
        )


class OnCheckpointRollingPolicy(RollingPolicy):
    """Rolls at every checkpoint and never otherwise."""

    def __repr__(self) -> str:
        return "RollingPolicy.on_checkpoint_rolling_policy()"


# Java DateTimeFormatter letters -> (field, how to print a run of them)
_PATTERN_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.DOTALL)


def _format_field(letter: str, count: int, moment: _dt.datetime) -> str:
    def number(value: int) -> str:
        return f"{value:0{count}d}"

    if letter in "yu":
        return f"{moment.year % 100:02d}" if count == 2 else number(moment.year)
    if letter in "ML":
        if count == 3:
            return moment.strftime("%b")
        if count >= 4:
            return moment.strftime("%B")
        return number(moment.month)
    if letter == "E":
        return moment.strftime("%A" if count >= 4 else "%a")
    if letter == "S":
        return f"{moment.microsecond:06d}000"[:count]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    values = {
        "d": moment.day,
        "D": moment.timetuple().tm_yday,
        "H": moment.hour,
        "k": moment.hour or 24,
        "K": moment.hour % 12,
        "h": moment.hour % 12 or 12,
        "m": moment.minute,
        "s": moment.second,
    }
    return number(values[letter])


_PATTERN_LETTERS = set("yuMLEdDHkKhmsSa")


def _parse_pattern(format_str: str) -> list[tuple[str, int] | str]:
    """Java ``DateTimeFormatter`` pattern -> literal strings and (letter, count) fields."""
    parts: list[tuple[str, int] | str] = []
    for match in _PATTERN_TOKEN.finditer(format_str):
        token = match.group(0)
        if token.startswith("'"):
            parts.append(token[1:-1].replace("''", "'") if len(token) > 2 else "'")
        elif match.group(1):
            if token[0] not in _PATTERN_LETTERS:
                raise ValueError(
                    f"format_str {format_str!r} uses the pattern letter {token[0]!r}, which is not "
                    "supported; use y, M, d, H, h, k, K, m, s, S, D, E, a, or quote literal text "
                    "as 'text'"
                )
            parts.append((token[0], len(token)))
        else:
            parts.append(token)
    return parts


def _zone(timezone_id: str | None) -> _dt.tzinfo | None:
    if timezone_id is None:
        return None
    _check_str(timezone_id, "timezone_id", "'UTC' or 'Europe/Berlin'")
    offset = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", timezone_id)
    if timezone_id in ("Z", "UTC", "GMT", "UT"):
        return _dt.timezone.utc
    if offset:
        sign = 1 if offset.group(1) == "+" else -1
        delta = _dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        return _dt.timezone(sign * delta)
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(timezone_id)
    except (ValueError, KeyError, OSError):
        raise ValueError(
            f"timezone_id {timezone_id!r} is not a known time zone; use a region id such as "
            "'America/Los_Angeles', 'UTC', or an offset such as 'GMT-08:00'"
        ) from None


class BucketAssigner:
    """Chooses the bucket (sub-directory of the base path) of each record (PyFlink's
    ``BucketAssigner``). Subclass it and override :meth:`get_bucket_id` for your own buckets.

    >>> from types import SimpleNamespace
    >>> ctx = SimpleNamespace(current_processing_time=lambda: 1577934245006)
    >>> BucketAssigner.date_time_bucket_assigner(timezone_id="UTC").get_bucket_id("x", ctx)
    '2020-01-02--03'
    >>> BucketAssigner.date_time_bucket_assigner("yyyy/MM/dd", "GMT+05:00").get_bucket_id("x", ctx)
    '2020/01/02'
    >>> BucketAssigner.base_path_bucket_assigner().get_bucket_id("x", ctx)
    ''
    """

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """No buckets: every part file is written into the base path."""
        return BucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> BucketAssigner:
        """Buckets named after the processing time when the record arrives, formatted with the
        Java ``DateTimeFormatter`` pattern ``format_str`` in ``timezone_id`` (``None``: the
        local time zone)."""
        return _DateTimeBucketAssigner(format_str, timezone_id)

    def get_bucket_id(self, element: Any, context: Any) -> str:
        """The bucket of ``element``; ``context`` has ``current_processing_time()``,
        ``current_watermark()`` and ``timestamp()``. ``""`` means the base path itself."""
        return ""

    def __repr__(self) -> str:
        return "BucketAssigner.base_path_bucket_assigner()"


class _DateTimeBucketAssigner(BucketAssigner):
    def __init__(self, format_str: str, timezone_id: str | None) -> None:
        _check_str(format_str, "format_str", "'yyyy-MM-dd--HH'")
        self._pattern = _parse_pattern(format_str)
        self._zone = _zone(timezone_id)
        self._format_str = format_str
        self._timezone_id = timezone_id

    def get_bucket_id(self, element: Any, context: Any) -> str:
        millis = context.current_processing_time()
        seconds, ms = divmod(millis, 1000)
        if self._zone is None:
            moment = _dt.datetime.fromtimestamp(seconds).replace(microsecond=ms * 1000)
        else:
            moment = _dt.datetime.fromtimestamp(seconds, self._zone).replace(microsecond=ms * 1000)
        return "".join(
            part if isinstance(part, str) else _format_field(part[0], part[1], moment)
            for part in self._pattern
        )

    def __repr__(self) -> str:
        return (
            f"BucketAssigner.date_time_bucket_assigner({self._format_str!r}, {self._timezone_id!r})"
        )


class FileSink:
    """Writes records into part files under a base path (PyFlink's row-format ``FileSink``).

    Build it with :meth:`for_row_format`. Each parallel subtask writes its own part files; a
    file is in progress (hidden, ``.<name>.inprogress.<uuid>``) while written, pending once
    rolled, and finished (renamed to ``<prefix>-<uuid>-<counter><suffix>``, the uuid chosen per
    bucket and subtask, the counter per bucket from 0) when a checkpoint completes or the input
    ends. Every record is written as the encoder's bytes (a line).
    """

    def __init__(
        self,
        base_path: str,
        encoder: Encoder,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_file_config: OutputFileConfig,
        bucket_check_interval: int,
    ) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.bucket_assigner = bucket_assigner
        self.rolling_policy = rolling_policy
        self.output_file_config = output_file_config
        self.bucket_check_interval = bucket_check_interval

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        """A builder of a sink writing ``encoder``'s bytes of each record under ``base_path``."""
        return FileSink.RowFormatBuilder(base_path, encoder)

    def create_writer(
        self,
        context: WriterInitContext,
        type_info: Any = None,
        unique_id: Callable[[], str] | None = None,
    ) -> FileWriter:
        """The writer of one subtask. ``unique_id`` makes the per-bucket ids of part file
        names (default: random UUIDs, as Flink)."""
        return FileWriter(self, context, type_info, unique_id or (lambda: str(uuid.uuid4())))

    def create_operator(self, type_info: Any = None) -> SinkWriterOperator:
        """The operator that writes a stream declared as ``type_info`` (``None``: no declared
        type) with this sink; one per parallel subtask."""
        return SinkWriterOperator(self, type_info)

    def __repr__(self) -> str:
        return f"FileSink({self.base_path!r}, {self.encoder!r})"

    class RowFormatBuilder:
        """Configures a row-format :class:`FileSink`."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = _path(base_path, "base_path", "'/data/output'")
            if not isinstance(encoder, Encoder):
                raise TypeError(
                    f"encoder must be an Encoder, got {type(encoder).__name__}; use "
                    "Encoder.simple_string_encoder()"
                )
            self._encoder = encoder
            self._bucket_assigner: BucketAssigner = BucketAssigner.date_time_bucket_assigner()
            self._rolling_policy: RollingPolicy = RollingPolicy.default_rolling_policy()
            self._output_file_config = OutputFileConfig()
            self._bucket_check_interval = 60_000

        def with_bucket_check_interval(self, interval: Any) -> FileSink.RowFormatBuilder:
            """How often (ms, or a ``Duration``) buckets are checked for rolling by time."""
            self._bucket_check_interval = _positive_millis(interval, "interval")
            return self

        def with_bucket_assigner(
            self, bucket_assigner: BucketAssigner
        ) -> FileSink.RowFormatBuilder:
            if not isinstance(bucket_assigner, BucketAssigner):
                raise TypeError(
                    f"bucket_assigner must be a BucketAssigner, got "
                    f"{type(bucket_assigner).__name__}; e.g. "
                    "BucketAssigner.base_path_bucket_assigner()"
                )
            self._bucket_assigner = bucket_assigner
            return self

        def with_output_file_config(
            self, output_file_config: OutputFileConfig
        ) -> FileSink.RowFormatBuilder:
            if not isinstance(output_file_config, OutputFileConfig):
                raise TypeError(
                    f"output_file_config must be an OutputFileConfig, got "
                    f"{type(output_file_config).__name__}; build it with OutputFileConfig.builder()"
                )
            self._output_file_config = output_file_config
            return self

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            if not isinstance(rolling_policy, RollingPolicy):
                raise TypeError(
                    f"rolling_policy must be a RollingPolicy, got "
                    f"{type(rolling_policy).__name__}; e.g. RollingPolicy.default_rolling_policy()"
                )
            self._rolling_policy = rolling_policy
            return self

        def disable_compact(self) -> FileSink.RowFormatBuilder:
            """Compaction is never enabled; accepted for PyFlink compatibility."""
            return self

        def build(self) -> FileSink:
            return FileSink(
                self._base_path,
                self._encoder,
                self._bucket_assigner,
                self._rolling_policy,
                self._output_file_config,
                self._bucket_check_interval,
            )
