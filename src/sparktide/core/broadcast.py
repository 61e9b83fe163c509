"""Broadcast state and broadcast process functions with PyFlink's names.

A stream made with ``DataStream.broadcast(*map_state_descriptors)`` is connected to a keyed or
non-keyed stream; every parallel instance of the operator receives every element of the
broadcast side and keeps, per descriptor, a :class:`BroadcastState`: a map that
``process_broadcast_element`` reads and writes, and that the other side (``process_element``,
``on_timer``) reads through a :class:`ReadOnlyBroadcastState`. Since every instance sees the same
broadcast elements in the same order, every instance holds the same broadcast state (as in
Flink, the user must not make it depend on anything else, such as the subtask index or keyed
state).

>>> from sparktide.testing import for_keyed_broadcast_process_function
>>> from sparktide.core.state import MapStateDescriptor
>>> rules = MapStateDescriptor("rules", None, None)
>>> class Threshold(KeyedBroadcastProcessFunction):
...     def process_element(self, value, ctx):
...         limit = ctx.get_broadcast_state(rules).get("limit")
...         if limit is not None and value[1] > limit:
...             yield ctx.get_current_key(), value[1]
...     def process_broadcast_element(self, value, ctx):
...         ctx.get_broadcast_state(rules).put("limit", value)
>>> h = for_keyed_broadcast_process_function(Threshold(), lambda v: v[0], [rules])
>>> h.process_element(("a", 5), 1)
>>> h.process_broadcast_element(3, 2)
>>> h.process_element(("a", 5), 3); h.process_element(("b", 2), 4)
>>> h.extract_output_values()
[('a', 5)]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sparktide.core.functions import Function
from sparktide.core.state import State

if TYPE_CHECKING:
    from sparktide.core.output_tag import OutputTag
    from sparktide.core.state import MapStateDescriptor, StateDescriptor
    from sparktide.core.timerservice import TimeDomain, TimerService

__all__ = [
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "BroadcastState",
    "KeyedBroadcastProcessFunction",
    "OperatorStateStore",
    "ReadOnlyBroadcastState",
]

K = TypeVar("K")
V = TypeVar("V")


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """A read-only view of a :class:`BroadcastState` (the non-broadcast side's).

    Values are not copied: do not change what :meth:`get` or :meth:`items` return.
    """

    __slots__ = ()

    @abstractmethod
    def get(self, key: K) -> V | None:
        """The value of ``key``, or ``None``."""

    @abstractmethod
    def contains(self, key: K) -> bool:
        """Whether ``key`` has a mapping."""

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]:
        """The ``(key, value)`` pairs, in the order the keys were first put."""

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """The keys."""

    @abstractmethod
    def values(self) -> Iterable[V]:
        """The values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Whether the state has no mapping."""

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """The state of a broadcast stream: a map, the same in every parallel instance.

    Written only by ``process_broadcast_element``; on restore and rescaling every instance gets
    the one copy the checkpoint holds.
    """

    __slots__ = ()

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map ``key`` to ``value``."""

    @abstractmethod
    def put_all(self, dict_value: Mapping[K, V]) -> None:
        """Put every mapping of ``dict_value``."""

    @abstractmethod
    def remove(self, key: K) -> None:
        """Remove the mapping of ``key`` (no-op when absent)."""

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class OperatorStateStore(ABC):
    """Where an operator subtask's non-keyed state lives; as in PyFlink, only broadcast state."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
        """The :class:`BroadcastState` of ``state_descriptor``."""


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions share: their contexts."""

    class BaseContext(ABC):
        """The context of every method of a broadcast process function."""

        @abstractmethod
        def timestamp(self) -> int | None:
            """The timestamp of the element (or of the firing timer); None if it has none."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """The current processing time."""

        @abstractmethod
        def current_watermark(self) -> int:
            """The operator's current watermark (the minimum of both inputs')."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag`` (as ``yield tag, value``)."""

    class Context(BaseContext):
        """The context of ``process_broadcast_element``: read and write the broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
            """The :class:`BroadcastState` of ``state_descriptor`` (one passed to
            ``broadcast(...)``)."""

    class ReadOnlyContext(BaseContext):
        """The context of ``process_element``: read the broadcast state."""

        @abstractmethod
        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> ReadOnlyBroadcastState:
            """A read-only view of the broadcast state of ``state_descriptor``."""


class BroadcastProcessFunction(BaseBroadcastProcessFunction):
    """Connects a non-keyed stream with a broadcast stream (``ds.connect(broadcast_stream)``).

    ``process_element`` runs for each element of the non-broadcast stream and reads the
    broadcast state; ``process_broadcast_element`` runs, in every parallel instance, for each
    element of the broadcast stream and may write it. Both yield their outputs.
    """

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        pass

    @abstractmethod
    def process_element(
        self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        """Called for each element of the non-broadcast stream."""

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: BroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Called for each element of the broadcast stream, in every parallel instance."""


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction):
    """Connects a keyed stream with a broadcast stream (``keyed.connect(broadcast_stream)``).

    The keyed side has keyed state and timers (``on_timer``); the broadcast side may write the
    broadcast state and reach every key's state with ``ctx.apply_to_keyed_state``.
    """

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        """The context of ``process_broadcast_element``."""

        @abstractmethod
        def apply_to_keyed_state(
            self,
            state_descriptor: StateDescriptor,
            function: Callable[[Any, State], None],
        ) -> None:
            """Call ``function(key, state)`` for every key of this parallel instance that has
            state of ``state_descriptor``, with that key's state (Flink's
            ``applyToKeyedState``)."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        """The context of ``process_element``: also the key and the timer service."""

        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext, ABC):
        """The context of ``on_timer``."""

        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        """Called for each element of the keyed stream, with its key current."""

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Called for each element of the broadcast stream, in every parallel instance."""

    def on_timer(
        self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """Called when a timer registered by the current key fires."""
