"""NEXMark, the auction-site streaming benchmark, on sparktide, Spark SQL and PyFlink.

:mod:`~sparktide.nexmark.generator` makes the events (persons, auctions, bids) as NEXMark's
reference generators model them, :mod:`~sparktide.nexmark.queries` holds the queries written
with sparktide's DataStream API, :mod:`~sparktide.nexmark.sql` the same queries in Spark SQL
(the reference results and the native baseline), and ``python -m sparktide.nexmark`` runs
and times them (:mod:`~sparktide.nexmark.runner`).
"""

from sparktide.nexmark.config import GeneratorConfig
from sparktide.nexmark.generator import EventTables, generate, generate_range

__all__ = ["EventTables", "GeneratorConfig", "generate", "generate_range"]
