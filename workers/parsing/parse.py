"""``parse_answer``: argument checks, preprocessing and dispatch by answer type."""
from __future__ import annotations

import re
from collections.abc import Sequence

from .box import find_boxes, parse_box
from .choice import parse_single
from .echo import remove_echo
from .letters import LETTERS, Choices
from .multi import parse_multi
from .normalise import answer_phrase_contents, find_abstention, has_word_char, norm_text, preprocess
from .structured import find_json_answer
from .types import ANSWER_TYPES, BOX_FORMATS, ParsedAnswer, abstained, answered, clip, unparseable


def _coerce(text: object) -> str:
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", errors="replace")
    return text if isinstance(text, str) else str(text)


def _options(options: Sequence[str] | None) -> tuple[str, ...]:
    return tuple("" if o is None else str(o) for o in (options or ())[: len(LETTERS)])


def _rejecting(rejecting: object, options: tuple[str, ...]) -> str | None:
    if rejecting is None:
        return None
    letter = rejecting.strip().upper() if isinstance(rejecting, str) else ""
    if len(letter) != 1 or letter not in LETTERS or (options and LETTERS.index(letter) >= len(options)):
        raise ValueError(f"rejecting must be the letter of one of the options (or None), not {rejecting!r}")
    return letter


def _clean(raw: str, prompt: object, options: tuple[str, ...]) -> tuple[str, ParsedAnswer | None]:
    """Preprocessed text with the prompt's echo removed, or an "empty" result."""
    if not raw.strip():
        return "", unparseable("empty", "no text")
    clean = preprocess(raw)
    if not clean.strip():
        return "", unparseable("empty", "nothing left after removing reasoning blocks and markup")
    if not has_word_char(clean):
        return "", unparseable("empty", "only punctuation")
    if prompt is not None:
        clean = remove_echo(clean, _coerce(prompt), options)
        if not has_word_char(clean):
            return "", unparseable("empty", "nothing left after removing the prompt's own sentences")
    return clean, None


def parse_short_text(clean: str) -> ParsedAnswer:
    """Free text, normalised; a JSON answer's text, else the content of the last answer phrase."""
    found = find_json_answer(clean) if "{" in clean else None
    if found is not None and isinstance(found.value, str) and found.key != "list":
        phrase = find_abstention(found.value)
        if phrase:
            return abstained(f"abstention {phrase!r} in JSON {found.key}")
        value = norm_text(found.value)
        if has_word_char(value):
            return answered(value, "json", f"JSON {found.key}: {clip(found.value)!r}")
    for _pos, content, _end in reversed(answer_phrase_contents(clean)):
        phrase = find_abstention(content)
        if phrase:
            return abstained(f"abstention {phrase!r} in the answer phrase")
        value = norm_text(content)
        if has_word_char(value):
            return answered(value, "answer_phrase_text", f"{clip(content)!r}")
    phrase = find_abstention(clean)
    if phrase:
        return abstained(f"abstention phrase {phrase!r}")
    value = norm_text(clean)
    if not has_word_char(value):
        return unparseable("empty", "no letters or digits in the answer")
    return answered(value, "free_text", f"{len(value)} characters")


def parse_answer(text: str | None, *, answer_type: str, options: Sequence[str] = (),
                 image_size: tuple[int, int] | None = None, box_format: str = "auto",
                 prompt: str | None = None, rejecting: str | None = None) -> ParsedAnswer:
    """Parse one model response. Never raises for any ``text``; raises ValueError only for an unknown
    ``answer_type`` or ``box_format`` or a ``rejecting`` that is not an option's letter. ``prompt``: the
    prompt as shown (its non-option sentences are removed from the response first); ``rejecting``: the
    letter of the rejecting option of a false/true premise variant. See the package docstring."""
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"unknown answer_type {answer_type!r}; expected one of {', '.join(ANSWER_TYPES)}")
    if box_format not in BOX_FORMATS:
        raise ValueError(f"unknown box_format {box_format!r}; expected one of {', '.join(BOX_FORMATS)}")
    try:
        shown = _options(options)
    except Exception as exc:  # noqa: BLE001 - options that are not a sequence of texts: same contract
        return unparseable("no_match", f"internal parser error: {type(exc).__name__}: {clip(str(exc))}")
    rejecting = _rejecting(rejecting, shown)
    try:
        clean, empty = _clean(_coerce(text), prompt, shown)
        if empty is not None:
            return empty
        if answer_type == "box":
            return parse_box(clean, box_format, image_size)
        if answer_type == "short_text":
            return parse_short_text(clean)
        choices = Choices.of(shown)
        if answer_type == "multi_choice":
            return parse_multi(clean, choices)
        return parse_single(clean, choices, rejecting=rejecting)
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
                          image_size: tuple[int, int] | None = None, box_format: str = "auto",
                          prompt: str | None = None,
                          rejecting: str | None = None) -> tuple[ParsedAnswer, ParsedAnswer]:
    """Parse a joint answer + box response ("B (10, 20, 50, 60)", "Answer: B. Box: [10, 20, 50, 60]"):
    the option exactly as ``parse_answer`` would read the response with every box blanked out, and the
    box exactly as ``parse_answer(answer_type="box")`` reads the whole response (boxes need brackets,
    named corners or four numbers as the whole answer, so option letters are never coordinates). A
    JSON answer is read before the boxes are blanked (``{"answer": "B", "bbox_2d": [...]}`` is B and
    that box). ``prompt`` and ``rejecting`` as for ``parse_answer``. Returns (choice, box); either may be
    unparseable on its own. Never raises for any ``text``."""
    if answer_type not in JOINT_TYPES:
        raise ValueError(f"joint answer + box parsing is for {', '.join(JOINT_TYPES)}, not {answer_type!r}")
    if box_format not in BOX_FORMATS:
        raise ValueError(f"unknown box_format {box_format!r}; expected one of {', '.join(BOX_FORMATS)}")
    try:
        shown = _options(options)
    except Exception as exc:  # noqa: BLE001 - same contract as parse_answer
        failed = unparseable("no_match", f"internal parser error: {type(exc).__name__}: {clip(str(exc))}")
        return failed, failed
    rejecting = _rejecting(rejecting, shown)
    try:
        clean, empty = _clean(_coerce(text), prompt, shown)
        if empty is not None:
            return empty, empty
        box = parse_box(clean, box_format, image_size)
        rest = _without_boxes(clean)
        if not has_word_char(rest):
            choice = unparseable("empty", "only a box, no option")
        else:
            choice = parse_single(re.sub(r"[ \t]+", " ", rest).strip(), Choices.of(shown), rejecting=rejecting,
                                  json_text=clean)
        return choice, box
    except Exception as exc:  # noqa: BLE001 - same contract as parse_answer
        failed = unparseable("no_match", f"internal parser error: {type(exc).__name__}: {clip(str(exc))}")
        return failed, failed
