"""``ConfigOptions`` / ``ConfigOption``: typed configuration keys (PyFlink's names).

>>> option = ConfigOptions.key("pipeline.auto-watermark-interval").long_type().default_value(200)
>>> option.key(), option.default_value(), option.value_type
('pipeline.auto-watermark-interval', 200, <class 'int'>)
>>> option.read({"pipeline.auto-watermark-interval": "50"}), option.read({})
(50, 200)
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Generic, TypeVar

__all__ = [
    "CHUNKED_RECORDS",
    "COLUMNAR_EXECUTION",
    "MAP_BATCHES_SIZE",
    "SKIP_MISSING_INPUT_FILES",
    "STREAM_SINKS_ONE_PASS",
    "WINDOW_FAST_PATH",
    "ColumnarExecution",
    "ConfigOption",
    "ConfigOptions",
]

T = TypeVar("T")
E = TypeVar("E", bound=Enum)


class ConfigOption(Generic[T]):
    """A configuration key with its value type and default value."""

    __slots__ = ("_default", "_key", "value_type")

    def __init__(self, key: str, value_type: type[T], default: T | None) -> None:
        self._key = key
        self.value_type = value_type
        self._default = default

    def key(self) -> str:
        return self._key

    def has_default_value(self) -> bool:
        return self._default is not None

    def default_value(self) -> T | None:
        return self._default

    def read(self, options: Mapping[str, object]) -> T | None:
        """The option's value in ``options`` (a dict of keys to text), parsed to its type; the
        default when the key is absent."""
        raw = options.get(self._key)
        if raw is None:
            return self._default
        if self.value_type is bool:
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise ValueError(f"{self._key} must be 'true' or 'false', got {raw!r}")
            return text == "true"  # type: ignore[return-value]
        if issubclass(self.value_type, Enum):
            return _enum_value(self._key, self.value_type, raw)
        try:
            return self.value_type(raw)  # type: ignore[call-arg]
        except ValueError:
            raise ValueError(
                f"{self._key} must be a {self.value_type.__name__}, got {raw!r}"
            ) from None

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r}, {self.value_type.__name__}, {self._default!r})"


def _enum_value(key: str, enum: type[E], raw: object) -> E:
    if isinstance(raw, enum):
        return raw
    text = str(raw).strip().lower()
    for member in enum:
        if str(member.value) == text:
            return member
    choices = " | ".join(str(m.value) for m in enum)
    raise ValueError(f"{key} must be one of {choices}, got {raw!r}")


class ConfigOptions:
    """Builds :class:`ConfigOption` s: ``ConfigOptions.key(k).int_type().default_value(v)``."""

    @staticmethod
    def key(key: str) -> ConfigOptions.OptionBuilder:
        if not isinstance(key, str) or not key:
            raise TypeError(f"key must be a non-empty str, got {key!r}")
        return ConfigOptions.OptionBuilder(key)

    class OptionBuilder:
        """Picks the value type of an option."""

        def __init__(self, key: str) -> None:
            self._key = key

        def boolean_type(self) -> ConfigOptions.TypedConfigOptionBuilder[bool]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, bool)

        def int_type(self) -> ConfigOptions.TypedConfigOptionBuilder[int]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, int)

        def long_type(self) -> ConfigOptions.TypedConfigOptionBuilder[int]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, int)

        def float_type(self) -> ConfigOptions.TypedConfigOptionBuilder[float]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, float)

        def double_type(self) -> ConfigOptions.TypedConfigOptionBuilder[float]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, float)

        def string_type(self) -> ConfigOptions.TypedConfigOptionBuilder[str]:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, str)

        def enum_type(self, enum: type[E]) -> ConfigOptions.TypedConfigOptionBuilder[E]:
            """An option whose text is one of ``enum``'s values (any case)."""
            return ConfigOptions.TypedConfigOptionBuilder(self._key, enum)

    class TypedConfigOptionBuilder(Generic[T]):
        """Sets the default value of an option."""

        def __init__(self, key: str, value_type: type[T]) -> None:
            self._key = key
            self._type = value_type

        def default_value(self, value: T) -> ConfigOption[T]:
            return ConfigOption(self._key, self._type, value)

        def no_default_value(self) -> ConfigOption[T]:
            return ConfigOption(self._key, self._type, None)


