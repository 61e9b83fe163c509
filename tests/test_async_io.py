"""Async I/O: ``AsyncDataStream`` and the async wait operator against a local fake service.

The service (:class:`Lookup`) answers each value after a delay drawn from a seeded generator
and can fail a value's first attempts; it counts the requests in flight. The operator is tested
directly (order, segments, capacity, timeouts, retries, errors) and in jobs, where its output
must equal that of the same job with a synchronous ``flat_map`` computing the same results:
the outputs keep their records' positions, whatever the delays.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.async_function import AsyncFunctionDescriptor
from sparktide.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
    async_retry_predicates,
)
from sparktide.datastream.async_retry_strategies import NO_RETRY_STRATEGY
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.runtime.elements import StreamRecord, Watermark
from sparktide.runtime.operators.async_wait import AsyncWaitOperator
from sparktide.runtime.output import CollectingOutput
from sparktide.runtime.processing_time import ManualProcessingTimeService

LONG = Time.seconds(30)
ORDERED = AsyncFunctionDescriptor.OutputMode.ORDERED
UNORDERED = AsyncFunctionDescriptor.OutputMode.UNORDERED


class ServiceDown(ConnectionError):
    """What the fake service raises for a failing attempt."""


class Lookup(AsyncFunction):
    """A fake enrichment service: ``value -> [(value, 'v<value>')]`` after a seeded delay of up
    to ``max_delay_ms``; the values in ``failing`` fail their first ``failures`` attempts (an
    empty answer instead when ``empty`` is set); the values in ``hanging`` never answer."""

    def __init__(
        self,
        seed: int = 1,
        max_delay_ms: int = 3,
        failing: frozenset[int] = frozenset(),
        failures: int = 1,
        empty: bool = False,
        hanging: frozenset[int] = frozenset(),
        gate: int = 0,
    ) -> None:
        self.seed = seed
        self.max_delay_ms = max_delay_ms
        self.failing = failing
        self.failures = failures
        self.empty = empty
        self.hanging = hanging
        self.gate = gate  # hold the first requests until this many are in flight
        self.opened = self.closed = False

    def open(self, runtime_context) -> None:
        self.opened = True
        self.attempts: collections.Counter[int] = collections.Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._gate: asyncio.Event | None = None

    def close(self) -> None:
        self.closed = True

    def delay(self, value: int) -> float:
        return random.Random(self.seed * 1_000_003 + value).uniform(0, self.max_delay_ms) / 1000

    async def async_invoke(self, value: int) -> list[object]:
        self.attempts[value] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate:
                if self._gate is None:
                    self._gate = asyncio.Event()
                if self.in_flight >= self.gate:
                    self._gate.set()
                await self._gate.wait()
            if value in self.hanging:
                await asyncio.sleep(3600)
            await asyncio.sleep(self.delay(value))
            if value in self.failing and self.attempts[value] <= self.failures:
                if self.empty:
                    return []
                raise ServiceDown(f"service unavailable for {value}")
            return [(value, f"v{value}")]
        finally:
            self.in_flight -= 1

    def timeout(self, value: int) -> list[object]:
        return [(value, "timed out")]


def answer(value: int) -> list[tuple[int, str]]:
    """What :class:`Lookup` answers, computed synchronously."""
    return [(value, f"v{value}")]


def operator(
    function: AsyncFunction,
    mode: AsyncFunctionDescriptor.OutputMode = ORDERED,
    timeout: Time = LONG,
    capacity: int = 100,
    retry: AsyncRetryStrategy = NO_RETRY_STRATEGY,
) -> tuple[AsyncWaitOperator, CollectingOutput]:
    op = AsyncWaitOperator(AsyncFunctionDescriptor(function, timeout, capacity, retry, mode))
    out = CollectingOutput()
    op.setup(out, ManualProcessingTimeService(0))
    op.open()
    return op, out


def run(op: AsyncWaitOperator, inputs: list[int | Watermark]) -> None:
    for item in inputs:
        if isinstance(item, Watermark):
            op.process_watermark(item)
        else:
            op.process_element(StreamRecord(item, item * 10))
    op.finish()
    op.close()


def results(out: CollectingOutput) -> list[object]:
    return [e.value for e in out.elements if isinstance(e, StreamRecord)]


def segments(elements: list[object]) -> list[list[object]]:
    """What lies between watermarks, in order (the last list after the last watermark)."""
    out: list[list[object]] = [[]]
    for e in elements:
        if isinstance(e, Watermark):
            out.append([])
        else:
            out[-1].append(e)
    return out


# ------------------------------------------------------------------------------ the operator

inputs_with_watermarks = st.lists(
    st.one_of(st.integers(0, 50), st.just(None)), min_size=1, max_size=30
).map(lambda items: [Watermark(i) if item is None else item for i, item in enumerate(items)])


@settings(max_examples=15, deadline=None)
@given(inputs=inputs_with_watermarks, seed=st.integers(0, 1000), capacity=st.integers(1, 8))
def test_ordered_mode_emits_in_input_order_with_watermarks_in_place(inputs, seed, capacity):
    op, out = operator(Lookup(seed=seed), ORDERED, capacity=capacity)
    run(op, inputs)
    expected: list[object] = []
    for item in inputs:
        expected.extend([item] if isinstance(item, Watermark) else answer(item))
    got = [e if isinstance(e, Watermark) else e.value for e in out.elements]
    assert got == expected
    records = [e for e in out.elements if isinstance(e, StreamRecord)]
    assert all(r.timestamp == r.value[0] * 10 for r in records)  # timestamps kept


@settings(max_examples=15, deadline=None)
@given(inputs=inputs_with_watermarks, seed=st.integers(0, 1000), capacity=st.integers(1, 8))
def test_unordered_mode_keeps_every_result_between_its_watermarks(inputs, seed, capacity):
    op, out = operator(Lookup(seed=seed), UNORDERED, capacity=capacity)
    run(op, inputs)
    expected: list[object] = []
    for item in inputs:
        expected.extend([item] if isinstance(item, Watermark) else answer(item))
    got = [e if isinstance(e, Watermark) else e.value for e in out.elements]
    assert [e for e in got if isinstance(e, Watermark)] == [
        e for e in expected if isinstance(e, Watermark)
    ]
    for mine, theirs in zip(segments(got), segments(expected), strict=True):
        assert collections.Counter(mine) == collections.Counter(theirs)


class Handoff(AsyncFunction):
    """Value 0 answers only after value 1 has answered."""

    def open(self, runtime_context) -> None:
        self.first_done: asyncio.Event | None = None

    async def async_invoke(self, value: int) -> list[int]:
        if self.first_done is None:
            self.first_done = asyncio.Event()
        if value == 0:
            await self.first_done.wait()
        else:
            self.first_done.set()
        return [value]


def test_unordered_mode_emits_as_completed_and_ordered_mode_waits_for_the_head():
    op, out = operator(Handoff(), UNORDERED)
    run(op, [0, 1])
    assert results(out) == [1, 0]
    op, out = operator(Handoff(), ORDERED)
    run(op, [0, 1])
    assert results(out) == [0, 1]


@pytest.mark.parametrize("mode", [ORDERED, UNORDERED])
@pytest.mark.parametrize("capacity", [1, 3, 7])
def test_capacity_bounds_the_requests_in_flight(mode, capacity):
    function = Lookup(max_delay_ms=2, gate=capacity)
    op, out = operator(function, mode, capacity=capacity)
    values = list(range(4 * capacity + 3))
    run(op, values)
    assert function.max_in_flight == capacity  # reached (the gate) and never exceeded
    assert sorted(results(out)) == [a for v in values for a in answer(v)]


def test_a_barrier_takes_a_place_in_the_queue():
    # capacity 1: the watermark waits for the record before it, the next record for it
    op, out = operator(Lookup(), UNORDERED, capacity=1)
    run(op, [1, Watermark(5), 2])
    assert [type(e).__name__ for e in out.elements] == ["StreamRecord", "Watermark", "StreamRecord"]


def test_a_timed_out_request_gives_the_timeout_results_in_its_place():
    op, out = operator(Lookup(hanging=frozenset({2, 4})), ORDERED, timeout=Time.milliseconds(200))
    run(op, [1, 2, 3, 4, 5])
    assert results(out) == [
        (1, "v1"),
        (2, "timed out"),
        (3, "v3"),
        (4, "timed out"),
        (5, "v5"),
    ]


class NoTimeoutHandler(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(3600)
        return [value]


def test_by_default_a_timeout_fails_with_the_record_and_function_named():
    op, _ = operator(NoTimeoutHandler(), ORDERED, timeout=Time.milliseconds(100))
    with pytest.raises(TimeoutError, match="timed out for input: 7") as info:
        run(op, [7])
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "NoTimeoutHandler.async_invoke failed for record 7" in notes
    assert "timed out after 100 ms" in notes


def test_fixed_delay_retries_an_exception_until_it_succeeds():
    function = Lookup(failing=frozenset({3, 5}), failures=2)
    retry = AsyncRetryStrategy.fixed_delay(
        2, 5, None, async_retry_predicates.has_exception_predicate
    )
    op, out = operator(function, ORDERED, timeout=Time.seconds(30), retry=retry)
    run(op, [1, 3, 5, 6])
    assert results(out) == [a for v in (1, 3, 5, 6) for a in answer(v)]
    assert function.attempts == {1: 1, 3: 3, 5: 3, 6: 1}


def test_retries_stop_after_max_attempts_and_the_error_names_them():
    function = Lookup(failing=frozenset({3}), failures=5)
    retry = AsyncRetryStrategy.fixed_delay(
        2, 1, None, async_retry_predicates.has_exception_predicate
    )
    op, _ = operator(function, ORDERED, timeout=Time.seconds(30), retry=retry)
    with pytest.raises(ServiceDown, match="unavailable for 3") as info:
        run(op, [1, 3])
    assert "Lookup.async_invoke failed for record 3 after 3 attempts" in "\n".join(
        info.value.__notes__
    )
    assert function.attempts[3] == 3


def test_exponential_backoff_retries_an_empty_result_by_the_result_predicate():
    function = Lookup(failing=frozenset({2}), failures=3, empty=True)
    retry = AsyncRetryStrategy.exponential_backoff(
        5, 1, 8, 2.0, async_retry_predicates.empty_result_predicate, None
    )
    op, out = operator(function, UNORDERED, timeout=Time.seconds(30), retry=retry)
    run(op, [1, 2])
    assert sorted(results(out)) == [(1, "v1"), (2, "v2")]
    assert function.attempts[2] == 4


def test_an_exception_the_predicate_does_not_retry_fails_at_once():
    function = Lookup(failing=frozenset({4}), failures=1)
    only_timeouts = functools.partial(
        async_retry_predicates.exception_type_predicate, expected_error_type=TimeoutError
    )
    retry = AsyncRetryStrategy.fixed_delay(3, 1, None, only_timeouts)
    op, _ = operator(function, ORDERED, timeout=Time.seconds(30), retry=retry)
    with pytest.raises(ServiceDown):
        run(op, [4])
    assert function.attempts[4] == 1


def test_the_timeout_bounds_all_attempts_of_a_record():
    function = Lookup(failing=frozenset({1}), failures=1000)
    retry = AsyncRetryStrategy.fixed_delay(
        1000, 20, None, async_retry_predicates.has_exception_predicate
    )
    op, out = operator(function, ORDERED, timeout=Time.milliseconds(300), retry=retry)
    run(op, [1])
    assert results(out) == [(1, "timed out")]
    assert 1 < function.attempts[1] < 1000


def test_open_and_close_reach_the_function():
    function = Lookup()
    op, _ = operator(function)
    assert function.opened and not function.closed
    run(op, [1])
    assert function.closed


# ------------------------------------------------------------------------------ the queues

queue_ops = st.lists(
    st.one_of(
        st.tuples(st.just("record"), st.booleans()),  # (kind, after the previous record)
        st.tuples(st.just("barrier"), st.just(False)),
        st.tuples(st.just("complete"), st.integers(0, 10_000)),
        st.tuples(st.just("pop"), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops=queue_ops, ordered=st.booleans())
def test_the_queues_emit_what_may_leave_and_nothing_else(ops, ordered):
    from sparktide.runtime.operators.async_wait_queue import (
        Barrier,
        OrderedQueue,
        Request,
        UnorderedQueue,
    )

    queue = OrderedQueue() if ordered else UnorderedQueue()
    entries: list[object] = []  # everything put, in order
    after: dict[int, object] = {}  # id(request) -> the request it must follow
    completed: list[object] = []  # completion order
    emitted: list[object] = []

    def may_leave(entry) -> bool:
        """The naive rule: done, after everything it must follow."""
        i = entries.index(entry)
        before = entries[:i]
        if ordered or isinstance(entry, Barrier):
            if any(e not in emitted for e in before):
                return False
        else:
            last_barrier = max(
                (j for j, e in enumerate(before) if isinstance(e, Barrier)), default=-1
            )
            if any(e not in emitted for e in before[: last_barrier + 1]):
                return False
            if id(entry) in after and after[id(entry)] not in emitted:
                return False
        return isinstance(entry, Barrier) or entry.done

    def pop() -> None:
        out = queue.pop_ready()
        for e in out:
            assert may_leave(e), e
            emitted.append(e)
        assert not [e for e in entries if e not in emitted and may_leave(e)]  # maximal

    last: Request | None = None
    for kind, arg in ops:
        if kind == "record":
            request = Request(StreamRecord(len(entries)), None)
            follow = last if arg and last is not None and not ordered else None
            queue.put(request, follow)
            if follow is not None and follow not in emitted:
                after[id(request)] = follow
            entries.append(request)
            last = request
        elif kind == "barrier":
            barrier = Barrier(Watermark(len(entries)), None)
            queue.put(barrier)
            entries.append(barrier)
        elif kind == "complete":
            pending = [e for e in entries if isinstance(e, Request) and not e.done]
            if pending:
                request = pending[arg % len(pending)]
                queue.complete(request)
                completed.append(request)
        else:
            pop()
        queue.check_invariants()
        assert len(queue) == len(entries) - len(emitted)
    for e in entries:
        if isinstance(e, Request) and not e.done:
            queue.complete(e)
            completed.append(e)
    pop()
    queue.check_invariants()
    assert len(queue) == 0 and len(emitted) == len(entries)
    if ordered:
        assert emitted == entries
    else:  # requests that follow no other leave a segment in completion order
        free = [e for e in emitted if isinstance(e, Request) and id(e) not in after]
        segment_of = {}
        seg = 0
        for e in entries:
            if isinstance(e, Barrier):
                seg += 1
            segment_of[id(e)] = seg
        for s in set(segment_of.values()):
            mine = [e for e in free if segment_of[id(e)] == s]
            assert mine == [e for e in completed if e in mine]


# ------------------------------------------------------------------------------ errors


class Broken(AsyncFunction):
    async def async_invoke(self, value):
        if value == 2:
            raise ValueError(f"cannot enrich {value}")
        return [value]


class NotAList(AsyncFunction):
    async def async_invoke(self, value):
        return f"result {value}"


class NotAsync(AsyncFunction):
    def async_invoke(self, value):  # type: ignore[override]
        return [value]


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    return env


def test_an_exception_of_async_invoke_fails_the_job_naming_function_and_record():
    ds = _env().from_collection([1, 2, 3])
    out = AsyncDataStream.unordered_wait(ds, Broken(), Time.seconds(10))
    with pytest.raises(ValueError, match="cannot enrich 2") as info:
        list(out.execute_and_collect())
    notes = "\n".join(info.value.__notes__)
    assert "Broken.async_invoke failed for record 2" in notes
    assert "async wait operator" in notes


def test_a_result_that_is_not_a_list_is_a_clear_error():
    ds = _env().from_collection([1])
    out = AsyncDataStream.ordered_wait(ds, NotAList(), Time.seconds(10))
    with pytest.raises(TypeError, match=r"NotAList.async_invoke must return a list .*\[result\]"):
        list(out.execute_and_collect())


def test_bad_arguments_are_clear_errors():
    ds = _env().from_collection([1])
    with pytest.raises(TypeError, match="must be declared with 'async def'"):
        AsyncDataStream.ordered_wait(ds, NotAsync(), Time.seconds(1))
    with pytest.raises(ValueError, match="capacity must be an int >= 1"):
        AsyncDataStream.unordered_wait(ds, Lookup(), Time.seconds(1), capacity=0)
    with pytest.raises(ValueError, match="a retry strategy needs a timeout > 0"):
        AsyncDataStream.ordered_wait_with_retry(
            ds,
            Lookup(),
            Time.milliseconds(0),
            AsyncRetryStrategy.fixed_delay(1, 1, None, lambda e: True),
        )
    with pytest.raises(TypeError, match="timeout must be a Time or Duration"):
        AsyncDataStream.ordered_wait(ds, Lookup(), 1000)
    with pytest.raises(TypeError, match="async_retry_strategy must be an AsyncRetryStrategy"):
        AsyncDataStream.ordered_wait_with_retry(ds, Lookup(), Time.seconds(1), None)
    with pytest.raises(ValueError, match="max_attempts must be an int > 0"):
        AsyncRetryStrategy.fixed_delay(0, 1, None, None)
    with pytest.raises(ValueError, match="multiplier must be a number > 0"):
        AsyncRetryStrategy.exponential_backoff(1, 1, 1, 0.0, None, None)
    failed = OutputTag("failed")
    guarded = AsyncDataStream.ordered_wait(ds, Lookup(), Time.seconds(1)).with_failed_records(
        failed
    )
    with pytest.raises(ValueError, match=r"with_failed_records.* not supported on the async"):
        list(guarded.execute_and_collect())


# ------------------------------------------------------------------------------ jobs

ROW = Types.TUPLE([Types.INT(), Types.STRING()])


def events(n: int = 120, seed: int = 5) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(i, i * 10 + rng.randrange(0, 80)) for i in range(n)]


def _source(env, splits: int = 3):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(40)
    ).with_timestamp_assigner(lambda e, _ts: e[1])
    return env.from_source(CollectionSource(events(), num_splits=splits), strategy, "events").map(
        lambda e: e[0], output_type=Types.INT()
    )


class Stamp(KeyedProcessFunction):
    """What a downstream keyed operator sees: value, timestamp and watermark, in order."""

    def process_element(self, value, ctx):
        yield value, ctx.timestamp(), ctx.timer_service().current_watermark()


def _enriched(env, mode, asynchronous: bool, function: AsyncFunction | None = None):
    ds = _source(env)
    if not asynchronous:
        return ds.flat_map(answer, output_type=ROW)
    function = function or Lookup(seed=9, failing=frozenset({7, 30}), failures=1)
    retry = AsyncRetryStrategy.fixed_delay(
        3, 1, None, async_retry_predicates.has_exception_predicate
    )
    wait = (
        AsyncDataStream.ordered_wait_with_retry
        if mode is ORDERED
        else AsyncDataStream.unordered_wait_with_retry
    )
    return wait(ds, function, Time.seconds(30), retry, capacity=5, output_type=ROW)


def job_keyed(env, mode, asynchronous):
    return _enriched(env, mode, asynchronous).key_by(lambda r: r[0] % 4).process(Stamp())


def job_windows(env, mode, asynchronous):
    return (
        _enriched(env, mode, asynchronous)
        .map(lambda r: (r[0] % 3, 1), output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(200)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )


def job_collect(env, mode, asynchronous):
    return _enriched(env, mode, asynchronous)


class Twice(KeyedProcessFunction):
    """Two records per input (their async outputs number on from one another), and a timer
    whose output goes through the async operator too."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 50)
        yield value
        yield value + 1000

    def on_timer(self, timestamp, ctx):
        yield 2000 + timestamp % 1000


