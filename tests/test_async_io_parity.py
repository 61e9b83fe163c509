"""An async-enrichment job on PyFlink, on the local runtime and on Spark (parallelism 1, 2, 4).

The job text (:data:`JOB`) is written once and imported from ``pyflink`` or ``sparktide``: a
fake service enriches each event after a seeded delay, fails some first attempts (retried by a
fixed-delay strategy) and never answers some records (their ``timeout`` result stands in). Three
outputs are compared:

* ``ordered``: the ordered wait's output with each record's timestamp, in order (PyFlink runs at
  parallelism 1, where its order is the input order);
* ``unordered``: the unordered wait's output, as a multiset;
* ``windows``: per key, in order, the sums of a tumbling event-time window over the enriched
  stream (timestamps ascend, so no record is late whenever watermarks come).

PyFlink runs in a subprocess when a Python with apache-flink is at hand
(``$SPARKTIDE_PYFLINK_PYTHON``); otherwise that comparison is skipped. The local runtime and
Spark are compared with each other in any case.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

JOB = '''
import asyncio
import json
import random

from {pkg}.common import Time, Types
from {pkg}.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from {pkg}.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    KeyedProcessFunction,
    async_retry_predicates,
)
from {pkg}.datastream.window import TumblingEventTimeWindows

EVENT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
ENRICHED = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])


class Enrich(AsyncFunction):
    """A fake service: answers after a seeded delay; fails the first attempt of some values
    and never answers others."""

    def open(self, runtime_context):
        self.attempts = {{}}

    async def async_invoke(self, value):
        key, ts, v = value
        attempt = self.attempts[v] = self.attempts.get(v, 0) + 1
        await asyncio.sleep(random.Random(v).uniform(0, 0.004))
        if v % 20 == 5:
            await asyncio.sleep(600)
        if v % 7 == 3 and attempt == 1:
            raise ConnectionError("service unavailable for " + str(v))
        return [(key, ts, v, v * v % 97)]

    def timeout(self, value):
        key, ts, v = value
        return [(key, ts, v, -1)]


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Stamp(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value[2], value[3], ctx.timestamp()


def events(n=60):
    return [("k" + str(i % 4), 1000 + i * 10, i) for i in range(n)]


def enriched(env, ordered):
    ds = env.from_collection(events(), type_info=EVENT).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    retry = AsyncRetryStrategy.fixed_delay(
        max_attempts=3,
        backoff_time_millis=10,
        result_predicate=None,
        exception_predicate=async_retry_predicates.has_exception_predicate,
    )
    wait = AsyncDataStream.ordered_wait_with_retry if ordered else (
        AsyncDataStream.unordered_wait_with_retry
    )
    return wait(ds, Enrich(), Time.milliseconds(300), retry, capacity=8, output_type=ENRICHED)


def tagged(stream, tag):
    return stream.map(lambda r: json.dumps([tag, list(r)]), output_type=Types.STRING())


def run(env):
    """The three outputs of one job, as plain lists."""
    stamped = enriched(env, True).key_by(lambda r: 0).process(
        Stamp(), output_type=Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])
    )
    windows = (
        enriched(env, True)
        .map(lambda r: (r[0], r[3]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    everything = tagged(stamped, "ordered").union(
        tagged(enriched(env, False), "unordered"), tagged(windows, "windows")
    )
    out = {{"ordered": [], "unordered": [], "windows": []}}
    for line in everything.execute_and_collect():
        tag, row = json.loads(line)
        out[tag].append(row)
    return out
'''

PYFLINK_MAIN = """
import json, sys
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
print("RESULT " + json.dumps(run(env)))
"""


def _job_module() -> types.ModuleType:
    module = types.ModuleType("async_io_parity_job")
    exec(compile(JOB.format(pkg="sparktide"), "async_io_parity_job", "exec"), module.__dict__)
    return module


def _comparable(out: dict[str, list[Any]]) -> dict[str, Any]:
    by_key: dict[str, list[Any]] = collections.defaultdict(list)
    for key, total in out["windows"]:
        by_key[key].append(total)
    return {
        "ordered": [list(r) for r in out["ordered"]],
        "unordered": sorted(map(tuple, out["unordered"])),
        "windows": dict(sorted(by_key.items())),
    }


def _sparktide(runtime: str, parallelism: int) -> dict[str, Any]:
    from sparktide.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    return _comparable(_job_module().run(env))


@functools.cache
def _pyflink() -> dict[str, Any] | None:
    sys.path.insert(0, str(REPO / "tools" / "pyflink_oracle"))
    try:
        from record import pyflink_python  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    python = pyflink_python()
    if python is None:
        return None
    env = dict(os.environ)
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        [python, "-c", JOB.format(pkg="pyflink") + PYFLINK_MAIN],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the PyFlink job failed:\n{done.stderr[-6000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return _comparable(json.loads(line[len("RESULT ") :]))


@functools.cache
def _local() -> dict[str, Any]:
    return _sparktide("local", 1)


def test_the_job_exercises_timeouts_and_retries() -> None:
    out = _local()
    enriched = [r[1] for r in out["ordered"]]
    assert -1 in enriched  # timed out
    assert len(out["ordered"]) == 60
    assert [r[0] for r in out["ordered"]] == list(range(60))
    assert [r[2] for r in out["ordered"]] == [1000 + i * 10 for i in range(60)]  # timestamps


@pytest.mark.parametrize("parallelism", [2, 4])
def test_local_runtime_gives_the_same_at_any_parallelism(parallelism: int) -> None:
    assert _sparktide("local", parallelism) == _local()


def test_local_runtime_matches_pyflink() -> None:
    expected = _pyflink()
    if expected is None:
        pytest.skip("no Python with apache-flink (set SPARKTIDE_PYFLINK_PYTHON)")
    assert _local() == expected


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_spark_matches_the_local_runtime_and_pyflink(spark, parallelism: int) -> None:
    assert _sparktide("spark", parallelism) == _local()
    expected = _pyflink()
    if expected is not None:
        assert _local() == expected


# ------------------------------------------------------------------------------ streaming


def _streaming(spark, tmp_path: Path, asynchronous: bool) -> dict[int, list[tuple[Any, ...]]]:
    import asyncio
    import random

    from sparktide.common import Duration, Time, Types
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.datastream import (
        AsyncDataStream,
        AsyncFunction,
        KeyedProcessFunction,
        StreamExecutionEnvironment,
    )
    from sparktide.spark.streaming import ForeachBatchSink

    out_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])

    def enrich(row: Any) -> list[tuple[str, int, int]]:
        return [(row.key, row.v, row.v * row.v % 97)]

    class Lookup(AsyncFunction):
        async def async_invoke(self, row: Any) -> list[tuple[str, int, int]]:
            await asyncio.sleep(random.Random(row.v).uniform(0, 0.003))
            return enrich(row)

    class Seen(KeyedProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield (
                value[0],
                value[1],
                value[2],
                ctx.timestamp(),
                ctx.timer_service().current_watermark(),
            )

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = (
        spark.readStream.schema("key string, ts long, v long")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
    )
    stream = env.from_stream(
        frame,
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(50)),
        timestamp_column="ts",
    )
    if asynchronous:
        enriched = AsyncDataStream.unordered_wait(stream, Lookup(), Time.seconds(30), 4, out_type)
    else:
        enriched = stream.flat_map(enrich, output_type=out_type)
    out: dict[int, list[tuple[Any, ...]]] = {}

    def collect(df: Any, batch_id: int) -> None:
        out[batch_id] = [tuple(r) for r in df.collect()]

    seen_type = Types.TUPLE([Types.STRING(), *[Types.LONG()] * 4])
    seen = enriched.key_by(lambda r: r[0]).process(Seen(), output_type=seen_type)
    seen.sink_to(ForeachBatchSink(collect))
    name = "async" if asynchronous else "sync"
    env.execute(checkpoint_location=str(tmp_path / f"ckpt-{name}"), trigger="available_now")
    return out


def test_a_stream_gives_per_micro_batch_what_the_synchronous_stream_gives(spark, tmp_path) -> None:
    import random

    rng = random.Random(3)
    (tmp_path / "in").mkdir()
    for f in range(2):
        with open(tmp_path / "in" / f"part-{f}.json", "w") as file:
            for j in range(20):
                i = f * 20 + j
                row = {"key": f"k{i % 3}", "ts": i * 10 + rng.randrange(0, 40), "v": i}
                file.write(json.dumps(row) + "\n")
        os.utime(tmp_path / "in" / f"part-{f}.json", (1_700_000_000 + f, 1_700_000_000 + f))
    expected = _streaming(spark, tmp_path, asynchronous=False)
    assert sorted(expected) == [0, 1] and all(expected.values())
    assert _streaming(spark, tmp_path, asynchronous=True) == expected


@pytest.mark.parametrize("job_name", ["job_after_keyed", "job_on_keyed_stream"])
def test_async_operators_in_exchange_stages_on_spark_give_the_synchronous_output(
    spark, job_name: str
) -> None:
    # after a keyed process function (timers, two records per input) and on a keyed stream
    import test_async_io as cases

    job = getattr(cases, job_name)
    expected = cases.run_job(job, cases.ORDERED, False, every=9)
    got = cases.run_job(job, cases.UNORDERED, True, runtime="spark", parallelism=3, every=9)
    assert got == expected


def test_small_chunks_and_early_flushes_on_spark_change_nothing(spark, monkeypatch) -> None:
    # a task ships every few items and merges its input chunk by chunk: the async operators
    # drain before each shipment, so every run stays in position order
    import test_async_io as cases
    from sparktide.spark.executor import SparkExecutor

    expected = cases.run_job(cases.job_after_keyed, cases.ORDERED, False, every=9)
    monkeypatch.setattr(SparkExecutor, "chunk_items", 3)
    monkeypatch.setattr(SparkExecutor, "flush_items", 5)
    got = cases.run_job(
        cases.job_after_keyed, cases.UNORDERED, True, runtime="spark", parallelism=2, every=9
    )
    assert got == expected
