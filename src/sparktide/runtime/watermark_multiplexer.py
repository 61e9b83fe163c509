"""Combining the watermarks of several splits into one output (Flink's
``WatermarkOutputMultiplexer``).

A source reader that reads several splits gives every split its own watermark generator and its
own output here; the reader's watermark is the min over the splits that are not idle. A split
that finishes is unregistered and leaves the min: as in Flink, the combined watermark does not
move on the unregistration itself but at the next update (an immediate output's update that is
combined, or :meth:`WatermarkOutputMultiplexer.on_periodic_emit`).

Each split output is either *immediate* (an update that may raise the combined watermark is
forwarded at once) or *deferred* (updates are only combined on :meth:`on_periodic_emit`). Both
kinds may be taken for the same split.

One deliberate difference from Flink: a split watermark on an idle split output, and
``mark_active`` on one, propagate ACTIVE to the underlying output right away (Flink waits for the
next increase of the combined watermark).

>>> from sparktide.common.watermark_strategy import ListWatermarkOutput
>>> underlying = ListWatermarkOutput()
>>> mux = WatermarkOutputMultiplexer(underlying)
>>> mux.register_new_output("a"); mux.register_new_output("b")
>>> a, b = mux.get_immediate_output("a"), mux.get_immediate_output("b")
>>> a.emit_watermark(10); b.emit_watermark(4); b.emit_watermark(12)
>>> mux.unregister_output("a")  # split a finished: it leaves the min...
True
>>> underlying.events
[4, 10]
>>> mux.on_periodic_emit()  # ...and the combined watermark moves at the next update
>>> underlying.events
[4, 10, 12]
"""

from __future__ import annotations

from sparktide.common.watermark_strategy import WatermarkOutput, watermark_timestamp
from sparktide.runtime.elements import MIN_TIMESTAMP, Watermark

__all__ = ["WatermarkOutputMultiplexer"]


class _Partial:
    """The watermark state of one split output."""

    __slots__ = ("idle", "watermark")

    def __init__(self) -> None:
        self.watermark = MIN_TIMESTAMP
        self.idle = False


class _ImmediateOutput:
    """A split output whose updates may change the combined watermark at once."""

    __slots__ = ("_combine", "_mux", "_state", "split_id")

    def __init__(self, mux: WatermarkOutputMultiplexer, state: _Partial, split_id: str) -> None:
        self._mux = mux
        self._combine = mux.combine  # bound once: called per update that may move the min
        self._state = state
        self.split_id = split_id

    def emit_watermark(self, watermark: Watermark | int) -> None:
        ts = watermark if type(watermark) is int else watermark_timestamp(watermark)
        state = self._state
        was_idle = state.idle
        state.idle = False
        if ts > state.watermark:
            state.watermark = ts
            if ts > self._mux.combined_watermark:
                self._combine()
                return
        if was_idle:
            self._combine()

    def mark_idle(self) -> None:
        self._state.idle = True
        self._combine()  # may advance: this split may have held the min back

    def mark_active(self) -> None:
        self._state.idle = False
        self._combine()

    def __repr__(self) -> str:
        return f"ImmediateOutput({self.split_id!r})"


class _DeferredOutput:
    """A split output whose updates are combined only on ``on_periodic_emit``."""

    __slots__ = ("_state", "split_id")

    def __init__(self, state: _Partial, split_id: str) -> None:
        self._state = state
        self.split_id = split_id

    def emit_watermark(self, watermark: Watermark | int) -> None:
        ts = watermark if type(watermark) is int else watermark_timestamp(watermark)
        state = self._state
        state.idle = False
        if ts > state.watermark:
            state.watermark = ts

    def mark_idle(self) -> None:
        self._state.idle = True

    def mark_active(self) -> None:
        self._state.idle = False

    def __repr__(self) -> str:
        return f"DeferredOutput({self.split_id!r})"


