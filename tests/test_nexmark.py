"""NEXMark: the generator's model and determinism, and every event-time query on sparktide
(local runtime and Spark, batch and streaming) equal to its Spark SQL reference on the same
events; q12's processing-time counts add up to the bids. When a Python with apache-flink is at
hand (``$SPARKTIDE_PYFLINK_PYTHON``, or ``.venv-flink``), the PyFlink versions of the join
queries (q3, q4) give the reference's results too."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.nexmark import GeneratorConfig, generate, generate_range
from sparktide.nexmark.config import AUCTION_PROPORTION, BID_PROPORTION, TOTAL_PROPORTION
from sparktide.nexmark.generator import BLOCK, HOT_CHANNELS
from sparktide.nexmark.queries import EVENT_TIME_QUERIES, QUERIES, Sources
from sparktide.nexmark.results import final_rows
from sparktide.nexmark.sql import SQL_QUERIES, Frames
from tool_modules import load_tool

EVENTS = 20_000
CONFIG = GeneratorConfig(events=EVENTS, seed=7, rate=200, out_of_order_group_size=100)
"""100 s of event time: ten 10 s windows, fifty sliding ones."""


@pytest.fixture(scope="module")
def tables():
    return generate(CONFIG)


def _digest(table: pa.Table) -> str:
    text = json.dumps(table.to_pylist(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------ generator


def test_event_mix_ids_and_times_follow_the_model(tables) -> None:
    persons, auctions, bids = tables.persons, tables.auctions, tables.bids
    assert (persons.num_rows, auctions.num_rows, bids.num_rows) == (400, 1200, 18400)
    assert bids.num_rows * TOTAL_PROPORTION == EVENTS * BID_PROPORTION
    assert auctions.num_rows * TOTAL_PROPORTION == EVENTS * AUCTION_PROPORTION
    # ids are consecutive from the first ids, each created once
    assert sorted(persons.column("id").to_pylist()) == list(range(1000, 1400))
    assert sorted(auctions.column("id").to_pylist()) == list(range(1000, 2200))
    # event n is at base + n * 5 ms (200 events/s)
    times = np.concatenate([t.column("dateTime").to_numpy() for t in tables.__dict__.values()])
    assert times.min() == CONFIG.base_time_ms
    assert times.max() == CONFIG.base_time_ms + (EVENTS - 1) * 5
    # auctions expire after they start, within twice the time of 100 in-flight auctions
    start, expires = auctions.column("dateTime").to_numpy(), auctions.column("expires").to_numpy()
    assert ((expires > start) & (expires - start <= 2 * 1666 * 5 + 1)).all()
    assert set(auctions.column("category").to_pylist()) == {10, 11, 12, 13, 14}


def test_hot_ids_take_their_share(tables) -> None:
    bids = tables.bids
    auction = bids.column("auction").to_numpy() - 1000
    bidder = bids.column("bidder").to_numpy() - 1000
    # half the bids go to a hot auction (a multiple of 100), three quarters by a hot bidder
    hot_auctions = (auction % 100 == 0).mean()
    hot_bidders = (bidder % 100 == 1).mean()
    assert 0.49 < hot_auctions < 0.56 and 0.74 < hot_bidders < 0.78
    hot_channels = np.isin(bids.column("channel").to_pylist(), HOT_CHANNELS).mean()
    assert 0.98 < hot_channels < 1.0
    prices = bids.column("price").to_numpy()
    assert prices.min() >= 100 and prices.max() <= 100_000_000


def test_pinned_statistics_and_sample(tables) -> None:
    bids = tables.bids
    assert int(bids.column("price").to_numpy().sum()) == 133470742625
    assert int(bids.column("auction").to_numpy().sum()) == 28_600_178
    assert bids.slice(0, 1).to_pylist()[0] | {"extra": None, "url": None} == {
        "auction": 1000,
        "bidder": 1002,
        "price": 4064,
        "channel": "Apple",
        "url": None,
        "dateTime": 1436918400030,
        "extra": None,
    }
    assert [_digest(t) for t in (tables.persons, tables.auctions, bids)] == [
        "09b0d5f8176d9595",
        "84044875a623990d",
        "31964083c499e702",
    ]


def test_out_of_order_within_the_bound(tables) -> None:
    times = tables.bids.column("dateTime").to_numpy()
    lag = np.maximum.accumulate(times) - times
    assert 0 < lag.max() < CONFIG.out_of_order_bound_ms
    in_order = generate(GeneratorConfig(events=5_000, seed=7)).bids.column("dateTime")
    assert (np.diff(in_order.to_numpy()) >= 0).all()


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 3 * BLOCK), st.integers(1, 2_000))
def test_any_range_is_the_slice_of_the_whole(start: int, length: int) -> None:
    config = GeneratorConfig(events=3 * BLOCK + 500, seed=3, out_of_order_group_size=7)
    whole = generate_range(config, start - start % BLOCK, start + length)
    part = generate_range(config, start, start + length)
    before = generate_range(config, start - start % BLOCK, start)
    for kind in ("persons", "auctions", "bids"):
        rows = getattr(part, kind)
        skip = getattr(before, kind).num_rows
        assert rows.equals(getattr(whole, kind).slice(skip, rows.num_rows))
    assert part.bids.num_rows + part.auctions.num_rows + part.persons.num_rows == min(
        length, config.events - start
    )


def test_bad_configuration_is_named() -> None:
    with pytest.raises(ValueError, match="rate must be an int >= 1"):
        GeneratorConfig(events=10, rate=0)
    with pytest.raises(ValueError, match="out_of_order_group_size must not be a multiple of 953"):
        GeneratorConfig(events=10, out_of_order_group_size=953)


# ------------------------------------------------------------------------------ queries


@pytest.fixture(scope="module")
def frames(spark, tables, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nexmark")
    loaded = {}
    for name in ("persons", "auctions", "bids"):
        pq.write_table(getattr(tables, name), str(folder / f"{name}.parquet"))
        loaded[name] = spark.read.parquet(str(folder / f"{name}.parquet"))
    return Frames(**loaded)


@pytest.fixture(scope="module")
def references(frames):
    return {q: final_rows(q, SQL_QUERIES[q](frames).collect()) for q in EVENT_TIME_QUERIES}


def _local(query: str, tables, splits: int = 2) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(2)
    sources = Sources.of_tables(env, tables, splits, CONFIG.out_of_order_bound_ms)
    return list(QUERIES[query](sources).execute_and_collect())


def _spark(query: str, frames) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    sources = Sources.of_frames(
        env, frames.persons, frames.auctions, frames.bids, CONFIG.out_of_order_bound_ms
    )
    return list(QUERIES[query](sources).execute_and_collect())


@pytest.mark.parametrize("query", EVENT_TIME_QUERIES)
def test_local_runtime_equals_spark_sql(query, tables, references) -> None:
    result = final_rows(query, _local(query, tables))
    assert result == references[query]
    assert result  # every query has results on these events


@pytest.mark.parametrize("query", EVENT_TIME_QUERIES)
def test_spark_runtime_equals_spark_sql(query, frames, references) -> None:
    assert final_rows(query, _spark(query, frames)) == references[query]


@pytest.mark.parametrize("query", ["q5", "q7"])
def test_ties_are_kept(query, spark) -> None:
    # no hot auctions and five prices: many auctions share a window's top count, many bids
    # its top price
    config = GeneratorConfig(events=5_000, seed=1, rate=100, hot_auction_ratio=1)
    tables = generate(config)
    bids = tables.bids
    prices = pa.compute.remainder(bids.column("price"), 5)
    tables = type(tables)(tables.persons, tables.auctions, bids.set_column(2, "price", prices))
    frames = Frames(*(spark.createDataFrame(_plain(t)) for t in tables.__dict__.values()))
    reference = final_rows(query, SQL_QUERIES[query](frames).collect())
    window = (lambda r: r[3]) if query == "q5" else (lambda r: r[3] // 10_000)
    assert len({window(r) for r in reference}) < len(reference)  # windows with ties
    assert final_rows(query, _local(query, tables)) == reference


def _plain(table: pa.Table):
    """A pandas frame of ``table`` with plain strings (Spark takes no dictionary columns)."""
    return table.cast(
        pa.schema(
            [
                (f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                for f in table.schema
            ]
        )
    ).to_pandas()


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_q12_counts_add_up(runtime, tables, frames) -> None:
    rows = _local("q12", tables) if runtime == "local" else _spark("q12", frames)
    assert sum(r["count"] for r in rows) == tables.bids.num_rows
    per_bidder: dict[int, int] = {}
    for r in rows:
        per_bidder[r.key] = per_bidder.get(r.key, 0) + r["count"]
    expected = np.unique(tables.bids.column("bidder").to_numpy(), return_counts=True)
    assert per_bidder == dict(zip(expected[0].tolist(), expected[1].tolist(), strict=True))


# ------------------------------------------------------------------------------ streaming


@pytest.mark.parametrize("query", ["q5", "q7"])
def test_stream_over_parquet_files_equals_spark_sql(query, spark, tables, tmp_path) -> None:
    from sparktide.nexmark.streaming import run_stream, write_files

    folders = write_files(tables, tmp_path / "in", batches=4)
    run = run_stream(
        query,
        spark,
        folders,
        tmp_path / "ckpt",
        out_of_order_ms=CONFIG.out_of_order_bound_ms,
        collect=True,
    )
    assert len(run.batch_ms) == 4
    # a stream has no end-of-input watermark: the windows the last watermark closed
    last = tables.bids.column("dateTime").to_numpy().max() - CONFIG.out_of_order_bound_ms - 1
    frames = Frames(*(spark.read.parquet(str(folders[k])) for k in ("persons", "auctions", "bids")))
    reference = final_rows(query, SQL_QUERIES[query](frames).collect())
    end = (lambda r: r[3]) if query == "q5" else (lambda r: r[3] - r[3] % 10_000 + 10_000)
    complete = [r for r in reference if end(r) - 1 <= last]
    assert 0 < len(complete) < len(reference)
    assert final_rows(query, run.rows) == complete


# ------------------------------------------------------------------------------ runner


def test_runner_prints_a_row_per_query(capsys) -> None:
    from sparktide.nexmark.runner import main

    assert main(["--events", "3000", "--runtime", "local", "--queries", "q2,q11",
                 "--no-sql", "--no-pyflink"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "3,000 events (60 persons, 180 auctions, 2,760 bids)" in out
    lines = [line for line in out.splitlines() if line.startswith("|")]
    assert [line.split("|")[1].strip() for line in lines[::2]] == ["query", "q2"]
    assert lines[-1].split("|")[1].strip() == "q11"
    assert all(line.count("|") == 9 for line in lines)
    assert "Spark SQL" in lines[0] and "peak MiB" in lines[0]


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="resident memory from /proc")
def test_freed_arrow_memory_goes_back_to_the_system() -> None:
    from sparktide.nexmark.memory import release_freed_memory, tree_rss_bytes

    release_freed_memory()
    before = tree_rss_bytes(os.getpid())
    arrays = [pa.array(np.arange(20_000, dtype=np.int64)).cast(pa.float64()) for _ in range(800)]
    held = tree_rss_bytes(os.getpid())
    assert held is not None and before is not None and held - before > 100 * 2**20
    del arrays
    release_freed_memory()
    after = tree_rss_bytes(os.getpid())
    assert after is not None and after - before < (held - before) / 2


def test_runner_names_unknown_queries(capsys) -> None:
    from sparktide.nexmark.runner import main

    with pytest.raises(SystemExit):
        main(["--queries", "q0,q6"])
    assert "unknown ['q6']" in capsys.readouterr().err


# ------------------------------------------------------------------------------ PyFlink

REPO = Path(__file__).resolve().parents[1]
PYFLINK_CONFIG = GeneratorConfig(events=5_000, seed=11, rate=200, out_of_order_group_size=100)
"""25 s of event time, events out of order within groups of 100; PyFlink reads each kind from
its own source, so the join sees the kinds interleaved as its tasks happen to run."""


def _pyflink_python() -> str | None:
    candidates = [os.environ.get("SPARKTIDE_PYFLINK_PYTHON"), str(REPO / ".venv-flink/bin/python")]
    for python in candidates:
        if python and Path(python).exists():
            found = subprocess.run([python, "-c", "import pyflink"], capture_output=True)
            if found.returncode == 0:
                return python
    return None


@pytest.fixture(scope="module")
def pyflink_python() -> str:
    python = _pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    return python


LATE_SIDE = {"q3": "persons", "q4": "auctions"}
"""The side of each join whose records wait in state when the other comes first."""


def _late(tables, query: str, n: int = 20_000):
    """``tables`` with ``n`` records first on the side of ``query``'s join that keeps the
    other waiting: they join nothing and leave the results as they are (persons from
    elsewhere, or auctions without bids, all just before the first event), and while PyFlink
    reads them the other side runs ahead (q3's auctions come before their seller, q4's bids
    before their auction)."""
    kind = LATE_SIDE[query]
    table = getattr(tables, kind)
    first = PYFLINK_CONFIG.base_time_ms
    columns = {"id": range(-n, 0), "dateTime": [first - 1] * n, "expires": [first] * n}
    columns["state"] = ["WA"] * n
    early = pa.concat_tables([table.slice(0, 1)] * n).combine_chunks()  # its other fields
    for name, values in columns.items():
        if name in table.schema.names:
            field = table.schema.field(name)
            column = pa.array(values).cast(field.type)
            early = early.set_column(table.schema.get_field_index(name), field, column)
    late = pa.concat_tables([early, table])
    return type(tables)(**{**tables.__dict__, kind: late})


JOINS = [(query, late) for query in ("q3", "q4") for late in (False, True)]


@pytest.fixture(scope="module")
def pyflink_joins(pyflink_python, tmp_path_factory) -> dict[tuple[str, bool], tuple[Any, ...]]:
    """Per join case: its events, their Parquet folders and PyFlink's collected result, the
    four jobs run in one PyFlink process (one gateway JVM)."""
    from sparktide.nexmark.runner import pyflink_job_argv
    from sparktide.nexmark.streaming import write_files

    cases = {}
    for query, late in JOINS:
        tables = generate(PYFLINK_CONFIG)
        if late:
            tables = _late(tables, query)
        folder = tmp_path_factory.mktemp(f"{query}-{'late' if late else 'in-order'}")
        folders = write_files(tables, folder / "events", batches=2)
        argv = pyflink_job_argv(query, folders, PYFLINK_CONFIG.out_of_order_bound_ms, True)
        script = folder / "job.py"
        run = "runpy.run_path(sys.argv[0], run_name='__main__')"
        script.write_text(f"import runpy, sys\nsys.argv = {argv!r}\n{run}\n")
        cases[query, late] = (tables, folders, script)
    runs = load_tool("pyflink_oracle/record.py").run_in_one_process(
        pyflink_python, [case[2] for case in cases.values()]
    )
    joined = {}
    for key, (tables, folders, script) in cases.items():
        run = runs[str(script)]
        assert run["error"] is None, f"PyFlink failed on {key}:\n{run['error']}"
        result = [json.loads(line) for line in run["stdout"].splitlines() if line.startswith("{")]
        joined[key] = (tables, folders, result[-1])
    return joined


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "late-side"])
@pytest.mark.parametrize("query", ["q3", "q4"])
def test_pyflink_join_queries_equal_spark_sql(query, late, pyflink_joins, spark) -> None:
    tables, folders, result = pyflink_joins[query, late]
    frames = Frames(*(spark.read.parquet(str(folders[k])) for k in ("persons", "auctions", "bids")))
    reference = final_rows(query, SQL_QUERIES[query](frames).collect())
    assert reference  # q3: sellers in OR/ID/CA; q4: every category
    assert final_rows(query, result["rows"]) == reference
    assert final_rows(query, _local(query, tables)) == reference


def test_runner_has_a_pyflink_figure_for_the_joins(pyflink_python, capsys) -> None:
    from sparktide.nexmark.runner import main

    assert main(["--events", "3000", "--runtime", "local", "--queries", "q3",
                 "--no-sql", "--pyflink", pyflink_python]) == 0  # fmt: skip
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")][-1]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[0] == "q3"
    assert cells[6].endswith("x") and float(cells[6][:-1]) > 0  # vs PyFlink


def test_pyflink_jobs_name_a_missing_folder() -> None:
    from sparktide.nexmark.pyflink_jobs import read_events

    with pytest.raises(ValueError, match="q4 reads the auctions: pass --auctions FOLDER"):
        read_events("q4", {"bids": "unused", "persons": None, "auctions": None})