def job_after_keyed(env, mode, asynchronous):
    ds = _source(env).key_by(lambda v: v % 3).process(Twice(), output_type=Types.INT())
    if asynchronous:
        ds = AsyncDataStream.ordered_wait(ds, Lookup(seed=3), Time.seconds(30), 4, ROW)
        ds = AsyncDataStream.unordered_wait(ds, Echo(), Time.seconds(30), 3, ROW)
    else:
        ds = ds.flat_map(answer, output_type=ROW)
    return ds.key_by(lambda r: r[0] % 2).process(Stamp())


class Echo(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0.001 * (value[0] % 3))
        return [value]


def job_on_keyed_stream(env, mode, asynchronous):
    keyed = _source(env).key_by(lambda v: v % 5)
    if asynchronous:
        wait = AsyncDataStream.ordered_wait if mode is ORDERED else AsyncDataStream.unordered_wait
        ds = wait(keyed, Lookup(seed=4), Time.seconds(30), 6, ROW)
    else:
        ds = keyed.flat_map(answer, output_type=ROW)
    return ds.key_by(lambda r: r[0] % 2).process(Stamp())


JOBS = [job_keyed, job_windows, job_collect, job_after_keyed, job_on_keyed_stream]


def run_job(
    job, mode, asynchronous, runtime="local", parallelism=1, every=None, buffer=None
) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    env.get_config().set_task_buffer(buffer)
    return list(job(env, mode, asynchronous).execute_and_collect())


