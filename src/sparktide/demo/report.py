"""Writing the demo's results: Parquet tables and a short summary table.

Every table keeps its epoch-ms columns (``*_ms``, ``watermark``) and gets a local-time
column next to each time (``start`` for ``start_ms``, in ``America/New_York``), so it reads well
in pandas, DuckDB or Spark. Watermarks stay integers: they may be the end-of-input ``2**63 - 1``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from sparktide.demo.flights import NYC_TIMEZONE
from sparktide.demo.jobs import DemoResults, DemoSettings

__all__ = [
    "OUTPUT_FILES",
    "format_summary",
    "summary_rows",
    "timeline_lateness",
    "weather_summary",
    "write_tables",
]

OUTPUT_FILES = {
    "windows": "windows.parquet",
    "late": "late.parquet",
    "sessions": "sessions.parquet",
    "alerts": "alerts.parquet",
    "weather": "weather.parquet",
}

_TIME_COLUMNS = ("start_ms", "end_ms", "sched_ms", "dep_ms", "first_dep_ms", "last_dep_ms",
                 "deadline_ms", "weather_ms")  # fmt: skip


def _with_local_times(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    for column in _TIME_COLUMNS:
        if column in out.columns:
            ms = pd.to_numeric(out[column]).astype("Int64")
            local = pd.to_datetime(ms, unit="ms", utc=True).dt.tz_convert(NYC_TIMEZONE)
            out.insert(list(out.columns).index(column) + 1, column[: -len("_ms")], local)
    return out


def write_tables(
    results: DemoResults, out: str | Path, names: Iterable[str] | None = None
) -> dict[str, Path]:
    """Write windows, late, sessions, alerts and weather (``names``: those of them) as Parquet
    files into ``out`` (created if missing); returns the paths by table name."""
    wanted = list(OUTPUT_FILES) if names is None else list(names)
    unknown = [name for name in wanted if name not in OUTPUT_FILES]
    if unknown:
        raise ValueError(f"names: no output table {unknown}; the tables are {list(OUTPUT_FILES)}")
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in wanted:
        filename = OUTPUT_FILES[name]
        path = target / filename
        _with_local_times(results.tables[name]).to_parquet(path, index=False)
        written[name] = path
    return written


def summary_rows(results: DemoResults) -> list[dict[str, Any]]:
    """Per airport: departures, windows, late firings, late flights (side output), the busiest
    hour (final counts)."""
    windows, late = results.tables["windows"], results.tables["late"]
    rows = []
    for airport in sorted(set(windows["origin"]) | set(late["origin"])):
        mine = windows[windows["origin"] == airport]
        final = mine.sort_values("firing").groupby("start_ms")["departures"].last()
        busiest = int(final.max()) if len(final) else 0
        rows.append(
            {
                "airport": airport,
                "departures": int(final.sum()) + int((late["origin"] == airport).sum()),
                "windows": len(final),
                "late_firings": int(mine["late_firing"].sum()),
                "late_dropped": int((late["origin"] == airport).sum()),
                "busiest_hour": busiest,
            }
        )
    return rows


LOW_VISIBILITY_MILES = 3.0
DELAYED_MINUTES = 15


def weather_summary(results: DemoResults) -> dict[str, Any]:
    """Job d in numbers: departures ``joined`` with an observation, ``late`` for the join,
    ``without`` an observation in the hour before them, and the share of joined departures
    delayed by ``DELAYED_MINUTES`` or more in low visibility (``< LOW_VISIBILITY_MILES``) and
    otherwise (``None`` when there is no such departure)."""
    weather = results.tables["weather"]
    late = len(results.tables["weather_late"])
    joined = int(weather["key"].nunique())
    per_departure = weather.drop_duplicates("key")
    visib = pd.to_numeric(per_departure["visib"])
    delayed = pd.to_numeric(per_departure["delay_minutes"]) >= DELAYED_MINUTES
    low = visib < LOW_VISIBILITY_MILES
    good = visib >= LOW_VISIBILITY_MILES

    def share(mask: pd.Series) -> float | None:
        return float(delayed[mask].mean()) if mask.any() else None

    return {
        "pairs": len(weather),
        "joined": joined,
        "late": late,
        "without": results.departed - joined - late,
        "low_visibility": int(low.sum()),
        "delayed_low_visibility": share(low),
        "delayed_good_visibility": share(good),
    }


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def format_summary(results: DemoResults, runtime: str) -> str:
    """The summary printed by ``sparktide demo``."""
    s = results.settings
    rate = results.flights / results.seconds if results.seconds > 0 else float("inf")
    lines = [
        f"{results.flights:,} flights ({results.departed:,} departed) replayed in "
        f"{results.seconds:.1f} s on the {runtime} runtime: {rate:,.0f} flights/s "
        f"({results.items:,} source records, with the time ticks that move quiet airports' "
        "clocks)",
        "",
        f"a. departures per airport and hour ({s.window_minutes} min windows, watermark "
        f"{s.out_of_orderness_minutes} min behind, {s.allowed_lateness_minutes} min lateness)",
        f"   {'airport':<8}{'departures':>11}{'windows':>9}{'late firings':>14}"
        f"{'too late':>10}{'busiest hour':>14}",
    ]
    for r in summary_rows(results):
        lines.append(
            f"   {r['airport']:<8}{r['departures']:>11,}{r['windows']:>9,}"
            f"{r['late_firings']:>14,}{r['late_dropped']:>10,}{r['busiest_hour']:>14,}"
        )
    sessions = results.tables["sessions"]
    if len(sessions):
        multi = sessions["flights"] > 1
        longest = sessions.sort_values(["flights", "start_ms"], ascending=[False, True]).iloc[0]
        lines += [
            "",
            f"b. plane sessions (gap {s.session_gap_minutes} min): {len(sessions):,} sessions "
            f"of {sessions['tailnum'].nunique():,} planes, {multi.mean():.0%} with 2+ flights; "
            f"busiest: {longest['tailnum']} with {longest['flights']} flights "
            f"({_shorten(longest['route'], 48)}); {results.session_late:,} flights too late "
            "for a session",
        ]
    alerts = results.tables["alerts"]
    cancelled = int((alerts["status"] == "cancelled").sum())
    delayed = alerts[alerts["status"] == "delayed"]
    worst = int(delayed["delay_minutes"].max()) if len(delayed) else 0
    lines += [
        "",
        f"c. not departed {s.alert_after_minutes} min after schedule: {len(alerts):,} alerts "
        f"({cancelled:,} cancelled, {len(delayed):,} delayed, longest delay {worst:,} min)",
    ]
    w = weather_summary(results)
    joined_share = w["joined"] / results.departed if results.departed else 0.0
    lines += [
        "",
        f"d. weather at departure (interval join, observation in the {s.weather_minutes} min "
        f"before): {w['joined']:,} of {results.departed:,} departures ({joined_share:.1%}) "
        f"joined, {w['without']:,} with no observation, {w['late']:,} too late for the join",
        f"   delayed {DELAYED_MINUTES}+ min: {_percent(w['delayed_low_visibility'])} of the "
        f"{w['low_visibility']:,} departures in visibility under {LOW_VISIBILITY_MILES:g} mi, "
        f"{_percent(w['delayed_good_visibility'])} of the others",
    ]
    return "\n".join(lines)


def timeline_lateness(results: DemoResults, settings: DemoSettings) -> str:
    """What the timeline's day had of lateness: the flights of ``settings.airport`` scheduled
    that day that came too late for their window (the late side output) and the late firings
    of that day's windows."""
    start, end = settings.day_range_ms()
    late, windows = results.tables["late"], results.tables["windows"]
    dropped = late[(late["origin"] == settings.airport) & late["sched_ms"].between(start, end - 1)]
    refired = windows[
        (windows["origin"] == settings.airport)
        & windows["start_ms"].between(start, end - 1)
        & windows["late_firing"]
    ]
    where = f"{settings.airport} on {settings.day}"
    if dropped.empty and refired.empty:
        return f"timeline of {where}: no late flights that day (choose a stormier --day)"
    return (
        f"timeline of {where}: {len(dropped):,} flights too late for their window (red), "
        f"{len(refired):,} late firings (orange flights)"
    )


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
