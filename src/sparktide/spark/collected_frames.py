"""DataFrames of a collect sink's records on Spark where the stream has no declared type: their
columns inferred from the records (:class:`_ShapeScanner`, :func:`inferred_type`) and the
records decoded into them (:class:`FrameDecoder`), in the workers, from the pickled chunks the
producing tasks shipped. (With a declared type the producing tasks write the typed columns
themselves: :mod:`sparktide.spark.frame_rows`.)
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from operator import itemgetter
from typing import TYPE_CHECKING

from sparktide.runtime.execution.protocol import (
    Shipment,
    collected_values,
)
from sparktide.spark.failures import (
    raise_first_failure,
)
from sparktide.spark.frame_types import (
    NotInferableError,
    Shape,
    merge,
    shape_of,
    type_of_shapes,
)
from sparktide.spark.frames import to_record_batch
from sparktide.spark.spark_job import CHUNK

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from sparktide.common.typeinfo import TypeInformation


__all__ = ["FrameDecoder", "inferred_type"]

_FAILED = Shipment.FAILED.value

_position = itemgetter(0)  # of a collected record


class _ShapeScanner:
    """Describes the values of a partition's collected chunks: one row (pickled
    :class:`~sparktide.spark.frame_types.Shape` or the reason there is none, count), and one row
    per failure of the job (its pickled ``RemoteFailure``)."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        shape: Shape | None = None
        error: str | None = None
        count = 0
        failures: list[bytes] = []
        try:
            for batch in batches:
                stages = batch.column(0).to_pylist()
                for stage, payload in zip(stages, batch.column(1).to_pylist(), strict=True):
                    if stage == _FAILED:
                        failures.append(payload)
                        continue
                    for value in collected_values(payload)[1]:
                        shape = merge(shape, shape_of(value))
                        count += 1
        except NotInferableError as exc:
            error = str(exc)
        yield pa.RecordBatch.from_pydict(
            {
                "shape": [pickle.dumps(shape), *(None for _ in failures)],
                "error": [error, *(None for _ in failures)],
                "records": [count, *(0 for _ in failures)],
                "failure": [None, *failures],
            },
            schema=_shape_schema(),
        )


def _shape_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("shape", pa.binary()),
            ("error", pa.string()),
            ("records", pa.int64()),
            ("failure", pa.binary()),
        ]
    )


def inferred_type(rows: DataFrame, caller: str) -> TypeInformation:
    """The type of the records in the collected ``rows`` (one Spark job over them); the user's
    error if a function of the job raised."""
    described = (
        rows.select("stage", "payload")
        .mapInArrow(_ShapeScanner(), "shape binary, error string, records long, failure binary")
        .collect()
    )
    # a user function raised: its error, not a frame of partial input
    raise_first_failure([(b"", r["failure"]) for r in described if r["failure"] is not None])
    return type_of_shapes(
        [(pickle.loads(r["shape"]), r["error"], r["records"]) for r in described],
        caller,
    )


class FrameDecoder:
    """Turns chunks of collected records into Arrow batches of the stream's columns;
    ``ordered``: the partition holds every chunk, merged here in position order."""

    def __init__(self, type_info: TypeInformation | None, ordered: bool) -> None:
        self.type_info = type_info
        self.ordered = ordered

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:

        def payloads() -> Iterator[bytes]:
            for batch in batches:
                stages = batch.column(0).to_pylist()
                for stage, payload in zip(stages, batch.column(1).to_pylist(), strict=True):
                    if stage == _FAILED:  # the stream's input is incomplete: no frame of it
                        raise_first_failure([(b"", payload)])
                    yield payload

        chunks = (collected_values(p) for p in payloads())
        if self.ordered:
            merged = [
                item for positions, values in chunks for item in zip(positions, values, strict=True)
            ]
            merged.sort(key=_position)
            for i in range(0, len(merged), CHUNK):
                yield to_record_batch([value for _, value in merged[i : i + CHUNK]], self.type_info)
            return
        for _, values in chunks:
            yield to_record_batch(values, self.type_info)
