"""PyFlink's Table API type constants (``pyflink.table.types``), for the places of the DataStream
API that take them: the file formats' ``CsvSchemaBuilder.add_number_column(name,
DataTypes.INT())``, ``ParquetColumnarRowInputFormat(DataTypes.ROW([...]))`` and the like.

sparktide has no Table API: a :class:`DataType` is an immutable description that stands for the
``Types`` of the DataStream API it corresponds to (:meth:`DataType.to_type_info`), and
:func:`to_type_info` lets a parameter take either.

=============================================  ======================================
``DataTypes``                                  ``Types``
=============================================  ======================================
``CHAR(n)``, ``VARCHAR(n)``, ``STRING()``      ``STRING()``
``BOOLEAN()``                                  ``BOOLEAN()``
``BINARY(n)``, ``VARBINARY(n)``, ``BYTES()``   ``PRIMITIVE_ARRAY(BYTE())``
``TINYINT()``, ``SMALLINT()``                  ``BYTE()``, ``SHORT()``
``INT()``, ``BIGINT()``                        ``INT()``, ``LONG()``
``FLOAT()``, ``DOUBLE()``                      ``FLOAT()``, ``DOUBLE()``
``DECIMAL(p, s)``                              ``BIG_DEC()`` (decimal(38, 18): s ≤ 18, p − s ≤ 20)
``DATE()``, ``TIME(p)``                        ``LOCAL_DATE()``, ``LOCAL_TIME()``
``TIMESTAMP(p)``                               ``LOCAL_DATE_TIME()``
``TIMESTAMP_LTZ(p)``                           ``INSTANT()``
``ARRAY(t)``                                   ``LIST(t)``
``MAP(k, v)``                                  ``MAP(k, v)``
``ROW([FIELD(name, t), ...])``                 ``ROW_NAMED([name, ...], [t, ...])``
=============================================  ======================================

>>> DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("tags",
...     DataTypes.ARRAY(DataTypes.STRING()))])
DataTypes.ROW([DataTypes.FIELD('id', DataTypes.INT()), DataTypes.FIELD('tags', \
DataTypes.ARRAY(DataTypes.STRING()))])
>>> DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT())]).to_type_info()
RowTypeInfo(id: Long)
>>> to_type_info(DataTypes.DECIMAL(10, 2), "number_type") == Types.BIG_DEC()
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation

__all__ = [
    "ArrayType",
    "AtomicType",
    "DataType",
    "DataTypes",
    "DecimalType",
    "MapType",
    "RowField",
    "RowType",
    "to_type_info",
]

_BIG_DEC_PRECISION, _BIG_DEC_SCALE = 38, 18


# the DataStream type of each atomic Table API type
_ATOMIC_TYPES: dict[str, Callable[[], TypeInformation]] = {
    "CHAR": Types.STRING,
    "VARCHAR": Types.STRING,
    "STRING": Types.STRING,
    "BOOLEAN": Types.BOOLEAN,
    "BINARY": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
    "VARBINARY": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
    "BYTES": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
    "TINYINT": Types.BYTE,
    "SMALLINT": Types.SHORT,
    "INT": Types.INT,
    "BIGINT": Types.LONG,
    "FLOAT": Types.FLOAT,
    "DOUBLE": Types.DOUBLE,
    "DATE": Types.LOCAL_DATE,
    "TIME": Types.LOCAL_TIME,
    "TIMESTAMP": Types.LOCAL_DATE_TIME,
    "TIMESTAMP_LTZ": Types.INSTANT,
}


@dataclass(frozen=True)
class DataType:
    """A Table API data type: what values a field holds and whether it may hold null."""

    is_nullable: bool = field(default=True, kw_only=True)

    def to_type_info(self) -> TypeInformation:
        """The DataStream API type (``Types``) this data type stands for."""
        raise NotImplementedError

    def not_null(self) -> DataType:
        """This type, without null."""
        return replace(self, is_nullable=False)

    def nullable(self) -> DataType:
        """This type, with null."""
        return replace(self, is_nullable=True)

    def _args(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        args = self._args() + ([] if self.is_nullable else ["nullable=False"])
        return f"DataTypes.{self._name()}({', '.join(args)})"

    def _name(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, repr=False)
class AtomicType(DataType):
    """A type without parameters of its own (``INT()``, ``STRING()``, ``DATE()``, ...) or with a
    length or precision only (``VARCHAR(n)``, ``TIMESTAMP(p)``)."""

    sql_name: str = ""
    size: int | None = None

    def to_type_info(self) -> TypeInformation:
        return _ATOMIC_TYPES[self.sql_name]()

    def _name(self) -> str:
        return self.sql_name

    def _args(self) -> list[str]:
        return [] if self.size is None else [str(self.size)]


@dataclass(frozen=True, repr=False)
class DecimalType(DataType):
    """``DECIMAL(precision, scale)``: ``Types.BIG_DEC()``, a decimal(38, 18), which holds every
    value of a ``DECIMAL(p, s)`` with ``s <= 18`` and ``p - s <= 20``."""

    precision: int = 10
    scale: int = 0

    def __post_init__(self) -> None:
        if type(self.precision) is not int or not 1 <= self.precision <= _BIG_DEC_PRECISION:
            raise ValueError(f"DECIMAL precision must be an int in [1, 38], got {self.precision!r}")
        if type(self.scale) is not int or not 0 <= self.scale <= self.precision:
            raise ValueError(
                f"DECIMAL scale must be an int in [0, precision={self.precision}], "
                f"got {self.scale!r}"
            )

    def to_type_info(self) -> TypeInformation:
        integer_digits = self.precision - self.scale
        if self.scale > _BIG_DEC_SCALE or integer_digits > _BIG_DEC_PRECISION - _BIG_DEC_SCALE:
            raise ValueError(
                f"DECIMAL({self.precision}, {self.scale}) does not fit Types.BIG_DEC(), "
                "sparktide's decimal(38, 18): use a scale <= 18 and at most 20 digits before "
                "the point, or Types.DOUBLE()"
            )
        return Types.BIG_DEC()

    def _name(self) -> str:
        return "DECIMAL"

    def _args(self) -> list[str]:
        return [str(self.precision), str(self.scale)]


@dataclass(frozen=True, repr=False)
class ArrayType(DataType):
    """``ARRAY(element_type)``: ``Types.LIST`` of the element's type."""

    element_type: DataType = field(default_factory=lambda: DataTypes.STRING())

    def to_type_info(self) -> TypeInformation:
        return Types.LIST(self.element_type.to_type_info())

    def _name(self) -> str:
        return "ARRAY"

    def _args(self) -> list[str]:
        return [repr(self.element_type)]


