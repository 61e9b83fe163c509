"""The operator base: setup, keyed state and timers, watermarks, snapshots (Flink's
``AbstractStreamOperator``).

An operator is configured by :class:`OperatorSetup` (an immutable description of its subtask) and
wires itself to an :class:`~sparktide.runtime.output.Output`. Keyed operators (a key selector is
given) get a keyed state backend and an :class:`InternalTimeServiceManager` over the subtask's
key-group range. ``process_watermark`` fires the due event-time timers of every timer service
first and forwards the watermark after them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.common.typeinfo_json import type_from_versioned, versioned_type
from sparktide.core.functions import RuntimeContext
from sparktide.core.metrics import MetricGroup
from sparktide.core.output_tag import OutputTag
from sparktide.core.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from sparktide.core.state_backend import StateBackend, default_state_backend
from sparktide.runtime.elements import MIN_TIMESTAMP, StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.keygroups import (
    KeyGroupRange,
    compute_default_max_parallelism,
    compute_key_group_range_for_operator_index,
)
from sparktide.runtime.live_state import HeapQueues, LiveKeyedState
from sparktide.runtime.output import Output
from sparktide.runtime.processing_time import ProcessingTimeService
from sparktide.runtime.snapshot import KeyedOperatorSnapshot, StateData
from sparktide.runtime.state.backend import HeapKeyedStateBackend, StateMeta
from sparktide.runtime.state.factory import KeyedState, SubtaskState, create_keyed_state
from sparktide.runtime.state.keyed_backend import KeyedStateBackend
from sparktide.runtime.state.recorded_types import OperatorStateTypes
from sparktide.runtime.state.snapshot_checks import merged_meta
from sparktide.runtime.state.state_types import check_key_type, declared_or_none, describe_operator
from sparktide.runtime.timers.manager import InternalTimeServiceManager, TimerSnapshot
from sparktide.runtime.timers.queue import KeyGroupedTimerQueue
from sparktide.runtime.timers.restore_checks import check_timer_keys
from sparktide.runtime.timers.service import InternalTimerService, KeyContext, Triggerable

if TYPE_CHECKING:
    from rocksdict import Rdict

__all__ = ["AbstractStreamOperator", "KeySelector", "OperatorSetup", "StreamingRuntimeContext"]

KeySelector = Callable[[object], object]
"""The key of a record's value (keys are any hashable user value)."""

_KEYED_STATE_NEEDS_KEY_BY = (
    "keyed state can only be used on a keyed stream, i.e. after a key_by() operation; "
    "apply key_by(...) before process(...)"
)


@dataclass(frozen=True)
class OperatorSetup:
    """Immutable description of one operator subtask."""

    name: str = "operator"
    subtask_index: int = 0
    parallelism: int = 1
    max_parallelism: int | None = None
    job_parameters: dict[str, str] = field(default_factory=dict)
    state_backend: StateBackend = field(default_factory=default_state_backend)
    """Where a keyed operator keeps its state and timers (the job's choice; without one, the
    default: :func:`~sparktide.core.state_backend.default_state_backend`)."""
    key_type: TypeInformation | None = None
    """The declared type information of a keyed operator's keys (``key_by(..., key_type=...)``),
    None if undeclared: the RocksDB backend serializes keys with it."""
    uid: str | None = None
    """The operator's ``uid(...)``, if it has one (errors about its state name it)."""

    def __post_init__(self) -> None:
        for pname in ("parallelism", "subtask_index"):
            v = getattr(self, pname)
            if type(v) is not int:
                raise TypeError(f"{pname} must be an int, got {type(v).__name__}")
        if self.parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {self.parallelism}")
        if not isinstance(self.state_backend, StateBackend):
            raise TypeError(
                f"state_backend must be a StateBackend, got {type(self.state_backend).__name__}"
            )
        if not 0 <= self.subtask_index < self.parallelism:
            raise ValueError(
                f"subtask_index must be in [0, parallelism={self.parallelism}), got "
                f"{self.subtask_index}"
            )
        maxp = self.effective_max_parallelism
        if type(maxp) is not int or not self.parallelism <= maxp <= 32768:
            raise ValueError(
                f"max_parallelism must be an int in [parallelism={self.parallelism}, 32768], "
                f"got {self.max_parallelism!r}"
            )

    @property
    def effective_max_parallelism(self) -> int:
        if self.max_parallelism is None:
            return compute_default_max_parallelism(self.parallelism)
        return self.max_parallelism

    @property
    def key_group_range(self) -> KeyGroupRange:
        return compute_key_group_range_for_operator_index(
            self.effective_max_parallelism, self.parallelism, self.subtask_index
        )


