"""``parse_answer``: argument checks, preprocessing and dispatch by answer type."""
from __future__ import annotations

import re
from collections.abc import Sequence

from .box import find_boxes, parse_box
from .choice import parse_single
from .letters import Choices
from .multi import parse_multi
from .normalise import answer_phrase_contents, find_abstention, has_word_char, norm_text, preprocess
from .types import ANSWER_TYPES, BOX_FORMATS, ParsedAnswer, abstained, answered, clip, unparseable


def _coerce(text: object) -> str:
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", errors="replace")
    return text if isinstance(text, str) else str(text)


def parse_short_text(clean: str) -> ParsedAnswer:
    """Free text, normalised; the content of the last answer phrase when there is one."""
    for _pos, content in reversed(answer_phrase_contents(clean)):
        phrase = find_abstention(content)
        if phrase:
            return abstained(f"abstention {phrase!r} in the answer phrase")
        value = norm_text(content)
        if has_word_char(value):
            return answered(value, "answer_phrase", f"{clip(content)!r}")
    phrase = find_abstention(clean)
    if phrase:
        return abstained(f"abstention phrase {phrase!r}")
    value = norm_text(clean)
    if not has_word_char(value):
        return unparseable("empty", "no letters or digits in the answer")
    return answered(value, "free_text", f"{len(value)} characters")


def parse_answer(text: str | None, *, answer_type: str, options: Sequence[str] = (),
                 image_size: tuple[int, int] | None = None, box_format: str = "auto") -> ParsedAnswer:
    """Parse one model response. Never raises for any ``text``; raises ValueError only for an unknown
    ``answer_type`` or ``box_format``. See the package docstring for the rules."""
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"unknown answer_type {answer_type!r}; expected one of {', '.join(ANSWER_TYPES)}")
    if box_format not in BOX_FORMATS:
        raise ValueError(f"unknown box_format {box_format!r}; expected one of {', '.join(BOX_FORMATS)}")
    try:
        raw = _coerce(text)
        if not raw.strip():
            return unparseable("empty", "no text")
        clean = preprocess(raw)
        if not clean.strip():
            return unparseable("empty", "nothing left after removing reasoning blocks and markup")
        if not has_word_char(clean):
            return unparseable("empty", "only punctuation")
        if answer_type == "box":
            return parse_box(clean, box_format, image_size)
        if answer_type == "short_text":
            return parse_short_text(clean)
        choices = Choices.of(options or ())
        if answer_type == "multi_choice":
            return parse_multi(clean, choices)
        return parse_single(clean, choices)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"; the detail makes it visible
        return unparseable("no_match", f"internal parser error: {type(exc).__name__}: {clip(str(exc))}")


JOINT_TYPES = ("single_choice", "yes_no")


def _without_boxes(clean: str) -> str:
    """``clean`` with every box the box parser finds blanked (so coordinates never read as letters)."""
    spans = sorted((c.start, c.start + len(c.shown)) for c in find_boxes(clean))
    if not spans:
        return clean
    parts, pos = [], 0
    for start, end in spans:
        if start < pos:
            continue
        parts.append(clean[pos:start])
        parts.append(" " * (end - start))
        pos = end
    parts.append(clean[pos:])
    return "".join(parts)


def parse_answer_with_box(text: str | None, *, answer_type: str, options: Sequence[str] = (),
                          image_size: tuple[int, int] | None = None,
                          box_format: str = "auto") -> tuple[ParsedAnswer, ParsedAnswer]:
    """Parse a joint answer + box response ("B (10, 20, 50, 60)", "Answer: B. Box: [10, 20, 50, 60]"):
    the option exactly as ``parse_answer`` would read the response with every box blanked out, and the
    box exactly as ``parse_answer(answer_type="box")`` reads the whole response (boxes need brackets,
    named corners or four numbers as the whole answer, so option letters are never coordinates).
    Returns (choice, box); either may be unparseable on its own. Never raises for any ``text``."""
    if answer_type not in JOINT_TYPES:
        raise ValueError(f"joint answer + box parsing is for {', '.join(JOINT_TYPES)}, not {answer_type!r}")
    if box_format not in BOX_FORMATS:
        raise ValueError(f"unknown box_format {box_format!r}; expected one of {', '.join(BOX_FORMATS)}")
    try:
        raw = _coerce(text)
        if not raw.strip():
            empty = unparseable("empty", "no text")
            return empty, empty
        clean = preprocess(raw)
        if not clean.strip() or not has_word_char(clean):
            empty = unparseable("empty", "nothing left after removing reasoning blocks and markup")
            return empty, empty
        box = parse_box(clean, box_format, image_size)
        rest = _without_boxes(clean)
        if not has_word_char(rest):
            choice = unparseable("empty", "only a box, no option")
        else:
            choice = parse_single(re.sub(r"[ \t]+", " ", rest).strip(), Choices.of(options or ()))
        return choice, box
    except Exception as exc:  # noqa: BLE001 - same contract as parse_answer
        failed = unparseable("no_match", f"internal parser error: {type(exc).__name__}: {clip(str(exc))}")
        return failed, failed
