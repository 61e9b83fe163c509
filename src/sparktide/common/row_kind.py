"""``RowKind``: the change a row describes in a changelog (PyFlink's ``pyflink.common.RowKind``).

>>> RowKind.UPDATE_AFTER.short_string()
'+U'
"""

from __future__ import annotations

from enum import Enum

__all__ = ["RowKind"]


class RowKind(Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        return ("+I", "-U", "+U", "-D")[self.value]

    def __str__(self) -> str:
        return self.short_string()
