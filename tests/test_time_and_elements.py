"""Time spans (``sparktide.common.time``) and stream elements (``sparktide.runtime.elements``)."""

from __future__ import annotations

import copy
import enum
import pickle
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparktide.common.time import Duration, Time, positive_millis, to_millis
from sparktide.runtime.elements import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    StreamRecord,
    Watermark,
    WatermarkStatus,
    check_timestamp,
)

PICKLE_PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


class Millis(enum.IntEnum):
    TEN = 10


# --------------------------------------------------------------------------------------------
# Duration and Time
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "millis"),
    [
        (Duration.of_millis(7), 7),
        (Duration.of_seconds(2), 2_000),
        (Duration.of_minutes(3), 180_000),
        (Duration.of_hours(1), 3_600_000),
        (Duration.of_days(2), 172_800_000),
        (Duration.of_nanos(5_000_000), 5),
        (Duration.of_nanos(-2_000_000), -2),
        (Duration.zero(), 0),
        (Duration.of(1_500), 1_500),
        (Duration(-5), -5),
        (Time.milliseconds(7), 7),
        (Time.seconds(2), 2_000),
        (Time.minutes(3), 180_000),
        (Time.hours(1), 3_600_000),
        (Time.days(2), 172_800_000),
        (Time.of(250), 250),
        (Time(0), 0),
    ],
)
def test_constructors(span: Duration | Time, millis: int) -> None:
    assert span.to_milliseconds() == millis
    assert type(span.to_milliseconds()) is int
    assert span.to_timedelta() == timedelta(milliseconds=millis)


@pytest.mark.parametrize(
    ("td", "millis"),
    [
        (timedelta(milliseconds=1_500), 1_500),
        (timedelta(seconds=3), 3_000),
        (timedelta(days=1, hours=1), 90_000_000),
        (timedelta(microseconds=2_000), 2),
        (timedelta(milliseconds=-1), -1),
        (timedelta(days=-1), -86_400_000),
        (timedelta(0), 0),
    ],
)
def test_timedelta_is_accepted(td: timedelta, millis: int) -> None:
    assert Duration.of(td).to_milliseconds() == millis
    assert Time.of(td).to_milliseconds() == millis
    assert to_millis(td, "size") == millis


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_timedelta_round_trip(millis: int) -> None:
    span = Duration.of_millis(millis)
    assert Duration.of(span.to_timedelta()) == span
    assert Time.of(Time.milliseconds(millis).to_timedelta()) == Time.milliseconds(millis)


@pytest.mark.parametrize(
    "td", [timedelta(microseconds=1), timedelta(microseconds=1_500), timedelta(microseconds=-1)]
)
def test_sub_millisecond_timedelta_is_rejected(td: timedelta) -> None:
    with pytest.raises(ValueError, match="value must be a whole number of milliseconds"):
        Duration.of(td)
    with pytest.raises(ValueError, match="value must be a whole number of milliseconds"):
        Time.of(td)
    with pytest.raises(ValueError, match=r"size must be a whole number of milliseconds.*round it"):
        to_millis(td, "size")


def test_sub_millisecond_nanos_are_rejected() -> None:
    with pytest.raises(ValueError, match="nanos must be a whole number of milliseconds"):
        Duration.of_nanos(1_500_000)


def test_spans_convert_between_each_other() -> None:
    assert Duration.of(Time.seconds(1)) == Duration.of_seconds(1)
    assert Time.of(Duration.of_minutes(1)) == Time.minutes(1)
    assert to_millis(Duration.of_seconds(2), "size") == 2_000
    assert to_millis(Time.seconds(3), "size") == 3_000
    assert to_millis(42, "size") == 42


def test_int_subclasses_are_accepted_as_plain_ints() -> None:
    assert Duration.of_millis(Millis.TEN).to_milliseconds() == 10
    assert type(Duration.of_millis(Millis.TEN).to_milliseconds()) is int
    assert type(to_millis(Millis.TEN, "size")) is int
    assert Time.seconds(Millis.TEN) == Time.seconds(10)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda v: Duration.of_millis(v), "millis"),
        (lambda v: Duration.of_seconds(v), "seconds"),
        (lambda v: Duration.of_minutes(v), "minutes"),
        (lambda v: Duration.of_hours(v), "hours"),
        (lambda v: Duration.of_days(v), "days"),
        (lambda v: Duration.of_nanos(v), "nanos"),
        (lambda v: Duration(v), "milliseconds"),
        (lambda v: Time.milliseconds(v), "milliseconds"),
        (lambda v: Time.seconds(v), "seconds"),
        (lambda v: Time.minutes(v), "minutes"),
        (lambda v: Time.hours(v), "hours"),
        (lambda v: Time.days(v), "days"),
        (lambda v: Time(v), "milliseconds"),
    ],
)
@pytest.mark.parametrize(("value", "type_name"), [(1.5, "float"), ("1", "str"), (True, "bool")])
def test_non_int_amounts_raise_type_error_naming_the_parameter(
    build: Any, name: str, value: Any, type_name: str
) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be an int, got {type_name} "):
        build(value)


