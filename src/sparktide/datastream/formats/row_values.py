"""Field values of the file formats: which types a format supports, how text (CSV) and JSON
values become typed values, and how typed values are written as text.

Both runtimes read a file into *wire* values (strings for CSV, JSON values for JSON lines, Arrow
values for Parquet) and turn them into records with the same code (:class:`RowReader`), so the
records are the same whichever runtime read the file. Every value is checked against its
declared type: a value that does not fit is an error naming the file, the record, the field
and the value; nothing becomes null silently.

>>> from sparktide.common.typeinfo import Types
>>> reader = RowReader(Types.ROW_NAMED(["n", "when"], [Types.INT(), Types.LOCAL_DATE()]), "text")
>>> reader.row(["7", "2024-02-29"], "a.csv", 1)
Row(n=7, when=datetime.date(2024, 2, 29))
>>> reader.row(["seven", None], "a.csv", 2)
Traceback (most recent call last):
...
ValueError: a.csv, record 2: field 'n' is declared Types.INT() but holds 'seven', which is not \
an integer; fix the file or declare the field with a type that fits
>>> format_text(1e-05, "float"), format_text(True, "bool")
('1.0E-5', 'true')
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import BasicArrayTypeInfo, ListTypeInfo, RowTypeInfo
from sparktide.common.types import Row

__all__ = [
    "RowReader",
    "field_kinds",
    "format_text",
    "json_text",
    "spark_wire_type",
]

TIMESTAMP_PATTERN = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"  # Spark's pattern of format_text's timestamps
DATE_PATTERN = "yyyy-MM-dd"

_SCALAR_KINDS = {
    "Types.STRING()": "string",
    "Types.BOOLEAN()": "bool",
    "Types.BYTE()": "int",
    "Types.SHORT()": "int",
    "Types.INT()": "int",
    "Types.LONG()": "int",
    "Types.FLOAT()": "float32",
    "Types.DOUBLE()": "float",
    "Types.BIG_DEC()": "decimal",
    "Types.LOCAL_DATE()": "date",
    "Types.SQL_DATE()": "date",
    "Types.LOCAL_DATE_TIME()": "timestamp",
    "Types.SQL_TIMESTAMP()": "timestamp",
}
_SUPPORTED = (
    "Types.STRING, BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, BIG_DEC, LOCAL_DATE, "
    "SQL_DATE, LOCAL_DATE_TIME, SQL_TIMESTAMP, or a Types.LIST / Types.BASIC_ARRAY of them"
)
_DECIMAL_CONTEXT = decimal.Context(prec=38)
_DECIMAL_SCALE = decimal.Decimal(1).scaleb(-18)  # Types.BIG_DEC() is decimal(38, 18)
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_INF = float("inf")
_NON_NUMBERS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _kind(t: TypeInformation, where: str, allow_list: bool = True) -> str:
    kind = _SCALAR_KINDS.get(t._decl())
    if kind is not None:
        return kind
    if allow_list and isinstance(t, ListTypeInfo | BasicArrayTypeInfo):
        return "list:" + _kind(t.element_type, where, allow_list=False)
    raise ValueError(
        f"{where} is declared {t._decl()}, which file formats do not support; declare it as "
        f"{_SUPPORTED}"
    )


def field_kinds(row_type: RowTypeInfo, format_name: str) -> list[str]:
    """The kind of each field of ``row_type`` (``"int"``, ``"list:string"``, ...); an
    unsupported field type is a ``ValueError`` naming the field."""
    return [
        _kind(t, f"{format_name}: field {name!r}")
        for name, t in zip(row_type.get_field_names(), row_type.get_field_types(), strict=True)
    ]


def spark_wire_type(kind: str, t: TypeInformation, source: str) -> Any:
    """The Spark type a reader reads a field of ``kind`` as: ``source`` ``"text"`` (CSV: every
    field is a string) or ``"json"`` (native JSON types; dates and timestamps as strings, parsed
    by :class:`RowReader` as on the local runtime)."""
    from pyspark.sql import types as T

    if source == "text" or kind in ("string", "date", "timestamp"):
        return T.StringType()
    if kind.startswith("list:"):
        element = kind[5:]
        inner = Types.STRING() if element in ("date", "timestamp") else t._element_type  # type: ignore[attr-defined]
        return T.ArrayType(spark_wire_type(element, inner, source), containsNull=True)
    from sparktide.spark.frames import spark_schema_of

    return spark_schema_of(Types.ROW_NAMED(["x"], [t])).fields[0].dataType


# ------------------------------------------------------------------------------ parsing


class _Unfit(ValueError):
    """A value does not fit its kind; the message says what it is not."""


def _parse_timestamp(text: str) -> _dt.datetime:
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    value = _dt.datetime.fromisoformat(text)
    if value.tzinfo is not None:
        raise _Unfit("a timestamp without a time zone (declared types are zone-less)")
    return value


def _from_text(kind: str, text: str) -> Any:
    try:
        if kind == "string":
            return text
        if kind == "bool":
            lowered = text.strip().lower()
            if lowered in ("true", "false"):
                return lowered == "true"
            raise _Unfit("true or false")
        if kind == "int":
            if _INTEGER.fullmatch(text) is None:
                raise _Unfit("an integer")
            return int(text)
        if kind in ("float", "float32"):
            stripped = text.strip()
            if stripped in _NON_NUMBERS:
                return _NON_NUMBERS[stripped]
            if not stripped or stripped.lower().lstrip("+-") in ("inf", "infinity", "nan"):
                raise _Unfit("a number")
            return float(stripped)
        if kind == "decimal":
            value = decimal.Decimal(text.strip())
            if not value.is_finite():
                raise _Unfit("a finite decimal number")
            return value
        if kind == "date":
            return _dt.date.fromisoformat(text.strip())
        if kind == "timestamp":
            return _parse_timestamp(text)
    except (ValueError, ArithmeticError) as exc:
        if isinstance(exc, _Unfit):
            raise
        raise _Unfit(_WANTED[kind]) from None
    raise AssertionError(kind)  # pragma: no cover - kinds are checked when the format is built


_WANTED = {
    "int": "an integer",
    "float": "a number",
    "float32": "a number",
    "decimal": "a decimal number",
    "date": "a date (yyyy-MM-dd)",
    "timestamp": "a timestamp (yyyy-MM-ddTHH:mm:ss[.ffffff])",
}


def _java_json(value: Any) -> str:
    """JSON text of a parsed JSON value, numbers as Java writes them (Spark keeps a non-string
    JSON value of a string field as JSON text)."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        members = [f"{json.dumps(k, ensure_ascii=False)}:{_java_json(v)}" for k, v in value.items()]
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_java_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _from_json(kind: str, value: Any) -> Any:
    if kind == "string":
        return value if isinstance(value, str) else _java_json(value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise _Unfit("true or false")
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _Unfit("an integer")
    if kind in ("float", "float32"):
        if isinstance(value, str) and value in _NON_NUMBERS:
            return _NON_NUMBERS[value]
        if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            return float(value)
        raise _Unfit("a number")
    if kind == "decimal":
        if isinstance(value, int | decimal.Decimal) and not isinstance(value, bool):
            return decimal.Decimal(value)
        if isinstance(value, float):
            return decimal.Decimal(repr(value))
        if isinstance(value, str):
            return _from_text(kind, value)
        raise _Unfit("a decimal number")
    if isinstance(value, str):  # date, timestamp
        return _from_text(kind, value)
    raise _Unfit(_WANTED[kind] + " as a JSON string")


def _from_arrow(kind: str, value: Any) -> Any:
    return value


def _normalize(kind: str, value: Any) -> Any:
    """What the declared type holds: floats rounded to 32 bits, decimals at scale 18."""
    if kind == "float32":
        return struct.unpack("f", struct.pack("f", value))[0]
    if kind == "decimal":
        try:
            return _DECIMAL_CONTEXT.quantize(value, _DECIMAL_SCALE)
        except decimal.InvalidOperation:
            raise _Unfit("a decimal number that fits decimal(38, 18)") from None
    return value


_CONVERTERS: dict[str, Callable[[str, Any], Any]] = {
    "text": _from_text,
    "json": _from_json,
    "arrow": _from_arrow,
}


class RowReader:
    """Turns the wire values of one record into a ``Row`` of ``row_type``.

    ``source``: ``"text"`` (CSV strings; ``None`` is null), ``"json"`` (parsed JSON values) or
    ``"arrow"`` (values Arrow gives for the declared types). ``array_separators``: for text,
    the separator of each list field's elements.
    """

    def __init__(
        self,
        row_type: RowTypeInfo,
        source: str,
        array_separators: Sequence[str | None] | None = None,
        format_name: str = "file",
    ) -> None:
        self.row_type = row_type
        self.names = row_type.get_field_names()
        self.kinds = field_kinds(row_type, format_name)
        self._convert = _CONVERTERS[source]
        self._source = source
        self._separators = list(array_separators or [None] * len(self.kinds))

    def _value(self, i: int, wire: Any) -> Any:
        if wire is None:
            return None
        kind = self.kinds[i]
        if not kind.startswith("list:"):
            return _normalize(kind, self._convert(kind, wire))
        element = kind[5:]
        if self._source == "text":
            separator = self._separators[i] or ";"
            wire = [] if wire == "" else wire.split(separator)
        elif not isinstance(wire, list | tuple):
            raise _Unfit("an array")
        return [None if w is None else _normalize(element, self._convert(element, w)) for w in wire]

    def row(self, values: Sequence[Any], path: str, record: int) -> Row:
        """The ``Row`` of the wire ``values`` of record number ``record`` (from 1) of ``path``."""
        if len(values) != len(self.kinds):
            raise ValueError(
                f"{path}, record {record}: {len(values)} fields, but the schema declares "
                f"{len(self.kinds)} ({self.names}); fix the file or the schema"
            )
        out = []
        for i, wire in enumerate(values):
            try:
                out.append(self._value(i, wire))
            except _Unfit as exc:
                t = self.row_type.get_field_types()[i]
                raise ValueError(
                    f"{path}, record {record}: field {self.names[i]!r} is declared {t._decl()} "
                    f"but holds {wire!r}, which is not {exc}; fix the file or declare the field "
                    "with a type that fits"
                ) from None
        try:
            return self.row_type.coerce(Row.of_values(out, self.names), "record")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}, record {record}: {exc}") from None


# ------------------------------------------------------------------------------ writing


def format_text(value: Any, kind: str) -> str:
    """The text of a (non-null, scalar) value of ``kind``, as Spark's CSV writer writes it."""
    if kind == "string":
        return value  # type: ignore[no-any-return]
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        return Types.DOUBLE().java_string(value)
    if kind == "float32":
        return Types.FLOAT().java_string(value)
    if kind == "decimal":
        return str(value)
    if kind == "timestamp":
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")  # type: ignore[no-any-return]
    if kind == "date":
        return value.isoformat()  # type: ignore[no-any-return]
    return str(value)


def json_text(value: Any, kind: str) -> str:
    """The JSON text of a (non-null) value of ``kind``, as Spark's JSON writer writes it."""
    if kind.startswith("list:"):
        element = kind[5:]
        return "[" + ",".join("null" if v is None else json_text(v, element) for v in value) + "]"
    if kind in ("float", "float32") and (value != value or value in (_INF, -_INF)):
        return json.dumps(format_text(value, kind))  # Jackson quotes non-numeric numbers
    if kind in ("string", "date", "timestamp"):
        return json.dumps(format_text(value, kind), ensure_ascii=False)
    return format_text(value, kind)