def _no_clock() -> int:
    return 0


class StreamingRuntimeContext(RuntimeContext):
    """The :class:`RuntimeContext` of an operator subtask."""

    def __init__(self, operator: AbstractStreamOperator) -> None:
        self._op = operator

    def get_task_name(self) -> str:
        return self._op.setup_info.name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._op.setup_info.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._op.setup_info.effective_max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._op.setup_info.subtask_index

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        return self._op.setup_info.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        op = self._op
        if op.user_metric_group is None:
            service = op.processing_time_service
            clock = _no_clock if service is None else service.get_current_processing_time
            info = op.setup_info
            op.user_metric_group = MetricGroup(info.name, info.subtask_index, clock)
        return op.user_metric_group

    def _backend(self) -> KeyedStateBackend:
        backend = self._op.keyed_state_backend
        if backend is None:
            raise RuntimeError(_KEYED_STATE_NEEDS_KEY_BY)
        return backend

    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState:
        return cast(ValueState, self._state(state_descriptor))

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        return cast(ListState, self._state(state_descriptor))

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        return cast(MapState, self._state(state_descriptor))

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        return cast(ReducingState, self._state(state_descriptor))

    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState:
        return cast(AggregatingState, self._state(state_descriptor))

    def _state(self, descriptor: StateDescriptor) -> object:
        # the backend makes the state of the descriptor's kind
        return self._backend().get_partitioned_state(descriptor)


class _Unwired:
    """The output of an operator that is not wired to one yet (an :class:`Output`)."""

    __slots__ = ()

    def _fail(self) -> RuntimeError:
        return RuntimeError(
            "the operator has no output yet: set it up with setup(output, ...) or assign "
            "operator.output before sending it elements"
        )

    def collect(self, record: StreamRecord) -> None:
        raise self._fail()

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        raise self._fail()

    def emit_watermark(self, watermark: Watermark) -> None:
        raise self._fail()

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        raise self._fail()


_UNWIRED = _Unwired()


