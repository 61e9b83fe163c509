"""File formats of the file connectors, with PyFlink's module names
(``pyflink.datastream.formats``): :mod:`.parquet` (``ParquetColumnarRowInputFormat``,
``ParquetBulkWriters``), :mod:`.csv` (``CsvSchema``, ``CsvReaderFormat``, ``CsvBulkWriters``) and
:mod:`.json` (``JsonLinesFormat``, ``JsonLinesBulkWriters``: sparktide's own JSON lines file
format; PyFlink has none).

Row types are ``Types.ROW_NAMED`` or, as in PyFlink, ``DataTypes.ROW`` (:mod:`sparktide.table`,
whose ``DataTypes`` stand for the ``Types`` listed there). Field types:
``Types.STRING, BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, BIG_DEC, LOCAL_DATE, SQL_DATE,
LOCAL_DATE_TIME, SQL_TIMESTAMP`` and lists of them.

>>> from sparktide.common.typeinfo import Types
>>> from sparktide.datastream.formats.parquet import ParquetBulkWriters
>>> ParquetBulkWriters.for_row_type(Types.ROW_NAMED(["id"], [Types.INT()]))
ParquetBulkWriters.for_row_type(Types.ROW_NAMED(['id'], [Types.INT()]))
"""
