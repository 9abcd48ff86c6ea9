"""The result type of answer parsing and the fixed vocabularies (outcomes, methods, answer types)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OUTCOMES: tuple[str, ...] = ("answered", "abstained", "unparseable")

#: Every value ``ParsedAnswer.method`` can take; documented in ``workers/parsing/__init__.py``.
METHODS: tuple[str, ...] = (
    # answered (choice types)
    "letter_only", "letter_prefix", "letter_mention", "answer_phrase", "answer_phrase_text", "option_text",
    "yes_no_word", "letter_list", "none_selected", "json", "premise_rejection",
    # answered (box, short text)
    "box_pixel", "box_unit", "box_1000", "box_qwen", "box_json", "free_text",
    # abstained
    "abstain_phrase",
    # unparseable
    "empty", "no_match", "ambiguous", "letter_out_of_range", "degenerate_box", "needs_image_size",
)

#: Coarse groups of parse methods, for reporting how each model's answers were read.
FAMILIES: tuple[str, ...] = ("letter", "option_text", "json", "box", "free_text", "abstained", "ambiguous",
                             "unparseable", "error")

_FAMILY_OF: dict[str, str] = {
    "letter_only": "letter", "letter_prefix": "letter", "letter_mention": "letter", "answer_phrase": "letter",
    "letter_list": "letter",
    "option_text": "option_text", "yes_no_word": "option_text", "answer_phrase_text": "option_text",
    "none_selected": "option_text",
    "json": "json",
    "box_pixel": "box", "box_unit": "box", "box_1000": "box", "box_qwen": "box", "box_json": "box",
    "free_text": "free_text", "premise_rejection": "option_text",
    "abstain_phrase": "abstained",
    "ambiguous": "ambiguous",
    "empty": "unparseable", "no_match": "unparseable", "letter_out_of_range": "unparseable",
    "degenerate_box": "unparseable", "needs_image_size": "unparseable",
    "error": "error",  # stored by execution for a failed request; never produced by the parser
}


def method_family(method: str) -> str:
    """The family (one of ``FAMILIES``) of a stored parse method; an unknown method -> "unparseable"."""
    return _FAMILY_OF.get(method, "unparseable") if isinstance(method, str) else "unparseable"

ANSWER_TYPES: tuple[str, ...] = ("single_choice", "yes_no", "multi_choice", "box", "short_text")
BOX_FORMATS: tuple[str, ...] = ("auto", "pixel", "unit", "norm1000")

_DETAIL_MAX = 200


def clip(text: str, limit: int = 60) -> str:
    """A short, single-line excerpt for ``detail`` strings."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class ParsedAnswer:
    """What a model answer was parsed to: an outcome, a value, how, and a short explanation."""

    outcome: str
    value: Any
    method: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}")
        if self.outcome != "answered" and self.value is not None:
            raise ValueError("only an answered outcome carries a value")
        if len(self.detail) > _DETAIL_MAX:
            object.__setattr__(self, "detail", self.detail[: _DETAIL_MAX - 1] + "…")

    def as_dict(self) -> dict:
        """JSON-serialisable form: ``{"outcome", "value", "method", "detail"}``."""
        value = list(self.value) if isinstance(self.value, (list, tuple)) else self.value
        return {"outcome": self.outcome, "value": value, "method": self.method, "detail": self.detail}


def answered(value: Any, method: str, detail: str = "") -> ParsedAnswer:
    return ParsedAnswer("answered", value, method, detail)


def abstained(detail: str = "") -> ParsedAnswer:
    return ParsedAnswer("abstained", None, "abstain_phrase", detail)


def unparseable(method: str, detail: str = "") -> ParsedAnswer:
    return ParsedAnswer("unparseable", None, method, detail)
