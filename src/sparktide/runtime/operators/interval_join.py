"""``IntervalJoinOperator``: the keyed event-time interval join (Flink's ``IntervalJoinOperator``).

It emits exactly the pairs ``(l, r)`` of a left and a right record with the same key and
``l.ts + lower <= r.ts <= l.ts + upper`` that meet in its buffers (an exclusive bound moves by
one millisecond: ``lower + 1`` / ``upper - 1``, so only inclusive comparisons remain). How:

* both inputs are buffered in keyed ``MapState``\\ s (``"LEFT_BUFFER"``, ``"RIGHT_BUFFER"``):
  event timestamp -> list of :class:`BufferEntry` (the element and a *joined* flag, kept as
  Flink keeps it for outer joins; the inner join never sets it);
* a record whose timestamp is below the current watermark is late: it goes to the side
  output of its input if one is set, else it is dropped (counted in
  ``num_late_records_dropped``);
* any other record is added to its own buffer and joined with every record of the other
  buffer whose timestamp is in ``[ts + lower, ts + upper]`` (right records: ``[ts - upper,
  ts - lower]``), in the order of the other side's timestamps, then arrival order; each pair
  goes to the :class:`~sparktide.core.functions.ProcessJoinFunction`, whose outputs
  carry ``max(left ts, right ts)``;
* a cleanup timer in the ``"CLEANUP_TIMER"`` service removes the record's timestamp bucket
  once nothing can join it any more: namespace ``"CLEANUP_LEFT"`` at ``ts + upper`` if
  ``upper > 0`` else ``ts``; ``"CLEANUP_RIGHT"`` at ``ts - lower`` if ``lower < 0`` else ``ts``
  (saturating at ``MAX``).

So a pair is missed only when the later record arrives with its timestamp equal to the
watermark and to the cleanup time of the earlier one, after that watermark fired the
cleanup (Flink behaves the same). Records need timestamps (``None``: TypeError). State and
timers live only in the keyed state backend and the timer service, so a snapshot holds
everything.

>>> from sparktide.core.functions import ProcessJoinFunction
>>> from sparktide.runtime.elements import StreamRecord, Watermark
>>> from sparktide.runtime.operators.base import OperatorSetup
>>> from sparktide.runtime.output import CollectingOutput
>>> from sparktide.runtime.processing_time import ManualProcessingTimeService
>>> class Pair(ProcessJoinFunction):
...     def process_element(self, left, right, ctx):
...         yield left, right, ctx.get_timestamp()
>>> op = IntervalJoinOperator(-2, 1, True, True, Pair())
>>> out = CollectingOutput()
>>> op.setup(out, ManualProcessingTimeService(0), OperatorSetup(), key_selector=str.lower)
>>> op.key_selector2 = str.lower
>>> op.open()
>>> op.process_element1(StreamRecord("a", 10))
>>> op.process_element2(StreamRecord("A", 9)); op.process_element2(StreamRecord("A", 12))
>>> [r.value for r in out.elements]
[('a', 'A', 10)]
>>> op.process_watermark1(Watermark(20)); op.process_watermark2(Watermark(20))
>>> op.keyed_state_backend.num_entries(), op.time_service_manager.num_event_time_timers()
(0, 0)
"""

from __future__ import annotations

import numbers
from typing import NamedTuple, cast

from sparktide.core.functions import ProcessJoinFunction
from sparktide.core.output_tag import OutputTag
from sparktide.core.state import MapState, MapStateDescriptor
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord
from sparktide.runtime.operators.co_process import KeyedTwoInputOperator
from sparktide.runtime.operators.process import emit_results

__all__ = [
    "CLEANUP_LEFT",
    "CLEANUP_RIGHT",
    "CLEANUP_TIMER",
    "LEFT_BUFFER",
    "RIGHT_BUFFER",
    "BufferEntry",
    "IntervalJoinOperator",
    "KeyTypeGuard",
    "check_bounds",
]

