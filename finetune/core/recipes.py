"""Training examples per recipe, from plain facts about chains and variants (no Django, no torch).

An example is one image and one or more (prompt, target) turns. Prompts are exactly what the
evaluation shows a model (the clean variant's prompt), so what is learned is what is scored.

- ``stepwise``: one example per chain, its stages in reading order as turns of one conversation;
  every answer carries its evidence box ("B\\nEvidence: [x0, y0, x1, y1]"), where the step has one.
- ``answer_only``: the same items, each on its own (no earlier steps in context), the answer alone.
- ``mixed``: the stepwise examples plus one single-turn example per adversarial variant (visual cues,
  hints, premises, ablations ...) of those items, answered with the variant's expected answer.

Equal budgets are set in tokens, not examples (`trainer.TrainConfig.tokens_per_step`): a step of any
recipe processes the same number of tokens, so answer-only sees more items per step than stepwise.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

RECIPES = ("stepwise", "answer_only", "mixed")
ANSWER_STYLES = ("letter", "text")
RECIPE_LABELS = {
    "stepwise": "stepwise (the chain's stages in order, each answer with its evidence box)",
    "answer_only": "answer only (the same items, answers alone)",
    "mixed": "mixed (stepwise + adversarial variants with their correct answers)",
}


class RecipeError(ValueError):
    """An unknown recipe, or facts a recipe cannot use."""


@dataclass(frozen=True)
class StepFacts:
    """One QA item as shown in evaluation: its clean prompt, answer type, expected answer, evidence box."""

    item_id: int
    step: int
    stage: int
    prompt: str
    answer_type: str
    expected: dict
    evidence_box: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class VariantFacts:
    """An adversarial variant of an item: its prompt, the image it is shown with, its expected answer."""

    variant_id: int
    item_id: int
    kind: str
    prompt: str
    answer_type: str
    expected: dict
    image: str


@dataclass(frozen=True)
class ChainFacts:
    chain_id: int
    image: str
    steps: tuple[StepFacts, ...]
    variants: tuple[VariantFacts, ...] = ()


@dataclass(frozen=True)
class Example:
    """One training sequence: an image path and its (prompt, target) turns."""

    image: str
    turns: tuple[tuple[str, str], ...]
    source: str                      # "chain:12", "item:40", "variant:311"
    items: tuple[int, ...] = field(default=())


def _box_text(box: Sequence[float] | None) -> str:
    return "[" + ", ".join(str(int(round(float(v)))) for v in box) + "]" if box else ""


def answer_text(answer_type: str, expected: dict, style: str = "letter") -> str:
    """The answer a model is scored right for, written the way the prompt asks for it.

    Choice and yes/no items: the letter(s) as shown (style "text": the option text(s) instead, which the
    answer parser scores like the letter - for models too small to learn to bind letters to options); box
    items: "[x0, y0, x1, y1]"; joint answer + box items: the answer then "(x0, y0, x1, y1)"; short text:
    the value."""
    expected = expected or {}
    if style not in ANSWER_STYLES:
        raise RecipeError(f"unknown answer style {style!r}; choose one of {', '.join(ANSWER_STYLES)}")
    if answer_type == "box":
        return _box_text(expected.get("value"))
    letters = expected.get("letter")
    if answer_type in ("single_choice", "yes_no", "multi_choice"):
        if not letters:
            raise RecipeError(f"expected answer {expected!r} has no letter")
        shown = expected.get("value") if style == "text" else letters
        text = ", ".join(map(str, shown)) if isinstance(shown, list) else str(shown)
        box = expected.get("evidence_box") if expected.get("answer_with_box") else None
        if box:
            text += " (" + ", ".join(str(int(round(float(v)))) for v in box) + ")"
        return text
    value = expected.get("value")
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _stepwise_target(step: StepFacts, style: str) -> str:
    text = answer_text(step.answer_type, step.expected, style)
    joint_box = step.expected.get("answer_with_box") and step.expected.get("evidence_box")
    if step.evidence_box and step.answer_type != "box" and not joint_box:
        text += "\nEvidence: " + _box_text(step.evidence_box)
    return text


def build_examples(recipe: str, chains: Iterable[ChainFacts], answer_style: str = "letter") -> list[Example]:
    """The examples of `recipe` over `chains`, in chain order (the trainer shuffles with its seed)."""
    if recipe not in RECIPES:
        raise RecipeError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    if answer_style not in ANSWER_STYLES:
        raise RecipeError(f"unknown answer style {answer_style!r}; choose one of {', '.join(ANSWER_STYLES)}")
    out: list[Example] = []
    style = answer_style
    for chain in chains:
        steps = sorted(chain.steps, key=lambda s: (s.step, s.item_id))
        if not steps:
            continue
        if recipe == "answer_only":
            out += [Example(image=chain.image, turns=((s.prompt, answer_text(s.answer_type, s.expected, style)),),
                            source=f"item:{s.item_id}", items=(s.item_id,)) for s in steps]
            continue
        out.append(Example(image=chain.image, turns=tuple((s.prompt, _stepwise_target(s, style)) for s in steps),
                           source=f"chain:{chain.chain_id}", items=tuple(s.item_id for s in steps)))
        if recipe == "mixed":
            out += [Example(image=v.image, turns=((v.prompt, answer_text(v.answer_type, v.expected, style)),),
                            source=f"variant:{v.variant_id}", items=(v.item_id,))
                    for v in sorted(chain.variants, key=lambda v: v.variant_id) if v.kind != "clean"]
    return out


def describe_examples(examples: Sequence[Example]) -> dict[str, Any]:
    """Counts for the job page: examples, turns, items, and how many come from each source."""
    kinds: dict[str, int] = {}
    for e in examples:
        key = e.source.split(":", 1)[0]
        kinds[key] = kinds.get(key, 0) + 1
    return {"examples": len(examples), "turns": sum(len(e.turns) for e in examples),
            "items": len({i for e in examples for i in e.items}), "by_source": kinds}
