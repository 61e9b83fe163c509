"""Kafka topic partitions and offsets initializers (PyFlink's ``KafkaTopicPartition``,
``KafkaOffsetsInitializer``, ``KafkaOffsetResetStrategy``), and the Spark Kafka options they
become.

=========================================== ============================================
PyFlink                                     Spark's Kafka source option
=========================================== ============================================
``earliest()`` / ``latest()``               ``startingOffsets`` / ``endingOffsets``:
                                            ``"earliest"`` / ``"latest"``
``offsets({tp: n, ...})``                   the JSON form ``{"topic": {"0": n}}``
``timestamp(ms)``                           ``startingTimestamp`` / ``endingTimestamp``
``committed_offsets(EARLIEST or LATEST)``   ``startingOffsets``: the reset strategy; a
                                            restarted streaming job resumes from its
                                            checkpoint (Spark keeps the offsets there, not
                                            in the consumer group)
=========================================== ============================================

>>> tp = KafkaTopicPartition("events", 0)
>>> KafkaOffsetsInitializer.offsets({tp: 42}).spark_options("starting")
{'startingOffsets': '{"events": {"0": 42}}'}
>>> KafkaOffsetsInitializer.timestamp(1700000000000).spark_options("ending")
{'endingTimestamp': '1700000000000'}
"""

from __future__ import annotations

import json
from enum import Enum

__all__ = ["KafkaOffsetResetStrategy", "KafkaOffsetsInitializer", "KafkaTopicPartition"]


class KafkaTopicPartition:
    """One partition of a topic."""

    __slots__ = ("partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic must be a non-empty str, got {topic!r}")
        if type(partition) is not int or partition < 0:
            raise ValueError(f"partition must be an int >= 0, got {partition!r}")
        self.topic = topic
        self.partition = partition

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KafkaTopicPartition)
            and other.topic == self.topic
            and other.partition == self.partition
        )

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __lt__(self, other: KafkaTopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __repr__(self) -> str:
        return f"KafkaTopicPartition({self.topic!r}, {self.partition})"


class KafkaOffsetResetStrategy(Enum):
    LATEST = 0
    EARLIEST = 1
    NONE = 2


class _Kind(Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSETS = "offsets"
    TIMESTAMP = "timestamp"
    COMMITTED = "committed"


def partitions_json(partitions: dict[KafkaTopicPartition, int]) -> str:
    """Spark's JSON of per-partition offsets: ``{"topic": {"partition": offset}}``."""
    by_topic: dict[str, dict[str, int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, {})[str(tp.partition)] = partitions[tp]
    return json.dumps(by_topic)


class KafkaOffsetsInitializer:
    """Where reading starts (``set_starting_offsets``) or stops (``set_bounded``)."""

    __slots__ = ("_kind", "_offsets", "_reset", "_timestamp")

    def __init__(
        self,
        kind: _Kind,
        offsets: dict[KafkaTopicPartition, int] | None = None,
        timestamp: int | None = None,
        reset: KafkaOffsetResetStrategy | None = None,
    ) -> None:
        self._kind = kind
        self._offsets = dict(offsets or {})
        self._timestamp = timestamp
        self._reset = reset

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        if not isinstance(offset_reset_strategy, KafkaOffsetResetStrategy):
            raise TypeError(
                "offset_reset_strategy must be a KafkaOffsetResetStrategy, got "
                f"{type(offset_reset_strategy).__name__}"
            )
        return KafkaOffsetsInitializer(_Kind.COMMITTED, reset=offset_reset_strategy)

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        if type(timestamp) is not int or timestamp < 0:
            raise ValueError(f"timestamp must be an int >= 0 (epoch ms), got {timestamp!r}")
        return KafkaOffsetsInitializer(_Kind.TIMESTAMP, timestamp=timestamp)

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(_Kind.EARLIEST)

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(_Kind.LATEST)

    @staticmethod
    def offsets(
        offsets: dict[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        if not isinstance(offsets, dict) or not offsets:
            raise ValueError("offsets must be a non-empty dict of KafkaTopicPartition to offset")
        for tp, offset in offsets.items():
            if not isinstance(tp, KafkaTopicPartition) or type(offset) is not int or offset < -2:
                raise ValueError(
                    "offsets must map KafkaTopicPartition(topic, partition) to an int offset "
                    f"(-2: earliest, -1: latest), got {tp!r}: {offset!r}"
                )
        return KafkaOffsetsInitializer(_Kind.OFFSETS, offsets=offsets, reset=offset_reset_strategy)

    def spark_options(self, side: str) -> dict[str, str]:
        """The Spark Kafka option for this initializer used as ``side`` (``"starting"`` or
        ``"ending"``)."""
        kind = self._kind
        if kind is _Kind.COMMITTED:
            if side == "ending" or self._reset is KafkaOffsetResetStrategy.NONE:
                raise ValueError(
                    "committed_offsets() is not supported on Spark without a reset strategy, "
                    "because Spark keeps a query's offsets in its checkpoint rather than in the "
                    "consumer group: a restarted job resumes from its checkpoint; for the first "
                    "run pass committed_offsets(KafkaOffsetResetStrategy.EARLIEST or LATEST)"
                )
            kind = (
                _Kind.EARLIEST if self._reset is KafkaOffsetResetStrategy.EARLIEST else _Kind.LATEST
            )
        if kind is _Kind.TIMESTAMP:
            return {f"{side}Timestamp": str(self._timestamp)}
        if kind is _Kind.OFFSETS:
            return {f"{side}Offsets": partitions_json(self._offsets)}
        if side == "ending" and kind is _Kind.EARLIEST:
            raise ValueError(
                "set_bounded(KafkaOffsetsInitializer.earliest()) would read nothing; stop at "
                "latest(), offsets({...}) or timestamp(ms)"
            )
        return {f"{side}Offsets": kind.value}

    def __repr__(self) -> str:
        return f"KafkaOffsetsInitializer.{self._kind.value}()"