class AbstractStreamOperator:
    """Base of all operators. Subclasses implement ``process_element``."""

    setup_info: OperatorSetup
    keyed_state_backend: KeyedStateBackend | None
    time_service_manager: InternalTimeServiceManager | None

    def __init__(self) -> None:
        self.setup_info = OperatorSetup()
        self.output: Output = _UNWIRED
        self.processing_time_service: ProcessingTimeService | None = None
        self.key_selector: KeySelector | None = None
        self.keyed_state_backend = None
        self.time_service_manager = None
        self._keyed_state: KeyedState | None = None
        self.runtime_context = StreamingRuntimeContext(self)
        self.user_metric_group: MetricGroup | None = None  # made by get_metrics_group()
        self._current_watermark = MIN_TIMESTAMP

    # ------------------------------------------------------------------ lifecycle

    def setup(
        self,
        output: Output | None,
        processing_time_service: ProcessingTimeService,
        setup_info: OperatorSetup | None = None,
        key_selector: KeySelector | None = None,
        state_database: Rdict | None = None,
    ) -> None:
        """Wire the operator: its ``output`` (None: the runner assigns ``output`` later), clock,
        subtask and, for keyed operators, the key selector; ``state_database``: the RocksDB
        database its owner keeps open across runs, in which a keyed operator on RocksDB keeps
        its state and timers (:func:`~sparktide.runtime.state.factory.create_keyed_state`)."""
        self.output = _UNWIRED if output is None else output
        self.processing_time_service = processing_time_service
        self.setup_info = setup_info or OperatorSetup()
        self.key_selector = key_selector
        if key_selector is not None:
            info = self.setup_info
            kg_range = info.key_group_range
            if self._keyed_state is not None:  # set up again: the old store goes
                self._keyed_state.close()
            keyed = create_keyed_state(
                info.state_backend,
                SubtaskState(
                    info.name,
                    info.subtask_index,
                    info.effective_max_parallelism,
                    kg_range,
                    processing_time_service.get_current_processing_time,
                    info.key_type,
                    info.uid,
                ),
                state_database,
            )
            self._keyed_state = keyed
            backend = keyed.backend
            self.keyed_state_backend = backend
            self.time_service_manager = InternalTimeServiceManager(
                # the timers read current_key_group only while a key is set
                cast(KeyContext, backend),
                processing_time_service,
                kg_range,
                keyed.queue_factory,
            )

    def initialize_state(self, snapshots: Sequence[bytes | KeyedOperatorSnapshot]) -> None:
        """Restore keyed state and timers from one or more snapshots (rescaling: several).

        Only the key groups of this subtask's range are taken. Everything is decoded and
        validated before anything is restored.
        """
        backend, manager = self.keyed_state_backend, self.time_service_manager
        if backend is None or manager is None:
            raise RuntimeError("only keyed operators have keyed state to restore; key_by first")
        decoded = [
            s if isinstance(s, KeyedOperatorSnapshot) else KeyedOperatorSnapshot.from_bytes(s)
            for s in snapshots
        ]
        maxp = self.setup_info.effective_max_parallelism
        meta: dict[str, StateMeta] = {}
        state: StateData = {}
        timers: TimerSnapshot = {}
        seen: set[int] = set()  # the key groups of the snapshots so far
        for snap in decoded:
            if snap.max_parallelism != maxp:
                raise ValueError(
                    f"snapshot was taken with max_parallelism={snap.max_parallelism} but this "
                    f"operator has max_parallelism={maxp}; key groups cannot be remapped, so "
                    "restore with the same max parallelism"
                )
            self.check_restored_key_type(snap)
            for name, m in snap.state_meta.items():
                meta[name] = merged_meta(name, meta.get(name), m)
            for kg in snap.key_groups():
                if kg in seen:
                    raise ValueError(
                        f"key group {kg} appears in more than one snapshot; restore each key "
                        "group from one snapshot only"
                    )
                seen.add(kg)
            state.update(snap.state)
            timers.update(snap.timers)
        check_timer_keys(timers, backend.key_group_range, maxp)
        backend.restore_state(meta, state)
        manager.restore(timers)

    def hand_over_live_state(self) -> LiveKeyedState | None:
        """This subtask's keyed state and timers as they are, for the operator of its next
        batch to :meth:`adopt_live_state` (:mod:`sparktide.runtime.live_state`); ``None``
        where they are not handed over (no keyed state, RocksDB, TTL cleanup in full
        snapshots). This operator must not change its state afterwards."""
        backend, manager = self.keyed_state_backend, self.time_service_manager
        if not isinstance(backend, HeapKeyedStateBackend) or manager is None:
            return None
        if backend.purges_in_snapshots():
            return None
        queues = manager.hand_over_queues()
        heap: dict[str, HeapQueues] = {}
        for name, (event, processing) in queues.items():
            if not isinstance(event, KeyGroupedTimerQueue) or not isinstance(
                processing, KeyGroupedTimerQueue
            ):
                return None
            heap[name] = (event, processing)
        info = self.setup_info
        return LiveKeyedState(
            info.name,
            info.effective_max_parallelism,
            info.key_group_range,
            backend.state_metas(),
            versioned_type(declared_or_none(info.key_type)),
            backend.hand_over_tables(),
            heap,
        )

    def adopt_live_state(self, live: LiveKeyedState) -> None:
        """Take ``live`` (handed over by the operator of this subtask's previous batch in this
        process) as this operator's keyed state and timers, before :meth:`open`."""
        backend, manager = self.keyed_state_backend, self.time_service_manager
        if not isinstance(backend, HeapKeyedStateBackend) or manager is None:
            raise RuntimeError("only a keyed operator on the heap adopts a live keyed state")
        info = self.setup_info
        if (live.max_parallelism, live.key_group_range) != (
            info.effective_max_parallelism,
            info.key_group_range,
        ):
            raise ValueError(
                f"a live state of key groups {live.key_group_range} of {live.max_parallelism} "
                f"cannot be adopted by subtask {info.subtask_index} of {info.name!r} "
                f"(key groups {info.key_group_range} of {info.effective_max_parallelism})"
            )
        backend.adopt_tables(live.tables)
        for queues in live.timers.values():
            for queue in queues:
                queue.renumber_as_restored()
        manager.adopt_queues(live.timers)

    def check_restored_key_type(self, snapshot: KeyedOperatorSnapshot) -> None:
        """Raise :class:`~sparktide.runtime.state.state_types.IncompatibleStateTypeError`
        when ``snapshot`` recorded another key type than this operator's keyed stream
        declares (a snapshot without a recorded key type is not checked)."""
        if snapshot.key_type is None:
            return
        info = self.setup_info
        where = f"the snapshot of operator {snapshot.operator!r}"
        recorded = type_from_versioned(snapshot.key_type, where)
        operator = describe_operator(info.name, info.uid)
        check_key_type(operator, recorded, declared_or_none(info.key_type))

    def recorded_state_types(self) -> OperatorStateTypes | None:
        """The declared types of this operator's keyed state, as a checkpoint's metadata
        records them (``None``: not a keyed operator)."""
        backend = self.keyed_state_backend
        if backend is None:
            return None
        info = self.setup_info
        key_type = declared_or_none(info.key_type)
        return OperatorStateTypes.of(info.name, info.uid, key_type, backend.state_metas())

    def open(self) -> None:
        """Called once before the first element."""

    def finish(self) -> None:
        """Called at the end of input, after the final watermark."""

    def close(self) -> None:
        """Release resources (the keyed state's store and its files)."""
        if self._keyed_state is not None:
            self._keyed_state.close()

    # ------------------------------------------------------------------ elements

    def process_element(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_keyed(self, record: StreamRecord, key: object, key_group: int) -> None:
        """Process ``record`` whose key and key group the runner already computed (no hashing)."""
        self.keyed_state_backend.set_current_key_and_group(key, key_group)  # type: ignore[union-attr]
        self.process_keyed_element(record)

    def process_keyed_element(self, record: StreamRecord) -> None:
        """Process ``record`` for the key already set in the key context (keyed operators)."""
        raise NotImplementedError(f"{type(self).__name__} is not a keyed operator")

    def process_watermark(self, watermark: Watermark) -> None:
        """Fire due event-time timers, then forward the watermark."""
        t = watermark.timestamp
        self._current_watermark = t
        if self.time_service_manager is not None:
            self.time_service_manager.advance_watermark(t)
        self.output.emit_watermark(watermark)

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        self.output.emit_watermark_status(status)

    def current_watermark(self) -> int:
        return self._current_watermark

    def restore_watermark(self, watermark: int) -> None:
        """Put the operator back at the watermark it had reached (restoring a checkpoint):
        records below it are late again, and nothing fires or is forwarded."""
        self._current_watermark = watermark

    def set_current_key(self, key: object) -> None:
        self.keyed_state_backend.set_current_key(key)  # type: ignore[union-attr]

    def current_processing_time(self) -> int:
        """The processing time of the operator's clock (set by :meth:`setup`)."""
        service = self.processing_time_service
        if service is None:
            raise RuntimeError("the operator has no processing-time service: setup() it first")
        return service.get_current_processing_time()

    def get_current_key(self) -> object:
        backend = self.keyed_state_backend
        return None if backend is None else backend.current_key

    # ------------------------------------------------------------------ timers & snapshots

    def get_internal_timer_service(
        self, name: str, triggerable: Triggerable
    ) -> InternalTimerService:
        if self.time_service_manager is None:
            raise RuntimeError(
                "timers are only supported on keyed streams: apply key_by(...) first"
            )
        return self.time_service_manager.get_internal_timer_service(name, triggerable)

    def snapshot_state(self) -> KeyedOperatorSnapshot:
        """Keyed state and timers of this subtask, per key group."""
        backend, manager = self.keyed_state_backend, self.time_service_manager
        if backend is None or manager is None:
            raise RuntimeError("only keyed operators have keyed state to snapshot; key_by first")
        meta, state = backend.snapshot_state()
        return KeyedOperatorSnapshot(
            operator=self.setup_info.name,
            max_parallelism=self.setup_info.effective_max_parallelism,
            key_group_range=self.setup_info.key_group_range,
            state_meta=meta,
            state=state,
            timers=manager.snapshot(),
            key_type=versioned_type(declared_or_none(self.setup_info.key_type)),
        )
