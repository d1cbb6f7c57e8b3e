"""The SVG drawing of `kubelet_sim.trace_render`: a header box and a lifeline per lane, then
one arrow per call, top to bottom, a dashed rule where a phase begins.

Self-contained (no script, no external font or style sheet). Sizes come from the text:
text is drawn in a monospace font and measured as ``CHAR_W`` per character; lanes are
spaced so that every label fits between the two lanes its arrow joins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from kubelet_sim.utils.trace import summarize

if TYPE_CHECKING:
    from kubelet_sim.trace_render import Arrow, Lane

FONT_FAMILY = "DejaVu Sans Mono, Menlo, Consolas, monospace"
FONT = 12
CHAR_W = 7.4  # a monospace 12 px character is about 0.6 em
MARGIN, GUTTER, PAD = 20.0, 44.0, 16.0
TITLE_H, HEADER_H, ROW, PHASE_ROW = 26.0, 42.0, 30.0, 28.0
SELF_W, SELF_H = 28.0, 14.0  # the loop of a call a lane makes to itself
INK, RED, MUTED = "#222222", "#c62828", "#777777"
BOX_FILL, BOX_STROKE = "#e8f0fe", "#3c5a99"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def _attr(text: str) -> str:
    return quoteattr(_NOT_XML.sub("\ufffd", text))


def _width(text: str) -> float:
    return len(text) * CHAR_W


def _box_width(lane: Lane) -> float:
    return max(90.0, _width(max(lane.title, lane.subtitle, key=len)) + PAD)


def lane_centres(arrows: Sequence[Arrow], lanes: Sequence[Lane]) -> list[float]:
    """Each lane's x: boxes apart, then widened so that each label fits its arrow (the
    arrows joining near lanes first, a shortfall spread over the gaps an arrow spans)."""
    boxes = [_box_width(lane) for lane in lanes]
    gaps = [(boxes[i] + boxes[i + 1]) / 2 + PAD for i in range(len(lanes) - 1)]
    index = {lane: i for i, lane in enumerate(lanes)}
    needs = []
    for arrow in arrows:
        low, high = sorted((index[arrow.source], index[arrow.target]))
        need = _width(arrow.label) + 2 * PAD
        if low == high and low < len(gaps):
            needs.append((1, low, low + 1, need + SELF_W))
        elif low != high:
            needs.append((high - low, low, high, need))
    for _, low, high, need in sorted(needs):
        short = need - sum(gaps[low:high])
        for k in range(low, high):
            gaps[k] += max(0.0, short) / (high - low)
    x = MARGIN + GUTTER + (boxes[0] / 2 if boxes else 0.0)
    centres = []
    for i in range(len(lanes)):
        centres.append(x)
        x += gaps[i] if i < len(gaps) else 0.0
    return centres


def _arrow(arrow: Arrow, x1: float, x2: float, y: float) -> tuple[str, float]:
    """One call's group (its line, label, number and tooltip) and the height it takes."""
    colour = INK if arrow.status == "ok" else RED
    head = "cross" if arrow.status == "failed" else "head-red" if colour == RED else "head"
    event = arrow.event
    tooltip = (f"{event.phase} #{event.seq}: {event.node} {event.component} → {event.call}: "
               f"{event.result}\n{summarize(event.request)}")
    line_y = y + 18
    common = f'stroke="{colour}" stroke-width="1.4" fill="none" marker-end="url(#{head})"'
    label = (f'paint-order="stroke" stroke="white" stroke-width="4" fill="{colour}"'
             f'>{_text(arrow.label)}</text>')
    if x1 == x2:
        shape = (f'<path d="M{x1:.1f},{line_y:.1f} h{SELF_W} v{SELF_H} h{-SELF_W + 2}" '
                 f'{common}/><text x="{x1 + SELF_W + 6:.1f}" y="{line_y + SELF_H / 2 + 4:.1f}" '
                 f'{label}')
        height = ROW + SELF_H
    else:
        end = x2 - 2 if x2 > x1 else x2 + 2
        shape = (f'<line x1="{x1:.1f}" y1="{line_y:.1f}" x2="{end:.1f}" y2="{line_y:.1f}" '
                 f'{common}/><text x="{(x1 + x2) / 2:.1f}" y="{y + 12:.1f}" '
                 f'text-anchor="middle" {label}')
        height = ROW
    return (f'<g class="call {arrow.status}" data-seq="{event.seq}" '
            f'data-phase={_attr(event.phase)}><title>{_text(tooltip)}</title>'
            f'<text class="seq" x="{MARGIN:.1f}" y="{line_y + 4:.1f}" fill="{MUTED}">'
            f'{event.seq}</text>{shape}</g>'), height