LEFT_BUFFER = "LEFT_BUFFER"
RIGHT_BUFFER = "RIGHT_BUFFER"
CLEANUP_TIMER = "CLEANUP_TIMER"
CLEANUP_LEFT = "CLEANUP_LEFT"
CLEANUP_RIGHT = "CLEANUP_RIGHT"

_SIDES = ("left", "right")


class BufferEntry(NamedTuple):
    """A buffered record: the element and whether it has been joined (Flink's ``BufferEntry``;
    reserved for outer joins, the inner join leaves it False)."""

    element: object
    has_been_joined: bool = False


Buffer = MapState[int, list[BufferEntry]]
"""A side's buffer: event timestamp -> the records with that timestamp."""


def _key_kind(key: object) -> type:
    """What must agree between the keys of two join inputs: equal keys of these kinds hash to
    the same key group (a numpy integer and an int do; an int and a str never meet)."""
    if isinstance(key, bool):
        return bool
    if isinstance(key, numbers.Integral):
        return int
    for kind in (str, bytes, float, tuple):
        if isinstance(key, kind):
            return kind
    return type(key)


class KeyTypeGuard:
    """Detects join inputs keyed by different key types (their keys can never be equal).

    Python has no static key type, so a subtask checks what it sees: once both inputs have
    delivered keys and the key kinds of input 1 and input 2 share nothing (e.g. only ``int``
    on one side, only ``str`` on the other), it raises TypeError naming both. When they share
    a kind, ``checked`` turns True and callers skip the check from then on.

    >>> g = KeyTypeGuard("interval join")
    >>> g.see(1, 7); g.see(2, 8); g.checked
    True
    >>> g = KeyTypeGuard("interval join")
    >>> g.see(1, 7); g.see(2, "7")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: interval join: the keys of the first input are int but those of the second ...
    """

    __slots__ = ("_kinds", "_types", "checked", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self._types: tuple[set[type], set[type]] = (set(), set())
        self._kinds: tuple[set[type], set[type]] = (set(), set())
        self.checked = False

    def see(self, index: int, key: object) -> None:
        """Note a key of input ``index`` (1 or 2); raise TypeError on a key type mismatch."""
        types = self._types[index - 1]
        t = type(key)
        if t in types:
            return
        types.add(t)
        self._kinds[index - 1].add(_key_kind(key))
        first, second = self._kinds
        if not first or not second:
            return
        if first & second:
            self.checked = True
            return
        raise TypeError(
            f"{self.what}: the keys of the first input are {_names(first)} but those of the "
            f"second input are {_names(second)} (e.g. {key!r}); keys of different types are "
            "never equal, so nothing would join. Key both streams by the same type, e.g. "
            "key_by(lambda v: str(v.id)) on both sides"
        )


def _names(kinds: set[type]) -> str:
    return " or ".join(sorted(getattr(k, "__name__", str(k)) for k in kinds))


class _JoinContext(ProcessJoinFunction.Context):
    """The ``ctx`` of ``ProcessJoinFunction.process_element``. The operator sets ``left_ts``,
    ``right_ts`` and ``ts`` (the pair's timestamps and the larger one, what the getters
    return) before each call of the function."""

    __slots__ = ("_op", "left_ts", "right_ts", "ts")

    def __init__(self, operator: IntervalJoinOperator) -> None:
        self._op = operator
        self.left_ts = 0
        self.right_ts = 0
        self.ts = 0

    def get_left_timestamp(self) -> int:
        return self.left_ts

    def get_right_timestamp(self) -> int:
        return self.right_ts

    def get_timestamp(self) -> int:
        return self.ts

    def output(self, output_tag: OutputTag, value: object) -> None:
        if not isinstance(output_tag, OutputTag):
            raise TypeError(
                f"output_tag must be an OutputTag, got {type(output_tag).__name__}; create one "
                "with OutputTag('name')"
            )
        self._op.output.collect_side(output_tag, StreamRecord(value, self.ts))


def check_bounds(lower_bound: int, upper_bound: int) -> tuple[int, int]:
    """``(lower_bound, upper_bound)`` if both are int ms and ``lower_bound <= upper_bound``."""
    for name, value in (("lower_bound", lower_bound), ("upper_bound", upper_bound)):
        if type(value) is not int:
            raise TypeError(
                f"{name} must be an int number of milliseconds, got {type(value).__name__}"
            )
    if lower_bound > upper_bound:
        raise ValueError(
            f"lower_bound ({lower_bound} ms) must be <= upper_bound ({upper_bound} ms); swap "
            f"them, e.g. between({upper_bound}, {lower_bound})"
        )
    return lower_bound, upper_bound


def _check_tag(tag: OutputTag | None, name: str) -> OutputTag | None:
    if tag is not None and not isinstance(tag, OutputTag):
        raise TypeError(
            f"{name} must be an OutputTag or None, got {type(tag).__name__}; create one with "
            "OutputTag('late-left')"
        )
    return tag


class IntervalJoinOperator(KeyedTwoInputOperator):
    """Joins two keyed inputs on event time; see the module docstring.

    ``lower_bound``/``upper_bound`` are the user's bounds in ms (``lower_bound <=
    upper_bound``), made inclusive here; ``function`` is a ``ProcessJoinFunction``.
    Usually built by ``KeyedStream.interval_join(...).between(...).process(...)``.

    >>> op = IntervalJoinOperator(0, 5, False, False, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: function must be a ProcessJoinFunction (process_element(left, right, ctx)), ...
    >>> IntervalJoinOperator(5, 0, True, True, object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: lower_bound (5 ms) must be <= upper_bound (0 ms); ...
    """

    def __init__(
        self,
        lower_bound: int,
        upper_bound: int,
        lower_bound_inclusive: bool,
        upper_bound_inclusive: bool,
        function: ProcessJoinFunction,
        left_late_data_output_tag: OutputTag | None = None,
        right_late_data_output_tag: OutputTag | None = None,
    ) -> None:
        super().__init__()
        lower, upper = check_bounds(lower_bound, upper_bound)
        if isinstance(function, type) or not callable(getattr(function, "process_element", None)):
            raise TypeError(
                "function must be a ProcessJoinFunction (process_element(left, right, ctx)), "
                f"got {type(function).__name__}"
            )
        # as Flink: move exclusive bounds by one so that only inclusive comparisons remain
        self.lower_bound = lower if lower_bound_inclusive else lower + 1
        self.upper_bound = upper if upper_bound_inclusive else upper - 1
        self.function = function
        self.left_late_data_output_tag = _check_tag(
            left_late_data_output_tag, "left_late_data_output_tag"
        )
        self.right_late_data_output_tag = _check_tag(
            right_late_data_output_tag, "right_late_data_output_tag"
        )
        self.num_late_records_dropped = 0
        self.num_late_records_side_output = 0
        self._guard = KeyTypeGuard("interval join")

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        backend = self.keyed_state_backend
        if backend is None:
            raise RuntimeError(
                "an interval join needs keyed inputs: key_by both streams, then "
                "left.interval_join(right)"
            )
        self._backend = backend
        self._timers = self.get_internal_timer_service(CLEANUP_TIMER, self)
        # map states (a map state descriptor)
        left = backend.get_partitioned_state(MapStateDescriptor(LEFT_BUFFER, None, None))
        right = backend.get_partitioned_state(MapStateDescriptor(RIGHT_BUFFER, None, None))
        self._left = cast(Buffer, left)
        self._right = cast(Buffer, right)
        self._ctx = _JoinContext(self)
        self._process = self.function.process_element
        opener = getattr(self.function, "open", None)
        if callable(opener):
            opener(self.runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer):
            closer()
        super().close()

    # ------------------------------------------------------------------ elements

    def process_keyed_element1(self, record: StreamRecord) -> None:
        """A left record, for the key already set in the key context."""
        if not self._guard.checked:
            self._guard.see(1, self._backend.current_key)
        self._join(record, self._left, self._right, self.lower_bound, self.upper_bound, True)

    def process_keyed_element2(self, record: StreamRecord) -> None:
        """A right record, for the key already set in the key context."""
        if not self._guard.checked:
            self._guard.see(2, self._backend.current_key)
        self._join(record, self._right, self._left, -self.upper_bound, -self.lower_bound, False)

    def _join(
        self, record: StreamRecord, ours: Buffer, other: Buffer, low: int, high: int, is_left: bool
    ) -> None:
        ts = record.timestamp
        value = record.value
        if ts is None:
            raise TypeError(
                f"a {_SIDES[not is_left]} record of the interval join has no timestamp "
                f"({value!r}): elements used in interval joins need meaningful timestamps; "
                "timestamps must be assigned first, e.g. with assign_timestamps_and_watermarks("
                "WatermarkStrategy...with_timestamp_assigner())"
            )
        if ts < self._timers.current_watermark():
            tag = self.left_late_data_output_tag if is_left else self.right_late_data_output_tag
            if tag is None:
                self.num_late_records_dropped += 1
            else:
                self.num_late_records_side_output += 1
                self.output.collect_side(tag, StreamRecord(value, ts))
            return
        bucket = ours.get(ts)
        if bucket is None:
            ours.put(ts, [BufferEntry(value, False)])
        else:
            bucket.append(BufferEntry(value, False))
            ours.put(ts, bucket)
        lo, hi = ts + low, ts + high
        matches = [(t, b) for t, b in other.items() if lo <= t <= hi]
        if matches:
            if len(matches) > 1:
                matches.sort(key=_first)
            collect = self._collect
            for t, entries in matches:
                for entry in entries:
                    if is_left:
                        collect(value, entry.element, ts, t)
                    else:
                        collect(entry.element, value, t, ts)
        cleanup = min(ts + high, MAX_TIMESTAMP) if high > 0 else ts
        self._timers.register_event_time_timer(CLEANUP_LEFT if is_left else CLEANUP_RIGHT, cleanup)

    def _collect(self, left: object, right: object, left_ts: int, right_ts: int) -> None:
        ctx = self._ctx
        ts = left_ts if left_ts > right_ts else right_ts
        ctx.left_ts = left_ts
        ctx.right_ts = right_ts
        ctx.ts = ts
        results = self._process(left, right, ctx)
        if results is not None:
            emit_results(self, results, ts)

    # ------------------------------------------------------------------ timers

    def on_event_time(self, timestamp: int, key: object, namespace: object) -> None:
        if namespace == CLEANUP_LEFT:
            _remove_bucket(self._left, timestamp, self.upper_bound)
        elif namespace == CLEANUP_RIGHT:
            _remove_bucket(self._right, timestamp, -self.lower_bound)
        else:
            raise RuntimeError(f"invalid interval-join timer namespace {namespace!r}")

    def on_processing_time(self, timestamp: int, key: object, namespace: object) -> None:
        """The interval join has no processing-time timers."""


def _first(item: tuple[int, list[BufferEntry]]) -> int:
    return item[0]


def _remove_bucket(buffer: Buffer, timer: int, offset: int) -> None:
    """Remove the bucket whose cleanup timer (``ts + offset`` if ``offset > 0`` else ``ts``,
    saturating at MAX) fired at ``timer``."""
    if offset <= 0:
        buffer.remove(timer)
    elif timer < MAX_TIMESTAMP:
        buffer.remove(timer - offset)
    else:  # saturated: every bucket at or after MAX - offset shares the timer at MAX
        for t in buffer:  # a snapshot of the keys
            if t >= MAX_TIMESTAMP - offset:
                buffer.remove(t)
