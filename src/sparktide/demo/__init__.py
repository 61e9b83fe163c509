"""The flights demo (``sparktide demo``): the NYC flights of 2013 replayed through three
event-time jobs. See ``docs/demo.md``.

- :mod:`sparktide.demo.flights`: loading the data and the split-aware replay source;
- :mod:`sparktide.demo.jobs`: the three jobs, built into one environment;
- :mod:`sparktide.demo.report`: Parquet tables and the summary;
- :mod:`sparktide.demo.plot` and :mod:`sparktide.demo.raster`: the timeline PNG.
"""

from sparktide.demo.flights import FlightReplay, load_flights
from sparktide.demo.jobs import DemoResults, DemoSettings, build_jobs, run_jobs

__all__ = ["DemoResults", "DemoSettings", "FlightReplay", "build_jobs", "load_flights", "run_jobs"]
