"""JSON and CSV row (de)serialization schemas (PyFlink's ``JsonRowSerializationSchema``,
``JsonRowDeserializationSchema``, ``CsvRowSerializationSchema``, ``CsvRowDeserializationSchema``):
one ``Row`` of a ``Types.ROW_NAMED`` to and from the bytes of one message, e.g. for
``KafkaSource`` / ``KafkaSink``.

Field values are read and written as the JSON and CSV file formats of
:mod:`sparktide.datastream.formats` do (dates and timestamps as ISO-8601 text); a null field is
``null`` in JSON and the null literal (default empty) in CSV.

>>> from sparktide.common import Row, Types
>>> row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
>>> to_json = JsonRowSerializationSchema.builder().with_type_info(row_type).build()
>>> to_json.serialize(Row(id=1, name=None))
b'{"id":1,"name":null}'
>>> JsonRowDeserializationSchema.builder().type_info(row_type).build().deserialize(
...     b'{"name": "x", "id": 2, "more": true}')
Row(id=2, name='x')
>>> to_csv = CsvRowSerializationSchema.Builder(row_type).set_field_delimiter(";").build()
>>> to_csv.serialize(Row(id=3, name='a;b'))
b'3;"a;b"\\n'
>>> CsvRowDeserializationSchema.Builder(row_type).build().deserialize(b'4,"q"\\n')
Row(id=4, name='q')
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sparktide.common.serialization import DeserializationSchema, SerializationSchema
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.datastream.formats.csv_text import CsvDialect
from sparktide.datastream.formats.row_values import RowReader, field_kinds, format_text, json_text

__all__ = [
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
]


def _row_type(type_info: object, where: str) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(
            f"{where} needs a row type: Types.ROW_NAMED([names], [types]), got "
            f"{type(type_info).__name__} ({type_info!r})"
        )
    return type_info


def _field(row: Any, index: int, name: str) -> Any:
    try:
        return row[index]
    except (IndexError, TypeError):
        raise ValueError(f"the record {row!r} has no field {index} ({name!r})") from None


def _char(value: object, name: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"{name} must be one character, got {value!r}")
    return value


# ---------------------------------------------------------------------- JSON


class JsonRowSerializationSchema(SerializationSchema):
    """A row -> one JSON object (every field, nulls as ``null``)."""

    def __init__(self, row_type: RowTypeInfo) -> None:
        super().__init__()
        self.row_type = row_type
        self._names = row_type.get_field_names()
        self._keys = [json.dumps(n, ensure_ascii=False) + ":" for n in self._names]
        self._kinds = field_kinds(row_type, "JsonRowSerializationSchema")

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    def serialize(self, value: Any) -> bytes:
        members = []
        for i, (key, kind) in enumerate(zip(self._keys, self._kinds, strict=True)):
            field = _field(value, i, self._names[i])
            members.append(key + ("null" if field is None else json_text(field, kind)))
        return ("{" + ",".join(members) + "}").encode("utf-8")

    class Builder:
        def __init__(self) -> None:
            self._type: TypeInformation | None = None

        def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchema.Builder:
            self._type = type_info
            return self

        def build(self) -> JsonRowSerializationSchema:
            return JsonRowSerializationSchema(_row_type(self._type, "JsonRowSerializationSchema"))


class JsonRowDeserializationSchema(DeserializationSchema):
    """One JSON object -> a row: members matched to fields by name (members without a field
    are ignored; a missing member is null, or an error with ``fail_on_missing_field()``).
    With ``ignore_parse_errors()`` a message that does not parse gives ``None``."""

    def __init__(
        self, row_type: RowTypeInfo, fail_on_missing_field: bool, ignore_parse_errors: bool
    ) -> None:
        super().__init__()
        self.row_type = row_type
        self._reader = RowReader(row_type, "json", format_name="JsonRowDeserializationSchema")
        self._names = row_type.get_field_names()
        self._fail_on_missing = fail_on_missing_field
        self._ignore_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    def get_produced_type(self) -> TypeInformation:
        return self.row_type

    def deserialize(self, message: bytes) -> Any:
        try:
            members = json.loads(bytes(message).decode("utf-8"))
            if not isinstance(members, dict):
                raise ValueError(f"a JSON object is needed, got {members!r}")
            missing = [n for n in self._names if n not in members]
            if missing and self._fail_on_missing:
                raise ValueError(f"the message has no member {missing[0]!r}")
            return self._reader.row([members.get(n) for n in self._names], "message", 1)
        except ValueError as exc:
            if self._ignore_errors:
                return None
            raise ValueError(
                f"JsonRowDeserializationSchema: {exc}; fix the message or build the schema "
                "with ignore_parse_errors()"
            ) from None

    class Builder:
        def __init__(self) -> None:
            self._type: TypeInformation | None = None
            self._fail = False
            self._ignore = False

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            self._type = type_info
            return self

        def json_schema(self, json_schema: str) -> JsonRowDeserializationSchema.Builder:
            raise NotImplementedError(
                "json_schema(...) is not supported: declare the row with type_info("
                "Types.ROW_NAMED([names], [types])) instead"
            )

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            self._fail = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            self._ignore = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            row_type = _row_type(self._type, "JsonRowDeserializationSchema")
            return JsonRowDeserializationSchema(row_type, self._fail, self._ignore)


# ---------------------------------------------------------------------- CSV


class CsvRowSerializationSchema(SerializationSchema):
    """A row -> one CSV line (with the line delimiter, ``"\\n"`` by default)."""

    def __init__(self, row_type: RowTypeInfo, dialect: CsvDialect, array_separator: str) -> None:
        super().__init__()
        self.row_type = row_type
        self.dialect = dialect
        self._names = row_type.get_field_names()
        self._kinds = field_kinds(row_type, "CsvRowSerializationSchema")
        self._array_separator = array_separator

    def serialize(self, value: Any) -> bytes:
        fields: list[str | None] = []
        for i, kind in enumerate(self._kinds):
            field = _field(value, i, self._names[i])
            if field is None:
                fields.append(self.dialect.null_value or None)
            elif kind.startswith("list:"):
                texts = [format_text(v, kind[5:]) for v in field if v is not None]
                fields.append(self._array_separator.join(texts))
            else:
                fields.append(format_text(field, kind))
        return self.dialect.line(fields).encode("utf-8")

    class Builder:
        def __init__(self, type_info: TypeInformation) -> None:
            self._type = _row_type(type_info, "CsvRowSerializationSchema")
            self._dialect = CsvDialect()
            self._array = ";"

        def set_field_delimiter(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._dialect = replace(self._dialect, separator=_char(c, "field delimiter"))
            return self

        def set_line_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            if delimiter not in ("\n", "\r", "\r\n", ""):
                raise ValueError(
                    f"line delimiter must be '\\n', '\\r', '\\r\\n' or '', got {delimiter!r}"
                )
            self._dialect = replace(self._dialect, line_separator=delimiter)
            return self

        def set_array_element_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            self._array = delimiter
            return self

        def disable_quote_character(self) -> CsvRowSerializationSchema.Builder:
            self._dialect = replace(self._dialect, quote=None)
            return self

        def set_quote_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._dialect = replace(self._dialect, quote=_char(c, "quote character"))
            return self

        def set_escape_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._dialect = replace(self._dialect, escape=_char(c, "escape character"))
            return self

        def set_null_literal(self, s: str) -> CsvRowSerializationSchema.Builder:
            self._dialect = replace(self._dialect, null_value=s)
            return self

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._type, self._dialect, self._array)


class CsvRowDeserializationSchema(DeserializationSchema):
    """One CSV line -> a row. With ``set_ignore_parse_errors(True)`` a message that does not
    parse gives ``None``."""

    def __init__(
        self, row_type: RowTypeInfo, dialect: CsvDialect, array_separator: str, ignore: bool
    ) -> None:
        super().__init__()
        self.row_type = row_type
        self.dialect = dialect
        separators = [array_separator] * len(row_type.get_field_names())
        self._reader = RowReader(row_type, "text", separators, "CsvRowDeserializationSchema")
        self._ignore = ignore

    def get_produced_type(self) -> TypeInformation:
        return self.row_type

    def deserialize(self, message: bytes) -> Any:
        try:
            records = list(self.dialect.records(bytes(message).decode("utf-8")))
            if len(records) != 1:
                raise ValueError(f"one CSV record is needed, got {len(records)}")
            return self._reader.row(records[0], "message", 1)
        except ValueError as exc:
            if self._ignore:
                return None
            raise ValueError(
                f"CsvRowDeserializationSchema: {exc}; fix the message or set "
                "set_ignore_parse_errors(True)"
            ) from None

    class Builder:
        def __init__(self, type_info: TypeInformation) -> None:
            self._type = _row_type(type_info, "CsvRowDeserializationSchema")
            self._dialect = CsvDialect()
            self._array = ";"
            self._ignore = False

        def set_field_delimiter(self, delimiter: str) -> CsvRowDeserializationSchema.Builder:
            self._dialect = replace(self._dialect, separator=_char(delimiter, "field delimiter"))
            return self

        def set_allow_comments(self, allow_comments: bool) -> CsvRowDeserializationSchema.Builder:
            self._dialect = replace(self._dialect, allow_comments=bool(allow_comments))
            return self

        def set_array_element_delimiter(
            self, delimiter: str
        ) -> CsvRowDeserializationSchema.Builder:
            self._array = delimiter
            return self

        def set_quote_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._dialect = replace(self._dialect, quote=_char(c, "quote character"))
            return self

        def set_escape_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._dialect = replace(self._dialect, escape=_char(c, "escape character"))
            return self

        def set_null_literal(self, null_literal: str) -> CsvRowDeserializationSchema.Builder:
            self._dialect = replace(self._dialect, null_value=null_literal)
            return self

        def set_ignore_parse_errors(
            self, ignore_parse_errors: bool
        ) -> CsvRowDeserializationSchema.Builder:
            self._ignore = bool(ignore_parse_errors)
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._type, self._dialect, self._array, self._ignore)
