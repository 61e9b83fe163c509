"""Parquet written on the driver as Spark writes it, for records already on the driver.

A one-pass micro-batch (:mod:`sparktide.spark.stream_batch`) brings its sinks' records to the
driver as Arrow. A :class:`~sparktide.spark.stream_sinks.ParquetBatchSink` then writes them
into ``<path>/batch=<id>/`` from there, instead of handing Spark a DataFrame made of them to
write in a Spark job of its own. Spark reads the files back as it reads its own: the values
are those ``createDataFrame`` would make of the table (timestamps localized in the session's
time zone, then microseconds in UTC), the footer holds the Spark schema under Spark's key, the
compression is the session's ``spark.sql.parquet.compression.codec``, and the folder holds one
``part-...`` file and ``_SUCCESS``, replaced as a whole when the batch is written again.
Timestamps are stored as Spark stores them with ``spark.sql.parquet.outputTimestampType`` set
to ``TIMESTAMP_MICROS`` (64-bit microseconds; Spark's default is the older 96-bit form, which
Spark reads back the same).

The driver writes only where it sees the files Spark would write (:meth:`DriverParquet.of`): a
classic session on a ``local``/``local[...]``/``local-cluster[...]`` master and a path on the
local file system. Elsewhere (Spark Connect, a cluster, an ``s3a://`` path, a codec the
driver's Arrow has not) Spark writes them, as before.

>>> local_directory("/tmp/out"), local_directory("file:///tmp/out")
(PosixPath('/tmp/out'), PosixPath('/tmp/out'))
>>> local_directory("s3a://bucket/out"), local_directory("out")
(None, None)
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["SPARK_ROW_METADATA", "DriverParquet", "local_directory"]

SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"
"""The footer key under which Spark keeps a Parquet file's Spark schema (as JSON)."""

_CODECS = {
    "snappy": "snappy",
    "gzip": "gzip",
    "zstd": "zstd",
    "none": "none",
    "uncompressed": "none",
}
"""Spark's Parquet codecs that Arrow writes the same way, by Spark's name."""


def local_directory(path: str) -> Path | None:
    """The local directory ``path`` names (an absolute path or a ``file:`` URI); ``None`` for a
    path of another file system, or a relative one (Spark resolves it in its own working
    directory)."""
    parsed = urlparse(path)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(parsed.path)
    if parsed.scheme == "" and os.path.isabs(path):
        return Path(path)
    return None


@dataclass(frozen=True)
class DriverParquet:
    """How the driver writes Parquet for a session: Arrow's codec of the session's Parquet
    codec, and the session's time zone (naive timestamps of a ``TimestampType`` field are
    wall-clock times there, as for ``createDataFrame``)."""

    compression: str
    timezone: str

    @classmethod
    def of(cls, spark: SparkSession, schema: StructType) -> DriverParquet | None:
        """How the driver writes frames of ``schema`` for ``spark``; ``None`` when Spark must
        write them (a Spark Connect session, a master whose executors may not share the
        driver's disk, a codec Arrow has not, ``spark.sql.parquet.writeLegacyFormat`` on, a
        type Arrow and Spark do not hold alike, such as ``TIME``, which Spark's writer
        refuses)."""
        from sparktide.spark.session import is_connect

        if is_connect(spark) or not str(spark.sparkContext.master).startswith("local"):
            return None
        if not _alike(schema):
            return None
        conf = spark.conf
        if str(conf.get("spark.sql.parquet.writeLegacyFormat")).lower() == "true":
            return None  # Hive's and Impala's layout of decimals and lists: Spark's writer's
        codec = _CODECS.get(str(conf.get("spark.sql.parquet.compression.codec")).lower())
        if codec is None:
            return None
        return cls(codec, str(conf.get("spark.sql.session.timeZone")))

    def write(self, table: pa.Table, schema: StructType, target: Path) -> None:
        """Replace folder ``target`` by one holding ``table``'s rows as the frame of ``schema``
        (the Spark schema ``createDataFrame(table, schema)`` would have): a ``part-...``
        file and ``_SUCCESS``. The files are written in a hidden folder beside it (Spark's
        readers skip names starting with ``.``), which then takes its place."""
        import pyarrow.parquet as pq

        staging = target.parent / f".{target.name}.{uuid.uuid4().hex}"
        staging.mkdir(parents=True)
        try:
            data = self._as_spark_makes_it(table, schema)
            data = data.replace_schema_metadata({SPARK_ROW_METADATA: schema.json()})
            name = f"part-00000-{uuid.uuid4()}-c000{_suffix(self.compression)}.parquet"
            pq.write_table(data, staging / name, compression=self.compression)
            (staging / "_SUCCESS").touch()
            for leftover in target.parent.glob(f".{target.name}.*"):
                if leftover != staging:  # of a write that did not finish
                    shutil.rmtree(leftover, ignore_errors=True)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _as_spark_makes_it(self, table: pa.Table, schema: StructType) -> pa.Table:
        """``table``'s values as ``createDataFrame(table, schema)`` holds them."""
        from pyspark.sql.pandas.types import (
            _check_arrow_table_timestamps_localize,
            to_arrow_schema,
        )

        if not schema.fields:
            return table
        localized = _check_arrow_table_timestamps_localize(table, schema, True, self.timezone)
        return localized.cast(
            to_arrow_schema(schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC")
        )


def _alike(data_type: DataType) -> bool:
    """Whether Arrow's Parquet writer and Spark's hold values of ``data_type`` alike."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StructType):
        return all(_alike(f.dataType) for f in data_type.fields)
    if isinstance(data_type, T.ArrayType):
        return _alike(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return _alike(data_type.keyType) and _alike(data_type.valueType)
    numbers = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)
    others = (T.BooleanType, T.DecimalType, T.StringType, T.BinaryType, T.DateType)
    return isinstance(data_type, (*numbers, *others, T.TimestampType, T.TimestampNTZType))


def _suffix(codec: str) -> str:
    return "" if codec == "none" else f".{codec}"
