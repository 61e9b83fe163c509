"""Keyed state backends for tests: build the heap or the RocksDB backend by name.

:class:`BackendFactory` makes backends of one kind and disposes the RocksDB ones (closing their
databases) when the test ends; the ``make_backend`` fixture of ``conftest.py`` hands one out per
backend kind. RocksDB databases go to ``/dev/shm`` where it exists (opening a database syncs its
files: about 50 ms on a disk, 4 ms in memory), else to the test's ``tmp_path``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sparktide.runtime.keygroups import KeyGroupRange
from sparktide.runtime.state import HeapKeyedStateBackend
from sparktide.runtime.state.rocksdb_backend import RocksDBKeyedStateBackend

BACKENDS = ("heap", "rocksdb")
"""The backend kinds, as fixture parameters."""

Backend = HeapKeyedStateBackend | RocksDBKeyedStateBackend


class BackendFactory:
    """Makes backends of ``kind``; :meth:`close` disposes every RocksDB one made."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        if kind not in BACKENDS:
            raise ValueError(f"kind must be one of {BACKENDS}, got {kind!r}")
        self.kind = kind
        shm = Path("/dev/shm")
        self._root = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path
        self._made: list[RocksDBKeyedStateBackend] = []

    def __call__(
        self,
        key_group_range: KeyGroupRange | None = None,
        maxp: int = 128,
        now: int | Callable[[], int] = 0,
        **kwargs: Any,
    ) -> Backend:
        time = now if callable(now) else (lambda: now)
        common: dict[str, Any] = {
            "max_parallelism": maxp,
            "key_group_range": key_group_range or KeyGroupRange(0, max(maxp, 1) - 1),
            "time_provider": time,
        }
        if self.kind == "heap":
            return HeapKeyedStateBackend(**common)
        b = RocksDBKeyedStateBackend(
            **common, directory=self._root / f"db{len(self._made)}", **kwargs
        )
        self._made.append(b)
        return b

    @property
    def is_rocksdb(self) -> bool:
        return self.kind == "rocksdb"

    def close(self) -> None:
        for b in self._made:
            b.dispose()
        self._made.clear()
        if self._root.parent == Path("/dev/shm"):
            shutil.rmtree(self._root, ignore_errors=True)


class BackendUnderTest:
    """The backend factory of the running test, for a module whose tests all run on both
    backends: its autouse fixture does ``yield from UNDER_TEST.use(request, make_backend)``,
    and its helpers build backends with ``UNDER_TEST(key_group_range, maxp, now)``.

    ``heap_only`` maps the names of tests that inspect the heap backend's internals to the
    reason; they are skipped on RocksDB.
    """

    def __init__(self, heap_only: Mapping[str, str]) -> None:
        self._heap_only = heap_only
        self._factory: BackendFactory | None = None

    def use(self, request: pytest.FixtureRequest, factory: BackendFactory) -> Iterator[None]:
        """Make ``factory`` current for the test of ``request`` (or skip it)."""
        reason = self._heap_only.get(request.node.originalname)
        if factory.is_rocksdb and reason is not None:
            pytest.skip(f"heap only: {reason}")
        self._factory = factory
        yield
        self._factory = None

    def __call__(
        self,
        key_group_range: KeyGroupRange | None = None,
        maxp: int = 128,
        now: int | Callable[[], int] = 0,
    ) -> Backend:
        if self._factory is None:
            raise RuntimeError("no backend under test: only call this from within a test")
        return self._factory(key_group_range, maxp, now)
