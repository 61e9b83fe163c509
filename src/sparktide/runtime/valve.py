"""Combining the watermarks of several input channels (Flink's ``StatusWatermarkValve``) and of
the two inputs of a two-input operator.

:class:`StatusWatermarkValve` keeps, per channel, the last watermark, the status (ACTIVE/IDLE)
and whether the channel is *aligned* (counts for the minimum):

- a watermark is accepted only from an ACTIVE channel and only if it is higher than that
  channel's last one; the valve then emits the min over the aligned channels when it is higher
  than the last output (so the output is monotonic);
- a channel that turns IDLE leaves the min; if it held the min, the new min is emitted;
- when all channels are idle the valve emits the max of the channel watermarks (if higher than
  the last output) and then IDLE;
- a channel that turns ACTIVE again is aligned at once if its watermark is ``>=`` the last output,
  otherwise once a watermark brings it there; if the valve was idle it emits ACTIVE.

One deliberate difference from Flink: when the last channel turns idle, Flink flushes the max
only if that channel held the last output; here the max is flushed whenever it is higher (the
rule as stated — Flink's shortcut misses the case where an unaligned channel is the last to go
idle while an idle channel holds a higher watermark).

>>> from sparktide.runtime.output import CollectingOutput
>>> out = CollectingOutput()
>>> valve = StatusWatermarkValve(2)
>>> valve.input_watermark(10, 0, out); valve.input_watermark(5, 1, out)
>>> valve.input_watermark(20, 1, out)
>>> valve.input_watermark_status(WatermarkStatus.IDLE, 0, out)
>>> valve.input_watermark_status(WatermarkStatus.IDLE, 1, out)
>>> out.elements
[Watermark(5), Watermark(10), Watermark(20), WatermarkStatus.IDLE]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from sparktide.runtime.elements import MIN_TIMESTAMP, Watermark, WatermarkStatus

if TYPE_CHECKING:
    from sparktide.runtime.output import WatermarkOutput

__all__ = ["StatusWatermarkValve", "TwoInputWatermarkCombiner", "ValveState"]


class ValveState(TypedDict):
    """A watermark valve's state as JSON-able data (what ``to_json`` returns)."""

    channels: int
    watermarks: list[int]
    active: list[bool]
    aligned: list[bool]
    num_active: int
    num_aligned: int
    last: int
    holders: int
    idle: bool


_ACTIVE = WatermarkStatus.ACTIVE
_IDLE = WatermarkStatus.IDLE


def _check_count(value: object, name: str) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _bad_index(index: object, count: int, name: str) -> Exception:
    if type(index) is not int:
        return TypeError(f"{name} must be an int, got {type(index).__name__} ({index!r})")
    return ValueError(f"{name} must be in [0, {count}), got {index}")


def _bad_timestamp(timestamp: object) -> Exception:
    return TypeError(
        f"timestamp must be an int number of milliseconds, got {type(timestamp).__name__} "
        f"({timestamp!r}); pass watermark.timestamp for a Watermark"
    )


def _bad_status(status: object) -> Exception:
    return TypeError(
        "status must be WatermarkStatus.ACTIVE or WatermarkStatus.IDLE, got "
        f"{type(status).__name__} ({status!r})"
    )