@pytest.mark.parametrize(("value", "type_name"), [(1.5, "float"), ("1s", "str"), (True, "bool")])
def test_to_millis_rejects_non_spans_naming_the_parameter(value: Any, type_name: str) -> None:
    for call, name in [
        (lambda: to_millis(value, "window_size"), "window_size"),
        (lambda: Duration.of(value), "value"),
        (lambda: Time.of(value), "value"),
        (lambda: positive_millis(value, "gap"), "gap"),
    ]:
        with pytest.raises(TypeError, match=f"^{name} must be a Duration, .* got {type_name} "):
            call()


@pytest.mark.parametrize("value", [0, -1, Duration.zero(), Time.milliseconds(-5), timedelta(0)])
def test_positive_millis_rejects_non_positive_spans(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^size must be a positive duration, got -?[0-9]+ ms"):
        positive_millis(value, "size")


def test_positive_millis_accepts_positive_spans() -> None:
    assert positive_millis(1, "size") == 1
    assert positive_millis(Time.seconds(1), "size") == 1_000
    assert positive_millis(timedelta(minutes=1), "size") == 60_000


def test_spans_are_immutable() -> None:
    span = Duration.of_seconds(1)
    with pytest.raises(AttributeError, match="Duration is immutable"):
        span.milliseconds = 5  # type: ignore[attr-defined]
    assert span.to_milliseconds() == 1_000
    with pytest.raises(AttributeError):
        span.other = 5  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="Time is immutable"):
        Time.seconds(1)._ms = 5  # type: ignore[misc]
    assert span.to_milliseconds() == 1_000


def test_equality_and_hashing() -> None:
    assert Duration.of_seconds(1) == Duration.of_millis(1_000) == Duration.of(timedelta(seconds=1))
    assert hash(Duration.of_seconds(1)) == hash(Duration.of_millis(1_000))
    assert Time.minutes(1) == Time.seconds(60)
    assert hash(Time.minutes(1)) == hash(Time.seconds(60))
    assert Duration.of_millis(1) != Duration.of_millis(2)
    # a Duration is not a Time, and neither is a bare number
    assert Duration.of_millis(5) != Time.milliseconds(5)
    assert Duration.of_millis(5) != 5
    assert len({Duration.of_millis(5), Duration.of_millis(5), Time.milliseconds(5)}) == 2


def test_ordering_with_less_than() -> None:
    spans = [Duration.of_seconds(3), Duration.of_millis(1), Duration.of_seconds(2)]
    assert sorted(spans) == [Duration.of_millis(1), Duration.of_seconds(2), Duration.of_seconds(3)]
    assert Duration.of_millis(1) < Duration.of_millis(2)
    assert not Duration.of_millis(2) < Duration.of_millis(2)
    assert Duration.of_millis(3) > Duration.of_millis(2)


def test_repr_and_pickling() -> None:
    assert repr(Duration.of_seconds(1)) == "Duration.of_millis(1000)"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        for span in (Duration.of_seconds(1), Time.minutes(2)):
            restored = pickle.loads(pickle.dumps(span, protocol))
            assert restored == span and type(restored) is type(span)
    assert copy.deepcopy(Time.hours(1)) == Time.hours(1)


def test_ordering_with_less_or_equal() -> None:
    assert Duration.of_millis(1) <= Duration.of_millis(1)
    assert Time.seconds(2) >= Time.seconds(1)


def test_time_repr_evaluates_back() -> None:
    assert eval(repr(Time.seconds(1))) == Time.seconds(1)


def test_constructor_error_suggests_a_fix_that_works() -> None:
    with pytest.raises(TypeError) as info:
        Duration.of_seconds(timedelta(seconds=1))  # type: ignore[arg-type]
    assert "Duration.of(" in str(info.value)
    assert Duration.of(timedelta(seconds=1)) == Duration.of_seconds(1)


def test_spans_refuse_attribute_deletion() -> None:
    span = Duration.of_seconds(1)
    with pytest.raises(AttributeError, match="immutable"):
        del span.milliseconds  # type: ignore[attr-defined]
    assert span.to_milliseconds() == 1_000


# --------------------------------------------------------------------------------------------
# check_timestamp
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, -1, 1_700_000_000_000, MIN_TIMESTAMP, MAX_TIMESTAMP])
def test_check_timestamp_accepts_ints_in_long_range(value: int) -> None:
    assert check_timestamp(value, "timestamp") == value


def test_check_timestamp_returns_plain_ints_for_int_subclasses() -> None:
    result = check_timestamp(Millis.TEN, "timestamp")
    assert result == 10 and type(result) is int


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(True, "bool"), (False, "bool"), (3.0, "float"), ("5", "str"), (None, "NoneType")],
)
def test_check_timestamp_type_errors_name_argument_and_type(value: Any, type_name: str) -> None:
    with pytest.raises(TypeError) as info:
        check_timestamp(value, "event_ts")
    message = str(info.value)
    assert message.startswith("event_ts must be an int number of milliseconds")
    assert f"got {type_name} ({value!r})" in message


