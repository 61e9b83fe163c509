"""Files as a sink (PyFlink's ``FileSink``): row formats (an ``Encoder`` per record) and bulk
formats (Parquet, CSV, JSON lines through a ``BulkWriterFactory``).

Part files follow Flink's layout, ``<base>/<bucket>/<prefix>-<uuid>-<counter><suffix>``, on both
runtimes:

* The local runtime (and Spark, for row formats and for bulk formats with a custom
  ``BucketAssigner``) runs a Python writer per sink subtask (:mod:`.file_writer`): a part file is
  written as a hidden in-progress file and renamed when committed. On Spark these writers run in
  the Python workers, so the base path must be visible to them (local Spark, or a shared
  filesystem).
* On Spark, a bulk-format sink with the default date-time or the base-path bucket assigner is
  written by Spark's writer (:meth:`FileSink.write_dataframe`): each non-empty partition (a sink
  subtask) becomes one part file ``<prefix>-<uuid>-0<suffix>`` in the bucket of the moment of
  writing; files already in the directory are left alone (see
  :func:`~sparktide.datastream.connectors.spark_files.write_part_files`).

>>> from sparktide.common.serialization import Encoder
>>> FileSink.for_row_format("/tmp/out", Encoder.simple_string_encoder()).build()
FileSink('/tmp/out', SimpleStringEncoder('UTF-8'))
"""

from __future__ import annotations

import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from sparktide.common.serialization import Encoder
from sparktide.common.typeinfo_composite import RowTypeInfo
from sparktide.common.types import Row
from sparktide.datastream.connectors.bulk_format import BulkWriterFactory, coerce_record
from sparktide.datastream.connectors.file_paths import as_path, positive_millis
from sparktide.datastream.connectors.file_policies import (
    BucketAssigner,
    OnCheckpointRollingPolicy,
    OutputFileConfig,
    RollingPolicy,
    _DateTimeBucketAssigner,
)
from sparktide.datastream.connectors.file_writer import FileWriter
from sparktide.runtime.operators.sink_writer import SinkWriterOperator, WriterInitContext

__all__ = ["FileSink"]


def fit_record(value: Any, row_type: RowTypeInfo, base_path: str) -> Row:
    """``value`` as a row of a bulk writer's ``row_type``, or an error naming the field."""
    try:
        return coerce_record(value, row_type)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"FileSink {base_path!r}: a record does not fit the writer's row type "
            f"{row_type._decl()}: {exc}. Emit records that match it (e.g. declare the "
            "stream's output_type as that row type)"
        ) from None


class _FitBatches:
    """Turns Arrow batches of a stream's columns into batches of the writer's row type (in
    Spark's workers)."""

    def __init__(self, row_type: RowTypeInfo, pickled: bool, base_path: str) -> None:
        self.row_type = row_type
        self.pickled = pickled
        self.base_path = base_path

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        from sparktide.spark.frames import records_of_batch, to_record_batch

        for batch in batches:
            if self.pickled:
                values: Any = [pickle.loads(v) for v in batch.column(0).to_pylist()]
            else:
                values = records_of_batch(batch)
            rows = [fit_record(v, self.row_type, self.base_path) for v in values]
            yield to_record_batch(rows, self.row_type)


def _fit_frame(df: Any, row_type: RowTypeInfo, base_path: str) -> Any:
    """``df`` (a stream's columns) as the columns of ``row_type``: renamed or reordered when the
    Spark types already match (by name when the names are the same, else by position),
    converted record by record (with :func:`fit_record`) otherwise."""
    from sparktide.spark.frames import spark_schema_of

    target = spark_schema_of(row_type)
    names = row_type.get_field_names()
    wanted = {f.name: f.dataType.simpleString() for f in target.fields}
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    columns = list(df.columns)
    if set(columns) == set(names):
        if have == wanted:
            return df.select(*[f"`{n}`" for n in names])
    elif [have[c] for c in columns] == [wanted[n] for n in names]:
        return df.toDF(*names)
    pickled = columns == ["value"] and have["value"] == "binary"
    return df.mapInArrow(_FitBatches(row_type, pickled, base_path), target)


