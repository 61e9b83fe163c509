"""Structured Streaming's own work per micro-batch, by how Spark writes its checkpoint files.

A trivial query (a Parquet file source, one file of ``--rows`` rows per micro-batch, into a
``foreachBatch`` that does nothing) runs ``--files`` micro-batches on a new ``local[2]`` session
per contender, in turn, ``--repeat`` times: Spark's default manager of checkpoint files
(``FileContext``) and the ``FileSystem`` one the embedded session of sparktide uses
(:data:`sparktide.spark.session.CHECKPOINT_FILES`). Printed per contender: the median over the
micro-batches after the first 5 of the query's ``durationMs`` parts (``latestOffset``: the file
source lists its folder and writes its log; ``walCommit``: the offset log; ``commitOffsets``: the
commit log; ``triggerExecution``: the whole micro-batch), best of the runs by
``triggerExecution``, and the load average before and after.

Usage: ``python benchmarks/checkpoint_files.py [--files 30] [--rows 1000] [--repeat 2]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from common import load_average

PARTS = ("latestOffset", "walCommit", "queryPlanning", "getBatch", "addBatch", "commitOffsets")
TOTAL = "triggerExecution"
CONTENDERS = {"FileContext (Spark's default)": "", "FileSystem (sparktide's sessions)": "fs"}

RUN = """
import json, os, sys, tempfile
import pyarrow as pa, pyarrow.parquet as pq
from pyspark.sql import SparkSession
from sparktide.spark.session import CHECKPOINT_FILES
manager, files, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
           .config("spark.sql.shuffle.partitions", "2"))
if manager:
    builder = builder.config("spark.sql.streaming.checkpointFileManagerClass", CHECKPOINT_FILES)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
work = tempfile.mkdtemp()
source = os.path.join(work, "in")
os.mkdir(source)
for i in range(files):
    table = pa.table({"k": list(range(rows)), "v": list(range(rows))})
    pq.write_table(table, os.path.join(source, f"part-{i:04d}.parquet"))
spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(files + 10))
query = (spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1)
         .parquet(source).writeStream.foreachBatch(lambda df, i: None)
         .option("checkpointLocation", os.path.join(work, "checkpoint"))
         .trigger(availableNow=True).start())
query.awaitTermination()
print(json.dumps([dict(p["durationMs"]) for p in query.recentProgress]))
"""


def run(manager: str, files: int, rows: int) -> dict[str, float]:
    """One query in a process of its own; the median of each part over its steady batches."""
    proc = subprocess.run(
        [sys.executable, "-c", RUN, manager, str(files), str(rows)],
        capture_output=True,
        text=True,
        check=True,
    )
    batches = json.loads(proc.stdout.strip().splitlines()[-1])[5:]
    return {k: statistics.median(b.get(k, 0) for b in batches) for k in (*PARTS, TOTAL)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=30, help="files = micro-batches")
    ap.add_argument("--rows", type=int, default=1000, help="rows per file")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    print(f"{args.files} micro-batches of {args.rows} rows; load average {load_average()}")
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        for name, manager in CONTENDERS.items():
            got = run(manager, args.files, args.rows)
            if name not in best or got[TOTAL] < best[name][TOTAL]:
                best[name] = got
    print(f"load average after the runs {load_average()}")
    print("| checkpoint files | " + " | ".join(f"{k} ms" for k in (*PARTS, TOTAL)) + " |")
    print("|---|" + "---:|" * (len(PARTS) + 1))
    for name, got in best.items():
        print(f"| {name} | " + " | ".join(f"{got[k]:.0f}" for k in (*PARTS, TOTAL)) + " |")


if __name__ == "__main__":
    main()
