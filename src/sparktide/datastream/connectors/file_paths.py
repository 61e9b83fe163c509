"""Paths of the file connectors: argument checks, listing the files of a source, and opening
(decompressed) files.

Directories are listed recursively in sorted order; names starting with ``.`` or ``_`` are
skipped (Flink's default file filter, which also skips Spark's ``_SUCCESS`` markers and hidden
in-progress files):

>>> import pathlib, tempfile
>>> base = pathlib.Path(tempfile.mkdtemp())
>>> for name in ("b.txt", "a.txt", "_SUCCESS", ".hidden"):
...     _ = (base / name).write_text(name)
>>> [pathlib.Path(p).name for p in list_files([str(base)])]
['a.txt', 'b.txt']
>>> list_files([str(base / "missing")])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
FileNotFoundError: FileSource path '.../missing' does not exist; create it or fix the path
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import zlib
from collections.abc import Sequence
from typing import Any, BinaryIO

from sparktide.common.time import to_millis

__all__ = [
    "as_path",
    "check_str",
    "is_hidden",
    "list_files",
    "open_decompressed",
    "positive_millis",
]


def check_str(value: Any, name: str, example: str) -> str:
    """``value`` if it is a str, else a ``TypeError`` naming ``name`` and an example."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str, got {type(value).__name__} ({value!r}); e.g. {example}"
        )
    return value


def as_path(value: Any, name: str, example: str) -> str:
    """A path given as a str or ``os.PathLike``, as a str."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return check_str(value, name, example)


def positive_millis(value: Any, name: str) -> int:
    """An interval in ms (or a ``Duration``) that must be > 0."""
    millis = to_millis(value, name)
    if millis <= 0:
        raise ValueError(f"{name} must be > 0 ms, got {millis}; pass a positive interval")
    return millis


def is_hidden(path: str) -> bool:
    """Whether Flink's default filter skips ``path`` (its name starts with ``.`` or ``_``)."""
    return os.path.basename(os.path.normpath(path)).startswith((".", "_"))


def list_files(paths: Sequence[str]) -> list[str]:
    """The files under ``paths``, in order: each path that is a file, and the files under each
    path that is a directory (recursively, sorted by name), skipping hidden names."""
    files: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"FileSource path {path!r} does not exist; create it or fix the path"
            )
        _collect(path, files)
    return files


def _collect(path: str, files: list[str]) -> None:
    if is_hidden(path):
        return
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            _collect(os.path.join(path, name), files)
    else:
        files.append(path)


class _Inflated(io.RawIOBase):
    """A zlib stream (Flink's ``.deflate``), decompressed."""

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


def open_decompressed(path: str) -> BinaryIO:
    """The bytes of ``path``, decompressed by its extension as Flink's file source does
    (``.gz``, ``.gzip``, ``.bz2``, ``.xz``, ``.deflate``)."""
    lower = path.lower()
    if lower.endswith((".gz", ".gzip")):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".bz2"):
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".xz"):
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".deflate"):
        return io.BufferedReader(_Inflated(open(path, "rb")))
    return open(path, "rb")
