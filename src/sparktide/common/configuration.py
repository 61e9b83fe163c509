"""``Configuration``: Flink's key/value settings (PyFlink's ``pyflink.common.Configuration``).

Values are kept as Flink writes them in a configuration file (strings: ``"true"``, ``"4"``,
``"200 ms"``); the typed getters parse them and the typed setters write them, so
:meth:`Configuration.to_dict` gives what Flink's ``toMap()`` gives.

>>> config = Configuration().set_integer("parallelism.default", 4)
>>> config.set_string("execution.runtime-mode", "BATCH").get_integer("parallelism.default", 1)
4
>>> config.to_dict()
{'parallelism.default': '4', 'execution.runtime-mode': 'BATCH'}
>>> config.get_boolean("pipeline.object-reuse", False)
False

Pass one to ``StreamExecutionEnvironment.get_execution_environment(config)`` or
``env.configure(config)``: the keys sparktide knows take effect (see ``configure``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["Configuration", "add_jars_to_context_class_loader"]

T = TypeVar("T")

_TRUE = "true"
_FALSE = "false"


def _text(value: object) -> str:
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, (bytes, bytearray)):
        return ";".join(str(b) for b in value)
    return str(value)


class Configuration:
    """A mutable map of configuration keys to values, with typed getters and setters.

    ``Configuration(other)`` copies ``other``; :meth:`from_dict` builds one from a dict.

    >>> base = Configuration.from_dict({"a": "1"})
    >>> copy = Configuration(base).set_float("b", 0.5)
    >>> sorted(copy.key_set()), base.contains_key("b")
    (['a', 'b'], False)
    >>> copy.get_integer("b", 0)
    Traceback (most recent call last):
    ...
    ValueError: configuration key 'b' holds '0.5', which is not an integer; set it with \
set_integer('b', ...)
    """

    __slots__ = ("_values",)

    def __init__(self, other: Configuration | None = None, j_configuration: object = None) -> None:
        if j_configuration is not None:
            raise ValueError(
                "j_configuration is a Java object, and sparktide runs no JVM of its own: build "
                "the Configuration from a dict with Configuration.from_dict(...) instead"
            )
        if other is not None and not isinstance(other, Configuration):
            raise TypeError(
                f"other must be a Configuration to copy, got {type(other).__name__}; use "
                "Configuration.from_dict(...) for a dict"
            )
        self._values: dict[str, str] = {} if other is None else dict(other._values)

    @staticmethod
    def from_dict(map: Mapping[str, object]) -> Configuration:
        """A configuration holding every key of ``map`` (values turned into their text)."""
        if not isinstance(map, Mapping):
            raise TypeError(f"map must be a dict of keys to values, got {type(map).__name__}")
        config = Configuration()
        for key, value in map.items():
            config._set(key, _text(value))
        return config

    @staticmethod
    def parse_list_value(value: str) -> list[str]:
        """Flink's list syntax: items separated by ``;`` (``"a;b"`` -> ``['a', 'b']``).

        >>> Configuration.parse_list_value("a.py;b.py")
        ['a.py', 'b.py']
        """
        return [item.strip() for item in value.split(";") if item.strip()]

    # ------------------------------------------------------------------ typed access

    def _set(self, key: str, value: str) -> Configuration:
        if not isinstance(key, str) or not key:
            raise TypeError(f"a configuration key must be a non-empty str, got {key!r}")
        self._values[key] = value
        return self

    def _parsed(self, key: str, kind: str, setter: str, parse: Callable[[str], T]) -> T:
        raw = self._values[key]
        try:
            return parse(raw)
        except ValueError:
            raise ValueError(
                f"configuration key {key!r} holds {raw!r}, which is not {kind}; set it with "
                f"{setter}({key!r}, ...)"
            ) from None

    def get_string(self, key: str, default_value: str) -> str:
        return self._values.get(key, default_value)

    def set_string(self, key: str, value: str) -> Configuration:
        return self._set(key, _text(value))

    def get_integer(self, key: str, default_value: int) -> int:
        if key not in self._values:
            return default_value
        return self._parsed(key, "an integer", "set_integer", int)

    def set_integer(self, key: str, value: int) -> Configuration:
        if type(value) is not int:
            raise TypeError(f"value of {key!r} must be an int, got {type(value).__name__}")
        return self._set(key, str(value))

    def get_boolean(self, key: str, default_value: bool) -> bool:
        if key not in self._values:
            return default_value
        raw = self._values[key].strip().lower()
        if raw not in (_TRUE, _FALSE):
            raise ValueError(
                f"configuration key {key!r} holds {self._values[key]!r}, which is not 'true' or "
                f"'false'; set it with set_boolean({key!r}, ...)"
            )
        return raw == _TRUE

    def set_boolean(self, key: str, value: bool) -> Configuration:
        if not isinstance(value, bool):
            raise TypeError(f"value of {key!r} must be a bool, got {type(value).__name__}")
        return self._set(key, _text(value))

    def get_float(self, key: str, default_value: float) -> float:
        if key not in self._values:
            return default_value
        return self._parsed(key, "a number", "set_float", float)

    def set_float(self, key: str, value: float) -> Configuration:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"value of {key!r} must be a float, got {type(value).__name__}")
        return self._set(key, str(float(value)))

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        """Bytes stored by :meth:`set_bytearray`.

        >>> Configuration().set_bytearray("k", bytearray(b"hi")).get_bytearray("k", bytearray())
        bytearray(b'hi')
        """
        if key not in self._values:
            return default_value
        raw = self._values[key]
        try:
            return bytearray(int(b) for b in raw.split(";") if b)
        except ValueError:
            raise ValueError(
                f"configuration key {key!r} holds {raw!r}, which is not a byte array; set it "
                f"with set_bytearray({key!r}, ...)"
            ) from None

    def set_bytearray(self, key: str, value: bytearray) -> Configuration:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"value of {key!r} must be a bytearray, got {type(value).__name__}")
        return self._set(key, _text(value))

    # ------------------------------------------------------------------ the whole map

    def key_set(self) -> set[str]:
        return set(self._values)

    def contains_key(self, key: str) -> bool:
        return key in self._values

    def remove_config(self, key: str) -> bool:
        """Remove ``key``; whether it was there."""
        return self._values.pop(key, None) is not None

    def add_all(self, other: Configuration, prefix: str | None = None) -> Configuration:
        """Copy every key of ``other`` into this one (as ``prefix + key`` with a prefix).

        >>> Configuration().add_all(Configuration.from_dict({"k": 1}), "p.").to_dict()
        {'p.k': '1'}
        """
        if not isinstance(other, Configuration):
            raise TypeError(f"other must be a Configuration, got {type(other).__name__}")
        for key, value in other._values.items():
            self._values[(prefix or "") + key] = value
        return self

    def add_all_to_dict(self, target_dict: dict[str, str]) -> None:
        target_dict.update(self._values)

    def to_dict(self) -> dict[str, str]:
        return dict(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and other._values == self._values

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"Configuration({self._values!r})"


def add_jars_to_context_class_loader(jar_urls: list[str]) -> None:
    """Not supported on Spark, because sparktide runs no JVM of its own to load jars into: put
    a jar on Spark's classpath with the ``spark.jars`` or ``spark.jars.packages`` setting of
    the SparkSession (or ``spark-submit --jars / --packages``)."""
    raise NotImplementedError(
        "add_jars_to_context_class_loader is not supported on Spark, because sparktide runs no "
        "JVM of its own: add the jars to the SparkSession with spark.jars (local files) or "
        f"spark.jars.packages (Maven coordinates) instead; got {jar_urls!r}"
    )