class StatusWatermarkValve:
    """Combines the watermarks and statuses of ``num_channels`` input channels into one output.

    ``output`` needs ``emit_watermark(Watermark)`` and ``emit_watermark_status(status)``. The
    minimum is recomputed (a scan) only when the last aligned channel holding the current output
    watermark moves on, so channels advancing in lockstep cost O(n) per step of the output.

    >>> from sparktide.runtime.output import CollectingOutput
    >>> out = CollectingOutput()
    >>> v = StatusWatermarkValve(3)
    >>> for ch, ts in ((0, 7), (1, 3), (2, 9), (1, 8)):
    ...     v.input_watermark(ts, ch, out)
    >>> out.elements
    [Watermark(3), Watermark(7)]
    >>> v.last_output_watermark
    7
    """

    __slots__ = (
        "_active",
        "_aligned",
        "_holders",
        "_idle",
        "_last",
        "_n",
        "_num_active",
        "_num_aligned",
        "_watermarks",
    )

    def __init__(self, num_channels: int) -> None:
        n = _check_count(num_channels, "num_channels")
        self._n = n
        self._watermarks = [MIN_TIMESTAMP] * n
        self._active = [True] * n
        self._aligned = [True] * n
        self._num_active = n
        self._num_aligned = n
        self._last = MIN_TIMESTAMP
        # aligned channels whose watermark equals the last output: while there is one, the min
        # over the aligned channels is the last output and nothing needs to be recomputed
        self._holders = n
        self._idle = False

    @property
    def num_channels(self) -> int:
        return self._n

    def to_json(self) -> ValveState:
        """The valve's state as JSON-able data (what a checkpoint stores; no pickle).

        >>> from sparktide.runtime.output import CollectingOutput
        >>> v = StatusWatermarkValve(2)
        >>> v.input_watermark(4, 0, CollectingOutput()); v.input_watermark(7, 1, CollectingOutput())
        >>> w = StatusWatermarkValve.from_json(v.to_json())
        >>> w.to_json() == v.to_json(), w.last_output_watermark
        (True, 4)
        """
        return {
            "channels": self._n,
            "watermarks": list(self._watermarks),
            "active": list(self._active),
            "aligned": list(self._aligned),
            "num_active": self._num_active,
            "num_aligned": self._num_aligned,
            "last": self._last,
            "holders": self._holders,
            "idle": self._idle,
        }

    @classmethod
    def from_json(cls, raw: ValveState) -> StatusWatermarkValve:
        """The valve :meth:`to_json` describes; malformed data raises ``ValueError``."""
        try:
            valve = cls(int(raw["channels"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not the state of a watermark valve: {exc!r}") from None
        valve.restore(raw)
        return valve

    def restore(self, raw: ValveState) -> None:
        """Take the state ``raw`` (a :meth:`to_json` of a valve with as many channels);
        malformed data raises ``ValueError`` and leaves this valve as it was.

        >>> v = StatusWatermarkValve(2)
        >>> v.restore({**v.to_json(), "last": 9}); v.last_output_watermark
        9
        >>> v.restore({**v.to_json(), "watermarks": [1]})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: not the state of a watermark valve: ValueError('per-channel lists of ...')
        """
        try:
            n = self._n
            if int(raw["channels"]) != n:
                raise ValueError(f"{raw['channels']} channels, not {n}")
            watermarks = [int(w) for w in raw["watermarks"]]
            active = [bool(a) for a in raw["active"]]
            aligned = [bool(a) for a in raw["aligned"]]
            if not len(watermarks) == len(active) == len(aligned) == n:
                raise ValueError(f"per-channel lists of another length than {n} channels")
            counts = (int(raw["num_active"]), int(raw["num_aligned"]), int(raw["holders"]))
            last, idle = int(raw["last"]), bool(raw["idle"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not the state of a watermark valve: {exc!r}") from None
        self._watermarks, self._active, self._aligned = watermarks, active, aligned
        self._num_active, self._num_aligned, self._holders = counts
        self._last, self._idle = last, idle

    @property
    def last_output_watermark(self) -> int:
        """The last watermark emitted (``MIN_TIMESTAMP`` before any)."""
        return self._last

    def is_idle(self) -> bool:
        """Whether the valve's output is idle (all channels idle)."""
        return self._idle

    def channel_watermark(self, channel: int) -> int:
        return self._watermarks[channel]

    def is_channel_active(self, channel: int) -> bool:
        return self._active[channel]

    def is_channel_aligned(self, channel: int) -> bool:
        return self._aligned[channel]

    # ------------------------------------------------------------------ input

    def input_watermark(self, timestamp: int, channel: int, output: WatermarkOutput) -> None:
        """Feed the watermark ``timestamp`` (int ms) of ``channel``."""
        if type(channel) is not int or not 0 <= channel < self._n:
            raise _bad_index(channel, self._n, "channel")
        if type(timestamp) is not int:
            raise _bad_timestamp(timestamp)
        if not self._active[channel]:
            return  # an idle channel's watermark is ignored
        watermarks = self._watermarks
        old = watermarks[channel]
        if timestamp <= old:
            return  # not higher than that channel's last watermark
        watermarks[channel] = timestamp
        last = self._last
        if self._aligned[channel]:
            if old == last:
                self._holders -= 1
        elif timestamp >= last:  # an unaligned channel has caught up
            self._aligned[channel] = True
            self._num_aligned += 1
            if timestamp == last:
                self._holders += 1
        if self._holders == 0:
            self._emit_min(output)

    def input_watermark_status(
        self, status: WatermarkStatus, channel: int, output: WatermarkOutput
    ) -> None:
        """Feed a status change of ``channel`` (a repeated status is ignored)."""
        if type(channel) is not int or not 0 <= channel < self._n:
            raise _bad_index(channel, self._n, "channel")
        if not isinstance(status, WatermarkStatus):
            raise _bad_status(status)
        active = self._active
        watermark = self._watermarks[channel]
        if status.is_idle():
            if not active[channel]:
                return
            active[channel] = False
            self._num_active -= 1
            was_holder = False
            if self._aligned[channel]:
                self._aligned[channel] = False
                self._num_aligned -= 1
                if watermark == self._last:
                    self._holders -= 1
                    was_holder = True
            if self._num_active == 0:
                highest = max(self._watermarks)
                if highest > self._last:
                    self._last = highest
                    output.emit_watermark(Watermark(highest))
                self._idle = True
                output.emit_watermark_status(_IDLE)
            elif was_holder and self._holders == 0:
                self._emit_min(output)
        else:
            if active[channel]:
                return
            active[channel] = True
            self._num_active += 1
            if watermark >= self._last:
                self._aligned[channel] = True
                self._num_aligned += 1
                if watermark == self._last:
                    self._holders += 1
            if self._idle:
                self._idle = False
                output.emit_watermark_status(_ACTIVE)

    # ------------------------------------------------------------------ internals

    def _emit_min(self, output: WatermarkOutput) -> None:
        """Recompute the min over the aligned channels; emit it if it is higher."""
        if self._num_aligned == 0:
            return
        watermarks = self._watermarks
        aligned = self._aligned
        low = min(watermarks[i] for i in range(self._n) if aligned[i])
        if low > self._last:
            self._last = low
            output.emit_watermark(Watermark(low))
        self._holders = sum(1 for i in range(self._n) if aligned[i] and watermarks[i] == low)

    def check_invariants(self) -> None:
        """Assert every invariant (for tests)."""
        n = self._n
        wms, active, aligned = self._watermarks, self._active, self._aligned
        if not (len(wms) == len(active) == len(aligned) == n):
            raise AssertionError("invariant broken: len(wms) == len(active) == len(aligned) == n")
        if not (self._num_active == sum(active)):
            raise AssertionError("invariant broken: self._num_active == sum(active)")
        if not (self._num_aligned == sum(aligned)):
            raise AssertionError("invariant broken: self._num_aligned == sum(aligned)")
        for i in range(n):
            if aligned[i]:
                if not (active[i]):
                    raise AssertionError(f"channel {i} is aligned but idle")
                if not (wms[i] >= self._last):
                    raise AssertionError(f"aligned channel {i} is below the output")
            elif active[i] and not (wms[i] < self._last):
                raise AssertionError(f"channel {i} is active, caught up, but unaligned")
        holders = sum(1 for i in range(n) if aligned[i] and wms[i] == self._last)
        if not (self._holders == holders):
            raise AssertionError((self._holders, holders))
        if not (self._idle == (self._num_active == 0)):
            raise AssertionError("invariant broken: self._idle == (self._num_active == 0)")
        if self._idle and not (max(wms) <= self._last):
            raise AssertionError("invariant broken: max(wms) <= self._last")

    def __repr__(self) -> str:
        channels = ", ".join(
            f"{w}{'' if a else ' idle'}{'' if al or not a else ' unaligned'}"
            for w, a, al in zip(self._watermarks, self._active, self._aligned, strict=True)
        )
        state = "idle" if self._idle else "active"
        return f"StatusWatermarkValve(last={self._last}, {state}, [{channels}])"


class TwoInputWatermarkCombiner:
    """The watermark of a two-input operator: ``min`` of its inputs' watermarks (Flink's
    ``AbstractStreamOperator.processWatermark1/2`` with ``IndexedCombinedWatermarkStatus``).

    The combined watermark is the min over the non-idle inputs, emitted when it increases; an
    idle input does not hold the other back; when every input is idle the output is IDLE (no
    flush of the max, unlike the valve). A watermark on an idle input makes it active again
    (ACTIVE is emitted first if the output was idle). ``num_inputs`` defaults to 2.

    >>> from sparktide.runtime.output import CollectingOutput
    >>> out = CollectingOutput()
    >>> c = TwoInputWatermarkCombiner()
    >>> c.input_watermark(10, 0, out); c.input_watermark(4, 1, out)
    >>> c.input_watermark_status(WatermarkStatus.IDLE, 1, out)
    >>> c.input_watermark_status(WatermarkStatus.IDLE, 0, out)
    >>> out.elements
    [Watermark(4), Watermark(10), WatermarkStatus.IDLE]
    """

    __slots__ = ("_combined", "_idle", "_inputs_idle", "_n", "_watermarks")

    def __init__(self, num_inputs: int = 2) -> None:
        n = _check_count(num_inputs, "num_inputs")
        self._n = n
        self._watermarks = [MIN_TIMESTAMP] * n
        self._inputs_idle = [False] * n
        self._combined = MIN_TIMESTAMP
        self._idle = False

    @property
    def last_output_watermark(self) -> int:
        """The combined watermark last emitted (``MIN_TIMESTAMP`` before any)."""
        return self._combined

    def is_idle(self) -> bool:
        return self._idle

    def input_watermark(self, timestamp: int, input_index: int, output: WatermarkOutput) -> None:
        """Feed a watermark of input ``input_index`` (0 or 1)."""
        if type(input_index) is not int or not 0 <= input_index < self._n:
            raise _bad_index(input_index, self._n, "input_index")
        if type(timestamp) is not int:
            raise _bad_timestamp(timestamp)
        self._inputs_idle[input_index] = False
        if timestamp > self._watermarks[input_index]:
            self._watermarks[input_index] = timestamp
        self._update(output)

    def input_watermark_status(
        self, status: WatermarkStatus, input_index: int, output: WatermarkOutput
    ) -> None:
        """Feed a status change of input ``input_index``."""
        if type(input_index) is not int or not 0 <= input_index < self._n:
            raise _bad_index(input_index, self._n, "input_index")
        if not isinstance(status, WatermarkStatus):
            raise _bad_status(status)
        self._inputs_idle[input_index] = status.is_idle()
        self._update(output)

    def _update(self, output: WatermarkOutput) -> None:
        was_idle = self._idle
        low = None
        for wm, idle in zip(self._watermarks, self._inputs_idle, strict=True):
            if not idle and (low is None or wm < low):
                low = wm
        if low is None:  # all idle
            if not was_idle:
                self._idle = True
                output.emit_watermark_status(_IDLE)
            return
        if was_idle:
            self._idle = False
            output.emit_watermark_status(_ACTIVE)
        if low > self._combined:
            self._combined = low
            output.emit_watermark(Watermark(low))

    def check_invariants(self) -> None:
        """Assert every invariant (for tests)."""
        if not (self._idle == all(self._inputs_idle)):
            raise AssertionError("invariant broken: self._idle == all(self._inputs_idle)")
        active = [w for w, i in zip(self._watermarks, self._inputs_idle, strict=True) if not i]
        # the combined watermark never lags the min over the active inputs
        if active and min(active) > self._combined:
            raise AssertionError("invariant broken: min(active) <= self._combined")

    def __repr__(self) -> str:
        state = "idle" if self._idle else "active"
        return f"TwoInputWatermarkCombiner(combined={self._combined}, {state})"
