"""The contracts between the file connectors and the typed file formats of
:mod:`sparktide.datastream.formats` (Parquet, CSV, JSON lines).

A *typed reader format* (:class:`FrameFormat`) reads files of rows of a declared row type
(``Types.ROW_NAMED``): with pyarrow or Python on the local runtime, with Spark's readers on Spark,
where each file is a DataFrame of *wire* columns (what Spark's reader gives) that the format turns
into the same records as the local reader.

A *bulk writer factory* (:class:`BulkWriterFactory`, PyFlink's name) writes rows of its row type
into part files: through a :class:`BulkWriter` (pyarrow or Python) on the local runtime, and with
Spark's writers (``df.write``) on Spark.

Records are matched to the row type by :func:`coerce_record`: a named ``Row`` with the row
type's field names by name, anything else (a tuple, a list, an unnamed row, a row named
otherwise) by position; a value that does not fit its field is an error naming the field:

>>> from sparktide.common.typeinfo import Types
>>> from sparktide.common.types import Row
>>> row_type = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
>>> coerce_record(Row(n=1, word="a"), row_type), coerce_record(("b", 2), row_type)
(Row(word='a', n=1), Row(word='b', n=2))
>>> coerce_record(("c", "3"), row_type)
Traceback (most recent call last):
...
TypeError: record.n: Types.INT() holds an int, got str '3'; pass an int
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.common.types import Row, row_field_names
from sparktide.table.types import RowType

__all__ = [
    "BulkWriter",
    "BulkWriterFactory",
    "FrameFormat",
    "RowDataBulkWriterFactory",
    "check_row_type",
    "coerce_record",
]


def check_row_type(row_type: Any, name: str = "row_type") -> RowTypeInfo:
    """``row_type`` if it is a row type with field names (``Types.ROW_NAMED``, or PyFlink's
    ``DataTypes.ROW`` of :mod:`sparktide.table`, as ``Types``), else a clear error."""
    if isinstance(row_type, RowType):
        row_type = row_type.to_type_info()
    if not isinstance(row_type, RowTypeInfo):
        raise TypeError(
            f"{name} must be a row type, got {type(row_type).__name__} ({row_type!r}); declare "
            "it as Types.ROW_NAMED(['id', 'name'], [Types.INT(), Types.STRING()]) or "
            "DataTypes.ROW([DataTypes.FIELD('id', DataTypes.INT()), ...]) (sparktide.table)"
        )
    return row_type


def coerce_record(value: Any, row_type: RowTypeInfo) -> Row:
    """``value`` as a ``Row`` of ``row_type`` (see the module docstring)."""
    fields = row_field_names(value) if isinstance(value, Row) else None
    if fields is not None and set(fields) != set(row_type.get_field_names()):
        value = tuple(value)
    return row_type.coerce(value, "record")


def numbered_rows(
    row: Callable[[list[Any], str, int], Row], batches: Iterable[Any], path: str
) -> Iterator[Row]:
    """``row(values, path, n)`` for the n-th record (from 1) of Arrow batches of ``path``
    (``row`` checks and converts the values, naming the file and record in its errors)."""
    from sparktide.spark.frames import records_of_batch

    n = 0
    for batch in batches:
        for record in records_of_batch(batch):
            n += 1
            yield row(list(record), path, n)


class FrameFormat(ABC):
    """A reader format of rows of a declared row type (the internal contract of typed formats).

    Subclasses set ``row_type`` and implement :meth:`read_local`, :meth:`spark_frame` and
    :meth:`records_of_batches`; :meth:`check_file` may validate a file before it is read (it
    runs where the file is read, on the driver before Spark reads it).
    """

    row_type: RowTypeInfo

    def get_produced_type(self) -> TypeInformation:
        """The type of the records: the row type."""
        return self.row_type

    def check_file(self, path: str) -> None:  # noqa: B027 - optional hook
        """Raise a clear error if the file ``path`` cannot hold rows of the row type."""

    @abstractmethod
    def read_local(self, path: str) -> Iterator[Row]:
        """The rows of the file ``path``, in file order (local runtime: pyarrow or Python)."""

    @abstractmethod
    def spark_frame(self, spark: Any, path: str) -> Any:
        """A Spark DataFrame of the file ``path`` (wire columns, see :meth:`records_of_batches`),
        read with Spark's reader."""

    @abstractmethod
    def records_of_batches(self, batches: Iterable[Any], path: str) -> Iterator[Row]:
        """The rows of Arrow batches of :meth:`spark_frame`'s columns (Spark's workers), the
        same as :meth:`read_local` gives for the file."""


class BulkWriter(ABC):
    """Writes batches of rows into one open part file (Flink's ``BulkWriter``)."""

    @abstractmethod
    def add_batch(self, batch: Any) -> None:
        """Write a ``pyarrow.RecordBatch`` of the row type's columns."""

    @abstractmethod
    def finish(self) -> None:
        """Write what is buffered and any footer (the stream is closed by the caller)."""


class BulkWriterFactory(ABC):
    """Creates the writers of a bulk-format ``FileSink`` (PyFlink's ``BulkWriterFactory``)."""

    @abstractmethod
    def create(self, stream: BinaryIO) -> BulkWriter:
        """A writer of a new part file that writes into ``stream`` (local runtime)."""

    @abstractmethod
    def write_spark(self, df: Any, directory: str) -> None:
        """Write ``df`` (columns of the row type) into ``directory`` with Spark's writer, adding
        files (``mode("append")``) without touching what is there."""

    def spark_part_is_empty(self, spark: Any, path: str, size: int) -> bool:
        """Whether the file ``path`` (``size`` bytes) that Spark's writer wrote holds no rows
        (Spark writes one file for an empty first partition; Flink writes none)."""
        return size == 0


class RowDataBulkWriterFactory(BulkWriterFactory):
    """A bulk writer factory of rows of a declared row type (PyFlink's
    ``RowDataBulkWriterFactory``): records are matched to it by :func:`coerce_record`."""

    def __init__(self, row_type: RowTypeInfo | RowType) -> None:
        self._row_type = check_row_type(row_type)

    def get_row_type(self) -> RowTypeInfo:
        """The row type of the records this factory writes."""
        return self._row_type