@pytest.mark.parametrize("mode", [ORDERED, UNORDERED], ids=["ordered", "unordered"])
@pytest.mark.parametrize("job", JOBS, ids=lambda j: j.__name__)
def test_a_job_gives_what_the_synchronous_job_gives_at_any_parallelism(job, mode):
    expected = run_job(job, mode, False, every=9)
    assert expected
    for parallelism in (1, 2, 4):
        assert run_job(job, mode, True, parallelism=parallelism, every=9) == expected


@pytest.mark.parametrize("mode", [ORDERED, UNORDERED], ids=["ordered", "unordered"])
def test_a_small_task_buffer_drains_the_requests_before_every_chunk_moves(mode):
    # a split reads 4 records at a time and the stages take them at once: requests in flight
    # complete before, so outputs reach the next stage in position order
    expected = run_job(job_after_keyed, mode, False)
    assert run_job(job_after_keyed, mode, True, parallelism=2, buffer=4) == expected


def test_the_loop_runs_on_its_own_thread_once_per_task_thread():
    seen: list[str] = []

    class Where(AsyncFunction):
        async def async_invoke(self, value):
            seen.append(threading.current_thread().name)
            return [value]

    ds = _env().from_collection([1, 2, 3])
    assert sorted(
        AsyncDataStream.unordered_wait(ds, Where(), Time.seconds(5)).execute_and_collect()
    ) == [1, 2, 3]
    assert set(seen) == {"sparktide-async-io"}
