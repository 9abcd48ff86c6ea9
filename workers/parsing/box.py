"""Bounding-box answers: find the box, decide its scale, convert to pixel [x0, y0, x1, y1]."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .normalise import QUOTES, answer_phrase_contents, find_abstention
from .types import ParsedAnswer, abstained, answered, clip, unparseable

_N = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_S = r"(?:[ \t]*[,;][ \t]*|[ \t\n]+)"
_NUM = re.compile(_N)
_QUAD = rf"[\[\(][ \t]*({_N}){_S}({_N}){_S}({_N}){_S}({_N})[ \t]*[\]\)]"
_TOKENS = re.compile(r"<\|box_start\|>(.{0,200}?)<\|box_end\|>|<box>(.{0,200}?)</box>", re.DOTALL | re.IGNORECASE)
_JSON = re.compile(
    r"[\"']?(?:bbox_2d|bbox|box_2d|box|bounding_box|bounding box|coordinates|coords)[\"']?[ \t]*[:=][ \t]*" + _QUAD,
    re.IGNORECASE,
)
_GAP = r"[\s,;'\"{}]{0,8}"


def _kv(key: str) -> str:
    return rf"[\"']?(?P<{key}>{{}})[\"']?[ \t]*[:=][ \t]*(?P<v{key}>{_N})"


_NAMED = re.compile(
    r"(?<![A-Za-z0-9_])"
    + _kv("a").format(r"x_?0|x_?min|x_?1|left") + _GAP
    + _kv("b").format(r"y_?0|y_?min|y_?1|top") + _GAP
    + _kv("c").format(r"x_?1|x_?max|x_?2|right") + _GAP
    + _kv("d").format(r"y_?1|y_?max|y_?2|bottom"),
    re.IGNORECASE,
)
_POINTS = re.compile(
    rf"[\[\(][ \t]*({_N}){_S}({_N})[ \t]*[\]\)][ \t]*(?:(?:,|;|to|and|-)[ \t]*)?"
    rf"[\[\(][ \t]*({_N}){_S}({_N})[ \t]*[\]\)]",
    re.IGNORECASE,
)
_QUAD_RE = re.compile(_QUAD)
_BARE = re.compile(rf"[\[\(]?[ \t]*({_N}){_S}({_N}){_S}({_N}){_S}({_N})[ \t]*[\]\)]?[ \t]*\.?")
_PHRASE_REACH = 300


@dataclass(frozen=True)
class Candidate:
    start: int
    raw: tuple[float, float, float, float]
    syntax: str  # "token" (Qwen / <box>), "json", "plain"
    shown: str


def _floats(values) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in values)
    return x0, y0, x1, y1


def find_boxes(text: str) -> list[Candidate]:
    """Every box in the text, in order of position. Patterns are tried from the most specific
    (Qwen tokens, JSON keys, named corners, point pairs) to plain quads; matched spans are blanked so
    that no box is found twice."""
    found: list[Candidate] = []
    work = text

    def take(pattern: re.Pattern, extract) -> None:
        nonlocal work

        def repl(m: re.Match) -> str:
            got = extract(m)
            if got is not None:
                found.append(Candidate(m.start(), got[0], got[1], m.group(0)))
                return " " * (m.end() - m.start())
            return m.group(0)

        work = pattern.sub(repl, work)

    def token(m: re.Match):
        nums = _NUM.findall(m.group(1) if m.group(1) is not None else m.group(2))
        return (_floats(nums), "token") if len(nums) == 4 else None

    def named(m: re.Match):
        if m.group("a").replace("_", "").lower() == m.group("c").replace("_", "").lower():
            return None
        syntax = "json" if '"' in m.group(0) else "plain"
        return _floats(m.group("va", "vb", "vc", "vd")), syntax

    take(_TOKENS, token)
    take(_JSON, lambda m: (_floats(m.groups()), "json" if m.group(0)[:1] in "\"'" else "plain"))
    take(_NAMED, named)
    take(_POINTS, lambda m: (_floats(m.groups()), "plain"))
    take(_QUAD_RE, lambda m: (_floats(m.groups()), "plain"))
    found.sort(key=lambda c: c.start)
    return found


def _valid_size(image_size) -> tuple[float, float] | None:
    try:
        w, h = (float(v) for v in image_size)
    except (TypeError, ValueError):
        return None
    return (w, h) if math.isfinite(w) and math.isfinite(h) and w > 0 and h > 0 else None


def _scale(c: Candidate, box_format: str, size: tuple[float, float] | None) -> str:
    """"pixel", "unit" or "1000" for a candidate (explicit box_format wins; see the docstring)."""
    if box_format != "auto":
        return {"pixel": "pixel", "unit": "unit", "norm1000": "1000"}[box_format]
    if c.syntax == "token":
        return "1000"
    if all(0.0 <= v <= 1.0 for v in c.raw):
        return "unit"
    if size is not None and all(v <= 1000.0 for v in c.raw):
        x0, y0, x1, y1 = c.raw
        if max(x0, x1) > size[0] or max(y0, y1) > size[1]:
            return "1000"
    return "pixel"


_METHOD = {"pixel": "box_pixel", "unit": "box_unit", "1000": "box_1000"}


def to_pixels(c: Candidate, box_format: str, image_size, how: str = "") -> ParsedAnswer:
    """Scale, order the corners and check the area of one candidate."""
    size = _valid_size(image_size) if image_size is not None else None
    scale = _scale(c, box_format, size)
    method = "box_qwen" if c.syntax == "token" else "box_json" if c.syntax == "json" else _METHOD[scale]
    shown = f"{clip(c.shown, 80)!r}{how}"
    if not all(math.isfinite(v) for v in c.raw):
        return unparseable("degenerate_box", f"non-finite coordinate in {shown}")
    x0, y0, x1, y1 = c.raw
    if scale != "pixel":
        if size is None:
            return unparseable("needs_image_size", f"{shown} is in {scale} coordinates but the image size is unknown")
        div = 1.0 if scale == "unit" else 1000.0
        x0, x1 = x0 / div * size[0], x1 / div * size[0]
        y0, y1 = y0 / div * size[1], y1 / div * size[1]
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    box = [round(v, 4) + 0.0 for v in (x0, y0, x1, y1)]
    if not all(math.isfinite(v) for v in box):
        return unparseable("degenerate_box", f"non-finite coordinate after scaling {shown}")
    if box[0] == box[2] or box[1] == box[3]:
        return unparseable("degenerate_box", f"zero-area box {shown}")
    return answered(box, method, f"{shown}, scale={scale}")


def parse_box(clean: str, box_format: str, image_size) -> ParsedAnswer:
    """Parse a cleaned box response (see the package docstring, "Boxes")."""
    phrases = answer_phrase_contents(clean)
    candidates = find_boxes(clean)
    if not candidates:
        for pos, content, _end in reversed(phrases):
            m = _BARE.fullmatch(content.strip(QUOTES))
            if m:
                return to_pixels(Candidate(pos, _floats(m.groups()), "plain", content), box_format, image_size,
                                 " (answer phrase)")
        m = _BARE.fullmatch(clean.strip(QUOTES))
        if m:
            return to_pixels(Candidate(0, _floats(m.groups()), "plain", clean), box_format, image_size)
        phrase = find_abstention(clean)
        if phrase:
            return abstained(f"abstention phrase {phrase!r}")
        count = len(_NUM.findall(clean[:5000]))
        return unparseable("no_match", f"no box of four coordinates ({count} number(s) in the text)")
    distinct = {(c.raw, c.syntax == "token") for c in candidates}
    if len(distinct) == 1:
        return to_pixels(candidates[-1], box_format, image_size)
    for pos, _content, _end in reversed(phrases):
        after = [c for c in candidates if pos <= c.start <= pos + _PHRASE_REACH]
        if after:
            return to_pixels(after[0], box_format, image_size, " (answer phrase)")
    shown = "; ".join(clip(c.shown, 40) for c in candidates[:3])
    return unparseable("ambiguous", f"{len(distinct)} different boxes and no answer phrase: {shown}")
