"""Session settings for the length of a block: set on entry, the session's own values (or
their absence) back when the block ends or fails.

>>> class Conf(dict):  # what the block needs of a RuntimeConfig
...     def set(self, key, value): self[key] = value
...     def unset(self, key): del self[key]
>>> conf = Conf(a="1")
>>> with session_settings(conf, {"a": "2", "b": "3"}):
...     sorted(conf.items())
[('a', '2'), ('b', '3')]
>>> conf
{'a': '1'}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Protocol

__all__ = ["RuntimeSettings", "session_settings"]


class RuntimeSettings(Protocol):
    """What :func:`session_settings` needs of a session's ``conf`` (a ``RuntimeConfig``)."""

    def get(self, key: str, default: str | None = None) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...

    def unset(self, key: str) -> None: ...


@contextmanager
def session_settings(conf: RuntimeSettings, settings: Mapping[str, str]) -> Iterator[None]:
    """Set ``settings`` on ``conf`` while inside (see the module docstring)."""
    saved = {key: conf.get(key, None) for key in settings}
    for key, value in settings.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
