"""``SlotSharingGroup`` and ``MemorySize`` (PyFlink's ``pyflink.datastream.slot_sharing_group``).

Slot sharing has no meaning on Spark, because Spark schedules every task on its executors'
cores itself: a group can be described and registered (``env.register_slot_sharing_group``,
``stream.slot_sharing_group``), which changes nothing about where tasks run.

>>> group = (SlotSharingGroup.builder("heavy").set_cpu_cores(2.0)
...          .set_task_heap_memory_mb(512).build())
>>> group.get_name(), group.get_cpu_cores(), group.get_task_heap_memory().get_bytes()
('heavy', 2.0, 536870912)
"""

from __future__ import annotations

__all__ = ["MemorySize", "SlotSharingGroup"]

_KIBI = 1024


class MemorySize:
    """An amount of memory in bytes (Flink's ``MemorySize``).

    >>> MemorySize.of_mebi_bytes(3).get_kibi_bytes()
    3072
    """

    __slots__ = ("_bytes",)

    def __init__(self, j_memory_size: object = None, bytes_size: int | None = None) -> None:
        if j_memory_size is not None:
            raise ValueError("j_memory_size is a Java object; pass bytes_size=... instead")
        if type(bytes_size) is not int or bytes_size < 0:
            raise ValueError(f"bytes_size must be an int >= 0, got {bytes_size!r}")
        self._bytes = bytes_size

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(bytes_size=mebi_bytes * _KIBI * _KIBI)

    def get_bytes(self) -> int:
        return self._bytes

    def get_kibi_bytes(self) -> int:
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self._bytes >> 40

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        return f"MemorySize({self._bytes} bytes)"


class SlotSharingGroup:
    """A named group of resources for operators (a description only: see the module)."""

    def __init__(
        self,
        name: str,
        cpu_cores: float | None = None,
        task_heap_memory: MemorySize | None = None,
        task_off_heap_memory: MemorySize | None = None,
        managed_memory: MemorySize | None = None,
        external_resources: dict[str, float] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        self._name = name
        self._cpu_cores = cpu_cores
        self._heap = task_heap_memory
        self._off_heap = task_off_heap_memory
        self._managed = managed_memory
        self._external = dict(external_resources or {})

    def get_name(self) -> str:
        return self._name

    def get_cpu_cores(self) -> float | None:
        return self._cpu_cores

    def get_task_heap_memory(self) -> MemorySize | None:
        return self._heap

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self._off_heap

    def get_managed_memory(self) -> MemorySize | None:
        return self._managed

    def get_external_resources(self) -> dict[str, float]:
        return dict(self._external)

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(name)

    def __repr__(self) -> str:
        return f"SlotSharingGroup({self._name!r})"

    class Builder:
        """Builds a :class:`SlotSharingGroup` (PyFlink's builder methods)."""

        def __init__(self, name: str) -> None:
            self._name = name
            self._cpu: float | None = None
            self._heap: MemorySize | None = None
            self._off_heap: MemorySize | None = None
            self._managed: MemorySize | None = None
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if isinstance(cpu_cores, bool) or not isinstance(cpu_cores, (int, float)):
                raise TypeError(f"cpu_cores must be a number, got {type(cpu_cores).__name__}")
            if cpu_cores <= 0:
                raise ValueError(f"cpu_cores must be > 0, got {cpu_cores}")
            self._cpu = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._heap = task_heap_memory
            return self

        def set_task_heap_memory_mb(self, task_heap_mb: int) -> SlotSharingGroup.Builder:
            self._heap = MemorySize.of_mebi_bytes(task_heap_mb)
            return self

        def set_task_off_heap_memory(
            self, task_off_heap_memory: MemorySize
        ) -> SlotSharingGroup.Builder:
            self._off_heap = task_off_heap_memory
            return self

        def set_task_off_heap_memory_mb(self, task_off_heap_mb: int) -> SlotSharingGroup.Builder:
            self._off_heap = MemorySize.of_mebi_bytes(task_off_heap_mb)
            return self

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._managed = managed_memory
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            self._managed = MemorySize.of_mebi_bytes(managed_memory_mb)
            return self

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            self._external[name] = float(value)
            return self

        def build(self) -> SlotSharingGroup:
            return SlotSharingGroup(
                self._name, self._cpu, self._heap, self._off_heap, self._managed, self._external
            )
