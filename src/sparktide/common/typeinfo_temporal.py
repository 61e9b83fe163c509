"""Date and time declared types: ``java.sql`` (``SQL_*``) and ``java.time`` (``LOCAL_*``).

Printed as Java's ``toString()`` of the Java object: ``java.sql.Date`` and ``Timestamp`` use the
Julian calendar before 15 October 1582, ``java.time`` types the proleptic Gregorian one:

>>> import datetime
>>> from sparktide.common.typeinfo import Types
>>> Types.SQL_TIMESTAMP().format_for_print(datetime.datetime(2020, 1, 2, 3, 4, 5))
'2020-01-02 03:04:05.0'
>>> Types.SQL_DATE().format_for_print(datetime.date(1500, 3, 1))
'1500-02-20'
>>> Types.LOCAL_DATE_TIME().format_for_print(datetime.datetime(2020, 1, 2, 3, 4, 5, 120000))
'2020-01-02T03:04:05.120'
"""

from __future__ import annotations

import datetime as _dt
from enum import Enum
from typing import Any

import pyarrow as pa

from sparktide.common.typeinfo_base import TypeInformation, got, set_slot

__all__ = [
    "DateTypeInfo",
    "LocalTimeTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
]

_GREGORIAN_START = _dt.date(1582, 10, 15)  # the first day of java.util.Date's Gregorian calendar
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def _long_hash(value: int) -> int:
    bits = value & 0xFFFFFFFFFFFFFFFF
    return _int32(bits ^ (bits >> 32))


def _sql_date_text(day: _dt.date) -> str:
    """``yyyy-mm-dd`` as ``java.util.Date`` shows it: Julian calendar before the reform."""
    if day >= _GREGORIAN_START:
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    c = day.toordinal() + 1721425 + 32082  # Julian day number, shifted for the conversion
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return f"{d - 4800 + m // 10:04d}-{m + 3 - 12 * (m // 10):02d}-{e - (153 * m + 2) // 5 + 1:02d}"


def _sql_time_text(value: _dt.time) -> str:
    return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"


def _sql_timestamp_text(value: _dt.datetime) -> str:
    """``java.sql.Timestamp.toString()``: nanoseconds without trailing zeros (at least one)."""
    nanos = f"{value.microsecond * 1000:09d}".rstrip("0") or "0"
    return f"{_sql_date_text(value.date())} {_sql_time_text(value.time())}.{nanos}"


def _local_time_text(value: _dt.time) -> str:
    """``java.time.LocalTime.toString()``: seconds only when not zero, fraction in groups of 3."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    nanos = value.microsecond * 1000
    if value.second or nanos:
        text += f":{value.second:02d}"
        if nanos % 1_000_000 == 0 and nanos:
            text += f".{nanos // 1_000_000:03d}"
        elif nanos:
            text += f".{nanos // 1000:06d}"
    return text


def _epoch_millis(value: _dt.datetime) -> int:
    days = value.toordinal() - _EPOCH_ORDINAL
    seconds = days * 86400 + value.hour * 3600 + value.minute * 60 + value.second
    return seconds * 1000 + value.microsecond // 1000


def _local_date_hash(value: _dt.date) -> int:
    year = value.year
    return _int32((year & 0xFFFFF800) ^ ((year << 11) + (value.month << 6) + value.day))


def _local_time_hash(value: _dt.time) -> int:
    nanos = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**9
    return _long_hash(nanos + value.microsecond * 1000)


class _TemporalTypeInfo(TypeInformation):
    """Shared by the date and time types; ``_spec()`` says which one."""

    __slots__ = ()
    # python type, truncate to milliseconds?, Types factory name, repr, arrow type
    _SPEC: tuple[type, bool, str, str, pa.DataType]

    def _spec(self) -> tuple[type, bool, str, str, pa.DataType]:
        return self._SPEC

    def _decl(self) -> str:
        return f"Types.{self._spec()[2]}()"

    def __repr__(self) -> str:
        return self._spec()[3]

    def to_arrow_type(self) -> pa.DataType:
        return self._spec()[4]

    @property
    def python_type(self) -> type:
        """The Python type of the values: ``datetime.date``, ``time`` or ``datetime``.

        >>> from sparktide.common.typeinfo import Types
        >>> Types.SQL_TIMESTAMP().python_type.__name__, Types.LOCAL_DATE().python_type.__name__
        ('datetime', 'date')
        """
        return self._spec()[0]

    def coerce(self, value: Any, path: str = "value") -> Any:
        wanted, millis = self._spec()[:2]
        datetime_for_date = wanted is _dt.date and isinstance(value, _dt.datetime)
        if datetime_for_date or not isinstance(value, wanted):
            name = f"datetime.{wanted.__name__}"
            fix = (
                "pass value.date() (PyFlink would drop the time of day silently)"
                if datetime_for_date
                else f"pass a {name}"
            )
            raise self._wrong(value, path, f"a {name}", fix)
        if not isinstance(value, (_dt.time, _dt.datetime)):
            return value  # a date
        if value.tzinfo is not None:
            raise ValueError(
                f"{path}: {self._decl()} holds a zone-less value, got the zone-aware "
                f"{got(value)} (PyFlink would drop the zone and keep the wall-clock time); "
                "convert it first, e.g. value.astimezone(timezone.utc).replace(tzinfo=None)"
            )
        return value.replace(microsecond=value.microsecond // 1000 * 1000) if millis else value


class DateTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_DATE()``: a ``datetime.date``, printed as ``java.sql.Date`` (``2020-01-02``).

    >>> import datetime
    >>> from sparktide.common.typeinfo import Types
    >>> Types.SQL_DATE().coerce(datetime.date(2020, 1, 2))
    datetime.date(2020, 1, 2)
    """

    __slots__ = ()
    _SPEC = (_dt.date, False, "SQL_DATE", "DateTypeInfo", pa.date32())

    def java_string(self, value: Any) -> str:
        return "null" if value is None else _sql_date_text(value)

    def java_hash_code(self, value: Any) -> int:
        """``java.sql.Date.hashCode()`` (midnight UTC)."""
        return _long_hash((value.toordinal() - _EPOCH_ORDINAL) * 86_400_000)


class TimeTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_TIME()``: a zone-less ``datetime.time`` with millisecond precision, printed
    as ``java.sql.Time`` (``01:02:03``, without the milliseconds).

    >>> import datetime
    >>> from sparktide.common.typeinfo import Types
    >>> Types.SQL_TIME().coerce(datetime.time(1, 2, 3, 4567))
    datetime.time(1, 2, 3, 4000)
    """

    __slots__ = ()
    _SPEC = (_dt.time, True, "SQL_TIME", "TimeTypeInfo", pa.time32("ms"))

    def java_string(self, value: Any) -> str:
        return "null" if value is None else _sql_time_text(value)

    def java_hash_code(self, value: Any) -> int:
        """``java.sql.Time.hashCode()`` (on 1970-01-01 UTC)."""
        seconds = value.hour * 3600 + value.minute * 60 + value.second
        return _long_hash(seconds * 1000 + value.microsecond // 1000)


class TimestampTypeInfo(_TemporalTypeInfo):
    """``Types.SQL_TIMESTAMP()``: a zone-less ``datetime.datetime``, millisecond precision,
    printed as ``java.sql.Timestamp`` (``2020-01-02 03:04:05.006``).

    >>> import datetime
    >>> from sparktide.common.typeinfo import Types
    >>> Types.SQL_TIMESTAMP().coerce(datetime.datetime(2020, 1, 2, 3, 4, 5, 6001))
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6000)
    """

    __slots__ = ()
    _SPEC = (_dt.datetime, True, "SQL_TIMESTAMP", "TimestampTypeInfo", pa.timestamp("ms"))

    def java_string(self, value: Any) -> str:
        return "null" if value is None else _sql_timestamp_text(value)

    def java_hash_code(self, value: Any) -> int:
        """``java.sql.Timestamp.hashCode()`` (UTC)."""
        return _long_hash(_epoch_millis(value))


class SqlTimeTypeInfo:
    """PyFlink's factory of the ``java.sql`` time types.

    >>> SqlTimeTypeInfo.DATE(), SqlTimeTypeInfo.TIME(), SqlTimeTypeInfo.TIMESTAMP()
    (DateTypeInfo, TimeTypeInfo, TimestampTypeInfo)
    """

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


_LOCAL_SPECS: dict[str, tuple[type, pa.DataType]] = {
    "LOCAL_DATE": (_dt.date, pa.date32()),
    "LOCAL_TIME": (_dt.time, pa.time64("us")),
    "LOCAL_DATE_TIME": (_dt.datetime, pa.timestamp("us")),
}


class LocalTimeTypeInfo(_TemporalTypeInfo):
    """``java.time`` local types: ``LOCAL_DATE``, ``LOCAL_TIME``, ``LOCAL_DATE_TIME`` (µs kept),
    printed in ISO-8601 as ``java.time`` writes it.

    >>> import datetime
    >>> from sparktide.common.typeinfo import Types
    >>> Types.LOCAL_DATE_TIME(), Types.LOCAL_TIME().coerce(datetime.time(1, 2, 3, 4567))
    (LocalTimeTypeInfo<LOCAL_DATE_TIME>, datetime.time(1, 2, 3, 4567))
    >>> Types.LOCAL_TIME().format_for_print(datetime.time(1, 2))
    '01:02'
    """

    class TimeType(Enum):
        LOCAL_DATE = 0
        LOCAL_TIME = 1
        LOCAL_DATE_TIME = 2

    __slots__ = ("_time_type",)
    _time_type: TimeType

    def __init__(self, time_type: LocalTimeTypeInfo.TimeType) -> None:
        if not isinstance(time_type, LocalTimeTypeInfo.TimeType):
            raise TypeError(
                f"time_type must be a LocalTimeTypeInfo.TimeType, got {got(time_type)}; "
                "use Types.LOCAL_DATE(), Types.LOCAL_TIME() or Types.LOCAL_DATE_TIME()"
            )
        set_slot(self, "_time_type", time_type)

    def _args(self) -> tuple[Any, ...]:
        return (self._time_type,)

    def _spec(self) -> tuple[type, bool, str, str, pa.DataType]:
        name = self._time_type.name
        python, arrow = _LOCAL_SPECS[name]
        return python, False, name, f"LocalTimeTypeInfo<{name}>", arrow

    def java_string(self, value: Any) -> str:
        if value is None:
            return "null"
        kind = self._time_type
        if kind is LocalTimeTypeInfo.TimeType.LOCAL_DATE:
            text: str = value.isoformat()
            return text
        if kind is LocalTimeTypeInfo.TimeType.LOCAL_TIME:
            return _local_time_text(value)
        return f"{value.date().isoformat()}T{_local_time_text(value.time())}"

    def java_hash_code(self, value: Any) -> int:
        """``hashCode()`` of the ``java.time`` object."""
        kind = self._time_type
        if kind is LocalTimeTypeInfo.TimeType.LOCAL_DATE:
            return _local_date_hash(value)
        if kind is LocalTimeTypeInfo.TimeType.LOCAL_TIME:
            return _local_time_hash(value)
        return _local_date_hash(value.date()) ^ _local_time_hash(value.time())