class WatermarkOutputMultiplexer:
    """Combines per-split watermark outputs into one underlying
    :class:`~sparktide.common.watermark_strategy.WatermarkOutput`.

    The combined watermark is the min over the non-idle split outputs, forwarded only when it
    increases; when every split output is idle the underlying output is marked idle (once), and
    marked active again when one becomes active. With no split registered nothing is emitted.

    >>> from sparktide.common.watermark_strategy import ListWatermarkOutput
    >>> underlying = ListWatermarkOutput()
    >>> mux = WatermarkOutputMultiplexer(underlying)
    >>> mux.register_new_output("s0"); mux.register_new_output("s1")
    >>> s0, s1 = mux.get_deferred_output("s0"), mux.get_deferred_output("s1")
    >>> s0.emit_watermark(7); s1.mark_idle()
    >>> underlying.events  # deferred: nothing yet
    []
    >>> mux.on_periodic_emit()
    >>> s0.mark_idle(); mux.on_periodic_emit()
    >>> underlying.events
    [7, WatermarkStatus.IDLE]
    """

    __slots__ = ("_idle", "_outputs", "_underlying", "combined_watermark")

    def __init__(self, underlying_output: WatermarkOutput) -> None:
        for method in ("emit_watermark", "mark_idle", "mark_active"):
            if not callable(getattr(underlying_output, method, None)):
                raise TypeError(
                    f"underlying_output must be a WatermarkOutput with {method}(), got "
                    f"{type(underlying_output).__name__}"
                )
        self._underlying = underlying_output
        self._outputs: dict[str, _Partial] = {}
        self.combined_watermark = MIN_TIMESTAMP
        """The last combined watermark forwarded (``MIN_TIMESTAMP`` before any); set by
        :meth:`combine` only (a plain slot: the split outputs read it per update)."""
        self._idle = False

    # ------------------------------------------------------------------ registration

    def register_new_output(self, split_id: str) -> None:
        """Create the state of a new split output (``ValueError`` if ``split_id`` exists)."""
        if split_id in self._outputs:
            raise ValueError(
                f"split_id {split_id!r} is already registered; unregister_output() it first or "
                "use a unique id per split"
            )
        self._outputs[split_id] = _Partial()

    def unregister_output(self, split_id: str) -> bool:
        """Remove a (finished) split's output so it no longer holds the min back; ``False`` if
        it was not registered. Nothing is forwarded now: the combined watermark takes the
        removal into account at the next update, as Flink's multiplexer does."""
        return self._outputs.pop(split_id, None) is not None

    def get_immediate_output(self, split_id: str) -> WatermarkOutput:
        """An output for ``split_id`` whose updates are combined at once."""
        return _ImmediateOutput(self, self._state(split_id), split_id)

    def get_deferred_output(self, split_id: str) -> WatermarkOutput:
        """An output for ``split_id`` whose updates are combined on :meth:`on_periodic_emit`."""
        return _DeferredOutput(self._state(split_id), split_id)

    def on_periodic_emit(self) -> None:
        """Combine every outstanding (deferred) update and forward the result."""
        self.combine()

    # ------------------------------------------------------------------ inspection

    def is_idle(self) -> bool:
        """Whether the underlying output was marked idle (every split output is idle)."""
        return self._idle

    def split_ids(self) -> list[str]:
        return list(self._outputs)

    def split_watermark(self, split_id: str) -> int:
        return self._state(split_id).watermark

    # ------------------------------------------------------------------ internals

    def _state(self, split_id: str) -> _Partial:
        state = self._outputs.get(split_id)
        if state is None:
            raise ValueError(
                f"no output registered under split_id {split_id!r}; call "
                f"register_new_output({split_id!r}) first"
            )
        return state

    def combine(self) -> None:
        """Combine the split outputs' watermarks and statuses now and forward what changed:
        the min over the non-idle outputs if it increased, idle / active on a change."""
        outputs = self._outputs
        if not outputs:
            return
        low = None
        for state in outputs.values():
            if not state.idle and (low is None or state.watermark < low):
                low = state.watermark
        underlying = self._underlying
        if low is None:
            if not self._idle:
                self._idle = True
                underlying.mark_idle()
            return
        if self._idle:
            self._idle = False
            underlying.mark_active()
        if low > self.combined_watermark:
            self.combined_watermark = low
            underlying.emit_watermark(Watermark(low))

    def check_invariants(self) -> None:
        """Assert every invariant (for tests; valid right after an update of the combination)."""
        active = [s.watermark for s in self._outputs.values() if not s.idle]
        if self._idle and not (self._outputs and not active):
            raise AssertionError("invariant broken: self._outputs and not active")

    def __repr__(self) -> str:
        state = "idle" if self._idle else "active"
        return (
            f"WatermarkOutputMultiplexer(combined={self.combined_watermark}, {state}, "
            f"splits={len(self._outputs)})"
        )
