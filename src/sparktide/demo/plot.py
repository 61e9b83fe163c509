"""The event-time timeline of one airport and day, drawn from what the job recorded.

x: arrival order (the flight's arrival index at its airport, counted by the job's
``StampArrival``); y: event time (actual departure, local time). Drawn from the job's outputs:

- each departure as a dot at (arrival index, departure time): blue when its window had not fired
  yet, orange when it arrived after its window fired but within the allowed lateness (the window
  fires again), red x when it came later still and went to the late side output;
- the watermark each flight saw on arrival (green steps);
- every hourly window as a band from its first flight to the point where the watermark passed
  its end (the on-time firing), labelled with the count it fired with, ``+k`` for k late firings.

Why no plotting library: every mark here is axis-aligned (steps, bands, points) and the text is
short labels, so a numpy canvas with a 5x7 bitmap font and a PNG encoder
(:mod:`sparktide.demo.raster`, ~230 lines) is enough. That keeps the demo's only extra
dependency the dataset (matplotlib would bring matplotlib, pillow, fonttools, kiwisolver and
contourpy, tens of MB, into every test install) and makes the picture a pure function of the
job's output, with no fonts or rendering backends that differ between machines.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from sparktide.demo.flights import NYC_TIMEZONE
from sparktide.demo.jobs import DemoSettings
from sparktide.demo.raster import Canvas, text_width

__all__ = ["draw_timeline"]

_HOUR = 3_600_000
_INK = (30, 30, 30)
_GRID = (225, 225, 225)
_ON_TIME = (31, 90, 180)
_LATE_OK = (235, 130, 20)
_DROPPED = (210, 30, 30)
_WATERMARK = (20, 150, 60)
_BANDS = ((222, 234, 250), (236, 236, 236))
_WIDTH, _HEIGHT = 1400, 860
_LEFT, _RIGHT, _TOP, _BOTTOM = 100, 90, 96, 150


def _as_int(value: object) -> int:
    """An integral scalar of a table (a Python or numpy int) as an int."""
    if isinstance(value, int | np.integer):
        return int(value)
    raise TypeError(f"expected an integral value, got {type(value).__name__} ({value!r})")


def _local_hhmm(ms: int) -> str:
    moment = _dt.datetime.fromtimestamp(ms / 1000, ZoneInfo(NYC_TIMEZONE))
    return moment.strftime("%H:%M")


def draw_timeline(
    trace: pd.DataFrame,
    windows: pd.DataFrame,
    late: pd.DataFrame,
    settings: DemoSettings,
    path: str | Path,
) -> Path:
    """Draw the timeline of ``settings.airport`` on ``settings.day`` into the PNG ``path``.

    ``trace``, ``windows``, ``late``: the demo's tables (see :func:`sparktide.demo.jobs.run_jobs`).
    Raises ``ValueError`` when no flight of that airport departed on that day in the data.
    """
    airport = settings.airport
    day_start, day_end = settings.day_range_ms()
    points = trace[(trace["origin"] == airport)].sort_values("index")
    scheduled = points[(points["sched_ms"] >= day_start) & (points["sched_ms"] < day_end)]
    if scheduled.empty:
        raise ValueError(
            f"no departures from {airport} on {settings.day} in the replayed flights; choose "
            "another --airport/--day (or a larger --limit)"
        )
    all_dep = scheduled["dep_ms"].astype(np.int64).to_numpy()
    y_lo = max(day_start - 2 * _HOUR, int(all_dep.min()) // _HOUR * _HOUR)
    y_hi = min(day_end + 6 * _HOUR, -(-int(all_dep.max() + 1) // _HOUR) * _HOUR)
    on_day = scheduled[(all_dep >= y_lo) & (all_dep < y_hi)]
    off_scale = len(scheduled) - len(on_day)
    dep = on_day["dep_ms"].astype(np.int64).to_numpy()
    idx = scheduled["index"].to_numpy()
    x_lo, x_hi = float(idx.min()) - 0.5, float(idx.max()) + 0.5
    idx = on_day["index"].to_numpy()
    size = settings.window_minutes * 60_000
    lateness = settings.allowed_lateness_minutes * 60_000
    plot_x0, plot_x1 = _LEFT, _WIDTH - _RIGHT
    plot_y0, plot_y1 = _TOP, _HEIGHT - _BOTTOM

    def px(i: float) -> float:
        return plot_x0 + (i - x_lo) / (x_hi - x_lo) * (plot_x1 - plot_x0)

    def py(t: float) -> float:
        return plot_y1 - (t - y_lo) / (y_hi - y_lo) * (plot_y1 - plot_y0)

    c = Canvas(_WIDTH, _HEIGHT)
    # grid and hour labels
    for t in range(y_lo, y_hi + 1, _HOUR):
        c.hline(plot_x0, plot_x1, py(t), _GRID)
        if (t - y_lo) % (2 * _HOUR) == 0 or y_hi - y_lo <= 8 * _HOUR:
            label = _local_hhmm(t)
            c.text(plot_x0 - 8 - text_width(label, 2), py(t) - 7, label, _INK, 2)
    step = _nice_step((x_hi - x_lo) / 10)
    first = int(np.ceil(x_lo / step) * step)
    for i in range(first, int(x_hi) + 1, step):
        c.vline(px(i), plot_y0, plot_y1, _GRID)
        label = f"{i:,}"
        c.text(px(i) - text_width(label, 2) / 2, plot_y1 + 10, label, _INK, 2)

    # windows: bands from the first flight to the on-time firing, count labels
    mine = windows[windows["origin"] == airport]
    all_idx = points["index"].to_numpy()
    all_wm = points["watermark"].to_numpy()
    band = 0
    labels: list[tuple[float, float, str]] = []
    for start_key, group in mine.groupby("start_ms", sort=True):
        start = _as_int(start_key)
        end = start + size
        if end <= y_lo or start >= y_hi:
            continue
        in_window = (dep >= start) & (dep < end)
        if not in_window.any():
            continue
        first_x = float(idx[in_window].min())
        passed = np.nonzero(all_wm >= end - 1)[0]
        fire_x = float(all_idx[passed[0]]) - 0.5 if len(passed) else x_hi
        timely = group[~group["late_firing"]]
        top, bottom = py(min(end, y_hi)), py(max(start, y_lo))
        c.rect(px(first_x) - 3, top + 1, px(fire_x), bottom, _BANDS[band % 2])
        c.vline(px(fire_x), top + 1, bottom - 1, _INK)
        band += 1
        late_rows = group[group["late_firing"]]
        label = str(int(timely["departures"].max())) if not timely.empty else "0"
        if not late_rows.empty:
            label += f"+{len(late_rows)}"
        labels.append((min(px(fire_x) + 4, _WIDTH - text_width(label, 2) - 4),
                       (top + bottom) / 2 - 7, label))  # fmt: skip

    # the watermark each flight saw on arrival
    prev_y = None
    for i, wm in zip(all_idx, all_wm, strict=True):
        if i < x_lo or i > x_hi:
            continue
        y = py(min(max(int(wm), y_lo), y_hi))
        c.hline(px(i - 0.5), px(i + 0.5), y, _WATERMARK, 3)
        if prev_y is not None and prev_y != y:
            c.vline(px(i - 0.5), prev_y, y, _WATERMARK, 3)
        prev_y = y

    # the departures, coloured by lateness
    dropped_keys = set(late.loc[late["origin"] == airport, "key"])
    window_max = dep - dep % size + size - 1
    seen = on_day["watermark"].to_numpy()
    departures = dep.tolist()
    for key, i, dep_ms, wmax, wm in zip(
        on_day["key"], idx, departures, window_max, seen, strict=True
    ):
        if key in dropped_keys:
            c.marker(px(i), py(dep_ms), _DROPPED, "cross", 4)
        elif wmax <= wm < wmax + lateness:
            c.marker(px(i), py(dep_ms), _LATE_OK, "dot", 4)
        else:
            c.marker(px(i), py(dep_ms), _ON_TIME, "dot", 2)

    for lx, ly, label in labels:  # on top of the marks, on a white ground
        c.blend_rect(lx - 2, ly - 2, lx + text_width(label, 2) + 2, ly + 16, (255, 255, 255), 0.8)
        c.text(lx, ly, label, _INK, 2)

    # frame, titles, legend
    c.hline(plot_x0, plot_x1, plot_y0, _INK)
    c.hline(plot_x0, plot_x1, plot_y1, _INK)
    c.vline(plot_x0, plot_y0, plot_y1, _INK)
    c.vline(plot_x1, plot_y0, plot_y1, _INK)
    title = f"{airport}, flights scheduled {settings.day}: event time vs arrival order"
    c.text(_LEFT, 22, title, _INK, 3)
    sub = (
        f"watermark = max departure seen - {settings.out_of_orderness_minutes} min"
        f" (min over the airports); {settings.window_minutes} min windows;"
        f" {settings.allowed_lateness_minutes} min lateness"
    )
    c.text(_LEFT, 60, sub, (90, 90, 90), 2)
    c.text(plot_x0, plot_y1 + 36, f"arrival order (index of the flight at {airport})", _INK, 2)
    c.vtext(18, plot_y1, "event time (actual departure, local)", _INK, 2)
    n_late_ok = int(((window_max <= seen) & (seen < window_max + lateness)).sum())
    n_dropped = int(on_day["key"].isin(dropped_keys).sum())
    legend = [
        (
            _ON_TIME,
            "dot",
            f"flight ({len(on_day) - n_late_ok - n_dropped})"
            + (f", {off_scale} off the scale" if off_scale else ""),
        ),
        (_LATE_OK, "dot", f"late, within lateness ({n_late_ok})"),
        (_DROPPED, "cross", f"too late: side output ({n_dropped})"),
        (_WATERMARK, "line", "watermark at arrival"),
        (_INK, "band", "window until it fires: count+late firings"),
    ]
    lx, ly = plot_x0, _HEIGHT - 56
    for color, kind, label in legend:
        if kind == "line":
            c.hline(lx, lx + 18, ly + 7, color, 3)
        elif kind == "band":
            c.rect(lx, ly, lx + 18, ly + 14, _BANDS[0])
            c.vline(lx + 18, ly, ly + 14, color)
        else:
            c.marker(lx + 9, ly + 7, color, kind, 4)
        c.text(lx + 26, ly, label, _INK, 2)
        lx += 26 + text_width(label, 2) + 34
        if lx > _WIDTH - 300:
            lx, ly = plot_x0, ly + 26
    return c.save(path)


def _nice_step(raw: float) -> int:
    """The smallest of 1, 2, 5 x 10^k that is >= ``raw``.

    >>> _nice_step(37), _nice_step(0.3)
    (50, 1)
    """
    if raw <= 1:
        return 1
    magnitude = 10 ** int(np.floor(np.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * magnitude >= raw:
            return int(m * magnitude)
    return int(10 * magnitude)
