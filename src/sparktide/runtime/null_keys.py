"""Null keys are refused, as in Flink ("Assigned key must not be null!").

A ``key_by`` whose key selector returns ``None`` for a record fails the job with
:class:`NullKeyError`: keyed state, timers and key groups need a key. The check costs nothing
per record where keys are computed record by record: :class:`KeyByGroups` (the key group cache
of a keyed exchange) sees ``None`` only on a cache miss, and never caches it. A key column read
as Arrow is checked by its null count (:func:`null_key_column_error` names the first record).

>>> groups = KeyByGroups(128)
>>> groups["hello"]
35
>>> groups[None]  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.runtime.null_keys.NullKeyError: Assigned key must not be null! The key selector ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparktide.runtime.keygroups import KeyGroupCache

__all__ = [
    "NULL_KEY_ADVICE",
    "KeyByGroups",
    "NullKeyError",
    "null_key_column_error",
    "refusing_none",
]

NULL_KEY_ADVICE = (
    "filter those records out before key_by (e.g. .filter(lambda r: key(r) is not None)) or "
    "give them a key of their own (e.g. an empty string)"
)
"""How to fix a null key (every null key error says it)."""


class NullKeyError(ValueError):
    """A ``key_by`` gave a record the key ``None`` (Flink: "Assigned key must not be null!")."""


def _null_key() -> NullKeyError:
    return NullKeyError(
        "Assigned key must not be null! The key selector of key_by returned None; "
        + NULL_KEY_ADVICE
    )


class KeyByGroups(KeyGroupCache):
    """The key group cache of a keyed exchange: ``groups[key]`` as
    :class:`~sparktide.runtime.keygroups.KeyGroupCache`, and :class:`NullKeyError` for ``None``
    (checked on a cache miss only: ``None`` is never cached)."""

    __slots__ = ()

    def group_of(self, key: object) -> int:
        if key is None:
            raise _null_key()
        return super().group_of(key)


def refusing_none(selector: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``selector`` raising :class:`NullKeyError` where it returns ``None`` (for the operator
    test harnesses, where an operator computes each record's key itself).

    >>> refusing_none(str.upper)("a")
    'A'
    """

    def key_of(value: Any) -> Any:
        key = selector(value)
        if key is None:
            raise _null_key()
        return key

    return key_of


def null_key_column_error(column: str, operator: str, record: object) -> NullKeyError:
    """The error of a key column ``column`` (``key_by(column)`` into ``operator``) holding null,
    naming the first such ``record``."""
    return NullKeyError(
        f"Assigned key must not be null! key_by({column!r}) into operator {operator!r}: the "
        f"field {column!r} is null in record {record!r}; " + NULL_KEY_ADVICE
    )
