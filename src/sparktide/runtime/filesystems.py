"""A checkpoint location, a local path or a URI, as a pyarrow file system and its root.

>>> filesystem, root = open_filesystem("/tmp/ckpt", "location")
>>> type(filesystem).__name__, root
('LocalFileSystem', '/tmp/ckpt')
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

__all__ = ["open_filesystem"]


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
