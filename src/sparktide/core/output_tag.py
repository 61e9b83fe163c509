"""``OutputTag``: names a side output (PyFlink's ``pyflink.datastream.OutputTag``).

>>> late = OutputTag("late")
>>> late == OutputTag("late"), late.tag_id
(True, 'late')
"""

from __future__ import annotations

from typing import Any

__all__ = ["OutputTag"]


class OutputTag:
    """A typed name for a side output. Two tags with the same id are the same output."""

    __slots__ = ("tag_id", "type_info")

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError(f"tag_id must be a non-empty str, got {tag_id!r}")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"
