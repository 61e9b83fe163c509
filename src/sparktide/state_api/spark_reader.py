"""A checkpoint's state as Spark DataFrames, read by a Spark job over the stage's subtasks.

:class:`StateFrames` gives the tables of :class:`~sparktide.state_api.reader.SavepointReader`
as DataFrames. Keyed state and timers are read in parallel: one Spark task per stage subtask
(``spark.range(p).mapInArrow``) rebuilds the checkpoint store from its location, loads that
subtask's chain (its heap files or its RocksDB checkpoint) and yields its rows as Arrow record
batches, so reading scales with the state, not with the driver. The schema is fixed on the
driver from the recorded declared types; only whether the state's namespaces are windows is
seen in the data: the driver looks at the first entries it finds (in a heap snapshot, one key
group's section of the state; in a native RocksDB checkpoint, the state's first entry; the
timers of a native checkpoint are read whole), subtask by subtask until one has entries
(usually the first). Works on a classic session and on Spark Connect
(the tasks only need the checkpoint location to be readable from the executors).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from sparktide.state_api.rows import (
    NamespaceKind,
    StateRowsSpec,
    TimerRowsSpec,
    namespace_kind,
    timer_batches,
)
from sparktide.state_api.subtasks import StageSource, first_namespaces, part_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sparktide.common.typeinfo_base import TypeInformation
    from sparktide.state_api.checkpoint_view import OperatorInfo
    from sparktide.state_api.reader import SavepointReader

__all__ = ["StateFrames"]

Spec = StateRowsSpec | TimerRowsSpec


@dataclass(frozen=True)
class _SubtaskRows:
    """The ``mapInArrow`` function of a read: per subtask number it is given, that subtask's
    rows (plain data: pickled into the tasks)."""

    source: StageSource
    spec: Spec

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for subtask in batch.column(0).to_pylist():
                if isinstance(self.spec, StateRowsSpec):
                    part = self.source.keyed(int(subtask))
                    if part is not None:
                        yield from part_batches(part, self.spec)
                    continue
                snap = self.source.load(int(subtask))
                if snap is not None:
                    yield from timer_batches(self.spec, snap)


class StateFrames:
    """The tables of ``reader`` as DataFrames of ``spark`` (see the module docstring)."""

    def __init__(self, reader: SavepointReader, spark: SparkSession) -> None:
        self.reader = reader
        self.spark = spark

    def _small(self, table: pa.Table) -> DataFrame:
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = from_arrow_schema(table.schema)
        return self.spark.createDataFrame(table.to_pylist(), schema)

    def operators(self) -> DataFrame:
        """:meth:`SavepointReader.operators` as a DataFrame."""
        return self._small(self.reader.operators())

    def split_watermarks(self) -> DataFrame:
        """:meth:`SavepointReader.split_watermarks` as a DataFrame."""
        return self._small(self.reader.split_watermarks())

    def _read(self, op: OperatorInfo, spec: Spec, schema: pa.Schema) -> DataFrame:
        from pyspark.sql.pandas.types import from_arrow_schema

        from sparktide.spark.session import ship_package

        ship_package(self.spark)  # the tasks import sparktide (once per session)
        view = self.reader.view
        source = StageSource(view.location, view.version, op.stage)
        p = op.parallelism
        return self.spark.range(0, p, 1, p).mapInArrow(
            _SubtaskRows(source, spec), from_arrow_schema(schema)
        )

    def _probe(self, op: OperatorInfo, state: str | None) -> NamespaceKind:
        """The kind of namespaces of ``state`` (``None``: of the timers), from the first
        subtask (in order) that has entries of it."""
        view = self.reader.view
        source = StageSource(view.location, view.version, op.stage)
        for subtask in range(op.parallelism):
            found = first_namespaces(source, (view.store, view.manifest), subtask, state)
            kind = namespace_kind(found)
            if kind is not None:
                return kind
        return NamespaceKind.NONE

    def keyed_state(
        self,
        uid: str,
        state: str,
        key_type: TypeInformation | None = None,
        value_type: TypeInformation | None = None,
        map_key_type: TypeInformation | None = None,
    ) -> DataFrame:
        """:meth:`SavepointReader.keyed_state` as a DataFrame read by a Spark job."""
        from sparktide.state_api.reader import ReadTypes

        self.reader.check_trusted(f"state {state!r}")
        types = ReadTypes(key_type, value_type, map_key_type)
        op, spec = self.reader.state_spec(uid, state, types)
        kind = self._probe(op, state)
        spec = replace(spec, namespace=kind)
        return self._read(op, spec, spec.schema())

    def timers(self, uid: str, key_type: TypeInformation | None = None) -> DataFrame:
        """:meth:`SavepointReader.timers` as a DataFrame read by a Spark job."""
        self.reader.check_trusted("timers")
        op = self.reader.view.keyed_operator(uid)
        kind = self._probe(op, None)
        spec = TimerRowsSpec(op.key_type if key_type is None else key_type, kind)
        return self._read(op, spec, spec.schema())
