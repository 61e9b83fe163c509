"""The asyncio event loop that runs a task thread's async requests.

Each task thread (the local runtime's thread, a Spark Python worker's) gets one event loop,
made on first use and run by a daemon thread of its own, so requests progress while the task
thread processes records, and a task thread that is itself inside a running loop (a notebook)
is not disturbed. Every async wait operator of that task thread schedules its requests there.
The loop stops when its task thread ends; a forked process makes its own.

>>> import asyncio
>>> async def double(x):
...     await asyncio.sleep(0)
...     return 2 * x
>>> asyncio.run_coroutine_threadsafe(double(21), task_loop().loop).result(timeout=5)
42
>>> task_loop() is task_loop()
True
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref

__all__ = ["TaskLoop", "task_loop"]


class TaskLoop:
    """An event loop running on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="sparktide-async-io", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.pid == os.getpid()

    def stop(self) -> None:
        """Stop the loop (what is still scheduled on it is dropped)."""
        if self.alive and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)


class _Holder:
    """Lives in the task thread's locals; when the thread ends it goes, and stops the loop."""

    def __init__(self, runner: TaskLoop) -> None:
        self.runner = runner
        weakref.finalize(self, runner.stop)


_local = threading.local()


def task_loop() -> TaskLoop:
    """The event loop of the calling task thread (made on first use)."""
    holder: _Holder | None = getattr(_local, "holder", None)
    if holder is None or not holder.runner.alive:
        holder = _Holder(TaskLoop())
        _local.holder = holder
    return holder.runner
