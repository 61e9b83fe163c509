"""A checkpoint location or an output folder, a local path or a URI, as a pyarrow file system and
its root; and the check that such a folder can be written.

>>> filesystem, root = open_filesystem("/tmp/ckpt", "location")
>>> type(filesystem).__name__, root
('LocalFileSystem', '/tmp/ckpt')

:func:`check_writable` is what a job runs before its first batch, for its checkpoint location
and every folder its sinks write: it creates the folder (as the job would) and writes and
deletes an empty probe file in it, through the folder's pyarrow file system, so it answers for
whoever runs the job (root included: a read-only mount or a path under a regular file refuses
root too), on a local disk or an object store. A folder that cannot be written raises
:class:`NotWritableError` naming it, why, and what to do:

>>> import tempfile
>>> file = tempfile.NamedTemporaryFile()
>>> check_writable(file.name + "/out", "the folder of sink 'out'")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.runtime.filesystems.NotWritableError: the folder of sink 'out' '.../out' cannot be \
written: ... is a regular file, not a folder; ...
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

    from sparktide.runtime.graph import SinkNode

__all__ = [
    "NotWritableError",
    "check_sink_folders",
    "check_writable",
    "open_filesystem",
    "write_failure",
]

_PROBE = ".sparktide-write-check-"


class NotWritableError(OSError):
    """A folder a job writes (its checkpoint location, a sink's output) cannot be written."""


def open_filesystem(location: str, what: str) -> tuple[FileSystem, str]:
    """The file system of ``location`` (a relative path is made absolute) and the path in it;
    ``what`` names the setting in the error for a location pyarrow cannot open."""
    from pyarrow import fs

    if "://" not in location:
        location = os.path.abspath(location)
    try:
        filesystem, root = fs.FileSystem.from_uri(location)
    except Exception as exc:
        raise ValueError(
            f"{what} {location!r} is not a path or a URI pyarrow.fs can open: {exc}"
        ) from None
    return filesystem, root


def _regular_file_above(path: str) -> str | None:
    """The regular file that ``path`` (local) or a folder above it is, if any."""
    current = path
    while True:
        if os.path.exists(current):
            return None if os.path.isdir(current) else current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def write_failure(exc: OSError, path: str) -> str:
    """Why writing ``path`` failed with ``exc``, and what to do, for people."""
    code = exc.errno
    local = _regular_file_above(path) if os.path.isabs(path) else None
    if code == errno.ENOTDIR or (code == errno.EEXIST and local is not None):
        what = f"{local or 'a folder above it'} is a regular file, not a folder"
        return f"{what}; choose another path, or move that file away"
    if code == errno.ENOSPC:
        return "no space left on its device: free space there or choose a larger disk"
    if code == errno.EROFS:
        return "its file system is mounted read-only: choose a writable location"
    if code in (errno.EACCES, errno.EPERM) or isinstance(exc, PermissionError):
        return (
            "permission denied: give the user running the job (and, for what the workers "
            "write, the Spark workers' user) write access to it, or choose another location"
        )
    return f"{exc}; check the path and its file system"


def check_writable(location: str, what: str) -> None:
    """Raise :class:`NotWritableError` unless the folder ``location`` (a path or a pyarrow.fs
    URI) can be created and written; ``what`` names it in the message (e.g.
    ``"checkpoint_location"``)."""
    if not isinstance(location, str) or not location:
        raise TypeError(
            f"{what} must be a non-empty str (a path or a pyarrow.fs URI such as "
            f"'file:///tmp/out' or 's3://bucket/out'), got {location!r}"
        )
    filesystem, root = open_filesystem(location, what)
    probe = f"{root.rstrip('/')}/{_PROBE}{uuid.uuid4().hex}"
    try:
        filesystem.create_dir(root, recursive=True)
        with filesystem.open_output_stream(probe) as out:
            out.write(b"")
        filesystem.delete_file(probe)
    except OSError as exc:
        error = NotWritableError(
            f"{what} {location!r} cannot be written: {write_failure(exc, root)}"
        )
        error.errno = exc.errno
        raise error from None


def check_sink_folders(sinks: Iterable[SinkNode]) -> None:
    """:func:`check_writable` for the folder of every sink in ``sinks`` that writes files
    (its ``output_location``: ``FileSink``, ``ParquetBatchSink``, ``JsonBatchSink``); a
    folder on a file system pyarrow does not open here (e.g. ``hdfs://`` without libhdfs,
    which only Spark's writers reach) is left to them."""
    for node in sinks:
        location = node.output_location
        if location is None:
            continue
        what = f"the output folder of sink {node.name!r}"
        try:
            open_filesystem(location, what)
        except ValueError:
            continue
        check_writable(location, what)
