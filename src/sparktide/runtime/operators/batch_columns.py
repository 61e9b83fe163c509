"""Records as the columns of an Arrow batch, and an Arrow batch back as records.

``DataStream.map_batches`` hands its function a stream's records as columns (those of
:func:`~sparktide.common.arrow_columns.stream_columns`: a named row's fields, a tuple's
``f0, f1, ...``, a single value's ``value``) and reads the function's columns back as records of
its output type. :class:`BatchColumns` does both for one declared type, built once per
operator. Every column must be flat (numbers, booleans, text, bytes, decimals, dates and
times): a nested field (a row, list or map inside the record) has no column of its own here.

>>> from sparktide.common.typeinfo import Types
>>> columns = BatchColumns.of(Types.ROW_NAMED(["id", "price"], [Types.LONG(), Types.DOUBLE()]))
>>> batch = columns.batch([Row(id=1, price=2.5), Row(id=2, price=None)], "map_batches")
>>> batch.to_pydict()
{'id': [1, 2], 'price': [2.5, None]}
>>> columns.records(batch, "map_batches")
[Row(id=1, price=2.5), Row(id=2, price=None)]
>>> import pyarrow as pa
>>> columns.records(pa.table({"id": [1.5], "price": [1.0]}), "map_batches")
Traceback (most recent call last):
...
TypeError: map_batches: column 'id' is double, expected int64 (the declared Long); ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import cast

import pyarrow as pa

from sparktide.common.arrow_columns import stream_columns
from sparktide.common.arrow_rows import BatchRows, RowChunk, python_column
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_basic import InstantTypeInfo, PickledBytesTypeInfo
from sparktide.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from sparktide.common.types import Row

__all__ = ["BatchColumns", "RecordShape"]

_TYPES = pa.types


class RecordShape(Enum):
    """What one row of the columns is as a record."""

    ROW = "row"  # a Row (named when the type names its fields)
    TUPLE = "tuple"
    VALUE = "value"  # the single column's value itself


def _numeric(t: pa.DataType) -> bool:
    return bool(_TYPES.is_integer(t) or _TYPES.is_floating(t))


def _text(t: pa.DataType) -> bool:
    return bool(_TYPES.is_string(t) or _TYPES.is_large_string(t))


def _bytes(t: pa.DataType) -> bool:
    return bool(_TYPES.is_binary(t) or _TYPES.is_large_binary(t))


# (what the declared type is, what a column may be to be cast to it without changing a value)
_KINDS: tuple[tuple[Callable[[pa.DataType], bool], Callable[[pa.DataType], bool]], ...] = (
    (_TYPES.is_integer, _TYPES.is_integer),
    (_TYPES.is_floating, _numeric),
    (_TYPES.is_boolean, _TYPES.is_boolean),
    (_text, _text),
    (_bytes, _bytes),
    (_TYPES.is_decimal, _TYPES.is_decimal),
    (_TYPES.is_timestamp, _TYPES.is_timestamp),
    (_TYPES.is_date, _TYPES.is_date),
    (_TYPES.is_time, _TYPES.is_time),
)


def _fits(found: pa.DataType, declared: pa.DataType) -> bool:
    """Whether a column of ``found`` casts to ``declared`` keeping its values (a wider or
    narrower integer, checked; an integer to a float; another unit of time; large text)."""
    if found == declared or _TYPES.is_null(found):
        return True
    return any(is_declared(declared) and fits(found) for is_declared, fits in _KINDS)


@dataclass(frozen=True)
class BatchColumns:
    """The flat columns of records of one declared type (:meth:`of`)."""

    type_info: TypeInformation
    names: tuple[str, ...]
    field_types: tuple[TypeInformation, ...]
    arrow_types: tuple[pa.DataType, ...]
    shape: RecordShape
    row_names: tuple[str, ...] | None  # a row's field names (``f0, ...`` when unnamed)

    @classmethod
    def of(cls, type_info: object, what: str = "the type") -> BatchColumns:
        """The columns of ``type_info``; ``TypeError`` (naming ``what``) when it has no flat
        columns (no declared type, pickled values, a nested field)."""
        if not isinstance(type_info, TypeInformation) or isinstance(
            type_info, PickledBytesTypeInfo
        ):
            raise TypeError(
                f"{what} must be a declared type with columns (e.g. Types.ROW_NAMED([...], "
                f"[...]) or Types.DOUBLE()), got {type_info!r}"
            )
        columns = stream_columns(type_info)
        arrow_types = []
        for name, t in columns:
            arrow = None
            if t is not None and not isinstance(t, (PickledBytesTypeInfo, InstantTypeInfo)):
                arrow = t.to_arrow_type()
            if arrow is None or _TYPES.is_nested(arrow) or _TYPES.is_dictionary(arrow):
                raise TypeError(
                    f"{what}: column {name!r} ({t}) is not flat; a batch column holds numbers, "
                    "booleans, text, bytes, decimals, dates or times (Types.INSTANT(): "
                    "declare Types.LOCAL_DATE_TIME() or a long of epoch milliseconds); declare "
                    "a nested value's fields as columns of their own"
                )
            arrow_types.append(arrow)
        shape = RecordShape.VALUE
        row_names = None
        if isinstance(type_info, RowTypeInfo):
            shape = RecordShape.ROW
            row_names = tuple(type_info.get_field_names())
        elif isinstance(type_info, TupleTypeInfo):
            shape = RecordShape.TUPLE
        return cls(
            type_info,
            tuple(name for name, _ in columns),
            tuple(t for _, t in columns),  # type: ignore[misc]
            tuple(arrow_types),
            shape,
            row_names,
        )

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(zip(self.names, self.arrow_types, strict=True)))

    # ------------------------------------------------------------------ records → columns

    def batch(self, values: Sequence[object], where: str) -> pa.RecordBatch:
        """``values`` (records of the type) as one Arrow batch of the columns."""
        fields: Sequence[Sequence[object]] = [values]
        if self.shape is not RecordShape.VALUE:
            records = cast("Sequence[Sequence[object]]", values)  # rows or tuples
            try:  # one pass over each record (rows read their fields one call at a time)
                fields = list(zip(*records, strict=True))
            except (TypeError, ValueError):
                fields = []
            if len(fields) != len(self.names):
                wrong = next((r for r in records if len(r) != len(self.names)), None)
                raise TypeError(
                    f"{where}: the records must have the {len(self.names)} fields "
                    f"{list(self.names)} of {self.type_info}, got {wrong!r}; fix the step that "
                    "produces them or its output_type"
                )
        arrays = []
        for name, t, arrow, raw in zip(
            self.names, self.field_types, self.arrow_types, fields, strict=True
        ):
            try:
                arrays.append(pa.array(raw, arrow))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                bad: object = next((v for v in raw if not _converts(v, arrow)), None)
                raise TypeError(
                    f"{where}: the input column {name!r} is declared {t} but holds "
                    f"{type(bad).__name__} {bad!r} ({exc}); fix the step that produces the "
                    "records or its output_type"
                ) from None
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def of_chunk(self, values: Sequence[object]) -> pa.RecordBatch | None:
        """The Arrow batch a chunk of records was made from, when it has exactly these columns
        (:class:`~sparktide.common.arrow_rows.RowChunk` or ``BatchRows``: the names, each
        column of its Arrow type or dictionary-encoded with values of it, then decoded); else
        ``None`` (:meth:`batch` builds it from the records)."""
        kind = type(values)
        if kind is not RowChunk and kind is not BatchRows:
            return None
        if values.names != self.names:  # type: ignore[attr-defined]
            return None
        arrays = values.arrays  # type: ignore[attr-defined]
        for i, (array, declared) in enumerate(zip(arrays, self.arrow_types, strict=True)):
            found = array.type
            if found == declared:
                continue
            if not _TYPES.is_dictionary(found) or found.value_type != declared:
                return None
            if arrays is values.arrays:  # type: ignore[attr-defined]
                arrays = list(arrays)
            arrays[i] = array.dictionary_decode()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    # ------------------------------------------------------------------ columns → records

    def records(self, data: pa.RecordBatch | pa.Table, where: str) -> list[object]:
        """The records of the columns of ``data`` (:meth:`checked`)."""
        return self.records_of(self.checked(data, where))

    def checked(self, data: pa.RecordBatch | pa.Table, where: str) -> pa.RecordBatch:
        """``data`` as a batch of exactly the declared columns, in order, of the declared Arrow
        types (a column of another type is cast when that keeps its values; ``TypeError``
        naming ``where``, the column and the types otherwise)."""
        present = list(data.schema.names)
        missing = [n for n in self.names if n not in present]
        extra = [n for n in present if n not in self.names]
        if missing or extra or len(set(present)) != len(present):
            raise TypeError(
                f"{where}: the function must return the columns {list(self.names)} of "
                f"output_type {self.type_info}, got {present} (missing {missing}, not declared "
                f"{extra}); select, rename or add columns to match"
            )
        arrays = [
            self._column(data.column(name), name, t, arrow, where)
            for name, t, arrow in zip(self.names, self.field_types, self.arrow_types, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def records_of(self, batch: pa.RecordBatch) -> list[object]:
        """The records of a batch of the declared columns (:meth:`checked`), as a
        :class:`~sparktide.common.arrow_rows.RowChunk` keeping the batch's columns."""
        arrays = batch.columns
        columns = [python_column(array) for array in arrays]
        rows: Iterable[object]
        if self.shape is RecordShape.VALUE:
            rows = columns[0]
        elif self.shape is RecordShape.TUPLE:
            rows = zip(*columns, strict=True)
        else:
            of_values, names = Row.of_values, self.row_names
            rows = [of_values(row, names) for row in zip(*columns, strict=True)]
        return RowChunk.of(rows, self.names, arrays, columns)

    @staticmethod
    def _column(
        column: pa.Array | pa.ChunkedArray,
        name: str,
        t: TypeInformation,
        declared: pa.DataType,
        where: str,
    ) -> pa.Array:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if _TYPES.is_dictionary(column.type):
            column = column.dictionary_decode()
        found = column.type
        if not _fits(found, declared):
            raise TypeError(
                f"{where}: column {name!r} is {found}, expected {declared} (the declared {t}); "
                "cast it in the function (e.g. pyarrow.compute.cast) or declare the field's "
                "type in output_type"
            )
        if found != declared:
            try:
                column = column.cast(declared, safe=True)
            except pa.ArrowException as exc:
                raise TypeError(
                    f"{where}: column {name!r} ({found}) does not fit {declared} "
                    f"(the declared {t}): {exc}"
                ) from None
        return column


def _converts(value: object, arrow: pa.DataType) -> bool:
    try:
        pa.array([value], arrow)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True
