"""The flights demo (``sparktide demo``): the NYC flights of 2013 replayed through four
event-time jobs (the fourth joins each departure with the weather at its origin). See
``docs/demo.md``.

- :mod:`sparktide.demo.flights`: loading the data and the split-aware replay sources
  (flights and weather);
- :mod:`sparktide.demo.jobs`: the four jobs, built into one environment;
- :mod:`sparktide.demo.report`: Parquet tables and the summary;
- :mod:`sparktide.demo.stream`: ``sparktide demo --stream``, the replay as files read by a
  Structured Streaming query, checked against the bounded run;
- :mod:`sparktide.demo.plot` and :mod:`sparktide.demo.raster`: the timeline PNG.
"""

from sparktide.demo.flights import FlightReplay, WeatherReplay, load_flights, load_weather
from sparktide.demo.jobs import DemoResults, DemoSettings, build_jobs, run_jobs

__all__ = [
    "DemoResults",
    "DemoSettings",
    "FlightReplay",
    "WeatherReplay",
    "build_jobs",
    "load_flights",
    "load_weather",
    "run_jobs",
]
