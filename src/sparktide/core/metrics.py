"""User metrics: what ``runtime_context.get_metrics_group()`` hands out (PyFlink's
``MetricGroup``, ``Counter``, ``Meter``, ``Distribution`` and gauges).

Each operator subtask has its own group; when the job ends, the values of every subtask are
combined into the job's metrics (``JobExecutionResult.metrics``) under
``"<operator name>.<group>...<metric name>"``: counters and meter counts add up, a gauge gives
``{subtask index: value}``, a distribution ``{"count", "sum", "min", "max", "mean"}`` over every
value recorded.

>>> group = MetricGroup("Map", 0, clock=lambda: 0)
>>> parsed = group.add_group("parser").counter("parsed")
>>> parsed.inc(); parsed.inc(2)
>>> group.gauge("queue", lambda: 5)
>>> sizes = group.distribution("sizes")
>>> sizes.update(3); sizes.update(1)
>>> report = MetricsReport.of(group)
>>> report.as_dict()["Map.parser.parsed"], report.as_dict()["Map.queue"]
(3, {0: 5})
>>> report.as_dict()["Map.sizes"]
{'count': 2, 'sum': 4, 'min': 1, 'max': 3, 'mean': 2.0}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "Counter",
    "Distribution",
    "Meter",
    "Metric",
    "MetricGroup",
    "MetricKind",
    "MetricsReport",
]


class MetricKind(Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    METER = "meter"
    DISTRIBUTION = "distribution"


class Metric:
    """Base of the metric types."""

    kind: MetricKind


class Counter(Metric):
    """A count that goes up and down."""

    kind = MetricKind.COUNTER

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        self._count += n

    def dec(self, n: int = 1) -> None:
        self._count -= n

    def get_count(self) -> int:
        return self._count


class Meter(Metric):
    """Events and their rate per second over the last ``time_span_in_seconds`` (of the
    operator's processing time).

    >>> now = [0]
    >>> meter = Meter(60, clock=lambda: now[0])
    >>> meter.mark_event(30); now[0] = 10_000
    >>> meter.get_count(), meter.get_rate()
    (30, 3.0)
    """

    kind = MetricKind.METER

    def __init__(self, time_span_in_seconds: int, clock: Callable[[], int]) -> None:
        if type(time_span_in_seconds) is not int or time_span_in_seconds < 1:
            raise ValueError(
                f"time_span_in_seconds must be an int >= 1, got {time_span_in_seconds!r}"
            )
        self._span_ms = time_span_in_seconds * 1000
        self._clock = clock
        self._count = 0
        self._events: list[tuple[int, int]] = []  # (time ms, events) within the span

    def mark_event(self, value: int = 1) -> None:
        self._count += value
        self._events.append((self._clock(), value))

    def get_count(self) -> int:
        return self._count

    def get_rate(self) -> float:
        now = self._clock()
        start = now - self._span_ms
        self._events = [(t, n) for t, n in self._events if t > start]
        if not self._events:
            return 0.0
        elapsed = max(now - self._events[0][0], 1)
        return sum(n for _, n in self._events) * 1000 / elapsed


class Distribution(Metric):
    """The count, sum, min and max of the values recorded with :meth:`update`."""

    kind = MetricKind.DISTRIBUTION

    def __init__(self) -> None:
        self.summary = Summary()

    def update(self, value: int) -> None:
        self.summary = self.summary.merge(Summary(1, value, value, value))


@dataclass(frozen=True)
class Summary:
    """What a distribution has seen."""

    count: int = 0
    sum: int = 0
    min: int | None = None
    max: int | None = None

    def merge(self, other: Summary) -> Summary:
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        return Summary(
            self.count + other.count,
            self.sum + other.sum,
            min(self.min, other.min),  # type: ignore[type-var]
            max(self.max, other.max),  # type: ignore[type-var]
        )

    def as_dict(self) -> dict[str, object]:
        mean = self.sum / self.count if self.count else None
        return {
            "count": self.count,
            "sum": self.sum,
            "min": self.min,
            "max": self.max,
            "mean": mean,
        }


class _Gauge(Metric):
    kind = MetricKind.GAUGE

    def __init__(self, read: Callable[[], int]) -> None:
        self.read = read


class MetricGroup:
    """The metrics of one operator subtask, in nested named groups."""

    def __init__(
        self,
        scope: str,
        subtask_index: int,
        clock: Callable[[], int],
        registry: dict[str, Metric] | None = None,
    ) -> None:
        self._scope = scope
        self._subtask = subtask_index
        self._clock = clock
        self._registry: dict[str, Metric] = {} if registry is None else registry

    @property
    def subtask_index(self) -> int:
        return self._subtask

    def metrics(self) -> dict[str, Metric]:
        """Every metric registered in this group and the groups under it, by full name."""
        return dict(self._registry)

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A group under this one (``add_group("k", "v")``: the key/value group ``k.v``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        scope = f"{self._scope}.{name}" if extra is None else f"{self._scope}.{name}.{extra}"
        return MetricGroup(scope, self._subtask, self._clock, self._registry)

    def _register(self, name: str, metric: Metric) -> Metric:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a metric name must be a non-empty str, got {name!r}")
        full = f"{self._scope}.{name}"
        existing = self._registry.get(full)
        if existing is not None:
            if existing.kind is not metric.kind:
                raise ValueError(
                    f"metric {full!r} is a {existing.kind.value} already; pick another name "
                    f"for the {metric.kind.value}"
                )
            return existing  # the same metric, as Flink hands back a registered one
        self._registry[full] = metric
        return metric

    def counter(self, name: str) -> Counter:
        return self._register(name, Counter())  # type: ignore[return-value]

    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        if not callable(obj):
            raise TypeError(f"a gauge needs a callable () -> int, got {type(obj).__name__}")
        self._register(name, _Gauge(obj))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, Meter(time_span_in_seconds, self._clock))  # type: ignore[return-value]

    def distribution(self, name: str) -> Distribution:
        return self._register(name, Distribution())  # type: ignore[return-value]


class MetricsReport:
    """The user metrics of some subtasks, combined (see the module docstring)."""

    def __init__(self) -> None:
        self.sums: dict[str, int] = {}
        self.gauges: dict[str, dict[int, object]] = {}
        self.summaries: dict[str, Summary] = {}

    @staticmethod
    def of(*groups: MetricGroup) -> MetricsReport:
        report = MetricsReport()
        for group in groups:
            for name, metric in group.metrics().items():
                if isinstance(metric, (Counter, Meter)):
                    report.sums[name] = report.sums.get(name, 0) + metric.get_count()
                elif isinstance(metric, Distribution):
                    before = report.summaries.get(name, Summary())
                    report.summaries[name] = before.merge(metric.summary)
                elif isinstance(metric, _Gauge):
                    report.gauges.setdefault(name, {})[group.subtask_index] = metric.read()
        return report

    def merge(self, other: MetricsReport) -> MetricsReport:
        for name, count in other.sums.items():
            self.sums[name] = self.sums.get(name, 0) + count
        for name, values in other.gauges.items():
            self.gauges.setdefault(name, {}).update(values)
        for name, summary in other.summaries.items():
            self.summaries[name] = self.summaries.get(name, Summary()).merge(summary)
        return self

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = dict(self.sums)
        out.update({name: dict(sorted(v.items())) for name, v in self.gauges.items()})
        out.update({name: s.as_dict() for name, s in self.summaries.items()})
        return dict(sorted(out.items()))
