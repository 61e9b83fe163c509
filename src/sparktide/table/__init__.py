"""PyFlink's ``pyflink.table`` names that the DataStream API uses: the ``DataTypes`` constants
the file formats take (:mod:`sparktide.table.types`), and ``Row`` / ``RowKind`` (those of
:mod:`sparktide.common`, as PyFlink re-exports them here).

sparktide has no Table API: its other names (``StreamTableEnvironment``, ``Table``, the
user-defined function classes ...) raise
:class:`~sparktide.common.not_provided.NotProvidedError`, saying what to use instead (Spark SQL,
with rows in and out through ``env.from_dataframe`` and ``DataStream.to_dataframe``).

>>> from sparktide.table import TableEnvironment  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparktide.common.not_provided.NotProvidedError: sparktide.table.TableEnvironment is not \
provided: PyFlink's Table API (pyflink.table), which sparktide does not have. Instead: run the \
SQL in Spark ...
"""

from sparktide.common.not_provided import module_getattr
from sparktide.common.row_kind import RowKind
from sparktide.common.types import Row
from sparktide.table.types import DataType, DataTypes

# PyFlink's names sparktide does not provide: an error that says so and what to use
__getattr__ = module_getattr(__name__)

__all__ = ["DataType", "DataTypes", "Row", "RowKind"]
