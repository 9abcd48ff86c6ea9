"""The result type of answer parsing and the fixed vocabularies (outcomes, methods, answer types)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OUTCOMES: tuple[str, ...] = ("answered", "abstained", "unparseable")

#: Every value ``ParsedAnswer.method`` can take; documented in ``workers/parsing/__init__.py``.
METHODS: tuple[str, ...] = (
    # answered (choice types)
    "letter_only", "letter_prefix", "letter_mention", "answer_phrase", "option_text", "yes_no_word",
    "letter_list", "none_selected",
    # answered (box, short text)
    "box_pixel", "box_unit", "box_1000", "box_qwen", "box_json", "free_text",
    # abstained
    "abstain_phrase",
    # unparseable
    "empty", "no_match", "ambiguous", "letter_out_of_range", "degenerate_box", "needs_image_size",
)

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
