"""Prompt text as a model sees it, and the letters of a gold answer (no Django, no PIL).

Layout of every prompt (blank lines omitted where a part is empty)::

    {context line 1}            e.g. an injected earlier answer, "The region of interest is marked ..."
    {context line 2}
    {preamble}                  e.g. a senior colleague's hint
    {question}
    A. {option 1}
    B. {option 2}
    {closing instruction}       one per answer type, see INSTRUCTIONS

Options are lettered A, B, C, ... in the order shown. Yes/no items are shown as options too
("A. yes" / "B. no" in the stored order) and answered by letter, like single-choice items, so one
parser handles both. Box items have no options; their instruction names the image size.
Joint answer + box items (single choice / yes-no items that also ask for the lesion's box,
`with_box=True`) close with JOINT_INSTRUCTION, which names the image size too.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from string import ascii_uppercase
from typing import Any

ANSWER_TYPES = ("single_choice", "yes_no", "multi_choice", "box", "short_text")
CHOICE_TYPES = ("single_choice", "yes_no", "multi_choice")

INSTRUCTIONS = {
    "single_choice": "Answer with the letter of the correct option.",
    "yes_no": "Answer with the letter of the correct option.",
    "multi_choice": "Answer with the letters of all correct options, separated by commas.",
    "box": "Answer with the bounding box as [x0, y0, x1, y1] in pixel coordinates of the image ({w}x{h}).",
    "short_text": "Answer with a short phrase.",
}
JOINT_TYPES = ("single_choice", "yes_no")
JOINT_INSTRUCTION = ("Answer with the letter of the correct option and the box around the lesion as "
                     "(x0, y0, x1, y1) in pixel coordinates of the image ({w}x{h}).")


def letter(index: int) -> str:
    """0 -> "A", 25 -> "Z"; more than 26 options is refused."""
    if not 0 <= index < len(ascii_uppercase):
        raise ValueError(f"no letter for option index {index}")
    return ascii_uppercase[index]


def letters_for(options: Sequence[Any], gold: Any, answer_type: str) -> str | list[str] | None:
    """Letter(s) of `gold` among `options` as shown.

    single_choice / yes_no: one letter; multi_choice: the letters of the gold options in shown
    order; box / short_text: None. A gold that is not among the options is an error.
    """
    if answer_type in ("single_choice", "yes_no"):
        if gold not in options:
            raise ValueError(f"gold {gold!r} is not among the options {list(options)!r}")
        return letter(list(options).index(gold))
    if answer_type == "multi_choice":
        missing = [g for g in gold if g not in options]
        if missing or not gold:
            raise ValueError(f"gold {gold!r} is not a non-empty subset of {list(options)!r}")
        return [letter(i) for i, o in enumerate(options) if o in gold]
    if answer_type in ("box", "short_text"):
        return None
    raise ValueError(f"unknown answer type {answer_type!r}")


def option_line(index: int, text: Any) -> str:
    return f"{letter(index)}. {text}"


def format_prompt(
    question: str,
    options: Sequence[Any],
    *,
    answer_type: str,
    preamble: str = "",
    context_lines: Sequence[str] = (),
    image_size: tuple[int, int] | None = None,
    with_box: bool = False,
) -> str:
    """The full prompt text. `image_size` (w, h) is required for box answers and for `with_box`
    (a single_choice / yes_no item that asks for the option letter and the lesion's box)."""
    if answer_type not in INSTRUCTIONS:
        raise ValueError(f"unknown answer type {answer_type!r}")
    if with_box and answer_type not in JOINT_TYPES:
        raise ValueError(f"with_box needs a single_choice or yes_no item, not {answer_type!r}")
    lines = [c for c in context_lines if c]
    if preamble:
        lines.append(preamble)
    lines.append(question)
    if answer_type in CHOICE_TYPES:
        if not options:
            raise ValueError(f"a {answer_type} item needs options")
        if len(options) > len(ascii_uppercase):
            letter(len(ascii_uppercase))                    # raises: no letter for the 27th option
        lines.extend([f"{mark}. {o}" for mark, o in zip(ascii_uppercase, options)])     # option_line, inlined
    instruction = JOINT_INSTRUCTION if with_box else INSTRUCTIONS[answer_type]
    if answer_type == "box" or with_box:
        if image_size is None:
            raise ValueError("a box prompt needs image_size=(w, h)")
        instruction = _sized(instruction, int(image_size[0]), int(image_size[1]))
    lines.append(instruction)
    return "\n".join(lines)


@lru_cache(maxsize=1024)
def _sized(instruction: str, w: int, h: int) -> str:
    """An instruction with the image size filled in (cached: every variant of an image asks the same)."""
    return instruction.format(w=w, h=h)


def hint_sentence(letters: str | Sequence[str], texts: Sequence[Any]) -> str:
    """'A senior colleague thinks the answer is B. spiculated.' (multi: 'A, C. x; z.')."""
    shown = letters if isinstance(letters, str) else ", ".join(letters)
    body = "; ".join(str(t).rstrip(". ") for t in texts)
    return f"A senior colleague thinks the answer is {shown}. {body}."
