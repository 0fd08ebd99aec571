"""The app package's icons, drawn in code (no image files, no imaging library): a white
speech bubble on the accent colour (color.png, 192×192) and the same bubble as a white
outline on transparency (outline.png, 32×32, as Teams requires for the outline icon)."""

from __future__ import annotations

import struct
import zlib
from typing import Callable

Pixel = tuple[int, int, int, int]


def png(width: int, height: int, pixel: Callable[[int, int], Pixel]) -> bytes:
    """An 8-bit RGBA PNG (filter 0 on every row)."""
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def _in_bubble(u: float, v: float, inset: float = 0.0) -> bool:
    """Is (u, v) in [0,1]² inside the bubble (a rounded box with a tail), shrunk by `inset`?"""
    left, top, right, bottom, radius = 0.18 + inset, 0.22 + inset, 0.82 - inset, 0.66 - inset, 0.12
    if left <= u <= right and top <= v <= bottom:
        cx = min(max(u, left + radius), right - radius)
        cy = min(max(v, top + radius), bottom - radius)
        return (u - cx) ** 2 + (v - cy) ** 2 <= radius ** 2 or (left + radius <= u <= right - radius) \
            or (top + radius <= v <= bottom - radius)
    # the tail: a triangle below the box's lower left
    t0, t1, tip = 0.30 + inset, 0.48 - inset, (0.26 + inset, 0.82 - inset * 2)
    if bottom <= v <= tip[1]:
        f = (v - bottom) / max(tip[1] - bottom, 1e-6)
        return t0 + (tip[0] - t0) * f <= u <= t1 + (tip[0] - t1) * f
    return False


def hex_rgb(color: str) -> tuple[int, int, int]:
    color = color.lstrip("#")
    return int(color[0:2], 16), int(color[2:4], 16), int(color[4:6], 16)


def color_icon(accent: str, size: int = 192) -> bytes:
    r, g, b = hex_rgb(accent)

    def pixel(x: int, y: int) -> Pixel:
        u, v = (x + 0.5) / size, (y + 0.5) / size
        return (255, 255, 255, 255) if _in_bubble(u, v) else (r, g, b, 255)

    return png(size, size, pixel)


def outline_icon(size: int = 32) -> bytes:
    stroke = 2.0 / size

    def pixel(x: int, y: int) -> Pixel:
        u, v = (x + 0.5) / size, (y + 0.5) / size
        edge = _in_bubble(u, v) and not _in_bubble(u, v, inset=stroke)
        return (255, 255, 255, 255) if edge else (0, 0, 0, 0)

    return png(size, size, pixel)
