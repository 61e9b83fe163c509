"""Files on Spark: reading a list of files as a DataFrame with one partition per file, and
writing a DataFrame into Flink-named part files with Spark's writers.

**Reading.** Spark's file readers pack small files into one partition and cut large files into
several, and a union of single-partition frames collapses into one partition, so neither gives
"partition ``i`` is file ``i``". :func:`one_partition_per_file` tags the rows of file ``i`` with
a key whose Spark hash partition is ``i`` (:func:`~sparktide.spark.placement.placement_keys`),
hash-partitions by it into ``n`` partitions, and sorts each partition by the position of the row
in its file (the file block's start offset, then the row's
``monotonically_increasing_id`` within the block's scan task, which follows file order). An
empty file is an empty partition.

**Writing.** :func:`write_part_files` lets the format's Spark writer write into a hidden staging
directory inside the target directory (``mode("append")``: Spark never deletes what is there),
then moves every non-empty file it wrote to ``<prefix>-<uuid>-0<suffix>`` in the target
directory (Flink's part-file names, a fresh uuid per file), and removes the staging directory.
Files already in the target directory are never touched, as with Flink's ``FileSink``.

"""

from __future__ import annotations

import uuid
from functools import reduce
from typing import Any
from urllib.parse import unquote, urlparse

from sparktide.spark.placement import placement_keys
from sparktide.spark.session import is_connect

__all__ = [
    "local_path",
    "one_partition_per_file",
    "write_part_files",
]

_FILE = "__sparktide_file"
_BLOCK = "__sparktide_block"
_ROW = "__sparktide_row"


def one_partition_per_file(spark: Any, frames: list[Any]) -> Any:
    """One DataFrame whose partition ``i`` holds the rows of ``frames[i]`` (a DataFrame read
    from one file) in file order (see the module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not frames:
        return spark.createDataFrame([], T.StructType([]))
    keys = placement_keys(len(frames))
    tagged = [
        frame.select(
            "*",
            F.lit(key).cast("long").alias(_FILE),
            F.col("_metadata.file_block_start").alias(_BLOCK),
            F.monotonically_increasing_id().alias(_ROW),
        )
        for key, frame in zip(keys, frames, strict=True)
    ]
    union = reduce(lambda a, b: a.unionAll(b), tagged)
    return (
        union.repartition(len(frames), _FILE)
        .sortWithinPartitions(_BLOCK, _ROW)
        .drop(_FILE, _BLOCK, _ROW)
    )


def local_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI or a path without a scheme; ``None`` for others."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else uri
    return None


class _HadoopFiles:
    """The Hadoop filesystem of a directory, through the driver's JVM."""

    def __init__(self, spark: Any, directory: str) -> None:
        if is_connect(spark):
            raise NotImplementedError(
                f"cannot write part files to {directory!r} on a Spark Connect session: file "
                "sinks (FileSink) move their part files through the driver's Hadoop "
                "filesystem, which Spark Connect does not expose; use a classic SparkSession, "
                "or write the stream with to_dataframe(...).write / ParquetBatchSink"
            )
        jvm = spark._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self.fs = self._path(directory).getFileSystem(spark._jsc.hadoopConfiguration())
        # renaming on a checksummed (local) filesystem would move the hidden .crc files along
        checksummed = jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem")
        self.raw = self.fs.getRawFileSystem() if checksummed.isInstance(self.fs) else self.fs

    def path(self, value: str) -> Any:
        return self._path(value)


def write_part_files(
    spark: Any, df: Any, factory: Any, directory: str, prefix: str, suffix: str
) -> list[str]:
    """Write ``df`` with ``factory.write_spark`` and move the files to Flink's part-file names
    in ``directory``; returns the names of the part files written (see the module docstring)."""
    hadoop = _HadoopFiles(spark, directory)
    target = hadoop.path(directory)
    staging = hadoop.path(directory.rstrip("/") + f"/.sparktide-staging-{uuid.uuid4()}")
    written: list[str] = []
    try:
        factory.write_spark(df, staging.toString())
        hadoop.fs.mkdirs(target)
        statuses = sorted(hadoop.fs.listStatus(staging), key=lambda s: s.getPath().getName())
        for status in statuses:
            name = status.getPath().getName()
            if not status.isFile() or name.startswith((".", "_")):
                continue
            source = status.getPath()
            if factory.spark_part_is_empty(spark, source.toString(), status.getLen()):
                continue
            final = f"{prefix}-{uuid.uuid4()}-0{suffix}"
            if not hadoop.raw.rename(source, hadoop.path(target.toString() + "/" + final)):
                raise OSError(f"could not move {source.toString()} to {directory}/{final}")
            written.append(final)
    finally:
        hadoop.fs.delete(staging, True)
    return written