def _lane(lane: Lane, x: float, top: float, bottom: float) -> str:
    half = _box_width(lane) / 2
    subtitle = (f'<text x="{x:.1f}" y="{top + 33:.1f}" text-anchor="middle" fill="{MUTED}">'
                f'{_text(lane.subtitle)}</text>') if lane.subtitle else ""
    title_y = top + (18 if lane.subtitle else 25)
    return (f'<g class="lane" data-title={_attr(lane.title)} data-node={_attr(lane.node)}>'
            f'<line x1="{x:.1f}" y1="{top + HEADER_H:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
            f'stroke="{MUTED}" stroke-dasharray="4 3"/>'
            f'<rect x="{x - half:.1f}" y="{top:.1f}" width="{2 * half:.1f}" '
            f'height="{HEADER_H:.1f}" rx="5" fill="{BOX_FILL}" stroke="{BOX_STROKE}"/>'
            f'<text x="{x:.1f}" y="{title_y:.1f}" text-anchor="middle" font-weight="bold">'
            f'{_text(lane.title)}</text>{subtitle}</g>')



def _phase(name: str, y: float, right: float) -> str:
    return (f'<g class="phase"><line x1="{MARGIN:.1f}" y1="{y + 8:.1f}" x2="{right:.1f}" '
            f'y2="{y + 8:.1f}" stroke="{BOX_STROKE}" stroke-dasharray="6 4"/>'
            f'<text x="{MARGIN + GUTTER:.1f}" y="{y + 22:.1f}" fill="{BOX_STROKE}" '
            f'font-style="italic">{_text(name)}</text></g>')


_DEFS = (
    '<defs>'
    f'<marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" '
    f'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto">'
    f'<path d="M0,0 L10,5 L0,10 z" fill="{INK}"/></marker>'
    f'<marker id="head-red" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" '
    f'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto">'
    f'<path d="M0,0 L10,5 L0,10 z" fill="{RED}"/></marker>'
    f'<marker id="cross" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="11" '
    f'markerHeight="11" markerUnits="userSpaceOnUse" orient="auto">'
    f'<path d="M1,1 L9,9 M1,9 L9,1" stroke="{RED}" stroke-width="2"/></marker>'
    '</defs>')


def render_svg(arrows: Sequence[Arrow], lanes: Sequence[Lane], *, title: str) -> str:
    """The whole diagram as an SVG document."""
    centres = lane_centres(arrows, lanes)
    x_of = dict(zip(lanes, centres, strict=True))
    top = MARGIN + TITLE_H
    y = top + HEADER_H + 10
    right = max([x + _box_width(lane) / 2 for lane, x in x_of.items()]
                + [MARGIN + _width(title)])
    rows: list[str] = []
    phases: list[tuple[float, str]] = []  # where each phase begins: drawn once `right` is known
    phase: str | None = None
    for arrow in arrows:
        if arrow.event.phase != phase:
            phase = arrow.event.phase
            phases.append((y, phase or "calls"))
            right = max(right, MARGIN + GUTTER + _width(phase or "calls"))
            y += PHASE_ROW
        x1, x2 = x_of[arrow.source], x_of[arrow.target]
        row, height = _arrow(arrow, x1, x2, y)
        rows.append(row)
        if x1 == x2:
            right = max(right, x1 + SELF_W + 6 + _width(arrow.label))
        y += height
    if not arrows:
        rows.append(f'<text x="{MARGIN:.1f}" y="{y + 12:.1f}" fill="{MUTED}">(no calls)</text>')
        y += ROW
    bottom = y + 8
    width, height = right + MARGIN, bottom + MARGIN
    body = "".join([*(_lane(lane, x, top, bottom) for lane, x in x_of.items()),
                    *(_phase(name, at, right) for at, name in phases), *rows])
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family={_attr(FONT_FAMILY)} '
        f'font-size="{FONT}">\n<title>{_text(title)}</title>{_DEFS}'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="{MARGIN:.1f}" y="{MARGIN + 12:.1f}" font-weight="bold" font-size="14">'
        f'{_text(title)}</text>\n{body}\n</svg>\n')
