"""How a :class:`~sparktide.common.stream_trigger.StreamTrigger` starts a Structured Streaming
query: the writer's trigger, and the session settings the query is created with.

- ``processing_time(interval)``: Spark's ``processingTime`` trigger;
- ``available_now()`` and ``once()``: Spark's triggers of those names;
- ``continuous(poll)``: Spark's default trigger (the next micro-batch as soon as the last one
  ended and data is there) with ``spark.sql.streaming.pollingDelay`` set to ``poll`` while the
  query is created: Spark reads it then, so the query polls its sources every ``poll`` while no
  data arrives and the session keeps its own value (:func:`creation_settings`).

>>> from sparktide.common.stream_trigger import StreamTrigger
>>> creation_settings(StreamTrigger.continuous(poll=250))
{'spark.sql.streaming.pollingDelay': '250ms'}
>>> creation_settings(StreamTrigger.processing_time(1000))
{}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktide.common.stream_trigger import StreamTrigger, TriggerKind

if TYPE_CHECKING:
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = ["POLLING_DELAY", "creation_settings", "with_trigger"]

POLLING_DELAY = "spark.sql.streaming.pollingDelay"
"""How long a micro-batch query without new data waits before it polls its sources again
(read by Spark when the query is created)."""


def with_trigger(writer: DataStreamWriter, trigger: StreamTrigger) -> DataStreamWriter:
    """``writer`` with the Spark trigger of ``trigger``."""
    kind = trigger.kind
    if kind is TriggerKind.AVAILABLE_NOW:
        return writer.trigger(availableNow=True)
    if kind is TriggerKind.ONCE:
        return writer.trigger(once=True)
    if kind is TriggerKind.PROCESSING_TIME:
        return writer.trigger(processingTime=f"{trigger.interval_ms} milliseconds")
    return writer  # continuous: Spark's default trigger


def creation_settings(trigger: StreamTrigger) -> dict[str, str]:
    """The session settings a query with ``trigger`` is created with (set only while it is
    created, see :func:`~sparktide.spark.session_conf.session_settings`)."""
    if trigger.kind is TriggerKind.CONTINUOUS and trigger.interval_ms is not None:
        return {POLLING_DELAY: f"{trigger.interval_ms}ms"}
    return {}
