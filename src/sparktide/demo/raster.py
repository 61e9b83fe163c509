"""A tiny RGB canvas that writes PNG: rectangles, axis-aligned lines, markers and 5x7 text.

Enough for charts whose marks are all axis-aligned (steps, bands, points), with no dependency
beyond numpy and the standard library; the bytes depend only on the drawing calls.

>>> c = Canvas(40, 20)
>>> c.rect(0, 0, 40, 20, (255, 255, 255))
>>> c.text(2, 2, "OK 42", (0, 0, 0))
>>> png = c.to_png()
>>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n", len(png) > 60
(True, True)
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["Canvas", "Color", "text_width"]

Color = tuple[int, int, int]

# 5x7 glyphs, one string of 7 rows per character ("#" = ink); lowercase prints as uppercase
_GLYPHS: dict[str, str] = {
    " ": ".....|.....|.....|.....|.....|.....|.....",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "#####|...#.|..#..|...#.|....#|#...#|.###.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#",
    "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.",
    "D": "###..|#..#.|#...#|#...#|#...#|#..#.|###..",
    "E": "#####|#....|#....|####.|#....|#....|#####",
    "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####",
    "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.",
    "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#",
    "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#",
    "N": "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.",
    "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#",
    "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.",
    "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.",
    "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.",
    "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..",
    "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    ";": ".....|.##..|.##..|.....|.##..|..#..|.#...",
    "-": ".....|.....|.....|#####|.....|.....|.....",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    "/": ".....|....#|...#.|..#..|.#...|#....|.....",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "[": ".###.|.#...|.#...|.#...|.#...|.#...|.###.",
    "]": ".###.|...#.|...#.|...#.|...#.|...#.|.###.",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.",
    ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
    "%": "##...|##..#|...#.|..#..|.#...|#..##|...##",
    "'": "..#..|..#..|.#...|.....|.....|.....|.....",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "#": ".#.#.|.#.#.|#####|.#.#.|#####|.#.#.|.#.#.",
    "|": "..#..|..#..|..#..|..#..|..#..|..#..|..#..",
    "*": ".....|..#..|#.#.#|.###.|#.#.#|..#..|.....",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
    "!": "..#..|..#..|..#..|..#..|..#..|.....|..#..",
    "&": ".##..|#..#.|#.#..|.#...|#.#.#|#..#.|.##.#",
}

_FONT: dict[str, np.ndarray] = {
    ch: np.array([[c == "#" for c in row] for row in rows.split("|")], dtype=bool)
    for ch, rows in _GLYPHS.items()
}
_UNKNOWN = np.ones((7, 5), dtype=bool)


def text_width(s: str, scale: int = 1) -> int:
    """Width in pixels of ``s`` drawn at ``scale`` (6 columns per character, less the last
    gap).

    >>> text_width("AB", 2)
    22
    """
    return max(0, len(s) * 6 * scale - scale)


class Canvas:
    """An RGB image of ``width`` x ``height`` pixels, white, with ``(0, 0)`` at the top left.
    Coordinates outside the image are clipped."""

    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)) -> None:
        if type(width) is not int or type(height) is not int or width < 1 or height < 1:
            raise ValueError(
                f"width and height must be ints >= 1 (pixels), got {width!r} x {height!r}"
            )
        self.width, self.height = width, height
        self.pixels = np.empty((height, width, 3), dtype=np.uint8)
        self.pixels[:, :] = background

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
        """Fill the rectangle ``[x0, x1) x [y0, y1)`` (corners in any order)."""
        xa, xb = sorted((round(x0), round(x1)))
        ya, yb = sorted((round(y0), round(y1)))
        xa, xb = max(xa, 0), min(xb, self.width)
        ya, yb = max(ya, 0), min(yb, self.height)
        if xa < xb and ya < yb:
            self.pixels[ya:yb, xa:xb] = color

    def blend_rect(
        self, x0: float, y0: float, x1: float, y1: float, color: Color, alpha: float
    ) -> None:
        """Fill a rectangle with ``color`` at opacity ``alpha`` (0..1) over what is there."""
        xa, xb = sorted((max(round(x0), 0), min(round(x1), self.width)))
        ya, yb = sorted((max(round(y0), 0), min(round(y1), self.height)))
        if xa < xb and ya < yb:
            area = self.pixels[ya:yb, xa:xb].astype(np.float32)
            area += (np.array(color, dtype=np.float32) - area) * alpha
            self.pixels[ya:yb, xa:xb] = area.round().astype(np.uint8)

    def hline(self, x0: float, x1: float, y: float, color: Color, width: int = 1) -> None:
        """A horizontal line from ``x0`` to ``x1`` (inclusive) at ``y``."""
        xa, xb = sorted((round(x0), round(x1)))
        top = round(y) - (width - 1) // 2
        self.rect(xa, top, xb + 1, top + width, color)

    def vline(self, x: float, y0: float, y1: float, color: Color, width: int = 1) -> None:
        """A vertical line from ``y0`` to ``y1`` (inclusive) at ``x``."""
        ya, yb = sorted((round(y0), round(y1)))
        left = round(x) - (width - 1) // 2
        self.rect(left, ya, left + width, yb + 1, color)

    def dashed_vline(self, x: float, y0: float, y1: float, color: Color, dash: int = 4) -> None:
        ya, yb = sorted((round(y0), round(y1)))
        for y in range(ya, yb + 1, 2 * dash):
            self.rect(round(x), y, round(x) + 1, min(y + dash, yb + 1), color)

    def marker(self, x: float, y: float, color: Color, shape: str = "dot", size: int = 2) -> None:
        """A point mark centred at ``(x, y)``: ``dot`` (filled disc), ``square``, ``cross``
        (an x) or ``ring``."""
        cx, cy = round(x), round(y)
        r = size
        ys, xs = np.mgrid[-r : r + 1, -r : r + 1]
        if shape == "dot":
            mask = xs * xs + ys * ys <= r * r + r
        elif shape == "ring":
            d = xs * xs + ys * ys
            mask = (d <= r * r + r) & (d >= (r - 1) * (r - 1))
        elif shape == "square":
            mask = np.ones_like(xs, dtype=bool)
        elif shape == "cross":
            thick = 1 if r > 2 else 0
            mask = (np.abs(xs - ys) <= thick) | (np.abs(xs + ys) <= thick)
        else:
            raise ValueError(
                f"shape must be one of 'dot', 'ring', 'square', 'cross', got {shape!r}"
            )
        self._stamp(cx - r, cy - r, mask, color)

    def text(self, x: float, y: float, s: str, color: Color, scale: int = 1) -> None:
        """Draw ``s`` with its top-left corner at ``(x, y)``; characters without a glyph print
        as a filled box."""
        cx = round(x)
        for ch in s:
            glyph = _FONT.get(ch.upper(), _UNKNOWN)
            if scale > 1:
                glyph = np.kron(glyph, np.ones((scale, scale), dtype=bool))
            self._stamp(cx, round(y), glyph, color)
            cx += 6 * scale

    def vtext(self, x: float, y: float, s: str, color: Color, scale: int = 1) -> None:
        """Draw ``s`` rotated a quarter turn counter-clockwise, bottom-up from ``(x, y)`` (its
        lower-left corner)."""
        w = text_width(s, scale)
        scratch = Canvas(max(w, 1), 7 * scale, (0, 0, 0))
        scratch.text(0, 0, s, (255, 255, 255), scale)
        mask = np.rot90(scratch.pixels[:, :, 0] > 0)
        self._stamp(round(x), round(y) - w, mask, color)

    def _stamp(self, x: int, y: int, mask: np.ndarray, color: Color) -> None:
        h, w = mask.shape
        xa, ya = max(x, 0), max(y, 0)
        xb, yb = min(x + w, self.width), min(y + h, self.height)
        if xa >= xb or ya >= yb:
            return
        sub = mask[ya - y : yb - y, xa - x : xb - x]
        self.pixels[ya:yb, xa:xb][sub] = color

    def to_png(self) -> bytes:
        """The image as PNG bytes (8-bit RGB, no interlace)."""
        raw = np.zeros((self.height, 1 + 3 * self.width), dtype=np.uint8)
        raw[:, 1:] = self.pixels.reshape(self.height, -1)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"".join(
            [
                b"\x89PNG\r\n\x1a\n",
                _chunk(b"IHDR", header),
                _chunk(b"IDAT", zlib.compress(raw.tobytes(), 9)),
                _chunk(b"IEND", b""),
            ]
        )

    def save(self, path: str | Path) -> Path:
        """Write the PNG to ``path`` (parent directories must exist); returns the path."""
        target = Path(path)
        target.write_bytes(self.to_png())
        return target


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