@dataclass(frozen=True, repr=False)
class MapType(DataType):
    """``MAP(key_type, value_type)``: ``Types.MAP`` of their types."""

    key_type: DataType = field(default_factory=lambda: DataTypes.STRING())
    value_type: DataType = field(default_factory=lambda: DataTypes.STRING())

    def to_type_info(self) -> TypeInformation:
        return Types.MAP(self.key_type.to_type_info(), self.value_type.to_type_info())

    def _name(self) -> str:
        return "MAP"

    def _args(self) -> list[str]:
        return [repr(self.key_type), repr(self.value_type)]


@dataclass(frozen=True)
class RowField:
    """A named field of a ``ROW`` (``DataTypes.FIELD(name, data_type)``)."""

    name: str
    data_type: DataType
    description: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a FIELD's name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.data_type, DataType):
            raise TypeError(
                f"FIELD {self.name!r}: data_type must be a DataTypes type (e.g. "
                f"DataTypes.INT()), got {type(self.data_type).__name__} ({self.data_type!r})"
            )

    def __repr__(self) -> str:
        return f"DataTypes.FIELD({self.name!r}, {self.data_type!r})"


@dataclass(frozen=True, repr=False)
class RowType(DataType):
    """``ROW([FIELD(name, type), ...])``: ``Types.ROW_NAMED`` of the fields."""

    fields: tuple[RowField, ...] = ()

    def __post_init__(self) -> None:
        for f in self.fields:
            if not isinstance(f, RowField):
                raise TypeError(
                    "ROW takes a list of DataTypes.FIELD(name, data_type), got "
                    f"{type(f).__name__} ({f!r})"
                )

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_types(self) -> list[DataType]:
        return [f.data_type for f in self.fields]

    def to_type_info(self) -> TypeInformation:
        return Types.ROW_NAMED(
            self.field_names(), [f.data_type.to_type_info() for f in self.fields]
        )

    def _name(self) -> str:
        return "ROW"

    def _args(self) -> list[str]:
        return [f"[{', '.join(repr(f) for f in self.fields)}]"]


