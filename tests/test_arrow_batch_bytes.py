"""The embedded session sends its Python workers Arrow batches bounded by bytes as well as by
rows (:data:`~sparktide.spark.session.ARROW_BATCH_BYTES`): exchanged chunks are rows of up to
a few MiB, and a batch of 10,000 of them would hold a task's whole input in the JVM."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from sparktide.spark.session import ARROW_BATCH_BYTES


def _batch_sizes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield pa.RecordBatch.from_pydict(
            {"rows": [batch.num_rows], "bytes": [batch.column("payload").nbytes]}
        )


def test_a_python_worker_gets_batches_of_at_most_the_bytes_set(spark) -> None:
    row_bytes = 2**20
    rows = 3 * ARROW_BATCH_BYTES // row_bytes
    frame = spark.range(0, rows, 1, 1).selectExpr(f"unhex(repeat('ab', {row_bytes})) as payload")
    sizes = frame.mapInArrow(_batch_sizes, "rows long, bytes long").collect()
    assert sum(s.rows for s in sizes) == rows
    assert len(sizes) >= 3
    # a batch closes once it holds the bound: at most one row beyond it
    assert max(s.bytes for s in sizes) <= ARROW_BATCH_BYTES + row_bytes