class _DriverClock:
    """The bucket assigner's context when Spark's writer writes: the driver's clock."""

    def current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000

    def current_watermark(self) -> int:
        return -(2**63)

    def timestamp(self) -> int | None:
        return None


class FileSink:
    """Writes records into part files under a base path (PyFlink's ``FileSink``).

    Build it with :meth:`for_row_format` (an ``Encoder`` writes each record) or
    :meth:`for_bulk_format` (a ``BulkWriterFactory`` writes rows of its row type). Each parallel
    subtask writes its own part files; a file is in progress (hidden,
    ``.<name>.inprogress.<uuid>``) while written, pending once rolled, and finished (renamed to
    ``<prefix>-<uuid>-<counter><suffix>``, the uuid chosen per bucket and subtask, the counter
    per bucket from 0) when a checkpoint completes or the input ends.
    """

    def __init__(
        self,
        base_path: str,
        encoder: Encoder | None,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_file_config: OutputFileConfig,
        bucket_check_interval: int,
        bulk_factory: BulkWriterFactory | None = None,
    ) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.bucket_assigner = bucket_assigner
        self.rolling_policy = rolling_policy
        self.output_file_config = output_file_config
        self.bucket_check_interval = bucket_check_interval
        self.bulk_factory = bulk_factory

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        """A builder of a sink writing ``encoder``'s bytes of each record under ``base_path``."""
        return FileSink.RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(
        base_path: str, writer_factory: BulkWriterFactory
    ) -> FileSink.BulkFormatBuilder:
        """A builder of a sink writing records with ``writer_factory`` (e.g.
        ``ParquetBulkWriters.for_row_type(row_type)``) under ``base_path``."""
        return FileSink.BulkFormatBuilder(base_path, writer_factory)

    def bulk_record(self, value: Any) -> Row:
        """``value`` as a row of the bulk writer's row type (an error names a field that does
        not fit)."""
        return fit_record(value, self.bulk_factory.get_row_type(), self.base_path)  # type: ignore[union-attr]

    def create_writer(
        self,
        context: WriterInitContext,
        type_info: Any = None,
        unique_id: Callable[[], str] | None = None,
    ) -> FileWriter:
        """The writer of one subtask. ``unique_id`` makes the per-bucket ids of part file
        names (default: random UUIDs, as Flink)."""
        return FileWriter(self, context, type_info, unique_id or (lambda: str(uuid.uuid4())))

    def create_operator(self, type_info: Any = None) -> SinkWriterOperator:
        """The operator that writes a stream declared as ``type_info`` (``None``: no declared
        type) with this sink; one per parallel subtask."""
        return SinkWriterOperator(self, type_info)

    @property
    def output_location(self) -> str:
        """The folder the sink writes (checked writable before the job runs)."""
        return self.base_path

    @property
    def write_dataframe(self) -> Callable[[Any], None] | None:
        """On Spark: writes the sink's input DataFrame with Spark's writer (bulk formats with the
        base-path or the date-time bucket assigner); ``None`` when the sink's own writers must
        run (row formats, custom bucket assigners)."""
        if self.bulk_factory is None:
            return None
        if type(self.bucket_assigner) not in (BucketAssigner, _DateTimeBucketAssigner):
            return None
        return self._write_dataframe

    def _write_dataframe(self, df: Any) -> None:
        from sparktide.datastream.connectors.spark_files import write_part_files

        factory: Any = self.bulk_factory
        frame = _fit_frame(df, factory.get_row_type(), self.base_path)
        bucket = self.bucket_assigner.get_bucket_id(None, _DriverClock())
        directory = os.path.join(self.base_path, bucket) if bucket else self.base_path
        config = self.output_file_config
        write_part_files(
            df.sparkSession,
            frame,
            factory,
            directory,
            config.get_part_prefix(),
            config.get_part_suffix(),
        )

    def __repr__(self) -> str:
        what = self.encoder if self.bulk_factory is None else self.bulk_factory
        return f"FileSink({self.base_path!r}, {what!r})"

    class _Builder:
        """What row- and bulk-format builders share."""

        def __init__(self, base_path: str) -> None:
            self._base_path = as_path(base_path, "base_path", "'/data/output'")
            self._bucket_assigner: BucketAssigner = BucketAssigner.date_time_bucket_assigner()
            self._output_file_config = OutputFileConfig()
            self._bucket_check_interval = 60_000
            self._rolling_policy: RollingPolicy = RollingPolicy.on_checkpoint_rolling_policy()

        def with_bucket_check_interval(self, interval: Any) -> Any:
            """How often (ms, or a ``Duration``) buckets are checked for rolling by time."""
            self._bucket_check_interval = positive_millis(interval, "interval")
            return self

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
            if not isinstance(bucket_assigner, BucketAssigner):
                raise TypeError(
                    f"bucket_assigner must be a BucketAssigner, got "
                    f"{type(bucket_assigner).__name__}; e.g. "
                    "BucketAssigner.base_path_bucket_assigner()"
                )
            self._bucket_assigner = bucket_assigner
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
            if not isinstance(output_file_config, OutputFileConfig):
                raise TypeError(
                    f"output_file_config must be an OutputFileConfig, got "
                    f"{type(output_file_config).__name__}; build it with OutputFileConfig.builder()"
                )
            self._output_file_config = output_file_config
            return self

        def disable_compact(self) -> Any:
            """Compaction is never enabled; accepted for PyFlink compatibility."""
            return self

        def _build(self, encoder: Encoder | None, factory: BulkWriterFactory | None) -> FileSink:
            return FileSink(
                self._base_path,
                encoder,
                self._bucket_assigner,
                self._rolling_policy,
                self._output_file_config,
                self._bucket_check_interval,
                factory,
            )

    class RowFormatBuilder(_Builder):
        """Configures a row-format :class:`FileSink` (default rolling policy:
        ``RollingPolicy.default_rolling_policy()``)."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            super().__init__(base_path)
            if not isinstance(encoder, Encoder):
                raise TypeError(
                    f"encoder must be an Encoder, got {type(encoder).__name__}; use "
                    "Encoder.simple_string_encoder()"
                )
            self._encoder = encoder
            self._rolling_policy = RollingPolicy.default_rolling_policy()

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            if not isinstance(rolling_policy, RollingPolicy):
                raise TypeError(
                    f"rolling_policy must be a RollingPolicy, got "
                    f"{type(rolling_policy).__name__}; e.g. RollingPolicy.default_rolling_policy()"
                )
            self._rolling_policy = rolling_policy
            return self

        def build(self) -> FileSink:
            return self._build(self._encoder, None)

    class BulkFormatBuilder(_Builder):
        """Configures a bulk-format :class:`FileSink` (it rolls part files on checkpoints
        only, as Flink's bulk formats do)."""

        def __init__(self, base_path: str, writer_factory: BulkWriterFactory) -> None:
            super().__init__(base_path)
            if not isinstance(writer_factory, BulkWriterFactory):
                raise TypeError(
                    f"writer_factory must be a BulkWriterFactory, got "
                    f"{type(writer_factory).__name__}; use e.g. "
                    "ParquetBulkWriters.for_row_type(row_type) or CsvBulkWriters.for_schema(schema)"
                )
            self._factory = writer_factory

        def with_rolling_policy(
            self, rolling_policy: OnCheckpointRollingPolicy
        ) -> FileSink.BulkFormatBuilder:
            if not isinstance(rolling_policy, OnCheckpointRollingPolicy):
                raise ValueError(
                    "rolling_policy must be OnCheckpointRollingPolicy for bulk format, got "
                    f"{rolling_policy!r}; use RollingPolicy.on_checkpoint_rolling_policy()"
                )
            self._rolling_policy = rolling_policy
            return self

        def build(self) -> FileSink:
            return self._build(None, self._factory)