# ---------------------------------------------------------------------------------------------
# sparktide's own options (``env.configure({key: value})``)

SKIP_MISSING_INPUT_FILES: ConfigOption[bool] = (
    ConfigOptions.key("sparktide.streaming.skip-missing-input-files")
    .boolean_type()
    .default_value(False)
)
"""A streaming job replaying a micro-batch whose input files are gone: ``false`` (the default,
as Spark's ``ignoreMissingFiles``) stops with an error naming them; ``true`` replays the batch
without them and reports the records skipped (see :mod:`sparktide.spark.batch_inputs`)."""


class ColumnarExecution(Enum):
    """The values of :data:`COLUMNAR_EXECUTION`."""

    AUTO = "auto"
    """A job of an eligible shape runs on columns; an unordered ``to_dataframe()`` of one in
    Spark's own engine when no record can be late."""
    PYTHON = "python"
    """Eligible jobs run on columns, always in Python (never in Spark's own engine)."""
    OFF = "off"
    """Every job runs per record."""


COLUMNAR_EXECUTION: ConfigOption[ColumnarExecution] = (
    ConfigOptions.key("sparktide.execution.columnar")
    .enum_type(ColumnarExecution)
    .default_value(ColumnarExecution.AUTO)
)
"""Whether a built-in window aggregate of an eligible shape runs on Arrow columns on Spark
instead of per record (``auto``, the default; ``python``; ``off``): see docs/architecture.md,
"Execution paths". The environment variable ``SPARKTIDE_COLUMNAR`` overrides the default for
jobs that do not set this option (:mod:`sparktide.common.env_overrides`)."""

WINDOW_FAST_PATH: ConfigOption[bool] = (
    ConfigOptions.key("sparktide.execution.window-fast-path").boolean_type().default_value(True)
)
"""Whether per-record window operators that qualify take the window fast path (``true``, the
default) or always the general steps (``false``): the same output, calls, timers and state."""

MAP_BATCHES_SIZE: ConfigOption[int] = (
    ConfigOptions.key("sparktide.execution.map-batches.size").int_type().default_value(4096)
)
"""The most records ``DataStream.map_batches`` hands its function at once (default 4096; a
batch also ends at every watermark). Read when ``map_batches`` is called."""

STREAM_SINKS_ONE_PASS: ConfigOption[bool] = (
    ConfigOptions.key("sparktide.execution.stream-sinks-one-pass")
    .boolean_type()
    .default_value(True)
)
"""How a streaming micro-batch run per record hands its Spark-written sinks (``ParquetBatchSink``,
``JsonBatchSink``, ``foreach_batch``) their records. ``true`` (the default): the records its
tasks write as typed columns come to the driver with the batch's other rows, in the batch's one
Spark job, and each sink gets a DataFrame of them made on the driver (no frame is kept or read
twice); the driver holds a batch's sink records for a moment. ``false``: the batch's frames are
persisted and each sink reads its records from them in a Spark job of its own, for micro-batches
whose output is too large for the driver's memory. The same rows in the same order either way."""

CHUNKED_RECORDS: ConfigOption[bool] = (
    ConfigOptions.key("sparktide.execution.chunks").boolean_type().default_value(True)
)
"""Whether a source that reads Arrow batches (the NEXMark tables, DataFrame sources) hands its
records on a batch at a time through the chained ``map``, ``filter`` and ``flat_map`` right
after it (``true``, the default) or record by record (``false``): the same output, order,
errors and state (docs/architecture.md, "How a record flows")."""
