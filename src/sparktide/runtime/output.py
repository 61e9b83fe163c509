"""Where an operator sends what it produces: records, side-output records, watermarks, statuses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus

if TYPE_CHECKING:
    from sparktide.core.output_tag import OutputTag

__all__ = ["CollectingOutput", "Output", "WatermarkOutput"]


class WatermarkOutput(Protocol):
    """Where watermarks and watermark statuses go (what a watermark valve emits to)."""

    def emit_watermark(self, watermark: Watermark) -> None: ...

    def emit_watermark_status(self, status: WatermarkStatus) -> None: ...


class Output(WatermarkOutput, Protocol):
    """The downstream of an operator (the next operator of a chain, an exchange, a sink)."""

    def collect(self, record: StreamRecord[object]) -> None: ...

    def collect_side(self, tag: OutputTag, record: StreamRecord[object]) -> None: ...


class CollectingOutput:
    """Keeps everything in order in lists (main output incl. watermarks, side outputs by tag)."""

    __slots__ = ("elements", "side")

    def __init__(self) -> None:
        self.elements: list[StreamRecord[object] | Watermark | WatermarkStatus] = []
        self.side: dict[OutputTag, list[StreamRecord[object]]] = {}

    def collect(self, record: StreamRecord[object]) -> None:
        self.elements.append(record)

    def collect_side(self, tag: OutputTag, record: StreamRecord[object]) -> None:
        self.side.setdefault(tag, []).append(record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.elements.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.elements.append(status)
