"""The embedded session's streaming queries write Spark's checkpoint files (offset, commit and
file-source logs) through Hadoop's ``FileSystem`` API: the manager Spark makes for a query's
checkpoint is :data:`~sparktide.spark.session.CHECKPOINT_FILES`, and a query restarted on its
checkpoint goes on from its logs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.spark.session import CHECKPOINT_FILES


def test_the_embedded_session_writes_checkpoint_files_through_file_system(spark, tmp_path) -> None:
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    hadoop_conf = spark._jsparkSession.sessionState().newHadoopConf()
    # what Spark calls when a query starts (StreamExecution's offset and commit logs)
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
    made = manager.create(path, hadoop_conf)
    assert made.getClass().getName() == CHECKPOINT_FILES


def _write(folder: Path, index: int) -> None:
    pq.write_table(pa.table({"k": [index, index + 1]}), folder / f"part-{index:03d}.parquet")


def test_a_query_goes_on_from_the_logs_it_wrote(spark, tmp_path) -> None:
    """Two runs on one checkpoint: the second reads only the files the first did not, so the
    offset, commit and file-source logs the first wrote through the manager are read back."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    seen: list[int] = []

    def run() -> None:
        query = (
            spark.readStream.schema("k long")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source))
            .writeStream.foreachBatch(lambda df, _: seen.extend(r.k for r in df.collect()))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    for i in (0, 2):
        _write(source, i)
    run()
    _write(source, 4)
    run()
    assert sorted(seen) == [0, 1, 2, 3, 4, 5]
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if p.name.isdigit()) == [
        "0",
        "1",
        "2",
    ]
