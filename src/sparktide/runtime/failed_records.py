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
from typing import Any

from sparktide.runtime.elements import StreamRecord

__all__ = ["FailedRecord", "FailedRecordsGuard", "install"]


@dataclass(frozen=True)
class FailedRecord:
    """A record whose user function raised, routed to a side output instead of failing the job.

    ``value`` and ``timestamp`` are the record as the operator received it; ``operator`` is the
    operator's name, ``key`` its key (``None`` on a non-keyed stream), ``error_type`` the
    exception's qualified class name and ``error_message`` its text.

    >>> FailedRecord(3, 1000, "parse", None, "ValueError", "bad value 3").error_type
    'ValueError'
    """

    value: Any
    timestamp: int | None
    operator: str
    key: Any
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


class _HeldOutput:
    """Holds what one call emits, to be sent on (:meth:`replay`) or dropped."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[Any, ...]]] = []

    def collect(self, record: StreamRecord) -> None:
        self.items.append(("collect", (record,)))

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        self.items.append(("collect_side", (tag, record)))

    def emit_watermark(self, watermark: Any) -> None:
        self.items.append(("emit_watermark", (watermark,)))

    def emit_watermark_status(self, status: Any) -> None:
        self.items.append(("emit_watermark_status", (status,)))

    def replay(self, output: Any) -> None:
        for method, args in self.items:
            getattr(output, method)(*args)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class FailedRecordsGuard:
    """Guards the record inputs of one operator instance (see the module docstring)."""

    def __init__(self, operator: Any, tag: Any, name: str) -> None:
        self.operator = operator
        self.tag = tag
        self.name = name
        self.active = False
        operator.num_failed_records = 0

    def wrap(
        self, process: Callable[[StreamRecord], None], selector: Any
    ) -> Callable[[StreamRecord], None]:
        """``process`` guarded; ``selector``: the key selector of an input that computes the
        key itself (``None``: the runner set the key before the call)."""

        def guarded(record: StreamRecord) -> None:
            if self.active:  # an input calling another (process_element → keyed)
                process(record)
                return
            self._call(process, record, selector)

        return guarded

    def _call(
        self, process: Callable[[StreamRecord], None], record: StreamRecord, selector: Any
    ) -> None:
        op = self.operator
        value, timestamp = record.value, record.timestamp
        output = op.output
        held = _HeldOutput()
        backend = op.keyed_state_backend
        saved: Any = None
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
            if saved is not None:
                key = saved[0]
                self._roll_back(backend, saved)
            op.num_failed_records += 1
            failed = FailedRecord(value, timestamp, self.name, key, _type_name(exc), str(exc))
            output.collect_side(self.tag, StreamRecord(failed, timestamp))
            return
        finally:
            self.active = False
            op.output = output
        held.replay(output)

    def _save(self, backend: Any) -> tuple[Any, int, Any, dict[str, Any]]:
        key, kg = backend.current_key, backend.current_key_group
        manager = self.operator.time_service_manager
        services = manager.services() if manager is not None else {}
        timers = {name: s.key_timers(key, kg) for name, s in services.items()}
        return key, kg, backend.key_entries(key, kg), timers

    def _roll_back(self, backend: Any, saved: tuple[Any, int, Any, dict[str, Any]]) -> None:
        key, kg, entries, timers = saved
        backend.set_current_key_and_group(key, kg)
        backend.reset_key_entries(key, kg, entries)
        manager = self.operator.time_service_manager
        if manager is not None:
            for name, service in manager.services().items():
                service.reset_key_timers(key, kg, timers.get(name, ([], [])))


def install(operator: Any, tag: Any, name: str) -> FailedRecordsGuard:
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