class DataTypes:
    """PyFlink's ``DataTypes`` constants (the ones with a DataStream counterpart; see the
    module docstring for what each stands for)."""

    @staticmethod
    def CHAR(length: int, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="CHAR", size=length, is_nullable=nullable)

    @staticmethod
    def VARCHAR(length: int, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="VARCHAR", size=length, is_nullable=nullable)

    @staticmethod
    def STRING(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="STRING", is_nullable=nullable)

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="BOOLEAN", is_nullable=nullable)

    @staticmethod
    def BINARY(length: int, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="BINARY", size=length, is_nullable=nullable)

    @staticmethod
    def VARBINARY(length: int, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="VARBINARY", size=length, is_nullable=nullable)

    @staticmethod
    def BYTES(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="BYTES", is_nullable=nullable)

    @staticmethod
    def DECIMAL(precision: int, scale: int, nullable: bool = True) -> DataType:
        return DecimalType(precision=precision, scale=scale, is_nullable=nullable)

    @staticmethod
    def TINYINT(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="TINYINT", is_nullable=nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="SMALLINT", is_nullable=nullable)

    @staticmethod
    def INT(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="INT", is_nullable=nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="BIGINT", is_nullable=nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="FLOAT", is_nullable=nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="DOUBLE", is_nullable=nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DataType:
        return AtomicType(sql_name="DATE", is_nullable=nullable)

    @staticmethod
    def TIME(precision: int = 0, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="TIME", size=precision, is_nullable=nullable)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="TIMESTAMP", size=precision, is_nullable=nullable)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:
        return AtomicType(sql_name="TIMESTAMP_LTZ", size=precision, is_nullable=nullable)

    TIMESTAMP_WITH_LOCAL_TIME_ZONE = TIMESTAMP_LTZ

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> DataType:
        _check_data_type(element_type, "ARRAY's element_type")
        return ArrayType(element_type=element_type, is_nullable=nullable)

    @staticmethod
    def MAP(key_type: DataType, value_type: DataType, nullable: bool = True) -> DataType:
        _check_data_type(key_type, "MAP's key_type")
        _check_data_type(value_type, "MAP's value_type")
        return MapType(key_type=key_type, value_type=value_type, is_nullable=nullable)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> RowField:
        return RowField(name, data_type, description)

    @staticmethod
    def ROW(row_fields: Any = (), nullable: bool = True) -> RowType:
        return RowType(fields=tuple(row_fields or ()), is_nullable=nullable)


def _check_data_type(value: Any, where: str) -> None:
    if not isinstance(value, DataType):
        raise TypeError(
            f"{where} must be a DataTypes type (e.g. DataTypes.INT()), got "
            f"{type(value).__name__} ({value!r})"
        )


def to_type_info(value: Any, where: str) -> TypeInformation:
    """``value`` as DataStream type information: a ``Types`` type as it is, a ``DataTypes`` type
    as the ``Types`` type it stands for; anything else is a ``TypeError`` naming ``where``."""
    if isinstance(value, TypeInformation):
        return value
    if isinstance(value, DataType):
        return value.to_type_info()
    raise TypeError(
        f"{where} must be a type, Types.INT() or DataTypes.INT() for instance, got "
        f"{type(value).__name__} ({value!r})"
    )
