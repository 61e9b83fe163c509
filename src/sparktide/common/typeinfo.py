"""``Types`` and ``TypeInformation``: PyFlink's declared types, with what they do to values.

PyFlink honours a declared type: a value that crosses an operator boundary is serialized with the
type's coder and comes back in the type's shape. :meth:`TypeInformation.coerce` returns that value
(or raises when PyFlink could not encode it, or would silently change its kind), so the local
runtime and the Spark runner give a program the values PyFlink gives it:

>>> Types.FLOAT().coerce(110.1)
110.0999984741211
>>> Types.TUPLE([Types.STRING(), Types.INT()]).coerce(['a', 1])
('a', 1)
>>> Types.ROW_NAMED(['id', 'name'], [Types.INT(), Types.STRING()]).coerce((1, 'a'))
Row(id=1, name='a')
>>> Types.TUPLE([Types.LONG(), Types.INT()]).coerce((1, 2**40))
Traceback (most recent call last):
...
ValueError: value[1]: Types.INT() holds an int in [-2147483648, 2147483647], got int \
1099511627776; declare Types.LONG() for this field or bring the value into range

What a round trip does, per type (``None`` is accepted only where PyFlink's coders carry it: in
``ROW`` fields, ``BASIC_ARRAY``/``OBJECT_ARRAY`` elements, ``MAP`` values, and anywhere under
``PICKLED_BYTE_ARRAY``):

- ``BYTE``/``SHORT``/``INT``/``LONG``/``BIG_INT``: an ``int`` in the 8/16/32/64/64-bit range;
- ``FLOAT``: rounded to 32 bits; ``DOUBLE``: ``float``; ints are accepted and become floats;
- ``STRING``: a ``str``; ``CHAR``: a one-character ``str``; ``BOOLEAN``: a ``bool``;
- ``BIG_DEC``: ``Decimal(str(value))`` of a Decimal, int or float;
- ``SQL_TIME``/``SQL_TIMESTAMP``: truncated to milliseconds; ``SQL_DATE``/``LOCAL_*``: unchanged;
- ``TUPLE``: a ``tuple``; ``ROW``/``ROW_NAMED``: a :class:`~sparktide.common.types.Row` named
  after the declared fields (``f0, f1, ...`` when unnamed), keeping the row kind;
- arrays and ``LIST``: a ``list`` (``PRIMITIVE_ARRAY(BYTE())``: ``bytes``); ``MAP``: a ``dict``.

``format_for_print`` gives what PyFlink's ``print()`` shows for a record of the declared type
(Java's ``toString()``; rows and undeclared types are formatted in Python):

>>> Types.TUPLE([Types.STRING(), Types.FLOAT(), Types.BOOLEAN()]).format_for_print(('a', 0.1, True))
'(a,0.1,true)'

Where PyFlink would truncate (``1.7`` as ``INT``), overflow (``1e300`` as ``FLOAT``) or drop
information (a ``datetime`` as ``SQL_DATE``, a zone-aware time), ``coerce`` raises instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import (
    BasicType,
    BasicTypeInfo,
    InstantTypeInfo,
    PickledBytesTypeInfo,
)
from sparktide.common.typeinfo_composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
)
from sparktide.common.typeinfo_temporal import (
    DateTypeInfo,
    LocalTimeTypeInfo,
    SqlTimeTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)

__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "InstantTypeInfo",
    "ListTypeInfo",
    "LocalTimeTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]


class Types:
    """PyFlink's factories of declared types.

    >>> Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    RowTypeInfo(id: Integer, info: String)
    >>> Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()]).to_arrow_type()
    StructType(struct<f0: int64 not null, f1: string not null, f2: float not null>)
    """

    @staticmethod
    def STRING() -> TypeInformation:
        """A ``str``."""
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BYTE() -> TypeInformation:
        """An 8-bit signed int."""
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        """A ``bool``."""
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def SHORT() -> TypeInformation:
        """A 16-bit signed int."""
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT() -> TypeInformation:
        """A 32-bit signed int."""
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG() -> TypeInformation:
        """A 64-bit signed int."""
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT() -> TypeInformation:
        """A 32-bit float: values are rounded to single precision."""
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        """A 64-bit float."""
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR() -> TypeInformation:
        """A one-character ``str``."""
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        """An int (64-bit in PyFlink's Python operators)."""
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        """A ``decimal.Decimal``."""
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT() -> TypeInformation:
        """A point in time (PyFlink's ``Instant``: ``seconds`` and ``nanos``)."""
        return InstantTypeInfo(BasicType.INSTANT)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        """A ``datetime.date``."""
        return DateTypeInfo()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        """A ``datetime.time`` with millisecond precision."""
        return TimeTypeInfo()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        """A ``datetime.datetime`` with millisecond precision."""
        return TimestampTypeInfo()

    @staticmethod
    def LOCAL_DATE() -> TypeInformation:
        """A ``datetime.date`` (Java's ``LocalDate``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)

    @staticmethod
    def LOCAL_TIME() -> TypeInformation:
        """A ``datetime.time`` (Java's ``LocalTime``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)

    @staticmethod
    def LOCAL_DATE_TIME() -> TypeInformation:
        """A ``datetime.datetime`` (Java's ``LocalDateTime``)."""
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """Any picklable Python value (what an undeclared type means)."""
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        """A :class:`Row` with fields of the given types, named ``f0``, ``f1``, ..."""
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(
        field_names: Sequence[str], field_types: Sequence[TypeInformation]
    ) -> RowTypeInfo:
        """A :class:`Row` with the given field names and types."""
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TupleTypeInfo:
        """A ``tuple`` with fields of the given types."""
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of primitives (``BOOLEAN`` ... ``CHAR``); ``BYTE`` gives ``bytes``."""
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of boxed basic values (primitives or ``STRING``), which may be None."""
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """A list of values of any type, which may be None."""
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        """A dict."""
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        """A list of non-null values."""
        return ListTypeInfo(element_type_info)
