"""``ConfigOptions`` / ``ConfigOption``: typed configuration keys (PyFlink's names).

>>> option = ConfigOptions.key("pipeline.auto-watermark-interval").long_type().default_value(200)
>>> option.key(), option.default_value(), option.value_type
('pipeline.auto-watermark-interval', 200, <class 'int'>)
>>> option.read({"pipeline.auto-watermark-interval": "50"}), option.read({})
(50, 200)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

__all__ = ["SKIP_MISSING_INPUT_FILES", "ConfigOption", "ConfigOptions"]

T = TypeVar("T")


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
        try:
            return self.value_type(raw)  # type: ignore[call-arg]
        except ValueError:
            raise ValueError(
                f"{self._key} must be a {self.value_type.__name__}, got {raw!r}"
            ) from None

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r}, {self.value_type.__name__}, {self._default!r})"


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
