"""Where an operator sends what it produces: records, side-output records, watermarks, statuses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus

if TYPE_CHECKING:
    from sparktide.core.output_tag import OutputTag

__all__ = ["CollectingOutput", "Output"]


class Output(Protocol):
    """The downstream of an operator (the next operator of a chain, an exchange, a sink)."""

    def collect(self, record: StreamRecord) -> None: ...

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None: ...

    def emit_watermark(self, watermark: Watermark) -> None: ...

    def emit_watermark_status(self, status: WatermarkStatus) -> None: ...


class CollectingOutput:
    """Keeps everything in order in lists (main output incl. watermarks, side outputs by tag)."""

    __slots__ = ("elements", "side")

    def __init__(self) -> None:
        self.elements: list[Any] = []
        self.side: dict[OutputTag, list[StreamRecord]] = {}

    def collect(self, record: StreamRecord) -> None:
        self.elements.append(record)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.side.setdefault(tag, []).append(record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.elements.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.elements.append(status)
