"""State as data: a streaming job's checkpoint read as tables, without running the job, and
savepoints written from tables.

The reading side of a State Processor API (the model is Flink's ``SavepointReader``; the rows
follow Spark's state data source, ``spark.read.format("statestore")``):

- :class:`SavepointReader` opens a committed version of a checkpoint
  (``SavepointReader.read(location, version=None, trusted=False)``) and gives
  ``pyarrow.Table`` s: :meth:`~SavepointReader.operators` (every operator with its uid, name,
  identity, stage, parallelism, and its keyed states with kind and declared types),
  :meth:`~SavepointReader.keyed_state` (one operator's state as rows: key, window, value, one
  row per list element or map entry, key group), :meth:`~SavepointReader.timers` (pending
  timers) and :meth:`~SavepointReader.split_watermarks`;
- :meth:`SavepointReader.frames` gives the same tables as Spark DataFrames, the keyed state
  and timers read by a Spark job over the stage's subtasks in parallel
  (:class:`~sparktide.state_api.spark_reader.StateFrames`).

The writing side: :class:`SavepointWriter` builds a savepoint from such rows (pyarrow tables,
or Spark DataFrames written by a Spark job), per operator uid and state descriptor, or
transforms one (:mod:`sparktide.state_api.writer`); read -> write -> read is the identity.

Both state backends' checkpoints read alike (a heap chain of snapshots and changelogs, or a
native RocksDB checkpoint). Keyed state and timers are pickled in the checkpoint: reading them
runs code stored there, so they are read only with ``trusted=True``; the operators and the
split watermarks are read as data. The rows are described in ``docs/state_api.md``.
"""

from sparktide.state_api.checkpoint_view import OperatorInfo, StateInfo, StateReadError
from sparktide.state_api.reader import SavepointReader, UntrustedCheckpointError
from sparktide.state_api.spark_reader import StateFrames
from sparktide.state_api.state_rows_in import StateWriteError
from sparktide.state_api.writer import SavepointWriter

__all__ = [
    "OperatorInfo",
    "SavepointReader",
    "SavepointWriter",
    "StateFrames",
    "StateInfo",
    "StateReadError",
    "StateWriteError",
    "UntrustedCheckpointError",
]
