"""PyFlink's ``pyflink.table`` names that the DataStream API uses: the ``DataTypes`` constants
the file formats take (:mod:`sparktide.table.types`). sparktide has no Table API."""

from sparktide.table.types import DataType, DataTypes

__all__ = ["DataType", "DataTypes"]
