"""``sum``/``min``/``max``/``min_by``/``max_by`` over a field, as PyFlink defines them.

The field is a position (tuple, list, Row) or a Row field name; on a plain value only field 0
(the whole value) can be selected. ``sum``/``min``/``max`` keep the other fields of the first
value; ``min_by``/``max_by`` return the whole value holding the extreme (the first on ties).

>>> FieldAggregator(1, "sum").reduce(("a", 1), ("a", 2))
('a', 3)
>>> FieldAggregator(0, "max_by").reduce(3, 5)
5
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["KINDS", "FieldAggregator"]

KINDS = ("sum", "min", "max", "min_by", "max_by")


class FieldAggregator:
    """A reduce function aggregating one field; ``in_place`` lets lists and Rows be updated
    in place (rolling aggregates), otherwise they are copied (a window element may be shared)."""

    def __init__(self, position: int | str, kind: str, in_place: bool = False) -> None:
        if not isinstance(position, (int, str)) or isinstance(position, bool):
            raise TypeError(
                f"the field position must be an int or a str (a Row field name), got "
                f"{type(position).__name__}"
            )
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.position = position
        self.kind = kind
        self.in_place = in_place

    def reduce(self, v1: Any, v2: Any) -> Any:
        pos, kind = self.position, self.kind
        composite = isinstance(v2, (tuple, list)) or hasattr(v2, "as_dict")
        if not composite and pos != 0:
            raise TypeError(
                f"field {pos!r} selected on a basic type; on a basic type only field 0 (the whole "
                "value) can be selected"
            )
        a, b = (v1[pos], v2[pos]) if composite else (v1, v2)
        if kind == "min_by":
            return v2 if b < a else v1
        if kind == "max_by":
            return v2 if b > a else v1
        if kind == "sum":
            new = a + b
        elif kind == "min":
            new = b if b < a else a
        else:
            new = b if b > a else a
        if not composite:
            return new
        # a tuple or list was indexed by pos above, so pos is an int on their paths (a Row takes
        # a name too): a fact of the values, which the checker cannot see
        if isinstance(v1, tuple) and not hasattr(v1, "as_dict"):
            items = list(v1)
            items[pos] = new  # type: ignore[index]
            return tuple(items)
        out = v1 if self.in_place else (list(v1) if isinstance(v1, list) else copy.copy(v1))
        out[pos] = new  # type: ignore[index]
        return out
