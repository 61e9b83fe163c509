"""``BroadcastStream`` and ``BroadcastConnectedStream`` with PyFlink's names.

``ds.broadcast(descriptor, ...)`` makes a :class:`BroadcastStream`: its elements go to every
parallel instance of the operator it is connected to, and each descriptor (a
``MapStateDescriptor``) names a broadcast state of that operator. ``stream.connect(bs)`` (a
``DataStream`` or a ``KeyedStream``) gives a :class:`BroadcastConnectedStream`, whose
``process`` takes a ``BroadcastProcessFunction`` or a ``KeyedBroadcastProcessFunction``.

In which order the two inputs meet (the same at any parallelism and on every runner): see
:mod:`sparktide.runtime.operators.broadcast`.

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> from sparktide.datastream.functions import KeyedBroadcastProcessFunction
>>> from sparktide.datastream.state import MapStateDescriptor
>>> limits = MapStateDescriptor("limits", None, None)
>>> class OverLimit(KeyedBroadcastProcessFunction):
...     def process_element(self, value, ctx):
...         limit = ctx.get_broadcast_state(limits).get("max")
...         if limit is not None and value[1] > limit:
...             yield value
...     def process_broadcast_element(self, value, ctx):
...         ctx.get_broadcast_state(limits).put("max", value)
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> rules = env.from_collection([10]).broadcast(limits)
>>> events = env.from_collection([("a", 5), ("b", 50), ("a", 12)])
>>> alerts = events.key_by(lambda v: v[0]).connect(rules).process(OverLimit())
>>> list(alerts.execute_and_collect())
[('b', 50), ('a', 12)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sparktide.core.broadcast import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from sparktide.core.state import MapStateDescriptor
from sparktide.runtime.graph import OperatorNode, copy_function
from sparktide.runtime.operators.broadcast import (
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
)
from sparktide.runtime.operators.broadcast_state import BroadcastStateStore

if TYPE_CHECKING:
    from sparktide.datastream.data_stream import DataStream

__all__ = ["BroadcastConnectedStream", "BroadcastStream", "check_descriptors"]


def check_descriptors(descriptors: Sequence[object]) -> list[MapStateDescriptor]:
    """``descriptors`` if they can name broadcast states (MapStateDescriptors, distinct
    names), else a clear error."""
    if not descriptors:
        raise ValueError(
            "a broadcast stream needs at least one MapStateDescriptor for its broadcast state: "
            "broadcast(MapStateDescriptor(name, key_type, value_type))"
        )
    BroadcastStateStore(descriptors)  # type: ignore[arg-type]  # raises what is wrong
    return list(descriptors)  # type: ignore[arg-type]


class BroadcastStream:
    """A stream whose elements reach every parallel instance of the operator it is connected
    to, with the broadcast states ``broadcast_state_descriptors``. Its only use is
    ``connect``: ``stream.connect(broadcast_stream)``."""

    def __init__(
        self, input_stream: DataStream, broadcast_state_descriptors: Sequence[MapStateDescriptor]
    ) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = check_descriptors(broadcast_state_descriptors)

    def __repr__(self) -> str:
        names = [d.name for d in self.broadcast_state_descriptors]
        return f"BroadcastStream({self.input_stream.get_name()!r}, states={names})"


def _check_function(func: Any, cls: type, what: str) -> None:
    if isinstance(func, cls):
        return
    missing = [
        m
        for m in ("process_element", "process_broadcast_element")
        if not callable(getattr(func, m, None))
    ]
    if missing:
        raise TypeError(
            f"process takes a {what} (subclass {cls.__name__}), got {type(func).__name__} "
            f"without {missing}"
        )


class BroadcastConnectedStream:
    """A keyed or non-keyed stream connected with a :class:`BroadcastStream`."""

    def __init__(
        self,
        non_broadcast_stream: DataStream,
        broadcast_stream: BroadcastStream,
        broadcast_state_descriptors: Sequence[MapStateDescriptor],
    ) -> None:
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = list(broadcast_state_descriptors)

    def _is_keyed_stream(self) -> bool:
        return hasattr(self.non_broadcast_stream, "_key_selector")

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Run ``func`` on both inputs: a :class:`KeyedBroadcastProcessFunction` when the
        non-broadcast stream is keyed, else a :class:`BroadcastProcessFunction`."""
        from sparktide.datastream.data_stream import DataStream

        keyed = self._is_keyed_stream()
        if keyed and isinstance(func, BroadcastProcessFunction):
            raise TypeError(
                "a BroadcastProcessFunction is for a non-keyed stream; the connected stream is "
                "keyed: subclass KeyedBroadcastProcessFunction (keyed state and timers come "
                "with it)"
            )
        if not keyed and isinstance(func, KeyedBroadcastProcessFunction):
            raise TypeError(
                "a KeyedBroadcastProcessFunction needs a keyed stream: key_by(...) the stream "
                "before connect(broadcast_stream), or subclass BroadcastProcessFunction"
            )
        descriptors = self.broadcast_state_descriptors
        s1 = self.non_broadcast_stream
        e2 = self.broadcast_stream.input_stream._edge("broadcast", None, 2)
        factory: Any
        if keyed:
            _check_function(func, KeyedBroadcastProcessFunction, "KeyedBroadcastProcessFunction")
            origin = s1._origin  # type: ignore[attr-defined]
            e1 = origin._edge("hash", s1._key_selector, 1)  # type: ignore[attr-defined]
            name = "Keyed-Co-Process-Broadcast"

            def factory() -> KeyedBroadcastProcessOperator:
                return KeyedBroadcastProcessOperator(copy_function(func), descriptors)

        else:
            _check_function(func, BroadcastProcessFunction, "BroadcastProcessFunction")
            e1 = s1._edge("rebalance", None, 1)
            name = "Co-Process-Broadcast"

            def factory() -> BroadcastProcessOperator:
                return BroadcastProcessOperator(copy_function(func), descriptors)

        node = s1._env._graph.add(
            OperatorNode(name, [e1, e2], operator_factory=factory, output_type=output_type)
        )
        return DataStream(s1._env, node)
