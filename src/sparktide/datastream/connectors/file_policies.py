"""How a :class:`~sparktide.datastream.connectors.file_system.FileSink` names, rolls and buckets
its part files (PyFlink's ``OutputFileConfig``, ``RollingPolicy`` and ``BucketAssigner``).

>>> OutputFileConfig.builder().with_part_prefix("prefix").build()
OutputFileConfig('prefix', '')
>>> RollingPolicy.on_checkpoint_rolling_policy()
RollingPolicy.on_checkpoint_rolling_policy()
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from typing import Any
from zoneinfo import ZoneInfo

from sparktide.datastream.connectors.file_paths import check_str, positive_millis
from sparktide.datastream.connectors.file_writer import PartFileInfo

__all__ = [
    "BucketAssigner",
    "DefaultRollingPolicy",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "RollingPolicy",
]


class OutputFileConfig:
    """The prefix and suffix of part file names (PyFlink's ``OutputFileConfig``).

    >>> config = OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
    >>> config.get_part_prefix(), config.get_part_suffix()
    ('pre', '.txt')
    """

    __slots__ = ("_part_prefix", "_part_suffix")

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for name, value in (("part_prefix", part_prefix), ("part_suffix", part_suffix)):
            check_str(value, name, "'part'")
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
        self.rollover_interval = positive_millis(rollover_interval, "rollover_interval")
        self.inactivity_interval = positive_millis(inactivity_interval, "inactivity_interval")

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
    check_str(timezone_id, "timezone_id", "'UTC' or 'Europe/Berlin'")
    offset = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", timezone_id)
    if timezone_id in ("Z", "UTC", "GMT", "UT"):
        return _dt.timezone.utc
    if offset:
        sign = 1 if offset.group(1) == "+" else -1
        delta = _dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        return _dt.timezone(sign * delta)
    try:
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
        check_str(format_str, "format_str", "'yyyy-MM-dd--HH'")
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
