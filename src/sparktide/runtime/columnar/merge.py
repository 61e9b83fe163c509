"""Merging one round's partials into the open windows without sorting the open windows again.

The open windows of a subtask (:class:`~sparktide.runtime.columnar.engine.WindowEngine`) are
columns sorted by ``(code, start)``, one row per window. A round adds rows for the windows of
its partials: several per window when several splits (or panes) fed it. The general merge sorts
all of them by ``(code, start, registration)`` and keeps, per window, the row registered first,
summing counts and combining aggregates. When every open window a new row meets is pending and
was registered in an earlier round (the open windows come first then, as the sort would put
them), only the new rows need sorting: :func:`merge_round` finds their windows by binary search
and gives the same columns, or ``None`` when that condition (or an exact integer key packing)
does not hold and the caller runs the general merge.

>>> import numpy as np
>>> old = {"code": np.array([0, 1]), "start": np.array([0, 0]), "count": np.array([2, 3]),
...        "pending": np.array([True, True]), "reg_r": np.array([0, 0]),
...        "clean_seq": np.array([-1, -1]), "sum_0": np.array([5, 7])}
>>> new = {"code": np.array([1, 1, 0]), "start": np.array([0, 10, 10]),
...        "count": np.array([1, 4, 1]), "pending": np.array([True, True, True]),
...        "reg_r": np.array([1, 1, 1]), "reg_s": np.array([0, 1, 0]),
...        "reg_seq": np.array([9, 2, 3]), "clean_seq": np.array([-1, -1, -1]),
...        "sum_0": np.array([1, 2, 3])}
>>> for k in ("reg_s", "reg_seq"):
...     old[k] = np.array([0, 0])
>>> out = merge_round(old, new, [("sum_0", np.add)])
>>> out["code"].tolist(), out["start"].tolist(), out["count"].tolist(), out["sum_0"].tolist()
([0, 0, 1, 1], [0, 10, 0, 10], [2, 1, 4, 4], [5, 3, 8, 2])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["merge_round"]

Columns = dict[str, npt.NDArray[np.generic]]
_LIMIT = 1 << 62


def merge_round(
    old: Columns, new: Columns, aggregates: Sequence[tuple[str, np.ufunc]]
) -> Columns | None:
    """``old`` (open windows, sorted and unique by ``(code, start)``) with ``new`` (one
    round's rows, every column of ``old``) merged in; ``aggregates``: each aggregate column
    and the ufunc that combines two of its values. ``None``: the fast path does not apply."""
    n_old = len(old["code"])
    if not len(new["code"]):
        return old
    starts = [new["start"]] + ([old["start"]] if n_old else [])
    codes = [new["code"]] + ([old["code"]] if n_old else [])
    lo = min(int(s.min()) for s in starts)
    width = max(int(s.max()) for s in starts) - lo + 1
    top = max(int(c.max()) for c in codes)
    if min(int(c.min()) for c in codes) < 0 or (top + 1) * width >= _LIMIT:
        return None
    new_key = _i64(new["code"]) * width + (_i64(new["start"]) - lo)
    old_key = _i64(old["code"]) * width + (_i64(old["start"]) - lo)
    if n_old > 1 and not bool(np.all(old_key[1:] > old_key[:-1])):
        return None  # windows created by raw records since the last merge: not sorted
    order = np.lexsort((new["reg_seq"], new["reg_s"], new["reg_r"], new_key))
    key = new_key[order]
    heads = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    head_rows = order[heads]
    group_key = key[heads]
    at = np.searchsorted(old_key, group_key)
    matched = at < n_old
    matched[matched] = old_key[at[matched]] == group_key[matched]
    hit = at[matched]
    if len(hit) and (
        not bool(old["pending"][hit].all())
        or int(old["reg_r"][hit].max()) >= int(new["reg_r"].min())
    ):
        return None  # an open window would not come first: the general merge decides
    sorted_new = {k: v[order] for k, v in new.items() if k in ("count", "pending", "clean_seq")}
    count = np.add.reduceat(sorted_new["count"], heads)
    clean = np.maximum.reduceat(sorted_new["clean_seq"], heads)
    pending = np.logical_or.reduceat(sorted_new["pending"], heads)
    reduced = {name: op.reduceat(new[name][order], heads) for name, op in aggregates}
    out = dict(old)  # the columns a merge changes are copied: ``old`` stays as it was
    for name in ("count", "clean_seq", "pending", *(name for name, _ in aggregates)):
        out[name] = old[name].copy()
    out["count"][hit] = _i64(out["count"])[hit] + count[matched]
    out["clean_seq"][hit] = np.maximum(out["clean_seq"][hit], clean[matched])
    out["pending"][hit] = np.asarray(out["pending"], np.bool_)[hit] | pending[matched]
    for name, op in aggregates:
        out[name][hit] = op(out[name][hit], reduced[name][matched])
    fresh = ~matched
    if not fresh.any():
        return out
    rows = head_rows[fresh]
    added = {k: v[rows] for k, v in new.items()}
    added["count"] = count[fresh]
    added["clean_seq"] = clean[fresh]
    added["pending"] = pending[fresh]
    for name, _ in aggregates:
        added[name] = reduced[name][fresh]
    slots = at[fresh] + np.arange(len(rows))  # where each new window lands
    total = n_old + len(rows)
    is_new = np.zeros(total, np.bool_)
    is_new[slots] = True
    kept = np.flatnonzero(~is_new)
    merged: Columns = {}
    for k, v in out.items():
        column = np.empty(total, v.dtype)
        column[kept] = v
        column[slots] = added[k].astype(v.dtype, copy=False)
        merged[k] = column
    return merged


def _i64(column: npt.NDArray[np.generic]) -> npt.NDArray[np.int64]:
    """An integer column as int64 (no copy when it is one)."""
    return np.asarray(column, dtype=np.int64)
