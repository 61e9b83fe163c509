"""The failed-records policy of an operator: a record whose user function raised goes to a side
output as a :class:`FailedRecord` instead of failing the job.

:func:`install` wraps the operator's record inputs. Each guarded call first saves the current
key's keyed state (every state, every namespace; values deep-copied where possible) and its
timers in every timer service, and holds back what the call emits. If the call raises, the
key's state and timers are put back as they were before the record, what it emitted is dropped,
the ``FailedRecord`` goes to the side output and ``num_failed_records`` counts it; otherwise
what it emitted goes downstream, in order. Timers that raise still fail the job (the policy is
about records). The saving costs O(entries and timers of the record's key group) per record,
paid only by operators that opt in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sparktide.runtime.elements import StreamRecord

if TYPE_CHECKING:
    from sparktide.core.output_tag import OutputTag
    from sparktide.runtime.elements import Watermark, WatermarkStatus
    from sparktide.runtime.output import Output
    from sparktide.runtime.state.backend import KeyEntries
    from sparktide.runtime.state.keyed_backend import KeyedStateBackend
    from sparktide.runtime.timers.manager import InternalTimeServiceManager, ServiceTimers

__all__ = ["FailedRecord", "FailedRecordsGuard", "GuardedOperator", "install"]


@dataclass(frozen=True)
class FailedRecord:
    """A record whose user function raised, routed to a side output instead of failing the job.

    ``value`` and ``timestamp`` are the record as the operator received it; ``operator`` is the
    operator's name, ``key`` its key (``None`` on a non-keyed stream), ``error_type`` the
    exception's qualified class name and ``error_message`` its text.

    >>> FailedRecord(3, 1000, "parse", None, "ValueError", "bad value 3").error_type
    'ValueError'
    """

    value: object
    timestamp: int | None
    operator: str
    key: object
    error_type: str
    error_message: str


_INPUTS = (
    "process_element",
    "process_keyed_element",
    "process_element1",
    "process_element2",
    "process_keyed_element1",
    "process_keyed_element2",
)


class GuardedOperator(Protocol):
    """What the guard uses of an operator (an ``AbstractStreamOperator``)."""

    output: Output
    keyed_state_backend: KeyedStateBackend | None
    time_service_manager: InternalTimeServiceManager | None


Record = StreamRecord[object]
RecordInput = Callable[[Record], None]
"""A record input of an operator (``process_element`` and its variants)."""

COUNTER = "num_failed_records"
"""The operator attribute counting its failed records (set by the guard, read by the task's
metrics with ``getattr(op, COUNTER, 0)``)."""

_Saved = tuple[object, int, "KeyEntries", "dict[str, ServiceTimers]"]
"""What a guarded call saved: key, key group, the key's state entries and its timers."""


class _HeldOutput:
    """Holds what one call emits, to be sent on (:meth:`replay`) or dropped."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[object, ...]]] = []

    def collect(self, record: Record) -> None:
        self.items.append(("collect", (record,)))

    def collect_side(self, tag: OutputTag, record: Record) -> None:
        self.items.append(("collect_side", (tag, record)))

    def emit_watermark(self, watermark: Watermark) -> None:
        self.items.append(("emit_watermark", (watermark,)))

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.items.append(("emit_watermark_status", (status,)))

    def replay(self, output: Output) -> None:
        for method, args in self.items:
            getattr(output, method)(*args)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class FailedRecordsGuard:
    """Guards the record inputs of one operator instance (see the module docstring)."""

    def __init__(self, operator: GuardedOperator, tag: OutputTag, name: str) -> None:
        self.operator = operator
        self.tag = tag
        self.name = name
        self.active = False
        setattr(operator, COUNTER, 0)

    def wrap(
        self, process: RecordInput, selector: Callable[[object], object] | None
    ) -> RecordInput:
        """``process`` guarded; ``selector``: the key selector of an input that computes the
        key itself (``None``: the runner set the key before the call)."""

        def guarded(record: Record) -> None:
            if self.active:  # an input calling another (process_element → keyed)
                process(record)
                return
            self._call(process, record, selector)

        return guarded

    def _call(
        self,
        process: RecordInput,
        record: Record,
        selector: Callable[[object], object] | None,
    ) -> None:
        op = self.operator
        value, timestamp = record.value, record.timestamp
        output = op.output
        if output is None:
            raise RuntimeError(
                f"operator {self.name!r} has no output: set it up before it processes records"
            )
        held = _HeldOutput()
        backend = op.keyed_state_backend
        saved: _Saved | None = None
        self.active = True
        op.output = held
        try:
            if backend is not None:
                if selector is not None:
                    backend.set_current_key(selector(value))
                saved = self._save(backend)
            process(record)
        except Exception as exc:
            op.output = output
            key = None
            if saved is not None and backend is not None:
                key = saved[0]
                self._roll_back(backend, saved)
            setattr(op, COUNTER, getattr(op, COUNTER) + 1)
            failed = FailedRecord(value, timestamp, self.name, key, _type_name(exc), str(exc))
            output.collect_side(self.tag, StreamRecord(failed, timestamp))
            return
        finally:
            self.active = False
            op.output = output
        held.replay(output)

    def _save(self, backend: KeyedStateBackend) -> _Saved:
        key, kg = backend.current_key, backend.current_key_group
        manager = self.operator.time_service_manager
        services = manager.services() if manager is not None else {}
        timers = {name: s.key_timers(key, kg) for name, s in services.items()}
        return key, kg, backend.key_entries(key, kg), timers

    def _roll_back(self, backend: KeyedStateBackend, saved: _Saved) -> None:
        key, kg, entries, timers = saved
        backend.set_current_key_and_group(key, kg)
        backend.reset_key_entries(key, kg, entries)
        manager = self.operator.time_service_manager
        if manager is not None:
            for name, service in manager.services().items():
                service.reset_key_timers(key, kg, timers.get(name, ([], [])))


def install(operator: GuardedOperator, tag: OutputTag, name: str) -> FailedRecordsGuard:
    """Route the records of ``operator`` whose user function raises to side output ``tag``."""
    guard = FailedRecordsGuard(operator, tag, name)
    for method in _INPUTS:
        bound = getattr(operator, method, None)
        if callable(bound):
            selector = None
            if "keyed" not in method:
                second = method.endswith("2")
                selector = getattr(operator, "key_selector2" if second else "key_selector", None)
            setattr(operator, method, guard.wrap(bound, selector))
    return guard
