"""One stage subtask's keyed state and timers at a committed version, in the backend-neutral
form, loaded from its chain of files (a heap chain, or a native RocksDB checkpoint) by
:meth:`~sparktide.spark.checkpoint.CheckpointStore.load_chain`. Unpickles the state's user
values: only a trusted reader calls it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparktide.spark.checkpoint import CheckpointError, CheckpointStore

if TYPE_CHECKING:
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot
    from sparktide.spark.checkpoint_meta import CommitManifest
    from sparktide.state_api.checkpoint_view import CheckpointView

__all__ = ["StageSource", "load_subtask"]


def _load(
    store: CheckpointStore, manifest: CommitManifest, stage: int, subtask: int
) -> KeyedOperatorSnapshot | None:
    chain = manifest.chain(stage, subtask)
    if chain is None:
        raise CheckpointError(
            f"the manifest of version {manifest.version} names no subtask {subtask} of stage "
            f"{stage}"
        )
    return store.load_chain(chain, stage, subtask, files=manifest.files).snapshot()


def load_subtask(view: CheckpointView, stage: int, subtask: int) -> KeyedOperatorSnapshot | None:
    """The keyed snapshot of a stage subtask of ``view`` (``None``: the stage is not keyed)."""
    return _load(view.store, view.manifest, stage, subtask)


@dataclass(frozen=True)
class StageSource:
    """A keyed stage of a committed checkpoint version, as plain data a Spark task rebuilds
    its store from (the location, not a file system object)."""

    location: str
    version: int
    stage: int

    def load(self, subtask: int) -> KeyedOperatorSnapshot | None:
        """The keyed snapshot of subtask ``subtask`` (read in the calling process)."""
        store = CheckpointStore(self.location)
        return _load(store, store.commit_info(self.version), self.stage, subtask)
