"""The four demo jobs on the flights replay, built into one environment and run together.

a. **Departures per airport and hour**: event time = actual departure, a bounded-out-of-orderness
   watermark per split (airport), 1-hour tumbling event-time windows per origin with allowed
   lateness and a late side output. Before the window, :class:`StampArrival` (a
   ``KeyedProcessFunction`` keyed by origin, like the window) numbers each flight in arrival
   order and records the watermark the keyed operators see when it arrives; the window operator
   downstream sees the same watermark at the same record, so these stamps are the measured
   timeline the plot draws.
b. **Plane sessions**: event-time session windows per ``tailnum`` (gap 8 h): number of flights,
   first/last departure, the NYC airports it left from and its route. Two NYC departures of
   a plane are at least a round trip apart (median 25 h, only 5% under 4.5 h), so a 3-hour gap
   would make almost every session a single flight; 8 hours joins the rotations of a day and
   splits at night.
c. **Not-departed alerts**: a ``KeyedProcessFunction`` keyed by flight (carrier, flight number,
   origin, date). Event time is the *scheduled* departure (the replay is in scheduled order, so
   the watermark is the schedule clock). Every flight becomes an ``expected`` event and, unless
   cancelled, a ``departed`` event, both at the flight's place in the replay.
   ``expected`` registers an event-time timer at ``sched + N``; ``departed`` deletes it when the
   flight left at or before ``sched + N`` and otherwise only records the departure time (in event
   time the deadline came first, so the timer must still fire). When the watermark passes
   ``sched + N`` the timer fires and emits an :class:`Alert`: ``cancelled`` (no departure) or
   ``delayed`` (departed after the deadline, with the delay). So a flight is flagged exactly
   when it had not left ``N`` minutes after its schedule, whatever the order of arrival.
d. **Weather at departure**: an interval join of the departures (keyed by origin) with the
   hourly weather observations of their origin (a second source, :class:`WeatherReplay`, paced
   in step with the flights; event time = observation hour, monotonous watermark). Each
   departure meets the observations ``w`` with ``dep - 1 h < w.time <= dep``: the lower bound
   is exclusive, so that with hourly observations a departure meets exactly one (the latest
   observation at or before it; a departure on the hour meets that hour's, not also the one an
   hour earlier), or none where the series has a gap. :class:`DepartureWeather` turns each pair
   into a :class:`WeatherAtDeparture`. Departures that reach the join behind its watermark (the
   minimum of both inputs' watermarks) go to a late side output.

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.demo.flights import load_flights
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> results = run_jobs(env, load_flights(limit=2_000), DemoSettings(airport="EWR",
...                    day="2013-01-01"))
>>> sorted(results.tables)
['alerts', 'late', 'sessions', 'trace', 'weather', 'weather_late', 'windows']
>>> first = results.tables["windows"].iloc[0]
>>> first.origin, int(first.departures), int(first.firing), bool(first.late_firing)
('EWR', 5, 0, False)
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import pandas as pd

from sparktide.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessJoinFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from sparktide.demo.flights import (
    NYC_TIMEZONE,
    Flight,
    FlightReplay,
    Weather,
    WeatherReplay,
    departure_strategy,
    is_flight,
    is_weather,
    load_weather,
    schedule_strategy,
    weather_strategy,
)

__all__ = [
    "Alert",
    "Arrival",
    "CountDepartures",
    "DemoResults",
    "DemoSettings",
    "DepartureWeather",
    "HourlyCount",
    "NotDepartedAlert",
    "PlaneSession",
    "SessionSummary",
    "StampArrival",
    "WeatherAtDeparture",
    "WindowCount",
    "build_jobs",
    "run_jobs",
]

_MINUTE = 60_000
_TRACE_AFTER_DAY = 6 * 60 * _MINUTE  # to see the day's last windows fire
LATE_DEPARTURES = OutputTag("late-departures")
LATE_FOR_SESSIONS = OutputTag("late-for-sessions")
LATE_FOR_WEATHER = OutputTag("late-for-weather")


@dataclass(frozen=True)
class DemoSettings:
    """The knobs of the demo (minutes unless said otherwise).

    ``out_of_orderness_minutes``: the watermark trails the latest departure seen in a split by
    this much. The replay is in scheduled order and delays reach 21 hours, so the latest
    departure seen runs ahead of the schedule by the largest recent delay: with 30 minutes, 11%
    of the flights would arrive behind their window's end plus lateness; 120 minutes keeps that
    near 1.5% -- few enough to be exceptions, enough to show. ``watermark_every``: items per
    split per round (the watermark advances at the end of each round; with 10-minute pacing
    slots, 6 items is about 13 minutes of schedule). ``airport``/``day``: the timeline to
    record for the plot (local NYC date): the trace keeps the arrivals at that airport scheduled
    or departed from that day's start to 6 hours after its end. ``weather_minutes``: job d joins
    a departure with the observations in ``(dep - weather_minutes, dep]``.
    """

    window_minutes: int = 60
    allowed_lateness_minutes: int = 15
    out_of_orderness_minutes: int = 120
    session_gap_minutes: int = 480
    alert_after_minutes: int = 60
    weather_minutes: int = 60
    watermark_every: int = 6
    pace_minutes: int | None = 10
    airport: str = "JFK"
    day: str = "2013-06-13"

    def __post_init__(self) -> None:
        for name in (
            "window_minutes",
            "session_gap_minutes",
            "alert_after_minutes",
            "weather_minutes",
            "watermark_every",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("allowed_lateness_minutes", "out_of_orderness_minutes"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if self.pace_minutes is not None and (
            type(self.pace_minutes) is not int or self.pace_minutes < 1
        ):
            raise ValueError(f"pace_minutes must be an int >= 1 or None, got {self.pace_minutes!r}")
        try:
            _dt.date.fromisoformat(self.day)
        except (TypeError, ValueError):
            raise ValueError(
                f"day must be an ISO date like '2013-06-15', got {self.day!r}"
            ) from None

    def day_range_ms(self) -> tuple[int, int]:
        """``[start, end)`` of :attr:`day` in epoch ms (local NYC midnight to midnight)."""
        zone = ZoneInfo(NYC_TIMEZONE)
        d = _dt.date.fromisoformat(self.day)
        start = _dt.datetime(d.year, d.month, d.day, tzinfo=zone)
        end = start.replace(tzinfo=None) + _dt.timedelta(days=1)
        return _ms(start), _ms(end.replace(tzinfo=zone))


def _ms(moment: _dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


# ---------------------------------------------------------------------------------------------
# Records


class Arrival(NamedTuple):
    """A departed flight as it reached the keyed operators of job a: its arrival ``index`` at
    its airport (0-based) and the ``watermark`` in force when it arrived."""

    flight: Flight
    # the field shadows tuple.index, a method mypy will not let a field replace: named as the
    # column of the trace table it becomes
    index: int  # type: ignore[assignment]
    watermark: int


class WindowCount(NamedTuple):
    """One firing of an hourly window: ``departures`` so far; ``firing`` 0 is the first;
    ``late_firing``: caused by a late flight (it arrived after the watermark had passed the
    window's end) rather than by the watermark; ``last_index``: the arrival index of the last
    flight counted; ``watermark``: the watermark when the window fired."""

    origin: str
    start_ms: int
    end_ms: int
    departures: int
    firing: int
    late_firing: bool
    last_index: int
    watermark: int


class PlaneSession(NamedTuple):
    """A plane's activity session: flights ``gap`` or less apart (by actual departure)."""

    tailnum: str
    start_ms: int
    end_ms: int
    flights: int
    first_dep_ms: int
    last_dep_ms: int
    origins: str
    route: str


class Alert(NamedTuple):
    """A flight that had not departed ``deadline_ms - sched_ms`` after its schedule."""

    key: str
    origin: str
    carrier: str
    flight: int
    sched_ms: int
    deadline_ms: int
    status: str  # "cancelled" | "delayed"
    dep_ms: int | None
    delay_minutes: int | None
    watermark: int


# ---------------------------------------------------------------------------------------------
# Job a: departures per airport and hour


def origin_of_arrival(arrival: Arrival) -> str:
    return arrival.flight.origin


def origin_of_flight(flight: Flight) -> str:
    return flight.origin


class StampArrival(KeyedProcessFunction):
    """Numbers the flights of each airport in arrival order and stamps each with the current
    watermark (keyed by origin, so it sees the watermark the window operator sees)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("arrivals", None))

    def process_element(self, value: Flight, ctx: Any) -> Iterator[Arrival]:
        index = self.count.value() or 0
        self.count.update(index + 1)
        yield Arrival(value, index, ctx.timer_service().current_watermark())


class CountDepartures(AggregateFunction):
    """Accumulator ``(count, last arrival index, watermark at that arrival)``."""

    def create_accumulator(self) -> tuple[int, int, int]:
        return (0, -1, -(2**63))

    def add(self, value: Arrival, accumulator: tuple[int, int, int]) -> tuple[int, int, int]:
        return (accumulator[0] + 1, value.index, value.watermark)

    def get_result(self, accumulator: tuple[int, int, int]) -> tuple[int, int, int]:
        return accumulator

    def merge(
        self, acc_a: tuple[int, int, int], acc_b: tuple[int, int, int]
    ) -> tuple[int, int, int]:
        last = acc_a if acc_a[1] >= acc_b[1] else acc_b
        return (acc_a[0] + acc_b[0], last[1], last[2])


class HourlyCount(ProcessWindowFunction):
    """Turns the count of a window into a :class:`WindowCount`; numbers its firings in
    per-window state."""

    FIRINGS = ValueStateDescriptor("firings", None)

    def process(self, key: str, context: Any, elements: Iterable[Any]) -> Iterator[WindowCount]:
        count, last_index, last_watermark = next(iter(elements))
        window = context.window()
        firings = context.window_state().get_state(self.FIRINGS)
        firing = firings.value() or 0
        firings.update(firing + 1)
        late = last_watermark >= window.max_timestamp()
        yield WindowCount(
            key, window.start, window.end, count, firing, late, last_index,
            context.current_watermark(),
        )  # fmt: skip

    def clear(self, context: Any) -> None:
        context.window_state().get_state(self.FIRINGS).clear()


# ---------------------------------------------------------------------------------------------
# Job b: plane sessions


def tailnum_of(flight: Flight) -> str:
    return flight.tailnum or ""


class SessionSummary(AggregateFunction):
    """Accumulator: the ``(dep_ms, origin, dest)`` of the session's flights."""

    def create_accumulator(self) -> tuple[tuple[int, str, str], ...]:
        return ()

    def add(self, value: Flight, accumulator: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*accumulator, (value.dep_ms, value.origin, value.dest))

    def get_result(self, accumulator: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(sorted(accumulator))

    def merge(self, acc_a: tuple[Any, ...], acc_b: tuple[Any, ...]) -> tuple[Any, ...]:
        return acc_a + acc_b


class PlaneSessionResult(ProcessWindowFunction):
    def process(self, key: str, context: Any, elements: Iterable[Any]) -> Iterator[PlaneSession]:
        legs = next(iter(elements))
        window = context.window()
        yield PlaneSession(
            key, window.start, window.end, len(legs), legs[0][0], legs[-1][0],
            " ".join(sorted({origin for _, origin, _ in legs})),
            " ".join(f"{origin}>{dest}" for _, origin, dest in legs),
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Job c: not-departed alerts


def expected_and_departed(flight: Flight) -> Iterator[tuple[str, Flight]]:
    """The events of a flight: ``expected`` and, unless cancelled, ``departed``."""
    yield ("expected", flight)
    if flight.dep_ms is not None:
        yield ("departed", flight)


def flight_key_of(event: tuple[str, Flight]) -> str:
    return event[1].key


class NotDepartedAlert(KeyedProcessFunction):
    """Flags a flight not departed ``after_ms`` after its scheduled departure (see the module
    docs for the exact semantics)."""

    def __init__(self, after_ms: int) -> None:
        if type(after_ms) is not int or after_ms < 0:
            raise ValueError(f"after_ms must be an int >= 0 (ms), got {after_ms!r}")
        self.after_ms = after_ms

    def open(self, runtime_context: Any) -> None:
        self.flight = runtime_context.get_state(ValueStateDescriptor("flight", None))
        self.departed = runtime_context.get_state(ValueStateDescriptor("departed", None))

    def process_element(self, value: tuple[str, Flight], ctx: Any) -> None:
        kind, flight = value
        deadline = flight.sched_ms + self.after_ms
        if kind == "expected":
            self.flight.update(flight)
            ctx.timer_service().register_event_time_timer(deadline)
        elif flight.dep_ms is not None and flight.dep_ms <= deadline:
            ctx.timer_service().delete_event_time_timer(deadline)
            self.flight.clear()
        else:
            self.departed.update(flight.dep_ms)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Alert]:
        flight: Flight | None = self.flight.value()
        if flight is None:
            return
        dep = self.departed.value()
        self.flight.clear()
        self.departed.clear()
        yield Alert(
            flight.key, flight.origin, flight.carrier, flight.flight, flight.sched_ms,
            timestamp, "cancelled" if dep is None else "delayed", dep,
            None if dep is None else (dep - flight.sched_ms) // _MINUTE,
            ctx.timer_service().current_watermark(),
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Job d: weather at departure


class WeatherAtDeparture(NamedTuple):
    """A departure and a weather observation at its origin at most an hour before it:
    the flight's ``key``, ``origin``, ``dep_ms`` and ``delay_minutes``; the observation's
    ``weather_ms`` (its hour), ``temp`` (°F), ``wind_speed`` (mph), ``visib`` (miles) and
    ``precip`` (inches), ``None`` where the data has no value."""

    key: str
    origin: str
    dep_ms: int
    delay_minutes: int
    weather_ms: int
    temp: float | None
    wind_speed: float | None
    visib: float | None
    precip: float | None


def origin_of_weather(weather: Weather) -> str:
    return weather.origin


class DepartureWeather(ProcessJoinFunction):
    """Turns a joined (departure, observation) pair into a :class:`WeatherAtDeparture`."""

    def process_element(
        self, left: Flight, right: Weather, ctx: Any
    ) -> Iterator[WeatherAtDeparture]:
        dep = ctx.get_left_timestamp()
        yield WeatherAtDeparture(
            left.key, left.origin, dep, (dep - left.sched_ms) // _MINUTE,
            ctx.get_right_timestamp(), right.temp, right.wind_speed, right.visib, right.precip,
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Building and running


class _Tag:
    """Tags a result with the name of the table it belongs to (one collected stream)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def map(self, value: Any) -> tuple[str, Any]:
        return (self.name, value)


class _AroundDay:
    """Keeps the arrivals at ``airport`` scheduled or departed within ``[start, end)``."""

    def __init__(self, airport: str, start: int, end: int) -> None:
        self.airport, self.start, self.end = airport, start, end

    def filter(self, arrival: Arrival) -> bool:
        f = arrival.flight
        return f.origin == self.airport and (
            self.start <= f.sched_ms < self.end or self.start <= f.dep_ms < self.end  # type: ignore[operator]
        )


def departure_jobs(departures: Any, settings: DemoSettings) -> dict[str, Any]:
    """Add jobs a (with the timeline trace) and b to a stream of departed :class:`Flight`
    records whose event time is the actual departure; returns the result streams by table
    name: ``windows``, ``late``, ``trace``, ``sessions``, ``session_late``."""
    # a. departures per airport and hour
    arrivals = departures.key_by(origin_of_flight).process(StampArrival())
    windows = (
        arrivals.key_by(origin_of_arrival)
        .window(TumblingEventTimeWindows.of(settings.window_minutes * _MINUTE))
        .allowed_lateness(settings.allowed_lateness_minutes * _MINUTE)
        .side_output_late_data(LATE_DEPARTURES)
        .aggregate(CountDepartures(), HourlyCount())
    )
    late = windows.get_side_output(LATE_DEPARTURES)
    start, end = settings.day_range_ms()
    trace = arrivals.filter(_AroundDay(settings.airport, start, end + _TRACE_AFTER_DAY))

    # b. plane sessions
    sessions = (
        departures.key_by(tailnum_of)
        .window(EventTimeSessionWindows.with_gap(settings.session_gap_minutes * _MINUTE))
        .side_output_late_data(LATE_FOR_SESSIONS)
        .aggregate(SessionSummary(), PlaneSessionResult())
    )
    return {
        "windows": windows,
        "late": late,
        "trace": trace,
        "sessions": sessions,
        "session_late": sessions.get_side_output(LATE_FOR_SESSIONS),
    }


def alert_job(schedule: Any, settings: DemoSettings) -> Any:
    """Add job c to a stream of :class:`Flight` records (cancelled ones included) whose event
    time is the scheduled departure; returns the stream of :class:`Alert` records."""
    return (
        schedule.flat_map(expected_and_departed)
        .key_by(flight_key_of)
        .process(NotDepartedAlert(settings.alert_after_minutes * _MINUTE))
    )


def tag_results(streams: dict[str, Any], output_type: Any = None) -> Any:
    """One stream of ``(table, record)`` pairs: the union of ``streams`` (by table name, in
    their order), each record tagged with its table's name; ``output_type``: the pairs' type
    (``Types.PICKLED_BYTE_ARRAY()`` for a DataFrame of pickled pairs)."""
    if not streams:
        raise ValueError("streams must name at least one result stream, got none")
    tagged = [stream.map(_Tag(name), output_type=output_type) for name, stream in streams.items()]
    return tagged[0].union(*tagged[1:]) if len(tagged) > 1 else tagged[0]


def build_jobs(
    env: StreamExecutionEnvironment,
    flights: pd.DataFrame,
    settings: DemoSettings,
    progress: Callable[[int], None] | None = None,
    weather: pd.DataFrame | None = None,
) -> tuple[Any, int]:
    """Add the four jobs (and the timeline trace) to ``env``; returns the stream of tagged
    results ``(table, record)`` and the number of items the sources will read.

    ``weather``: a table from :func:`~sparktide.demo.flights.load_weather` (default: load it).
    """
    env.get_config().set_watermark_every(settings.watermark_every)
    departures_replay = FlightReplay(
        flights, departed_only=True, pace_minutes=settings.pace_minutes, progress=progress
    )
    schedule_replay = FlightReplay(flights, pace_minutes=settings.pace_minutes, progress=progress)
    weather_replay = WeatherReplay(
        load_weather() if weather is None else weather, departures_replay, progress=progress
    )
    departures = env.from_source(
        departures_replay,
        departure_strategy(settings.out_of_orderness_minutes * _MINUTE),
        "flights",
    ).filter(is_flight)
    streams = departure_jobs(departures, settings)

    # c. not-departed alerts, on the schedule clock
    schedule = env.from_source(schedule_replay, schedule_strategy(), "schedule").filter(is_flight)
    streams["alerts"] = alert_job(schedule, settings)

    # d. weather at departure: observations in (dep - 1 h, dep]
    observations = env.from_source(weather_replay, weather_strategy(), "weather").filter(is_weather)
    joined = (
        departures.key_by(origin_of_flight)
        .interval_join(observations.key_by(origin_of_weather))
        .between(-settings.weather_minutes * _MINUTE, 0)
        .lower_bound_exclusive()
        .side_output_left_late_data(LATE_FOR_WEATHER)
        .process(DepartureWeather())
    )
    streams["weather"] = joined
    streams["weather_late"] = joined.get_side_output(LATE_FOR_WEATHER)
    tagged = tag_results(streams)
    items = departures_replay.num_items + schedule_replay.num_items + weather_replay.num_items
    return tagged, items


@dataclass
class DemoResults:
    """The results of a run: one DataFrame per table, and run statistics."""

    tables: dict[str, pd.DataFrame]
    settings: DemoSettings
    flights: int
    departed: int
    session_late: int
    seconds: float
    items: int


_COLUMNS: dict[str, list[str]] = {
    "windows": list(WindowCount._fields),
    "late": ["key", "origin", "sched_ms", "dep_ms", "index", "watermark"],
    "trace": ["key", "origin", "sched_ms", "dep_ms", "index", "watermark"],
    "sessions": list(PlaneSession._fields),
    "alerts": list(Alert._fields),
    "weather": list(WeatherAtDeparture._fields),
    "weather_late": ["key", "origin", "sched_ms", "dep_ms"],
}


def _arrival_row(a: Arrival) -> tuple[Any, ...]:
    f = a.flight
    return (f.key, f.origin, f.sched_ms, f.dep_ms, a.index, a.watermark)


def collect_tables(collected: Iterable[tuple[str, Any]]) -> tuple[dict[str, pd.DataFrame], int]:
    """The result tables (one DataFrame per table, empty for a table with no records) from
    ``(table, record)`` pairs as :func:`tag_results` makes them, and the number of flights too
    late for a session (``session_late`` records).

    >>> tables, session_late = collect_tables([])
    >>> sorted(tables), session_late
    (['alerts', 'late', 'sessions', 'trace', 'weather', 'weather_late', 'windows'], 0)
    """
    rows: dict[str, list[Any]] = {name: [] for name in (*_COLUMNS, "session_late")}
    for name, record in collected:
        if type(record) is Arrival:
            record = _arrival_row(record)
        elif name == "weather_late":  # a departure too late for the weather join
            record = (record.key, record.origin, record.sched_ms, record.dep_ms)
        rows[name].append(record)
    tables = {name: pd.DataFrame(rows[name], columns=columns) for name, columns in _COLUMNS.items()}
    for name in ("late", "trace", "alerts", "weather_late"):
        tables[name]["dep_ms"] = tables[name]["dep_ms"].astype("Int64")
    tables["alerts"]["delay_minutes"] = tables["alerts"]["delay_minutes"].astype("Int64")
    return tables, len(rows["session_late"])


def run_jobs(
    env: StreamExecutionEnvironment,
    flights: pd.DataFrame,
    settings: DemoSettings | None = None,
    progress: Callable[[int], None] | None = None,
    total: Callable[[int], None] | None = None,
    weather: pd.DataFrame | None = None,
) -> DemoResults:
    """Build the jobs into ``env``, run them in one execution and return the result tables.

    ``weather``: the observations for job d, a table from
    :func:`~sparktide.demo.flights.load_weather` (default: load the package's).

    ``progress`` gets the number of source items read since its last call (see
    :class:`~sparktide.demo.flights.FlightReplay`); ``total`` is called once with the number of
    items the sources will read, before the run starts.
    """
    settings = settings or DemoSettings()
    tagged, items = build_jobs(env, flights, settings, progress, weather)
    if total is not None:
        total(items)
    return run_tagged(tagged, "sparktide flights demo", flights, settings, items)


def run_tagged(
    tagged: Any, job_name: str, flights: pd.DataFrame, settings: DemoSettings, items: int
) -> DemoResults:
    """Execute the tagged result stream of :func:`tag_results` and gather its tables."""
    started = time.perf_counter()
    collected = list(tagged.execute_and_collect(job_name))
    seconds = time.perf_counter() - started
    tables, session_late = collect_tables(collected)
    return DemoResults(
        tables=tables,
        settings=settings,
        flights=len(flights),
        departed=int(flights["dep_ms"].notna().sum()),
        session_late=session_late,
        seconds=seconds,
        items=items,
    )
