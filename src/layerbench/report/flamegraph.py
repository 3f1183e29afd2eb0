"""Flame graphs as self-contained SVG: one profile, or one against a baseline (a differential graph).

The root ("all") is at the bottom, each process's name above it, then its frames from the root
of its call chain up to the leaf. A frame's width is its share of the samples; frames at one
level are sorted by name, so two graphs of similar profiles line up. Frames narrower than
``MIN_SHARE`` are left out (their parent's width still counts them). Hovering a frame shows its
name, samples and share; there is no script.

A differential graph has the profile's shape, each frame coloured by how its share moved against
the baseline's same frame on the same call path: red grew, blue shrank, white stayed. Frames the
baseline has and the profile lacks are not drawn (there is no width to draw them with).
"""

from __future__ import annotations

import colorsys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from layerbench.analysis.flame import KERNEL_SUFFIX, Profile

MIN_SHARE = 0.001  # 0.1%: 1 px at 1000 px, below which a frame can neither be seen nor hovered
FRAME_HEIGHT = 16
FONT_SIZE = 11
CHAR_WIDTH = 0.6 * FONT_SIZE  # a monospace font's advance, roughly: labels are cut to fit with it
PAD = 10
TOP = 44  # room for the title and the legend
DIFF_SATURATION_POINTS = 5.0  # at least: the largest change drawn at full colour (never noise at full)
# Characters XML 1.0 forbids (C0 controls but tab, newline, return); perf passes symbols through as they are.
_INVALID_XML = {c: None for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass(frozen=True)
class _Frame:
    name: str
    depth: int
    x: float  # in samples from the left edge
    count: int
    base_share: float | None  # the same path's share in the baseline, for a differential graph


def svg(profile: Profile, title: str, *, base: Profile | None = None, width: int = 1200) -> str:
    """``profile`` as a flame graph; with ``base``, coloured by growth against it."""
    frames = list(_frames(_tree(profile), _tree(base) if base is not None else None, profile, base))
    depth = max((f.depth for f in frames), default=0)
    height = TOP + (depth + 1) * FRAME_HEIGHT + PAD
    scale = (width - 2 * PAD) / profile.total if profile.total else 0.0
    fills = _diff_fills(frames, profile.total) if base is not None else [_warm(f) for f in frames]
    body = [_frame_svg(f, fill, profile.total, scale, height) for f, fill in zip(frames, fills, strict=True)]
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="{FONT_SIZE}" '
            'style="background:#ffffff">',
            f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-size="15">{_text(title)}</text>',
            f'<text x="{PAD}" y="36" fill="#555555">{_text(_legend(profile, base))}</text>',
            *body,
            "</svg>",
            "",
        ]
    )


def _legend(profile: Profile, base: Profile | None) -> str:
    if profile.total == 0:
        return "no samples"
    what = f"{profile.total} samples; width is each frame's share"
    if base is None:
        return f"{what}; kernel frames (_[k]) in blue-green"
    return f"{what}; against {base.total} baseline samples: red grew, blue shrank, white unchanged"


def _tree(profile: Profile) -> _Node:
    root = _Node("all")
    for stack, count in profile.stacks.items():
        root.count += count
        node = root
        for name in stack.split(";"):
            node = node.children.setdefault(name, _Node(name))
            node.count += count
    return root


def _frames(node: _Node, base: _Node | None, profile: Profile, base_profile: Profile | None) -> Iterator[_Frame]:
    """Every frame wide enough to draw, depth first, children left to right by name."""
    if profile.total == 0:
        return
    stack: list[tuple[_Node, _Node | None, int, float]] = [(node, base, 0, 0.0)]
    while stack:
        current, twin, depth, x = stack.pop()
        base_share = None
        if base_profile is not None:
            base_share = twin.count / base_profile.total if twin is not None and base_profile.total else 0.0
        yield _Frame(current.name, depth, x, current.count, base_share)
        children: list[tuple[_Node, _Node | None, int, float]] = []
        offset = x
        for name in sorted(current.children):
            child = current.children[name]
            if child.count / profile.total >= MIN_SHARE:
                children.append((child, twin.children.get(name) if twin else None, depth + 1, offset))
            offset += child.count
        stack.extend(reversed(children))  # popped left to right


def _frame_svg(frame: _Frame, fill: str, total: int, scale: float, height: int) -> str:
    x = PAD + frame.x * scale
    y = height - PAD - (frame.depth + 1) * FRAME_HEIGHT
    w = frame.count * scale
    share = frame.count / total
    tip = f"{frame.name} — {frame.count} samples, {100 * share:.2f}%"
    if frame.base_share is not None:
        points = 100 * (share - frame.base_share)
        tip += f" (baseline {100 * frame.base_share:.2f}%, {points:+.2f} points)"
    rect = (
        f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME_HEIGHT - 1}" fill="{fill}" '
        f'stroke="{_stroke(frame)}" stroke-width="0.5" rx="1"/>'
    )
    label = _label(frame.name, w)
    text = f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">{_text(label)}</text>' if label else ""
    return f"<g><title>{_text(tip)}</title>{rect}{text}</g>"


def _stroke(frame: _Frame) -> str:
    # A differential graph's unchanged frames are near white: a grey edge keeps them apart.
    return "#ffffff" if frame.base_share is None else "#c0c0c0"


def _label(name: str, width: float) -> str:
    fits = int((width - 6) / CHAR_WIDTH)
    if fits < 3:
        return ""
    return name if len(name) <= fits else name[: fits - 2] + ".."


def _text(value: str) -> str:
    return escape(value.translate(_INVALID_XML), {'"': "&quot;"})


def _rgb(hue: float, lightness: float, saturation: float) -> str:
    r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
    return f"rgb({round(255 * r)},{round(255 * g)},{round(255 * b)})"


def _warm(frame: _Frame) -> str:
    """Reds to yellows for user space, blue-greens for the kernel, greys for the root and processes;
    the shade from a hash of the name (crc32: the same in every run, unlike ``hash``)."""
    if frame.depth <= 1:
        return _rgb(0.0, 0.78, 0.0)
    spread = zlib.crc32(frame.name.encode()) / 0xFFFFFFFF
    if frame.name.endswith(KERNEL_SUFFIX):
        return _rgb((165 + 25 * spread) / 360, 0.62, 0.45)
    return _rgb((55 * spread) / 360, 0.6, 0.85)


def _diff_fills(frames: list[_Frame], total: int) -> list[str]:
    changes = [f.count / total - (f.base_share or 0.0) for f in frames]
    # Scaled to the largest change, but never below DIFF_SATURATION_POINTS, so that when nothing
    # moved much nothing is drawn in full colour.
    largest = max([abs(c) for c in changes] + [DIFF_SATURATION_POINTS / 100])
    return [_diff_colour(change / largest) for change in changes]


def _diff_colour(change: float) -> str:
    """-1 (shrank the most) → blue, 0 → near white, +1 (grew the most) → red."""
    fade = round(225 * min(abs(change), 1.0))
    if change > 0:
        return f"rgb(250,{250 - fade},{250 - fade})"
    return f"rgb({250 - fade},{250 - fade},250)"