@pytest.mark.parametrize("value", [MAX_TIMESTAMP + 1, MIN_TIMESTAMP - 1, 2**100, -(2**100)])
def test_check_timestamp_out_of_long_range(value: int) -> None:
    with pytest.raises(
        ValueError, match=f"^event_ts must fit a 64-bit signed long .* got {value};"
    ):
        check_timestamp(value, "event_ts")


# --------------------------------------------------------------------------------------------
# StreamRecord, Watermark, WatermarkStatus
# --------------------------------------------------------------------------------------------


def test_stream_record_equality_and_repr() -> None:
    assert StreamRecord("a", 5) == StreamRecord("a", 5)
    assert StreamRecord("a", 5) != StreamRecord("a", 6)
    assert StreamRecord("a", 5) != StreamRecord("b", 5)
    assert StreamRecord("a") == StreamRecord("a", None)
    assert StreamRecord("a", 0) != StreamRecord("a")  # no timestamp is not timestamp 0
    assert StreamRecord("a", 5) != ("a", 5)
    assert hash(StreamRecord("a", 5)) == hash(StreamRecord("a", 5))
    assert hash(StreamRecord([1], 5)) == hash(StreamRecord([2], 5))  # unhashable values are fine
    assert repr(StreamRecord("a", 5)) == "StreamRecord('a', 5)"
    assert repr(StreamRecord({"k": 1})) == "StreamRecord({'k': 1}, None)"


def test_stream_record_timestamp() -> None:
    assert StreamRecord("a", 5).has_timestamp
    assert StreamRecord("a", 0).has_timestamp
    assert not StreamRecord("a").has_timestamp
    assert StreamRecord("a").timestamp is None
    assert StreamRecord("a", 5).replace("b", 7) == StreamRecord("b", 7)


def test_stream_record_replace_keeps_the_timestamp() -> None:
    assert StreamRecord("a", 5).replace("b") == StreamRecord("b", 5)


@pytest.mark.parametrize("protocol", PICKLE_PROTOCOLS)
def test_stream_record_pickling(protocol: int) -> None:
    for record in (StreamRecord("a", 5), StreamRecord(("k", [1, 2])), StreamRecord(None, -1)):
        restored = pickle.loads(pickle.dumps(record, protocol))
        assert restored == record and restored is not record
        assert restored.timestamp == record.timestamp


def test_watermark_equality_ordering_and_repr() -> None:
    assert Watermark(10) == Watermark(10)
    assert Watermark(10) != Watermark(11)
    assert Watermark(10) != 10
    assert hash(Watermark(10)) == hash(Watermark(10))
    assert Watermark(10) < Watermark(11)
    assert not Watermark(11) < Watermark(11)
    assert Watermark(12) > Watermark(11)
    assert max([Watermark(3), Watermark(9), Watermark(1)]) == Watermark(9)
    assert repr(Watermark(-3)) == "Watermark(-3)"
    assert Watermark(MAX_TIMESTAMP) == Watermark.MAX  # type: ignore[attr-defined]
    assert Watermark(MIN_TIMESTAMP) == Watermark.MIN  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "type_name"), [(1.0, "float"), (None, "NoneType")])
def test_watermark_validates_its_timestamp(value: Any, type_name: str) -> None:
    with pytest.raises(
        TypeError, match=rf"^Watermark\.timestamp must be an int .* got {type_name}"
    ):
        Watermark(value)
    with pytest.raises(ValueError, match=r"^Watermark\.timestamp must fit a 64-bit signed long"):
        Watermark(MAX_TIMESTAMP + 1)


@pytest.mark.parametrize("protocol", PICKLE_PROTOCOLS)
def test_watermark_pickling(protocol: int) -> None:
    for wm in (Watermark(0), Watermark(MAX_TIMESTAMP), Watermark(MIN_TIMESTAMP)):
        restored = pickle.loads(pickle.dumps(wm, protocol))
        assert restored == wm and restored.timestamp == wm.timestamp


def test_watermark_status() -> None:
    assert WatermarkStatus.ACTIVE.is_active() and not WatermarkStatus.ACTIVE.is_idle()
    assert WatermarkStatus.IDLE.is_idle() and not WatermarkStatus.IDLE.is_active()
    assert WatermarkStatus.ACTIVE != WatermarkStatus.IDLE
    assert repr(WatermarkStatus.ACTIVE) == "WatermarkStatus.ACTIVE"
    assert repr(WatermarkStatus.IDLE) == "WatermarkStatus.IDLE"


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_watermark_status_singletons_survive_pickling(protocol: int) -> None:
    for status in (WatermarkStatus.ACTIVE, WatermarkStatus.IDLE):
        assert pickle.loads(pickle.dumps(status, protocol)) is status
    nested = pickle.loads(pickle.dumps([WatermarkStatus.IDLE, WatermarkStatus.ACTIVE], protocol))
    assert nested[0] is WatermarkStatus.IDLE and nested[1] is WatermarkStatus.ACTIVE


def test_watermark_status_singletons_survive_copying() -> None:
    for status in (WatermarkStatus.ACTIVE, WatermarkStatus.IDLE):
        assert copy.copy(status) is status
        assert copy.deepcopy(status) is status
