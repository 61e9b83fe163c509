"""The columns and the dialect of CSV files: :class:`CsvSchema` and its builder (PyFlink's
``CsvSchema`` and ``CsvSchemaBuilder``, re-exported by :mod:`sparktide.datastream.formats.csv`).

>>> from sparktide.common.typeinfo import Types
>>> CsvSchema.builder().add_string_column("a").add_number_column("n", Types.INT()).build()
CsvSchema([a: Types.STRING(), n: Types.INT()], separator=',')

PyFlink's ``DataTypes`` (from :mod:`sparktide.table`) are accepted where PyFlink takes them:

>>> from sparktide.table import DataTypes
>>> CsvSchema.builder().add_number_column("n", number_type=DataTypes.INT()).add_array_column(
...     "tags", ",", element_type=DataTypes.STRING()).build()
CsvSchema([n: Types.INT(), tags: Types.LIST(Types.STRING())], separator=',')
"""

from __future__ import annotations

from typing import Any

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.datastream.formats.csv_text import CsvDialect
from sparktide.datastream.formats.row_values import field_kinds
from sparktide.table.types import DataType, to_type_info

__all__ = ["CsvSchema", "CsvSchemaBuilder"]

_NUMBER_TYPES = ("BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "BIG_DEC")


def _char(value: Any, name: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"{name} must be a single char, got {value!r}; e.g. ','")
    if value in "\r\n":
        raise ValueError(f"{name} must not be a line break, got {value!r}")
    return value


class CsvSchema:
    """The columns and the dialect of CSV files (PyFlink's ``CsvSchema``); build it with
    :meth:`builder`."""

    def __init__(
        self,
        columns: list[tuple[str, TypeInformation, str | None]],
        dialect: CsvDialect,
        use_header: bool,
        skip_first_data_row: bool,
        strict_headers: bool,
    ) -> None:
        self.columns = list(columns)
        self.dialect = dialect
        self.use_header = use_header
        self.skip_first_data_row = skip_first_data_row
        self.strict_headers = strict_headers
        self.names = [name for name, _, _ in columns]
        self._row_type = Types.ROW_NAMED(self.names, [t for _, t, _ in columns])
        self.kinds = field_kinds(self._row_type, "CsvSchema")

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        """A :class:`CsvSchemaBuilder`."""
        return CsvSchemaBuilder()

    def get_row_type(self) -> RowTypeInfo:
        """The type of the records (``Types.ROW_NAMED`` of the columns)."""
        return self._row_type

    def array_separators(self) -> list[str | None]:
        return [sep for _, _, sep in self.columns]

    def size(self) -> int:
        return len(self.columns)

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {t._decl()}" for n, t, _ in self.columns)
        return f"CsvSchema([{cols}], separator={self.dialect.separator!r})"


class CsvSchemaBuilder:
    """Builds a :class:`CsvSchema` (PyFlink's ``CsvSchemaBuilder``; defaults as Jackson's: ``,``
    separates columns, ``"`` quotes, no escape character, the empty string is null, ``;``
    separates array elements, ``\\n`` ends lines, no header)."""

    def __init__(self) -> None:
        self._columns: list[tuple[str, TypeInformation, str | None]] = []
        self._separator = ","
        self._quote: str | None = '"'
        self._escape: str | None = None
        self._null_value = ""
        self._line_separator = "\n"
        self._array_separator: str | None = ";"
        self._allow_comments = False
        self._use_header = False
        self._skip_first_data_row = False
        self._strict_headers = False

    def build(self) -> CsvSchema:
        """The schema."""
        if not self._columns:
            raise ValueError("a CsvSchema needs at least one column; add one with add_*_column")
        names = [n for n, _, _ in self._columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"CsvSchema column names must be unique, {dupes} repeat; rename them")
        dialect = CsvDialect(
            self._separator,
            self._quote,
            self._escape,
            self._null_value,
            self._line_separator,
            self._allow_comments,
        )
        columns = [
            (n, t, (sep if sep is not None else self._array_separator) if sep != "" else None)
            for n, t, sep in self._columns
        ]
        return CsvSchema(
            columns, dialect, self._use_header, self._skip_first_data_row, self._strict_headers
        )

    def _add(self, name: str, type_info: TypeInformation, separator: str | None = None) -> Any:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        self._columns.append((name, type_info, separator))
        return self

    def add_array_column(
        self,
        name: str,
        separator: str = ";",
        element_type: TypeInformation | DataType | None = None,
    ) -> CsvSchemaBuilder:
        """An array column (``Types.LIST(element_type)``, default elements ``Types.STRING()``),
        its elements separated by ``separator``. ``element_type`` is a ``Types`` or, as in
        PyFlink, a ``DataTypes`` type (:mod:`sparktide.table`)."""
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"separator must be a non-empty str, got {separator!r}; e.g. ';'")
        element = (
            Types.STRING()
            if element_type is None
            else to_type_info(element_type, f"element_type of column {name!r}")
        )
        return self._add(name, Types.LIST(element), separator)  # type: ignore[no-any-return]

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        """A ``Types.BOOLEAN()`` column (``true`` / ``false``)."""
        return self._add(name, Types.BOOLEAN())  # type: ignore[no-any-return]

    def add_number_column(
        self, name: str, number_type: TypeInformation | DataType | None = None
    ) -> CsvSchemaBuilder:
        """A number column of ``number_type`` (default ``Types.LONG()``, PyFlink's BIGINT):
        ``Types.BYTE/SHORT/INT/LONG/FLOAT/DOUBLE/BIG_DEC()`` or, as in PyFlink,
        ``DataTypes.TINYINT/SMALLINT/INT/BIGINT/FLOAT/DOUBLE/DECIMAL()``."""
        number_type = (
            Types.LONG()
            if number_type is None
            else to_type_info(number_type, f"number_type of column {name!r}")
        )
        if number_type._decl() not in {f"Types.{n}()" for n in _NUMBER_TYPES}:
            raise ValueError(
                f"number_type of column {name!r} must be a number type, got {number_type!r}; "
                "use Types.INT(), Types.LONG(), Types.DOUBLE(), Types.BIG_DEC(), ..."
            )
        return self._add(name, number_type)  # type: ignore[no-any-return]

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        """A ``Types.STRING()`` column."""
        return self._add(name, Types.STRING())  # type: ignore[no-any-return]

    def add_column(self, name: str, type_info: TypeInformation | DataType) -> CsvSchemaBuilder:
        """A column of any type a file format supports, e.g. ``Types.LOCAL_DATE()`` or
        ``Types.LOCAL_DATE_TIME()`` (or ``DataTypes.DATE()``; sparktide's addition)."""
        type_info = to_type_info(type_info, f"the type of column {name!r}")
        field_kinds(Types.ROW_NAMED([name], [type_info]), "CsvSchema")
        return self._add(name, type_info)  # type: ignore[no-any-return]

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        """The columns of ``schema``, after the ones added so far."""
        self._columns.extend(schema.columns)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        """No columns."""
        self._columns.clear()
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Skip lines starting with ``#``."""
        self._allow_comments = bool(allow)
        return self

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        """Not supported: every column must be declared."""
        raise ValueError("set_any_property_name is not supported: declare every column of the file")

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """No array element separator by default (array columns added without one keep theirs)."""
        self._array_separator = None
        return self

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        """Column ``index`` has no element separator (its whole text is one element)."""
        name, t, _ = self._columns[index]
        self._columns[index] = (name, t, "")
        return self

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """The default separator of array elements (``;``)."""
        self._array_separator = separator
        return self

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        """The column separator, a single char (default ``,``)."""
        self._separator = _char(char, "column separator")
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        self._escape = None
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        """The escape char inside quoted fields, a single char (default: none)."""
        self._escape = _char(char, "escape char")
        return self

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """The line separator for writing, ``\\n`` (the default) or ``\\r`` (Spark's CSV writer
        takes one char); reading accepts ``\\n``, ``\\r`` and ``\\r\\n``."""
        if separator not in ("\n", "\r"):
            raise ValueError(
                f"separator must be '\\n' or '\\r' (Spark's CSV writer takes a single char), got "
                f"{separator!r}"
            )
        self._line_separator = separator
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """The text of null (default: the empty string)."""
        if not isinstance(null_value, str):
            raise TypeError(f"null_value must be a str, got {type(null_value).__name__}")
        self._null_value = null_value
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        self._quote = None
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        """The quote char, a single char (default ``"``)."""
        self._quote = _char(char, "quote char")
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Skip the first line of every file."""
        self._skip_first_data_row = bool(skip)
        return self

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """With a header: the header must name the columns, in order."""
        self._strict_headers = bool(strict)
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """Files start with a header line (skipped when reading, written when writing)."""
        self._use_header = bool(use)
        return self

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()
